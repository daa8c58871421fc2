"""Flags as SQL at scale: a parquet export of N persons x 10 flags through DuckDB (`simulate_sql`, memory
bounded by `--memory-limit`) against the pandas chunked engine (`evaluate_frame` per row group), each in a
fresh process (peak RSS is that process's `ru_maxrss`); then the same answers from chDB and Spark SQL
(`--engines chdb spark`), every answer compared with the Python engine's, row by row, in DuckDB.

Prints the load average beside the figures (the machine is shared: read the ratios, not the absolutes).

    .venv/bin/python bench/flags_sql.py --rows 1000000                 # a quick look
    .venv/bin/python bench/flags_sql.py --rows 10000000 --engines chdb spark
    .venv/bin/python bench/flags_sql.py --rows 100000000 --skip-pandas # the 100M x 10 flags figure
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

PLANS = np.array(["free", "pro", "Team", "enterprise", "PRO"], dtype=object)
COUNTRIES = np.array(["US", "DE", "FR", "GB", "IN", "BR", "JP"], dtype=object)
GROUP_ROWS = 1_000_000


def definitions() -> list[dict[str, Any]]:
    """10 flags SQL expresses exactly: rollouts, exact / icontains / gt / is_set filters, variants, an
    override, a holdout and a dependency."""

    def prop(key: str, op: str, value: Any) -> dict[str, Any]:
        return {"key": key, "operator": op, "value": value, "type": "person"}

    ab = {
        "variants": [{"key": "control", "rollout_percentage": 50}, {"key": "test", "rollout_percentage": 50}]
    }
    return [
        {"key": "rollout-10", "filters": {"groups": [{"properties": [], "rollout_percentage": 10}]}},
        {"key": "pro-plan", "filters": {"groups": [{"properties": [prop("plan", "exact", ["pro"])]}]}},
        {
            "key": "eu",
            "filters": {
                "groups": [{"properties": [prop("country", "exact", ["DE", "FR"])], "rollout_percentage": 50}]
            },
        },
        {
            "key": "adults",
            "filters": {"groups": [{"properties": [prop("age", "gte", 18)], "rollout_percentage": 75}]},
        },
        {"key": "scored", "filters": {"groups": [{"properties": [prop("score", "gt", 0.5)]}]}},
        {"key": "beta", "filters": {"groups": [{"properties": [prop("beta", "exact", ["true"])]}]}},
        {
            "key": "email",
            "filters": {
                "groups": [
                    {"properties": [prop("email", "icontains", "example")], "rollout_percentage": 33.3}
                ]
            },
        },
        {
            "key": "exp",
            "filters": {"groups": [{"properties": [], "rollout_percentage": 80}], "multivariate": ab},
        },
        {
            "key": "exp-held",
            "filters": {
                "groups": [{"properties": [prop("plan", "is_set", "is_set")]}],
                "multivariate": ab,
                "holdout": {"id": 3, "exclusion_percentage": 10},
            },
        },
        {
            "key": "dep",
            "filters": {
                "groups": [
                    {
                        "properties": [
                            {"key": "exp", "type": "flag", "operator": "flag_evaluates_to", "value": "test"},
                            prop("country", "is_not", "US"),
                        ]
                    }
                ]
            },
        },
    ]


def write_export(path: Path, rows: int) -> None:
    rng = np.random.default_rng(1)
    writer = None
    for start in range(0, rows, GROUP_ROWS):
        n = min(GROUP_ROWS, rows - start)
        ids = np.char.add("user-", np.arange(start, start + n).astype(str))
        age = rng.integers(10, 80, n)
        table = pa.table(
            {
                "distinct_id": pa.array(ids, type=pa.string()),
                "plan": pa.array(PLANS[rng.integers(0, len(PLANS), n)], type=pa.string()),
                "country": pa.array(COUNTRIES[rng.integers(0, len(COUNTRIES), n)], type=pa.string()),
                "age": pa.array(age, mask=rng.random(n) < 0.05),
                "score": pa.array(rng.random(n), mask=rng.random(n) < 0.05),
                "beta": pa.array(rng.random(n) < 0.3, mask=rng.random(n) < 0.2),
                "email": pa.array(
                    np.where(rng.random(n) < 0.5, "a@example.com", "b@corp.io"), type=pa.string()
                ),
            }
        )
        if writer is None:
            writer = pq.ParquetWriter(path, table.schema)
        writer.write_table(table, row_group_size=250_000)
    assert writer is not None
    writer.close()


def _peak_gb() -> float:
    """This process's peak RSS (VmHWM: ru_maxrss would carry the parent's peak across exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024 / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 / 1024


def run_duckdb(export: str, out: str, memory_limit: str, queue: Any) -> None:
    from analytics_nb.simulation import simulate_sql

    start = time.perf_counter()
    sim = simulate_sql(export, definitions(), out=out, memory_limit=memory_limit, progress=False)
    summary = sim.summary()
    elapsed = time.perf_counter() - start
    queue.put((elapsed, _peak_gb(), sim.local_rows, len(summary)))
    sim.close()


