"""Hypothesis differential test: `evaluate_flag(..., mode="sdk")` against the official posthog==7.91.1
matcher.

Hypothesis draws person flags (every operator family the SDK knows, cohorts, condition groups with rollouts
and variant overrides, variant tables, payloads, holdouts, feature enrollment, early exit, inactive flags)
and property sets made of pandas/numpy cells. Both our engine and the oracle,
`posthog.feature_flags.match_feature_flag_properties`, get the cells as they are (numpy scalars, `pd.NA`,
`NaT` unconverted: the SDK compares what the analyst passes, and so must sdk mode; `to_plain` is kept for
the subject generator's own use). Values must be equal (same type; the SDK's feature enrollment can hand
back a numpy bool, `np.bool_(x) == "true"`, read as the bool), payloads must be the SDK's payload for that
value, and the oracle's InconclusiveMatchError / RequiresServerEvaluation must be our `inconclusive`.

Draws are kept shallow (`sampled_from` over prepared pools, short lists) so that 5,000 examples, each also
probing its filters one by one, take about 30 s on a shared 2-core machine.
Shapes that differ on purpose (docs/readme/flags.md, "Intentional differences") are not generated; each pool
says which ones it leaves out.
"""

from __future__ import annotations

import copy
import datetime as dt
import logging
import math
import os
from collections import Counter
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _examples import FULL, examples
from analytics_nb.flags import FlagResult, evaluate_flag

posthog = pytest.importorskip("posthog")
from posthog import Client  # noqa: E402
from posthog.feature_flags import (  # noqa: E402
    InconclusiveMatchError,
    RequiresServerEvaluation,
    match_feature_flag_properties,
)

#: at least 5,000 per CI run; FLAGS_HYPOTHESIS_EXAMPLES=50000 digs deeper locally (same fixed seed)
EXAMPLES = examples(max(5_000, int(os.environ.get("FLAGS_HYPOTHESIS_EXAMPLES", "5000"))))
GROUP_TYPE_MAPPING = {"0": "company", "1": "team"}
_CLIENT = Client("phc_hypothesis_differential", send=False, sync_mode=True)
logging.getLogger("posthog").setLevel(logging.CRITICAL)  # after Client(), which configures it
INCONCLUSIVE = "inconclusive"
ABSENT = object()

# Outcome tally of every example run; the wrapper test asserts on it after hypothesis has finished.
OUTCOMES: Counter[str] = Counter()
OPERATORS_SEEN: Counter[str] = Counter()
DECIDED: Counter[str] = Counter()

# ------------------------------------------------------------------------------------------ prepared pools

KEYS = ("plan", "age", "email", "version", "signup", "beta")
# keys as PostHog allows them (`validate_key`, posthog/api/feature_flag.py: [a-zA-Z0-9_-]+); a key like
# "ü-flag" is refused by read_definitions since issue 37 (tests/flags/test_flags_sql_quoting.py)
FLAG_KEYS = ("checkout", "beta-feature", "Flag_7", "x-9_Z")
# Datetime cells near now sit hours away from every relative filter's boundary, so the instant at which each
# side reads the clock cannot change an answer.
NOW = dt.datetime.now(dt.UTC)

