"""``PlaylistEditor``: browse, edit, create, archive and restore session recording playlists from a notebook.

Every button calls a public method (``search``, ``refresh``, ``select``, ``save``, ``create``, ``archive``,
``restore``, ``add_recording``, ``remove_recording``, ...), so whatever a click does, code can do too. Save
sends one PATCH with only the changed fields (plus the stored ``filters`` of a saved-filters playlist, which
the service requires on every update of such a playlist).
"""

from __future__ import annotations

import html
import json
import math
from typing import Any

import ipywidgets as w
import pandas as pd

from analytics_nb.widgets._base import Panel, frame_html, require_sync_client
from analytics_nb.widgets._errors import FormError

__all__ = ["PlaylistEditor"]

_TABLE_COLUMNS = [
    "short_id",
    "name",
    "type",
    "pinned",
    "recordings",
    "description",
    "last_modified_at",
    "created_by_email",
]
_RECORDING_COLUMNS = ["id", "distinct_id", "start_time", "recording_duration", "click_count"]


def _label(playlist: Any) -> str:
    name = playlist.name or playlist.derived_name or "(unnamed)"
    return f"{name} · {playlist.short_id}"


def _filters_text(filters: Any) -> str:
    return json.dumps(filters if filters is not None else {}, indent=2, sort_keys=True, default=str)


def _parse_filters(text: str, field: str = "filters") -> dict[str, Any]:
    """Parse the JSON editor's text into a dict, or raise a FormError naming the line and column."""
    stripped = text.strip()
    if not stripped:
        return {}
    try:
        value = json.loads(stripped)
    except json.JSONDecodeError as exc:
        raise FormError(
            f"The {field} field is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}). "
            "Fix it and save again; nothing was sent."
        ) from None
    if not isinstance(value, dict):
        raise FormError(
            f'The {field} field must be a JSON object such as {{"events": []}}, not {type(value).__name__}. '
            "Fix it and save again; nothing was sent."
        )
    return value


def _count(playlist: Any) -> int | None:
    counts = getattr(playlist, "recordings_counts", None)
    collection = getattr(counts, "collection", None) if counts is not None else None
    value = getattr(collection, "count", None) if collection is not None else None
    return int(value) if isinstance(value, int) else None


