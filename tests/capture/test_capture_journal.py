"""Issue 37 findings 1 and 2, and the false ``ResumedRunWarning`` of 7: capture that is exactly once across
kernel deaths, through the run journal on disk (``capture._journal``).

Before it, the per-run key and the run memory lived on the client object: a cell killed at 51,000 of
200,000 stored and run again in a new process stored 251,000; ``resume=report`` with the frame rebuilt
(reordered, a new index, rows inserted, a column added, duplicate labels swapped) doubled 3,600-9,000 of
20,000. Each test here fails on that code: it doubles (or, for the journal's own properties, has none).
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from _journal_script import journal_frame

import analytics_nb
from _clients import client_for
from analytics_nb.capture import (
    AlreadySentWarning,
    CaptureJournalWarning,
    ResumedRunWarning,
    _journal,
    capture_frame,
)

SCRIPT = Path(__file__).with_name("_journal_script.py")


def _cell(sb: Any, n: int, *extra: str) -> subprocess.Popen[str]:
    """The capture cell in a new process (a new kernel), sharing this test's journal folder; it runs when
    told to (`_go`), so its imports can overlap with what the test does first."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(analytics_nb.__file__).parents[1]), env.get("PYTHONPATH", "")]
    )
    return subprocess.Popen(
        [sys.executable, str(SCRIPT), sb.url, sb.project_api_key, str(n), *extra],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _go(*procs: subprocess.Popen[str]) -> None:
    """Run the cells (once each has imported everything)."""
    for proc in procs:
        assert proc.stdout is not None and proc.stdin is not None
        assert proc.stdout.readline().strip() == "READY", proc.communicate()
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()


def _stored(sb: Any) -> pd.DataFrame:
    return sb.events()


def _wait_for(sb: Any, proc: subprocess.Popen[str], at_least: int, timeout: float = 20.0) -> int:
    """Poll the sandbox until ``at_least`` events are stored (the cell is mid-run); the count seen."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        count = len(_stored(sb))
        if count >= at_least:
            return count
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    raise AssertionError(f"the cell stored fewer than {at_least} events in {timeout} s")


def _finish(proc: subprocess.Popen[str]) -> str:
    out, err = proc.communicate(timeout=60)  # closes stdin (a cell that waits runs no capture)
    assert proc.returncode == 0, err
    return out


def _assert_exactly_once(sb: Any, n: int) -> None:
    stored = _stored(sb)
    assert stored["uuid"].is_unique
    assert len(stored) == n, f"{len(stored) - n} doubled"  # nothing lost, nothing doubled


def test_kill_9_mid_run_then_the_same_cell_in_a_new_process_doubles_nothing(empty_sandbox: Any) -> None:
    sb, n = empty_sandbox, 2000
    fault = sb.faults.add(path="/batch*", delay=0.08)  # slow acks: the kill lands mid-run
    first, second, third = _cell(sb, n), _cell(sb, n), _cell(sb, n)
    _go(first)
    _wait_for(sb, first, 500)
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=10)
    killed_at = len(_stored(sb))
    assert killed_at < n
    sb.faults.remove(fault)
    _go(second)
    out = _finish(second)
    _assert_exactly_once(sb, n)
    lines = [line for line in out.splitlines() if line.startswith("WARNING")]
    assert len(lines) == 1 and "ResumedRunWarning capture_frame resumes run" in lines[0]
    assert "rows were already stored" in lines[0]  # says how many (those acknowledged before the kill)
    _go(third)
    again = _finish(third)  # a third run of the finished cell sends nothing and says so
    assert f"AlreadySentWarning all {n:,} rows of this call were already sent" in again
    assert f"'already_sent': {n}" in again
    _assert_exactly_once(sb, n)


def test_ctrl_c_then_a_new_process_doubles_nothing(empty_sandbox: Any) -> None:
    sb, n = empty_sandbox, 2000
    fault = sb.faults.add(path="/batch*", delay=0.08)
    first, second = _cell(sb, n), _cell(sb, n)
    _go(first)
    _wait_for(sb, first, 500)
    first.send_signal(signal.SIGINT)
    assert "INTERRUPTED" in _finish(first)
    sb.faults.remove(fault)
    assert len(_stored(sb)) < n
    _go(second)
    out = _finish(second)  # the kernel restarted: only the journal is left
    assert "resumes run" in out
    _assert_exactly_once(sb, n)


def test_two_processes_sending_the_same_frame_at_once_store_it_once(empty_sandbox: Any) -> None:
    sb, n = empty_sandbox, 2000
    fault = sb.faults.add(path="/batch*", delay=0.02)
    cells = [_cell(sb, n), _cell(sb, n), _cell(sb, n, "other")]
    _go(*cells)
    outs = [_finish(p) for p in cells]
    sb.faults.remove(fault)
    assert not any("CaptureJournalWarning" in out for out in outs)
    stored = _stored(sb)
    assert stored["uuid"].is_unique
    assert (stored["event"] == "purchase").sum() == n  # the same frame twice at once: stored once
    assert (stored["event"] == "refund").sum() == n  # another frame at the same time: all of it
    runs = _journal.load_runs(_target(sb))
    assert len(runs) == 2 and all(run.finished for run in runs)  # the journal is whole after both wrote


def _target(sb: Any) -> str:
    with client_for(sb, keys="project") as client:
        return _journal.target_of(client.core.config.ingest_url, sb.project_api_key)


def _half_sent(sb: Any, df: pd.DataFrame) -> pd.DataFrame:
    """Send ``df`` with half its batches failing (a seeded 503 fault, no retry): a run to resume."""
    fault = sb.faults.add(path="/batch*", status=503, rate=0.5)
    try:
        with client_for(sb, keys="project", max_retries=0) as client:
            report = capture_frame(client, df, batch_size=50, batch_attempts=1)
    finally:
        sb.faults.remove(fault)
    counts = report["status"].value_counts()
    assert counts.get("sent", 0) > 0 and counts.get("failed", 0) > 0
    return report


def _swap_duplicate_labels(df: pd.DataFrame) -> pd.DataFrame:
    out = df.copy()
    out.index = [i // 2 for i in range(len(df))]  # pairs of rows share a label...
    pairs = np.arange(len(df)).reshape(-1, 2)[:, ::-1].ravel()
    return out.iloc[pairs]  # ...and the two rows of each label change places


REBUILDS = {
    "reordered_and_reset_index": lambda df: df.sample(frac=1, random_state=3).reset_index(drop=True),
    "rows_inserted_at_the_top": lambda df: pd.concat(
        [journal_frame(100, "other"), df.set_axis(range(100, 100 + len(df)))]
    ),
    "constant_column_added": lambda df: df.assign(source="import"),
    "duplicate_labels_swapped": _swap_duplicate_labels,
}


@pytest.mark.parametrize("rebuild", sorted(REBUILDS))
def test_resume_with_a_rebuilt_frame_doubles_nothing(empty_sandbox: Any, rebuild: str) -> None:
    sb = empty_sandbox
    df = journal_frame(1000).set_axis([f"r{i}" for i in range(1000)])
    report = _half_sent(sb, df)
    rebuilt = REBUILDS[rebuild](df)
    with client_for(sb, keys="project") as client:
        resumed = capture_frame(client, rebuilt, resume=report)
    assert resumed.attrs["resumed"]
    counts = resumed["status"].value_counts()
    assert counts["already_sent"] == (report["status"] == "sent").sum()  # not sent again
    inserted = 100 if rebuild == "rows_inserted_at_the_top" else 0
    _assert_exactly_once(sb, len(df) + inserted)


def test_a_repeated_one_row_send_raises_no_false_resumed_warning(empty_sandbox: Any) -> None:
    row = journal_frame(1)
    with client_for(empty_sandbox, keys="project") as client, warnings.catch_warnings():
        warnings.simplefilter("error", ResumedRunWarning)  # nothing is resumed here
        capture_frame(client, row)
        with pytest.warns(AlreadySentWarning, match="the 1 row of this call was already sent at ") as caught:
            same = capture_frame(client, row)  # the same cell run again: nothing sent, said so
        assert not [w for w in caught if isinstance(w.message, ResumedRunWarning)]
        assert same["status"].tolist() == ["already_sent"]
        warnings.simplefilter("error")
        second = capture_frame(client, row, again=True)  # a second, identical event: asked for, no warning
    assert second["status"].tolist() == ["sent"]
    assert len(_stored(empty_sandbox)) == 2


def test_identical_rows_are_counted_not_merged(empty_sandbox: Any) -> None:
    row = journal_frame(1)
    with client_for(empty_sandbox, keys="project") as client:
        two = capture_frame(client, pd.concat([row, row]))  # two identical events in one frame: two
        assert two["uuid"].is_unique and (two["status"] == "sent").all()
        with pytest.warns(AlreadySentWarning, match="2 of 3 rows"):
            three = capture_frame(client, pd.concat([row, row, row]))  # one more than was sent: sent
    assert three["status"].tolist() == ["already_sent", "already_sent", "sent"]
    assert len(_stored(empty_sandbox)) == 3


def test_a_corrupt_journal_is_set_aside_with_a_warning(empty_sandbox: Any) -> None:
    sb = empty_sandbox
    df = journal_frame(20)
    with client_for(sb, keys="project") as client:
        first = capture_frame(client, df)
        path = _journal.journal_dir() / _target(sb) / f"{first.attrs['run_key']}.jrn"
        with path.open("ab") as fh:
            fh.write(b"S not-base64!\n")
        with pytest.warns(CaptureJournalWarning, match="corrupt .*set aside"):
            again = capture_frame(client, df)
    assert not path.exists() and list(path.parent.glob(f"{path.name}.corrupt-*"))
    assert (again["status"] == "sent").all()  # the run it held is unknown: a new run (said above)
    assert len(_stored(sb)) == 40


def test_the_journal_is_private_and_holds_neither_key_nor_content(empty_sandbox: Any) -> None:
    sb = empty_sandbox
    with client_for(sb, keys="project") as client:
        capture_frame(client, journal_frame(50))
    folder = _journal.journal_dir()
    files = [p for p in folder.rglob("*") if p.is_file()]
    assert files
    for path in [folder, *(p for p in folder.rglob("*") if p.is_dir())]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o700, path
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
        data = path.read_bytes()
        assert sb.project_api_key.encode() not in data and b"phc_" not in data
        assert b"user-" not in data and b"purchase" not in data


def test_the_journal_is_bounded_in_runs_and_age(empty_sandbox: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_journal, "MAX_RUNS", 3)
    with client_for(empty_sandbox, keys="project") as client:
        for k in range(5):
            capture_frame(client, journal_frame(5, "same").assign(k=k))
        folder = _journal.journal_dir() / _target(empty_sandbox)
        assert len(list(folder.glob("*.jrn"))) == 3  # the oldest beyond MAX_RUNS went
        old = time.time() - _journal.MAX_AGE.total_seconds() - 60
        for path in folder.glob("*.jrn"):
            os.utime(path, (old, old))
        capture_frame(client, journal_frame(5, "other"))
    assert len(list(folder.glob("*.jrn"))) == 1  # runs older than MAX_AGE went


def test_a_folder_that_cannot_be_written_warns_and_journals_in_memory(
    empty_sandbox: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder should be")
    monkeypatch.setenv("ANALYTICS_NB_CACHE_DIR", str(blocked))
    row = journal_frame(3)
    with client_for(empty_sandbox, keys="project") as client:
        with pytest.warns(CaptureJournalWarning, match="cannot be written .* in memory only"):
            capture_frame(client, row)
        with pytest.warns(AlreadySentWarning):  # this process still knows what it sent
            assert (capture_frame(client, row)["status"] == "already_sent").all()
    assert len(_stored(empty_sandbox)) == 3


def test_a_line_cut_short_by_a_kill_is_dropped_not_taken_for_corruption(empty_sandbox: Any) -> None:
    sb = empty_sandbox
    df = journal_frame(30)
    fault = sb.faults.add(path="/batch*", status=503)
    with client_for(sb, keys="project", max_retries=0) as client:
        failed = capture_frame(client, df, batch_attempts=1)  # an unfinished run: slots, no outcome
        sb.faults.remove(fault)
        path = _journal.journal_dir() / _target(sb) / f"{failed.attrs['run_key']}.jrn"
        with path.open("ab") as fh:
            fh.write(b"As AAAA")  # a kill inside a write: no newline
        with warnings.catch_warnings():
            warnings.simplefilter("error", CaptureJournalWarning)
            with pytest.warns(ResumedRunWarning, match="0 of 30 rows were already stored"):
                capture_frame(client, df)
            with pytest.warns(AlreadySentWarning, match="all 30 rows"):  # the file read whole again
                capture_frame(client, df)
    _assert_exactly_once(sb, 30)
