"""Server mode against a table of today's flags service behaviours.

Each row is a fact read in PostHog/posthog rust/feature-flags/src/ (file and function cited per block);
the row states the property filter, the person's properties and the answer the service gives. They are
facts, not the service's code: the engine's own implementation must reproduce them.
"""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

import pytest

from _flags import condition, flag, prop
from analytics_nb.flags import compile_flags, evaluate_flag, evaluate_flags, hash_fraction

NOW = dt.datetime(2026, 11, 21, 12, 0, tzinfo=dt.UTC)
ABSENT = object()

PM = "properties/property_matching.rs"

# (source, operator, filter value, property value, service answer)
PROPERTY_CASES: list[tuple[str, str, Any, Any, bool]] = [
    # --- null is a present value whose text is "null" (`match_property`: contains_key, to_string_repr.)
    (f"{PM} match_property IsSet", "is_set", "is_set", None, True),
    (f"{PM} match_property IsNotSet", "is_not_set", "is_not_set", None, False),
    (f"{PM} compute_exact_match", "exact", "null", None, True),
    (f"{PM} compute_exact_match", "is_not", "x", None, True),
    (f"{PM} Icontains", "icontains", "ul", None, True),
    (f"{PM} Regex", "regex", "^null$", None, True),
    (f"{PM} parse_numeric_match_value", "gt", 1, None, False),
    (f"{PM} determine_parsed_date_for_property_matching", "is_date_before", "2030-01-01", None, False),
    # --- a filter without a value never matches, even the negative operators on an absent property
    (f"{PM} match_property (property.value None)", "is_not", None, ABSENT, False),
    (f"{PM} match_property (property.value None)", "not_regex", None, "x", False),
    # --- semver: leading zeros stripped, two-part padded, pre-release kept, 'v' stripped, 'V' and 4 parts not
    (f"{PM} canonicalize_version_string", "semver_eq", "3.8.0", "3.08", True),
    (f"{PM} canonicalize_version_string", "semver_gt", "3.9.0", "3.10", True),
    (f"{PM} to_semver_representation", "semver_lt", "1.2.3", "1.2.3-beta", True),
    (f"{PM} to_semver_representation", "semver_gt", "1.2.3-alpha.2", "1.2.3-alpha.10", True),
    (f"{PM} to_semver_representation", "semver_gt", "1.2.3-alpha", "1.2.3-1", False),
    (f"{PM} normalize_version_string", "semver_eq", "1.2.3", "v1.2.3", True),
    (f"{PM} normalize_version_string", "semver_eq", "1.2.3", "V1.2.3", False),
    (f"{PM} to_semver_representation", "semver_eq", "1.2.3", "1.2.3.4", False),
    (f"{PM} SemverTilde", "semver_tilde", "1.2", "1.2.9", True),
    (f"{PM} SemverTilde", "semver_tilde", "1.2.3", "1.2.5-beta", False),
    (f"{PM} SemverCaret", "semver_caret", "0.0.3", "0.0.4", False),
    (f"{PM} SemverWildcard", "semver_wildcard", "1.*", "1.99.3", True),
    (f"{PM} SemverWildcard", "semver_wildcard", "3.08.*", "3.8.1", True),
    (f"{PM} SemverWildcard", "semver_wildcard", "1.*.3", "1.0.3", False),
    (f"{PM} SemverWildcard", "semver_wildcard", "*", "7.0.0", True),
    # issue 34: "*.*" becomes "x.x", which semver's `VersionReq::from_str` refuses (a leading wildcard must
    # stand alone: UnexpectedAfterWildcard; dtolnay/semver src/parse.rs), so the filter never matches
    (f"{PM} SemverWildcard; semver VersionReq::from_str", "semver_wildcard", "*.*", "1.2.3", False),
    (f"{PM} SemverWildcard; semver VersionReq::from_str", "semver_wildcard", "*.*.*", "1.2.3", False),
    (f"{PM} SemverWildcard; semver VersionReq::from_str", "semver_wildcard", "1.*.*", "1.2.3", True),
    (f"{PM} SemverCmp invalid filter", "semver_gt", "x.y", "1.0.0", False),
    # --- dates: numeric strings and numbers are epoch seconds; relative dates as values; is_date_exact
    (f"{PM} determine_parsed_date_for_property_matching", "is_date_before", "2001-01-01", "978307199", True),
    (f"{PM} determine_parsed_date_for_property_matching", "is_date_after", "2001-01-01", 978307201.5, True),
    (f"{PM} parse_date_string_in_tz (relative value)", "is_date_after", "-7d", "-2d", True),
    (f"{PM} parse_date_string_in_tz (relative value)", "is_date_before", "-7d", "-30d", True),
    (f"{PM} IsDateExact", "is_date_exact", "2024-01-01T00:00:00Z", "2024-01-01", True),
    (f"{PM} IsDateExact", "is_date_exact", "2024-01-01", "2024-01-01T00:00:01Z", False),
    (f"{PM} IsDate* (filter not a string)", "is_date_before", 2_000_000_000, "2024-01-01", False),
    (f"{PM} parse_float_timestamp (out of range)", "is_date_before", "2030-01-01", "inf", False),
    # issue 34: `floor(v) as i64` and `round(fmod(v, 1) * 1e9) as u32` saturate: the text "NaN" is a number,
    # NaN as i64 is 0, so the property is 1970-01-01T00:00:00Z; a negative fraction is 0 ns (-1.5 is -2 s)
    (f"{PM} parse_float_timestamp (NaN)", "is_date_before", "2020-01-01", "NaN", True),
    (f"{PM} parse_float_timestamp (NaN)", "is_date_exact", "1970-01-01T00:00:00Z", "nan", True),
    (f"{PM} parse_float_timestamp (NaN)", "is_date_after", "1960-01-01", "NaN", True),
    (f"{PM} parse_float_timestamp (negative fraction)", "is_date_exact", "1969-12-31T23:59:58Z", -1.5, True),
    (f"{PM} parse_float_timestamp (chrono's years, not Python's)", "is_date_after", "2030-01-01", 1e12, True),
    (f"{PM} parse_date_string_in_tz (filter 'NaN' is no date)", "is_date_before", "NaN", "2020-01-01", False),
    # issue 34: -9999y is year -7973 (chrono; `relative_date.rs` `parse_relative_date_naive`, N < 10,000)
    ("relative_date.rs parse_relative_date_naive (-9999y)", "is_date_after", "-9999y", "2020-01-01", True),
    ("relative_date.rs parse_relative_date_naive (-9999y)", "is_date_before", "-9999y", "2020-01-01", False),
    ("relative_date.rs parse_relative_date_naive (-9999y)", "is_date_before", "-9999y", -3e11, False),
    ("relative_date.rs parse_relative_date_naive (-9999y)", "is_date_after", "-9999y", -2.5e11, True),
    ("relative_date.rs parse_relative_date_naive (-9999y)", "is_date_before", "-1y", "-9999y", True),
    (
        "relative_date.rs parse_relative_date_parts (N >= 10,000)",
        "is_date_after",
        "-10000y",
        "2020-01-01",
        False,
    ),
    # --- numbers: Rust f64 parsing of text (inf, Infinity, NaN, 1e400), JSON numbers as f64
    (f"{PM} to_f64_representation", "gt", 1e300, "inf", True),
    (f"{PM} to_f64_representation", "gt", 1e300, "Infinity", True),
    (f"{PM} to_f64_representation", "gt", 1e300, "1e400", True),
    (f"{PM} to_f64_representation", "lt", 0, "-inf", True),
    (f"{PM} to_f64_representation", "gt", 0, "NaN", False),
    (f"{PM} to_f64_representation", "gt", 4, " 5", False),
    (f"{PM} to_f64_representation", "gt", 4, "+5", True),
    (f"{PM} to_f64_representation", "gt", 4, "5.", True),
    (f"{PM} to_f64_representation", "gt", 1e19, 2**64 + 1, True),
    (f"{PM} to_f64_representation", "gt", 1e300, 10**400, True),
    (f"{PM} to_f64_representation (filter)", "gt", "abc", 5, False),
    # --- text of numbers as serde_json prints them (ryu): 1e16, 5.0, 1.5e-7, 0.00001; big ints exact
    (f"{PM} to_string_representation", "exact", "1e16", 1e16, True),
    (f"{PM} to_string_representation", "exact", "5.0", 5.0, True),
    (f"{PM} to_string_representation", "exact", "1.5e-7", 1.5e-7, True),
    (f"{PM} to_string_representation", "exact", "0.00001", 1e-5, True),
    (f"{PM} to_string_representation", "exact", "1000000000000000.0", 1e15, True),
    (f"{PM} to_string_representation", "exact", "18446744073709551615", 2**64 - 1, True),
    (f"{PM} to_string_representation", "exact", "1.8446744073709552e19", 2**64, True),
    # --- regex: Rust `regex` dialect through fancy_regex; an invalid pattern never matches
    (f"{PM} Regex (Unicode \\w)", "regex", r"^\w+$", "naïve", True),
    (f"{PM} Regex (\\pL)", "regex", r"^\pL+$", "école", True),
    (f"{PM} Regex (POSIX class)", "regex", r"^[[:alpha:]]+$", "abc", True),
    (f"{PM} Regex (scoped flags)", "regex", r"(?i:A)b", "ab", True),
    (f"{PM} Regex (scoped flags)", "regex", r"(?i:A)b", "aB", False),
    (f"{PM} Regex ($ is end of text)", "regex", r"pro$", "pro\n", False),
    (f"{PM} Regex (look-around via fancy_regex)", "regex", r"^a(?=b)", "ab", True),
    (f"{PM} Regex (back-reference via fancy_regex)", "regex", r"^(a)\1$", "aa", True),
    (f"{PM} Regex InvalidPattern", "regex", "(", "(", False),
    (f"{PM} Regex InvalidPattern", "not_regex", "(", "x", False),
    # fancy_regex parses the pattern itself: `\\Z` is end of text or before final newlines (fancy-regex 0.19
    # src/parse.rs `parse_escape`; issue 34), so the pattern is valid and `not_regex` answers
    ("fancy-regex src/parse.rs parse_escape (\\Z)", "not_regex", r"a\Z", "b", True),
    ("fancy-regex src/parse.rs parse_escape (\\Z)", "regex", r"a\Z", "xa\n\n", True),
    # --- operators only the service has
    (f"{PM} IcontainsMulti", "icontains_multi", ["PRO", "ent"], "Enterprise", True),
    (f"{PM} IcontainsMulti", "not_icontains_multi", ["pro", "ent"], "free", True),
    (f"{PM} IcontainsMulti (absent)", "not_icontains_multi", ["pro"], ABSENT, True),
    (f"{PM} Between (inclusive)", "between", [1, "10"], 10, True),
    (f"{PM} Between (NaN value)", "not_between", [1, 10], "NaN", False),
    (f"{PM} Between (absent)", "not_between", [1, 10], ABSENT, True),
    (f"{PM} Between (min > max)", "not_between", [10, 1], 50, False),
    (f"{PM} Between (not two numbers)", "between", [1], 1, False),
]


