"""``PlaylistTable``: the matching playlists, paged: an HTML table, a picker and Prev/Next."""

from __future__ import annotations

import math
from collections.abc import Callable

import ipywidgets as w
import pandas as pd

from analytics_nb.frames import playlists_frame
from analytics_nb.models import Playlist
from analytics_nb.widgets.views import column, fill, frame_html, row

__all__ = ["PlaylistTable", "playlist_label"]

_COLUMNS = [
    "short_id",
    "name",
    "type",
    "pinned",
    "recordings",
    "description",
    "last_modified_at",
    "created_by_email",
]


def playlist_label(playlist: Playlist) -> str:
    """How a playlist is named in the picker and the status line: ``name · short_id``."""
    name = playlist.name or playlist.derived_name or "(unnamed)"
    return f"{name} · {playlist.short_id}"


def _count(playlist: Playlist) -> int | None:
    counts = playlist.recordings_counts
    collection = counts.collection if counts is not None else None
    return collection.count if collection is not None else None


class PlaylistTable:
    """State: ``items`` (every matching playlist), ``page`` (0-based), ``page_size``, ``selected_key``.

    ``frame`` is the current page as a DataFrame. Picking a row calls ``on_pick(short_id)``.
    CSS: ``anb-playlists-table`` (the table box; the table itself ``anb-playlists``), ``anb-table-picker``,
    ``anb-table-prev``, ``anb-table-next``, ``anb-table-page``.
    """

    def __init__(self, page_size: int, *, on_pick: Callable[[str], object]) -> None:
        self.items: list[Playlist] = []
        self.page = 0
        self.page_size = page_size
        self.selected_key: str | None = None
        self.stale = False  # True when the last reload failed: the list shown is the one before
        self.table = w.HTML(value="", layout=w.Layout(max_width="100%", overflow="auto"))
        self.table.add_class("anb-playlists-table")
        self.picker = w.Select(
            options=[], rows=min(page_size, 8), description="Playlist", layout=fill("460px")
        )
        self.picker.add_class("anb-table-picker")
        self.prev = w.Button(description="Prev", icon="arrow-left", layout=w.Layout(width="80px"))
        self.prev.add_class("anb-table-prev")
        self.next = w.Button(description="Next", icon="arrow-right", layout=w.Layout(width="80px"))
        self.next.add_class("anb-table-next")
        self.page_label = w.HTML(value="")
        self.page_label.add_class("anb-table-page")
        self._quiet = False
        self.picker.observe(
            lambda c: None if self._quiet or c["new"] is None else on_pick(str(c["new"])), names="value"
        )
        self.prev.on_click(lambda _b: self.prev_page())
        self.next.on_click(lambda _b: self.next_page())
        self.controls: list[w.Widget] = [self.picker, self.prev, self.next]
        self.root = column(
            self.table,
            row(self.picker, row(self.prev, self.page_label, self.next)),
            css_class="anb-table",
        )

    # ---- state ----------------------------------------------------------------------------------
    @property
    def pages(self) -> int:
        """How many pages the items fill (at least 1)."""
        return max(1, math.ceil(len(self.items) / self.page_size))

    @property
    def page_items(self) -> list[Playlist]:
        """The playlists on the current page."""
        start = self.page * self.page_size
        return self.items[start : start + self.page_size]

    @property
    def frame(self) -> pd.DataFrame:
        """The current page as a DataFrame (``analytics_nb.frames.playlists_frame``)."""
        return playlists_frame(self.page_items)

    def find(self, short_id: str) -> Playlist | None:
        """The listed playlist ``short_id``, or None."""
        return next((p for p in self.items if p.short_id == short_id), None)

    def page_of(self, short_id: str) -> int | None:
        """The page a listed playlist is on."""
        for index, playlist in enumerate(self.items):
            if playlist.short_id == short_id:
                return index // self.page_size
        return None

    # ---- actions --------------------------------------------------------------------------------
    def go_to_page(self, page: int) -> None:
        """Show page ``page`` (0-based, clamped to the available pages)."""
        self.page = max(0, min(page, self.pages - 1))
        self.render()

    def next_page(self) -> None:
        """Show the next page."""
        self.go_to_page(self.page + 1)

    def prev_page(self) -> None:
        """Show the previous page."""
        self.go_to_page(self.page - 1)

    def render(self) -> None:
        """Draw the current page, highlight ``selected_key`` and fill the picker."""
        shown = self.page_items
        df = self.frame
        if "recordings" not in df.columns:
            df = df.assign(recordings=pd.array([_count(p) for p in shown], dtype="Int64"))
        if len(df):  # show the derived name where a playlist has no name of its own (display only)
            df = df.assign(name=pd.array([p.name or p.derived_name or None for p in shown], dtype=object))
        key = self.selected_key
        self.table.value = frame_html(
            df,
            _COLUMNS,
            max_rows=self.page_size,
            highlight=key,
            key="short_id",
            css_class="anb-table anb-playlists",
        )
        stale = " · <i>not reloaded: the last refresh failed</i>" if self.stale else ""
        self.page_label.value = (
            f"&nbsp;page {self.page + 1} of {self.pages} ({len(self.items)} playlists){stale}&nbsp;"
        )
        self.prev.disabled = self.page == 0
        self.next.disabled = self.page >= self.pages - 1
        options = [(playlist_label(p), str(p.short_id)) for p in shown]
        self._quiet = True
        try:
            self.picker.options = options
            self.picker.value = key if key in [value for _label, value in options] else None
        finally:
            self._quiet = False
