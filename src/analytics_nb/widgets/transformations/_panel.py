"""``TransformationsBrowser``: the project's Hog transformations (today's API) in execution order first,
then the organization's legacy plugins (pipeline transformations) with their source.

The panel composes ``hog_view`` (Hog transformations: picker, table, Run earlier/later, Enable/Disable,
Create from template; actions in ``_hog_actions.py``), ``list_view`` (legacy plugins: picker, table,
Refresh, Check for updates), ``source_view`` (file picker, editor, Save file) and ``status``; a line says
which API the instance serves. Every button calls a public method (``refresh``, ``select``, ``open_file``,
``save_file``, ``check_for_updates``, ``select_hog``, ``move_selected``, ``reorder``, ``toggle_selected``,
``create_from_template``). ``.hog_frame`` and ``.frame`` are the two lists as DataFrames.
"""

from __future__ import annotations

import ipywidgets as w
import pandas as pd

from analytics_nb.client import ApiClient as Client
from analytics_nb.frames import transformation_sources_frame
from analytics_nb.models import Transformation
from analytics_nb.widgets._errors import FormError
from analytics_nb.widgets._panel import Panel, require_sync_client
from analytics_nb.widgets.transformations._hog_actions import (
    HogTransformationsActions,
    served_line,
    short_error,
)
from analytics_nb.widgets.transformations._list import TransformationList
from analytics_nb.widgets.transformations._source import SourceEditor

__all__ = ["TransformationsBrowser"]


