"""``test_evaluation`` (PostHog explains one person's answer) served by the sandbox, called by the client, and
``SimulationResult.verify`` checking a sample of rows against it.

The endpoint: posthog-notes §11, PostHog/posthog #55149 (body ``distinct_id`` / ``person_id``, optional
``timestamp`` and ``groups``; answer ``result``, ``reason``, ``condition_index``, ``person_properties``,
``evaluation_distinct_id``, per condition and property ``matched`` / ``actual_value`` / ``explanation``).
"""

from __future__ import annotations

import datetime as dt

import pandas as pd
import pytest

from analytics_nb import Client
from analytics_nb.errors import NotFoundError, PostHogError
from analytics_nb.sandbox import Sandbox
from analytics_nb.sandbox._resources.demo_flags import demo_persons
from analytics_nb.simulation import SimulationInputError, simulate

EXPLAINED = [
    "beta-feature",
    "new-checkout",
    "paid-upsell",
    "power-users",
    "gradual-rollout",
    "legacy-accounts",
]


@pytest.fixture(scope="module")
def flag_ids(client: Client) -> dict[str, int]:
    return {f.key: int(f.id) for f in client.feature_flags.list() if f.id is not None}


def _stored(n: int) -> pd.DataFrame:
    """The first ``n`` demo persons as property sets carrying their stored properties."""
    return pd.DataFrame([{"distinct_id": did, **props} for did, props in demo_persons()[:n]])


def test_test_evaluation_answers_as_flags_and_explains_each_condition(
    client: Client, flag_ids: dict[str, int]
) -> None:
    seen_excluded = seen_matched = 0
    for did, props in demo_persons()[:25]:
        flags = client.decide(did).feature_flags
        for key in EXPLAINED:
            answer = client.feature_flags.test_evaluation(flag_ids[key], distinct_id=did)
            assert answer.flag_key == key and answer.evaluation_distinct_id == did
            assert answer.result == flags[key], (did, key)
            assert answer.person_properties == props
            matched = [c.index for c in answer.conditions if c.matched]
            if answer.result is False:
                assert matched == []
            else:
                assert answer.condition_index in matched and matched[0] == answer.condition_index
            for cond in answer.conditions:
                assert cond.rollout_excluded == (cond.properties_matched and not cond.matched)
                seen_excluded += bool(cond.rollout_excluded)
                for p in cond.properties:
                    assert p.actual_value == props.get(p.key)
                    seen_matched += bool(p.matched)
                if cond.properties_matched:
                    assert all(p.matched for p in cond.properties)
    assert seen_excluded and seen_matched  # the sample meets both kinds


def test_test_evaluation_refusals(client: Client, flag_ids: dict[str, int]) -> None:
    did = demo_persons()[0][0]
    with pytest.raises(NotFoundError):
        client.feature_flags.test_evaluation(flag_ids["beta-feature"], distinct_id="never-seen-person")
    with pytest.raises(NotFoundError):
        client.feature_flags.test_evaluation(999_999, distinct_id=did)
    past = (dt.datetime.now(dt.UTC) - dt.timedelta(days=30)).isoformat()
    with pytest.raises(PostHogError, match="build person properties"):
        client.feature_flags.test_evaluation(flag_ids["beta-feature"], distinct_id=did, timestamp=past)
    now = client.feature_flags.test_evaluation(
        flag_ids["beta-feature"], distinct_id=did, timestamp=dt.datetime.now(dt.UTC).isoformat()
    )
    assert now.flag_key == "beta-feature"
    with pytest.raises(ValueError, match="distinct_id= or person_id="):
        client.feature_flags.test_evaluation(flag_ids["beta-feature"])


def test_verify_agrees_on_rows_carrying_the_stored_persons(client: Client) -> None:
    result = client.simulate(_stored(200), EXPLAINED, engine="local", missing_columns="not_set")
    check = result.verify(n=30)
    assert check.mismatches.empty, check.mismatches.to_string()
    assert len(check.checks) == 30 * len(EXPLAINED)
    assert set(check.checks["status"]) == {"agree"}
    assert repr(check).startswith("verify: 30 rows x 6 flags = 180 checks") and "180 agree" in repr(check)


def test_verify_says_when_the_rows_are_not_the_stored_persons(client: Client) -> None:
    sets = _stored(120)
    sets["country"] = sets["country"].map({"US": "DE", "DE": "US", "CA": "FR", "FR": "CA"}).fillna("US")
    result = client.simulate(sets, ["new-checkout"], engine="local", missing_columns="not_set")
    check = result.verify(n=60)
    assert not check.mismatches.empty
    assert check.mismatches["cause"].str.contains("the row's country differ").all()
    assert {"row", "distinct_id", "flag", "simulated", "posthog", "explanation"} <= set(
        check.mismatches.columns
    )


def test_verify_counts_persons_posthog_does_not_have(client: Client) -> None:
    sets = pd.DataFrame({"distinct_id": [f"fresh-{i}" for i in range(8)], "country": ["US"] * 8})
    result = client.simulate(sets, ["new-checkout"], engine="local", missing_columns="not_set")
    check = result.verify(n=8)
    assert check.mismatches.empty and set(check.checks["status"]) == {"person not found"}
    assert "8 person not found" in check.summary


def test_verify_needs_a_client(sandbox: Sandbox, demo_definitions: object) -> None:
    result = simulate(_stored(5), ["beta-feature"], engine="local", definitions=demo_definitions)
    with pytest.raises(SimulationInputError, match="needs client="):
        result.verify()
