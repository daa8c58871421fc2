"""Local simulation at scale: a parquet export of N persons x 10 flags through Dask (`simulate_dask` on a
`LocalCluster` of 2 worker processes) against pandas (`simulate(engine="local")`) on the same rows.

For each size it prints: pandas time, rows/s and peak memory (a fresh process), Dask time (the distinct_id
check, then every partition evaluated and the summary built on the cluster; the id check's share shown
apart), rows/s and the peak resident memory of each worker (a fresh cluster per size, so ``ru_maxrss`` is
that run's), the ratio Dask / pandas and the time per million rows of both. At the end: the linearity check
(time per million rows at each size, and its spread: max / min, linear when within 1.5), the largest worker
peak against the partition size, and whether Dask stayed within 2x of pandas. The summaries of both runs are
compared (a mismatch is printed). The export is written once per size, a partition's rows at a time.

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


def _warm() -> None:
    """Import the engine in a worker before the clock starts (the pandas run imports it untimed too)."""
    import analytics_nb.flags
    import analytics_nb.simulation  # noqa: F401


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _pandas_run(folder: str, queue: Any) -> None:
    from analytics_nb.simulation import simulate

    t0 = time.perf_counter()
    frame = pd.read_parquet(folder)
    result = simulate(frame, engine="local", definitions=definitions(), progress=False, payloads=False)
    summary = result.summary()
    queue.put((time.perf_counter() - t0, _maxrss_mb(), summary))


def run_pandas(folder: Path) -> tuple[float, float, pd.DataFrame]:
    """pandas in a fresh process: (seconds, peak MB, the summary)."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_pandas_run, args=(str(folder), queue))
    proc.start()
    out = queue.get()
    proc.join()
    return out  # type: ignore[no-any-return]


def run_dask(folder: Path, workers: int) -> tuple[float, float, list[float], pd.DataFrame, int]:
    """Dask on a fresh LocalCluster: (seconds in all, seconds of the id check, peak MB per worker, the
    summary, partitions)."""
    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    from analytics_nb.simulation import simulate_dask
    from analytics_nb.simulation._distributed import check_unique_ids

    with (
        LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None, host="127.0.0.1"
        ) as cluster,
        Client(cluster) as client,
    ):
        client.run(_warm)
        t0 = time.perf_counter()
        ddf = dd.read_parquet(str(folder))
        check_unique_ids(ddf)  # what simulate_dask does first (timed apart here)
        checked = time.perf_counter() - t0
        result = simulate_dask(ddf, definitions=definitions(), payloads=False, check_ids=False)
        summary = result.summary()
        elapsed = time.perf_counter() - t0
        peaks = client.run(_maxrss_mb)
        return elapsed, checked, sorted(peaks.values()), summary, ddf.npartitions


def _rate(n: int, seconds: float) -> str:
    return "-" if seconds != seconds else f"{n / seconds:,.0f}"


def _spread(values: list[float]) -> float:
    present = [v for v in values if v == v]
    return max(present) / min(present) if len(present) > 1 else float("nan")


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
        f"{'persons':>11} {'parts':>5} | {'pandas s':>8} {'rows/s':>9} {'peak MB':>8} {'s/M':>6} | "
        f"{'dask s':>7} {'(ids s)':>7} {'rows/s':>9} {'peak MB per worker':>19} {'s/M':>6} | {'dask/pd':>7}"
    )
    print(header)
    print("-" * len(header))
    per_m: dict[str, list[float]] = {"pandas": [], "dask": []}
    ratios: list[float] = []
    worst_peak = 0.0
    try:
        for n in args.sizes:
            folder = base / f"persons-{n}"
            if not folder.exists():
                write_export(folder, n, args.partition_rows)
            pd_s, pd_mb, pd_summary = float("nan"), float("nan"), None
            if not args.skip_pandas:
                pd_s, pd_mb, pd_summary = run_pandas(folder)
            dk_s, ids_s, peaks, dk_summary, parts = run_dask(folder, args.workers)
            if pd_summary is not None:
                try:
                    pd.testing.assert_frame_equal(dk_summary, pd_summary)
                except AssertionError as exc:
                    print(f"MISMATCH between the pandas and Dask summaries at {n:,}: {exc}", file=sys.stderr)
            millions = n / 1e6
            per_m["pandas"].append(pd_s / millions)
            per_m["dask"].append(dk_s / millions)
            ratios.append(dk_s / pd_s)
            worst_peak = max(worst_peak, *peaks)
            print(
                f"{n:>11,} {parts:>5} | {pd_s:>8.1f} {_rate(n, pd_s):>9} {pd_mb:>8.0f} "
                f"{pd_s / millions:>6.1f} | "
                f"{dk_s:>7.1f} {ids_s:>7.1f} {_rate(n, dk_s):>9} {' / '.join(f'{p:.0f}' for p in peaks):>19} "
                f"{dk_s / millions:>6.1f} | {dk_s / pd_s:>7.2f}",
                flush=True,
            )
        print()
        for name, values in per_m.items():
            spread = _spread(values)
            verdict = "-" if spread != spread else ("linear" if spread <= 1.5 else "NOT linear")
            shown = " / ".join("-" if v != v else f"{v:.1f}" for v in values)
            print(f"linearity, {name}: {shown} s per million rows; max/min {spread:.2f} ({verdict})")
        if min(args.sizes) < 1_000_000:
            print("(below 1M rows the fixed costs - cluster scheduling, the first partition - dominate)")
        print(
            f"peak per worker: at most {worst_peak:,.0f} MB with {args.partition_rows:,}-row partitions "
            "(bounded by the partition size when it does not grow with the persons)"
        )
        present = [r for r in ratios if r == r]
        if present:
            print(
                f"Dask / pandas: {' / '.join(f'{r:.2f}' for r in ratios)}; "
                f"{'within' if max(present) <= 2 else 'NOT within'} 2x at every size"
            )
    finally:
        if args.dir is None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
