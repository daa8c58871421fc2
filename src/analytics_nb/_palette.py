"""The colours of flag values, shared by ``SimulationResult.plot()`` and the FlagSimulator's share bars.

One mapping from a value's label (``str(value)``: ``"True"``, ``"False"``, a variant key) to a hex colour, so
that a variant has the same colour in a notebook plot and in the panel: ``True`` teal, ``False`` light grey,
other values in the order first met along matplotlib's "tab10" cycle (written out here so that neither side
needs matplotlib to know the colours).
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["FALSE_COLOUR", "TRUE_COLOUR", "VALUE_CYCLE", "value_colours"]

TRUE_COLOUR = "#2a9d8f"
FALSE_COLOUR = "#d9d9d9"
#: matplotlib's "tab10" colours, in order.
VALUE_CYCLE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)


def value_colours(labels: Iterable[str]) -> dict[str, str]:
    """Map each label (``str(value)``) to its colour: fixed ones for True/False, the cycle for the rest."""
    colours = {"True": TRUE_COLOUR, "False": FALSE_COLOUR}
    for label in labels:
        if label not in colours:
            colours[label] = VALUE_CYCLE[(len(colours) - 2) % len(VALUE_CYCLE)]
    return colours
