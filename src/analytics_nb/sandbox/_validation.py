"""Declarative request validation: pydantic models whose field types behave like DRF's serializer fields
(same messages and codes), and :func:`validate` that turns the first failure into the DRF 400 body naming
the field (`attr`, nested fields joined with ``__``).

A resource declares its body as a :class:`RequestModel`; the same model documents the body in the OpenAPI
document (``model_json_schema``), so the schema and the server agree.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any, ClassVar, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError, WithJsonSchema
from pydantic_core import PydanticCustomError

from ._errors import APIError
from ._http import BadJSON, bad_json_error, check_json, require_object

__all__ = [
    "Bool",
    "Char",
    "Choice",
    "JSONObject",
    "JSONValue",
    "RequestModel",
    "StrictBool",
    "Text",
    "validate",
]

_TRUE = {True, "true", "True", "TRUE", "1", "yes", "y", "on", "t"}
_FALSE = {False, "false", "False", "FALSE", "0", "no", "n", "off", "f"}

M = TypeVar("M", bound="RequestModel")


class RequestModel(BaseModel):
    """A request body: unknown fields are ignored (as DRF does); `model_fields_set` tells what was sent.

    `create_schema`: JSON-schema keys the document adds for a create (POST), e.g. ``{"required": ["key"]}``
    (those fields then are not nullable either) or an ``anyOf`` of alternatives; updates need none."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)
    create_schema: ClassVar[dict[str, Any]] = {}

    def sent(self) -> dict[str, Any]:
        """The fields the client sent, by field name (what a partial update applies)."""
        return {name: getattr(self, name) for name in self.model_fields_set}


def _fail(code: str, message: str, **context: Any) -> PydanticCustomError:
    return PydanticCustomError(code, message, context or None)


def _null(allow_null: bool, value: Any) -> bool:
    if value is None:
        if allow_null:
            return True
        raise _fail("null", "This field may not be null.")
    return False


def Char(*, max_length: int | None = None, allow_null: bool = True, allow_blank: bool = True) -> Any:
    """DRF CharField: numbers become text, other types "Not a valid string.", NUL refused, max length."""

    def check(value: Any) -> str | None:
        if _null(allow_null, value):
            return None
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise _fail("invalid_input", "Not a valid string.")
        text = str(value)
        if "\x00" in text:
            raise _fail("null_characters_not_allowed", "Null characters are not allowed.")
        if not allow_blank and not text.strip():
            raise _fail("blank", "This field may not be blank.")
        if max_length is not None and len(text) > max_length:
            raise _fail("max_length", f"Ensure this field has no more than {max_length} characters.")
        return text

    text: dict[str, Any] = {"type": "string"}
    if max_length is not None:
        text["maxLength"] = max_length
    if not allow_blank:
        text["pattern"] = r"\S"  # not blank: at least one non-space character
    # DRF's CharField takes numbers too (and writes them as text), so the document says so
    schema: dict[str, Any] = {"anyOf": [text, {"type": "number"}]}
    if allow_null:
        schema["nullable"] = True
    return Annotated[Any, BeforeValidator(check), WithJsonSchema(schema)]


def Bool(*, allow_null: bool = False) -> Any:
    """DRF BooleanField: true/false and the usual text/number spellings."""

    def check(value: Any) -> bool | None:
        if _null(allow_null, value):
            return None
        try:
            if value in _TRUE:
                return True
            if value in _FALSE:
                return False
        except TypeError:  # unhashable (list, dict)
            pass
        raise _fail("invalid_input", "Must be a valid boolean.")

    # DRF's BooleanField also takes its text and number spellings, so the document lists them
    spellings = sorted({v for v in (*_TRUE, *_FALSE) if not isinstance(v, bool)}, key=str)
    schema: dict[str, Any] = {"anyOf": [{"type": "boolean"}, {"enum": [0, 1, *spellings]}]}
    if allow_null:
        schema["nullable"] = True
    return Annotated[Any, BeforeValidator(check), WithJsonSchema(schema)]


def StrictBool(*, null_as: bool | None = None) -> Any:
    """A JSON boolean only (the feature flag serializer's fields); `null_as` maps null to a value."""

    def check(value: Any) -> bool:
        if value is None and null_as is not None:
            return null_as
        if not isinstance(value, bool):
            raise _fail("invalid", "Must be a valid boolean.")
        return value

    schema: dict[str, Any] = {"type": "boolean"}
    if null_as is not None:
        schema["nullable"] = True
    return Annotated[Any, BeforeValidator(check), WithJsonSchema(schema)]


