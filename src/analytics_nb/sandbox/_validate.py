"""DRF-like field validation for request bodies: the real messages, codes and `attr`."""

from __future__ import annotations

import json
from typing import Any

from ._errors import APIError

_TRUE = {True, "true", "True", "TRUE", "1", "yes", "y", "on", "t"}
_FALSE = {False, "false", "False", "FALSE", "0", "no", "n", "off", "f"}


def _err(code: str, detail: str, attr: str) -> APIError:
    return APIError(400, "validation_error", "invalid_input" if code == "invalid" else code, detail, attr)


def char(
    data: dict[str, Any],
    name: str,
    *,
    max_length: int | None = None,
    allow_null: bool = True,
    allow_blank: bool = True,
) -> str | None:
    """A CharField value: numbers are turned into text, other types refused ("Not a valid string.")."""
    value = data[name]
    if value is None:
        if allow_null:
            return None
        raise _err("null", "This field may not be null.", name)
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise _err("invalid", "Not a valid string.", name)
    text = str(value)
    if "\x00" in text:
        raise _err("null_characters_not_allowed", "Null characters are not allowed.", name)
    if not allow_blank and not text.strip():
        raise _err("blank", "This field may not be blank.", name)
    if max_length is not None and len(text) > max_length:
        raise _err("max_length", f"Ensure this field has no more than {max_length} characters.", name)
    return text


def boolean(data: dict[str, Any], name: str, *, allow_null: bool = False) -> bool | None:
    """A BooleanField value: true/false and the usual text/number spellings; anything else refused."""
    value = data[name]
    if value is None:
        if allow_null:
            return None
        raise _err("null", "This field may not be null.", name)
    try:
        if value in _TRUE:
            return True
        if value in _FALSE:
            return False
    except TypeError:  # unhashable (list, dict)
        pass
    raise _err("invalid", "Must be a valid boolean.", name)


def json_field(data: dict[str, Any], name: str, *, allow_null: bool = True) -> Any:
    """A JSONField value: any JSON value (must be serialisable)."""
    value = data[name]
    if value is None and not allow_null:
        raise _err("null", "This field may not be null.", name)
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        raise _err("invalid", "Value must be valid JSON.", name) from None
    return value


def choice(
    data: dict[str, Any], name: str, choices: tuple[str, ...], *, allow_null: bool = False
) -> str | None:
    """A ChoiceField value: one of `choices`, else `"x" is not a valid choice.`."""
    value = data[name]
    if value is None:
        if allow_null:
            return None
        raise _err("null", "This field may not be null.", name)
    if not isinstance(value, str | int) or isinstance(value, bool) or str(value) not in choices:
        raise _err("invalid_choice", f'"{value}" is not a valid choice.', name)
    return str(value)


def object_field(data: dict[str, Any], name: str, *, allow_null: bool = True) -> dict[str, Any] | None:
    """A JSON field that must be an object (dict) or null."""
    value = json_field(data, name, allow_null=allow_null)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise _err("invalid", f'Expected a dictionary of items but got type "{type(value).__name__}".', name)
    return value
