"""``TransformationsBrowser``: list the organization's pipeline transformations and read or edit their source.

Every button calls a public method (``refresh``, ``select``, ``open_file``, ``save_file``,
``check_for_updates``); ``.frame`` is the list as a DataFrame and ``.sources`` the selected one's files.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as w
import pandas as pd

from analytics_nb.widgets._base import Panel, frame_html, require_sync_client
from analytics_nb.widgets._errors import FormError

__all__ = ["TransformationsBrowser"]

_COLUMNS = ["id", "name", "plugin_type", "tag", "latest_tag", "is_global", "description"]


class TransformationsBrowser(Panel):
    """A panel over ``client.transformations``: the list, a picked transformation's source files, updates.

    ``.frame`` is every transformation as a DataFrame, ``.selected`` the picked ``Transformation`` (or None),
    ``.sources`` its files as ``{filename: content}`` and ``.sources_frame`` the same as a DataFrame.
    """

    title = "Pipeline transformations"

    def __init__(self, client: Any, *, load: bool = True) -> None:
        require_sync_client(client, "TransformationsBrowser")
        super().__init__()
        self.client = client
        self.transformations: list[Any] = []
        self.selected: Any = None
        self.sources: dict[str, str | None] = {}
        self.last_draft: tuple[Any, Any, str] | None = None  # (id, filename, text) left unsaved by a switch
        self._quiet_pick = False
        self._build()
        if load:
            self.refresh()

    def _build(self) -> None:
        self.table = w.HTML(value="")
        self.table.add_class("anb-transformations")
        self.refresh_button = w.Button(description="Refresh", icon="refresh")
        self.refresh_button.on_click(lambda _b: self.refresh())
        self.picker = w.Dropdown(options=[], description="Plugin", layout=w.Layout(width="420px"))
        self.picker.observe(self._picked, names="value")
        self.updates_button = w.Button(description="Check for updates", icon="search")
        self.updates_button.on_click(lambda _b: self.check_for_updates())
        self.file_picker = w.Dropdown(options=[], description="File", layout=w.Layout(width="420px"))
        self.file_picker.observe(lambda c: self.open_file(c["new"]) if c["new"] else None, names="value")
        self.editor = w.Textarea(layout=w.Layout(width="100%", height="260px"))
        self.editor.add_class("anb-source")
        self.save_button = w.Button(description="Save file", icon="save", button_style="primary")
        self.save_button.on_click(lambda _b: self.save_file())
        self._register(
            self.refresh_button, self.picker, self.updates_button, self.file_picker, self.save_button
        )
        self.root.children = [
            w.HTML(value=f"<h3 style='margin:4px 0'>{self.title}</h3>"),
            w.HBox([self.picker, self.refresh_button, self.updates_button]),
            self.table,
            self.status,
            w.HBox([self.file_picker, self.save_button]),
            self.editor,
            self.messages,
        ]

    # ---- list -----------------------------------------------------------------------------------------
    def refresh(self) -> bool:
        """Reload the list of transformations; True on success."""
        ok, found = self._attempt(
            "Loading transformations…", lambda: list(self.client.transformations.list())
        )
        if not ok or found is None:
            return False
        self.transformations = found
        self._render()
        self._ok(f"{len(found)} transformation(s).")
        return True

    @property
    def frame(self) -> pd.DataFrame:
        """The listed transformations as a DataFrame (``analytics_nb.frames.transformations_frame``)."""
        from analytics_nb.frames import transformations_frame

        return transformations_frame(self.transformations)

    @property
    def sources_frame(self) -> pd.DataFrame:
        """The selected transformation's files as a DataFrame (transformation_id, filename, content)."""
        from analytics_nb.frames import transformation_sources_frame

        if self.selected is None:
            return transformation_sources_frame({})
        return transformation_sources_frame({self.selected.id: self.sources})

    def _render(self) -> None:
        key = self.selected.id if self.selected is not None else None
        self.table.value = frame_html(self.frame, _COLUMNS, highlight=key, key="id", max_rows=100)
        options = [(f"{t.name or '(unnamed)'} · {t.id}", t.id) for t in self.transformations]
        with self._picking():
            self.picker.options = options
            self.picker.value = key if key in [v for _l, v in options] else None

    # ---- selection and source --------------------------------------------------------------------------
    def _picking(self) -> Any:
        panel = self

        class _Quiet:
            def __enter__(self) -> None:
                panel._quiet_pick = True

            def __exit__(self, *exc: object) -> None:
                panel._quiet_pick = False

        return _Quiet()

    def _picked(self, change: dict[str, Any]) -> None:
        if not self._quiet_pick and change["new"] is not None:
            self.select(change["new"])

    def select(self, id: int) -> Any:
        """Select transformation ``id`` and load its source files; returns it, or None on error."""
        match = [t for t in self.transformations if t.id == id]
        if not match:
            self._error(FormError(f"No listed transformation has id {id!r}; refresh the list."))
            return None
        if self.is_dirty:
            self.message(f"Unsaved edits to {self.file_picker.value} were left; they are in .last_draft.")
            self.last_draft = (self.selected.id, self.file_picker.value, self.editor.value)
        self.selected = match[0]
        self._render()
        ok, files = self._attempt(
            f"Loading the source of {id}…", lambda: self.client.transformations.source(id)
        )
        self.sources = dict(files or {}) if ok else {}
        names = sorted(self.sources)
        with self._picking():
            self.file_picker.options = names
            self.file_picker.value = None
        self.editor.value = ""
        if names:
            self.file_picker.value = names[0]
        if ok:
            self._ok(f"{self.selected.name or id}: {len(names)} source file(s).")
        return self.selected if ok else None

    def open_file(self, filename: str) -> None:
        """Show source file ``filename`` of the selected transformation in the editor."""
        if filename not in self.sources:
            raise FormError(
                f"No source file {filename!r}; the files are {', '.join(self.sources) or '(none)'}."
            )
        if self.file_picker.value != filename:
            self.file_picker.value = filename  # the observer comes back here
            return
        self.editor.value = self.sources[filename] or ""

    @property
    def is_dirty(self) -> bool:
        """True when the editor holds edits to the open file that are not saved."""
        name = self.file_picker.value
        return bool(name) and self.editor.value != (self.sources.get(name) or "")

    def save_file(self) -> bool:
        """Send the open file's edited content (``update_source``); True on success, edits kept on error."""
        name = self.file_picker.value
        if self.selected is None or not name:
            self._error(FormError("Select a transformation and a file first."))
            return False
        if not self.is_dirty:
            self._ok("Nothing to save: the file is unchanged.")
            return True
        ident, content = self.selected.id, self.editor.value
        ok, files = self._attempt(
            f"Saving {name}…", lambda: self.client.transformations.update_source(ident, {name: content})
        )
        if not ok:
            return False
        self.sources.update(dict(files or {}))
        self.sources[name] = content
        self._ok(f"Saved {name}.")
        return True

    def check_for_updates(self) -> Any:
        """Ask the service for the selected transformation's latest version; shows tag and latest_tag."""
        if self.selected is None:
            self._error(FormError("Select a transformation first."))
            return None
        ident = self.selected.id
        ok, updated = self._attempt(
            "Checking for updates…", lambda: self.client.transformations.check_for_updates(ident)
        )
        if not ok or updated is None:
            return None
        self.transformations = [updated if t.id == ident else t for t in self.transformations]
        self.selected = updated
        self._render()
        tag, latest = updated.tag or "?", updated.latest_tag or "?"
        news = "an update is available" if latest not in ("?", tag) else "up to date"
        self._ok(f"{updated.name or ident}: installed {tag}, latest {latest} ({news}).")
        return updated