WORDS = (
    "pro",
    "free",
    "enterprise",
    "ann@example.com",
    "bob@example.com",
    "istanbul",
    "naïve",
    "école",
    "a|b",
)
CASINGS = (str, str.upper, str.title, str.swapcase)
TAILS = ("",) * 4 + ("\n", " ", "1")  # a final newline tells a strict regex `$` from Python's
ODD_STRINGS = ("", " pro ", "x\ny", "pro\n", "İstanbul", "ǅemal", "12abc", "null", "[1,2]")
NUMERIC_STRINGS = ("5", "5.0", "-2", "1.5", "1e3", "+7", ".5", "30", "0", "1e400", "nan", "0x10", " 5")
FLOATS = (1.5, 5.0, -0.5, 30.25, 1e20, 1.5e-7, 0.1, 1e16, -0.0, math.inf)
NUMPY_NUMBERS = (np.int64(5), np.int32(-2), np.uint8(30), np.float64(1.5), np.float32(0.5), np.float64(30.0))
BOOLISH = (True, False, "true", "TRUE", "False", "false", "yes", "1", np.bool_(True), np.bool_(False), 1, 0)
DATE_CELLS = (
    "2024-01-15",
    "2024-01-15T10:00:00Z",
    "2023-06-01 12:00:00",
    "2024-01-15T10:00:00+02:00",
    "2031-03-01",
    "2024",
    "2024-13-01",
    "yesterday",
    "-3d",
    dt.datetime(2024, 1, 15, 10, 0, tzinfo=dt.UTC),
    dt.datetime(2023, 6, 1, 12, 0),
    dt.date(2024, 3, 3),
    NOW - dt.timedelta(days=3, hours=12),
    NOW - dt.timedelta(days=400, hours=12),
    NOW - dt.timedelta(hours=30),
    pd.Timestamp("2024-01-15 10:00:00", tz="UTC"),
    pd.Timestamp("2030-06-01 08:30:00"),
    np.datetime64("2023-06-01T12:00:00"),
)
SEMVER_CELLS = (
    "1.2.3",
    "v1.2.3",
    "1.2",
    "1",
    "0.9.1-beta",
    "2.0.0+build.5",
    "1.3.0",
    "01.2.3",
    "1.2.x",
    "0.0.3",
)
JSON_CELLS = (["a", "B"], [1, "pro"], [], ("pro", np.int64(2)), {"a": 1}, {"b": None, "a": [True]}, [None])
# A missing cell: the engine treats it as absent, so the oracle gets no key (posthog would read None as
# "null": an intentional difference).
MISSING_CELLS = (None, math.nan, np.nan, pd.NA, pd.NaT, np.float64("nan"))

#: exact / is_not values: scalars of every JSON type and boolean-ish strings (lists are drawn separately)
EXACT_SCALARS = (
    "pro",
    "PRO",
    "free",
    "true",
    "FALSE",
    "5",
    "1.5",
    "",
    "ann@example.com",
    5,
    30,
    1.5,
    5.0,
    True,
    False,
)
#: needles include non-ASCII letters: the service lower-cases ASCII letters only
TEXT_NEEDLES = ("pro", "PRO", "example", "@", "1", "true", "", "İ", "ï", "é", "É", "ÉCOLE", 5, 1.5, True)
# Only patterns the SDK evaluates locally for every value drawn below. Left out on purpose (documented
# intentional differences): invalid patterns (we raise FlagDefinitionError), patterns the SDK defers to the
# server (\b, look-arounds, nested quantifiers, \w on non-ASCII text, $ with a quantifier on a value ending in
# a newline).
REGEXES = (
    "^pro",
    "pro$",
    "[0-9]+",
    "a|b",
    "^$",
    "",
    "x.y",
    r"\d{2}",
    "^[a-z]+@",
    "(?:ann|bob)",
    "E",
    "com$",
    "e$",
    "M$",
    "^1\\.",
    5,
)
NUMERIC_FILTERS = (0, 5, 17, 30, -2, 1.5, 30.25, 1e20, "5", "1.5", "-2", "1e3")
# Relative and absolute dates; invalid ones and "-10000d" (which we reject as a bad definition) are left out.
DATE_FILTERS = (
    "2024-01-01",
    "-30d",
    "-2w",
    "-1y",
    "-6m",
    "-48h",
    "-3d",
    "2024-06-01T00:00:00Z",
    "2030-01-01",
    "2023-06-01 12:00:00",
    "2024",
    "1d",
)
SEMVER_FILTERS = ("1.2.3", "1.2", "v2", "0.9.1", "0.0.3", "2.0.0-rc1", "1", " 1.3.0 ")
WILDCARDS = ("1.*", "1.2.*", "0.*", "2", "v1.*")
ROLLOUTS = (None, None, 100, 50, 0, 10, 99.5, 33.3)
VARIANT_TABLES: tuple[tuple[tuple[str, float], ...] | None, ...] = (
    None,
    None,
    None,
    (("control", 50), ("test", 50)),
    (("a", 34), ("b", 33), ("c", 33)),
    (("x", 10), ("y", 20.5), ("z", 69.5)),
    (("only", 100),),
    (("zero", 0), ("Rest", 100)),
)
HOLDOUTS = (None,) * 12 + (
    {"id": 3, "exclusion_percentage": 10},
    {"id": 4, "exclusion_percentage": 50},
    {"id": 5, "exclusion_percentage": 100},
    {"id": 6, "exclusion_percentage": 0},
    {"id": 7, "exclusion_percentage": None},
)
COHORTS: dict[str, Any] = {
    "1": {
        "type": "AND",
        "values": [
            {
                "type": "AND",
                "values": [
                    {"key": "plan", "type": "person", "value": ["pro", "enterprise"], "operator": "exact"},
                    {"key": "age", "type": "person", "value": 18, "operator": "gte"},
                ],
            }
        ],
    },
    "2": {
        "type": "OR",
        "values": [
            {
                "type": "OR",
                "values": [
                    {
                        "key": "email",
                        "type": "person",
                        "value": "example",
                        "operator": "icontains",
                        "negation": True,
                    },
                    {"key": "id", "type": "cohort", "value": "1"},
                ],
            },
            {
                "type": "AND",
                "values": [{"key": "beta", "type": "person", "value": "is_set", "operator": "is_set"}],
            },
        ],
    },
}
#: "99" is not supplied: a static cohort, which the SDK hands to the server.
COHORT_IDS = ("1", "2", "99")

