"""The ``PlaylistEditor`` panel and its views: filter bar, paged table, edit form, confirmation row,
recordings, create form and restore view (one module each)."""

from __future__ import annotations

from analytics_nb.widgets.playlists._panel import PlaylistEditor

__all__ = ["PlaylistEditor"]
