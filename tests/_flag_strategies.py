"""Seeded random generators of flag definitions and property sets (helpers for the flags tests).

Plain `random.Random(seed)` rather than hypothesis strategies: drawing thousands of nested definitions through
hypothesis costs ~40 ms each, a seeded generator ~0.1 ms, so 5,000+ differential cases fit in seconds.
"""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

KEYS = ["plan", "age", "email", "version", "signup", "beta"]

STRINGS = [
    "pro",
    "Pro",
    "free",
    "enterprise",
    "true",
    "FALSE",
    "True",
    "5",
    "1.5",
    "-2",
    "12abc",
    "",
    "ann@example.com",
    "BOB@Example.COM",
    "2024-01-15",
    "2024-01-15T10:00:00Z",
    "2023-06-01 12:00:00",
    "2031-03-01",
    "1.2.3",
    "v2.0.0",
    "0.9.1-beta",
    "1.2",
    "01.2.3",
    "İstanbul",
    "naïve",
    "a|b",
    "x\ny",
]
INTS = [-3, 0, 1, 5, 17, 30, 42, 200, 2024, 2**63, 2**64 + 1, -(2**70)]
FLOATS = [1.5, 5.0, -0.5, 30.25, 1e20, 1.5e-7, 0.1, 1e16, 1e-5, -0.0, float("inf"), float("nan")]
#: strings the service reads as special numbers, dates or versions
EDGE_STRINGS = [
    "inf",
    "Infinity",
    "-inf",
    "NaN",
    "1e400",
    "+5",
    "5.",
    " 5",
    "0x10",
    "978307200",
    "-7d",
    "3d",
    "2024-06-01 01:30:00",
    "2024-06-01T10:00:00+02:00",
    "3.08",
    "3.10",
    "1.2.3.4",
    "V1.2.3",
    "1.2.3-alpha.10",
    "1.2.3+build.7",
    "null",
    "ǅemal",
    "école",
]
NOW = dt.datetime.now(dt.UTC)
DATETIMES = [
    dt.datetime(2024, 1, 15, 10, 0, tzinfo=dt.UTC),
    dt.datetime(2023, 6, 1, 12, 0),
    NOW - dt.timedelta(days=3, hours=12),
    NOW - dt.timedelta(days=400, hours=12),
    dt.date(2024, 3, 3),
]
REGEXES = [
    "^pro",
    "pro$",
    "[0-9]+",
    "a|b",
    "^$",
    "",
    "x.*y",
    r"\d{2}",
    "^[a-z]+@",
    "(?:ann|bob)",
    "E",
    # the service's dialect: Unicode classes, POSIX classes, scoped flags, look-around, invalid patterns
    r"^\w+$",
    r"\pL",
    "[[:alpha:]]+",
    "(?i:P)ro",
    "^a(?=b)",
    "(",
    "^(a+)+$",
]
DATE_FILTERS = [
    "2024-01-01",
    "2024-06-01 01:30:00",
    "yesterday",
    "-30d",
    "-2w",
    "-1y",
    "-6m",
    "-48h",
    "2024-06-01T00:00:00Z",
    "2030-01-01",
    "2023-06-01 12:00:00",
]
SEMVERS = ["1.2.3", "1.2", "v2", "0.9.1", "0.0.3", "2.0.0-rc1", "3.08", "x.y", "1.2.3.4"]
WILDCARDS = ["1.*", "1.2.*", "0.*", "2", "*", "1.*.3"]
TEXT_NEEDLES = ["pro", "PRO", "example", "@", "1", "true", "İ", "ï", 5, 30]
VARIANT_TABLES = [
    [("control", 50), ("test", 50)],
    [("a", 34), ("b", 33), ("c", 33)],
    [("x", 10), ("y", 20), ("z", 70)],
    [("only", 100)],
]


