"""``StatusBar``: the one line that says what a panel did or why it failed, plus a message log.

Errors become one plain sentence (``describe_error``), never a traceback; the line keeps the text
(``.text``), its kind (``ok``/``warning``/``error``/``busy``/``info``) and the exception (``.last_error``)
as attributes.
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as w

from analytics_nb.widgets._errors import describe_error

__all__ = ["StatusBar"]

_STYLE = {
    "ok": "color:#1a7f37",
    "error": "color:#b42318;font-weight:600",
    "info": "color:#444",
    "busy": "color:#8a6d00",
    "warning": "color:#b54708",
}


class StatusBar:
    """The status line (``.line``, CSS ``anb-status``) and the message log (``.log``, CSS
    ``anb-messages``)."""

    def __init__(self) -> None:
        self.line = w.HTML(value="", layout=w.Layout(min_height="1.6em", max_width="100%"))
        self.line.add_class("anb-status")
        self.log = w.Output(layout=w.Layout(max_height="10em", overflow="auto", max_width="100%"))
        self.log.add_class("anb-messages")
        self.text: str = ""
        self.kind: str = "info"
        self.last_error: BaseException | None = None

    def show(self, text: str, kind: str = "info") -> None:
        """Show ``text`` styled as ``kind`` (ok, warning, error, busy or info)."""
        self.text = text
        self.kind = kind
        style = _STYLE.get(kind, _STYLE["info"])
        self.line.value = (
            f'<span class="anb-{kind}" style="{style}">{html.escape(text)}</span>' if text else ""
        )

    def ok(self, text: str) -> None:
        """Report a success (forgets the last error)."""
        self.last_error = None
        self.show(text, "ok")

    def warning(self, text: str) -> None:
        """Report a success that came with a caveat (a warning of the run: answers NA for a reason); the
        last error is forgotten, as with ``ok``."""
        self.last_error = None
        self.show(text, "warning")

    def busy(self, text: str) -> None:
        """Say what is running."""
        self.show(text, "busy")

    def error(self, exc: BaseException | str) -> None:
        """Report a failure as one plain sentence; a string is taken as the sentence itself."""
        if isinstance(exc, str):
            self.last_error = ValueError(exc)
            self.show(exc, "error")
        else:
            self.last_error = exc
            self.show(describe_error(exc), "error")

    @property
    def error_text(self) -> str | None:
        """The sentence of the last failure, or None after a success."""
        return self.text if self.last_error is not None else None

    def message(self, text: str) -> None:
        """Append a line to the message log (works with and without a kernel)."""
        self.log.append_stdout(text.rstrip("\n") + "\n")

    def display(self, obj: Any) -> None:
        """Append a displayable object (a DataFrame, a figure) to the message log."""
        self.log.append_display_data(obj)
