"""``PropertySetsView``: the property sets of the next run: CSV-like text, a grid builder, or a DataFrame.

The info line always describes what the text box holds: "N property sets loaded" only while the text is
the loaded frame; once edited it says the text is read at the next run, and after a failed read or grid
build it says so instead of keeping an old count.

A frame of more than ``TEXT_ROWS`` rows is not written out whole (a million rows made a 20 MB text box in the
browser): the box shows its first ``TEXT_ROWS`` rows and a note, read-only, and the run uses the frame.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

import ipywidgets as w
import pandas as pd

from analytics_nb.widgets._errors import FormError
from analytics_nb.widgets.simulator._text import parse_grid_text, parse_property_text, property_text
from analytics_nb.widgets.views import column, fill, row

__all__ = ["TEXT_ROWS", "PropertySetsView"]

_EMPTY_TEXT = "distinct_id\n"

#: The most property-set rows written into the text box; a larger frame shows this many, read-only.
TEXT_ROWS = 1_000


class PropertySetsView:
    """State: ``frame`` (the loaded property sets, or None). Controls: ``text`` (the sets as CSV text),
    ``grid`` (``property: value, value`` lines), ``ids_per_cell``, ``build`` ("Build grid"); ``info``.

    CSS: ``anb-sets-text``, ``anb-sets-info``, ``anb-sets-grid``, ``anb-sets-ids-per-cell``,
    ``anb-sets-build``.
    """

    def __init__(self, *, on_build: Callable[[], object]) -> None:
        self.frame: pd.DataFrame | None = None
        self._synced_text: str | None = None
        self.text = w.Textarea(
            value=_EMPTY_TEXT,
            placeholder="distinct_id,country,plan\nu1,US,pro\nu2,DE,free",
            description="Sets",
            layout=fill(height="140px"),
        )
        self.info = w.HTML(value="")
        self.grid = w.Textarea(
            placeholder="country: US, DE, FR\nplan: free, pro", description="Grid", layout=fill(height="70px")
        )
        self.ids_per_cell = w.BoundedIntText(
            value=10, min=1, max=100_000, description="ids/cell", layout=fill("180px")
        )
        self.build = w.Button(description="Build grid", icon="th")
        for control, name in (
            (self.text, "text"),
            (self.info, "info"),
            (self.grid, "grid"),
            (self.ids_per_cell, "ids-per-cell"),
            (self.build, "build"),
        ):
            control.add_class(f"anb-sets-{name}")
        self.build.on_click(lambda _b: on_build())
        self.text.observe(lambda _c: self._text_changed(), names="value")
        self.controls: list[w.Widget] = [self.build]
        self.root = column(
            self.text, self.info, self.grid, row(self.ids_per_cell, self.build), css_class="anb-sets"
        )

    @property
    def edited(self) -> bool:
        """True when the text no longer is the loaded frame (it is parsed at the next run)."""
        return self.frame is None or self.text.value != self._synced_text

    def load(self, frame: pd.DataFrame) -> None:
        """Use a DataFrame of property sets (``distinct_id`` plus property columns) and show it as text."""
        if not isinstance(frame, pd.DataFrame):
            raise FormError(f"load() takes a pandas DataFrame of property sets, not {type(frame).__name__}.")
        if "distinct_id" not in frame.columns:
            raise FormError("The DataFrame needs a 'distinct_id' column (one id per property set).")
        self.frame = frame.copy()
        preview = len(frame) > TEXT_ROWS
        text = property_text(frame.head(TEXT_ROWS) if preview else frame)
        if preview:
            text += (
                f"# … and {len(frame) - TEXT_ROWS:,} more rows: the first {TEXT_ROWS} of {len(frame):,} are "
                "shown (read-only); the run uses the whole DataFrame; load() another to change them\n"
            )
        self._synced_text = text
        self.text.value = text
        self.text.disabled = preview
        nested = [c for c in frame.columns if frame[c].map(lambda v: isinstance(v, dict | list)).any()]
        note = (
            f" Columns {', '.join(map(str, nested))} hold dicts/lists: edit them in code, the text "
            "shows them for reading."
            if nested
            else ""
        )
        shown = f" (the first {TEXT_ROWS} shown, read-only)" if preview else ""
        self.info.value = f"<i>{len(frame):,} property sets loaded{shown}.{html.escape(note)}</i>"

    def clear(self) -> None:
        """No property sets: an empty text with just the header."""
        self.frame = None
        self._synced_text = None
        self.text.disabled = False
        self.text.value = _EMPTY_TEXT
        self.info.value = ""

    def current(self) -> pd.DataFrame:
        """The property sets of the next run: the loaded frame, or the text parsed when edited (FormError
        naming the line to fix; the info line then says nothing was read)."""
        if not self.edited and self.frame is not None:
            return self.frame
        try:
            frame = parse_property_text(self.text.value)
        except FormError:
            self.frame = None
            self.info.value = "<i>Not read: fix the property sets (the status line names the line).</i>"
            raise
        self.frame = frame
        self._synced_text = self.text.value
        self.info.value = f"<i>{len(frame)} property sets read from the text.</i>"
        return frame

    def grid_spec(self) -> dict[str, list[Any]]:
        """The grid box parsed into ``{property: [values]}`` (FormError naming the line)."""
        return parse_grid_text(self.grid.value)

    def grid_failed(self) -> None:
        """After a failed grid build: say the sets shown are not the grid's."""
        count = f" ({len(self.frame)})" if self.frame is not None and not self.edited else ""
        self.info.value = f"<i>Grid not built: the property sets below are the previous ones{count}.</i>"

    def _text_changed(self) -> None:
        if self.frame is not None and self.text.value != self._synced_text:
            self.info.value = "<i>Edited: the text is read at the next run.</i>"