def scalar_value(rng: random.Random) -> Any:
    pick = rng.randrange(4)
    if pick == 0:
        return rng.choice(STRINGS) if rng.random() < 0.8 else rng.choice(EDGE_STRINGS)
    if pick == 1:
        return rng.choice(INTS)
    if pick == 2:
        return rng.choice(FLOATS)
    return rng.random() < 0.5


def property_value(rng: random.Random) -> Any:
    pick = rng.randrange(11)
    if pick == 10:
        return None  # an explicit null: present for the service and the SDK alike
    if pick < 7:
        return scalar_value(rng)
    if pick == 7:
        return rng.choice(DATETIMES)
    if pick == 8:
        return [rng.choice(["a", "b", "pro", 1, True]) for _ in range(rng.randrange(4))]
    return {k: rng.choice([1, "x", None]) for k in rng.sample(["a", "b"], rng.randrange(3))}


#: operators the service knows and the SDK 7.91.1 does not, and one neither knows (a flag-level error)
SERVICE_ONLY_OPS = [
    ("icontains_multi", ["pro", "EX"]),
    ("not_icontains_multi", ["pro", 5]),
    ("between", [1, 30]),
    ("not_between", ["1", "5e1"]),
    ("is_date_exact", "2024-01-15T10:00:00Z"),
    ("no_such_operator", 1),
]
#: filter values neither side can use
INVALID_VALUES = [
    ("gt", "abc"),
    ("lt", None),
    ("is_date_after", "not a date"),
    ("semver_gt", "x.y"),
    ("exact", None),
    ("between", [5, 1]),
]


def op_and_value(rng: random.Random) -> tuple[str, Any]:
    if rng.random() < 0.06:
        return rng.choice(SERVICE_ONLY_OPS + INVALID_VALUES)
    family = rng.randrange(8)
    if family == 0:
        op = rng.choice(["exact", "is_not"])
        if rng.random() < 0.3:
            return op, [rng.choice([*STRINGS, *INTS, True, False]) for _ in range(rng.randrange(4))]
        return op, scalar_value(rng)
    if family == 1:
        return rng.choice(["is_set", "is_not_set"]), "is_set"
    if family == 2:
        return (
            rng.choice(
                ["icontains", "not_icontains", "starts_with", "not_starts_with", "ends_with", "not_ends_with"]
            ),
            rng.choice(TEXT_NEEDLES),
        )
    if family == 3:
        return rng.choice(["regex", "not_regex"]), rng.choice(REGEXES)
    if family == 4:
        return rng.choice(["gt", "gte", "lt", "lte"]), rng.choice([*INTS, *FLOATS, "5", "1.5", "-2"])
    if family == 5:
        return rng.choice(["is_date_before", "is_date_after"]), rng.choice(DATE_FILTERS)
    if family == 6:
        return (
            rng.choice(
                [
                    "semver_eq",
                    "semver_neq",
                    "semver_gt",
                    "semver_gte",
                    "semver_lt",
                    "semver_lte",
                    "semver_tilde",
                    "semver_caret",
                ]
            ),
            rng.choice(SEMVERS),
        )
    return "semver_wildcard", rng.choice(WILDCARDS)


def property_filter(rng: random.Random, cohort_ids: list[str]) -> dict[str, Any]:
    if cohort_ids and rng.random() < 0.1:
        return {
            "key": "id",
            "type": "cohort",
            "value": rng.choice(cohort_ids),
            "operator": rng.choice(["in", "not_in", None]),
        }
    op, value = op_and_value(rng)
    flt: dict[str, Any] = {"key": rng.choice(KEYS), "value": value, "type": "person"}
    if op != "exact" or rng.random() < 0.5:
        flt["operator"] = op
    return flt