# ------------------------------------------------------------------------------------------ strategies

cased_words = st.builds(
    lambda word, case, tail: case(word) + tail,
    st.sampled_from(WORDS),
    st.sampled_from(CASINGS),
    st.sampled_from(TAILS),
)
numbers = st.one_of(
    st.integers(-50, 3000),
    st.integers(-50, 3000).map(str),
    st.sampled_from(FLOATS),
    st.sampled_from(NUMERIC_STRINGS),
    st.sampled_from(NUMPY_NUMBERS),
)
any_cells = st.one_of(
    cased_words,
    numbers,
    st.sampled_from(BOOLISH),
    st.sampled_from(DATE_CELLS),
    st.sampled_from(SEMVER_CELLS),
    st.sampled_from(ODD_STRINGS),
    st.sampled_from(JSON_CELLS),
    st.sampled_from(MISSING_CELLS),
)
#: Each property mostly holds its natural kind of value (so that filters on it are often decided), and
#: otherwise anything at all.
TYPED_CELLS = {
    "plan": cased_words,
    "age": numbers,
    "email": cased_words,
    "version": st.sampled_from(SEMVER_CELLS),
    "signup": st.sampled_from(DATE_CELLS),
    "beta": st.sampled_from(BOOLISH),
}
#: Which keys a property set has: usually all of them, often all but one, sometimes few or none.
KEY_SETS = (
    (KEYS,) * 6
    + tuple(tuple(k for k in KEYS if k != gone) for gone in KEYS)
    + (
        (),
        ("plan", "age"),
        ("email", "version", "signup"),
        ("beta",),
    )
)


@st.composite
def property_cells(draw: st.DrawFn) -> dict[str, Any]:
    """A property set of pandas/numpy/plain cells, some keys absent and some cells missing values."""
    # (A nested st.one_of would be flattened into equal branches, hence the explicit 2:1 choice.)
    return {
        key: draw(TYPED_CELLS[key] if draw(st.sampled_from((True, True, False))) else any_cells)
        for key in draw(st.sampled_from(KEY_SETS))
    }


def _filter(key: str, operator: str | None, value: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "type": "person", "value": value}
    if operator is not None:  # no operator means exact
        out["operator"] = operator
    return out


def keys_for(*natural: str) -> st.SearchStrategy[str]:
    """A filter's property key: usually a property of the natural kind for the operator, else any."""
    return st.sampled_from(natural * 6 + KEYS)


SEMVER_COMPARISONS = ("semver_eq", "semver_neq", "semver_gt", "semver_gte", "semver_lt", "semver_lte")
#: (operator, value) pairs for the range operators, so that the wildcard gets wildcard patterns
SEMVER_RANGES = tuple((op, v) for op in ("semver_tilde", "semver_caret") for v in SEMVER_FILTERS) + tuple(
    ("semver_wildcard", w) for w in WILDCARDS
)

