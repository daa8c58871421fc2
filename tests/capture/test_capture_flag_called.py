"""$feature_flag_called: SDK property names, per-client dedup with an LRU bound, and the frame variant."""

from __future__ import annotations

import asyncio
from typing import Any

import pandas as pd
import pytest

from _clients import client_for
from _flags import flag
from analytics_nb import AsyncClient, Client
from analytics_nb.capture import aflag_called, flag_called, flag_called_cache, flag_called_frame
from analytics_nb.models import DecideResponse


def stored_events(sb: Any) -> pd.DataFrame:
    """The sandbox's captured events."""
    return sb.events()


def flag_events(sb: Any) -> pd.DataFrame:
    ev = stored_events(sb)
    return ev[ev["event"] == "$feature_flag_called"].reset_index(drop=True)


def test_properties_match_the_official_sdk(empty_sandbox: Any) -> None:
    with client_for(empty_sandbox, keys="project") as client:
        sent = flag_called(
            client,
            "u1",
            "checkout",
            "test",
            payload='{"x": 1}',
            flag_id=7,
            version=3,
            reason="Matched condition set 1",
            request_id="req-1",
            groups={"company": "acme"},
        )
    assert sent is True
    (props,) = flag_events(empty_sandbox)["properties"].tolist()
    assert props == {
        "$feature_flag": "checkout",
        "$feature_flag_response": "test",
        "locally_evaluated": False,
        "$feature/checkout": "test",
        "$feature_flag_payload": '{"x": 1}',
        "$feature_flag_request_id": "req-1",
        "$feature_flag_version": 3,
        "$feature_flag_id": 7,
        "$feature_flag_reason": "Matched condition set 1",
        "$groups": {"company": "acme"},
    }


def test_dedup_per_distinct_id_key_response_groups(empty_sandbox: Any) -> None:
    with client_for(empty_sandbox, keys="project") as client:
        assert flag_called(client, "u1", "beta", True) is True
        assert flag_called(client, "u1", "beta", True) is False  # same again: not sent
        assert flag_called(client, "u1", "beta", False) is True  # different response
        assert flag_called(client, "u2", "beta", True) is True  # different person
        assert flag_called(client, "u1", "beta", True, groups={"company": "acme"}) is True  # different groups
        assert flag_called(client, "u1", "beta", True, groups={"company": "acme"}) is False
        assert flag_called(client, "u1", "beta", "1") is True  # a variant "1" is not True
        assert len(flag_called_cache(client)) == 5
        with client_for(empty_sandbox, keys="project") as other:  # dedup is per client
            assert flag_called(other, "u1", "beta", True) is True
    assert len(flag_events(empty_sandbox)) == 6


def test_lru_bound_is_respected(empty_sandbox: Any) -> None:
    with client_for(empty_sandbox, keys="project") as client:
        flag_called_cache(client).maxsize = 3
        for i in range(5):
            assert flag_called(client, f"u{i}", "beta", True) is True
        assert len(flag_called_cache(client)) == 3
        assert flag_called(client, "u4", "beta", True) is False  # still remembered
        assert flag_called(client, "u0", "beta", True) is True  # evicted, so sent again
    assert len(flag_events(empty_sandbox)) == 6


def test_failed_send_is_not_remembered(empty_sandbox: Any) -> None:
    empty_sandbox.faults.add(path="/capture*", status=500, rate=1.0)
    with client_for(empty_sandbox, keys="project") as client:
        with pytest.raises(Exception, match="500"):
            flag_called(client, "u1", "beta", True)
        empty_sandbox.faults.clear()
        assert flag_called(client, "u1", "beta", True) is True
    assert len(flag_events(empty_sandbox)) == 1


