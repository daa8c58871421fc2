"""The Hog-transformation actions of ``TransformationsBrowser``: load, pick, reorder, enable/disable and
create from a template (``client.hog_functions`` / ``client.hog_function_templates``), and the line that
says which instance serves which API. Kept apart from the legacy plugin actions in ``_panel.py``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import pandas as pd

from analytics_nb.errors import PostHogError
from analytics_nb.models import HogFunction
from analytics_nb.widgets._errors import FormError
from analytics_nb.widgets.transformations._hog_list import HogTransformationList

if TYPE_CHECKING:
    from analytics_nb.client import ApiClient
    from analytics_nb.widgets.views import StatusBar

__all__ = ["HogTransformationsActions", "served_line", "short_error"]

T = TypeVar("T")


def short_error(exc: BaseException | None) -> str:
    """A few words for the served line: ``HTTP 404``, ``HTTP 403`` or the error's kind."""
    if isinstance(exc, PostHogError) and exc.status:
        return f"HTTP {exc.status}"
    return type(exc).__name__ if exc is not None else "failed"


def served_line(host: str, hog: int | None, legacy: int | None, hog_error: str, legacy_error: str) -> str:
    """One sentence: which of the two APIs ``host`` serves (``None`` counts: that API failed)."""
    if hog is not None and legacy is not None:
        return (
            f"{host} serves both: {hog} Hog transformation(s) (hog_functions, today's API; they run first, "
            f"in this order) and {legacy} legacy plugin(s) (pipeline_transformations, below). PostHog Cloud "
            "runs only Hog functions; legacy plugins remain on self-hosted instances."
        )
    if hog is not None:
        return (
            f"{host} serves Hog functions only: {hog} Hog transformation(s); the legacy plugin API is not "
            f"available here ({legacy_error}). This is what PostHog Cloud does."
        )
    if legacy is not None:
        return (
            f"{host} serves legacy plugins only: {legacy} plugin(s); the Hog functions API is not available "
            f"here ({hog_error}), as on self-hosted instances from before Hog functions."
        )
    return f"{host} served neither list: Hog functions: {hog_error}; legacy plugins: {legacy_error}."


