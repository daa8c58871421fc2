"""Engine: experience-continuity hash keys (`hash_key_overrides`), date filters parsed once at compile time
but resolved against each evaluation's `now`, and the shared, immutable FlagResult objects."""

from __future__ import annotations

import copy
import datetime as dt
import pickle
from typing import Any

import pytest

from _flags import condition, flag, prop
from analytics_nb.flags import FlagResult, compile_flags, evaluate_flag, evaluate_flags

VARIANTS = {"variants": [{"key": k, "rollout_percentage": 25} for k in ("a", "b", "c", "d")]}


# multivariate flags on for everyone, as posthog-python's tests write them (no `active`), with and without
# experience continuity
STICKY = flag("sticky", multivariate=VARIANTS, active=None, ensure_experience_continuity=True)
PLAIN = flag("plain", multivariate=VARIANTS, active=None, ensure_experience_continuity=False)


def _differing_pair(flag: dict[str, Any]) -> tuple[str, str]:
    plain = {**flag, "ensure_experience_continuity": False}
    for i in range(200):
        a, b = f"anon-{i}", f"user-{i}"
        if evaluate_flag(plain, a).value != evaluate_flag(plain, b).value:
            return a, b
    raise AssertionError("no differing pair")


def test_override_is_the_hash_identifier_of_a_continuity_flag() -> None:
    anon, user = _differing_pair(STICKY)
    want = evaluate_flag(STICKY, anon).value
    got = evaluate_flag(STICKY, user, hash_key_overrides={"sticky": anon})
    assert got.value == want != evaluate_flag(STICKY, user).value
    assert got.reason == "condition_match"
    # overrides for other flags do not matter
    assert (
        evaluate_flag(STICKY, user, hash_key_overrides={"other": anon}).value
        == evaluate_flag(STICKY, user).value
    )


def test_flags_without_continuity_and_group_flags_ignore_overrides() -> None:
    plain = PLAIN
    anon, user = _differing_pair(plain)
    assert (
        evaluate_flag(plain, user, hash_key_overrides={"plain": anon}).value
        == evaluate_flag(plain, user).value
    )
    group = flag(
        "grp",
        multivariate=VARIANTS,
        aggregation_group_type_index=0,
        active=None,
        ensure_experience_continuity=True,
    )
    kwargs: dict[str, Any] = {"groups": {"company": "acme"}, "group_type_mapping": {"0": "company"}}
    assert (
        evaluate_flag(group, user, hash_key_overrides={"grp": anon}, **kwargs).value
        == evaluate_flag(group, user, **kwargs).value
    )


def test_evaluate_flags_applies_overrides_per_flag() -> None:
    sticky, plain = STICKY, PLAIN
    anon, user = _differing_pair(sticky)
    compiled = compile_flags([sticky, plain])
    out = evaluate_flags(compiled, user, hash_key_overrides={"sticky": anon, "plain": anon})
    assert out["sticky"].value == evaluate_flag(sticky, anon).value
    assert out["plain"].value == evaluate_flag(plain, user).value


def test_sdk_mode_needs_the_hash_key() -> None:
    anon, user = _differing_pair(STICKY)
    assert evaluate_flag(STICKY, user, mode="sdk").reason == "inconclusive"
    res = evaluate_flag(STICKY, user, mode="sdk", hash_key_overrides={"sticky": anon})
    assert res.value == evaluate_flag(STICKY, anon).value


@pytest.mark.parametrize("bad", ["", None, ["x"], True])
def test_bad_override_value_names_the_flag(bad: Any) -> None:
    with pytest.raises(ValueError, match=r"hash_key_overrides\['sticky'\]"):
        evaluate_flag(STICKY, "u", hash_key_overrides={"sticky": bad})


# -- date filters: parsed once, resolved per evaluation -------------------------------------------------
def _dated(operator: str, value: str) -> dict[str, Any]:
    """Flag ``dated`` (tests/_flags.py) on the person's ``signup`` date."""
    return flag("dated", condition(prop("signup", value, operator)), active=None)


