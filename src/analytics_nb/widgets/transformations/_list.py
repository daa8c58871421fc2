"""``TransformationList``: the organization's pipeline transformations: a picker, a table, Refresh and
Check for updates."""

from __future__ import annotations

from collections.abc import Callable

import ipywidgets as w
import pandas as pd

from analytics_nb.frames import transformations_frame
from analytics_nb.models import Transformation
from analytics_nb.widgets.views import column, fill, frame_html, row

__all__ = ["TransformationList"]

_COLUMNS = ["id", "name", "plugin_type", "tag", "latest_tag", "is_global", "description"]


class TransformationList:
    """State: ``items`` (the listed transformations), ``selected_key`` (the picked id). Controls: ``picker``,
    ``refresh`` ("Refresh"), ``updates`` ("Check for updates"); ``table`` shows the list.

    CSS: ``anb-transformations`` (the table), ``anb-tlist-picker``, ``anb-tlist-refresh``,
    ``anb-tlist-updates``.
    """

    def __init__(
        self,
        *,
        on_pick: Callable[[int], object],
        on_refresh: Callable[[], object],
        on_updates: Callable[[], object],
    ) -> None:
        self.items: list[Transformation] = []
        self.selected_key: int | None = None
        self.table = w.HTML(value="", layout=w.Layout(max_width="100%", overflow="auto"))
        self.table.add_class("anb-transformations")
        self.picker = w.Dropdown(options=[], description="Plugin", layout=fill("460px"))
        self.refresh = w.Button(description="Refresh", icon="refresh")
        self.updates = w.Button(description="Check for updates", icon="search")
        self.picker.add_class("anb-tlist-picker")
        self.refresh.add_class("anb-tlist-refresh")
        self.updates.add_class("anb-tlist-updates")
        self._quiet = False
        self.picker.observe(
            lambda c: None if self._quiet or c["new"] is None else on_pick(int(c["new"])), names="value"
        )
        self.refresh.on_click(lambda _b: on_refresh())
        self.updates.on_click(lambda _b: on_updates())
        self.controls: list[w.Widget] = [self.picker, self.refresh, self.updates]
        self.root = column(row(self.picker, self.refresh, self.updates), self.table, css_class="anb-tlist")

    @property
    def frame(self) -> pd.DataFrame:
        """The listed transformations as a DataFrame (``analytics_nb.frames.transformations_frame``)."""
        return transformations_frame(self.items)

    def find(self, ident: int) -> Transformation | None:
        """The listed transformation ``ident``, or None."""
        return next((t for t in self.items if t.id == ident), None)

    def render(self) -> None:
        """Draw the table (the selection highlighted) and fill the picker."""
        key = self.selected_key
        self.table.value = frame_html(self.frame, _COLUMNS, highlight=key, key="id", max_rows=100)
        options = [(f"{t.name or '(unnamed)'} · {t.id}", t.id) for t in self.items]
        self._quiet = True
        try:
            self.picker.options = options
            self.picker.value = key if key in [v for _l, v in options] else None
        finally:
            self._quiet = False
