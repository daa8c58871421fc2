"""``RecordingsView``: the selected playlist's recordings, a field to add one and a picker to remove one."""

from __future__ import annotations

from collections.abc import Callable

import ipywidgets as w
import pandas as pd

from analytics_nb.widgets.views import column, fill, frame_html, row

__all__ = ["RECORDING_COLUMNS", "RecordingsView"]

RECORDING_COLUMNS = ["id", "distinct_id", "start_time", "recording_duration", "click_count"]


class RecordingsView:
    """State: ``frame`` (the recordings as a DataFrame). Controls: ``recording_id`` (the id to add),
    ``add``, ``picker`` (the id to remove), ``remove``.

    CSS: ``anb-recordings-table``, ``anb-recordings-id``, ``anb-recordings-add``, ``anb-recordings-picker``,
    ``anb-recordings-remove``.
    """

    def __init__(self, *, on_add: Callable[[], object], on_remove: Callable[[], object]) -> None:
        self.frame: pd.DataFrame = pd.DataFrame(columns=RECORDING_COLUMNS)
        self.table = w.HTML(value="", layout=w.Layout(max_width="100%", overflow="auto"))
        self.recording_id = w.Text(
            placeholder="session recording id", description="Recording", layout=fill("340px")
        )
        self.add = w.Button(description="Add", icon="plus")
        self.picker = w.Select(options=[], rows=4, description="In playlist", layout=fill("340px"))
        self.remove = w.Button(description="Remove", icon="minus")
        for control, name in (
            (self.table, "table"),
            (self.recording_id, "id"),
            (self.add, "add"),
            (self.picker, "picker"),
            (self.remove, "remove"),
        ):
            control.add_class(f"anb-recordings-{name}")
        self.add.on_click(lambda _b: on_add())
        self.remove.on_click(lambda _b: on_remove())
        self.controls: list[w.Widget] = [self.add, self.remove]
        self.root = column(
            w.HTML(value="<b>Recordings</b>"),
            self.table,
            row(self.recording_id, self.add),
            row(self.picker, self.remove),
            css_class="anb-recordings",
        )
        self.show(self.frame)

    @property
    def typed_id(self) -> str:
        """The id in the Recording field, stripped."""
        return str(self.recording_id.value).strip()

    @property
    def picked(self) -> str | None:
        """The id picked under "In playlist"."""
        value = self.picker.value
        return None if value is None else str(value)

    def show(self, frame: pd.DataFrame) -> None:
        """Show ``frame`` and offer its ids for removal."""
        self.frame = frame
        self.table.value = frame_html(
            frame, RECORDING_COLUMNS, max_rows=20, css_class="anb-table anb-recordings"
        )
        ids = [str(x) for x in frame["id"].tolist()] if "id" in frame.columns else []
        self.picker.options = ids
        self.picker.value = ids[0] if ids else None

    def clear(self) -> None:
        """No playlist selected: no recordings."""
        self.show(pd.DataFrame(columns=RECORDING_COLUMNS))

    def set_enabled(self, enabled: bool) -> None:
        """Enable the add and remove buttons only for an editable playlist."""
        for button in self.controls:
            button.disabled = not enabled
