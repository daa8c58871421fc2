"""Small views shared by the panels: each owns its widgets, keeps its state in plain attributes and
exposes its actions as methods (``StatusBar``, ``ConfirmRow``, ``JsonEditor``, ``frame_html`` tables,
and the layout rules every panel's boxes follow)."""

from __future__ import annotations

from analytics_nb.widgets.views._confirm import ConfirmRow
from analytics_nb.widgets.views._json_editor import JsonEditor
from analytics_nb.widgets.views._layout import column, columns, fill, row
from analytics_nb.widgets.views._status import StatusBar
from analytics_nb.widgets.views._table import frame_html

__all__ = ["ConfirmRow", "JsonEditor", "StatusBar", "column", "columns", "fill", "frame_html", "row"]
