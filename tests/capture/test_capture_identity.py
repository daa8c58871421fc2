"""Issue 27 finding 1: exactly once *and* never merged.

Content-only uuids (index label, event, distinct_id, timestamp, properties) merged genuinely different
events sent by separate calls. Now a uuid is the row's slot keyed with the run key: separate runs never
share one, a resume of the same run (``resume=report``, or automatically for an unfinished run found in the
journal) re-derives the same uuids. Each case of the finding fails on the content-only uuids. Since issue 37
a repeated call of a *finished* run sends nothing by default and says so (``AlreadySentWarning``); the
identical events of these cases are sent on purpose with ``again=True``.
"""

from __future__ import annotations

import warnings
from typing import Any

import pandas as pd
import pytest

from _clients import client_for
from analytics_nb.capture import (
    AlreadySentWarning,
    MissingTimestampWarning,
    ResumedRunWarning,
    capture_frame,
)


def _click(second: str = "2026-11-20T10:00:00Z") -> pd.DataFrame:
    return pd.DataFrame(
        {"event": ["click"], "distinct_id": ["ada"], "timestamp": [pd.Timestamp(second)], "button": ["buy"]}
    )


def test_the_same_click_twice_in_one_second_as_two_frames_is_two_events(empty_sandbox: Any) -> None:
    with client_for(empty_sandbox, keys="project") as client:
        first = capture_frame(client, _click())
        second = capture_frame(client, _click(), again=True)  # a second click, said so
    assert (first["status"] == "sent").all() and (second["status"] == "sent").all()
    assert first["uuid"].iloc[0] != second["uuid"].iloc[0]
    assert first.attrs["run_key"] != second.attrs["run_key"]
    assert len(empty_sandbox.events()) == 2  # stored 1 of 2 with content-only uuids


def test_a_frame_without_timestamps_sent_again_is_new_events_and_warns(empty_sandbox: Any) -> None:
    df = pd.DataFrame({"event": ["signup", "login"], "distinct_id": ["ada", "grace"]})
    with client_for(empty_sandbox, keys="project") as client:
        with pytest.warns(MissingTimestampWarning, match="2 of 2 events have no timestamp") as caught:
            first = capture_frame(client, df)
        assert [w.message.count for w in caught if isinstance(w.message, MissingTimestampWarning)] == [2]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            second = capture_frame(client, df, resume=False)  # the next day's send: a separate call
    assert not set(first["uuid"]) & set(second["uuid"])
    assert len(empty_sandbox.events()) == 4  # stored 2 of 4 with content-only uuids


def test_two_chunks_whose_index_restarts_at_zero_are_all_stored(empty_sandbox: Any) -> None:
    frame = pd.DataFrame(
        {
            "event": ["view"] * 200,
            "distinct_id": [f"u{i % 10}" for i in range(200)],
            "timestamp": pd.Timestamp("2026-11-20T10:00:00Z")
            + pd.to_timedelta([i % 100 for i in range(200)], "s"),
        }
    )  # rows i and i+100 are alike: one event each, twice
    first, second = frame.iloc[:100].reset_index(drop=True), frame.iloc[100:].reset_index(drop=True)
    with client_for(empty_sandbox, keys="project") as client, warnings.catch_warnings():
        a = capture_frame(client, first)
        b = capture_frame(client, second, again=True)  # rows alike a's: new events, said so
    assert (a["status"] == "sent").all() and (b["status"] == "sent").all()
    assert len(empty_sandbox.events()) == 200  # stored 100 of 200 with content-only uuids


def test_a_resume_with_the_report_or_its_key_never_doubles(empty_sandbox: Any) -> None:
    df = pd.concat([_click(), _click("2026-11-20T10:00:01Z")], ignore_index=True)
    with client_for(empty_sandbox, keys="project") as client:
        first = capture_frame(client, df)
        key = first.attrs["run_key"]
        again = capture_frame(client, df, resume=first)
        subset = capture_frame(client, df.iloc[1:], resume=key)
        with pytest.raises(ValueError, match="not a run key"):
            capture_frame(client, df, resume="yesterday")
        with pytest.raises(ValueError, match="without a run key"):
            capture_frame(client, df, resume=pd.DataFrame())
        with pytest.raises(ValueError, match="uuids='content'"):
            capture_frame(client, df, uuids="random", resume=key)
    assert again["uuid"].tolist() == first["uuid"].tolist() and again.attrs["resumed"]
    assert subset["uuid"].tolist() == first["uuid"].iloc[1:].tolist()
    assert again.attrs["run_key"] == key
    assert len(empty_sandbox.events()) == 2


def test_a_resume_from_another_client_reuses_the_run(empty_sandbox: Any) -> None:
    df = _click()
    with client_for(empty_sandbox, keys="project") as client:
        first = capture_frame(client, df)
    with client_for(
        empty_sandbox, keys="project"
    ) as other:  # e.g. after a kernel restart: only the key is left
        again = other.capture_frame(df, resume=first.attrs["run_key"])
    assert again["uuid"].tolist() == first["uuid"].tolist()
    assert len(empty_sandbox.events()) == 1


def test_an_unfinished_run_is_resumed_by_the_same_call_with_a_warning(empty_sandbox: Any) -> None:
    sb = empty_sandbox
    df = pd.DataFrame(
        {
            "event": ["view"] * 30,
            "distinct_id": [f"u{i}" for i in range(30)],
            "timestamp": pd.Timestamp("2026-11-20T10:00:00Z") + pd.to_timedelta(range(30), "s"),
        }
    )
    with client_for(sb, keys="project") as client:
        fault = sb.faults.add(path="/batch*", status=503)
        try:
            failed = capture_frame(client, df, batch_size=10, batch_attempts=1)
        finally:
            sb.faults.remove(fault)
        assert (failed["status"] == "failed").all()
        with pytest.warns(ResumedRunWarning, match="resumes run"):
            rerun = capture_frame(client, df)
        assert rerun.attrs["resumed"] and rerun["uuid"].tolist() == failed["uuid"].tolist()
        with pytest.warns(AlreadySentWarning, match="all 30 rows of this call were already sent"):
            same = capture_frame(client, df)  # the run has finished: nothing is sent, and it says so
        assert (same["status"] == "already_sent").all() and same["uuid"].tolist() == rerun["uuid"].tolist()
        fresh = capture_frame(client, df, again=True)  # new events only when asked for
        assert not set(fresh["uuid"]) & set(rerun["uuid"])
    assert len(sb.events()) == 60
