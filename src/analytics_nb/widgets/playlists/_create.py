"""``CreateForm`` (a new playlist: name, type, description, filters) and ``RestoreView`` (undo an archive)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets as w

from analytics_nb.widgets._errors import FormError
from analytics_nb.widgets.views import JsonEditor, column, fill, row
from analytics_nb.widgets.views._json_editor import parse_json_object

__all__ = ["CreateForm", "RestoreView"]


class CreateForm:
    """Controls: ``name``, ``type`` ("collection"/"filters"), ``description``, ``filters``, ``create``.

    CSS: ``anb-create-name``, ``anb-create-type``, ``anb-create-description``, ``anb-create-filters``,
    ``anb-create-create``.
    """

    def __init__(self, *, on_create: Callable[[], object]) -> None:
        self.name = w.Text(description="Name", layout=fill("420px"))
        self.type = w.ToggleButtons(options=["collection", "filters"], value="collection", description="Type")
        self.description = w.Text(description="Description", layout=fill("420px"))
        self.filters = JsonEditor(
            "Filters",
            "new playlist's filters",
            css="create-filters",
            height="80px",
            placeholder='{"events": [{"id": "$pageview"}]}',
        )
        self.create = w.Button(description="Create", icon="plus", button_style="success")
        for control, name in (
            (self.name, "name"),
            (self.type, "type"),
            (self.description, "description"),
            (self.create, "create"),
        ):
            control.add_class(f"anb-create-{name}")
        self.create.on_click(lambda _b: on_create())
        self.controls: list[w.Widget] = [self.create]
        self.root = column(
            self.name, self.type, self.description, self.filters.area, self.create, css_class="anb-create"
        )

    def fields(
        self,
        name: str | None = None,
        type: str | None = None,
        *,
        filters: dict[str, Any] | str | None = None,
        description: str | None = None,
    ) -> dict[str, Any]:
        """The create request's fields: the arguments given, the form's values for the rest; validated."""
        name = self.name.value if name is None else name
        kind = self.type.value if type is None else type
        description = self.description.value if description is None else description
        if kind not in ("collection", "filters"):
            raise FormError(f"type must be 'collection' or 'filters', got {kind!r}.")
        if filters is None:
            parsed = self.filters.parse()
        elif isinstance(filters, str):
            parsed = parse_json_object(filters, self.filters.field)
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
        out: dict[str, Any] = {"type": kind}
        if name:
            out["name"] = name
        if description:
            out["description"] = description
        if kind == "filters":
            out["filters"] = parsed
        return out

    def clear(self) -> None:
        """Empty the form after a playlist was created."""
        self.name.value = ""
        self.description.value = ""
        self.filters.text = ""


class RestoreView:
    """Controls: ``short_id`` (the archived playlist to restore) and ``restore``.

    CSS: ``anb-restore-short-id``, ``anb-restore-restore``.
    """

    def __init__(self, *, on_restore: Callable[[], object]) -> None:
        self.short_id = w.Text(
            description="Short id", placeholder="archived playlist short id", layout=fill("340px")
        )
        self.short_id.add_class("anb-restore-short-id")
        self.restore = w.Button(description="Restore", icon="undo")
        self.restore.add_class("anb-restore-restore")
        self.restore.on_click(lambda _b: on_restore())
        self.controls: list[w.Widget] = [self.restore]
        self.root = column(
            w.HTML(value="Undo an archive: the short id of an archived playlist."),
            row(self.short_id, self.restore),
            css_class="anb-restore",
        )
