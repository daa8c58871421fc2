"""``POST /api/projects/:id/feature_flags/:flag_id/test_evaluation/``: one person's answer, explained.

PostHog's action (posthog-notes §11; PostHog/posthog #55149; the `test_evaluation` action of
`FeatureFlagViewSet` in `products/feature_flags/backend/api/feature_flag.py`, whose response type PostHog's
generated API client calls `FeatureFlagTestEvaluationResponseApi`): a body with ``distinct_id`` or
``person_id``, an optional ``timestamp`` (the flag and the person as they were then) and ``groups``; the
answer ``flag_key``, ``result``, ``reason``, ``condition_index``, ``payload``, ``person_properties``,
``evaluation_distinct_id`` (the id given; null on the person_id path) and one record per condition
(``index``, ``matched``, ``properties_matched``, ``explanation``, ``rollout_percentage``,
``rollout_excluded``, ``variant``, ``properties``: ``key``, ``operator``, ``value``, ``type``,
``actual_value``, ``matched``, ``explanation``). 404 when the person is not found; scope
``feature_flag:read``.

The sandbox answers with its own flag engine, as its ``/flags`` does: the result is ``/flags``' answer for
the stored person; each condition and property is decided by the engine on its own (the condition's
properties at 100%, then its rollout with the flag's key). What the sandbox cannot do, it refuses: it keeps
no history, so a ``timestamp`` more than a minute in the past is a 400 ("cannot build person properties"),
and its persons have no person ids, so the ``person_id`` path is a 404.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from .._context import context_of
from .._endpoints import Endpoint, Refusal
from .._errors import not_found, validation_error
from .._http import SafeJSONResponse, parse_json_body, read_body
from .._store import Store
from .._validation import JSONObject, RequestModel, Text, validate
from . import decide as _decide
from . import feature_flags as _feature_flags
from . import persons as _persons

__all__ = ["ENDPOINTS", "SCHEMA", "explain", "seed"]

SCHEMA = ""  # reads flags and persons
#: How far in the past a timestamp may be and still read today's flag and person (clock skew, latency).
PRESENT_SECONDS = 60.0


class TestEvaluationBody(RequestModel):
    """Body of ``test_evaluation``: whom (``distinct_id`` or ``person_id``), when and with which groups."""

    distinct_id: Text() = None  # type: ignore[valid-type]
    person_id: Text() = None  # type: ignore[valid-type]
    timestamp: Text() = None  # type: ignore[valid-type]
    groups: JSONObject() = None  # type: ignore[valid-type]


def _check_timestamp(raw: str | None) -> None:
    """A timestamp in the past is refused (the sandbox keeps no history); a bad one names the format."""
    if raw is None:
        return
    try:
        when = dt.datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise validation_error(
            "Enter a valid ISO 8601 timestamp, e.g. 2026-11-01T12:00:00Z.", attr="timestamp"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    if (dt.datetime.now(dt.UTC) - when).total_seconds() > PRESENT_SECONDS:
        raise validation_error(
            f"Could not build person properties at {raw}: the sandbox keeps no history of persons or flag "
            "definitions; leave timestamp out to evaluate the person as they are now.",
            attr="timestamp",
        )


def _person(store: Store, project_id: int, distinct_id: str) -> dict[str, Any] | None:
    """The stored person's properties, or None when no person has this distinct id."""
    row = store.query_one(
        "SELECT 1 FROM persons WHERE project_id=? AND distinct_id=?", (project_id, distinct_id)
    )
    return None if row is None else _persons.person_properties(store, project_id, distinct_id)


def _one(flag: dict[str, Any], conditions: list[dict[str, Any]]) -> dict[str, Any]:
    """The flag with only these conditions (same key, so the same hash; no variants, holdouts, supers)."""
    filters = {
        "groups": conditions,
        "aggregation_group_type_index": (flag.get("filters") or {}).get("aggregation_group_type_index"),
    }
    return {**flag, "active": True, "filters": filters, "ensure_experience_continuity": False}


def _value_of(fs: _feature_flags.FlagSet, flag: dict[str, Any], subject: dict[str, Any]) -> Any:
    from analytics_nb.flags import evaluate_flag

    return evaluate_flag(
        flag,
        subject["distinct_id"],
        person_properties=subject["person"],
        groups=subject["groups"],
        group_properties=subject["group_props"],
        group_type_mapping=subject["mapping"],
        cohorts=fs.cohorts,
        flag_values=subject["flag_values"],
        property_matching_version=fs.property_matching_version,
    ).value


def _actual(prop: dict[str, Any], subject: dict[str, Any]) -> Any:
    kind = prop.get("type", "person")
    if kind == "flag":
        return subject["flag_values"].get(str(prop.get("key")))
    if kind == "group":
        mapping = subject["mapping"]
        gtype = mapping.get(str(prop.get("group_type_index")))
        return (subject["group_props"].get(gtype or "", {}) or {}).get(prop.get("key"))
    if kind == "cohort":
        return None
    return subject["person"].get(prop.get("key"))


