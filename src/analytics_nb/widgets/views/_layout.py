"""The layout rules that keep a panel inside a notebook cell (a 1280-px JupyterLab window leaves ~900 px).

Rows wrap instead of growing past the cell (``flex_flow="row wrap"``), columns may shrink (``min_width=0``),
and inputs take the width they are given up to a cap (``width="100%"`` with a ``max_width``) instead of a
fixed pixel width. Every box a panel builds comes from ``row`` or ``column``, every input's layout from
``fill``, so the rule lives here once.
"""

from __future__ import annotations

import ipywidgets as w

__all__ = ["MAX_INPUT", "column", "fill", "row"]

#: The widest an input gets: narrower than the ~900 px a notebook cell has at a 1280-px window.
MAX_INPUT = "560px"


def fill(max_width: str = MAX_INPUT, **kw: str) -> w.Layout:
    """An input's layout: as wide as its box allows, at most ``max_width``, shrinking when the box does."""
    return w.Layout(width="100%", max_width=max_width, min_width="0", **kw)


def row(*children: w.Widget, css_class: str | None = None, **kw: str) -> w.HBox:
    """A horizontal box whose children wrap to the next line when the cell is too narrow."""
    layout = {"flex_flow": "row wrap", "align_items": "center", "max_width": "100%", **kw}
    box = w.HBox(list(children), layout=w.Layout(**layout))
    if css_class:
        box.add_class(css_class)
    return box


def column(*children: w.Widget, css_class: str | None = None, **kw: str) -> w.VBox:
    """A vertical box that may shrink below its content's natural width (so a row around it can wrap)."""
    layout = {"min_width": "0", "max_width": "100%", "flex": "1 1 320px", **kw}
    box = w.VBox(list(children), layout=w.Layout(**layout))
    if css_class:
        box.add_class(css_class)
    return box
