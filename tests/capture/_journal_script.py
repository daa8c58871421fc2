"""A notebook cell in a process of its own, for the kernel-death tests of ``test_capture_journal.py``:
``python _journal_script.py URL PROJECT_KEY N [VARIANT]`` imports, prints ``READY``, waits for a line on
stdin (so a test can start the interpreter early: imports take seconds on a loaded machine), then sends
``journal_frame(N)`` with ``capture_frame`` and prints its warnings and counts (``INTERRUPTED`` after
Ctrl-C). VARIANT ``other`` sends another frame."""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pandas as pd

from analytics_nb import Client
from analytics_nb.errors import CaptureInterrupted


def journal_frame(n: int, variant: str = "same") -> pd.DataFrame:
    """``n`` purchases; every 10th row is a copy of the row before it (two identical events: two events)."""
    i = np.arange(n)
    i = np.where(i % 10 == 9, i - 1, i)
    start = pd.Timestamp("2026-11-20 10:00:00", tz="UTC")
    return pd.DataFrame(
        {
            "event": "purchase" if variant == "same" else "refund",
            "distinct_id": [f"user-{k % 997}" for k in i],
            "timestamp": start + pd.to_timedelta(i, unit="s"),
            "amount": (i % 50).astype(float) + 0.5,
        }
    )


def main() -> None:
    url, key, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    variant = sys.argv[4] if len(sys.argv) > 4 else "same"
    df = journal_frame(n, variant)
    print("READY", flush=True)
    sys.stdin.readline()
    with Client(url, project_api_key=key, progress=False, retry_backoff=0.01) as client:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                report = client.capture_frame(df, batch_size=100, concurrency=2)
            except CaptureInterrupted as exc:
                report = exc.report
                print("INTERRUPTED", flush=True)
        for w in caught:
            print("WARNING", type(w.message).__name__, str(w.message).replace("\n", " "), flush=True)
        print("COUNTS", dict(sorted(report.attrs["counts"].items())), flush=True)


if __name__ == "__main__":
    main()
