"""`Definitions`, the one shape of flag definitions, and `read_definitions`, the one reader into it.

Every part that takes definitions (the engine's `evaluate_flag(s)`, `evaluate_frame`, `FrameEvaluator` and
`compile_flags`; the simulation's `simulate` and `WhatIf`; capture's ``flags=``; the sandbox's flag set) reads
them here, so every shape an analyst holds gives the same flags everywhere:

* the local-evaluation payload as the model (`models.LocalEvaluationResponse`) or as its JSON (a dict, text
  or bytes), with its cohorts, group type mapping and ``property_matching_version``;
* a flags DataFrame as ``client.feature_flags.frame()`` builds it (``key`` and ``filters`` columns; the
  other engine fields when present), or the same frame from ``frames.read_csv`` or another table family;
* a list of flag dicts (the wire shape) or `models.FeatureFlag` models, one flag, or a ``{"results": [...]}``
  list page;
* a path to a JSON file holding any of the above (the one read this part does, at the edge, before the
  engine runs);
* an existing `Definitions`.

A shape the reader cannot use is a `DefinitionsError` naming the shape and the fix: nothing is dropped or
guessed. A flag whose definition is bad inside (an unknown operator, a rollout that is not a number) is read
as it is; the engine isolates it to its own flag (reason "error") unless ``strict=True``.
"""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from analytics_nb.models import FeatureFlag, LocalEvaluationResponse
from analytics_nb.wire.cells import is_missing

__all__ = ["Definitions", "DefinitionsError", "read_definitions"]

#: The columns of a flags frame (`frames.feature_flags_frame`) that are the flag's own fields. The frame's
#: other columns (`rollout_summary`, `rollout_percentage`, `variant_keys`, `payloads`, ...) are derived from
#: ``filters`` and are not read back: ``filters`` alone is the flag's targeting.
FRAME_FIELDS = (
    "id",
    "key",
    "name",
    "active",
    "deleted",
    "filters",
    "ensure_experience_continuity",
    "version",
    "bucketing_identifier",
    "evaluation_runtime",
    "team_id",
)

KEY_PATTERN = re.compile(r"[a-zA-Z0-9_-]+")
"""PostHog's flag key pattern: the flags API refuses any other key ("Only letters, numbers, hyphens (-) &
underscores (_) are allowed.": `FeatureFlagSerializer.validate_key` in posthog/api/feature_flag.py,
``re.match(r"^[a-zA-Z0-9_-]+$", value)``). Matched whole here (fullmatch): PostHog's ``$`` also lets one
trailing newline through, which no flag the service created carries and which would end a SQL comment."""

SHAPES = (
    "client.feature_flags.local_evaluation() (or its JSON: dict, text, bytes, a path to a .json file), "
    "client.feature_flags.frame(), a list of flag dicts or FeatureFlag models, or one flag"
)