@pytest.mark.parametrize(("source", "operator", "value", "cell", "answer"), PROPERTY_CASES)
def test_property_matching_as_the_service(
    source: str, operator: str, value: Any, cell: Any, answer: bool
) -> None:
    person = {} if cell is ABSENT else {"p": cell}
    definition = flag("f", condition(prop("p", value, operator)), id=1)
    res = evaluate_flag(definition, "u1", person_properties=person, now=NOW)
    assert res.value is answer, (source, res)


def test_naive_values_are_read_in_the_team_time_zone() -> None:
    """parse_date_string_in_tz: a naive date or date-time means that wall clock in the team's zone."""
    before = flag("f", condition(prop("p", "2024-06-01T00:00:00Z", "is_date_before")), id=1)
    person = {"p": "2024-06-01 01:30:00"}  # 01:30 in Berlin (UTC+2 in June) is 23:30Z the day before
    assert evaluate_flag(before, "u", person_properties=person, timezone="Europe/Berlin").value is True
    assert evaluate_flag(before, "u", person_properties=person).value is False  # UTC: 01:30Z
    # the filter side too: "2024-06-01" is midnight in the team's zone
    day = flag("f", condition(prop("p", "2024-06-01", "is_date_before")), id=1)
    assert evaluate_flag(day, "u", person_properties={"p": "2024-05-31T22:30:00Z"}).value is True
    berlin = evaluate_flag(
        day, "u", person_properties={"p": "2024-05-31T22:30:00Z"}, timezone="Europe/Berlin"
    )
    assert berlin.value is False
    # the compiled set carries it, and a bad name is a clear error
    compiled = compile_flags([before], timezone="Europe/Berlin")
    assert evaluate_flags(compiled, "u", person_properties=person)["f"].value is True
    with pytest.raises(ValueError, match="IANA"):
        compile_flags([before], timezone="Mars/Olympus")


