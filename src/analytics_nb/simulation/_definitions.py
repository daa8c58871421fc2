"""Flag definitions in any form the user has (JSON, dicts, models, a local-evaluation response, a DataFrame)
read into one shape: wire-shape flag dicts, cohorts and the group type mapping."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from pydantic import BaseModel

from analytics_nb.models import FeatureFlag, LocalEvaluationResponse
from analytics_nb.simulation._errors import SimulationInputError
from analytics_nb.simulation._inputs import is_missing

__all__ = ["Definitions", "load_definitions"]

_FLAG_FIELDS = (
    "id",
    "key",
    "name",
    "active",
    "deleted",
    "filters",
    "ensure_experience_continuity",
    "version",
    "rollout_percentage",
    "bucketing_identifier",
    "evaluation_runtime",
)


@dataclass
class Definitions:
    """Flag definitions as wire-shape dicts (``flags``), plus ``cohorts`` by id and ``group_type_mapping``."""

    flags: list[dict[str, Any]]
    cohorts: dict[str, Any] = field(default_factory=dict)
    group_type_mapping: dict[str, str] = field(default_factory=dict)
    kind: str = "dicts"  # how they came in: "response" | "models" | "dicts" | "local_evaluation_dict"
    #: The definitions payload's `property_matching_version` (None when it had none: the engine uses 1).
    property_matching_version: int | None = None

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
            mv = (f.get("filters") or {}).get("multivariate") or {}
            keys = [str(v.get("key")) for v in (mv.get("variants") or []) if isinstance(v, Mapping)]
            if keys:
                out[str(f["key"])] = keys
        return out

    def payload_texts(self) -> dict[str, list[str]]:
        """Per flag, its payloads as the text the engine outputs (JSON text as given; other JSON encoded), in
        definition order: the categories of a ``<key>:payload`` column."""
        out: dict[str, list[str]] = {}
        for f in self.flags:
            payloads = (f.get("filters") or {}).get("payloads") or {}
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

    def export(self) -> Any:
        """Back to the kind the caller gave: a LocalEvaluationResponse, FeatureFlag models, or dicts."""
        version = (
            {}
            if self.property_matching_version is None
            else {"property_matching_version": self.property_matching_version}
        )
        if self.kind == "response":
            return LocalEvaluationResponse.model_validate(
                {
                    "flags": self.flags,
                    "group_type_mapping": self.group_type_mapping,
                    "cohorts": self.cohorts,
                    **version,
                }
            )
        if self.kind == "models":
            return [FeatureFlag.model_validate(f) for f in self.flags]
        if self.kind == "local_evaluation_dict":
            return {
                "flags": self.flags,
                "group_type_mapping": self.group_type_mapping,
                "cohorts": self.cohorts,
                **version,
            }
        return self.flags


def _flag_dict(item: Any, where: str) -> dict[str, Any]:
    if isinstance(item, BaseModel):
        data = item.model_dump(by_alias=True, mode="json", exclude_unset=True)
    elif isinstance(item, Mapping):
        data = copy.deepcopy(dict(item))
    else:
        raise SimulationInputError(
            f"definitions: {where} is a {type(item).__name__}; give flag definitions as dicts in the "
            "wire shape "
            "of /api/feature_flag/local_evaluation/ or as FeatureFlag models."
        )
    if "key" not in data or is_missing(data.get("key")):
        raise SimulationInputError(f"definitions: {where} has no 'key'; every flag definition needs its key.")
    if not isinstance(data.get("filters"), Mapping):
        if isinstance(data.get("filters"), str):
            try:
                data["filters"] = json.loads(data["filters"])
            except ValueError as exc:
                raise SimulationInputError(
                    f"definitions: flag {data['key']!r} has 'filters' text that is not JSON ({exc})."
                ) from None
        elif data.get("filters") is None or is_missing(data.get("filters")):
            data["filters"] = {}
        else:
            raise SimulationInputError(
                f"definitions: flag {data['key']!r} has 'filters' of type "
                f"{type(data['filters']).__name__}; it "
                "must be a dict with 'groups', 'multivariate', 'payloads'.",
                key=str(data["key"]),
            )
    data["key"] = str(data["key"])
    return data


def _from_frame(frame: pd.DataFrame) -> list[dict[str, Any]]:
    if "key" not in frame.columns or "filters" not in frame.columns:
        raise SimulationInputError(
            "definitions: a DataFrame of flags needs 'key' and 'filters' columns (as "
            "client.feature_flags.frame() gives); got columns "
            + ", ".join(map(repr, frame.columns[:12]))
            + "."
        )
    out: list[dict[str, Any]] = []
    for rec in frame.to_dict("records"):
        flag: dict[str, Any] = {}
        for name in _FLAG_FIELDS:
            if name in rec and not (not isinstance(rec[name], Mapping | list) and is_missing(rec[name])):
                value = rec[name]
                if hasattr(value, "item") and not isinstance(value, Mapping | list):
                    value = value.item()
                flag[name] = value
        out.append(flag)
    return out


def load_definitions(definitions: Any) -> Definitions:
    """Read definitions given as JSON text, a list of dicts or models, a dict, a LocalEvaluationResponse or a
    DataFrame of flags; raises `SimulationInputError` naming what is wrong."""
    if isinstance(definitions, Definitions):
        return definitions.copy()
    if isinstance(definitions, bytes):
        definitions = definitions.decode()
    if isinstance(definitions, str):
        try:
            definitions = json.loads(definitions)
        except ValueError as exc:
            raise SimulationInputError(f"definitions: the text is not valid JSON ({exc}).") from None
    if isinstance(definitions, LocalEvaluationResponse):
        flags = [_flag_dict(f, f"flag {i}") for i, f in enumerate(definitions.flags)]
        return Definitions(
            flags,
            copy.deepcopy(dict(definitions.cohorts)),
            {str(k): str(v) for k, v in definitions.group_type_mapping.items()},
            "response",
            definitions.property_matching_version,
        )
    if isinstance(definitions, pd.DataFrame):
        flags = [_flag_dict(f, f"row {i}") for i, f in enumerate(_from_frame(definitions))]
        return _dedupe(Definitions(flags, {}, {}, "dicts"))
    if isinstance(definitions, Mapping):
        if "flags" in definitions and isinstance(definitions["flags"], list):
            flags = [_flag_dict(f, f"flag {i}") for i, f in enumerate(definitions["flags"])]
            gtm = definitions.get("group_type_mapping") or {}
            cohorts = definitions.get("cohorts") or {}
            return _dedupe(
                Definitions(
                    flags,
                    copy.deepcopy(dict(cohorts)),
                    {str(k): str(v) for k, v in dict(gtm).items()},
                    "local_evaluation_dict",
                    definitions.get("property_matching_version"),
                )
            )
        if "results" in definitions and isinstance(definitions["results"], list):  # a list page
            return load_definitions(definitions["results"])
        if "key" in definitions:
            return Definitions([_flag_dict(definitions, "the flag")], {}, {}, "dicts")
        raise SimulationInputError(
            "definitions: a dict must be a local-evaluation response ({'flags': [...], 'cohorts': ..., "
            "'group_type_mapping': ...}) or one flag definition with a 'key'."
        )
    if isinstance(definitions, Sequence):
        items = list(definitions)
        flags = [_flag_dict(f, f"item {i}") for i, f in enumerate(items)]
        kind = "models" if items and all(isinstance(f, BaseModel) for f in items) else "dicts"
        return _dedupe(Definitions(flags, {}, {}, kind))
    raise SimulationInputError(
        f"definitions: cannot read a {type(definitions).__name__}; pass JSON text, a list of flag dicts or "
        "FeatureFlag models, a LocalEvaluationResponse, or client.feature_flags.frame()."
    )


def _dedupe(defs: Definitions) -> Definitions:
    seen: set[str] = set()
    for f in defs.flags:
        if f["key"] in seen:
            raise SimulationInputError(
                f"definitions: flag key {f['key']!r} appears twice; keep one definition per key.",
                key=f["key"],
            )
        seen.add(f["key"])
    return defs


def live_flags(defs: Definitions) -> Definitions:
    """Drop deleted flags (the service never evaluates them)."""
    kept = [f for f in defs.flags if not f.get("deleted")]
    return Definitions(kept, defs.cohorts, defs.group_type_mapping, defs.kind, defs.property_matching_version)


# ---------------------------------------------------------------------------------------------------------
# What a flag's conditions look at (for cause analysis in both-mode).


def flag_references(defs: Definitions, key: str) -> dict[str, set[str]]:
    """Which person properties (direct, and via cohorts), cohorts, group properties and flags ``key`` uses,
    following its flag dependencies."""
    by_key = defs.by_key()
    by_id = {str(f.get("id")): f for f in defs.flags if f.get("id") is not None}
    out: dict[str, set[str]] = {
        "person": set(),
        "cohort": set(),
        "cohort_person": set(),
        "group": set(),
        "flags": set(),
    }
    stack = [key]
    seen: set[str] = set()
    while stack:
        k = stack.pop()
        if k in seen:
            continue
        seen.add(k)
        flag = by_key.get(k) or by_id.get(k)
        if flag is None:
            continue
        filters = flag.get("filters") or {}
        groups = [*(filters.get("groups") or []), *(filters.get("super_groups") or [])]
        for group in groups:
            for prop in (group or {}).get("properties") or []:
                ptype = prop.get("type") or "person"
                pkey = str(prop.get("key"))
                if ptype == "cohort":
                    out["cohort"].add(pkey)
                    _cohort_props(defs.cohorts.get(pkey), out["cohort_person"], set())
                elif ptype == "flag":
                    out["flags"].add(pkey)
                    stack.append(pkey)
                elif ptype == "group":
                    out["group"].add(pkey)
                else:
                    out["person"].add(pkey)
    return out


def _cohort_props(node: Any, out: set[str], seen: set[int]) -> None:
    if node is None or id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, Mapping):
        if "key" in node and ("operator" in node or "value" in node) and node.get("type") in (None, "person"):
            out.add(str(node["key"]))
        for value in node.values():
            if isinstance(value, Mapping | list):
                _cohort_props(value, out, seen)
    elif isinstance(node, list):
        for value in node:
            _cohort_props(value, out, seen)