class TransformationsBrowser(HogTransformationsActions, Panel):
    """A panel over ``client.hog_functions`` (Hog transformations, in execution order) and the legacy
    ``client.transformations`` (plugins): the lists, a picked plugin's source files, updates.

    ``.frame`` is every transformation as a DataFrame, ``.selected`` the picked ``Transformation`` (or None;
    assign one or an id to select it), ``.sources`` its files as ``{filename: content}`` and
    ``.sources_frame`` the same as a DataFrame.

    Args:
        client: A sync ``Client`` with a personal key that may read Hog functions (and plugins, where served).
        load: Load the lists now; False leaves them empty until ``refresh()``.

    Raises:
        TypeError: ``client`` is not a sync ``Client``.
    """

    title = "Transformations"
    css_class = "anb-transformations-browser"

    def __init__(self, client: Client, *, load: bool = True) -> None:
        require_sync_client(client, "TransformationsBrowser")
        super().__init__(client)
        self._selected: Transformation | None = None
        self.last_draft: tuple[int | None, str | None, str] | None = None  # (id, filename, text) left unsaved
        self._list_view = TransformationList(
            on_pick=self.select, on_refresh=self.refresh, on_updates=self.check_for_updates
        )
        self._source_view = SourceEditor(on_save=self.save_file)
        self._init_hog()
        self._register(*self._hog_view.controls, *self._list_view.controls, *self._source_view.controls)
        self.children = [
            self._heading(),
            self._hog_view.served,
            self._hog_view.root,
            w.HTML(value="<b>Legacy plugins</b> (pipeline_transformations; retired on PostHog Cloud)"),
            self._list_view.root,
            self._status.line,
            self._source_view.root,
            self._status.log,
        ]
        if load:
            self.refresh()

    def _client_changed(self) -> None:
        self.refresh()

    # ---- state ----------------------------------------------------------------------------------
    @property
    def transformations(self) -> list[Transformation]:
        """The listed transformations."""
        return self._list_view.items

    @property
    def selected(self) -> Transformation | None:
        """The picked transformation (None: none); assigning one, or its id, selects it."""
        return self._selected

    @selected.setter
    def selected(self, value: Transformation | int) -> None:
        ident = value.id if isinstance(value, Transformation) else value
        if ident is None:
            raise FormError("That transformation has no id; pick one from the list.")
        self.select(ident)

    @property
    def sources(self) -> dict[str, str | None]:
        """The selected transformation's files as ``{filename: content}``."""
        return self._source_view.sources

    @property
    def frame(self) -> pd.DataFrame:
        """The listed transformations as a DataFrame (``analytics_nb.frames.transformations_frame``)."""
        return self._list_view.frame

    @property
    def sources_frame(self) -> pd.DataFrame:
        """The selected transformation's files as a DataFrame (transformation_id, filename, content)."""
        if self._selected is None:
            return transformation_sources_frame({})
        return transformation_sources_frame({self._selected.id: self.sources})

    @property
    def is_dirty(self) -> bool:
        """True when the editor holds edits to the open file that are not saved."""
        return self._source_view.is_dirty

    # ---- list -----------------------------------------------------------------------------------
    def refresh(self) -> bool:
        """Reload both lists (Hog transformations first, then the legacy plugins) and the line saying which
        API the instance serves; True when the legacy list loaded (the Hog list may be missing on old
        self-hosted instances, the legacy one on PostHog Cloud)."""
        self._load_hog()
        ok, found = self._attempt(
            "Loading legacy plugins…", lambda: list(self._live_client().transformations.list())
        )
        legacy_error = "" if ok else short_error(self._status.last_error)
        if ok and found is not None:
            self._list_view.items = found
            self._render()
        host = self._live_client().host if self.client is not None and not self.client.closed else "?"
        legacy = len(found) if ok and found is not None else None
        self._set_served(served_line(host, self._hog_count, legacy, self._hog_error, legacy_error))
        if not ok or found is None:
            return False
        hog = f"{self._hog_count} Hog transformation(s), " if self._hog_count is not None else ""
        self._status.ok(f"{hog}{len(found)} legacy plugin(s).")
        return True

    def _render(self) -> None:
        self._list_view.selected_key = self._selected.id if self._selected is not None else None
        self._list_view.render()

    # ---- selection and source -------------------------------------------------------------------
    def select(self, id: int) -> Transformation | None:
        """Select transformation ``id`` and load its source files; returns it, or None on error.

        Args:
            id: The transformation's id.

        Returns:
            The `Transformation`, or None on error.
        """
        match = self._list_view.find(id)
        if match is None:
            self._status.error(FormError(f"No listed transformation has id {id!r}; refresh the list."))
            return None
        if self.is_dirty and self._selected is not None:
            name = self._source_view.filename
            self.message(f"Unsaved edits to {name} were left; they are in .last_draft.")
            self.last_draft = (self._selected.id, name, str(self._source_view.editor.value))
        self._selected = match
        self._render()
        ok, files = self._attempt(
            f"Loading the source of {id}…", lambda: self._live_client().transformations.source(id)
        )
        self._source_view.show(dict(files or {}) if ok else {})
        if not ok:
            return None
        self._status.ok(f"{match.name or id}: {len(self.sources)} source file(s).")
        return match

    def open_file(self, filename: str) -> None:
        """Show source file ``filename`` of the selected transformation in the editor.

        Args:
            filename: A source file of the selected transformation.
        """
        self._source_view.open(filename)

    def save_file(self) -> bool:
        """Send the open file's edited content (``update_source``); True on success, edits kept on error."""
        name = self._source_view.filename
        selected = self._selected
        if selected is None or selected.id is None or not name:
            self._status.error(FormError("Select a transformation and a file first."))
            return False
        if not self.is_dirty:
            self._status.ok("Nothing to save: the file is unchanged.")
            return True
        ident, content = selected.id, str(self._source_view.editor.value)
        ok, files = self._attempt(
            f"Saving {name}…",
            lambda: self._live_client().transformations.update_source(ident, {name: content}),
        )
        if not ok:
            return False
        self._source_view.sources.update(dict(files or {}))
        self._source_view.sources[name] = content
        self._status.ok(f"Saved {name}.")
        return True

    def check_for_updates(self) -> Transformation | None:
        """Ask the service for the selected transformation's latest version; shows tag and latest_tag."""
        selected = self._selected
        if selected is None or selected.id is None:
            self._status.error(FormError("Select a transformation first."))
            return None
        ident = selected.id
        ok, updated = self._attempt(
            "Checking for updates…", lambda: self._live_client().transformations.check_for_updates(ident)
        )
        if not ok or updated is None:
            return None
        self._list_view.items = [updated if t.id == ident else t for t in self._list_view.items]
        self._selected = updated
        self._render()
        tag, latest = updated.tag or "?", updated.latest_tag or "?"
        news = "an update is available" if latest not in ("?", tag) else "up to date"
        self._status.ok(f"{updated.name or ident}: installed {tag}, latest {latest} ({news}).")
        return updated
