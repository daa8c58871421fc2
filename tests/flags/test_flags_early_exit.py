"""`early_exit` (PostHog PR #57321; posthog-python 7.91.1 `_match_flag_conditions`): when a condition's
properties match but the person is outside its rollout, evaluation stops there with False.

Before, server mode (and so the sandbox's /flags, which evaluates with this engine) ignored it: a 30%/100%
early-exit flag over 200 ids was True for all 200, the SDK for about 60.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest

from _flags import condition, definitions, flag, prop
from analytics_nb import Client
from analytics_nb.flags import evaluate_flags, evaluate_frame
from analytics_nb.sandbox.testing import Sandbox

posthog = pytest.importorskip("posthog")
from posthog import Posthog  # noqa: E402

_CLIENT = Posthog("phc_early_exit_test", send=False, sync_mode=True)
logging.getLogger("posthog").setLevel(logging.CRITICAL)
pytestmark = pytest.mark.filterwarnings("ignore:`get_feature_flag` is deprecated:DeprecationWarning")

IDS = [f"user-{i:05d}" for i in range(200)]


def _sdk(flag: dict[str, Any], distinct_id: str, person: dict[str, Any] | None = None) -> Any:
    _CLIENT._update_flag_state(definitions(copy.deepcopy(flag)))
    return _CLIENT.get_feature_flag(
        flag["key"],
        distinct_id,
        person_properties=copy.deepcopy(person or {}),
        only_evaluate_locally=True,
        send_feature_flag_events=False,
    )


THIRTY_THEN_ALL = flag("ee", condition(rollout=30), condition(), id=1, early_exit=True)


@pytest.mark.parametrize("mode", ["server", "sdk"])
def test_thirty_then_hundred_agrees_with_the_sdk(mode: str) -> None:
    sdk = [_sdk(THIRTY_THEN_ALL, d) for d in IDS]
    assert 45 <= sdk.count(True) <= 75 and set(sdk) == {True, False}
    scalar = [evaluate_flags([THIRTY_THEN_ALL], d, mode=mode)["ee"] for d in IDS]  # type: ignore[arg-type]
    assert [r.value for r in scalar] == sdk
    stopped = [r for r in scalar if r.value is False]
    assert {(r.reason, r.condition_index) for r in stopped} == {("out_of_rollout_bound", 0)}
    frame = evaluate_frame(
        pd.DataFrame({"distinct_id": IDS}), definitions=[THIRTY_THEN_ALL], mode=mode, reasons=True
    )  # type: ignore[arg-type]
    assert frame["ee"].tolist() == sdk
    assert set(frame.loc[frame["ee"] == False, "ee:reason"]) == {"out_of_rollout_bound"}  # noqa: E712


def test_without_early_exit_the_second_condition_still_matches() -> None:
    definition = copy.deepcopy(THIRTY_THEN_ALL)
    definition["filters"]["early_exit"] = False
    assert all(evaluate_flags([definition], d)["ee"].value is True for d in IDS)
    assert all(_sdk(definition, d) is True for d in IDS)


CASES = [
    # a property mismatch never stops: only a rollout exclusion does
    [condition(prop("plan", ["pro"]), rollout=30), condition()],
    [condition(rollout=50), condition(prop("plan", ["pro"]))],
    [{"properties": [prop("plan", ["free"])]}, condition(rollout=20), condition()],
]


@pytest.mark.parametrize("groups", CASES)
@pytest.mark.parametrize("plan", ["pro", "free"])
def test_differential_cases(groups: list[dict[str, Any]], plan: str) -> None:
    definition = flag("ee", *groups, id=1, early_exit=True)
    people = pd.DataFrame({"distinct_id": IDS, "plan": plan})
    frames = {
        m: evaluate_frame(people, definitions=[definition], mode=m)["ee"].tolist() for m in ("server", "sdk")
    }
    for i, d in enumerate(IDS):
        want = _sdk(definition, d, {"plan": plan})
        for mode in ("server", "sdk"):
            got = evaluate_flags([definition], d, person_properties={"plan": plan}, mode=mode)["ee"].value  # type: ignore[arg-type]
            assert got == want, (mode, d)
            assert frames[mode][i] == want, (mode, d)


def test_sdk_mode_keeps_an_earlier_inconclusive_condition() -> None:
    """posthog-python: an earlier inconclusive condition and then an early exit stay inconclusive."""
    inconclusive = {"properties": [prop("email", "x", "icontains")]}
    definition = flag("ee", inconclusive, condition(rollout=30), condition(), id=1, early_exit=True)
    for d in IDS[:40]:
        want = _sdk(definition, d)
        got = evaluate_flags([definition], d, mode="sdk")["ee"].value
        assert got == want


@pytest.fixture
def client(empty_sandbox: Sandbox) -> Iterator[Client]:
    with Client(
        empty_sandbox.url,
        personal_api_key=empty_sandbox.personal_api_key,
        project_api_key=empty_sandbox.project_api_key,
        project_id=empty_sandbox.project_id,
        progress=False,
    ) as c:
        yield c


def test_sandbox_flags_follow_early_exit(client: Client) -> None:
    client.feature_flags.create("ee", filters=copy.deepcopy(THIRTY_THEN_ALL["filters"]), active=True)
    result = client.simulate(pd.DataFrame({"distinct_id": IDS}), ["ee"], engine="remote")
    sdk = [_sdk(THIRTY_THEN_ALL, d) for d in IDS]
    assert result.frame["ee"].tolist() == sdk
    assert 45 <= result.frame["ee"].sum() <= 75
