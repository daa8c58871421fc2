"""``RunBar``: the engine (remote, local, both), Run, Reload flags and the progress of the run."""

from __future__ import annotations

from collections.abc import Callable

import ipywidgets as w

from analytics_nb.widgets.views import column, fill, row

__all__ = ["ENGINES", "RunBar"]

ENGINES = ("remote", "local", "both")


class RunBar:
    """Controls: ``engine`` (toggle buttons labelled remote/local/both), ``run`` ("Run"), ``reload``
    ("Reload flags"); ``note`` explains a restricted engine, ``progress`` follows the run.

    CSS: ``anb-run-engine``, ``anb-run-note``, ``anb-run-run``, ``anb-run-reload``, ``anb-run-progress``.
    """

    def __init__(
        self,
        *,
        on_engine: Callable[[], object],
        on_run: Callable[[], object],
        on_reload: Callable[[], object],
    ) -> None:
        self.engine = w.ToggleButtons(
            options=list(ENGINES), value="remote", description="Engine", layout=w.Layout(max_width="100%")
        )
        self.engine.style.button_width = "80px"
        self.note = w.HTML(value="")
        self.run = w.Button(description="Run", button_style="primary", icon="play")
        self.reload = w.Button(description="Reload flags", icon="refresh")
        self.progress = w.IntProgress(value=0, min=0, max=1, description="", layout=fill("320px"))
        for control, name in (
            (self.engine, "engine"),
            (self.note, "note"),
            (self.run, "run"),
            (self.reload, "reload"),
            (self.progress, "progress"),
        ):
            control.add_class(f"anb-run-{name}")
        self.engine.observe(lambda _c: on_engine(), names="value")
        self.run.on_click(lambda _b: on_run())
        self.reload.on_click(lambda _b: on_reload())
        self.controls: list[w.Widget] = [self.engine, self.run, self.reload]
        self.root = column(
            self.engine, self.note, row(self.run, self.reload, self.progress), css_class="anb-run"
        )

    def start(self, total: int) -> None:
        """A run of ``total`` rows begins."""
        self.progress.max = max(total, 1)
        self.progress.value = 0
        self.progress.bar_style = "info"
        self.progress.description = "running"

    def advance(self, done: int) -> None:
        """``done`` rows are finished."""
        self.progress.value = min(done, self.progress.max)

    def finish(self, ok: bool) -> None:
        """The run ended: a full green bar, or a red empty one on failure."""
        if ok:
            self.progress.value = self.progress.max
            self.progress.bar_style = "success"
            self.progress.description = "done"
        else:
            self.progress.value = 0
            self.progress.bar_style = "danger"
            self.progress.description = "failed"
