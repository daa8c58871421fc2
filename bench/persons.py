"""Benchmark: ``client.persons(...)`` over a sandbox holding many persons (several distinct ids each).

The sandbox runs in this process (its handle stores the persons directly with ``sb.add_persons``, as if
ingestion had merged them), so the time includes the sandbox's own work (SQLite, JSON) on the same GIL. The
run prints the time of the persons frame, the query requests it took (a count, then keyset pages of at most
50,000 rows, PostHog's cap) and, from a second read under ``tracemalloc`` (which slows Python down, so it is
not timed), the peak Python memory of the process (the sandbox's answer included).

Run: ``.venv/bin/python bench/persons.py [--persons 100000]`` (100,000 persons: well under a minute).
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import analytics_nb as anb
from analytics_nb import sandbox


def main() -> None:
    """Seed `--persons` persons (2 distinct ids each for one in three), read them back, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--persons", type=int, default=100_000)
    args = parser.parse_args()
    with sandbox.start(seed="empty") as sb:
        plans = ("free", "pro", "enterprise")
        rows = []
        for i in range(args.persons):
            ids = [f"user-{i:07d}"] + ([f"anon-{i:07d}"] if i % 3 == 0 else [])
            rows.append((ids, {"plan": plans[i % 3], "email": f"u{i}@acme.io", "n": i}, i % 3 == 0))
        sb.add_persons(rows)
        distinct = args.persons + (args.persons + 2) // 3
        with anb.Client(sb.url, personal_api_key=sb.personal_api_key, progress=False) as client:
            started = time.perf_counter()
            frame = client.persons(["plan", "email", "n"])
            elapsed = time.perf_counter() - started
            requests = frame.attrs["plan"]["requests"]
            del frame
            tracemalloc.start()
            frame = client.persons(["plan", "email", "n"])
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
        assert len(frame) == distinct, (len(frame), distinct)
        print(
            f"persons={args.persons:,} distinct_ids={distinct:,} rows={len(frame):,} time={elapsed:.2f}s "
            f"requests={requests} peak_memory={peak / 2**20:.0f} MiB"
        )


if __name__ == "__main__":
    main()
