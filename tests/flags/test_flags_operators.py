"""One row per operator rule: filter, property value -> expected outcome in server and sdk modes.

`None` as the expected value means "inconclusive" (sdk mode only); MISSING means the property is absent.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from _flags import flag, prop
from analytics_nb.flags import PROPERTY_OPERATORS, evaluate_flag

MISSING = object()
NOW = dt.datetime(2026, 11, 21, 12, 0, tzinfo=dt.UTC)

# operator, filter value, property value, expected server, expected sdk
CASES: list[tuple[str, Any, Any, bool, bool | None]] = [
    # exact / is_not: case-insensitive, lists, numbers as text, bool coercion
    ("exact", "Pro", "pro", True, True),
    ("exact", ["pro", "enterprise"], "ENTERPRISE", True, True),
    ("exact", "5", 5, True, True),
    ("exact", 5, "5", True, True),
    ("exact", "5", 5.0, False, False),
    ("exact", True, "TRUE", True, True),
    ("exact", "false", False, True, True),
    ("exact", "true", 1, False, False),
    ("exact", "pro", MISSING, False, None),
    ("exact", "x", dt.datetime(2024, 1, 1, tzinfo=dt.UTC), False, None),
    ("is_not", "pro", "free", True, True),
    ("is_not", ["pro", "free"], "Free", False, False),
    ("is_not", "pro", MISSING, True, None),
    # presence
    ("is_set", "is_set", "", True, True),
    ("is_set", "is_set", MISSING, False, None),
    ("is_not_set", "is_not_set", "x", False, False),
    ("is_not_set", "is_not_set", MISSING, True, None),
    # text: ASCII case folding only
    ("icontains", "EXAMPLE", "ann@example.com", True, True),
    ("icontains", "1", 210, True, True),
    ("icontains", "i", "İ", False, False),
    ("not_icontains", "spam", "ham", True, True),
    ("not_icontains", "spam", MISSING, True, None),
    ("starts_with", "ann", "Ann@x", True, True),
    ("not_starts_with", "ann", "Ann@x", False, False),
    ("ends_with", ".COM", "a@b.com", True, True),
    ("not_ends_with", ".com", "a@b.org", True, True),
    # regex: Python re with a strict end anchor
    ("regex", "^pro", "professional", True, True),
    ("regex", "pro$", "pro\n", False, False),
    ("regex", r"\d+", 42, True, True),
    ("not_regex", "^pro", "free", True, True),
    ("not_regex", "^pro", MISSING, True, None),
    # numbers: numeric strings parse, anything else does not match
    ("gt", 10, 11, True, True),
    ("gt", "10", "11", True, True),
    ("gt", 10, "abc", False, False),
    ("gt", 10, True, False, False),
    ("gte", 10, 10.0, True, True),
    ("lt", 1.5, -2, True, True),
    ("lte", 3, "3", True, True),
    ("lt", 3, MISSING, False, None),
    # dates: ISO and relative filter values, datetimes and strings as properties
    ("is_date_before", "2024-01-01", "2023-12-31", True, True),
    ("is_date_before", "2024-01-01", dt.datetime(2024, 6, 1), False, False),
    ("is_date_after", "-7d", (NOW - dt.timedelta(days=2)).isoformat(), True, True),
    ("is_date_after", "-1y", dt.date(2020, 1, 1), False, False),
    ("is_date_after", "2024-01-01", "not a date", False, None),
    ("is_date_after", "2024-01-01", 1_750_000_000, True, None),
    ("is_date_exact", "2024-01-01T00:00:00Z", "2024-01-01", True, None),
    # semver
    # the service keeps the pre-release ("1.2.3-beta" < "1.2.3"); the SDK drops it
    ("semver_eq", "1.2.3", "v1.2.3-beta", False, True),
    ("semver_neq", "1.2.3", "1.2.4", True, True),
    ("semver_gt", "1.2.3", "1.10.0", True, True),
    ("semver_gte", "1.2", "1.2.0", True, True),
    ("semver_lt", "2.0.0", "1.9.9", True, True),
    ("semver_lte", "1.0.0", "1.0.1", False, False),
    ("semver_tilde", "1.2.3", "1.2.9", True, True),
    ("semver_tilde", "1.2.3", "1.3.0", False, False),
    ("semver_caret", "0.2.3", "0.2.9", True, True),
    ("semver_caret", "0.2.3", "0.3.0", False, False),
    ("semver_wildcard", "1.*", "1.99.0", True, True),
    ("semver_wildcard", "1.2.*", "1.3.0", False, False),
    # the service strips leading zeros (canonicalize_version_string); the SDK refuses them
    ("semver_gt", "1.0.0", "01.2.3", True, None),
    # operators only the service has: the SDK 7.91.1 does not know them (inconclusive)
    ("icontains_multi", ["pro", "ENT"], "enterprise", True, None),
    ("icontains_multi", ["pro", "ent"], MISSING, False, None),
    ("not_icontains_multi", ["pro", "ent"], "free", True, None),
    ("not_icontains_multi", ["pro", "ent"], MISSING, True, None),
    ("between", [1, 10], "10", True, None),
    ("between", [1, 10], 11, False, None),
    ("not_between", [1, 10], 11, True, None),
    ("not_between", [1, 10], MISSING, True, None),
    ("not_between", [10, 1], 11, False, None),
]


@pytest.mark.parametrize(("operator", "value", "cell", "server", "sdk"), CASES)
def test_operator(operator: str, value: Any, cell: Any, server: bool, sdk: bool | None) -> None:
    definition = flag("f", {"properties": [prop("p", value, operator)]})
    props = {} if cell is MISSING else {"p": cell}
    got_server = evaluate_flag(definition, "u1", person_properties=props, mode="server", now=NOW)
    got_sdk = evaluate_flag(definition, "u1", person_properties=props, mode="sdk", now=NOW)
    assert got_server.value is server
    assert got_sdk.value is sdk
    assert (got_sdk.reason == "inconclusive") == (sdk is None)


def test_every_operator_has_a_case() -> None:
    assert {c[0] for c in CASES} == set(PROPERTY_OPERATORS)


def test_cohort_in_and_not_in_with_nested_groups() -> None:
    cohorts = {
        "7": {
            "type": "OR",
            "values": [
                {
                    "type": "AND",
                    "values": [
                        {"key": "plan", "value": "pro", "type": "person"},
                        {"key": "age", "operator": "gte", "value": 18, "type": "person"},
                    ],
                },
                {
                    "type": "AND",
                    "values": [
                        {
                            "key": "email",
                            "operator": "icontains",
                            "value": "@corp",
                            "type": "person",
                            "negation": True,
                        }
                    ],
                },
            ],
        }
    }

    in_7 = flag("f", {"properties": [prop("id", 7, "in", type="cohort")]})
    not_in_7 = flag("f", {"properties": [prop("id", 7, "not_in", type="cohort")]})

    member = {"plan": "pro", "age": 30, "email": "a@corp.com"}
    outsider = {"plan": "free", "age": 30, "email": "a@corp.com"}
    assert evaluate_flag(in_7, "u", person_properties=member, cohorts=cohorts).value is True
    assert evaluate_flag(in_7, "u", person_properties=outsider, cohorts=cohorts).value is False
    assert evaluate_flag(not_in_7, "u", person_properties=outsider, cohorts=cohorts).value is True
    assert evaluate_flag(in_7, "u", person_properties={**outsider, "email": "x@y"}, cohorts=cohorts).value
    unknown = evaluate_flag(in_7, "u", person_properties=member, cohorts={})
    assert unknown.value is None and "cohort 7" in (unknown.inconclusive_cause or "")
