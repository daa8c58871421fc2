"""The one way tests write flag definitions: small builders whose calls read like the definitions PostHog
sends (``/flags/definitions``, the ``local_evaluation`` body) and return the plain dicts the engine, the
sandbox and posthog-python read.

``prop("plan", ["pro"])`` is a property filter (operator ``exact`` on a person property unless given);
``condition(prop(...), rollout=30)`` a release condition (``filters.groups[i]``; ``rollout=None`` is
PostHog's null rollout); ``flag("key", condition(...), ...)`` a flag (no condition: one condition on for
everyone), its keywords the flag's own fields and every other keyword a field of its ``filters``
(``multivariate``, ``payloads``, ``aggregation_group_type_index``, ``holdout``, ``early_exit``,
``super_groups``, ...); ``definitions(flag, ...)`` the whole body with its cohorts and group types.
Each call builds a new flag and new conditions (a test may edit them); the property dicts passed in are
used as they are, not copied. Where a test needs a shape no builder writes (a condition without
``rollout_percentage``, a property without a type), it passes the dict itself.
``tests/conftest.py`` has the ``demo_definitions`` fixture (the sandbox's demo flags as the API answers them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["condition", "definitions", "flag", "prop"]


def prop(key: str, value: Any, operator: str = "exact", type: str = "person", **extra: Any) -> dict[str, Any]:
    """A property filter: ``{"key", "operator", "value", "type"}`` plus any other field (a group filter's
    ``group_type_index``)."""
    return {"key": key, "operator": operator, "value": value, "type": type, **extra}


def condition(
    *props: dict[str, Any], rollout: float | None = 100, variant: str | None = None
) -> dict[str, Any]:
    """A release condition: its property filters (all must match), its rollout percentage and, when given,
    the variant it overrides to."""
    group: dict[str, Any] = {"properties": list(props), "rollout_percentage": rollout}
    if variant is not None:
        group["variant"] = variant
    return group


def flag(
    key: str = "f",
    /,
    *conditions: dict[str, Any],
    id: int | None = None,
    name: str | None = None,
    active: bool | None = True,
    ensure_experience_continuity: bool | None = None,
    variants: Mapping[str, float] | list[dict[str, Any]] | None = None,
    **filters: Any,
) -> dict[str, Any]:
    """A flag definition. ``variants`` is ``{"a": 50, "b": 50}`` (or the list PostHog sends) and becomes
    ``filters.multivariate``; any other keyword is a field of ``filters``. ``id``, ``name`` and
    ``ensure_experience_continuity`` are left out unless given, and ``active=None`` leaves ``active`` out
    (a create request may omit it)."""
    groups = [dict(c) for c in conditions] if conditions else [condition()]
    fields = {"id": id, "key": key, "name": name, "active": active}
    body: dict[str, Any] = {field: value for field, value in fields.items() if value is not None}
    if ensure_experience_continuity is not None:
        body["ensure_experience_continuity"] = ensure_experience_continuity
    body["filters"] = {"groups": groups, **filters}
    if variants is not None:
        listed = (
            [{"key": k, "rollout_percentage": r} for k, r in variants.items()]
            if isinstance(variants, Mapping)
            else variants
        )
        body["filters"]["multivariate"] = {"variants": listed}
    return body


def definitions(
    *flags: dict[str, Any],
    cohorts: dict[str, Any] | None = None,
    group_type_mapping: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A definitions body (``flags``, ``group_type_mapping``, ``cohorts``), as posthog-python's
    ``_update_flag_state`` and the engine read it."""
    return {"flags": list(flags), "group_type_mapping": group_type_mapping or {}, "cohorts": cohorts or {}}
