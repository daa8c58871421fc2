"""A flag the service could not evaluate (``failed: true``, since Feb 2026) is NA with its reason in remote
simulation, decide answers, decide frames and engine="both" comparisons: never False.

Facts: PostHog ``rust/feature-flags/src/api/types.rs`` (``FlagDetails::create_error``: ``enabled: false,
failed: true``; ``LegacyFlagsResponse::from_response`` writes it as ``false`` in the legacy map);
posthog-python 7.91.1 ``request.py`` posts ``/flags/?v=4`` and ``types.py`` drops a failed record's value.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import pandas as pd
import pytest

from analytics_nb import Client
from analytics_nb.frames import decide_frame
from analytics_nb.sandbox import Sandbox
from analytics_nb.simulation import FailedFlagsWarning, grid, simulate


@pytest.fixture
def failing(sandbox: Sandbox) -> Iterator[Sandbox]:
    sandbox.set_flag_failures(["new-checkout"])
    try:
        yield sandbox
    finally:
        sandbox.set_flag_failures([])


def _people() -> pd.DataFrame:
    return grid({"country": ["US", "DE"], "plan": ["free", "pro"]}, ids_per_cell=3, seed=5)


def test_remote_failed_flag_is_na_with_its_reason_and_a_counted_warning(
    client: Client, failing: Sandbox
) -> None:
    people = _people()
    failing.clear_requests()
    with pytest.warns(FailedFlagsWarning, match=r"12 flag value\(s\) \(new-checkout: 12\)"):
        result = simulate(people, engine="remote", client=client, reasons=True)
    frame = result.frame
    assert frame["new-checkout"].isna().all()  # never False
    assert (frame["new-checkout:reason"] == "timeout_error").all()
    assert frame["error"].str.contains("new-checkout [timeout_error", regex=False).all()
    assert frame["beta-feature"].notna().all()
    assert result.summary().set_index("flag").loc["new-checkout", "unknown"] == len(people)
    log = failing.requests()
    evaluated = log[log["method"] == "POST"]
    assert len(evaluated) == len(people)
    assert (evaluated["path"] == "/flags/").all() and (evaluated["query"] == "v=4").all()  # as SDK 7.91.1


def test_both_engines_never_count_a_failed_flag_as_a_disagreement_on_false(
    client: Client, failing: Sandbox
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FailedFlagsWarning)
        result = simulate(_people(), ["new-checkout"], engine="both", client=client)
    diff = result.differences
    assert diff is not None and len(diff) == len(_people())
    assert diff["remote"].isna().all()
    assert (diff["cause"] == "failed on the service").all()
    assert diff["detail"].str.contains("timeout_error").all()


def test_decide_answers_none_for_a_failed_flag_on_flags_and_on_legacy_decide(
    client: Client, failing: Sandbox
) -> None:
    answer = client.decide("user-00002")
    assert answer.get_value("new-checkout") is None and answer.feature_flags["new-checkout"] is None
    assert answer.failures["new-checkout"].startswith("timeout_error")
    assert answer.flags is not None and answer.flags["new-checkout"].failed is True
    assert answer.get_value("beta-feature") is not None
    legacy = client.decide("user-00002", endpoint="decide")
    assert legacy.errors_while_computing_flags is True
    assert legacy.get_value("new-checkout") is None  # the map said false; that false is not an answer
    assert "new-checkout" in legacy.failures
    assert False not in legacy.feature_flags.values()
    frame = decide_frame(answer)
    row = frame.set_index("key").loc["new-checkout"]
    assert pd.isna(row["value"]) and bool(row["failed"]) is True and row["reason"] == "timeout_error"


def test_without_failures_nothing_is_na_or_warned(client: Client) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", FailedFlagsWarning)
        result = simulate(_people(), engine="remote", client=client)
    assert result.frame["new-checkout"].notna().all() and result.frame["error"].isna().all()
    answer = client.decide("user-00002")
    assert answer.failures == {} and answer.get_value("new-checkout") is not None
