"""The small base every panel builds on: a root VBox, a status line, a message log and a busy state.

Panels keep their state in plain attributes and expose every action as a method; buttons only call those
methods. Errors never escape a button: they are turned into one plain sentence in the status line
(``.status``) and remembered in ``.last_error``, while the form widgets keep whatever the user typed.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import ipywidgets as w
import numpy as np
import pandas as pd

from analytics_nb.client import ApiClient
from analytics_nb.widgets._errors import describe_error

__all__ = ["Panel", "frame_html", "require_sync_client"]

T = TypeVar("T")

_STYLE = {
    "ok": "color:#1a7f37",
    "error": "color:#b42318;font-weight:600",
    "info": "color:#444",
    "busy": "color:#8a6d00",
}


class Panel:
    """Owns a root ``VBox``; shows itself in Jupyter through that box and reports through one status line."""

    title: str = ""

    def __init__(self) -> None:
        self.status = w.HTML(value="", layout=w.Layout(min_height="1.6em"))
        self.status.add_class("anb-status")
        self.messages = w.Output(layout=w.Layout(max_height="10em", overflow="auto"))
        self.busy: bool = False
        self.last_error: BaseException | None = None
        self.status_kind: str = "info"
        self.status_text: str = ""
        self._actions: list[w.Widget] = []
        self._was_disabled: dict[int, bool] = {}
        self.root = w.VBox(layout=w.Layout(width="100%"))
        self.root.add_class("anb-panel")

    # ---- display --------------------------------------------------------------------------------
    def _ipython_display_(self) -> None:
        """Display the panel's root box (used by Jupyter when the panel is the cell's value)."""
        from IPython.display import display

        display(self.root)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        """Delegate the rich representation to the root ``VBox``."""
        return self.root._repr_mimebundle_(include=include, exclude=exclude)  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"<{type(self).__name__} status={self.status_text!r}>"

    # ---- status and messages --------------------------------------------------------------------
    def _set_status(self, text: str, kind: str = "info") -> None:
        self.status_text = text
        self.status_kind = kind
        style = _STYLE.get(kind, _STYLE["info"])
        self.status.value = (
            f'<span class="anb-{kind}" style="{style}">{html.escape(text)}</span>' if text else ""
        )

    def message(self, text: str) -> None:
        """Append a line to the panel's message log (works with and without a kernel)."""
        self.messages.append_stdout(text.rstrip("\n") + "\n")

    def show(self, obj: Any) -> None:
        """Append a displayable object (a DataFrame, a figure) to the message log."""
        self.messages.append_display_data(obj)

    def _ok(self, text: str) -> None:
        self.last_error = None
        self._set_status(text, "ok")

    def _error(self, exc: BaseException | str) -> None:
        if isinstance(exc, str):
            self.last_error = ValueError(exc)
            self._set_status(exc, "error")
        else:
            self.last_error = exc
            self._set_status(describe_error(exc), "error")

    @property
    def error(self) -> str | None:
        """The plain-words text of the last failed action, or None after a success."""
        return self.status_text if self.last_error is not None else None

    # ---- busy state -----------------------------------------------------------------------------
    def _register(self, *controls: w.Widget) -> None:
        """Mark controls that must be disabled while a request runs."""
        self._actions.extend(controls)

    @contextmanager
    def _busy(self, text: str) -> Iterator[None]:
        """Disable the registered controls and show ``text`` while the body runs; re-enable afterwards."""
        if self.busy:
            raise RuntimeError("The panel is busy with another request; wait for it to finish.")
        self.busy = True
        self._was_disabled = {id(c): bool(getattr(c, "disabled", False)) for c in self._actions}
        for control in self._actions:
            control.disabled = True
        self._set_status(text, "busy")
        try:
            yield
        finally:
            self.busy = False
            for control in self._actions:
                control.disabled = self._was_disabled.get(id(control), False)

    def _attempt(self, text: str, action: Callable[[], T]) -> tuple[bool, T | None]:
        """Run ``action`` while busy; on failure show the error in plain words and return (False, None)."""
        try:
            with self._busy(text):
                value = action()
        except Exception as exc:
            self._error(exc)
            return False, None
        self.last_error = None
        if self.status_kind == "busy":
            self._set_status("Done.", "ok")
        return True, value


def require_sync_client(client: Any, panel: str) -> None:
    """Panels call the client from button callbacks, so they need the sync ``Client``, not ``AsyncClient``."""
    if not isinstance(client, ApiClient):
        kind = type(client).__name__
        raise TypeError(
            f"{panel} needs an analytics_nb.Client (the sync client), got {kind}; "
            "create one with Client(...), Client.from_env() or Client.sandbox()."
        )


def _cell(value: Any, bools: str = "check") -> str:
    if value is None or (not isinstance(value, list | dict | tuple) and _isna(value)):
        return '<span style="color:#999">–</span>'
    if isinstance(value, pd.Timestamp):
        return html.escape(value.strftime("%Y-%m-%d %H:%M"))
    if isinstance(value, bool | np.bool_):
        if bools == "text":
            return "true" if value else '<span style="color:#888">false</span>'
        return "✓" if value else ""
    text = str(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return html.escape(text)


def _isna(value: Any) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def frame_html(
    df: pd.DataFrame,
    columns: list[str] | None = None,
    *,
    max_rows: int = 50,
    highlight: Any = None,
    key: str | None = None,
    css_class: str = "anb-table",
    bools: str = "check",
) -> str:
    """Render ``df`` (or some columns) as a small escaped HTML table; ``highlight`` marks one row by key."""
    cols = [c for c in (columns or list(df.columns)) if c in df.columns]
    head = "".join(
        f'<th style="text-align:left;padding:2px 8px;border-bottom:1px solid #ccc">{html.escape(str(c))}</th>'
        for c in cols
    )
    rows = []
    for _, row in df.head(max_rows).iterrows():
        marked = key is not None and highlight is not None and row.get(key) == highlight
        style = ' style="background:#e8f0fe"' if marked else ""
        cells = "".join(f'<td style="padding:2px 8px">{_cell(row[c], bools)}</td>' for c in cols)
        rows.append(f"<tr{style}>{cells}</tr>")
    more = ""
    if len(df) > max_rows:
        more = f'<div style="color:#666">… {len(df) - max_rows} more rows (see the DataFrame)</div>'
    if not rows:
        return f'<div class="{css_class} anb-empty" style="color:#666">(nothing to show)</div>'
    return (
        f'<table class="{css_class}" style="border-collapse:collapse;font-size:12px">'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>{more}"
    )
