"""One definition the engine cannot evaluate affects only its own flag, everywhere (scalar, frames, what-if,
local simulation); `strict=True` keeps stopping the run for the analyst who wants that."""

from __future__ import annotations

import time

import pandas as pd
import pytest

from _flags import flag, prop
from analytics_nb.flags import (
    FlagDefinitionError,
    FrameEvaluator,
    compile_flags,
    evaluate_flag,
    evaluate_flags,
    evaluate_frame,
)

NO_SUCH_OPERATOR = {"properties": [prop("plan", 1, "no_such_operator")]}
GOOD = flag("good", id=1)
BROKEN = flag("broken", NO_SUCH_OPERATOR, id=2)
"""A flag the engine cannot evaluate (an operator no one knows), beside a good one."""


FRAME = pd.DataFrame({"distinct_id": ["a", "b"], "plan": ["pro", "free"]})


def test_compile_flags_keeps_the_others_and_names_flag_filter_and_fix() -> None:
    compiled = compile_flags([GOOD, BROKEN, flag("also-good", id=1)])
    assert set(compiled.errors) == {"broken"}
    message = compiled.errors["broken"]
    assert "broken" in message and "groups[0].properties[0]" in message and "no_such_operator" in message
    assert "fix" in message
    with pytest.raises(FlagDefinitionError, match="no_such_operator"):
        compile_flags([GOOD, BROKEN], strict=True)


@pytest.mark.parametrize("active", [True, False])
def test_evaluate_flags_answers_every_other_flag(active: bool) -> None:
    server = evaluate_flags([GOOD, flag("broken", NO_SUCH_OPERATOR, id=2, active=active)], "u1")
    assert server["good"].value is True and server["good"].error is None
    if not active:  # an inactive flag is never evaluated: its definition cannot fail
        assert (server["broken"].value, server["broken"].reason) == (False, "flag_disabled")
        return
    assert server["broken"].value is False and server["broken"].reason == "error"
    assert "no_such_operator" in (server["broken"].error or "")
    assert server["broken"].description.startswith("Error: ")
    # sdk mode: the SDK finds a filter with an unknown operator inconclusive when it reaches it
    sdk = evaluate_flags([GOOD, flag("broken", NO_SUCH_OPERATOR, id=2, active=active)], "u1", mode="sdk")
    assert sdk["good"].value is True and sdk["broken"].value is None


def test_evaluate_flag_on_a_bad_definition_returns_an_error_result() -> None:
    res = evaluate_flag(BROKEN, "u1")
    assert res.reason == "error" and res.value is False
    with pytest.raises(FlagDefinitionError):
        evaluate_flag(BROKEN, "u1", strict=True)


def test_bad_cohort_affects_only_the_flags_using_it() -> None:
    cohort_flag = flag("in-cohort", {"properties": [prop("id", 5, "in", type="cohort")]})
    cohorts = {"5": {"type": "XOR", "values": []}}
    res = evaluate_flags([GOOD, cohort_flag], "u1", cohorts=cohorts)
    assert res["good"].value is True and res["in-cohort"].reason == "error"
    assert "cohort 5" in (res["in-cohort"].error or "")


def test_frames_and_what_if_keep_the_others() -> None:
    for mode in ("server", "sdk"):
        out = evaluate_frame(FRAME, definitions=[GOOD, BROKEN], mode=mode, reasons=True)
        assert out["good"].tolist() == [True, True]
        want = "error" if mode == "server" else "inconclusive"
        assert out["broken:reason"].tolist() == [want, want]
        assert out["error"].isna().all()
    ev = FrameEvaluator(FRAME, definitions=[GOOD, BROKEN])
    edited = [GOOD, BROKEN, flag("third", id=3)]
    out = ev.run(definitions=edited)
    assert out["third"].tolist() == [True, True] and out["good"].tolist() == [True, True]
    with pytest.raises(FlagDefinitionError):
        FrameEvaluator(FRAME, definitions=[GOOD, BROKEN], strict=True)


def test_local_simulation_of_a_good_flag_is_not_stopped_by_a_bad_one() -> None:
    from analytics_nb import simulate

    sets = pd.DataFrame({"distinct_id": ["a", "b"], "plan": ["pro", "free"]})
    result = simulate(sets, ["good"], engine="local", definitions=[GOOD, BROKEN])
    assert result.frame["good"].tolist() == [True, True]


def test_duplicate_keys_keep_the_first_definition() -> None:
    compiled = compile_flags([GOOD, flag("good", id=1, active=False)])
    assert len(compiled) == 1 and compiled.skipped and "more than once" in compiled.skipped[0]
    assert evaluate_flags(compiled, "u")["good"].value is True


def test_regex_time_bound_in_frames() -> None:
    redos = flag("redos", {"properties": [prop("p", r"^(a+)+$", "regex")]})
    frame = pd.DataFrame(
        {"distinct_id": [f"u{i}" for i in range(50)], "p": ["a" * (30 + i) + "b" for i in range(50)]}
    )
    start = time.perf_counter()
    for mode in ("server", "sdk"):
        out = evaluate_frame(frame, definitions=[redos], mode=mode)
        assert not out["redos"].fillna(False).any()
    assert time.perf_counter() - start < 2.0
