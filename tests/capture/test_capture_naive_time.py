"""Issue 14 item 1: a naive timestamp is read in the kernel's local time zone by default, as the official SDK
reads ``datetime.now()`` (posthog 7.91.1 ``posthog/utils.py`` ``guess_timezone``); ``"utc"`` and ``"raise"``
stay. The kernel's zone is set with ``TZ`` + ``time.tzset()`` (Europe/Berlin: UTC+1 in winter, +2 in summer).
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest

from analytics_nb import Client
from analytics_nb.capture import build_event, capture_frame
from analytics_nb.capture._values import iso_timestamp


@pytest.fixture
def berlin(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "Europe/Berlin")
    time.tzset()
    try:
        yield
    finally:
        monkeypatch.undo()
        time.tzset()


def test_naive_frame_timestamps_are_local_time(berlin: None, empty_sandbox: Any) -> None:
    df = pd.DataFrame(
        {
            "event": ["winter", "summer", "text", "ambiguous"],
            "distinct_id": ["u1", "u2", "u3", "u4"],
            "timestamp": pd.to_datetime(
                ["2026-01-05 12:00:00", "2026-07-05 12:00:00", "2026-01-05 12:00:00", "2026-10-25 02:30:00"]
            ),
        }
    )
    with Client(empty_sandbox.url, project_api_key=empty_sandbox.project_api_key, progress=False) as client:
        report = capture_frame(client, df)
        as_utc = capture_frame(client, df.iloc[:1].assign(event="as-utc"), on_naive_timestamp="utc")
        refused = capture_frame(client, df.iloc[:1].assign(event="refused"), on_naive_timestamp="raise")
    assert report["status"].tolist() == ["sent", "sent", "sent", "refused"]
    assert "daylight-saving" in report.loc[3, "reason"]  # 02:30 happens twice that night: not guessed
    assert as_utc["status"].tolist() == ["sent"] and refused["status"].tolist() == ["refused"]
    stored = empty_sandbox.events().set_index("event")["timestamp"].map(lambda t: pd.Timestamp(t))
    assert stored["winter"] == pd.Timestamp("2026-01-05 11:00:00", tz="UTC")
    assert stored["summer"] == pd.Timestamp("2026-07-05 10:00:00", tz="UTC")
    assert stored["as-utc"] == pd.Timestamp("2026-01-05 12:00:00", tz="UTC")


def test_naive_text_and_single_events_are_local_too(berlin: None) -> None:
    assert iso_timestamp("2026-01-05T12:00:00") == "2026-01-05T11:00:00Z"
    assert iso_timestamp(dt.datetime(2026, 7, 5, 12, 0)) == "2026-07-05T10:00:00Z"
    assert iso_timestamp(dt.datetime(2026, 7, 5, 12, 0), on_naive="utc") == "2026-07-05T12:00:00Z"
    event = build_event("e", "u", timestamp=dt.datetime(2026, 1, 5, 12, 0))
    assert event["timestamp"] == "2026-01-05T11:00:00Z"
    aware = dt.datetime(2026, 1, 5, 12, 0, tzinfo=dt.UTC)
    assert iso_timestamp(aware) == "2026-01-05T12:00:00Z"  # a zone given is always kept


def test_agrees_with_the_official_sdk_for_datetime_now(berlin: None) -> None:
    from posthog.utils import guess_timezone  # the oracle (posthog 7.91.1), never a runtime dependency

    now = dt.datetime.now().replace(microsecond=0)
    sdk = guess_timezone(now).astimezone(dt.UTC).replace(tzinfo=None)
    assert iso_timestamp(now) == sdk.isoformat() + "Z"
