"""Differential test: the ``$feature_flag_called`` event ``flag_called`` sends from a ``/flags`` answer
carries exactly the properties posthog-python 7.91.1 sends for the same flag read against the same sandbox
(the SDK's own payload, captured through the sandbox's ``/batch/``), failed flags included."""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

posthog = pytest.importorskip("posthog")

from analytics_nb import Client  # noqa: E402
from analytics_nb.capture import UnknownFlagKeyWarning  # noqa: E402
from analytics_nb.sandbox import Sandbox  # noqa: E402

#: Per-request values: compared by type, not value (each read gets its own request id and time).
PER_REQUEST = {"$feature_flag_request_id": str, "$feature_flag_evaluated_at": int}


@pytest.fixture(autouse=True)
def _v0_capture(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("POSTHOG_CAPTURE_MODE", raising=False)


@pytest.fixture
def sdk(sandbox: Sandbox) -> Iterator[Any]:
    client = posthog.Posthog(
        sandbox.project_api_key,
        host=sandbox.url,
        flush_at=1,
        flush_interval=0.05,
        enable_local_evaluation=False,
        feature_flags_request_timeout_seconds=10,
        max_retries=0,
    )
    yield client
    client.shutdown()


@pytest.fixture
def ours(sandbox: Sandbox) -> Iterator[Client]:
    with Client(
        sandbox.url,
        project_api_key=sandbox.project_api_key,
        personal_api_key=sandbox.personal_api_key,
        project_id=sandbox.project_id,
        progress=False,
    ) as c:
        yield c


def _flag_called(sb: Sandbox, distinct_id: str, key: str, timeout: float = 10.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ev = sb.events()
        if not ev.empty:
            hits = ev[(ev["event"] == "$feature_flag_called") & (ev["distinct_id"] == distinct_id)]
            for props in hits["properties"]:
                if props.get("$feature_flag") == key:
                    return dict(props)
        time.sleep(0.05)
    raise AssertionError(f"no $feature_flag_called for {distinct_id}/{key}")


def _flag_part(props: dict[str, Any]) -> dict[str, Any]:
    """The flag properties (the SDK also adds its library context: $lib, $lib_version, $python_*...)."""
    return {k: v for k, v in props.items() if k.startswith("$feature") or k == "locally_evaluated"}


def _compare(sdk_props: dict[str, Any], our_props: dict[str, Any]) -> None:
    sdk_part, our_part = _flag_part(sdk_props), _flag_part(our_props)
    assert set(our_part) == set(sdk_part), (sorted(set(sdk_part) ^ set(our_part)), sdk_part, our_part)
    for key, kind in PER_REQUEST.items():
        if key in sdk_part:
            assert isinstance(sdk_part.pop(key), kind) and isinstance(our_part.pop(key), kind)
    assert our_part == sdk_part


@pytest.mark.parametrize(
    ("distinct_id", "key", "answered"),
    [
        ("user-00010", "new-checkout", True),
        ("user-00020", "beta-feature", True),
        ("user-00025", "pricing-page-experiment", True),
        ("user-00030", "sunset-banner", True),  # inactive: answered false (flag_disabled)
        ("user-00035", "new-chekout", False),  # no such flag: flag_missing, no metadata
    ],
)
def test_flag_called_from_a_flags_answer_matches_the_sdk(
    sandbox: Sandbox, sdk: Any, ours: Client, distinct_id: str, key: str, answered: bool
) -> None:
    sdk.get_feature_flag(key, distinct_id)
    sdk.flush()
    sdk_props = _flag_called(sandbox, distinct_id, key)
    # 7.91.1 sends it when the answer reports it (metadata.has_experiment), for an answered flag only
    assert ("$feature_flag_has_experiment" in sdk_props) is answered
    mine = f"{distinct_id}-ours"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnknownFlagKeyWarning)  # the typo'd key: sent anyway, as the SDK does
        assert ours.flag_called(mine, key, ours.decide(distinct_id)) is True
    _compare(sdk_props, _flag_called(sandbox, mine, key))


def test_a_failed_flag_reads_as_the_sdk_reports_it(sandbox: Sandbox, sdk: Any, ours: Client) -> None:
    sandbox.set_flag_failures(["new-checkout"])
    try:
        assert sdk.get_feature_flag("new-checkout", "user-00040") is None
        sdk.flush()
        sdk_props = _flag_called(sandbox, "user-00040", "new-checkout")
        answer = ours.decide("user-00040")
    finally:
        sandbox.set_flag_failures([])
    assert sdk_props["$feature_flag_response"] is None
    assert "evaluation_failed" in sdk_props["$feature_flag_error"]
    ours.flag_called("user-00040-ours", "new-checkout", answer)
    _compare(sdk_props, _flag_called(sandbox, "user-00040-ours", "new-checkout"))


def test_a_value_passed_for_a_flag_that_does_not_exist_is_sent_as_the_sdk_reads_it(
    sandbox: Sandbox, sdk: Any, ours: Client
) -> None:
    # issue 37 #8: the warning said "with $feature_flag_error 'flag_missing'", but the event carried the
    # value passed (True) and no error; the SDK reads a flag that does not exist as None, flag_missing
    assert sdk.get_feature_flag("new-chekout", "user-00045") is None
    sdk.flush()
    sdk_props = _flag_called(sandbox, "user-00045", "new-chekout")
    with pytest.warns(UnknownFlagKeyWarning, match="null \\$feature_flag_response and \\$feature_flag_error"):
        assert ours.flag_called("user-00045-ours", "new-chekout", True) is True
    stored = _flag_called(sandbox, "user-00045-ours", "new-chekout")
    assert stored["$feature_flag_error"] == "flag_missing" and stored["$feature_flag_response"] is None
    assert stored["$feature/new-chekout"] is None
    # the SDK's read of a missing flag has its /flags request id and time; a value passed has none
    _compare({k: v for k, v in sdk_props.items() if k not in PER_REQUEST}, stored)