class PlaylistEditor(Panel):
    """A panel over ``client.playlists``: a filtered, paged table, an edit form, create/archive/restore and
    recordings.

    ``.frame`` is the current page as a DataFrame, ``.selected`` the selected ``Playlist`` (or None),
    ``.recordings`` the selected playlist's recordings as a DataFrame.
    """

    title = "Playlists"

    def __init__(self, client: Any, *, page_size: int = 10, load: bool = True) -> None:
        require_sync_client(client, "PlaylistEditor")
        super().__init__()
        if page_size < 1:
            raise ValueError(f"page_size must be at least 1, got {page_size}; pass e.g. page_size=10.")
        self.client = client
        self.page_size = page_size
        self.page = 0
        self.playlists: list[Any] = []  # every playlist matching the filters (all pages)
        self.selected: Any = None
        self.recordings: pd.DataFrame = pd.DataFrame(columns=_RECORDING_COLUMNS)
        self.archived: list[str] = []  # short ids archived from this panel, newest last (for Restore)
        self.drafts: dict[str, dict[str, Any]] = {}  # unsaved form values kept when switching playlists
        self._loading_form = False
        self._build()
        if load:
            self.refresh()

    # ---- layout ---------------------------------------------------------------------------------
    def _build(self) -> None:
        # filters row
        self.search_box = w.Text(
            placeholder="search name", description="Search", layout=w.Layout(width="260px")
        )
        self.type_filter = w.Dropdown(
            options=[("all types", ""), ("collection", "collection"), ("filters", "filters")],
            value="",
            description="Type",
            layout=w.Layout(width="200px"),
        )
        self.pinned_filter = w.Checkbox(value=False, description="pinned only", indent=False)
        self.refresh_button = w.Button(description="Refresh", icon="refresh", tooltip="Reload the playlists")
        self.search_box.continuous_update = False  # value syncs on Enter / blur: then reload
        self.search_box.observe(lambda _c: self._filters_changed(), names="value")
        self.type_filter.observe(lambda _c: self._filters_changed(), names="value")
        self.pinned_filter.observe(lambda _c: self._filters_changed(), names="value")
        self.refresh_button.on_click(lambda _b: self.refresh())
        filters_row = w.HBox([self.search_box, self.type_filter, self.pinned_filter, self.refresh_button])

        # table, picker and paging
        self.table = w.HTML(value="")
        self.table.add_class("anb-playlists-table")
        self.picker = w.Select(
            options=[], rows=min(self.page_size, 8), description="Playlist", layout=w.Layout(width="420px")
        )
        self.picker.observe(self._picked, names="value")
        self.prev_button = w.Button(description="Prev", icon="arrow-left", layout=w.Layout(width="80px"))
        self.next_button = w.Button(description="Next", icon="arrow-right", layout=w.Layout(width="80px"))
        self.page_label = w.HTML(value="")
        self.prev_button.on_click(lambda _b: self.prev_page())
        self.next_button.on_click(lambda _b: self.next_page())
        paging = w.HBox([self.prev_button, self.page_label, self.next_button])

        # edit form
        self.form_title = w.HTML(value="<b>Select a playlist to edit it</b>")
        self.name_box = w.Text(description="Name", layout=w.Layout(width="420px"))
        self.description_box = w.Textarea(
            description="Description", layout=w.Layout(width="420px", height="60px")
        )
        self.pinned_box = w.Checkbox(description="Pinned", indent=True)
        self.filters_box = w.Textarea(
            description="Filters",
            layout=w.Layout(width="420px", height="120px"),
            placeholder='{"events": []}',
        )
        self.save_button = w.Button(description="Save", button_style="primary", icon="save")
        self.revert_button = w.Button(description="Revert", icon="undo", tooltip="Discard unsaved edits")
        self.archive_button = w.Button(description="Archive", button_style="warning", icon="archive")
        self.confirm_label = w.HTML(value="")
        self.confirm_button = w.Button(description="Yes, archive", button_style="danger")
        self.cancel_button = w.Button(description="Cancel")
        self.confirm_box = w.HBox([self.confirm_label, self.confirm_button, self.cancel_button])
        self.confirm_box.layout.display = "none"
        self.save_button.on_click(lambda _b: self.save())
        self.revert_button.on_click(lambda _b: self.revert())
        self.archive_button.on_click(lambda _b: self.ask_archive())
        self.confirm_button.on_click(lambda _b: self.archive())
        self.cancel_button.on_click(lambda _b: self.cancel_archive())
        for box in (self.name_box, self.description_box, self.pinned_box, self.filters_box):
            box.observe(self._form_edited, names="value")
        self.dirty_label = w.HTML(value="")
        form = w.VBox(
            [
                self.form_title,
                self.name_box,
                self.description_box,
                self.pinned_box,
                self.filters_box,
                w.HBox([self.save_button, self.revert_button, self.archive_button, self.dirty_label]),
                self.confirm_box,
            ]
        )

        # recordings of the selected playlist
        self.recordings_table = w.HTML(value="")
        self.recording_id_box = w.Text(
            placeholder="session recording id", description="Recording", layout=w.Layout(width="300px")
        )
        self.add_button = w.Button(description="Add", icon="plus")
        self.recordings_picker = w.Select(
            options=[], rows=4, description="In playlist", layout=w.Layout(width="300px")
        )
        self.remove_button = w.Button(description="Remove", icon="minus")
        self.add_button.on_click(lambda _b: self.add_recording())
        self.remove_button.on_click(lambda _b: self.remove_recording())
        recordings = w.VBox(
            layout=w.Layout(overflow="auto", max_width="620px", margin="0 0 0 12px"),
            children=[
                w.HTML(value="<b>Recordings</b>"),
                self.recordings_table,
                w.HBox([self.recording_id_box, self.add_button]),
                w.HBox([self.recordings_picker, self.remove_button]),
            ],
        )

        # create and restore
        self.new_name_box = w.Text(description="Name", layout=w.Layout(width="360px"))
        self.new_type = w.ToggleButtons(
            options=["collection", "filters"], value="collection", description="Type"
        )
        self.new_filters_box = w.Textarea(
            description="Filters",
            placeholder='{"events": [{"id": "$pageview"}]}',
            layout=w.Layout(width="360px", height="80px"),
        )
        self.new_description_box = w.Text(description="Description", layout=w.Layout(width="360px"))
        self.create_button = w.Button(description="Create", icon="plus", button_style="success")
        self.create_button.on_click(lambda _b: self.create())
        self.restore_box = w.Text(
            description="Short id", placeholder="archived playlist short id", layout=w.Layout(width="300px")
        )
        self.restore_button = w.Button(description="Restore", icon="undo")
        self.restore_button.on_click(lambda _b: self.restore())
        create_box = w.VBox(
            [
                self.new_name_box,
                self.new_type,
                self.new_description_box,
                self.new_filters_box,
                self.create_button,
            ]
        )
        restore_box = w.VBox(
            [
                w.HTML(value="Undo an archive: the short id of an archived playlist."),
                w.HBox([self.restore_box, self.restore_button]),
            ]
        )
        self.extras = w.Accordion(children=[create_box, restore_box], titles=("New playlist", "Restore"))
        self.extras.selected_index = None

        self._register(
            self.search_box,
            self.type_filter,
            self.pinned_filter,
            self.refresh_button,
            self.picker,
            self.prev_button,
            self.next_button,
            self.save_button,
            self.revert_button,
            self.archive_button,
            self.confirm_button,
            self.cancel_button,
            self.add_button,
            self.remove_button,
            self.create_button,
            self.restore_button,
        )
        self.root.children = [
            w.HTML(value=f"<h3 style='margin:4px 0'>{self.title}</h3>"),
            filters_row,
            self.table,
            w.HBox([self.picker, paging]),
            self.status,
            w.HBox([form, recordings]),
            self.extras,
            self.messages,
        ]
        self._show_form(None)

    # ---- list, filters and paging ---------------------------------------------------------------
    def list_filters(self) -> dict[str, Any]:
        """The query the list is fetched with, from the search, type and pinned controls."""
        query: dict[str, Any] = {}
        if self.search_box.value.strip():
            query["search"] = self.search_box.value.strip()
        if self.type_filter.value:
            query["type"] = self.type_filter.value
        if self.pinned_filter.value:
            query["pinned"] = True  # the service filters on the parameter's presence, so only send it when on
        return query

    def _filters_changed(self) -> None:
        if not self.busy and not self._loading_form:
            self.page = 0
            self.refresh()

    def search(self, text: str | None = None, *, type: str | None = None, pinned: bool | None = None) -> bool:
        """Set the search text (and optionally the type and pinned filters), then reload; True on success."""
        with self._quiet():
            if text is not None:
                self.search_box.value = text
            if type is not None:
                self.type_filter.value = type
            if pinned is not None:
                self.pinned_filter.value = pinned
        self.page = 0
        return self.refresh()

    def refresh(self) -> bool:
        """Reload the playlists matching the filters (the selection stays if listed); True on success."""
        ok, found = self._attempt(
            "Loading playlists…", lambda: list(self.client.playlists.list(**self.list_filters()))
        )
        if not ok or found is None:
            return False
        self.playlists = found
        self.page = min(self.page, max(self.pages - 1, 0))
        if self.selected is not None:
            match = [p for p in found if p.short_id == self.selected.short_id]
            if match:
                position = found.index(match[0])
                self.page = position // self.page_size
                self._follow(match[0])
        self._render_list()
        self._ok(f"{len(found)} playlist{'s' if len(found) != 1 else ''} found.")
        return True

    @property
    def pages(self) -> int:
        """How many pages the matching playlists fill (at least 1)."""
        return max(1, math.ceil(len(self.playlists) / self.page_size))

    @property
    def page_playlists(self) -> list[Any]:
        """The playlists on the current page."""
        start = self.page * self.page_size
        return self.playlists[start : start + self.page_size]

    @property
    def frame(self) -> pd.DataFrame:
        """The playlists on the current page as a DataFrame (``analytics_nb.frames.playlists_frame``)."""
        from analytics_nb.frames import playlists_frame

        return playlists_frame(self.page_playlists)

    def go_to_page(self, page: int) -> None:
        """Show page ``page`` (0-based, clamped to the available pages)."""
        self.page = max(0, min(page, self.pages - 1))
        self._render_list()

    def next_page(self) -> None:
        """Show the next page of playlists."""
        self.go_to_page(self.page + 1)

    def prev_page(self) -> None:
        """Show the previous page of playlists."""
        self.go_to_page(self.page - 1)

    def _render_list(self) -> None:
        shown = self.page_playlists
        df = self.frame
        if "recordings" not in df.columns:
            df = df.assign(recordings=pd.array([_count(p) for p in shown], dtype="Int64"))
        if len(df):  # show the derived name where a playlist has no name of its own (display only)
            df = df.assign(name=[p.name or p.derived_name or None for p in shown])
        key = self.selected.short_id if self.selected is not None else None
        self.table.value = frame_html(
            df,
            _TABLE_COLUMNS,
            max_rows=self.page_size,
            highlight=key,
            key="short_id",
            css_class="anb-table anb-playlists",
        )
        self.page_label.value = (
            f"&nbsp;page {self.page + 1} of {self.pages} ({len(self.playlists)} playlists)&nbsp;"
        )
        self.prev_button.disabled = self.page == 0
        self.next_button.disabled = self.page >= self.pages - 1
        options = [(_label(p), p.short_id) for p in shown]
        with self._quiet():
            self.picker.options = options
            values = [value for _label_text, value in options]
            self.picker.value = key if key in values else None

    # ---- selection and the form -----------------------------------------------------------------
    class _Quiet:
        def __init__(self, panel: PlaylistEditor) -> None:
            self.panel = panel
            self.before = False

        def __enter__(self) -> None:
            self.before = self.panel._loading_form
            self.panel._loading_form = True

        def __exit__(self, *exc: object) -> None:
            self.panel._loading_form = self.before

    def _quiet(self) -> PlaylistEditor._Quiet:
        return PlaylistEditor._Quiet(self)

    def _picked(self, change: dict[str, Any]) -> None:
        if self._loading_form or change["new"] is None:
            return
        self.select(change["new"])

    def select(self, short_id: str | None) -> Any:
        """Select the listed playlist ``short_id`` (None clears): fill the form and load its recordings."""
        if short_id is None:
            self._keep_draft()
            self.selected = None
            self._show_form(None)
            self._render_list()
            return None
        match = [p for p in self.playlists if p.short_id == short_id]
        if not match:
            self._error(
                FormError(f"No listed playlist has short id {short_id!r}; refresh or clear the filters.")
            )
            return None
        self._keep_draft()
        self.selected = match[0]
        position = self.playlists.index(self.selected)
        self.page = position // self.page_size
        self._show_form(self.selected)
        self._render_list()
        draft = self.drafts.pop(short_id, None)
        if draft:
            with self._quiet():
                self.name_box.value = draft["name"]
                self.description_box.value = draft["description"]
                self.pinned_box.value = draft["pinned"]
                self.filters_box.value = draft["filters"]
            self._update_dirty()
        self._ok(f"Selected {_label(self.selected)}.")
        loaded = self.load_recordings()
        if draft and loaded is not None:
            self._ok(f"Selected {_label(self.selected)}; your unsaved edits to it are back.")
        return self.selected

    def _form_values(self) -> dict[str, Any]:
        return {
            "name": self.name_box.value,
            "description": self.description_box.value,
            "pinned": self.pinned_box.value,
            "filters": self.filters_box.value,
        }

    def _stored_values(self, playlist: Any) -> dict[str, Any]:
        return {
            "name": playlist.name or "",
            "description": playlist.description or "",
            "pinned": bool(playlist.pinned),
            "filters": _filters_text(playlist.filters),
        }

    def _follow(self, fresh: Any) -> None:
        """Take the service's fresh copy of the selected playlist: fields the user did not edit follow it,
        edited fields keep the user's text (so a save never reverts someone else's change unseen)."""
        before = self._stored_values(self.selected)
        form = self._form_values()
        after = self._stored_values(fresh)
        self.selected = fresh
        boxes = {
            "name": self.name_box,
            "description": self.description_box,
            "pinned": self.pinned_box,
            "filters": self.filters_box,
        }
        with self._quiet():
            for field, box in boxes.items():
                if form[field] == before[field]:
                    box.value = after[field]
        self._update_dirty()

    def _keep_draft(self) -> None:
        if self.selected is not None and self.is_dirty:
            self.drafts[self.selected.short_id] = self._form_values()
            self.message(
                f"Kept your unsaved edits to {_label(self.selected)}; select it again to get them back."
            )

    def _show_form(self, playlist: Any) -> None:
        editable = playlist is not None and not getattr(playlist, "is_synthetic", False)
        with self._quiet():
            values = (
                self._stored_values(playlist)
                if playlist is not None
                else {"name": "", "description": "", "pinned": False, "filters": ""}
            )
            self.name_box.value = values["name"]
            self.description_box.value = values["description"]
            self.pinned_box.value = values["pinned"]
            self.filters_box.value = values["filters"]
        for control in (self.name_box, self.description_box, self.pinned_box, self.filters_box):
            control.disabled = not editable
        for button in (
            self.save_button,
            self.revert_button,
            self.archive_button,
            self.add_button,
            self.remove_button,
        ):
            button.disabled = not editable
        self.confirm_box.layout.display = "none"
        if playlist is None:
            self.form_title.value = "<b>Select a playlist to edit it</b>"
            self.recordings = pd.DataFrame(columns=_RECORDING_COLUMNS)
            self._render_recordings()
        else:
            kind = playlist.type or "unknown type"
            note = " (a built-in playlist: read only)" if not editable else ""
            self.form_title.value = f"<b>{html.escape(_label(playlist))}</b> <i>{html.escape(kind)}</i>{note}"
        self._update_dirty()

    def _form_edited(self, _change: dict[str, Any]) -> None:
        if not self._loading_form:
            self._update_dirty()

    @property
    def is_dirty(self) -> bool:
        """True when the form holds edits that are not saved."""
        if self.selected is None:
            return False
        return self._form_values() != self._stored_values(self.selected)

    def _update_dirty(self) -> None:
        self.dirty_label.value = "<i style='color:#8a6d00'>unsaved edits</i>" if self.is_dirty else ""

    def edit(self, **fields: Any) -> None:
        """Fill form fields from code: ``name``, ``description``, ``pinned``, ``filters`` (dict or JSON)."""
        if self.selected is None:
            raise FormError("Select a playlist first (editor.select(short_id)).")
        unknown = set(fields) - {"name", "description", "pinned", "filters"}
        if unknown:
            raise FormError(
                f"Unknown form field(s) {sorted(unknown)}; use name, description, pinned or filters."
            )
        if "name" in fields:
            self.name_box.value = fields["name"] or ""
        if "description" in fields:
            self.description_box.value = fields["description"] or ""
        if "pinned" in fields:
            self.pinned_box.value = bool(fields["pinned"])
        if "filters" in fields:
            value = fields["filters"]
            self.filters_box.value = value if isinstance(value, str) else _filters_text(value)

    def changes(self) -> dict[str, Any]:
        """The fields the form changed against the selected playlist, validated (FormError on bad JSON)."""
        if self.selected is None:
            raise FormError("Select a playlist first: nothing to save.")
        stored = self.selected
        out: dict[str, Any] = {}
        if self.name_box.value != (stored.name or ""):
            out["name"] = self.name_box.value
        if self.description_box.value != (stored.description or ""):
            out["description"] = self.description_box.value
        if self.pinned_box.value != bool(stored.pinned):
            out["pinned"] = self.pinned_box.value
        filters = _parse_filters(self.filters_box.value)
        if filters != (stored.filters or {}):
            if stored.type == "filters" and not filters:
                raise FormError(
                    "A saved-filters playlist needs non-empty filters; put the filters back or archive the "
                    "playlist instead. Nothing was sent."
                )
            out["filters"] = filters
        return out

    def save(self) -> Any:
        """Send one PATCH with the changed fields; returns the updated Playlist, or None (see ``.error``)."""
        if self.selected is None:
            self._error(FormError("Select a playlist first: nothing to save."))
            return None
        try:
            fields = self.changes()
        except FormError as exc:
            self._error(exc)
            return None
        if not fields:
            self._ok("Nothing to save: the form matches the stored playlist.")
            return self.selected
        if self.selected.type == "filters" and "filters" not in fields:
            # the service refuses any update of a saved-filters playlist that lacks its filters
            fields["filters"] = self.selected.filters
        short_id = self.selected.short_id
        ok, updated = self._attempt(
            f"Saving {short_id}…", lambda: self.client.playlists.update(short_id, **fields)
        )
        if not ok or updated is None:
            return None
        self._replace(updated)
        self._show_form(updated)
        self._render_list()
        self._ok(f"Saved {_label(updated)} (sent {', '.join(sorted(fields))}).")
        return updated

    def revert(self) -> None:
        """Discard the form's unsaved edits and show the stored values again."""
        if self.selected is not None:
            self.drafts.pop(self.selected.short_id, None)
        self._show_form(self.selected)
        self._ok("Reverted to the stored values.")

    def _replace(self, updated: Any) -> None:
        for index, playlist in enumerate(self.playlists):
            if playlist.short_id == updated.short_id:
                self.playlists[index] = updated
        self.selected = updated

    # ---- create, archive, restore ---------------------------------------------------------------
    def create(
        self,
        name: str | None = None,
        type: str | None = None,
        *,
        filters: dict[str, Any] | str | None = None,
        description: str | None = None,
    ) -> Any:
        """Create a playlist (``type`` "collection" or "filters", which needs filters), then select it.

        Arguments left out are taken from the "New playlist" form. Returns the new Playlist or None on error.
        """
        name = self.new_name_box.value if name is None else name
        kind = self.new_type.value if type is None else type
        description = self.new_description_box.value if description is None else description
        try:
            if kind not in ("collection", "filters"):
                raise FormError(f"type must be 'collection' or 'filters', got {kind!r}.")
            if filters is None:
                parsed = _parse_filters(self.new_filters_box.value, "new playlist's filters")
            elif isinstance(filters, str):
                parsed = _parse_filters(filters, "new playlist's filters")
            else:
                parsed = dict(filters)
            if kind == "filters" and not parsed:
                raise FormError(
                    "A saved-filters playlist needs filters: write them as JSON, e.g. "
                    '{"events": [{"id": "$pageview"}]}.'
                )
            if kind == "collection" and parsed:
                raise FormError(
                    "A collection cannot have filters: empty the filters field or choose the type 'filters'."
                )
        except FormError as exc:
            self._error(exc)
            return None
        fields: dict[str, Any] = {"type": kind}
        if name:
            fields["name"] = name
        if description:
            fields["description"] = description
        if kind == "filters":
            fields["filters"] = parsed
        ok, created = self._attempt("Creating the playlist…", lambda: self.client.playlists.create(**fields))
        if not ok or created is None:
            return None
        with self._quiet():
            self.new_name_box.value = ""
            self.new_description_box.value = ""
            self.new_filters_box.value = ""
        if self.refresh() and any(p.short_id == created.short_id for p in self.playlists):
            self.select(created.short_id)
        self._ok(f"Created {_label(created)}.")
        return created

    def ask_archive(self) -> None:
        """Show the archive confirmation for the selected playlist (the button's first step)."""
        if self.selected is None:
            self._error(FormError("Select a playlist to archive first."))
            return
        name = html.escape(_label(self.selected))
        self.confirm_label.value = f"Archive <b>{name}</b>? It disappears from lists; Restore brings it back."
        self.confirm_box.layout.display = "flex"

    def cancel_archive(self) -> None:
        """Hide the archive confirmation without archiving."""
        self.confirm_box.layout.display = "none"
        self._ok("Archive cancelled.")

    def archive(self, short_id: str | None = None) -> bool:
        """Archive (soft delete) ``short_id`` or the selected playlist; True on success. Restore undoes it."""
        target = short_id or (self.selected.short_id if self.selected is not None else None)
        if target is None:
            self._error(FormError("Select a playlist to archive first."))
            return False
        self.confirm_box.layout.display = "none"
        ok, _ = self._attempt(f"Archiving {target}…", lambda: self.client.playlists.archive(target))
        if not ok:
            return False
        self.archived.append(target)
        self.restore_box.value = target
        self.drafts.pop(target, None)
        self.playlists = [p for p in self.playlists if p.short_id != target]
        if self.selected is not None and self.selected.short_id == target:
            self.selected = None
            self._show_form(None)
        self.page = min(self.page, self.pages - 1)
        self._render_list()
        self._ok(f"Archived {target}. Restore (below) with this short id brings it back.")
        return True

    def delete(self, short_id: str | None = None) -> bool:
        """Ask the service to delete a playlist for good: it refuses (405) and the panel explains archiving.

        Playlists can only be archived; this method exists so that trying to delete gives the explanation
        instead of an AttributeError. Returns False when refused (always, on PostHog).
        """
        target = short_id or (self.selected.short_id if self.selected is not None else None)
        if target is None:
            self._error(FormError("Select a playlist first."))
            return False
        ok, _ = self._attempt(f"Deleting {target}…", lambda: self.client.playlists.delete(target))
        if ok:  # a service that allows it after all: reflect it
            self.playlists = [p for p in self.playlists if p.short_id != target]
            self._render_list()
            self._ok(f"Deleted {target}.")
        return ok

    def restore(self, short_id: str | None = None) -> Any:
        """Restore an archived playlist (default: the Restore field, else the last one archived here)."""
        target = short_id or self.restore_box.value.strip() or (self.archived[-1] if self.archived else "")
        if not target:
            self._error(FormError("Give the short id of the archived playlist to restore."))
            return None
        ok, restored = self._attempt(f"Restoring {target}…", lambda: self.client.playlists.restore(target))
        if not ok:
            return None
        if target in self.archived:
            self.archived.remove(target)
        self.restore_box.value = self.archived[-1] if self.archived else ""
        if self.refresh() and any(p.short_id == target for p in self.playlists):
            self.select(target)
        self._ok(f"Restored {target}.")
        return restored

    # ---- recordings -----------------------------------------------------------------------------
    def load_recordings(self) -> pd.DataFrame | None:
        """(Re)load the selected playlist's recordings into ``.recordings``; None on error."""
        if self.selected is None:
            return None
        short_id = self.selected.short_id
        ok, records = self._attempt(
            f"Loading the recordings of {short_id}…", lambda: list(self.client.playlists.recordings(short_id))
        )
        if not ok or records is None:
            return None
        from analytics_nb.frames import recordings_frame

        self.recordings = recordings_frame(records)
        self._render_recordings()
        self._ok(f"Selected {_label(self.selected)}: {len(self.recordings)} recording(s).")
        return self.recordings

    def _render_recordings(self) -> None:
        df = self.recordings
        self.recordings_table.value = frame_html(
            df, _RECORDING_COLUMNS, max_rows=20, css_class="anb-table anb-recordings"
        )
        ids = [str(x) for x in df["id"].tolist()] if "id" in df.columns else []
        with self._quiet():
            self.recordings_picker.options = ids
            self.recordings_picker.value = ids[0] if ids else None

    def add_recording(self, session_recording_id: str | None = None) -> bool:
        """Add a session recording (default: the Recording field) to the selected playlist; True if done."""
        if self.selected is None:
            self._error(FormError("Select a playlist first, then add a recording to it."))
            return False
        rec = (session_recording_id or self.recording_id_box.value).strip()
        if not rec:
            self._error(FormError("Type a session recording id in the Recording field first."))
            return False
        short_id = self.selected.short_id
        ok, _ = self._attempt(f"Adding {rec}…", lambda: self.client.playlists.add_recording(short_id, rec))
        if not ok:
            return False
        self.recording_id_box.value = ""
        self.load_recordings()
        self._ok(f"Added recording {rec} to {short_id}.")
        return True

    def remove_recording(self, session_recording_id: str | None = None) -> bool:
        """Remove a recording (default: the one picked under "In playlist") from the selected playlist."""
        if self.selected is None:
            self._error(FormError("Select a playlist first."))
            return False
        rec = session_recording_id or self.recordings_picker.value
        if not rec:
            self._error(FormError("Pick the recording to remove in the 'In playlist' list first."))
            return False
        short_id = self.selected.short_id
        ok, _ = self._attempt(
            f"Removing {rec}…", lambda: self.client.playlists.remove_recording(short_id, rec)
        )
        if not ok:
            return False
        self.load_recordings()
        self._ok(f"Removed recording {rec} from {short_id}.")
        return True
