"""An operator of another filter type (`in`, `not_in`, `flag_evaluates_to`) on a person filter (issue 28):
before, the whole flag was an error, in both modes, even when an earlier condition decided and neither
reference ever reads the filter. posthog 7.91.1 finds the operator unknown (inconclusive) only when it
reaches it; the service's `match_property` answers a validation error (no match) only when it reaches it
(rust/feature-flags/src/properties/property_matching.rs, the In / NotIn / FlagEvaluatesTo arms). An operator
no one knows ("nope") still fails the flag in server mode: the service cannot even read the definition
(`OperatorType` has no such variant)."""

from __future__ import annotations

import copy
import logging
from typing import Any

import pandas as pd
import pytest

from _flags import condition, definitions, flag, prop
from analytics_nb.flags import FlagDefinitionError, compile_flags, evaluate_flags, evaluate_frame

posthog = pytest.importorskip("posthog")
from posthog import Posthog  # noqa: E402

_CLIENT = Posthog("phc_unreached_test", send=False, sync_mode=True)
logging.getLogger("posthog").setLevel(logging.CRITICAL)
pytestmark = pytest.mark.filterwarnings("ignore:`get_feature_flag` is deprecated:DeprecationWarning")
PRO = {"key": "plan", "operator": "exact", "value": ["pro"], "type": "person"}


def _sdk(flag: dict[str, Any], plan: str) -> Any:
    _CLIENT._update_flag_state(definitions(copy.deepcopy(flag)))
    return _CLIENT.get_feature_flag(
        "f", "u", person_properties={"plan": plan}, only_evaluate_locally=True, send_feature_flag_events=False
    )


@pytest.mark.parametrize("operator", ["in", "not_in", "flag_evaluates_to", "nope"])
@pytest.mark.parametrize("first", [[], [PRO]], ids=["first-always", "first-pro"])
@pytest.mark.parametrize("plan", ["pro", "free"])
def test_sdk_mode_short_circuits_as_the_sdk(operator: str, first: list[dict[str, Any]], plan: str) -> None:
    definition = flag("f", condition(*first), condition(prop("plan", ["pro"], operator)), id=1)
    got = evaluate_flags([definition], "u", person_properties={"plan": plan}, mode="sdk")["f"]
    assert got.value == _sdk(definition, plan)
    frame = evaluate_frame(
        pd.DataFrame({"distinct_id": ["u"], "plan": [plan]}), definitions=[definition], mode="sdk"
    )
    assert (None if pd.isna(frame.loc[0, "f"]) else frame.loc[0, "f"]) == got.value


@pytest.mark.parametrize("operator", ["in", "not_in", "flag_evaluates_to"])
def test_server_mode_reads_the_filter_as_no_match_only_when_reached(operator: str) -> None:
    decided = flag("f", condition(PRO), condition(prop("plan", ["pro"], operator)), id=1)
    assert evaluate_flags([decided], "u", person_properties={"plan": "pro"})["f"].value is True
    reached = evaluate_flags([decided], "u", person_properties={"plan": "free"})["f"]
    assert reached.value is False and reached.reason == "no_condition_match"
    assert compile_flags([decided]).errors == {}
    with pytest.raises(FlagDefinitionError, match="needs type"):
        compile_flags([decided], strict=True)


def test_an_operator_no_one_knows_still_fails_the_flag_for_the_service() -> None:
    definition = flag("f", condition(), condition(prop("plan", ["pro"], "nope")), id=1)
    assert evaluate_flags([definition], "u", person_properties={"plan": "pro"})["f"].reason == "error"
