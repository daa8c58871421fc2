"""capture_frame against the sandbox: reports, refusals, flags, faults, exactly-once delivery."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pandas as pd
import pytest

from _clients import client_for
from analytics_nb import AsyncClient, Client
from analytics_nb.capture import acapture_frame, capture_frame


def stored_events(sb: Any) -> pd.DataFrame:
    """The sandbox's captured events."""
    return sb.events()


def events(n: int, *, start: str | None = None) -> pd.DataFrame:
    now = pd.Timestamp.now(tz="UTC").floor("s") if start is None else pd.Timestamp(start, tz="UTC")
    rng = np.random.default_rng(1)
    return pd.DataFrame(
        {
            "event": np.where(np.arange(n) % 2 == 0, "view", "click"),
            "distinct_id": [f"user-{i % 97}" for i in range(n)],
            "timestamp": now - pd.to_timedelta(np.arange(n), unit="s"),
            "plan": pd.Series(rng.choice(["free", "pro"], n), dtype="str"),
            "items": rng.integers(0, 9, n),
            "score": pd.array([None if i % 5 == 0 else i for i in range(n)], dtype="Int64"),
        }
    )


def test_bad_rows_are_reported_and_good_rows_land(empty_sandbox: Any) -> None:
    df = events(10)
    df.index = [f"r{i}" for i in range(10)]
    df.loc["r1", "event"] = ""
    df.loc["r2", "distinct_id"] = None
    df["blob"] = None
    df.loc["r3", "blob"] = "x" * (2 * 1024 * 1024 + 1)
    df["nested"] = [{"a": [np.int64(1), None]}] + [None] * 9
    with client_for(empty_sandbox, keys="project") as client:
        report = capture_frame(client, df, progress=False)
    assert list(report.index) == list(df.index)
    assert list(report.columns) == ["uuid", "event", "distinct_id", "status", "reason", "batch"]
    assert report["status"].tolist() == ["sent", "refused", "refused", "refused"] + ["sent"] * 6
    assert "event name" in report.loc["r1", "reason"]
    assert "distinct_id" in report.loc["r2", "reason"]
    assert "1,000,000-byte limit" in report.loc["r3", "reason"]
    assert report.loc[report["status"] == "sent", "reason"].isna().all()
    assert report["uuid"].notna().all() and report["uuid"].is_unique
    stored = stored_events(empty_sandbox).set_index("uuid")
    sent = report[report["status"] == "sent"]
    assert set(stored.index) == set(sent["uuid"])
    first = stored.loc[report.loc["r0", "uuid"]]
    assert first["properties"]["nested"] == {"a": [1, None]}
    assert "score" not in first["properties"]  # NA dropped
    assert first["properties"]["items"] == int(df.loc["r0", "items"])
    assert first["timestamp"] == df.loc["r0", "timestamp"]


def test_given_uuids_are_kept_and_resending_does_not_double(empty_sandbox: Any) -> None:
    df = events(50)
    with client_for(empty_sandbox, keys="project") as client:
        first = capture_frame(client, df, progress=False, batch_size=7)
        again = capture_frame(client, df.assign(uuid=first["uuid"]), progress=False, batch_size=20)
    assert (first["status"] == "sent").all() and (again["status"] == "sent").all()
    assert first["batch"].max() == 7  # 50 events in batches of 7
    assert again["uuid"].tolist() == first["uuid"].tolist()
    stored = stored_events(empty_sandbox)
    assert len(stored) == 50 and set(stored["uuid"]) == set(first["uuid"])


def test_historical_migration_is_automatic_for_old_events(empty_sandbox: Any) -> None:
    with client_for(empty_sandbox, keys="project") as client:
        old = capture_frame(client, events(5, start="2023-01-01"), progress=False)
        new = capture_frame(client, events(5), progress=False)
        # the same rows again would carry the same (content) uuids and be de-duplicated: fresh ones here
        forced = capture_frame(client, events(5), progress=False, historical_migration=True, uuids="random")
    assert old.attrs["historical_migration"] is True and new.attrs["historical_migration"] is False
    stored = stored_events(empty_sandbox).set_index("uuid")["historical_migration"]
    assert stored.loc[old["uuid"]].all()
    assert not stored.loc[new["uuid"]].any()
    assert stored.loc[forced["uuid"]].all()


def test_naive_timestamps_assumed_utc_or_refused(empty_sandbox: Any) -> None:
    df = pd.DataFrame(
        {
            "event": ["e", "e"],
            "distinct_id": ["a", "b"],
            "timestamp": pd.to_datetime(["2024-05-01 12:00", "2024-05-01 13:00"]),
        }
    )
    with client_for(empty_sandbox, keys="project") as client:
        refused = capture_frame(client, df, progress=False, on_naive_timestamp="raise")
        assumed = capture_frame(client, df, progress=False)
    assert (refused["status"] == "refused").all() and refused["reason"].str.contains("time zone").all()
    stored = stored_events(empty_sandbox)
    assert len(stored) == 2
    assert sorted(stored["timestamp"]) == [
        pd.Timestamp("2024-05-01 12:00", tz="UTC"),
        pd.Timestamp("2024-05-01 13:00", tz="UTC"),
    ]
    assert (assumed["status"] == "sent").all()


