"""``FilterBar``: the search text, type and pinned filters over the playlist list, and Refresh."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets as w

from analytics_nb.widgets.views import fill, row

__all__ = ["FilterBar"]


class FilterBar:
    """``query()`` is the list query the controls describe; changing a filter calls ``on_change``.

    CSS: ``anb-filter-search``, ``anb-filter-type``, ``anb-filter-pinned``, ``anb-filter-refresh``.
    """

    def __init__(self, *, on_change: Callable[[], object], on_refresh: Callable[[], object]) -> None:
        self.search = w.Text(placeholder="search name", description="Search", layout=fill("300px"))
        self.search.continuous_update = False  # the value syncs on Enter / blur: then reload
        self.type = w.Dropdown(
            options=[("all types", ""), ("collection", "collection"), ("filters", "filters")],
            value="",
            description="Type",
            layout=fill("220px"),
        )
        self.pinned = w.Checkbox(
            value=False, description="pinned only", indent=False, layout=w.Layout(width="auto")
        )
        self.refresh = w.Button(description="Refresh", icon="refresh", tooltip="Reload the playlists")
        for control, name in (
            (self.search, "search"),
            (self.type, "type"),
            (self.pinned, "pinned"),
            (self.refresh, "refresh"),
        ):
            control.add_class(f"anb-filter-{name}")
        self._quiet = False
        for control in (self.search, self.type, self.pinned):
            control.observe(lambda _c: None if self._quiet else on_change(), names="value")
        self.refresh.on_click(lambda _b: on_refresh())
        self.controls: list[w.Widget] = [self.search, self.type, self.pinned, self.refresh]
        self.root = row(self.search, self.type, self.pinned, self.refresh, css_class="anb-filter")

    def query(self) -> dict[str, Any]:
        """The query the list is fetched with (``search``, ``type``, ``pinned`` only when set)."""
        query: dict[str, Any] = {}
        if self.search.value.strip():
            query["search"] = self.search.value.strip()
        if self.type.value:
            query["type"] = self.type.value
        if self.pinned.value:
            query["pinned"] = True  # the service filters on the parameter's presence, so only send it when on
        return query

    def set(self, text: str | None = None, *, type: str | None = None, pinned: bool | None = None) -> None:
        """Set the controls without triggering a reload (None leaves a control as it is)."""
        self._quiet = True
        try:
            if text is not None:
                self.search.value = text
            if type is not None:
                self.type.value = type
            if pinned is not None:
                self.pinned.value = pinned
        finally:
            self._quiet = False