exact_filters = st.builds(
    _filter,
    keys_for("plan", "beta"),
    st.sampled_from(("exact", "is_not", None)),
    st.one_of(
        st.sampled_from(EXACT_SCALARS),
        st.lists(st.sampled_from(EXACT_SCALARS), max_size=3),
    ),
)
presence_filters = st.builds(
    _filter, st.sampled_from(KEYS), st.sampled_from(("is_set", "is_not_set")), st.just("is_set")
)
text_filters = st.builds(
    _filter,
    keys_for("email", "plan"),
    st.sampled_from(
        ("icontains", "not_icontains", "starts_with", "not_starts_with", "ends_with", "not_ends_with")
    ),
    st.sampled_from(TEXT_NEEDLES),
)
regex_filters = st.builds(
    _filter, keys_for("email", "plan"), st.sampled_from(("regex", "not_regex")), st.sampled_from(REGEXES)
)
numeric_filters = st.builds(
    _filter, keys_for("age"), st.sampled_from(("gt", "gte", "lt", "lte")), st.sampled_from(NUMERIC_FILTERS)
)
date_filters = st.builds(
    _filter,
    keys_for("signup"),
    # is_date_exact is a service operator the SDK 7.91.1 does not know: inconclusive in both.
    st.sampled_from(("is_date_before", "is_date_after", "is_date_before", "is_date_after", "is_date_exact")),
    st.sampled_from(DATE_FILTERS),
)
semver_comparison_filters = st.builds(
    _filter, keys_for("version"), st.sampled_from(SEMVER_COMPARISONS), st.sampled_from(SEMVER_FILTERS)
)
semver_range_filters = st.builds(
    lambda key, pair: _filter(key, *pair), keys_for("version"), st.sampled_from(SEMVER_RANGES)
)
cohort_filters = st.builds(
    lambda cid, op: {"key": "id", "type": "cohort", "value": cid, **({"operator": op} if op else {})},
    st.sampled_from(COHORT_IDS),
    st.sampled_from(("in", "not_in", None)),
)
property_filters = st.one_of(
    exact_filters,
    presence_filters,
    text_filters,
    regex_filters,
    numeric_filters,
    date_filters,
    semver_comparison_filters,
    semver_range_filters,
    cohort_filters,
)


@st.composite
def conditions(draw: st.DrawFn, variant_keys: tuple[str, ...]) -> dict[str, Any]:
    """One condition group: 0-3 AND-ed filters, a rollout, sometimes a variant override or group targeting."""
    cond: dict[str, Any] = {
        "properties": draw(st.lists(property_filters, max_size=3)),
        "rollout_percentage": draw(st.sampled_from(ROLLOUTS)),
    }
    override = draw(st.sampled_from((None,) * 5 + variant_keys + ("missing-variant",)))
    if override is not None:
        cond["variant"] = override
    # mixed targeting: a condition with its own group type matches on that group's key and properties
    # (an explicit null is the flag's own aggregation: the person)
    aggregation = draw(st.sampled_from(("omit",) * 10 + (None, 0, 1, 2)))
    if aggregation != "omit":
        cond["aggregation_group_type_index"] = aggregation
    return cond


@st.composite
def flags(draw: st.DrawFn) -> dict[str, Any]:
    """A person flag in the wire shape of the local-evaluation endpoint."""
    key = draw(st.sampled_from(FLAG_KEYS))
    table = draw(st.sampled_from(VARIANT_TABLES))
    variant_keys = tuple(v for v, _ in table or ())
    filters: dict[str, Any] = {"groups": draw(st.lists(conditions(variant_keys), max_size=3))}
    if table:
        filters["multivariate"] = {"variants": [{"key": k, "rollout_percentage": p} for k, p in table]}
    payload_keys = draw(
        st.sampled_from(((), ("true",), variant_keys[:1], variant_keys, ("true", *variant_keys)))
    )
    # No "false" payload key: for a False value the SDK returns payloads["false"] while the engine (following
    # the service: a payload only for a matched flag) returns None. Reported to the lead; not generated.
    filters["payloads"] = {k: f'{{"for": "{k}"}}' for k in payload_keys}
    holdout = draw(st.sampled_from(HOLDOUTS))
    if holdout is not None:
        filters["holdout"] = dict(holdout)
    if draw(st.sampled_from((False,) * 6 + (True,))):
        filters["early_exit"] = True
    if draw(st.sampled_from((False,) * 15 + (True,))):
        filters["feature_enrollment"] = True
    return {
        "id": 1,
        "key": key,
        "active": draw(st.sampled_from((True,) * 12 + (False,))),
        "ensure_experience_continuity": draw(st.sampled_from((False,) * 20 + (True,))),
        "filters": filters,
        "version": 1,
    }


