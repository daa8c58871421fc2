"""The ``FlagSimulator`` panel and its views: property sets, flag picker, run bar, what-if sliders,
results and export (one module each), plus the property-set text parsing."""

from __future__ import annotations

from analytics_nb.widgets.simulator._panel import MAX_PROPERTY_SETS, FlagSimulator
from analytics_nb.widgets.simulator._property_sets import TEXT_ROWS
from analytics_nb.widgets.simulator._text import parse_grid_text, parse_property_text, property_text

__all__ = [
    "MAX_PROPERTY_SETS",
    "TEXT_ROWS",
    "FlagSimulator",
    "parse_grid_text",
    "parse_property_text",
    "property_text",
]