def test_batch_failing_for_good_is_reported_not_dropped(empty_sandbox: Any) -> None:
    empty_sandbox.faults.add(path="/batch*", status=500, rate=1.0)
    with client_for(empty_sandbox, max_retries=1, keys="project") as client:
        report = capture_frame(client, events(30), progress=False, batch_size=10, batch_attempts=2)
    assert (report["status"] == "failed").all()
    assert report["reason"].str.contains("500").all()
    assert report["batch"].tolist() == [0] * 10 + [1] * 10 + [2] * 10
    assert len(stored_events(empty_sandbox)) == 0


def test_unknown_project_key_fails_every_row_with_the_reason(empty_sandbox: Any) -> None:
    with Client(empty_sandbox.url, project_api_key="phc_unknownunknownunknown", retry_backoff=0.05) as client:
        report = capture_frame(client, events(25), progress=False, batch_size=10)
    assert (report["status"] == "failed").all()
    assert report["reason"].str.contains("401").all()
    assert "phc_unknown" not in " ".join(report["reason"])  # the key never shows


def test_async_client(empty_sandbox: Any) -> None:
    async def main() -> pd.DataFrame:
        async with AsyncClient(empty_sandbox.url, project_api_key=empty_sandbox.project_api_key) as client:
            report = await acapture_frame(client, events(40), progress=False, batch_size=15)
            same = await client.capture_frame(events(3), progress=False)
            assert (same["status"] == "sent").all()
            return report

    report = asyncio.run(main())
    assert (report["status"] == "sent").all()
    assert len(stored_events(empty_sandbox)) == 43


@pytest.mark.slow
def test_100k_events_under_faults_arrive_exactly_once(empty_sandbox: Any) -> None:
    sb = empty_sandbox
    sb.faults.add(path="/batch*", status=503, rate=0.10)
    sb.faults.add(path="/batch*", reset=True, rate=0.05)
    sb.faults.add(path="/batch*", delay=0.3, rate=0.05)
    sb.faults.add(path="/batch*", delay=2.5, rate=0.02)  # longer than the client's timeout: a retry races it
    n = 100_000
    df = events(n)
    with client_for(sb, timeout=2.0, max_retries=6, keys="project") as client:
        report = capture_frame(client, df, progress=False, batch_size=2000, concurrency=4)
    assert report["status"].value_counts().to_dict() == {"sent": n}
    assert report["uuid"].is_unique
    stored = stored_events(sb)
    assert len(stored) == n
    assert stored["uuid"].is_unique
    assert set(stored["uuid"]) == set(report["uuid"])
    requests = sb.requests()
    batch_calls = requests[requests["path"].str.startswith("/batch")]
    assert len(batch_calls) > n // 2000  # faults really forced retries


def test_empty_frame_sends_nothing(empty_sandbox: Any) -> None:
    with client_for(empty_sandbox, keys="project") as client:
        report = capture_frame(client, events(0), progress=False)
    assert len(report) == 0 and list(report.columns) == [
        "uuid",
        "event",
        "distinct_id",
        "status",
        "reason",
        "batch",
    ]
    requests = empty_sandbox.requests()
    assert not requests["path"].str.startswith("/batch").any()


def test_progress_bar_counts_every_event(
    empty_sandbox: Any, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    with client_for(empty_sandbox, keys="project") as client:
        report = capture_frame(client, events(30), batch_size=10, progress=True)
    assert (report["status"] == "sent").all()
    err = capsys.readouterr().err
    assert "capture" in err and "/30 " in err  # a bar sized to the 30 events was drawn


def test_a_batch_the_service_refuses_is_split_to_find_the_bad_event(empty_sandbox: Any) -> None:
    from analytics_nb.capture._bulk import _send_prepared
    from analytics_nb.capture._events import prepare_frame

    prepared = prepare_frame(events(9))
    prepared.names[3] = ""  # slips past the local checks: the service itself answers 400 for this batch
    with client_for(empty_sandbox, keys="project") as client:
        run = client.run(
            _send_prepared(
                client,
                prepared,
                batch_size=9,
                max_batch_bytes=5_000_000,
                concurrency=2,
                gzip=True,
                historical=False,
                progress=False,
                attempts=1,
            )
        )
    assert run.status == ["sent"] * 3 + ["refused"] + ["sent"] * 5
    assert "empty event name" in str(run.reason[3])
    stored = stored_events(empty_sandbox)
    assert set(stored["uuid"]) == {u for i, u in enumerate(prepared.uuids) if i != 3}


def test_attributed_frame_round_trips_through_capture(empty_sandbox: Any) -> None:
    from analytics_nb.capture import attribute

    outcomes = pd.DataFrame(
        {
            "distinct_id": ["user-1", "user-2"],
            "beta": pd.array([True, pd.NA], dtype="boolean"),
            "exp": pd.Series(["test", False], dtype=object),
        }
    )
    df = attribute(events(4), outcomes)
    with client_for(empty_sandbox, keys="project") as client:
        report = capture_frame(client, df, progress=False)
    stored = stored_events(empty_sandbox).set_index("uuid")["properties"]
    props = [stored[u] for u in report["uuid"]]
    assert [p.get("$feature/exp") for p in props] == [None, "test", False, None]
    assert [p.get("$feature/beta") for p in props] == [None, True, None, None]
    assert [p.get("$active_feature_flags") for p in props] == [None, ["beta", "exp"], None, None]
