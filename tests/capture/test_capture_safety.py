"""Issue 12 finding 2: capture_frame is exactly-once across re-runs and Ctrl-C.

Row uuids come from the rows (index label + content), so the same frame sent twice never doubles; Ctrl-C
lets batches in flight settle and raises ``CaptureInterrupted`` with the report of what was sent, failed
and not attempted. The interrupt is a real SIGINT delivered to the test process while it waits.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from typing import Any

import numpy as np
import pandas as pd
import pytest

from _clients import client_for
from analytics_nb.capture import ResumedRunWarning, capture_frame


def _events(n: int) -> pd.DataFrame:
    start = pd.Timestamp("2026-01-05 12:00:00", tz="UTC")
    return pd.DataFrame(
        {
            "event": np.where(np.arange(n) % 2 == 0, "view", "click"),
            "distinct_id": [f"user-{i % 37}" for i in range(n)],
            "timestamp": start + pd.to_timedelta(np.arange(n) // 3, unit="s"),  # repeats: same content
            "plan": ["free"] * n,
        },
        index=pd.RangeIndex(1000, 1000 + n),
    )


def test_the_same_frame_resumed_never_doubles(empty_sandbox: Any) -> None:
    df = _events(60)
    df.loc[1001:1002, ["event", "distinct_id", "timestamp"]] = ["view", "user-0", df.loc[1000, "timestamp"]]
    with client_for(empty_sandbox, keys="project") as client:
        first = capture_frame(client, df, batch_size=25)
        # a re-send of the same run (issue 27 #1: separate calls are separate events; a resume is not)
        again = capture_frame(client, df, batch_size=7, resume=first)
        subset = capture_frame(client, df.iloc[::4], resume=first)  # e.g. re-sending only some rows
        reordered = capture_frame(client, df[["plan", "timestamp", "distinct_id", "event"]], resume=first)
        assert client.last_capture_report is reordered
    assert first["uuid"].is_unique  # identical rows (1000-1002) still get their own uuid
    assert again["uuid"].tolist() == first["uuid"].tolist()
    assert subset["uuid"].tolist() == first["uuid"].iloc[::4].tolist()
    assert reordered["uuid"].tolist() == first["uuid"].tolist()
    assert all(u[14] == "8" for u in first["uuid"])  # UUIDv8 (derived), not v7 (random)
    stored = empty_sandbox.events()
    assert len(stored) == 60 and set(stored["uuid"]) == set(first["uuid"])


def test_random_uuids_opt_out(empty_sandbox: Any) -> None:
    df = _events(10)
    with client_for(empty_sandbox, keys="project") as client:
        a = capture_frame(client, df, uuids="random")
        b = capture_frame(client, df, uuids="random")
        with pytest.raises(ValueError, match="uuids="):
            capture_frame(client, df, uuids="sometimes")  # type: ignore[arg-type]
    assert not set(a["uuid"]) & set(b["uuid"])
    assert len(empty_sandbox.events()) == 20


def test_ctrl_c_reports_what_was_sent_and_a_rerun_completes_without_doubles(empty_sandbox: Any) -> None:
    from analytics_nb.errors import CaptureInterrupted

    sb = empty_sandbox
    df = _events(2000)
    fault = sb.faults.add(path="/batch*", delay=0.4)
    timer = threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT))
    with client_for(sb, keys="project") as client:
        timer.start()
        with pytest.raises(CaptureInterrupted) as info:
            capture_frame(client, df, batch_size=100, concurrency=2)
        timer.join()
        report = info.value.report
        assert client.last_capture_report is report
        sb.faults.remove(fault)
        counts = report["status"].value_counts().to_dict()
        assert counts.get("sent", 0) > 0 and counts.get("not_attempted", 0) > 0
        assert sum(counts.values()) == len(df) and list(report.index) == list(df.index)
        assert counts.get("failed", 0) == 0  # batches in flight were let finish: their outcome is known
        assert "not attempted" in str(info.value) and ".report" in str(info.value)
        time.sleep(0.6)  # nothing still in flight lands later
        stored = sb.events()
        assert set(stored["uuid"]) == set(report.loc[report["status"] == "sent", "uuid"])
        with pytest.warns(ResumedRunWarning, match="resumes run"):  # the unfinished run, by itself
            rerun = capture_frame(client, df, batch_size=500)
    # rows the journal shows stored are not sent again; the rest are sent with the run's uuids
    expected = report["status"].replace({"sent": "already_sent", "not_attempted": "sent"})
    assert (rerun["status"] == expected).all()
    assert rerun["uuid"].tolist() == report["uuid"].tolist()
    stored = sb.events()
    assert len(stored) == len(df) and stored["uuid"].is_unique  # nothing doubled


def test_cancelled_async_capture_leaves_its_report(empty_sandbox: Any) -> None:
    import asyncio

    from analytics_nb import AsyncClient
    from analytics_nb.capture import acapture_frame

    sb = empty_sandbox
    fault = sb.faults.add(path="/batch*", delay=0.3)

    async def main() -> Any:
        async with AsyncClient(sb.url, project_api_key=sb.project_api_key, progress=False) as client:
            task = asyncio.ensure_future(acapture_frame(client, _events(1000), batch_size=100, concurrency=2))
            await asyncio.sleep(0.5)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            return client.last_capture_report

    try:
        report = asyncio.run(main())
    finally:
        sb.faults.remove(fault)
    assert report is not None and report.attrs["interrupted"]
    counts = report["status"].value_counts().to_dict()
    assert counts.get("sent", 0) > 0 and counts.get("not_attempted", 0) > 0
    assert counts.get("failed", 0) == 0
    time.sleep(0.4)
    assert set(sb.events()["uuid"]) == set(report.loc[report["status"] == "sent", "uuid"])
