"""The layout rules that keep a panel inside a notebook cell (a 1280-px JupyterLab window leaves ~900 px).

Rows wrap instead of growing past the cell (``flex_flow="row wrap"``), columns may shrink (``min_width=0``),
and inputs take the width they are given up to a cap (``width="100%"`` with a ``max_width``) instead of a
fixed pixel width. Every box a panel builds comes from ``row`` or ``column``, every input's layout from
``fill``, so the rule lives here once.
"""

from __future__ import annotations

import ipywidgets as w

__all__ = ["MAX_INPUT", "column", "columns", "fill", "row"]

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
    """A vertical box as tall as its content, never wider than its parent."""
    layout = {"min_width": "0", "max_width": "100%", "flex": "0 0 auto", **kw}
    box = w.VBox(list(children), layout=w.Layout(**layout))
    if css_class:
        box.add_class(css_class)
    return box


def columns(*children: w.Widget, css_class: str | None = None) -> w.HBox:
    """Views side by side, each at least ``COLUMN_BASIS`` wide: they share a wide cell and stack (wrap) in a
    narrow one, instead of pushing the right-hand one off the edge."""
    for child in children:
        child.layout.flex = f"1 1 {COLUMN_BASIS}"
        child.layout.min_width = "0"
    return row(*children, css_class=css_class, align_items="flex-start", width="100%")


#: The width below which side-by-side views stack instead.
COLUMN_BASIS = "360px"
