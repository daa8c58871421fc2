"""Unit tests for flag rules: hash formula, definition errors, dependencies, modes, reasons."""

from __future__ import annotations

import hashlib

import pytest

from _flags import condition, flag, prop
from analytics_nb.flags import (
    FlagDefinitionError,
    compile_flags,
    evaluate_flag,
    evaluate_flags,
    hash_fraction,
)


def test_hash_matches_documented_hexdigest_formula() -> None:
    for ident in ["user-1", "ü", "42"]:
        expected = (
            int(hashlib.sha1(f"my-flag.{ident}variant".encode()).hexdigest()[:15], 16) / 0xFFFFFFFFFFFFFFF
        )
        assert hash_fraction("my-flag", ident, "variant") == expected


@pytest.mark.parametrize(
    ("bad", "fragment"),
    [
        ([{"key": "a", "operator": "nope", "value": 1}], "unknown operator"),
        ([{"key": "a", "operator": "regex", "value": "("}], "invalid regex"),
        ([{"key": "a", "operator": "gt", "value": "abc"}], "finite number"),
        ([{"key": "a", "operator": "is_date_before", "value": "yesterday"}], "ISO 8601"),
        ([{"key": "a", "operator": "semver_gt", "value": "x.y"}], "version"),
    ],
)
def test_bad_filters_name_flag_and_filter(bad: list[dict], fragment: str) -> None:
    with pytest.raises(FlagDefinitionError) as exc:
        compile_flags([flag("broken", condition(*bad, rollout=None))], strict=True)
    assert (
        "broken" in str(exc.value)
        and "groups[0].properties[0]" in str(exc.value)
        and fragment in str(exc.value)
    )


def test_variants_must_sum_to_100() -> None:
    mv = {"variants": [{"key": "a", "rollout_percentage": 50}, {"key": "b", "rollout_percentage": 40}]}
    with pytest.raises(FlagDefinitionError, match="sum to 90"):
        compile_flags([flag("mv", condition(rollout=None), multivariate=mv)], strict=True)
    # not strict: the service and the SDK walk the cumulative table; past 90% there is no variant -> true
    compiled = compile_flags([flag("mv", condition(rollout=None), multivariate=mv)])
    assert compiled.errors == {}


def test_dependency_cycle_is_a_clear_error() -> None:
    a = flag("a", condition(prop("b", True, "flag_evaluates_to", type="flag"), rollout=None))
    b = flag("b", condition(prop("a", True, "flag_evaluates_to", type="flag"), rollout=None))
    with pytest.raises(FlagDefinitionError, match="cycle"):
        compile_flags([a, b], strict=True)
    # not strict: the flags on the cycle answer with an error naming it, the others compute
    res = evaluate_flags([a, b, flag("ok", condition(rollout=None))], "u1")
    assert res["a"].reason == "error" and "cycle" in (res["a"].error or "")
    assert res["b"].reason == "error" and res["ok"].value is True


def test_dependencies_evaluate_in_order() -> None:
    child = flag("child", condition(prop("parent", True, "flag_evaluates_to", type="flag"), rollout=None))
    parent = flag("parent", condition({"key": "plan", "value": "pro"}, rollout=None))
    res = evaluate_flags([child, parent], "u1", person_properties={"plan": "pro"})
    assert list(res) == ["child", "parent"] and res["child"].value is True
    assert evaluate_flags([child, parent], "u1", person_properties={"plan": "free"})["child"].value is False


def test_missing_property_server_vs_sdk() -> None:
    neg = flag("f", condition({"key": "plan", "operator": "is_not", "value": "free"}, rollout=None))
    assert evaluate_flag(neg, "u1", mode="server").value is True
    res = evaluate_flag(neg, "u1", mode="sdk")
    assert res.value is None and res.reason == "inconclusive" and "plan" in (res.inconclusive_cause or "")


def test_group_flag_without_key_is_no_group_type() -> None:
    g = flag("g", condition(rollout=None), aggregation_group_type_index=0)
    res = evaluate_flag(g, "u1", group_type_mapping={"0": "company"})
    assert (res.value, res.reason) == (False, "no_group_type")
    res = evaluate_flag(g, "u1", groups={"company": "acme"}, group_type_mapping={"0": "company"})
    assert res.value is True and res.reason == "condition_match"


def test_conditions_run_in_listed_order_no_variant_first_sort() -> None:
    """Today's service runs conditions in listed order (PostHog PR #37859 removed the variant-first sort,
    flag_matching.rs `get_match`); the first listed condition matches here in both modes."""
    mv = {"variants": [{"key": "a", "rollout_percentage": 50}, {"key": "b", "rollout_percentage": 50}]}
    f = flag("f", condition(), condition(variant="b"), multivariate=mv, payloads={"b": '{"x": 1}'})
    for mode in ("server", "sdk"):
        res = evaluate_flag(f, "u1", mode=mode)
        assert res.condition_index == 0 and res.description == "Matched condition set 1"
        assert res.value == ("a" if hash_fraction("f", "u1", "variant") < 0.5 else "b")