def cohorts(rng: random.Random) -> dict[str, Any]:
    """Cohorts "1" and "2" (each present half the time); "2" may nest cohort "1"."""
    out: dict[str, Any] = {}
    for cid in ("1", "2"):
        if rng.random() < 0.5:
            continue
        inner = [property_filter(rng, ["1"] if cid == "2" else []) for _ in range(rng.randrange(3))]
        for f in inner:
            if rng.random() < 0.25:
                f["negation"] = True
        groups: list[dict[str, Any]] = [{"type": rng.choice(["AND", "OR"]), "values": inner}]
        if rng.random() < 0.5:
            groups.append({"type": "AND", "values": [property_filter(rng, [])]})
        out[cid] = {"type": rng.choice(["AND", "OR"]), "values": groups}
    return out


def flag_definition(
    rng: random.Random, key: str, cohort_ids: list[str], *, group: bool = False, extras: bool = True
) -> dict[str, Any]:
    """A random flag in the wire shape: 0-3 condition groups, operators of every family, optional variants,
    payloads, overrides, holdout, feature enrollment, early exit, inactive, experience continuity."""
    variants = rng.choice([None, None, *VARIANT_TABLES])
    variant_keys = [v for v, _ in variants or []]
    groups = []
    for _ in range(rng.randrange(4)):
        cond: dict[str, Any] = {
            "properties": [
                property_filter(rng, [] if group else cohort_ids) for _ in range(rng.randrange(4))
            ],
            "rollout_percentage": rng.choice([None, 0, 10, 50, 99.5, 100]),
        }
        if rng.random() < 0.25:
            cond["variant"] = rng.choice([*variant_keys, "missing-variant", None])
        if not group and extras and rng.random() < 0.1:
            # mixed targeting: this condition alone matches on a group's properties and key
            cond["aggregation_group_type_index"] = rng.choice([0, 0, 1])
        groups.append(cond)
    filters: dict[str, Any] = {"groups": groups}
    if variants:
        filters["multivariate"] = {"variants": [{"key": k, "rollout_percentage": p} for k, p in variants]}
        filters["payloads"] = {k: f'{{"v": "{k}"}}' for k in variant_keys[:2]}
    else:
        filters["payloads"] = {"true": '{"on": true}'}
    if group:
        filters["aggregation_group_type_index"] = rng.choice([0, 0, 0, 1, 5])
    if extras:
        if rng.random() < 0.1:
            filters["holdout"] = {
                "id": rng.randrange(1, 9),
                "exclusion_percentage": rng.choice([10, 50, 100]),
            }
        if not group and rng.random() < 0.08:
            filters["feature_enrollment"] = True
        if rng.random() < 0.15:
            filters["early_exit"] = True
        # server-side shapes the SDK ignores: early-access super groups and experiment holdout groups
        if rng.random() < 0.15:
            enroll = {
                "key": f"$feature_enrollment/{key}",
                "type": "person",
                "operator": "exact",
                "value": ["true"],
            }
            filters["super_groups"] = [
                {
                    "properties": [rng.choice([enroll, property_filter(rng, [])])],
                    "rollout_percentage": rng.choice([None, 50, 100]),
                }
            ]
        if rng.random() < 0.08:
            filters["holdout_groups"] = [
                {
                    "properties": [],
                    "rollout_percentage": rng.choice([10, 50, 100]),
                    "variant": rng.choice([None, "holdout-4"]),
                }
            ]
    return {
        "id": rng.randrange(1, 10_000),
        "key": key,
        "active": not extras or rng.random() > 0.07,
        "ensure_experience_continuity": extras and rng.random() < 0.07,
        "filters": filters,
        "version": 1,
    }


def group_key(rng: random.Random) -> Any:
    """A group key, sometimes one the service refuses (empty, boolean)."""
    return rng.choice(["acme", "globex", "initech", 7, "x-1", "", True, 2.5])


def person_properties(rng: random.Random, flag_key: str) -> dict[str, Any]:
    props = {k: property_value(rng) for k in rng.sample(KEYS, rng.randrange(len(KEYS) + 1))}
    if rng.random() < 0.2:
        props[f"$feature_enrollment/{flag_key}"] = rng.choice([True, False, "true", "false", "x"])
    return props
