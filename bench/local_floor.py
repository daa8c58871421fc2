"""The local flag engine against its hash floor, and the memory of a 10M-row local simulation (issue 35).

The hash floor is the compiled column hasher alone (`_sha1column.fractions`, SHA-NI where the CPU has it)
hashing exactly the (flag, id) pairs the run hashed: every call the engine made for a flag is recorded during
one run and replayed alone, in the same process (simulate's repeated-id check, which hashes each id once with
no prefix, is part of simulate's time but not of the floor). Printed, each the best of 3 with the load
average (the machine is shared):

- `evaluate_frame` on 1M persons x the 10 flags of `bench/flags_engine.py`: evaluations/s, the floor for
  the same work, and the ratio (target <= 3x);
- `simulate(engine="local")` on the same frame (input checks, chunks, the result with its input columns):
  the same figures;
- with ``--big N`` (default 10,000,000; ``--big 0`` skips): the peak RSS of `simulate(engine="local")` on N
  rows in a fresh process, input frame included (target <= 2 GB; the frame has `bench_frame`'s columns,
  built by Arrow: see `lean_frame`), and how much of it building the input frame alone took. Run it at
  most twice: it is slow.

Run: .venv/bin/python bench/local_floor.py [--rows 1000000] [--big 10000000]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

import analytics_nb.flags._hashing as hashing
from analytics_nb.flags import evaluate_frame
from analytics_nb.simulation import simulate
from flags_engine import MAPPING, bench_flags, bench_frame


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def timed_with_floor(run: Callable[[], Any], rounds: int) -> tuple[float, float, int]:
    """(best seconds of `run`, best seconds of the hasher replaying the hashes of one run, rows hashed)."""
    native = hashing._native
    assert native is not None, "the compiled hasher is not built: the floor would be hashlib's"
    calls: list[tuple[Any, ...]] = []
    real = native.fractions

    def recording(*args: Any) -> None:
        if args[0]:  # a flag's hash has a prefix ("<key>." or "holdout-"); simulate's id check has none
            calls.append(args)
        real(*args)

    best = float("inf")
    for k in range(rounds):
        if k == 0:
            native.fractions = recording
        try:
            start = time.perf_counter()
            run()
            best = min(best, time.perf_counter() - start)
        finally:
            native.fractions = real
    rows = sum(c[2].size - 1 if c[5] is None else len(c[5]) for c in calls)
    floor = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for args in calls:
            real(*args)
        floor = min(floor, time.perf_counter() - start)
    return best, floor, rows


def lean_frame(n: int, seed: int = 1) -> pd.DataFrame:
    """`bench_frame(n)`'s columns and dtypes (Arrow text, int64), built by Arrow without a Python string
    per row: at 10M rows `bench_frame`'s lists of Python strings alone peak near 2 GB, which would hide the
    engine's own peak."""
    rng = np.random.default_rng(seed)
    ids = pa.array(np.arange(n))

    def text(*parts: Any) -> pd.Series:
        return pd.Series(pc.binary_join_element_wise(*parts, ""), dtype="str")

    def pick(choices: list[str]) -> pa.Array:
        return pc.take(pa.array(choices), pa.array(rng.integers(0, len(choices), n)))

    domains = ["example.com", "mail.test", "corp.io", "Example.COM"]
    return pd.DataFrame(
        {
            "distinct_id": text("user-", pc.cast(ids, pa.string())),
            "plan": text(pick(["free", "pro", "enterprise"])),
            "age": rng.integers(16, 80, n),
            "email": text("u", pc.cast(ids, pa.string()), "@", pick(domains)),
            "country": text(pick(["US", "DE", "FR", "CN", "BR"])),
            "group:company": text("company-", pc.cast(pa.array(rng.integers(0, 1000, n)), pa.string())),
            "group:company:size": rng.integers(1, 200, n),
        }
    )


def big_child(n: int) -> None:
    frame = lean_frame(n)
    frame_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    start = time.perf_counter()
    result = simulate(
        frame, engine="local", definitions=bench_flags(), group_type_mapping=MAPPING, progress=False
    )
    elapsed = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out_mb = result.frame.memory_usage(deep=False).sum() / 2**20
    print(f"{len(result)} {elapsed:.2f} {peak_mb:.0f} {frame_mb:.0f} {out_mb:.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--big", type=int, default=10_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--big-child", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.big_child:
        big_child(args.big_child)
        return
    print(f"load average at start: {load()}; sha1: {hashing.native_impl()}")
    n, flags = args.rows, bench_flags()
    frame = bench_frame(n)
    evals = n * len(flags)
    evaluate_frame(frame.iloc[:1000], definitions=flags, group_type_mapping=MAPPING)  # warm imports
    doors: dict[str, Callable[[], Any]] = {
        "evaluate_frame": lambda: evaluate_frame(
            frame, definitions=flags, group_type_mapping=MAPPING, payloads=True
        ),
        'simulate(engine="local")': lambda: simulate(
            frame, engine="local", definitions=flags, group_type_mapping=MAPPING, progress=False
        ),
    }
    for name, run in doors.items():
        best, floor, rows = timed_with_floor(run, args.rounds)
        print(
            f"{name}: {n:,} rows x {len(flags)} flags in {best:.2f} s = {evals / best:,.0f} evaluations/s; "
            f"hash floor {floor:.2f} s ({rows:,} hashes, {floor / n * 1e6:.2f} core-s per million persons); "
            f"ratio {best / floor:.2f}x (target <= 3x; best of {args.rounds}; load {load()})"
        )
    if args.big:
        child = subprocess.run(
            [sys.executable, __file__, "--big-child", str(args.big)],
            capture_output=True,
            text=True,
            check=True,
        )
        rows, secs, peak, frame_mb, out_mb = child.stdout.split()
        print(
            f'simulate(engine="local") on {int(rows):,} rows: {float(secs):.1f} s, '
            f"peak RSS {float(peak):,.0f} MB "
            f"(target <= 2048 MB; building the input frame alone peaked at {float(frame_mb):,.0f} MB; result "
            f"frame {float(out_mb):,.0f} MB with its input columns; one run)"
        )
    print(f"load average at end: {load()}")


if __name__ == "__main__":
    main()
