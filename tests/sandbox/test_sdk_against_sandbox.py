"""The official posthog SDK (7.91.1, test-only) pointed at the sandbox works unchanged: it captures through
`/batch/`, reads flags remotely (`/flags/?v=4`) and through local evaluation (`/flags/definitions`), and every
answer equals what our flag engine gives for the same inputs, over a few hundred seeded persons."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

posthog = pytest.importorskip("posthog")

from analytics_nb.flags import evaluate_flags  # noqa: E402
from analytics_nb.sandbox import Sandbox  # noqa: E402
from analytics_nb.sandbox._resources import persons  # noqa: E402
from analytics_nb.sandbox._resources.feature_flags import local_evaluation_body  # noqa: E402

PERSONS = [f"user-{i:05d}" for i in range(0, 3000, 10)]  # 300 seeded persons


@pytest.fixture(autouse=True)
def _v0_capture(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("POSTHOG_CAPTURE_MODE", raising=False)


def _sdk_client(sb: Sandbox, *, local: bool) -> Any:
    return posthog.Posthog(
        sb.project_api_key,
        host=sb.url,
        secret_key=sb.personal_api_key if local else None,
        poll_interval=3600,
        flush_at=500,
        flush_interval=0.2,
        enable_local_evaluation=local,
        feature_flags_request_timeout_seconds=10,
        max_retries=0,
    )


@pytest.fixture(scope="module")
def definitions(sandbox: Sandbox) -> dict[str, Any]:
    return local_evaluation_body(sandbox.ctx.store, sandbox.project_id)


@pytest.fixture(scope="module")
def remote(sandbox: Sandbox) -> Iterator[Any]:
    client = _sdk_client(sandbox, local=False)
    yield client
    client.shutdown()


@pytest.fixture(scope="module")
def local(sandbox: Sandbox) -> Iterator[Any]:
    client = _sdk_client(sandbox, local=True)
    client.load_feature_flags()
    yield client
    client.shutdown()


def _inputs(
    sb: Sandbox, distinct_id: str
) -> tuple[dict[str, Any], dict[str, str], dict[str, dict[str, Any]]]:
    person = persons.person_properties(sb.ctx.store, sb.project_id, distinct_id)
    company = person.get("company")
    groups = {"company": company} if company else {}
    group_props = (
        {"company": persons.group_properties(sb.ctx.store, sb.project_id, "company", company)}
        if company
        else {}
    )
    return person, groups, group_props


def _engine(definitions: dict[str, Any], distinct_id: str, mode: str, **kw: Any) -> dict[str, Any]:
    results = evaluate_flags(
        definitions["flags"],
        distinct_id,
        group_type_mapping=definitions["group_type_mapping"],
        cohorts=definitions["cohorts"],
        mode=mode,
        **kw,
    )  # type: ignore[arg-type]
    return {k: r.value for k, r in results.items()}


def test_capture_through_batch(sandbox: Sandbox) -> None:
    client = _sdk_client(sandbox, local=False)
    try:
        for i in range(25):
            client.capture("sdk_event", distinct_id=f"sdk-{i}", properties={"n": i, "$set": {"via": "sdk"}})
        client.flush()
    finally:
        client.shutdown()
    frame = sandbox.events()
    mine = frame[frame["event"] == "sdk_event"]
    assert len(mine) == 25
    assert set(mine["endpoint"]) == {"/batch"}
    assert sorted(p["n"] for p in mine["properties"]) == list(range(25))
    assert all(p.get("$lib") == "posthog-python" for p in mine["properties"])
    assert persons.person_properties(sandbox.ctx.store, sandbox.project_id, "sdk-3") == {"via": "sdk"}


def test_remote_flags_equal_the_engine(sandbox: Sandbox, remote: Any, definitions: dict[str, Any]) -> None:
    mismatches = []
    for distinct_id in PERSONS:
        person, groups, group_props = _inputs(sandbox, distinct_id)
        got = remote.get_all_flags(distinct_id, groups=groups)
        expected = _engine(
            definitions,
            distinct_id,
            "server",
            person_properties=person,
            groups=groups,
            group_properties=group_props,
        )
        if got != expected:
            mismatches.append((distinct_id, got, expected))
    assert not mismatches, mismatches[:3]


def test_get_feature_flag_and_payload_remote(
    sandbox: Sandbox, remote: Any, definitions: dict[str, Any]
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for distinct_id in PERSONS[:40]:
            person, groups, group_props = _inputs(sandbox, distinct_id)
            expected = _engine(
                definitions,
                distinct_id,
                "server",
                person_properties=person,
                groups=groups,
                group_properties=group_props,
            )
            for key in ("new-checkout", "beta-feature", "company-dashboard", "onboarding-holdout"):
                value = remote.get_feature_flag(
                    key, distinct_id, groups=groups, send_feature_flag_events=False
                )
                assert value == expected[key], (distinct_id, key)
            payload = remote.get_feature_flag_payload(
                "new-checkout", distinct_id, send_feature_flag_events=False
            )
            if expected["new-checkout"] in ("control", "test"):
                assert payload == {"steps": 3 if expected["new-checkout"] == "control" else 1}
            else:
                assert payload is None


def test_local_evaluation_equals_the_engine_and_the_server(
    sandbox: Sandbox, local: Any, definitions: dict[str, Any]
) -> None:
    assert {f["key"] for f in local.feature_flags} == {f["key"] for f in definitions["flags"]}
    decided = 0
    for distinct_id in PERSONS:
        person, groups, group_props = _inputs(sandbox, distinct_id)
        got = local.get_all_flags(
            distinct_id,
            groups=groups,
            person_properties=person,
            group_properties=group_props,
            only_evaluate_locally=True,
        )
        sdk_mode = _engine(
            definitions,
            distinct_id,
            "sdk",
            person_properties=person,
            groups=groups,
            group_properties=group_props,
        )
        server = _engine(
            definitions,
            distinct_id,
            "server",
            person_properties=person,
            groups=groups,
            group_properties=group_props,
        )
        assert got == {k: v for k, v in sdk_mode.items() if v is not None}, distinct_id
        for key, value in got.items():  # what the SDK decides locally is what the server answers
            assert server[key] == value, (distinct_id, key)
        decided += len(got)
    assert decided > len(PERSONS) * 10  # most flags resolve locally with full person properties


def test_flag_called_events_arrive(sandbox: Sandbox) -> None:
    client = _sdk_client(sandbox, local=False)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            value = client.get_feature_flag("new-checkout", "user-00010")
        client.flush()
    finally:
        client.shutdown()
    frame = sandbox.events()
    called = frame[(frame["event"] == "$feature_flag_called") & (frame["distinct_id"] == "user-00010")]
    assert len(called) >= 1
    props = called.iloc[-1]["properties"]
    assert props["$feature_flag"] == "new-checkout"
    assert props["$feature_flag_response"] == value
    assert json.dumps(props)  # JSON round-trips