def run_pandas(export: str, out: str, queue: Any) -> None:
    import pandas as pd

    from analytics_nb.flags import evaluate_frame

    start = time.perf_counter()
    now = pd.Timestamp.now(tz="UTC").to_pydatetime()
    writer = None
    for batch in pq.ParquetFile(export).iter_batches(batch_size=250_000):
        frame = batch.to_pandas(types_mapper=pd.ArrowDtype)
        got = evaluate_frame(frame, definitions(), reasons=True, now=now)
        for key in [d["key"] for d in definitions()]:
            if got[key].dtype == object:
                got[key] = got[key].map(lambda v: "true" if v is True else "false" if v is False else v)
            got[f"{key}:reason"] = got[f"{key}:reason"].astype("string")
        table = pa.Table.from_pandas(got.drop(columns=["error"]), preserve_index=False)
        if writer is None:
            writer = pq.ParquetWriter(out, table.schema)
        writer.write_table(table)
    assert writer is not None
    writer.close()
    queue.put((time.perf_counter() - start, _peak_gb(), 0, 0))


def run_other(engine: str, export: str, out: str, queue: Any) -> None:
    """chDB or Spark SQL over the export, answers written to parquet by the engine itself."""
    from analytics_nb.flags import compile_sql

    start = time.perf_counter()
    schema = {f.name: str(f.type) for f in pq.read_schema(export)}
    if engine == "chdb":
        from chdb import session

        query = compile_sql(definitions(), dialect="clickhouse", table="persons", schema=schema)
        sess = session.Session(tempfile.mkdtemp(prefix="bench-chdb-"))
        sess.query(
            f"CREATE VIEW persons AS SELECT * FROM file('{export}', Parquet) "
            "SETTINGS schema_inference_make_columns_nullable = 1"
        )
        sess.query(f"INSERT INTO FUNCTION file('{out}', Parquet) {query.sql}")
        sess.close()
    else:
        from pyspark.sql import SparkSession

        spark = (
            SparkSession.builder.master("local[2]")
            .config("spark.ui.enabled", "false")
            .config("spark.driver.memory", "2g")
            .getOrCreate()
        )
        query = compile_sql(definitions(), dialect="spark", table="persons", schema=schema)
        spark.read.parquet(export).createOrReplaceTempView("persons")
        spark.sql(query.sql).write.mode("overwrite").parquet(out)
        spark.stop()
    queue.put((time.perf_counter() - start, _peak_gb(), 0, 0))


def in_process(target: Any, *args: Any) -> tuple[float, float, int, int]:
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=target, args=(*args, queue))
    proc.start()
    result = queue.get()
    proc.join()
    return result  # type: ignore[no-any-return]


def mismatches(reference: str, other: str) -> int:
    """Rows whose answers differ between two answer files (value, reason, condition index of every flag)."""
    import duckdb

    cols = []
    for key in [d["key"] for d in definitions()]:
        for suffix in ("", ":reason", ":condition_index"):
            name = '"' + key + suffix + '"'
            cols.append(f"CAST(a.{name} AS VARCHAR) IS DISTINCT FROM CAST(b.{name} AS VARCHAR)")
    ref = f"read_parquet('{reference}')"
    oth = f"read_parquet('{other}/**/*.parquet')" if os.path.isdir(other) else f"read_parquet('{other}')"
    sql = f"SELECT count(*) FROM {ref} a FULL JOIN {oth} b USING (distinct_id) WHERE {' OR '.join(cols)}"
    return int(duckdb.connect().execute(sql).fetchall()[0][0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--memory-limit", default="1GB")
    parser.add_argument("--engines", nargs="*", default=[], choices=["chdb", "spark"])
    parser.add_argument("--skip-pandas", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-flags-sql-"))
    try:
        export = work / "persons.parquet"
        print(f"load average at start: {Path('/proc/loadavg').read_text().strip()} (2 cores, shared)")
        t0 = time.perf_counter()
        write_export(export, args.rows)
        print(f"export: {args.rows:,} rows written in {time.perf_counter() - t0:.1f} s")
        results: dict[str, tuple[float, float]] = {}
        secs, peak, local, _ = in_process(
            run_duckdb, str(export), str(work / "duckdb.parquet"), args.memory_limit
        )
        results["duckdb"] = (secs, peak)
        print(
            f"duckdb  (simulate_sql, memory_limit={args.memory_limit}, summary in SQL): {secs:.1f} s, "
            f"{args.rows / secs:,.0f} rows/s, peak RSS {peak:.2f} GB, rows answered locally {local}"
        )
        if not args.skip_pandas:
            secs, peak, _, _ = in_process(run_pandas, str(export), str(work / "pandas.parquet"))
            results["pandas"] = (secs, peak)
            print(
                f"pandas  (evaluate_frame per 250k-row batch): {secs:.1f} s, {args.rows / secs:,.0f} rows/s, "
                f"peak RSS {peak:.2f} GB"
            )
            print(
                f"ratio pandas / duckdb time: {results['pandas'][0] / results['duckdb'][0]:.2f}x; "
                f"mismatching rows duckdb vs pandas engine: "
                f"{mismatches(str(work / 'pandas.parquet'), str(work / 'duckdb.parquet'))}"
            )
        for engine in args.engines:
            out = str(work / f"{engine}.parquet")
            secs, peak, _, _ = in_process(run_other, engine, str(export), out)
            ref = work / ("pandas.parquet" if not args.skip_pandas else "duckdb.parquet")
            print(
                f"{engine:7} {secs:.1f} s, {args.rows / secs:,.0f} rows/s (driver peak RSS {peak:.2f} GB); "
                f"mismatching rows vs {ref.stem}: {mismatches(str(ref), out)}"
            )
        print(f"load average at end: {Path('/proc/loadavg').read_text().strip()}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