def test_decide_result_as_response(sandbox: Any) -> None:
    with Client(sandbox.url, project_api_key=sandbox.project_api_key) as client:
        decide = client.decide("user-0002")
        key = next(iter(decide.feature_flags))
        assert flag_called(client, "user-0002", key, decide) is True
    got = flag_events(sandbox)
    props = got[got["distinct_id"] == "user-0002"]["properties"].iloc[-1]
    assert props["$feature_flag_response"] == decide.feature_flags[key]
    assert props[f"$feature/{key}"] == decide.feature_flags[key]


def test_decide_details_fill_id_version_reason() -> None:
    from analytics_nb.capture._flag_called import _from_decide

    decide = DecideResponse.model_validate(
        {
            "flags": {
                "beta": {
                    "key": "beta",
                    "enabled": True,
                    "variant": None,
                    "reason": {
                        "code": "condition_match",
                        "condition_index": 0,
                        "description": "Matched condition set 1",
                    },
                    "metadata": {"id": 12, "version": 4, "payload": '{"a":1}'},
                }
            },
            "requestId": "r-9",
        }
    )
    kw: dict[str, Any] = {"payload": None, "request_id": None}
    assert _from_decide(decide, "beta", kw) is True
    assert kw == {
        "payload": {"a": 1},  # decoded, as posthog 7.91.1 puts it on the event (types._parse_flag_payload)
        "request_id": "r-9",
        "flag_id": 12,
        "version": 4,
        "reason": "Matched condition set 1",
        "has_experiment": None,  # not reported by this answer: no $feature_flag_has_experiment
    }


def test_async_client_flag_called(empty_sandbox: Any) -> None:
    async def main() -> list[bool]:
        async with AsyncClient(empty_sandbox.url, project_api_key=empty_sandbox.project_api_key) as client:
            first = await aflag_called(client, "u1", "beta", True)
            second = await client.flag_called("u1", "beta", True)
            return [first, second]

    assert asyncio.run(main()) == [True, False]


def test_flag_called_frame_sends_each_outcome_once(empty_sandbox: Any) -> None:
    sim = pd.DataFrame(
        {
            "distinct_id": ["u1", "u2", "u1"],
            "group:company": ["acme", None, "acme"],
            "beta": pd.array([True, pd.NA, True], dtype="boolean"),
            "checkout": pd.Series(["test", False, "test"], dtype=object),
            "checkout:payload": pd.Series(['{"p": 1}', pd.NA, '{"p": 1}'], dtype=object),
            "checkout:reason": pd.Series(
                ["condition_match", "out_of_rollout_bound", "condition_match"], dtype=object
            ),
            "error": pd.Series([pd.NA] * 3, dtype=object),
        }
    )
    defs = [{"key": "beta", "id": 1, "version": 2}, {"key": "checkout", "id": 5, "version": 1}]
    with client_for(empty_sandbox, keys="project") as client:
        report = flag_called_frame(client, sim, defs, progress=False)
        again = flag_called_frame(client, sim, ["beta"], progress=False)
    assert list(report.columns) == [
        "row",
        "distinct_id",
        "key",
        "response",
        "uuid",
        "status",
        "reason",
        "batch",
    ]
    assert report["status"].tolist() == ["sent", "skipped", "skipped", "sent", "sent", "skipped"]
    assert report.loc[1, "reason"] == "the flag's value is unknown (NA) here"
    assert report.loc[2, "reason"] == "already reported by this client"
    assert (again["status"] == "skipped").all()
    got = flag_events(empty_sandbox).set_index("uuid")
    assert len(got) == 3
    sent_checkout = got.loc[report.loc[3, "uuid"], "properties"]
    assert sent_checkout["$feature_flag_payload"] == '{"p": 1}'
    assert sent_checkout["$feature_flag_id"] == 5 and sent_checkout["$feature_flag_version"] == 1
    assert sent_checkout["$feature_flag_reason"] == "condition_match"
    assert sent_checkout["$groups"] == {"company": "acme"}
    assert sent_checkout["locally_evaluated"] is True
    beta = got.loc[report.loc[0, "uuid"], "properties"]
    assert beta["$feature_flag_response"] is True and "$feature_flag_payload" not in beta