def test_inactive_flag_is_disabled() -> None:
    f = flag("f", condition(rollout=None), active=False)
    res = evaluate_flag(f, "u1")
    assert (res.value, res.reason, res.enabled) == (False, "flag_disabled", False)


def test_super_condition_server_mode_and_feature_enrollment_sdk_mode() -> None:
    enroll = prop("$feature_enrollment/beta", ["true"])
    f = flag("beta", condition(rollout=0), super_groups=[condition(enroll)], feature_enrollment=True)
    opted_in = evaluate_flag(f, "u1", person_properties={"$feature_enrollment/beta": True})
    assert (opted_in.value, opted_in.reason, opted_in.condition_index) == (True, "super_condition_value", 0)
    opted_out = evaluate_flag(f, "u1", person_properties={"$feature_enrollment/beta": False})
    assert (opted_out.value, opted_out.reason) == (False, "super_condition_value")
    # not mentioned: the release conditions decide (0% rollout)
    assert evaluate_flag(f, "u1").reason == "out_of_rollout_bound"
    assert (
        evaluate_flag(f, "u1", person_properties={"$feature_enrollment/beta": "true"}, mode="sdk").value
        is True
    )
    assert evaluate_flag(f, "u1", mode="sdk").reason == "inconclusive"


def test_holdouts() -> None:
    sdk_style = flag("h", condition(rollout=None), holdout={"id": 3, "exclusion_percentage": 100})
    res = evaluate_flag(sdk_style, "u1", mode="sdk")
    assert (res.value, res.reason) == ("holdout-3", "holdout_condition_value")
    legacy = flag("h2", condition(rollout=None), holdout_groups=[condition(variant="holdout-9")])
    # legacy holdout_groups: today's service (flag_matching.rs `get_match`) and the SDK both ignore them
    assert evaluate_flag(legacy, "u1").value is True
    assert evaluate_flag(legacy, "u1", mode="sdk").value is True
    # about half of users are held out at 50%
    half = flag("h3", condition(rollout=None), holdout={"id": 1, "exclusion_percentage": 50})
    held = sum(evaluate_flag(half, f"user-{i}").value == "holdout-1" for i in range(400))
    assert 150 < held < 250


def test_experience_continuity_is_inconclusive_only_in_sdk_mode() -> None:
    f = flag("f", condition(rollout=None), ensure_experience_continuity=True)
    assert evaluate_flag(f, "u1").value is True
    res = evaluate_flag(f, "u1", mode="sdk")
    assert res.value is None and "continuity" in (res.inconclusive_cause or "")


def test_rollout_uses_the_hash() -> None:
    f = flag("roll", condition(rollout=40))
    for i in range(50):
        did = f"user-{i}"
        res = evaluate_flag(f, did)
        assert res.value is (hash_fraction("roll", did) <= 0.4)
        assert res.reason == ("condition_match" if res.value else "out_of_rollout_bound")


def test_local_evaluation_payload_and_models_are_accepted() -> None:
    class Model:
        def __init__(self, data: dict) -> None:
            self.data = data

        def model_dump(self, *, by_alias: bool, mode: str) -> dict:
            assert by_alias and mode == "json"
            return self.data

    size = prop("size", 5, "gt", type="group", group_type_index=0)
    g = flag("g", condition(size, rollout=None), aggregation_group_type_index=0)
    payload = Model(
        {
            "flags": [g, flag("c", condition({"key": "id", "type": "cohort", "value": 4}, rollout=None))],
            "group_type_mapping": {"0": "company"},
            "cohorts": {
                "4": {
                    "filters": {
                        "properties": {
                            "type": "AND",
                            "values": [{"key": "plan", "value": "pro", "type": "person"}],
                        }
                    }
                }
            },
        }
    )
    compiled = compile_flags(payload)
    res = evaluate_flags(
        compiled,
        "u1",
        person_properties={"plan": "pro"},
        groups={"company": 42},
        group_properties={"company": {"size": 9}},
    )
    assert res["g"].value is True and res["c"].value is True


def test_unknown_mode_and_bad_distinct_id_are_clear_errors() -> None:
    with pytest.raises(ValueError, match="mode must be"):
        evaluate_flag(flag("f", condition(rollout=None)), "u1", mode="local")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="distinct_id"):
        evaluate_flag(flag("f", condition(rollout=None)), None)
    # issue 27 #10: a value outside JSON no longer fails the call; a filter that reads it is unknown,
    # with a cause naming the property (tests/flags/test_flags_cells.py has the rest)
    reads_p = flag("f", condition(prop("p", "x", "icontains"), rollout=None))
    res = evaluate_flag(reads_p, "u1", person_properties={"p": b"\x00", "q": {1, 2}})
    assert res.value is None and "'p'" in (res.inconclusive_cause or "")
    assert (
        evaluate_flag(flag("f", condition(rollout=None)), "u1", person_properties={"p": b"\x00"}).value
        is True
    )