class DefinitionsError(TypeError, ValueError):
    """Flag definitions in a shape the reader cannot use; the message names the shape and the fix.

    A `TypeError` (the container is the wrong kind) and a `ValueError` (its content is wrong), so code that
    caught either from the former readers still does.
    """

    def __init__(self, message: str, *, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


@dataclass
class Definitions:
    """Flag definitions as wire-shape dicts (``flags``), plus ``cohorts`` by id and ``group_type_mapping``
    (group type index as text -> group type name), as the local-evaluation payload carries them.

    Build one with `read_definitions` (or `Definitions.read`) from any shape; every function that takes
    definitions also takes a `Definitions`.
    """

    flags: list[dict[str, Any]]
    cohorts: dict[str, Any] = field(default_factory=dict)
    group_type_mapping: dict[str, str] = field(default_factory=dict)
    #: how they came in, so that edits go back in the same shape (`export`): "response" | "models" |
    #: "dicts" | "local_evaluation_dict"
    kind: str = "dicts"
    #: The definitions payload's `property_matching_version` (None when it had none: the engine uses 1).
    property_matching_version: int | None = None

    @classmethod
    def read(
        cls,
        source: Any,
        *,
        cohorts: Mapping[str, Any] | None = None,
        group_type_mapping: Mapping[str, Any] | None = None,
    ) -> Definitions:
        """`read_definitions`: read any shape of flag definitions."""
        return read_definitions(source, cohorts=cohorts, group_type_mapping=group_type_mapping)

    @property
    def keys(self) -> list[str]:
        """Flag keys in definition order."""
        return [str(f["key"]) for f in self.flags]

    def by_key(self) -> dict[str, dict[str, Any]]:
        """Flag dicts by key."""
        return {str(f["key"]): f for f in self.flags}

    def variants(self) -> dict[str, list[str]]:
        """Variant keys per multivariate flag."""
        out: dict[str, list[str]] = {}
        for f in self.flags:
            mv = _filters(f).get("multivariate") or {}
            keys = [str(v.get("key")) for v in (mv.get("variants") or []) if isinstance(v, Mapping)]
            if keys:
                out[str(f["key"])] = keys
        return out

    def payload_texts(self) -> dict[str, list[str]]:
        """Per flag, its payloads as the text the engine outputs (JSON text as given; other JSON encoded), in
        definition order: the categories of a ``<key>:payload`` column."""
        out: dict[str, list[str]] = {}
        for f in self.flags:
            payloads = _filters(f).get("payloads") or {}
            if isinstance(payloads, Mapping):
                given = [p for p in payloads.values() if p is not None]
                texts = [p if isinstance(p, str) else json.dumps(p) for p in given]
                out[str(f["key"])] = list(dict.fromkeys(texts))
        return out

    def copy(self) -> Definitions:
        """A deep copy (edits never touch the caller's definitions)."""
        return Definitions(
            copy.deepcopy(self.flags),
            copy.deepcopy(self.cohorts),
            dict(self.group_type_mapping),
            self.kind,
            self.property_matching_version,
        )

    def payload(self) -> dict[str, Any]:
        """The local-evaluation payload (`/flags/definitions` JSON shape) of these definitions."""
        version = (
            {}
            if self.property_matching_version is None
            else {"property_matching_version": self.property_matching_version}
        )
        return {
            "flags": self.flags,
            "group_type_mapping": self.group_type_mapping,
            "cohorts": self.cohorts,
            **version,
        }

    def export(self) -> Any:
        """Back to the kind the caller gave: a LocalEvaluationResponse, FeatureFlag models, or dicts."""
        if self.kind == "response":
            return LocalEvaluationResponse.model_validate(self.payload())
        if self.kind == "models":
            return [FeatureFlag.model_validate(f) for f in self.flags]
        if self.kind == "local_evaluation_dict":
            return self.payload()
        return self.flags

    def __repr__(self) -> str:
        extra = []
        if self.cohorts:
            extra.append(f"cohorts={sorted(self.cohorts)!r}")
        if self.group_type_mapping:
            extra.append(f"group_type_mapping={self.group_type_mapping!r}")
        return f"Definitions({self.keys!r}{''.join(', ' + e for e in extra)})"


def _filters(flag: Mapping[str, Any]) -> Mapping[str, Any]:
    filters = flag.get("filters")
    return filters if isinstance(filters, Mapping) else {}


# ------------------------------------------------------------------------------------------ the reader


def read_definitions(
    source: Any,
    *,
    cohorts: Mapping[str, Any] | None = None,
    group_type_mapping: Mapping[str, Any] | None = None,
) -> Definitions:
    """Read flag definitions in any shape an analyst holds into one `Definitions` (see the module doc for
    the shapes). ``cohorts`` / ``group_type_mapping``, when given, replace the source's (a flags frame or a
    list of flags carries neither). An existing `Definitions` is returned as it is (not copied) unless one of
    them is given.

    Raises `DefinitionsError` naming the shape and the fix for anything else (a flag-key list, a frame
    without ``key`` / ``filters``, text that is neither JSON nor a file path, a flag without a key).

    Args:
        source: The definitions in any shape listed in the module doc.
        cohorts: ``{cohort id: cohort filters}`` replacing the source's. None: the source's.
        group_type_mapping: ``{group type index: name}`` replacing the source's. None: the source's.

    Returns:
        The `Definitions`.

    Raises:
        DefinitionsError: The shape is not one of them.
    """
    defs = _read(source)
    if cohorts is None and group_type_mapping is None:
        return defs
    return Definitions(
        defs.flags,
        dict(cohorts) if cohorts is not None else defs.cohorts,
        _mapping(group_type_mapping) if group_type_mapping is not None else defs.group_type_mapping,
        defs.kind,
        defs.property_matching_version,
    )


def _read(source: Any) -> Definitions:
    if isinstance(source, Definitions):
        return source
    if type(source) is dict:  # the common shapes first: one flag, a payload, a list of flags
        return _mapping_source(source)
    if type(source) is list:
        return Definitions([_flag(item, f"item {i}") for i, item in enumerate(source)], kind=_kind(source))
    if isinstance(source, LocalEvaluationResponse):
        return _payload(source.model_dump(by_alias=True, mode="json", exclude_unset=True), "response")
    if isinstance(source, FeatureFlag):
        return Definitions([_flag(source, "the flag")], kind="models")
    if isinstance(source, (bytes, bytearray, memoryview)):
        return _read(_json(bytes(source).decode("utf-8", "replace"), "the bytes"))
    if isinstance(source, str):
        return _read(_text(source))
    if isinstance(source, os.PathLike):
        return _read(_json(_file(Path(source)), f"the file {os.fspath(source)!r}"))
    if isinstance(source, pd.DataFrame):
        return _frame(source)
    if _is_table(source):
        from analytics_nb.tables import to_pandas

        return _frame(to_pandas(source)[0])
    dump = getattr(source, "model_dump", None)
    if callable(dump) and not isinstance(source, type):  # another model in the wire shape
        return _read(dump(by_alias=True, mode="json"))
    if isinstance(source, Mapping):
        return _mapping_source(source)
    if isinstance(source, Iterable):
        items = list(source)
        return Definitions([_flag(item, f"item {i}") for i, item in enumerate(items)], kind=_kind(items))
    raise DefinitionsError(f"definitions: cannot read a {type(source).__name__}; pass {SHAPES}.")


def _kind(items: list[Any]) -> str:
    return "models" if items and all(isinstance(f, FeatureFlag) for f in items) else "dicts"


def _mapping_source(source: Mapping[str, Any]) -> Definitions:
    if "flags" in source and "key" not in source:
        return _payload(source, "local_evaluation_dict")
    if "results" in source and isinstance(source["results"], list):  # a list page of the flags API
        return Definitions([_flag(f, f"results[{i}]") for i, f in enumerate(source["results"])])
    if "key" in source:
        return Definitions([_flag(source, "the flag")])
    raise DefinitionsError(
        "definitions: this dict is neither a local-evaluation payload ({'flags': [...], 'cohorts': ..., "
        "'group_type_mapping': ...}) nor one flag definition with a 'key'; it has keys "
        f"{sorted(map(str, source))[:8]!r}."
    )


def _payload(source: Mapping[str, Any], kind: str) -> Definitions:
    flags = source.get("flags")
    if not isinstance(flags, (list, tuple)):
        raise DefinitionsError(
            f"definitions: the payload's 'flags' is a {type(flags).__name__}; it must be the list of flag "
            "definitions (as /flags/definitions and client.feature_flags.local_evaluation() give)."
        )
    cohorts = source.get("cohorts")
    if cohorts is not None and not isinstance(cohorts, Mapping):
        raise DefinitionsError(
            f"definitions: the payload's 'cohorts' is a {type(cohorts).__name__}; it must map cohort ids "
            "to cohort definitions."
        )
    version = source.get("property_matching_version")
    return Definitions(
        [_flag(f, f"flags[{i}]") for i, f in enumerate(flags)],
        dict(cohorts or {}),
        _mapping(source.get("group_type_mapping")),
        kind,
        version,
    )


def _mapping(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise DefinitionsError(
            f"definitions: group_type_mapping is a {type(value).__name__}; it must map the group type "
            'index (as text) to its name, e.g. {"0": "company"}.'
        )
    return {str(k): str(v) for k, v in value.items()}


def _flag(item: Any, where: str) -> dict[str, Any]:
    """One flag definition as a wire-shape dict (a shallow copy; ``filters`` given as JSON text is parsed)."""
    if isinstance(item, dict):
        data = dict(item)
        key, filters = data.get("key"), data.get("filters")
        if type(key) is str and type(filters) is dict and KEY_PATTERN.fullmatch(key):  # the common case
            return data
    else:
        data = _flag_data(item, where)
    key = _flag_key(data.get("key"), where)
    filters = data.get("filters")
    if isinstance(filters, str):
        try:
            data["filters"] = json.loads(filters)
        except ValueError as exc:
            raise DefinitionsError(
                f"definitions: flag {key!r} has 'filters' text that is not JSON ({exc}).", key=key
            ) from None
    elif filters is None or (not isinstance(filters, (Mapping, list)) and is_missing(filters)):
        data["filters"] = {}
    return data


def _flag_data(item: Any, where: str) -> dict[str, Any]:
    """A flag definition that is not a dict (a model, a mapping) as a dict; text or another type is an
    error naming what to pass."""
    if isinstance(item, FeatureFlag):
        return item.model_dump(by_alias=True, mode="json", exclude_unset=True)
    if callable(getattr(item, "model_dump", None)) and not isinstance(item, type):
        return item.model_dump(by_alias=True, mode="json")
    if isinstance(item, Mapping):
        return dict(item)
    if isinstance(item, str):
        raise DefinitionsError(
            f"definitions: {where} is the text {item[:40]!r}, not a flag definition; a list of flag keys "
            "says which flags, not how they target: pass the definitions "
            "(client.feature_flags.local_evaluation()) and the keys as flags=."
        )
    raise DefinitionsError(
        f"definitions: {where} is a {type(item).__name__}; a flag definition is a dict in the wire shape "
        "of /flags/definitions or a FeatureFlag model."
    )


def _flag_key(key: Any, where: str) -> str:
    """The flag's key: present, non-empty text, and one PostHog accepts."""
    if key is None or (not isinstance(key, str) and is_missing(key)):
        raise DefinitionsError(f"definitions: {where} has no 'key'; every flag definition needs its key.")
    if not isinstance(key, str) or not key:
        raise DefinitionsError(
            f"definitions: {where} has key {key!r}; a flag key is non-empty text.", key=str(key)
        )
    if not KEY_PATTERN.fullmatch(key):
        raise DefinitionsError(
            f"definitions: {where} has flag key {key!r}, which PostHog refuses: a flag key is only letters, "
            "numbers, hyphens (-) and underscores (_). Rename the flag (its key in the JSON or on the "
            "server).",
            key=key,
        )
    return key


def _frame(frame: pd.DataFrame) -> Definitions:
    """Flags from a flags frame: each row's own fields (`FRAME_FIELDS`), ``filters`` read back exactly."""
    missing = [c for c in ("key", "filters") if c not in frame.columns]
    if missing:
        raise DefinitionsError(
            f"definitions: the DataFrame has no {' or '.join(map(repr, missing))} column; a flags frame "
            "(client.feature_flags.frame(), or frames.read_csv of one) has 'key' and 'filters', and "
            "'filters' is what the flags target by. Got columns "
            + ", ".join(map(repr, list(frame.columns)[:12]))
            + "."
        )
    columns = [c for c in FRAME_FIELDS if c in frame.columns]
    flags: list[dict[str, Any]] = []
    for i, row in enumerate(frame[columns].itertuples(index=False, name=None)):
        flag: dict[str, Any] = {}
        for name, value in zip(columns, row, strict=True):
            if not isinstance(value, (Mapping, list)) and is_missing(value):
                continue
            if hasattr(value, "item") and not isinstance(value, (Mapping, list)):
                value = value.item()  # a numpy scalar
            flag[name] = value
        flags.append(_flag(flag, f"row {i} ({frame.index[i]!r})"))
    return Definitions(flags)


def _is_table(source: Any) -> bool:
    root = type(source).__module__.split(".", 1)[0]
    return root in ("polars", "pyarrow", "duckdb", "_duckdb")


def _text(text: str) -> Any:
    stripped = text.lstrip()
    if stripped[:1] in ("{", "[") or not stripped:
        return _json(text, "the text")
    path = Path(text)
    if path.suffix.lower() == ".json" or path.is_file():
        return _json(_file(path), f"the file {text!r}")
    raise DefinitionsError(
        f"definitions: the text {text[:40]!r} is neither JSON nor a path to a .json file; pass "
        "the JSON of client.feature_flags.local_evaluation(), or a path to a file holding it."
    )


def _file(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DefinitionsError(f"definitions: no file {str(path)!r}; check the path.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DefinitionsError(f"definitions: cannot read {str(path)!r} ({exc}).") from None


def _json(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise DefinitionsError(f"definitions: {what} is not valid JSON ({exc}).") from None