def test_flag_called_frame_from_a_remote_simulation(sandbox: Any) -> None:
    with Client(
        sandbox.url, project_api_key=sandbox.project_api_key, personal_api_key=sandbox.personal_api_key
    ) as client:
        people = pd.DataFrame({"distinct_id": ["sim-a", "sim-b"], "plan": ["pro", "free"]})
        sim = client.simulate(people, ["beta-feature"], engine="remote", progress=False)
        report = flag_called_frame(client, sim, progress=False)
    assert report["key"].tolist() == ["beta-feature", "beta-feature"]
    assert (report["status"] == "sent").all()
    got = flag_events(sandbox).set_index("uuid").loc[report["uuid"], "properties"].tolist()
    assert [p["locally_evaluated"] for p in got] == [False, False]
    assert [p["$feature_flag_response"] for p in got] == [bool(v) for v in sim.frame["beta-feature"]]


def test_missing_flag_is_reported_as_null(empty_sandbox: Any) -> None:
    with client_for(empty_sandbox, keys="project") as client:
        assert flag_called(client, "u1", "no-such-flag", None) is True
        assert flag_called(client, "u1", "no-such-flag", None) is False
    (props,) = flag_events(empty_sandbox)["properties"].tolist()
    assert props["$feature_flag_response"] is None and props["$feature/no-such-flag"] is None


def test_flag_called_frame_from_category_payload_and_reason_columns(empty_sandbox: Any) -> None:
    """An engine result's payload and reason columns are ``category`` (missing = NaN): a missing payload or
    reason is left out of the event, never sent as NaN or "nan"."""
    from analytics_nb.flags import evaluate_frame

    flags = [flag("checkout", id=5, variants={"test": 50, "control": 50}, payloads={"test": '{"p": 1}'})]
    people = pd.DataFrame({"distinct_id": [f"cat-{i}" for i in range(12)]})
    sim = evaluate_frame(people, definitions=flags, payloads=True, reasons=True)
    assert sim["checkout:payload"].dtype == "category" and sim["checkout:reason"].dtype == "category"
    assert sim["checkout"].eq("control").any() and sim["checkout"].eq("test").any()
    with client_for(empty_sandbox, keys="project") as client:
        report = flag_called_frame(client, sim, flags, progress=False)
    assert (report["status"] == "sent").all()
    got = flag_events(empty_sandbox).set_index("uuid")
    for uuid, value in zip(report["uuid"], sim["checkout"], strict=True):
        props = got.loc[uuid, "properties"]
        assert props["$feature_flag_response"] == value
        assert props["$feature_flag_reason"] == "condition_match"
        if value == "test":
            assert props["$feature_flag_payload"] == '{"p": 1}'
        else:
            assert "$feature_flag_payload" not in props, props


def test_frame_checks_are_stamped_and_raise_no_missing_timestamp_warning(empty_sandbox: Any) -> None:
    """flag_called_frame stamps each $feature_flag_called with the time of the report (as the SDKs stamp it
    when code reads a flag); before, the events had no timestamp and capture warned for every one of them."""
    import datetime as dt
    import warnings

    from analytics_nb.capture import MissingTimestampWarning

    outcomes = pd.DataFrame({"distinct_id": ["a", "b"], "beta": pd.array([True, False], dtype="boolean")})
    before = dt.datetime.now(dt.UTC)
    with client_for(empty_sandbox, keys="project") as client, warnings.catch_warnings():
        warnings.simplefilter("error", MissingTimestampWarning)
        report = flag_called_frame(client, outcomes, ["beta"])
    assert report["status"].tolist() == ["sent", "sent"]
    stamps = pd.to_datetime(flag_events(empty_sandbox)["timestamp"], utc=True)
    assert len(stamps) == 2
    assert (stamps >= pd.Timestamp(before).floor("s")).all()