def _property_record(
    fs: _feature_flags.FlagSet, flag: dict[str, Any], prop: dict[str, Any], subject: Any
) -> Any:
    matched = _value_of(fs, _one(flag, [{"properties": [prop], "rollout_percentage": 100}]), subject) is True
    actual = _actual(prop, subject)
    operator = prop.get("operator") or "exact"
    return {
        "key": prop.get("key"),
        "operator": operator,
        "value": prop.get("value"),
        "type": prop.get("type", "person"),
        "actual_value": actual,
        "matched": matched,
        "explanation": f"{prop.get('key')} {operator} {prop.get('value')!r}: the value is {actual!r}, "
        + ("matched" if matched else "not matched"),
    }


def _condition_record(
    fs: _feature_flags.FlagSet, flag: dict[str, Any], index: int, cond: Any, subject: Any
) -> Any:
    props = list(cond.get("properties") or [])
    rollout = cond.get("rollout_percentage")
    rollout = 100 if rollout is None else rollout
    props_ok = _value_of(fs, _one(flag, [{"properties": props, "rollout_percentage": 100}]), subject) is True
    in_rollout = (
        _value_of(fs, _one(flag, [{"properties": [], "rollout_percentage": rollout}]), subject) is True
    )
    matched = props_ok and in_rollout
    if not props_ok:
        text = "Properties did not match"
    elif not in_rollout:
        text = f"Properties matched, but the person is outside the {rollout}% rollout"
    else:
        text = f"Properties matched and the person is within the {rollout}% rollout"
    return {
        "index": index,
        "matched": matched,
        "properties_matched": props_ok,
        "explanation": text,
        "rollout_percentage": rollout,
        "rollout_excluded": props_ok and not in_rollout,
        "variant": cond.get("variant"),
        "properties": [_property_record(fs, flag, p, subject) for p in props],
    }


def explain(
    store: Store, project_id: int, flag_id: int, distinct_id: str, groups: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The ``test_evaluation`` answer for a stored person (raises the 404 when there is none)."""
    fs = _feature_flags.flag_set(store, project_id)
    flag = next((d for d in fs.definitions if d["id"] == flag_id), None)
    if flag is None:
        raise not_found()
    stored = _person(store, project_id, distinct_id)
    if stored is None:
        raise not_found(f"Person not found for distinct_id {distinct_id!r}.")
    person = {**stored, "distinct_id": distinct_id}
    keys = {str(k): str(v) for k, v in (groups or {}).items() if v is not None}
    mapping = _persons.group_type_mapping(store, project_id)
    group_props = _persons.group_properties_for(store, project_id, keys, mapping) if keys else {}
    results = _decide._evaluate(fs, distinct_id, dict(person), keys, group_props, mapping)
    result = results.get(flag["key"])
    subject = {
        "distinct_id": distinct_id,
        "person": person,
        "groups": keys,
        "group_props": group_props,
        "mapping": mapping,
        "flag_values": {k: r.value for k, r in results.items()},
    }
    conditions = (flag.get("filters") or {}).get("groups") or []
    return {
        "flag_key": flag["key"],
        "result": False if result is None or result.value is None else result.value,
        "reason": "flag_disabled" if result is None else result.reason,
        "condition_index": None if result is None else result.condition_index,
        "payload": None if result is None else result.payload,
        "person_properties": stored,
        "evaluation_distinct_id": distinct_id,
        "conditions": [_condition_record(fs, flag, i, c, subject) for i, c in enumerate(conditions)],
    }


async def test_evaluation_endpoint(request: Request) -> Response:
    """POST: one person's answer for one flag, with each condition and property explained."""
    ctx = context_of(request)
    body = await read_body(request)
    ctx.authenticate_personal(request, "feature_flag:read")
    project_id = ctx.project_id_of(request)
    data = validate(TestEvaluationBody, parse_json_body(request, body))
    if not data.distinct_id and not data.person_id:
        raise validation_error("Either distinct_id or person_id is required.", attr="distinct_id")
    _check_timestamp(data.timestamp)
    flag_id = _feature_flags.flag_id_of(request)
    if not data.distinct_id:  # the sandbox's persons are keyed by distinct id: no person id resolves
        raise not_found(f"Person not found for person_id {data.person_id!r}.")
    return SafeJSONResponse(explain(ctx.store, project_id, flag_id, str(data.distinct_id), data.groups))


_SOURCE = (
    "products/feature_flags/backend/api/feature_flag.py FeatureFlagViewSet test_evaluation (PostHog #55149)"
)
#: Schema-valid bodies the action refuses: no person named; a timestamp the sandbox cannot serve (no history)
#: or cannot read.
_REFUSALS = (
    Refusal(400, "invalid_input", "distinct_id", _SOURCE, "Either distinct_id or person_id is required."),
    Refusal(400, "invalid_input", "timestamp", _SOURCE, "Could not build person properties"),
    Refusal(400, "invalid_input", "timestamp", "the sandbox's own check", "Enter a valid ISO 8601 timestamp"),
)

ENDPOINTS = [
    Endpoint(
        "POST",
        "/api/projects/{project_id}/feature_flags/{flag_id:int}/test_evaluation/",
        test_evaluation_endpoint,
        "feature_flags_test_evaluation_create",
        "One person's answer for a flag, each condition explained",
        body=TestEvaluationBody,
        refusals=_REFUSALS,
        aliases=("/api/environments/{project_id}/feature_flags/{flag_id:int}/test_evaluation/",),
    ),
]


def seed(store: Store, ctx: Any) -> None:
    """Nothing to seed: it reads the flags and persons the other resources seed."""
