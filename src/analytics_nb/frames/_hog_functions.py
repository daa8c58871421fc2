"""Hog functions and Hog function templates -> DataFrames (one row each; JSON fields as Python objects)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from analytics_nb.frames._schema import Kind, as_records, build_frame, register_known, user_columns

__all__ = ["hog_function_templates_frame", "hog_functions_frame"]

HOG_FUNCTION_COLUMNS: list[tuple[str, Kind]] = [
    ("id", "str"),
    ("type", "str"),
    ("execution_order", "int"),
    ("name", "str"),
    ("enabled", "bool"),
    ("template_id", "str"),
    ("legacy_plugin", "bool"),
    ("status_state", "int"),
    ("description", "str"),
    ("icon_url", "str"),
    ("created_at", "datetime"),
    ("updated_at", "datetime"),
]
HOG_FUNCTION_TAIL: list[tuple[str, Kind]] = [
    ("hog", "str"),
    ("inputs", "json"),
    ("filters", "json"),
    ("inputs_schema", "json"),
    ("masking", "json"),
    ("mappings", "json"),
]
#: Record fields folded into other columns (``template`` -> ``template_id``, ``status`` -> ``status_state``)
#: or left out (compiled ``bytecode`` / ``transpiled``: derived from ``hog``, large, not for analysis).
_FOLDED = ("template", "status", "bytecode", "transpiled")

TEMPLATE_COLUMNS: list[tuple[str, Kind]] = [
    ("id", "str"),
    ("type", "str"),
    ("name", "str"),
    ("status", "str"),
    ("legacy_plugin", "bool"),
    ("free", "bool"),
    ("code_language", "str"),
    ("description", "str"),
    ("icon_url", "str"),
    ("category", "json"),
    ("inputs_schema", "json"),
    ("filters", "json"),
    ("masking", "json"),
    ("mapping_templates", "json"),
    ("code", "str"),
]

#: Order of the types in a frame: transformations first (they run on every event, in order).
TYPE_ORDER = (
    "transformation",
    "destination",
    "site_destination",
    "internal_destination",
    "source_webhook",
    "site_app",
)

for _cols in (HOG_FUNCTION_COLUMNS, user_columns("created_by"), HOG_FUNCTION_TAIL, TEMPLATE_COLUMNS):
    register_known(_cols)


def _function_row(record: dict[str, Any]) -> dict[str, Any]:
    row = {k: v for k, v in record.items() if k not in _FOLDED}
    nested = record.get("template")
    template_id = nested.get("id") if isinstance(nested, dict) else None
    template_id = template_id or record.get("template_id")
    row["template_id"] = template_id
    row["legacy_plugin"] = bool(template_id and str(template_id).startswith("plugin-"))
    status = record.get("status")
    row["status_state"] = status.get("state") if isinstance(status, dict) else None
    row.pop("deleted", None)  # write-only on the service; a listed function is live
    return row


def _sort_key(item: tuple[int, dict[str, Any]]) -> tuple[int, int, int, int]:
    position, record = item
    kind = record.get("type")
    rank = TYPE_ORDER.index(kind) if kind in TYPE_ORDER else len(TYPE_ORDER)
    order = record.get("execution_order")
    has_order = isinstance(order, int) and not isinstance(order, bool)
    return (rank, 0 if has_order else 1, order if has_order else 0, position)  # type: ignore[return-value]


def hog_functions_frame(records: Any) -> pd.DataFrame:
    """One row per Hog function: transformations first in ``execution_order`` (the order they run), then the
    other types; within a type the given order is kept. ``template_id`` comes from the nested template,
    ``legacy_plugin`` says whether it runs a migrated legacy plugin (template ``plugin-...``),
    ``status_state`` is the health state; ``created_by_*`` is flattened; ``inputs``, ``filters``,
    ``inputs_schema``, ``masking`` and ``mappings`` stay JSON objects (secret inputs arrive masked as
    ``{"secret": true}``).

    Args:
        records: Hog functions (models or dicts) or a page of them.
    """
    rows = [_function_row(r) for r in as_records(records, "hog_functions_frame")]
    ordered = [r for _, r in sorted(enumerate(rows), key=_sort_key)]
    return build_frame(ordered, HOG_FUNCTION_COLUMNS, users=("created_by",), tail=HOG_FUNCTION_TAIL)


def hog_function_templates_frame(records: Any) -> pd.DataFrame:
    """One row per Hog function template; ``legacy_plugin`` marks the migrated legacy plugins (ids
    ``plugin-...``); ``inputs_schema``, ``category`` and the other structures stay JSON objects.

    Args:
        records: Templates (models or dicts) or a page of them.
    """
    rows = []
    for record in as_records(records, "hog_function_templates_frame"):
        row = dict(record)
        row["legacy_plugin"] = str(record.get("id") or "").startswith("plugin-")
        rows.append(row)
    return build_frame(rows, TEMPLATE_COLUMNS)
