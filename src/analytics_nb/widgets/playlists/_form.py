"""``PlaylistForm``: the edit form of the selected playlist (name, description, pinned, filters as JSON).

The form knows the playlist it shows (``.playlist``) and its stored values, so it can say what changed
(``changes()``), whether it is dirty, and follow a fresh copy from the service without overwriting what the
user typed (``follow``).
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

import ipywidgets as w

from analytics_nb.models import Playlist
from analytics_nb.widgets._errors import FormError
from analytics_nb.widgets.playlists._table import playlist_label
from analytics_nb.widgets.views import JsonEditor, column, fill, row
from analytics_nb.widgets.views._json_editor import json_text

__all__ = ["FIELDS", "PlaylistForm", "stored_values"]

FIELDS = ("name", "description", "pinned", "filters")
_EMPTY: dict[str, Any] = {"name": "", "description": "", "pinned": False, "filters": ""}


def stored_values(playlist: Playlist) -> dict[str, Any]:
    """The form values that show ``playlist`` as stored."""
    return {
        "name": playlist.name or "",
        "description": playlist.description or "",
        "pinned": bool(playlist.pinned),
        "filters": json_text(playlist.filters),
    }


class PlaylistForm:
    """Controls: ``name``, ``description``, ``pinned``, ``filters`` (a JsonEditor), ``save``, ``revert``,
    ``archive``; ``title`` and ``dirty`` are labels.

    CSS: ``anb-form-name``, ``anb-form-description``, ``anb-form-pinned``, ``anb-form-filters``,
    ``anb-form-save``, ``anb-form-revert``, ``anb-form-archive``, ``anb-form-title``, ``anb-form-dirty``.
    """

    def __init__(
        self,
        *,
        on_save: Callable[[], object],
        on_revert: Callable[[], object],
        on_archive: Callable[[], object],
    ) -> None:
        self.playlist: Playlist | None = None
        self.title = w.HTML(value="<b>Select a playlist to edit it</b>")
        self.name = w.Text(description="Name", layout=fill())
        self.description = w.Textarea(description="Description", layout=fill(height="60px"))
        self.pinned = w.Checkbox(description="Pinned", indent=True)
        self.filters = JsonEditor(
            "Filters", "filters", css="form-filters", height="120px", placeholder='{"events": []}'
        )
        self.save = w.Button(description="Save", button_style="primary", icon="save")
        self.revert = w.Button(description="Revert", icon="undo", tooltip="Discard unsaved edits")
        self.archive = w.Button(description="Archive", button_style="warning", icon="archive")
        self.dirty = w.HTML(value="")
        for control, name in (
            (self.title, "title"),
            (self.name, "name"),
            (self.description, "description"),
            (self.pinned, "pinned"),
            (self.save, "save"),
            (self.revert, "revert"),
            (self.archive, "archive"),
            (self.dirty, "dirty"),
        ):
            control.add_class(f"anb-form-{name}")
        self.save.on_click(lambda _b: on_save())
        self.revert.on_click(lambda _b: on_revert())
        self.archive.on_click(lambda _b: on_archive())
        self._quiet = False
        for box in self._boxes().values():
            box.observe(lambda _c: None if self._quiet else self._update_dirty(), names="value")
        self.controls: list[w.Widget] = [self.save, self.revert, self.archive]
        self.root = column(
            self.title,
            self.name,
            self.description,
            self.pinned,
            self.filters.area,
            row(self.save, self.revert, self.archive, self.dirty),
            css_class="anb-form",
        )
        self.load(None)

    def _boxes(self) -> dict[str, w.ValueWidget]:
        return {
            "name": self.name,
            "description": self.description,
            "pinned": self.pinned,
            "filters": self.filters.area,
        }

    # ---- state ----------------------------------------------------------------------------------
    def values(self) -> dict[str, Any]:
        """What the form holds, as typed (filters as text)."""
        return {field: box.value for field, box in self._boxes().items()}

    def fill(self, values: dict[str, Any]) -> None:
        """Put ``values`` (a subset of the fields) in the form."""
        self._quiet = True
        try:
            for field, box in self._boxes().items():
                if field in values:
                    box.value = values[field]
        finally:
            self._quiet = False
        self._update_dirty()

    @property
    def editable(self) -> bool:
        """A playlist is shown and it is not a built-in (synthetic) one."""
        return self.playlist is not None and not self.playlist.is_synthetic

    @property
    def is_dirty(self) -> bool:
        """True when the form holds edits that are not saved."""
        return self.playlist is not None and self.values() != stored_values(self.playlist)

    def _update_dirty(self) -> None:
        self.dirty.value = "<i style='color:#8a6d00'>unsaved edits</i>" if self.is_dirty else ""

    # ---- actions --------------------------------------------------------------------------------
    def load(self, playlist: Playlist | None) -> None:
        """Show ``playlist`` as stored (None: an empty, disabled form)."""
        self.playlist = playlist
        self.fill(stored_values(playlist) if playlist is not None else _EMPTY)
        editable = self.editable
        for box in self._boxes().values():
            box.disabled = not editable
        for button in self.controls:
            button.disabled = not editable
        if playlist is None:
            self.title.value = "<b>Select a playlist to edit it</b>"
        else:
            kind = playlist.type or "unknown type"
            note = " (a built-in playlist: read only)" if not editable else ""
            self.title.value = (
                f"<b>{html.escape(playlist_label(playlist))}</b> <i>{html.escape(kind)}</i>{note}"
            )
        self._update_dirty()

    def follow(self, fresh: Playlist) -> None:
        """Take the service's fresh copy: fields the user did not edit follow it, edited fields keep the
        user's text (so a save never reverts someone else's change unseen)."""
        before = stored_values(self.playlist) if self.playlist is not None else _EMPTY
        typed = self.values()
        after = stored_values(fresh)
        self.playlist = fresh
        self.fill({field: after[field] for field in FIELDS if typed[field] == before[field]})

    def edit(self, **fields: Any) -> None:
        """Fill fields from code: ``name``, ``description``, ``pinned``, ``filters`` (dict or JSON text)."""
        if self.playlist is None:
            raise FormError("Select a playlist first (editor.select(short_id)).")
        unknown = set(fields) - set(FIELDS)
        if unknown:
            raise FormError(
                f"Unknown form field(s) {sorted(unknown)}; use name, description, pinned or filters."
            )
        if "name" in fields:
            self.name.value = fields["name"] or ""
        if "description" in fields:
            self.description.value = fields["description"] or ""
        if "pinned" in fields:
            self.pinned.value = bool(fields["pinned"])
        if "filters" in fields:
            self.filters.set(fields["filters"])

    def changes(self) -> dict[str, Any]:
        """The fields the form changed against the stored playlist, validated (FormError on bad JSON)."""
        stored = self.playlist
        if stored is None:
            raise FormError("Select a playlist first: nothing to save.")
        out: dict[str, Any] = {}
        if self.name.value != (stored.name or ""):
            out["name"] = self.name.value
        if self.description.value != (stored.description or ""):
            out["description"] = self.description.value
        if self.pinned.value != bool(stored.pinned):
            out["pinned"] = self.pinned.value
        filters = self.filters.parse()
        if filters != (stored.filters or {}):
            if stored.type == "filters" and not filters:
                raise FormError(
                    "A saved-filters playlist needs non-empty filters; put the filters back or archive the "
                    "playlist instead. Nothing was sent."
                )
            out["filters"] = filters
        return out
