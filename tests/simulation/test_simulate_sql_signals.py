"""A run of `simulate_sql` killed by SIGTERM or interrupted by Ctrl-C (SIGINT) leaves no working folder
behind (issue 35): DuckDB's database, its spill folder and the half-written answers are removed. A real
child process is started on a parquet export, signalled mid-run, and its temporary folder checked."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("duckdb", reason="the 'sql' extra is not installed")
if sys.platform == "win32":  # pragma: no cover
    pytest.skip("POSIX signals", allow_module_level=True)

CHILD = r"""
import sys, duckdb
from analytics_nb.simulation import simulate_sql
path = sys.argv[1]
rows = "SELECT 'user-' || i AS distinct_id FROM range(3000000) t(i)"
duckdb.sql(f"COPY ({rows}) TO '{path}' (FORMAT parquet)")
groups = [{"properties": [], "rollout_percentage": 50}]
flags = [{"key": f"f{k}", "filters": {"groups": groups}} for k in range(40)]
print("running", flush=True)
simulate_sql(path, flags, progress=False, hasher="sql", threads=1)
print("finished", flush=True)
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signalled_run_removes_its_working_folder(tmp_path: Path, sig: signal.Signals) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {
        **os.environ,
        "TMPDIR": str(temp),
        "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tmp_path / "persons.parquet")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "running"
    deadline = time.monotonic() + 30
    while not list(temp.glob("anb-sql-*")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(temp.glob("anb-sql-*")), "the run did not start its working folder"
    time.sleep(0.5)  # mid-query
    child.send_signal(sig)
    out, err = child.communicate(timeout=60)
    assert "finished" not in out, "the run ended before the signal: make it longer"
    assert child.returncode != 0
    assert list(temp.glob("anb-*")) == [], err[-2000:]
