"""``JsonEditor``: a text area holding a JSON object, parsed with an error that names the line and column."""

from __future__ import annotations

import json
from typing import Any

import ipywidgets as w

from analytics_nb.widgets._errors import FormError
from analytics_nb.widgets.views._layout import fill

__all__ = ["JsonEditor", "json_text", "parse_json_object"]


def json_text(value: Any) -> str:
    """The editor's text for a value (``None`` shows as ``{}``): indented, keys sorted."""
    return json.dumps(value if value is not None else {}, indent=2, sort_keys=True, default=str)


def parse_json_object(text: str, field: str) -> dict[str, Any]:
    """Parse ``text`` into a dict (empty text is ``{}``), or raise FormError naming ``field`` and the fix."""
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


class JsonEditor:
    """The text area (``.area``, CSS ``anb-<css>``); ``.text`` is its content, ``parse()`` the dict."""

    def __init__(self, description: str, field: str, *, css: str, height: str, placeholder: str) -> None:
        self.field = field
        self.area = w.Textarea(description=description, placeholder=placeholder, layout=fill(height=height))
        self.area.add_class(f"anb-{css}")

    @property
    def text(self) -> str:
        """The text as typed."""
        return str(self.area.value)

    @text.setter
    def text(self, value: str) -> None:
        self.area.value = value

    def set(self, value: dict[str, Any] | str | None) -> None:
        """Show a dict as indented JSON, or a string as it is."""
        self.area.value = value if isinstance(value, str) else json_text(value)

    def parse(self) -> dict[str, Any]:
        """The typed object (FormError naming the line and column when the text is not a JSON object)."""
        return parse_json_object(self.text, self.field)