def test_conditions_run_in_listed_order() -> None:
    """flag_matching.rs get_match: no variant-first sort (PostHog PR #37859)."""
    mv = {"variants": [{"key": "a", "rollout_percentage": 100}, {"key": "b", "rollout_percentage": 0}]}
    definition = flag("f", id=1, multivariate=mv)
    definition["filters"]["groups"].append({"properties": [], "rollout_percentage": 100, "variant": "b"})
    res = evaluate_flag(definition, "u1")
    assert (res.value, res.condition_index) == ("a", 0)


def test_enrichment_distinct_id_group_key_and_initial_fill() -> None:
    """flag_matching_utils.rs fetch_and_locally_cache_all_relevant_properties (distinct_id),
    populate_missing_initial_properties ($initial_*), and `$group_key` in group properties."""
    by_id = flag("f", condition(prop("distinct_id", "u1")), id=1)
    assert evaluate_flag(by_id, "u1").value is True
    assert evaluate_flag(by_id, "u1", person_properties={"distinct_id": "other"}).value is False
    initial = flag("f", condition(prop("$initial_browser", "Firefox")), id=1)
    assert evaluate_flag(initial, "u1", person_properties={"$browser": "Firefox"}).value is True
    kept = {"$browser": "Firefox", "$initial_browser": "Chrome"}
    assert evaluate_flag(initial, "u1", person_properties=kept).value is False
    acme = prop("$group_key", "acme", type="group", group_type_index=0)
    group = flag("f", condition(acme), id=1, aggregation_group_type_index=0)
    assert (
        evaluate_flag(group, "u1", groups={"company": "acme"}, group_type_mapping={"0": "company"}).value
        is True
    )


