"""Local simulation at scale: a parquet export of N persons x 10 flags through Dask (`simulate_dask` on a
`LocalCluster` of 2 worker processes) against pandas (`simulate(engine="local")`) on the same rows.

For each size it prints: pandas time and peak memory (a fresh process), Dask time (evaluate every
partition and build the summary on the cluster) and the peak resident memory of each worker (a fresh
cluster per size, so ``ru_maxrss`` is that run's), plus the time per million rows (linear scaling shows as a
flat column). The export is written once per size, a partition's rows at a time.

    .venv/bin/python bench/simulate_scale.py                        # 1M, 5M, 10M (takes a while)
    .venv/bin/python bench/simulate_scale.py --sizes 200000 --partition-rows 50000   # a quick look
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

PLANS = np.array(["free", "pro", "team", "enterprise"], dtype=object)
COUNTRIES = np.array(["US", "DE", "FR", "GB", "IN", "BR", "JP"], dtype=object)


def definitions() -> list[dict[str, Any]]:
    """10 flags: rollouts, property filters of several operators, two multivariate experiments."""

    def prop(key: str, op: str, value: Any) -> dict[str, Any]:
        return {"key": key, "operator": op, "value": value, "type": "person"}

    def flag(
        i: int, key: str, groups: list[dict[str, Any]], variants: list[str] | None = None
    ) -> dict[str, Any]:
        filters: dict[str, Any] = {"groups": groups}
        if variants:
            share = 100 // len(variants)
            filters["multivariate"] = {
                "variants": [{"key": v, "rollout_percentage": share} for v in variants]
            }
        return {"id": i, "key": key, "active": True, "filters": filters}

    return [
        flag(1, "rollout-10", [{"properties": [], "rollout_percentage": 10}]),
        flag(2, "rollout-50", [{"properties": [], "rollout_percentage": 50}]),
        flag(3, "paid", [{"properties": [prop("plan", "exact", ["pro", "team", "enterprise"])]}]),
        flag(
            4, "us-de", [{"properties": [prop("country", "exact", ["US", "DE"])], "rollout_percentage": 30}]
        ),
        flag(5, "big-team", [{"properties": [prop("seats", "gt", 20)]}]),
        flag(6, "mail", [{"properties": [prop("email", "icontains", "@example")]}]),
        flag(7, "recent", [{"properties": [prop("signup", "is_date_after", "2024-01-01")]}]),
        flag(8, "version", [{"properties": [prop("app_version", "semver_gte", "2.1.0")]}]),
        flag(9, "checkout", [{"properties": [], "rollout_percentage": 100}], ["control", "test"]),
        flag(
            10,
            "pricing",
            [{"properties": [prop("plan", "exact", ["free", "pro"])], "rollout_percentage": 80}],
            ["a", "b", "c", "d"],
        ),
    ]


def chunk(start: int, n: int, rng: np.random.Generator) -> pa.Table:
    ids = np.arange(start, start + n)
    seats = rng.integers(1, 60, n)
    days = rng.integers(0, 1500, n)
    signup = (np.datetime64("2021-01-01") + days.astype("timedelta64[D]")).astype(str)
    return pa.table(
        {
            "distinct_id": pa.array([f"person-{i}" for i in ids], type=pa.string()),
            "plan": pa.array(rng.choice(PLANS, n), type=pa.string()),
            "country": pa.array(rng.choice(COUNTRIES, n), type=pa.string()),
            "seats": pa.array(seats, type=pa.int64()),
            "email": pa.array([f"u{i}@{'example' if i % 3 else 'mail'}.com" for i in ids], type=pa.string()),
            "signup": pa.array(signup, type=pa.string()),
            "app_version": pa.array([f"2.{v}.0" for v in rng.integers(0, 4, n)], type=pa.string()),
        }
    )


def write_export(folder: Path, n: int, partition_rows: int) -> None:
    """One parquet file per partition, written a partition at a time (memory stays one partition's)."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(16)
    for k, start in enumerate(range(0, n, partition_rows)):
        pq.write_table(chunk(start, min(partition_rows, n - start), rng), folder / f"part-{k:05d}.parquet")


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _pandas_run(folder: str, queue: Any) -> None:
    from analytics_nb.simulation import simulate

    t0 = time.perf_counter()
    frame = pd.read_parquet(folder)
    result = simulate(frame, engine="local", definitions=definitions(), progress=False, payloads=False)
    summary = result.summary()
    queue.put((time.perf_counter() - t0, _maxrss_mb(), int(summary["count"].sum())))


def run_pandas(folder: Path) -> tuple[float, float, int]:
    """pandas in a fresh process: (seconds, peak MB, counted values)."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_pandas_run, args=(str(folder), queue))
    proc.start()
    out = queue.get()
    proc.join()
    return out  # type: ignore[no-any-return]


def run_dask(folder: Path, workers: int) -> tuple[float, list[float], int, int]:
    """Dask on a fresh LocalCluster: (seconds, peak MB per worker, counted values, partitions)."""
    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    from analytics_nb.simulation import simulate_dask

    with (
        LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None, host="127.0.0.1"
        ) as cluster,
        Client(cluster) as client,
    ):
        t0 = time.perf_counter()
        ddf = dd.read_parquet(str(folder))
        result = simulate_dask(ddf, definitions=definitions(), payloads=False)
        summary = result.summary()
        elapsed = time.perf_counter() - t0
        peaks = client.run(_maxrss_mb)
        return elapsed, sorted(peaks.values()), int(summary["count"].sum()), ddf.npartitions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 5_000_000, 10_000_000])
    parser.add_argument("--partition-rows", type=int, default=250_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--skip-pandas", action="store_true", help="Dask only (e.g. when the rows do not fit)"
    )
    parser.add_argument(
        "--dir", type=Path, default=None, help="where to write the exports (default: a tmp dir)"
    )
    args = parser.parse_args()
    base = args.dir or Path(tempfile.mkdtemp(prefix="simulate-scale-"))
    print(f"{len(definitions())} flags, {args.partition_rows:,} rows a partition, {args.workers} workers")
    header = (
        f"{'persons':>11} {'pandas s':>9} {'pandas MB':>10} {'dask s':>8} {'dask/pd':>8} "
        f"{'worker peak MB':>18} {'dask s/M':>9}"
    )
    print(header)
    try:
        for n in args.sizes:
            folder = base / f"persons-{n}"
            if not folder.exists():
                write_export(folder, n, args.partition_rows)
            pd_s, pd_mb, pd_count = (float("nan"), float("nan"), -1)
            if not args.skip_pandas:
                pd_s, pd_mb, pd_count = run_pandas(folder)
            dk_s, peaks, dk_count, _parts = run_dask(folder, args.workers)
            if pd_count >= 0 and pd_count != dk_count:
                print(f"MISMATCH: pandas counted {pd_count}, dask {dk_count}", file=sys.stderr)
            print(
                f"{n:>11,} {pd_s:>9.1f} {pd_mb:>10.0f} {dk_s:>8.1f} {dk_s / pd_s:>8.2f} "
                f"{' / '.join(f'{p:.0f}' for p in peaks):>18} {dk_s / (n / 1e6):>9.1f}",
                flush=True,
            )
    finally:
        if args.dir is None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
