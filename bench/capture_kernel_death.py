"""Measure: a capture cell killed with SIGKILL mid-run, then the same cell in a new process (issue 37 #1).

A sandbox is started in this process; the cell (``client.capture_frame(df)`` with the defaults: batches of
1,000, 4 in flight) runs in a child Python. When about a quarter of the events are stored the child is
killed (``kill -9``), and the same cell runs in a new child to the end. The sandbox's store is then compared
with the frame: *stored*, *lost* (events of the frame not stored) and *doubled* (stored beyond the frame's
own count of each event). The journal folder is a fresh temporary one (``ANALYTICS_NB_CACHE_DIR``).

Run: ``.venv/bin/python bench/capture_kernel_death.py [--events 50000] [--src path/to/src]`` (``--src``: the
analytics_nb source to measure, e.g. an older checkout's ``src``; default this checkout's).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

CELL = r"""
import sys, warnings
import numpy as np, pandas as pd
from analytics_nb import Client
url, key, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
i = np.arange(n)
start = pd.Timestamp("2026-11-20 10:00:00", tz="UTC")
df = pd.DataFrame({"event": "purchase", "distinct_id": [f"user-{k % 9973}" for k in i],
                   "timestamp": start + pd.to_timedelta(i, unit="s"), "amount": (i % 50) + 0.5})
print("READY", flush=True)
sys.stdin.readline()
with Client(url, project_api_key=key, progress=False) as client:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = client.capture_frame(df)
    for w in caught:
        print("WARNING", type(w.message).__name__, str(w.message)[:200], flush=True)
    print("COUNTS", report.attrs["counts"], flush=True)
"""


def _cell(url: str, key: str, n: int, src: str) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=src)
    return subprocess.Popen(
        [sys.executable, "-c", CELL, url, key, str(n)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )


def _go(proc: subprocess.Popen[str]) -> None:
    assert proc.stdout is not None and proc.stdin is not None
    assert proc.stdout.readline().strip() == "READY"
    proc.stdin.write("go\n")
    proc.stdin.flush()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--src", default=str(Path(__file__).resolve().parents[1] / "src"))
    args = parser.parse_args()
    sys.path.insert(0, args.src)
    from analytics_nb.sandbox import start

    n = args.events
    with tempfile.TemporaryDirectory() as cache, start(seed="empty", profile="spec") as sb:
        os.environ["ANALYTICS_NB_CACHE_DIR"] = cache
        first, second = (
            _cell(sb.url, sb.project_api_key, n, args.src),
            _cell(sb.url, sb.project_api_key, n, args.src),
        )
        _go(first)
        while len(sb.events()) < n // 4:
            time.sleep(0.05)
        first.send_signal(signal.SIGKILL)
        first.wait()
        killed_at = len(sb.events())
        _go(second)
        out, _ = second.communicate()
        stored = sb.events()
        seen = Counter(zip(stored["distinct_id"], stored["timestamp"], strict=True))
        doubled = sum(c - 1 for c in seen.values() if c > 1)
        lost = n - len(seen)
        print(f"source {args.src}")
        print(
            f"{n:,} events; killed at {killed_at:,} stored; after the re-run: {len(stored):,} stored, "
            f"{doubled:,} doubled, {lost:,} lost"
        )
        print("re-run said:", out.strip().replace("\n", " | "))


if __name__ == "__main__":
    main()
