"""``PlaylistEditor``: browse, edit, create, archive and restore session recording playlists from a notebook.

The panel composes small views (``filter_bar``, ``table_view``, ``form``, ``confirm``, ``recordings_view``,
``create_form``, ``restore_view``, ``status``) and wires their buttons to its methods (``search``,
``refresh``, ``select``, ``save``, ``create``, ``archive``, ``restore``, ``add_recording``, ...), so
whatever a click does, code can do too. Save sends one PATCH with only the changed fields (plus the stored
``filters`` of a saved-filters playlist, which the service requires on every update of such a playlist).

Changes made in code through the panel's client (``client.playlists.archive(...)`` in a later cell) mark
the list ``outdated``; it reloads at the end of that cell in IPython/Jupyter/Voila, or at
``refresh_if_outdated()``.
"""

from __future__ import annotations

import html
import weakref
from collections.abc import Callable
from typing import Any

import ipywidgets as w
import pandas as pd

from analytics_nb.client import ApiClient as Client
from analytics_nb.frames import recordings_frame
from analytics_nb.models import Playlist
from analytics_nb.widgets._errors import FormError
from analytics_nb.widgets._panel import Panel, require_sync_client
from analytics_nb.widgets.playlists._create import CreateForm, RestoreView
from analytics_nb.widgets.playlists._filter_bar import FilterBar
from analytics_nb.widgets.playlists._form import PlaylistForm
from analytics_nb.widgets.playlists._recordings import RecordingsView
from analytics_nb.widgets.playlists._table import PlaylistTable, playlist_label
from analytics_nb.widgets.views import ConfirmRow, column, columns

__all__ = ["PlaylistEditor"]