@pytest.mark.parametrize(
    ("value", "signup", "early", "late"),
    [
        ("-7d", "2026-01-05", True, False),
        ("-24h", "2026-01-09T12:00:00Z", True, False),
        ("-1w", "2026-01-05T00:00:00+00:00", True, False),
        ("-1m", "2025-12-20", True, False),
        ("-1y", "2025-01-20", True, False),
    ],
)
def test_relative_dates_follow_now_with_one_compiled_set(
    value: str, signup: str, early: bool, late: bool
) -> None:
    compiled = compile_flags([_dated("is_date_after", value)])
    now1 = dt.datetime(2026, 1, 10, tzinfo=dt.UTC)
    now2 = now1 + dt.timedelta(days=400)
    props = {"signup": signup}
    assert evaluate_flags(compiled, "u", person_properties=props, now=now1)["dated"].value is early
    assert evaluate_flags(compiled, "u", person_properties=props, now=now2)["dated"].value is late
    # the same answers as compiling afresh at each instant
    for now in (now1, now2):
        fresh = evaluate_flag(_dated("is_date_after", value), "u", person_properties=props, now=now)
        assert fresh.value is evaluate_flags(compiled, "u", person_properties=props, now=now)["dated"].value


def test_absolute_and_bare_year_dates() -> None:
    compiled = compile_flags([_dated("is_date_before", "2024-01-01T00:00:00 +02:00")])
    assert evaluate_flags(compiled, "u", person_properties={"signup": "2023-12-31T21:59:00Z"})["dated"].value
    assert not evaluate_flags(compiled, "u", person_properties={"signup": "2023-12-31T22:00:00Z"})[
        "dated"
    ].value
    # sdk mode: a bare year takes month and day from `now`, for the filter and for the property value
    year = compile_flags([_dated("is_date_after", "2024")])
    props = {"signup": "2024-06-01"}
    sdk = {"mode": "sdk"}
    assert evaluate_flags(year, "u", person_properties=props, now=dt.datetime(2026, 3, 1), **sdk)[
        "dated"
    ].value
    assert not evaluate_flags(year, "u", person_properties=props, now=dt.datetime(2026, 9, 1), **sdk)[
        "dated"
    ].value
    bare_value = compile_flags([_dated("is_date_after", "2024-06-01")])
    assert not evaluate_flags(
        bare_value, "u", person_properties={"signup": "2024"}, now=dt.datetime(2026, 3, 1), **sdk
    )["dated"].value
    assert evaluate_flags(
        bare_value, "u", person_properties={"signup": "2024"}, now=dt.datetime(2026, 9, 1), **sdk
    )["dated"].value
    # server mode: a numeric string is epoch seconds (property_matching.rs
    # `determine_parsed_date_for_property_matching`), so "2024" is 1970-01-01T00:33:44Z
    assert not evaluate_flags(bare_value, "u", person_properties={"signup": "2024"})["dated"].value
    before = compile_flags([_dated("is_date_before", "1970-01-01T00:34:00Z")])
    assert evaluate_flags(before, "u", person_properties={"signup": "2024"})["dated"].value


def test_unparsable_property_date_stays_false_on_the_server_and_inconclusive_in_sdk_mode() -> None:
    dated = _dated("is_date_after", "-7d")
    for _ in range(2):  # the second time the memoised parse answers
        assert evaluate_flag(dated, "u", person_properties={"signup": "not a date"}).value is False
        assert evaluate_flag(dated, "u", person_properties={"signup": "not a date"}, mode="sdk").value is None


# -- results ------------------------------------------------------------------------------------------------
def test_results_are_immutable_with_descriptions_and_survive_copy_and_pickle() -> None:
    x_is_y = condition({"key": "x", "value": "y"})
    x_then_all = flag(
        "plain", x_is_y, condition(), multivariate=VARIANTS, active=None, ensure_experience_continuity=False
    )
    res = evaluate_flag(x_then_all, "u")
    assert res.description == "Matched condition set 2" and res.condition_index == 1
    assert (
        evaluate_flag(x_then_all, "u", person_properties={"x": "y"}).description == "Matched condition set 1"
    )
    off = evaluate_flag({"key": "off", "active": False, "filters": {}}, "u")
    assert (off.value, off.reason, off.description) == (False, "flag_disabled", "Flag is disabled")
    sdk = evaluate_flag(STICKY, "u", mode="sdk")
    assert sdk.description.startswith("Inconclusive: experience continuity")
    with pytest.raises(AttributeError):
        res.value = "z"  # type: ignore[misc]
    for clone in (copy.copy(res), copy.deepcopy(res), pickle.loads(pickle.dumps(res))):
        assert clone == res and hash(clone) == hash(res) and repr(clone) == repr(res)
    assert "description='Matched condition set 2'" in repr(res)
    assert isinstance(res, FlagResult) and res != evaluate_flag(x_then_all, "u", person_properties={"x": "y"})