def test_empty_or_boolean_group_keys_skip_group_conditions() -> None:
    """flag_matching.rs get_match: only a non-empty string or a number is a group key."""
    group = flag("f", id=1, aggregation_group_type_index=0)
    mapping = {"0": "company"}
    for key in ("", True, False):
        res = evaluate_flag(group, "u1", groups={"company": key}, group_type_mapping=mapping)
        assert (res.value, res.reason, res.condition_index) == (False, "no_group_type", 0), key
    assert evaluate_flag(group, "u1", groups={"company": 7}, group_type_mapping=mapping).value is True


def test_filters_are_routed_by_type() -> None:
    """PropertyContext::resolve_for_filter: a person filter on a group flag reads the person; a group filter
    names its own group type."""
    mapping = {"0": "company", "1": "team"}
    size = prop("size", 10, "gt", type="group", group_type_index=1)
    definition = flag("f", condition(prop("plan", "pro"), size), id=1, aggregation_group_type_index=0)
    res = evaluate_flag(
        definition,
        "u1",
        person_properties={"plan": "pro"},
        groups={"company": "acme", "team": "t1"},
        group_properties={"company": {"plan": "free"}, "team": {"size": 20}},
        group_type_mapping=mapping,
    )
    assert res.value is True


def test_device_id_bucketing_without_device_skips_the_condition() -> None:
    """get_match: a person condition bucketed by device id without one is skipped as out_of_rollout_bound."""
    definition = flag("f", id=1)
    definition["bucketing_identifier"] = "device_id"
    res = evaluate_flag(definition, "u1")
    assert (res.value, res.reason, res.condition_index) == (False, "out_of_rollout_bound", 0)
    assert evaluate_flag(definition, "u1", device_id="dev-1").value is True


def test_enrollment_values_and_legacy_super_groups() -> None:
    """get_match: `$feature_enrollment/<key>` true or "true" enrols; other values do not; unset falls
    through to the conditions. Super conditions answer true/false, never a variant."""
    definition = flag("f", id=1, feature_enrollment=True)
    definition["filters"]["groups"][0]["rollout_percentage"] = 0
    for value, answer in ((True, True), ("true", True), ("TRUE", False), (1, False), (False, False)):
        res = evaluate_flag(definition, "u1", person_properties={"$feature_enrollment/f": value})
        assert (res.value, res.reason, res.condition_index) == (answer, "super_condition_value", 0), value
    assert evaluate_flag(definition, "u1").reason == "out_of_rollout_bound"
    mv = {"variants": [{"key": "a", "rollout_percentage": 100}]}
    legacy = flag("f", id=1, multivariate=mv, super_groups=[{"properties": [prop("beta", "yes")]}])
    res = evaluate_flag(legacy, "u1", person_properties={"beta": "yes"})
    assert (res.value, res.reason) == (True, "super_condition_value")


def test_legacy_holdout_groups_are_ignored() -> None:
    """get_match evaluates `filters.holdout` only; the legacy `holdout_groups` play no part."""
    definition = flag(
        "f", id=1, holdout_groups=[{"properties": [], "rollout_percentage": 100, "variant": "holdout-9"}]
    )
    assert evaluate_flag(definition, "u1").value is True