class HogTransformationsActions:
    """Mixed into ``TransformationsBrowser`` (a ``Panel``): every Hog button calls one of these methods."""

    _hog_view: HogTransformationList
    _status: StatusBar
    _hog_selected: HogFunction | None
    _hog_count: int | None
    _hog_error: str

    if TYPE_CHECKING:

        def _attempt(
            self, text: str, action: Callable[[], T], *, needs_client: bool = True
        ) -> tuple[bool, T | None]: ...
        def _live_client(self) -> ApiClient: ...

    def _init_hog(self) -> None:
        self._hog_view = HogTransformationList(
            on_pick=self.select_hog,
            on_move=self.move_selected,
            on_toggle=self.toggle_selected,
            on_create=lambda: self.create_from_template(),
            on_refresh=self.refresh_hog,
        )
        self._hog_selected = None
        self._hog_count = None
        self._hog_error = ""

    # ---- state ----------------------------------------------------------------------------------
    @property
    def hog_transformations(self) -> list[HogFunction]:
        """The project's Hog transformations, in the order they run."""
        return self._hog_view.items

    @property
    def hog_frame(self) -> pd.DataFrame:
        """The Hog transformations as a DataFrame (``analytics_nb.frames.hog_functions_frame``)."""
        return self._hog_view.frame

    @property
    def selected_hog(self) -> HogFunction | None:
        """The picked Hog transformation (None: none)."""
        return self._hog_selected

    @property
    def served(self) -> str:
        """The line saying which instance serves which API (set by ``refresh``)."""
        return self._served_text if hasattr(self, "_served_text") else ""

    # ---- actions --------------------------------------------------------------------------------
    def _load_hog(self) -> bool:
        def load() -> tuple[list[HogFunction], list[Any]]:
            client = self._live_client()
            found = client.hog_functions.transformations()
            templates = client.hog_function_templates.list(type="transformation")
            return found, templates

        ok, result = self._attempt("Loading Hog transformations…", load)
        if not ok or result is None:
            self._hog_count = None
            self._hog_error = short_error(self._status.last_error)
            return False
        self._hog_view.items, self._hog_view.templates = result
        self._hog_count = len(result[0])
        self._hog_error = ""
        self._render_hog()
        return True

    def refresh_hog(self) -> bool:
        """Reload the Hog transformations (and the templates); True on success."""
        ok = self._load_hog()
        if ok:
            self._status.ok(f"{self._hog_count} Hog transformation(s).")
        return ok

    def _render_hog(self) -> None:
        if self._hog_selected is not None:
            self._hog_selected = self._hog_view.find(self._hog_selected.id)
        self._hog_view.selected_key = self._hog_selected.id if self._hog_selected is not None else None
        self._hog_view.render()

    def _set_served(self, text: str) -> None:
        self._served_text = text
        self._hog_view.set_served(text)

    def select_hog(self, id: str) -> HogFunction | None:
        """Pick Hog transformation ``id`` (the target of the move, toggle buttons); returns it or None."""
        match = self._hog_view.find(id)
        if match is None:
            self._status.error(FormError(f"No listed Hog transformation has id {id!r}; refresh the list."))
            return None
        self._hog_selected = match
        self._render_hog()
        state = "enabled" if match.enabled else "disabled"
        self._status.ok(f"{match.name or id}: runs at position {match.execution_order}, {state}.")
        return match

    def _require_selected(self) -> HogFunction | None:
        if self._hog_selected is None:
            self._status.error(FormError("Pick a Hog transformation first."))
        return self._hog_selected

    def reorder(self, ids: list[str]) -> bool:
        """Run the Hog transformations in the order ``ids`` (one ``rearrange`` request); True on success."""
        ok, ordered = self._attempt(
            "Saving the order…", lambda: self._live_client().hog_functions.reorder(ids)
        )
        if not ok or ordered is None:
            return False
        self._hog_view.items = ordered
        self._render_hog()
        self._status.ok("Order saved: " + " → ".join(f.name or f.id for f in ordered) + ".")
        return True

    def move_selected(self, step: int) -> bool:
        """Move the picked transformation ``step`` places (-1: run earlier, 1: run later)."""
        selected = self._require_selected()
        if selected is None:
            return False
        ids = [f.id for f in self._hog_view.items]
        at = ids.index(selected.id)
        to = at + step
        if not 0 <= to < len(ids):
            self._status.ok(f"{selected.name or selected.id} is already {'first' if step < 0 else 'last'}.")
            return True
        ids[at], ids[to] = ids[to], ids[at]
        return self.reorder(ids)

    def set_enabled(self, enabled: bool) -> HogFunction | None:
        """Enable or disable the picked transformation (a re-enabled one is placed last by the service)."""
        selected = self._require_selected()
        if selected is None:
            return None
        ident = selected.id
        resource = "enable" if enabled else "disable"
        ok, updated = self._attempt(
            f"{resource.capitalize()[:-1]}ing {selected.name or ident}…",
            lambda: getattr(self._live_client().hog_functions, resource)(ident),
        )
        if not ok or updated is None:
            return None
        self._load_hog()
        self._hog_selected = self._hog_view.find(ident)
        self._render_hog()
        self._status.ok(f"{updated.name or ident} {'enabled' if enabled else 'disabled'}.")
        return updated

    def toggle_selected(self) -> HogFunction | None:
        """Disable the picked transformation when it is enabled, enable it otherwise."""
        selected = self._require_selected()
        if selected is None:
            return None
        return self.set_enabled(not selected.enabled)

    def create_from_template(
        self,
        template_id: str | None = None,
        *,
        inputs: dict[str, Any] | None = None,
        name: str | None = None,
        enabled: bool = False,
    ) -> HogFunction | None:
        """Create a Hog transformation from ``template_id`` (default: the Template picker's choice), placed
        last and disabled unless ``enabled``; selects it. Returns it, or None on error."""
        tid = template_id or self._hog_view.template_picker.value
        if not tid:
            self._status.error(FormError("Choose a template first (refresh the list to load them)."))
            return None
        ok, made = self._attempt(
            f"Creating from {tid}…",
            lambda: self._live_client().hog_functions.create(
                "transformation", template_id=str(tid), inputs=inputs, name=name, enabled=enabled
            ),
        )
        if not ok or made is None:
            return None
        self._load_hog()
        self._hog_selected = self._hog_view.find(made.id)
        self._render_hog()
        self._status.ok(f"Created {made.name or made.id} from {tid} at position {made.execution_order}.")
        return made
