"""``Panel``: what every panel shares: it *is* a ``VBox`` (so it nests in ``HBox``, ``Tab``, ``Accordion``
and Voila layouts like any widget), with a status bar, a busy state and the client it talks to.

A panel composes small views (each owning its widgets, kept in private attributes) and wires their buttons
to its own methods, so what a click does code can do too; its state is public attributes, properties and
DataFrames. Errors never escape a button: ``_attempt`` turns them into one plain sentence
in the status bar while the forms keep whatever the user typed; ``_attempt_noting`` also keeps the user
warnings the action raised (a ``MissingPropertyWarning``, an ``IncompleteRecordingsWarning``) out of the
cell's output: ``_done`` shows them in the status line and each once in the message log. A closed client
is caught before any request and named with its fix; ``panel.client = new_client`` gives the panel a
working client again.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import ipywidgets as w

from analytics_nb.client import ApiClient as Client
from analytics_nb.widgets._errors import ClientClosedError
from analytics_nb.widgets.views import StatusBar

__all__ = ["Panel", "require_sync_client"]

T = TypeVar("T")


def require_sync_client(client: object, panel: str) -> Client:
    """Panels call the client from button callbacks, so they need the sync ``Client``, not ``AsyncClient``."""
    if not isinstance(client, Client):
        kind = type(client).__name__
        raise TypeError(
            f"{panel} needs an analytics_nb.Client (the sync client), got {kind}; "
            "create one with Client(...), Client.from_env() or Client.sandbox()."
        )
    return client


class Panel(w.VBox):
    """A ``VBox`` (CSS ``anb-panel`` plus the panel's own class) holding the panel's views and status bar.

    ``status_text``, ``status_kind``, ``last_error`` and ``error`` read the status bar; ``busy`` is True
    while a request runs (the registered controls are disabled meanwhile). The views are private
    (``_status``, ``_sets_view``, ...): drive a panel through its methods and properties.
    """

    title: str = ""
    css_class: str = ""

    def __init__(self, client: Client | None = None) -> None:
        # full width of the cell, never wider: the views inside wrap (see views/_layout.py)
        super().__init__(layout=w.Layout(width="100%", max_width="100%", min_width="0"))
        self._client = client
        self._status = StatusBar()
        self.busy: bool = False
        self._actions: list[w.Widget] = []
        self._was_disabled: dict[int, bool] = {}
        #: The user warnings the last action raised (shown in the status line and the message log instead
        #: of the cell's output), for code.
        self.warnings: list[warnings.WarningMessage] = []
        self.add_class("anb-panel")
        if self.css_class:
            self.add_class(self.css_class)

    @property
    def root(self) -> Panel:
        """Deprecated: the panel is itself the widget to display or nest; ``.root`` returns the panel."""
        warnings.warn(
            f"{type(self).__name__}.root is deprecated: the panel is a VBox itself; use the panel directly "
            "(e.g. HBox([panel]) or display(panel)).",
            DeprecationWarning,
            stacklevel=2,
        )
        return self

    # ---- the client -----------------------------------------------------------------------------
    @property
    def client(self) -> Client | None:
        """The sync ``Client`` the panel talks to; assign a new one after the old one was closed."""
        return self._client

    @client.setter
    def client(self, value: Client) -> None:
        self._client = require_sync_client(value, type(self).__name__)
        self._status.ok("Connected with a new client.")
        self._client_changed()

    def _client_changed(self) -> None:
        """Called after a new client was assigned: panels reload what they show."""

    def _live_client(self) -> Client:
        """The client, or ClientClosedError naming the fix when it was closed (nothing is sent then)."""
        client = self._client
        if client is None:
            raise TypeError(f"{type(self).__name__} has no client.")
        if client.closed:
            raise ClientClosedError(type(self).__name__)
        return client

    # ---- display --------------------------------------------------------------------------------
    def __repr__(self) -> str:
        return f"<{type(self).__name__} status={self.status_text!r}>"

    def _heading(self) -> w.HTML:
        return w.HTML(value=f"<h3 style='margin:4px 0'>{self.title}</h3>")

    # ---- status ---------------------------------------------------------------------------------
    @property
    def status_text(self) -> str:
        """The status line's text."""
        return self._status.text

    @property
    def status_kind(self) -> str:
        """The status line's kind: ok, warning (done, with a caveat), error, busy or info."""
        return self._status.kind

    @property
    def last_error(self) -> BaseException | None:
        """The exception of the last failed action (None after a success)."""
        return self._status.last_error

    @property
    def error(self) -> str | None:
        """The plain-words text of the last failed action, or None after a success."""
        return self._status.error_text

    def message(self, text: str) -> None:
        """Append a line to the panel's message log."""
        self._status.message(text)

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
        self._was_disabled = {id(c): bool(c.disabled) for c in self._actions}
        for control in self._actions:
            control.disabled = True
        self._status.busy(text)
        try:
            yield
        finally:
            self.busy = False
            for control in self._actions:
                control.disabled = self._was_disabled.get(id(control), False)

    def _attempt(
        self, text: str, action: Callable[[], T], *, needs_client: bool = True
    ) -> tuple[bool, T | None]:
        """Run ``action`` while busy; on failure show the error in plain words and return (False, None).

        With ``needs_client`` a closed client is reported (with its fix) before anything runs, and a
        failure that comes from the client being closed meanwhile is reported the same way.
        """
        try:
            if needs_client:
                self._live_client()
            with self._busy(text):
                value = action()
        except Exception as exc:
            closed = needs_client and self._client is not None and self._client.closed
            self._status.error(ClientClosedError(type(self).__name__) if closed else exc)
            return False, None
        self._status.last_error = None
        if self._status.kind == "busy":
            self._status.ok("Done.")
        return True, value

    def _attempt_noting(
        self, text: str, action: Callable[[], T], *, needs_client: bool = True
    ) -> tuple[bool, T | None]:
        """``_attempt``, keeping the action's user warnings in ``.warnings`` (each once, also in the message
        log) instead of letting them print in the cell; other categories (a library's DeprecationWarning)
        go on to Python's warnings. Report the outcome with ``_done``."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            outcome = self._attempt(text, action, needs_client=needs_client)
        self.warnings = []
        seen: set[str] = set()
        for item in caught:
            if not issubclass(item.category, UserWarning):
                warnings.warn_explicit(item.message, item.category, item.filename, item.lineno)
                continue
            line = f"{item.category.__name__}: {item.message}"
            if line not in seen:
                seen.add(line)
                self.warnings.append(item)
                self._status.message(line)
        return outcome

    def _done(self, text: str) -> None:
        """Report a success: ``text``, followed by the first of ``.warnings`` (shortened; the message log has
        each in full) and styled as a warning when there are any."""
        if not self.warnings:
            self._status.ok(text)
            return
        first = self.warnings[0]
        note = str(first.message)
        note = note if len(note) <= 300 else note[:297] + "..."
        more = f" (+{len(self.warnings) - 1} more in the messages)" if len(self.warnings) > 1 else ""
        self._status.warning(f"{text} {first.category.__name__}: {note}{more}")