def Choice(*choices: str, allow_null: bool = False) -> Any:
    """DRF ChoiceField: one of `choices`, else `"x" is not a valid choice.`."""

    def check(value: Any) -> str | None:
        if _null(allow_null, value):
            return None
        if not isinstance(value, str | int) or isinstance(value, bool) or str(value) not in choices:
            raise _fail("invalid_choice", '"{value}" is not a valid choice.', value=str(value))
        return str(value)

    schema: dict[str, Any] = {"type": "string", "enum": list(choices)}
    if allow_null:  # OpenAPI 3.0: a nullable enum lists null among its values
        schema["nullable"] = True
        schema["enum"] = [*choices, None]
    return Annotated[Any, BeforeValidator(check), WithJsonSchema(schema)]


def JSONValue(*, allow_null: bool = True, schema: dict[str, Any] | None = None) -> Any:
    """DRF JSONField: any JSON value (finite numbers, valid Unicode, bounded nesting)."""

    def check(value: Any) -> Any:
        if _null(allow_null, value):
            return None
        return value

    return Annotated[Any, BeforeValidator(check), WithJsonSchema(schema or {"nullable": allow_null})]


def JSONObject(*, allow_null: bool = True, code: str = "invalid_input") -> Any:
    """A JSON field that must be an object (dict), or null when allowed."""

    def check(value: Any) -> dict[str, Any] | None:
        if _null(allow_null, value):
            return None
        if not isinstance(value, dict):
            raise _fail(code, f'Expected a dictionary of items but got type "{type(value).__name__}".')
        return value

    schema: dict[str, Any] = {"type": "object"}
    if allow_null:
        schema["nullable"] = True
    return Annotated[Any, BeforeValidator(check), WithJsonSchema(schema)]


def Text(*, allow_null: bool = True, min_length: int | None = None) -> Any:
    """A JSON string only (no number coercion), "Not a valid string." (code `invalid`) otherwise."""

    def check(value: Any) -> str | None:
        if value is None and allow_null:
            return None
        if not isinstance(value, str):
            raise _fail("invalid", "Not a valid string.")
        return value

    schema: dict[str, Any] = {"type": "string"}
    if min_length is not None:  # documented; the handler refuses shorter text with its own message
        schema["minLength"] = min_length
    if allow_null:
        schema["nullable"] = True
    return Annotated[Any, BeforeValidator(check), WithJsonSchema(schema)]


def Matching(pattern: str, message: str, code: str, *, required_text: bool = True) -> Any:
    """A non-null string matching `pattern` (e.g. a flag key), with DRF's blank/invalid messages."""
    regex = re.compile(pattern)

    def check(value: Any) -> str:
        if value is None or (isinstance(value, str) and not value and required_text):
            raise _fail("blank", "This field may not be blank.")
        if not isinstance(value, str):
            raise _fail("invalid", "Not a valid string.")
        if not regex.match(value):
            raise _fail(code, message)
        return value

    schema: dict[str, Any] = {"type": "string", "pattern": pattern}
    if required_text:
        schema["minLength"] = 1
    return Annotated[Any, BeforeValidator(check), WithJsonSchema(schema)]


_PYDANTIC_CODES = {"missing": "required", "extra_forbidden": "invalid_input"}
_PYDANTIC_MESSAGES: dict[str, Callable[[dict[str, Any]], str]] = {
    "missing": lambda e: "This field is required.",
    "extra_forbidden": lambda e: f"Unknown field {e['loc'][-1]!r}.",
}


def validate(model: type[M], data: Any) -> M:
    """`data` (a parsed JSON body) validated against `model`, or the DRF 400 for its first problem."""
    obj = require_object(data)
    try:
        check_json(obj)  # done by the body parser already; repeated so direct callers get the same guarantee
    except BadJSON as exc:
        raise bad_json_error(exc) from None
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        kind = str(first["type"])
        attr = "__".join(str(p) for p in first["loc"]) or "non_field_errors"
        message = _PYDANTIC_MESSAGES[kind](dict(first)) if kind in _PYDANTIC_MESSAGES else str(first["msg"])
        raise APIError(400, "validation_error", _PYDANTIC_CODES.get(kind, kind), message, attr) from None