@st.composite
def subjects(draw: st.DrawFn, flag_key: str) -> dict[str, Any]:
    """A distinct id, person property cells, and sometimes group keys with group property cells."""
    person = draw(property_cells())
    if draw(st.sampled_from((False,) * 4 + (True,))):
        person[f"$feature_enrollment/{flag_key}"] = draw(st.sampled_from(BOOLISH + MISSING_CELLS[:1]))
    groups: dict[str, Any] = draw(
        st.sampled_from(({},) * 3 + ({"company": "acme"}, {"company": 7, "team": "t-1"}, {"team": "blue"}))
    )
    group_props: dict[str, Any] = {}
    for name in groups:
        if draw(st.sampled_from((True, True, True, False))):
            group_props[name] = draw(property_cells())
    prefix = draw(st.sampled_from(("user-", "ann", "", "ü-ñ", "7")))
    return {
        "distinct_id": f"{prefix}{draw(st.integers(0, 99_999))}",
        "person": person,
        "groups": groups,
        "group_props": group_props,
    }


@st.composite
def cases(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    """A flag and one subject to evaluate it for."""
    flag = draw(flags())
    return flag, draw(subjects(flag["key"]))


# ------------------------------------------------------------------------------------------ the oracle


def to_plain(cell: Any) -> Any:
    """A pandas/numpy cell as the plain Python value an SDK caller would pass; ABSENT for a missing cell.

    Written independently of the engine's own normalisation, so that the comparison is not circular.
    """
    if cell is None:
        return None  # an explicit None is JSON null: present, compared as null by the SDK and the engine
    if cell is pd.NA or cell is pd.NaT:
        return ABSENT
    if isinstance(cell, float) and math.isnan(cell):
        return cell  # a NaN in a property dict is a value for the SDK (no comparison matches it)
    if isinstance(cell, np.datetime64):
        return pd.Timestamp(cell).to_pydatetime()
    if isinstance(cell, pd.Timestamp):
        return cell.to_pydatetime()
    if isinstance(cell, np.generic):
        return to_plain(cell.item())
    if isinstance(cell, (list, tuple)):
        return [None if (v := to_plain(item)) is ABSENT else v for item in cell]
    if isinstance(cell, dict):
        return {k: None if (v := to_plain(item)) is ABSENT else v for k, item in cell.items()}
    return cell


def plain_properties(cells_by_key: dict[str, Any]) -> dict[str, Any]:
    """A property dict with every cell made plain and missing cells (NaN, NA, NaT) dropped."""
    return {k: v for k, cell in cells_by_key.items() if (v := to_plain(cell)) is not ABSENT}


def official(flag: dict[str, Any], subject: dict[str, Any]) -> Any:
    """The official SDK's local answer for a person flag: a value, or INCONCLUSIVE."""
    # the cells as the analyst holds them (numpy scalars, NA, NaT, ...), unconverted: the SDK compares what
    # it is given (issue 28), and so must sdk mode
    person = dict(subject["person"])
    groups = {name: str(key) for name, key in subject["groups"].items()}
    group_props = {name: dict(p) for name, p in subject["group_props"].items()}
    # what the SDK's client adds before matching (`_person_properties_for_local_evaluation`,
    # `_add_local_person_and_group_properties`): the engine's sdk mode models the client path
    person.setdefault("distinct_id", subject["distinct_id"])
    for name, key in subject["groups"].items():
        group_props[name] = {"$group_key": key, **group_props.get(name, {})}
    try:
        if not flag.get("active") or flag.get("ensure_experience_continuity"):
            # match_feature_flag_properties reads neither field: the client checks both before calling it.
            snapshot = {
                "group_type_mapping": GROUP_TYPE_MAPPING,
                "flags_by_key": {flag["key"]: flag},
                "cohorts": COHORTS,
                "property_matching_version": 1,
                "flag_definition_version": 1,
            }
            return _CLIENT._compute_flag_locally(
                copy.deepcopy(flag),
                subject["distinct_id"],
                groups=groups,
                person_properties=person,
                group_properties=group_props,
                warn_on_unknown_groups=False,
                _definition_snapshot=snapshot,
            )
        return match_feature_flag_properties(
            copy.deepcopy(flag),
            subject["distinct_id"],
            person,
            cohort_properties=copy.deepcopy(COHORTS),
            bucketing_value=subject["distinct_id"],
            group_type_mapping=GROUP_TYPE_MAPPING,
            groups=groups,
            group_properties=group_props,
        )
    except (InconclusiveMatchError, RequiresServerEvaluation):
        return INCONCLUSIVE


def official_payload(flag: dict[str, Any], value: Any) -> Any:
    """The payload the SDK reports with a locally computed value (only looked up for a matched value)."""
    snapshot = {"flags_by_key": {flag["key"]: flag}}
    return _CLIENT._compute_payload_locally(flag["key"], value, _definition_snapshot=snapshot)


def outcome_of(value: Any) -> str:
    """The kind of an oracle answer: True, False, variant or inconclusive."""
    if value is INCONCLUSIVE:
        return "inconclusive"
    return "variant" if isinstance(value, str) else str(value)


def compare(flag: dict[str, Any], subject: dict[str, Any]) -> Any:
    """Evaluate one flag for one subject with both, assert they agree, and return the oracle's answer."""
    expected = official(flag, subject)
    if isinstance(expected, np.bool_):
        expected = bool(expected)  # `_match_feature_enrollment`: `enrollment == "true"` on a numpy cell
    got: FlagResult = evaluate_flag(
        flag,
        subject["distinct_id"],
        person_properties=subject["person"],
        groups=subject["groups"],
        group_properties=subject["group_props"],
        group_type_mapping=GROUP_TYPE_MAPPING,
        cohorts=COHORTS,
        mode="sdk",
    )
    context = f"ours={got!r} official={expected!r} flag={flag!r} subject={subject!r}"
    if expected is INCONCLUSIVE:
        assert got.value is None and got.reason == "inconclusive", context
        assert got.payload is None, context
    else:
        assert got.value == expected and type(got.value) is type(expected), context
        assert got.reason != "inconclusive", context
        if expected is not False:
            assert got.payload == official_payload(flag, expected), context
    return expected


def probe(prop: dict[str, Any]) -> dict[str, Any]:
    """A flag whose only condition is one filter: comparing it isolates that filter's answer, which a
    whole flag often hides (another filter or condition decides first)."""
    return {
        "id": 2,
        "key": "probe",
        "active": True,
        "filters": {"groups": [{"properties": [prop], "rollout_percentage": None}]},
    }


def check(flag: dict[str, Any], subject: dict[str, Any]) -> None:
    """Compare the drawn flag, then each of its filters alone on the person properties; tally outcomes."""
    OUTCOMES[outcome_of(compare(flag, subject))] += 1
    for cond in flag["filters"]["groups"]:
        for prop in cond["properties"]:
            operator = prop.get("operator") or ("in" if prop["type"] == "cohort" else "exact")
            OPERATORS_SEEN[operator] += 1
            if compare(probe(prop), subject) is not INCONCLUSIVE:
                DECIDED[operator] += 1


@settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(cases())
def run_differential(case: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """The hypothesis-driven body: one drawn flag and subject per example."""
    check(*case)


def test_sdk_mode_agrees_with_official_matcher_on_hypothesis_cases() -> None:
    """5,000 drawn cases agree with the official SDK, and the draws cover every outcome and operator."""
    for tally in (OUTCOMES, OPERATORS_SEEN, DECIDED):
        tally.clear()
    run_differential()
    total = sum(OUTCOMES.values())
    assert total >= EXAMPLES, OUTCOMES
    # If generation degenerates (say every case inconclusive), agreement proves little: every kind of
    # answer must be common, and every operator the SDK knows must often be decided (not inconclusive).
    for outcome in ("True", "False", "variant", "inconclusive"):
        assert OUTCOMES[outcome] >= total // 40, OUTCOMES
    sdk_operators = {
        "exact",
        "is_not",
        "is_set",
        "is_not_set",
        "icontains",
        "not_icontains",
        "starts_with",
        "not_starts_with",
        "ends_with",
        "not_ends_with",
        "regex",
        "not_regex",
        "gt",
        "gte",
        "lt",
        "lte",
        "is_date_before",
        "is_date_after",
        "semver_eq",
        "semver_neq",
        "semver_gt",
        "semver_gte",
        "semver_lt",
        "semver_lte",
        "semver_tilde",
        "semver_caret",
        "semver_wildcard",
        "in",
        "not_in",
    }
    # 20 decided answers per operator at least in the full run; hypothesis's generation varies a little with
    # machine load (a run under load 8 decided semver_lt 27 times), so the bar sits below the usual counts.
    # The editing profile draws a fifth of the cases, so its bar is a fifth too.
    least = 20 if FULL else 4
    assert {op: DECIDED[op] for op in sdk_operators if DECIDED[op] < least} == {}, DECIDED
    assert OPERATORS_SEEN["is_date_exact"] >= 50 and DECIDED["is_date_exact"] == 0, OPERATORS_SEEN