class PlaylistEditor(Panel):
    """A panel over ``client.playlists``: a filtered, paged table, an edit form, create/archive/restore and
    recordings.

    ``.frame`` is the current page as a DataFrame, ``.selected`` the selected ``Playlist`` (or None; assign
    a playlist or a short id to select it), ``.recordings`` the selected playlist's recordings as a DataFrame.

    Args:
        client: A sync ``Client`` with a personal key that may read (and, to edit, write) playlists.
        page_size: Playlists per page of the table.
        load: Load the first page now; False leaves the table empty until ``refresh()``.

    Raises:
        TypeError: ``client`` is not a sync ``Client`` (an ``AsyncClient`` is named with the fix).
        ValueError: ``page_size`` is below 1.
    """

    title = "Playlists"
    css_class = "anb-playlist-editor"

    def __init__(self, client: Client, *, page_size: int = 10, load: bool = True) -> None:
        require_sync_client(client, "PlaylistEditor")
        if page_size < 1:
            raise ValueError(f"page_size must be at least 1, got {page_size}; pass e.g. page_size=10.")
        super().__init__(client)
        self.archived: list[str] = []  # short ids archived from this panel, newest last (for Restore)
        self.drafts: dict[str, dict[str, Any]] = {}  # unsaved form values kept when switching playlists
        self._filter_bar = FilterBar(on_change=self._filters_changed, on_refresh=self.refresh)
        self._table_view = PlaylistTable(page_size, on_pick=self.select)
        self._form = PlaylistForm(on_save=self.save, on_revert=self.revert, on_archive=self.ask_archive)
        self._confirm = ConfirmRow(
            "confirm", "Yes, archive", on_yes=self.archive, on_cancel=self.cancel_archive
        )
        self._recordings_view = RecordingsView(on_add=self.add_recording, on_remove=self.remove_recording)
        self._create_form = CreateForm(on_create=self.create)
        self._restore_view = RestoreView(on_restore=self.restore)
        self._extras = w.Accordion(
            children=[self._create_form.root, self._restore_view.root],
            titles=("New playlist", "Restore"),
            layout=w.Layout(max_width="100%"),
        )
        self._extras.selected_index = None
        self._register(
            *self._filter_bar.controls,
            *self._table_view.controls,
            *self._form.controls,
            self._confirm.yes,
            self._confirm.cancel,
            *self._recordings_view.controls,
            *self._create_form.controls,
            *self._restore_view.controls,
        )
        self.children = [
            self._heading(),
            self._filter_bar.root,
            self._table_view.root,
            self._status.line,
            columns(column(self._form.root, self._confirm.root), self._recordings_view.root),
            self._extras,
            self._status.log,
        ]
        self._show_form(None)
        self.outdated = False  # playlists were changed in code through the client since the last load
        self._unwatch: Callable[[], None] | None = None
        self._watch(client)
        _reload_after_each_cell(self)
        if load:
            self.refresh()

    def _client_changed(self) -> None:
        if self._client is not None:
            self._watch(self._client)
        self.refresh()

    # ---- changes made in code -------------------------------------------------------------------
    def _watch(self, client: Client) -> None:
        """Listen to the client's writes: one to the playlists made outside this panel's own actions (the
        panel is not busy then) marks the list outdated. The listener holds the panel weakly."""
        if self._unwatch is not None:
            self._unwatch()
        listeners = client.core.write_listeners
        ref = weakref.ref(self)

        def heard(_method: str, path: str) -> None:
            panel = ref()
            if panel is None:
                if heard in listeners:
                    listeners.remove(heard)
            elif "session_recording_playlists" in path and not panel.busy:
                panel.outdated = True

        listeners.append(heard)
        self._unwatch = lambda: listeners.remove(heard) if heard in listeners else None

    def close(self) -> None:
        """Close the widget and stop listening to the client's writes (ipywidgets keeps every open widget,
        so a panel is only let go after ``close()``)."""
        unwatch = getattr(self, "_unwatch", None)  # absent when __init__ failed early
        self._unwatch = None
        if unwatch is not None:
            unwatch()
        super().close()

    def refresh_if_outdated(self) -> bool:
        """Reload the list when code changed playlists through the panel's client since the last load (run
        by itself at the end of every cell in Jupyter); True when it reloaded."""
        if not self.outdated or self.busy:
            return False
        self.outdated = False
        if not self.refresh():
            return False
        self._status.ok(f"Reloaded after changes made in code: {self.status_text}")
        return True

    # ---- state ----------------------------------------------------------------------------------
    @property
    def selected(self) -> Playlist | None:
        """The playlist in the form (None: none). Assigning a listed playlist or short id selects it."""
        return self._form.playlist

    @selected.setter
    def selected(self, value: Playlist | str | None) -> None:
        self.select(value.short_id if isinstance(value, Playlist) else value)

    @property
    def playlists(self) -> list[Playlist]:
        """Every playlist matching the filters (all pages)."""
        return self._table_view.items

    @property
    def page_size(self) -> int:
        """Playlists per page."""
        return self._table_view.page_size

    @property
    def page(self) -> int:
        """The page shown (0-based); assigning one shows it (clamped to the pages there are)."""
        return self._table_view.page

    @page.setter
    def page(self, value: int) -> None:
        self._table_view.go_to_page(value)

    @property
    def pages(self) -> int:
        """How many pages the matching playlists fill (at least 1)."""
        return self._table_view.pages

    @property
    def page_playlists(self) -> list[Playlist]:
        """The playlists on the current page."""
        return self._table_view.page_items

    @property
    def frame(self) -> pd.DataFrame:
        """The playlists on the current page as a DataFrame (``analytics_nb.frames.playlists_frame``)."""
        return self._table_view.frame

    @property
    def recordings(self) -> pd.DataFrame:
        """The selected playlist's recordings as a DataFrame."""
        return self._recordings_view.frame

    @property
    def is_dirty(self) -> bool:
        """True when the form holds edits that are not saved."""
        return self._form.is_dirty

    # ---- list, filters and paging ---------------------------------------------------------------
    def list_filters(self) -> dict[str, Any]:
        """The query the list is fetched with, from the search, type and pinned controls."""
        return self._filter_bar.query()

    def _filters_changed(self) -> None:
        if not self.busy:
            self._table_view.page = 0
            self.refresh()

    def search(self, text: str | None = None, *, type: str | None = None, pinned: bool | None = None) -> bool:
        """Set the search text (and optionally the type and pinned filters), then reload; True on success.

        Args:
            text: Text in the playlist names. None: keep the current search text.
            type: ``"collection"`` or ``"filters"``. None: keep the current type filter.
            pinned: Only pinned playlists (True). None: keep the current box.

        Returns:
            True when the list was reloaded; False when it failed (``.error`` says why).
        """
        self._filter_bar.set(text, type=type, pinned=pinned)
        self._table_view.page = 0
        return self.refresh()

    def refresh(self) -> bool:
        """Reload the playlists matching the filters (the selection stays if listed); True on success.

        On failure the list shown stays, marked as not reloaded, and the status says why.
        """
        query = self.list_filters()
        self.outdated = False
        ok, found = self._attempt(
            "Loading playlists…", lambda: list(self._live_client().playlists.list(**query))
        )
        if not ok or found is None:
            self._table_view.stale = True
            self._render_list()
            return False
        table = self._table_view
        table.items = found
        table.stale = False
        table.page = min(table.page, table.pages - 1)
        selected = self.selected
        if selected is not None and selected.short_id is not None:
            fresh = table.find(selected.short_id)
            if fresh is not None:
                table.page = table.page_of(selected.short_id) or 0
                self._form.follow(fresh)
        self._render_list()
        self._status.ok(f"{len(found)} playlist{'s' if len(found) != 1 else ''} found.")
        return True

    def go_to_page(self, page: int) -> None:
        """Show page ``page`` (0-based, clamped to the available pages).

        Args:
            page: The page number, 0-based.
        """
        self._table_view.go_to_page(page)

    def next_page(self) -> None:
        """Show the next page of playlists."""
        self._table_view.next_page()

    def prev_page(self) -> None:
        """Show the previous page of playlists."""
        self._table_view.prev_page()

    def _render_list(self) -> None:
        selected = self.selected
        self._table_view.selected_key = selected.short_id if selected is not None else None
        self._table_view.render()

    # ---- selection and the form -----------------------------------------------------------------
    def select(self, short_id: str | None) -> Playlist | None:
        """Select the listed playlist ``short_id`` (None clears): fill the form and load its recordings.

        Args:
            short_id: A listed playlist's short id; None clears the selection.

        Returns:
            The selected `Playlist`, or None.
        """
        if short_id is None:
            self._keep_draft()
            self._show_form(None)
            self._render_list()
            return None
        match = self._table_view.find(short_id)
        if match is None:
            self._status.error(
                FormError(f"No listed playlist has short id {short_id!r}; refresh or clear the filters.")
            )
            self._render_list()  # the picker goes back to the selection
            return None
        self._keep_draft()
        self._table_view.page = self._table_view.page_of(short_id) or 0
        self._show_form(match)
        self._render_list()
        draft = self.drafts.pop(short_id, None)
        if draft:
            self._form.fill(draft)
        self._status.ok(f"Selected {playlist_label(match)}.")
        loaded = self.load_recordings()
        if draft and loaded is not None:
            self._status.ok(f"Selected {playlist_label(match)}; your unsaved edits to it are back.")
        return match

    def _keep_draft(self) -> None:
        selected = self.selected
        if selected is not None and selected.short_id is not None and self._form.is_dirty:
            self.drafts[selected.short_id] = self._form.values()
            self.message(
                f"Kept your unsaved edits to {playlist_label(selected)}; select it again to get them back."
            )

    def _show_form(self, playlist: Playlist | None) -> None:
        self._form.load(playlist)
        self._recordings_view.set_enabled(self._form.editable)
        self._confirm.hide()
        if playlist is None:
            self._recordings_view.clear()

    def edit(self, **fields: Any) -> None:
        """Fill form fields from code: ``name``, ``description``, ``pinned``, ``filters`` (dict or JSON).

        Args:
            **fields: ``name``, ``description``, ``pinned`` or ``filters`` (a dict or JSON text); shown in the
                form, sent on ``save()``.
        """
        self._form.edit(**fields)

    def changes(self) -> dict[str, Any]:
        """The fields the form changed against the selected playlist, validated (FormError on bad JSON)."""
        return self._form.changes()

    def save(self) -> Playlist | None:
        """Send one PATCH with the changed fields; returns the updated Playlist, or None (see ``.error``)."""
        selected = self.selected
        if selected is None or selected.short_id is None:
            self._status.error(FormError("Select a playlist first: nothing to save."))
            return None
        try:
            fields = self._form.changes()
        except FormError as exc:
            self._status.error(exc)
            return None
        if not fields:
            self._status.ok("Nothing to save: the form matches the stored playlist.")
            return selected
        if selected.type == "filters" and "filters" not in fields:
            # the service refuses any update of a saved-filters playlist that lacks its filters
            fields["filters"] = selected.filters
        short_id = selected.short_id
        ok, updated = self._attempt(
            f"Saving {short_id}…", lambda: self._live_client().playlists.update(short_id, **fields)
        )
        if not ok or updated is None:
            return None
        self._replace(updated)
        self._render_list()
        self._status.ok(f"Saved {playlist_label(updated)} (sent {', '.join(sorted(fields))}).")
        return updated

    def revert(self) -> None:
        """Discard the form's unsaved edits and show the stored values again."""
        selected = self.selected
        if selected is not None and selected.short_id is not None:
            self.drafts.pop(selected.short_id, None)
        self._show_form(selected)
        self._status.ok("Reverted to the stored values.")

    def _replace(self, updated: Playlist) -> None:
        items = self._table_view.items
        for index, playlist in enumerate(items):
            if playlist.short_id == updated.short_id:
                items[index] = updated
        self._show_form(updated)

    # ---- create, archive, restore ---------------------------------------------------------------
    def create(
        self,
        name: str | None = None,
        type: str | None = None,
        *,
        filters: dict[str, Any] | str | None = None,
        description: str | None = None,
    ) -> Playlist | None:
        """Create a playlist (``type`` "collection" or "filters", which needs filters), then select it.

        Arguments left out are taken from the "New playlist" form. Returns the new Playlist or None on error.

        Args:
            name: The name. None: the form's.
            type: ``"collection"`` or ``"filters"``. None: the form's.
            filters: The saved filters (dict or JSON) of a ``"filters"`` playlist. None: the form's.
            description: A description. None: the form's.

        Returns:
            The new `Playlist`, or None on error.
        """
        try:
            fields = self._create_form.fields(name, type, filters=filters, description=description)
        except FormError as exc:
            self._status.error(exc)
            return None
        ok, created = self._attempt(
            "Creating the playlist…", lambda: self._live_client().playlists.create(**fields)
        )
        if not ok or created is None:
            return None
        self._create_form.clear()
        if self.refresh() and created.short_id is not None and self._table_view.find(created.short_id):
            self.select(created.short_id)
        self._status.ok(f"Created {playlist_label(created)}.")
        return created

    def ask_archive(self) -> None:
        """Show the archive confirmation for the selected playlist (the button's first step)."""
        if self.selected is None:
            self._status.error(FormError("Select a playlist to archive first."))
            return
        name = html.escape(playlist_label(self.selected))
        self._confirm.ask(f"Archive <b>{name}</b>? It disappears from lists; Restore brings it back.")

    def cancel_archive(self) -> None:
        """Hide the archive confirmation without archiving."""
        self._confirm.hide()
        self._status.ok("Archive cancelled.")

    def _target(self, short_id: str | None) -> str | None:
        selected = self.selected
        return short_id or (selected.short_id if selected is not None else None)

    def archive(self, short_id: str | None = None) -> bool:
        """Archive (soft delete) ``short_id`` or the selected playlist; True on success. Restore undoes it.

        Args:
            short_id: The playlist to archive. None: the selected one.

        Returns:
            True on success.
        """
        target = self._target(short_id)
        if target is None:
            self._status.error(FormError("Select a playlist to archive first."))
            return False
        self._confirm.hide()
        ok, _ = self._attempt(f"Archiving {target}…", lambda: self._live_client().playlists.archive(target))
        if not ok:
            return False
        self.archived.append(target)
        self._restore_view.short_id.value = target
        self.drafts.pop(target, None)
        table = self._table_view
        table.items = [p for p in table.items if p.short_id != target]
        selected = self.selected
        if selected is not None and selected.short_id == target:
            self._show_form(None)
        table.page = min(table.page, table.pages - 1)
        self._render_list()
        self._status.ok(f"Archived {target}. Restore (below) with this short id brings it back.")
        return True

    def delete(self, short_id: str | None = None) -> bool:
        """Ask the service to delete a playlist for good: it refuses (405) and the panel explains archiving.

        Playlists can only be archived; this method exists so that trying to delete gives the explanation
        instead of an AttributeError. Returns False when refused (always, on PostHog).

        Args:
            short_id: The playlist. None: the selected one.

        Returns:
            False when refused (always, on PostHog).
        """
        target = self._target(short_id)
        if target is None:
            self._status.error(FormError("Select a playlist first."))
            return False
        ok, _ = self._attempt(f"Deleting {target}…", lambda: self._live_client().playlists.delete(target))
        if ok:  # a service that allows it after all: reflect it
            self._table_view.items = [p for p in self._table_view.items if p.short_id != target]
            self._render_list()
            self._status.ok(f"Deleted {target}.")
        return ok

    def restore(self, short_id: str | None = None) -> Playlist | None:
        """Restore an archived playlist (default: the Restore field, else the last one archived here).

        Args:
            short_id: The playlist to restore. None: the Restore field, else the last one archived here.

        Returns:
            The restored `Playlist`, or None on error.
        """
        typed = str(self._restore_view.short_id.value).strip()
        target = short_id or typed or (self.archived[-1] if self.archived else "")
        if not target:
            self._status.error(FormError("Give the short id of the archived playlist to restore."))
            return None
        ok, restored = self._attempt(
            f"Restoring {target}…", lambda: self._live_client().playlists.restore(target)
        )
        if not ok:
            return None
        if target in self.archived:
            self.archived.remove(target)
        self._restore_view.short_id.value = self.archived[-1] if self.archived else ""
        if self.refresh() and self._table_view.find(target) is not None:
            self.select(target)
        self._status.ok(f"Restored {target}.")
        return restored

    # ---- recordings -----------------------------------------------------------------------------
    def load_recordings(self) -> pd.DataFrame | None:
        """(Re)load the selected playlist's recordings into ``.recordings``; None on error."""
        selected = self.selected
        if selected is None or selected.short_id is None:
            return None
        short_id = selected.short_id
        ok, records = self._attempt(
            f"Loading the recordings of {short_id}…",
            lambda: list(self._live_client().playlists.recordings(short_id)),
        )
        if not ok or records is None:
            self._recordings_view.clear()  # never show another playlist's recordings
            return None
        self._recordings_view.show(recordings_frame(records))
        self._status.ok(f"Selected {playlist_label(selected)}: {len(self.recordings)} recording(s).")
        return self.recordings

    def add_recording(self, session_recording_id: str | None = None) -> bool:
        """Add a session recording (default: the Recording field) to the selected playlist; True if done.

        Args:
            session_recording_id: The recording's session id. None: the Recording field.

        Returns:
            True when added.
        """
        selected = self.selected
        if selected is None or selected.short_id is None:
            self._status.error(FormError("Select a playlist first, then add a recording to it."))
            return False
        rec = (session_recording_id or self._recordings_view.typed_id).strip()
        if not rec:
            self._status.error(FormError("Type a session recording id in the Recording field first."))
            return False
        short_id = selected.short_id
        ok, _ = self._attempt(
            f"Adding {rec}…", lambda: self._live_client().playlists.add_recording(short_id, rec)
        )
        if not ok:
            return False
        self._recordings_view.recording_id.value = ""
        self.load_recordings()
        self._status.ok(f"Added recording {rec} to {short_id}.")
        return True

    def remove_recording(self, session_recording_id: str | None = None) -> bool:
        """Remove a recording (default: the one picked under "In playlist") from the selected playlist.

        Args:
            session_recording_id: The recording's session id. None: the one picked under "In playlist".

        Returns:
            True when removed.
        """
        selected = self.selected
        if selected is None or selected.short_id is None:
            self._status.error(FormError("Select a playlist first."))
            return False
        rec = session_recording_id or self._recordings_view.picked
        if not rec:
            self._status.error(FormError("Pick the recording to remove in the 'In playlist' list first."))
            return False
        short_id = selected.short_id
        ok, _ = self._attempt(
            f"Removing {rec}…", lambda: self._live_client().playlists.remove_recording(short_id, rec)
        )
        if not ok:
            return False
        self.load_recordings()
        self._status.ok(f"Removed recording {rec} from {short_id}.")
        return True


def _reload_after_each_cell(panel: PlaylistEditor) -> None:
    """In IPython (Jupyter, Voila), reload ``panel``'s list after each cell that changed playlists through its
    client; the hook holds the panel weakly and unregisters once the panel is gone."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None:
        return
    ref = weakref.ref(panel)

    def after_cell(_result: object = None) -> None:
        alive = ref()
        if alive is None:
            shell.events.unregister("post_run_cell", after_cell)
        else:
            alive.refresh_if_outdated()

    shell.events.register("post_run_cell", after_cell)