def test_reasons_are_ranked_as_the_service_ranks_them() -> None:
    """flag_match_reason.rs score: out_of_rollout_bound > no_condition_match > no_group_type; a later
    condition with an equal score replaces the index (get_highest_priority_match_evaluation)."""
    miss = prop("plan", "pro")
    did = "u1"
    out_pct = 100 * hash_fraction("f", did) - 1e-9 if hash_fraction("f", did) > 0.01 else 0
    definition = {
        "key": "f",
        "active": True,
        "filters": {
            "groups": [
                {"properties": [miss], "rollout_percentage": 100},
                {"properties": [], "rollout_percentage": out_pct},
                {"properties": [miss], "rollout_percentage": 100},
            ]
        },
    }
    res = evaluate_flag(definition, did)
    assert (res.value, res.reason, res.condition_index) == (False, "out_of_rollout_bound", 1)
    two_misses = flag("f", condition(miss), id=1)
    two_misses["filters"]["groups"].append({"properties": [miss], "rollout_percentage": 100})
    res = evaluate_flag(two_misses, did)
    assert (res.reason, res.condition_index) == ("no_condition_match", 1)


def test_property_matching_version_2_drops_boolean_coercion() -> None:
    """The /flags/definitions payload's property_matching_version 2 (posthog 7.91.1 `_match_exact_property`):
    "true" no longer equals True-ish values; read from the payload or given as a parameter."""
    definition = flag("f", condition(prop("p", "true")), id=1)
    person = {"p": "TRUE"}
    assert evaluate_flag(definition, "u", person_properties=person).value is True
    assert evaluate_flag(definition, "u", person_properties=person, property_matching_version=2).value is True
    assert (
        evaluate_flag(definition, "u", person_properties={"p": True}, property_matching_version=2).value
        is True
    )
    assert evaluate_flag(definition, "u", person_properties={"p": ["true"]}).value is True
    assert (
        evaluate_flag(definition, "u", person_properties={"p": ["true"]}, property_matching_version=2).value
        is False
    )
    payload = {"flags": [definition], "group_type_mapping": {}, "cohorts": {}, "property_matching_version": 2}
    compiled = compile_flags(payload)
    assert compiled.property_matching_version == 2
    for mode in ("server", "sdk"):
        assert evaluate_flags(compiled, "u", person_properties={"p": ["true"]}, mode=mode)["f"].value is False
    with pytest.raises(ValueError, match="property_matching_version"):
        compile_flags(payload, property_matching_version=3)


def test_rules_format_v2_needs_the_server() -> None:
    """`filters.version == 2` (PostHog/posthog-sdk-test-harness contracts/feature_flag_rules_v2) is not read
    as version 1: the flag answers "needs_server", in both modes, and the others still compute."""
    v2 = {"key": "v2", "active": True, "filters": {"version": 2, "rules": [{"conditions": []}]}}
    res = evaluate_flags([v2, flag("f", id=1)], "u1")
    assert (
        res["v2"].value is None
        and res["v2"].reason == "needs_server"
        and "version 2" in res["v2"].description
    )
    assert res["f"].value is True
    assert evaluate_flag(v2, "u1", mode="sdk").reason == "needs_server"
    # the corpus's other cases: 2.0 is version 2; 3, "2", true and null are unsupported (remote fallback)
    for version in (2.0, 3, "2", True, None):
        x = {"key": "x", "active": True, "filters": {"version": version, "groups": []}}
        assert evaluate_flag(x, "u1").reason == "needs_server", version
    for version in (1, 1.0):
        x = {"key": "x", "active": True, "filters": {"version": version, "groups": [{"properties": []}]}}
        assert evaluate_flag(x, "u1").value is True, version


def test_catastrophic_regex_is_bounded() -> None:
    """REGEX_BACKTRACK_LIMIT: no pattern runs unbounded (Rust regex is linear; look-around time-bounded)."""
    subject = {"p": "a" * 40 + "b"}
    for pattern in (r"^(a+)+$", r"^(?=a)(a+)+$", r"^(a|a)+(?!x)$"):
        definition = flag("f", condition(prop("p", pattern, "regex")), id=1)
        start = time.perf_counter()
        for mode in ("server", "sdk"):
            res = evaluate_flag(definition, "u", person_properties=subject, mode=mode)
            assert res.value in (False, None)
        assert time.perf_counter() - start < 2.0, pattern
