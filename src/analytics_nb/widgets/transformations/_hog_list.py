"""``HogTransformationList``: the project's Hog transformations in execution order, with the controls to
pick one, move it up or down, enable or disable it, and create one from a template."""

from __future__ import annotations

import html
from collections.abc import Callable

import ipywidgets as w
import pandas as pd

from analytics_nb.frames import hog_functions_frame
from analytics_nb.models import HogFunction, HogFunctionTemplate
from analytics_nb.widgets.views import column, fill, frame_html, row

__all__ = ["HogTransformationList"]

_COLUMNS = ["execution_order", "name", "enabled", "template_id", "legacy_plugin", "description"]


class HogTransformationList:
    """State: ``items`` (the Hog transformations, in the order they run), ``selected_key`` (the picked id),
    ``templates`` (the transformation templates). Controls: ``picker``, ``up`` / ``down`` ("Run earlier" /
    "Run later"), ``toggle`` ("Enable"/"Disable"), ``template_picker`` and ``create`` ("Create from
    template"), ``refresh``. ``served`` is the line saying which API the instance serves; ``table`` shows
    the list.

    CSS: ``anb-hog-transformations`` (the table), ``anb-hog-picker``, ``anb-hog-up``, ``anb-hog-down``,
    ``anb-hog-toggle``, ``anb-hog-template``, ``anb-hog-create``, ``anb-hog-refresh``, ``anb-served``.
    """

    def __init__(
        self,
        *,
        on_pick: Callable[[str], object],
        on_move: Callable[[int], object],
        on_toggle: Callable[[], object],
        on_create: Callable[[], object],
        on_refresh: Callable[[], object],
    ) -> None:
        self.items: list[HogFunction] = []
        self.templates: list[HogFunctionTemplate] = []
        self.selected_key: str | None = None
        self.heading = w.HTML(value="<b>Hog transformations</b> (run on every event, in this order)")
        self.served = w.HTML(value="")
        self.served.add_class("anb-served")
        self.table = w.HTML(value="", layout=w.Layout(max_width="100%", overflow="auto"))
        self.table.add_class("anb-hog-transformations")
        self.picker = w.Dropdown(options=[], description="Function", layout=fill("460px"))
        self.up = w.Button(description="Run earlier", icon="arrow-up")
        self.down = w.Button(description="Run later", icon="arrow-down")
        self.toggle = w.Button(description="Enable", icon="power-off")
        self.template_picker = w.Dropdown(options=[], description="Template", layout=fill("460px"))
        self.create = w.Button(description="Create from template", icon="plus")
        self.refresh = w.Button(description="Refresh", icon="refresh")
        for widget, css in (
            (self.picker, "anb-hog-picker"),
            (self.up, "anb-hog-up"),
            (self.down, "anb-hog-down"),
            (self.toggle, "anb-hog-toggle"),
            (self.template_picker, "anb-hog-template"),
            (self.create, "anb-hog-create"),
            (self.refresh, "anb-hog-refresh"),
        ):
            widget.add_class(css)
        self._quiet = False
        self.picker.observe(
            lambda c: None if self._quiet or c["new"] is None else on_pick(str(c["new"])), names="value"
        )
        self.up.on_click(lambda _b: on_move(-1))
        self.down.on_click(lambda _b: on_move(1))
        self.toggle.on_click(lambda _b: on_toggle())
        self.create.on_click(lambda _b: on_create())
        self.refresh.on_click(lambda _b: on_refresh())
        self.controls: list[w.Widget] = [
            self.picker,
            self.up,
            self.down,
            self.toggle,
            self.template_picker,
            self.create,
            self.refresh,
        ]
        self.root = column(
            self.heading,
            row(self.picker, self.up, self.down, self.toggle, self.refresh),
            self.table,
            row(self.template_picker, self.create),
            css_class="anb-hog-list",
        )

    @property
    def frame(self) -> pd.DataFrame:
        """The listed Hog transformations as a DataFrame (``analytics_nb.frames.hog_functions_frame``)."""
        return hog_functions_frame(self.items)

    def find(self, ident: str) -> HogFunction | None:
        """The listed function ``ident``, or None."""
        return next((f for f in self.items if f.id == ident), None)

    def set_served(self, text: str) -> None:
        """Show the line saying which instance serves which API."""
        self.served.value = f"<div style='color:#444;margin:2px 0 6px'>{html.escape(text)}</div>"

    def render(self) -> None:
        """Draw the table (selection highlighted), fill the pickers, label the toggle for the selection."""
        key = self.selected_key
        self.table.value = frame_html(self.frame, _COLUMNS, highlight=key, key="id", max_rows=100)
        options = [
            (f"{f.execution_order if f.execution_order is not None else '-'}. {f.name or '(unnamed)'}", f.id)
            for f in self.items
        ]
        chosen = self.template_picker.value
        template_options = [(f"{t.name or t.id} · {t.id}", t.id) for t in self.templates]
        self._quiet = True
        try:
            self.picker.options = options
            self.picker.value = key if key in [v for _l, v in options] else None
            self.template_picker.options = template_options
            ids = [v for _l, v in template_options]
            self.template_picker.value = chosen if chosen in ids else (ids[0] if ids else None)
        finally:
            self._quiet = False
        selected = self.find(key) if key is not None else None
        self.toggle.description = "Disable" if selected is not None and selected.enabled else "Enable"
