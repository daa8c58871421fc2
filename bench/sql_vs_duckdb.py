"""`simulate(path, engine="sql", definitions=...)` against the query a competent analyst would write by hand
in DuckDB for the same flags: the same PostHog bucketing (SHA-1 of ``"{key}.{id}"``, its first 15 hex
digits against the exact integer bound of the rollout share) and the same property tests, writing the same
answer columns (distinct_id and one value per flag) to parquet (issue 35).

N persons (1M by default; ``--rows 10000000``) x the first 8 flags of `bench/flags_sql.py`, a parquet
export written by DuckDB. Prints the best of 3 of each (the whole `simulate` call, answers written), the
ratio, the rows whose answers differ, and the load average (the machine is shared: read the ratio).

    .venv/bin/python bench/sql_vs_duckdb.py                    # 1M persons
    .venv/bin/python bench/sql_vs_duckdb.py --rows 10000000
    .venv/bin/python bench/sql_vs_duckdb.py --many 200000      # and ~100 flags: SQL against the local engine

``--many N``: N persons x 100 flags (10 copies of the 10 `flags_sql` flags, every one answered in SQL) and
x 96 demo flags (6 copies of the 16 demo flags; 7 of each copy are answered by the local engine: regex,
cohort, dates, groups), `simulate(engine="sql")` against `simulate(engine="local")` on the same frame.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb

sys.path.insert(0, str(Path(__file__).parent))
from analytics_nb.flags._sql import _variant_range, rollout_bound
from analytics_nb.simulation import simulate
from flags_sql import definitions, write_export

FLAGS = 8


def analyst_sql(path: str) -> str:
    """The hand-written query: hash only where the properties match (CASE), values only."""

    def h(key: str, salt: str = "") -> str:
        return f"CAST('0x' || substr(sha1('{key}.' || distinct_id || '{salt}'), 1, 15) AS UBIGINT)"

    def b(share: float) -> int:
        return rollout_bound(share)

    first, last = _variant_range(0.0, 0.5)
    return f"""
        SELECT distinct_id,
          {h("rollout-10")} <= {b(0.10)} AS "rollout-10",
          coalesce(lower(plan) = 'pro', false) AS "pro-plan",
          CASE WHEN lower(country) IN ('de', 'fr') THEN {h("eu")} <= {b(0.50)} ELSE false END AS eu,
          CASE WHEN age >= 18 THEN {h("adults")} <= {b(0.75)} ELSE false END AS adults,
          coalesce(score > 0.5, false) AS scored,
          coalesce(beta, false) AS beta,
          CASE WHEN contains(lower(email), 'example') THEN {h("email")} <= {b(0.333)} ELSE false END AS email,
          CASE WHEN {h("exp")} <= {b(0.80)}
               THEN CASE WHEN {h("exp", "variant")} BETWEEN {first} AND {last} THEN 'control' ELSE 'test' END
               ELSE 'false' END AS exp
        FROM read_parquet('{path}')
    """


def best_of(runs: int, run: Callable[[], None]) -> float:
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return best


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def copies(flags: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """`n` copies of `flags`, each flag key (and every flag dependency on it) suffixed with the copy number.
    Only keys that name a flag are renamed: a property sharing a flag's name (``beta``, ``email``) is
    still read from its column (renaming every match made those flags read absent columns, so the
    "answered in SQL" run went to the local engine)."""
    keys = {f["key"] for f in flags}

    def renamed(node: Any, c: int) -> Any:
        if isinstance(node, list):
            return [renamed(item, c) for item in node]
        if not isinstance(node, dict):
            return node
        out = {k: renamed(v, c) for k, v in node.items()}
        if node.get("type") == "flag" and node.get("key") in keys:
            out["key"] = f"{node['key']}-{c}"
        return out

    out = []
    for c in range(n):
        for flag in flags:
            copy = renamed(flag, c)
            copy["key"] = f"{flag['key']}-{c}"
            out.append(copy)
    return out


def many(rows: int, runs: int) -> None:
    """~100 flags on `rows` persons: SQL against the local engine, best of `runs` each."""
    import pandas as pd

    from analytics_nb.sandbox._resources.demo_flags import demo_flag_definitions, demo_persons

    with tempfile.TemporaryDirectory() as folder:
        export = os.path.join(folder, "persons.parquet")
        write_export(Path(export), rows)
        frame = pd.read_parquet(export)
        demo_path = os.path.join(folder, "demo.parquet")
        demo = pd.DataFrame([{"distinct_id": i, **p} for i, p in demo_persons(rows)])
        demo.to_parquet(demo_path)
        for label, defs, path, table in (
            ("100 flags answered in SQL", copies(definitions(), 10), export, frame),
            (
                "96 demo flags (42 need the local engine)",
                copies(demo_flag_definitions(1), 6),
                demo_path,
                demo,
            ),
        ):

            def sql(defs: Any = defs, path: str = path) -> None:
                simulate(path, engine="sql", definitions=defs, progress=False).close()

            def local(defs: Any = defs, table: Any = table) -> None:
                simulate(table, engine="local", definitions=defs, progress=False)

            t_local = best_of(runs, local)
            t_sql = best_of(runs, sql)
            print(
                f"{rows:,} persons x {label}: engine='sql' {t_sql:.2f} s, engine='local' {t_local:.2f} s, "
                f"ratio {t_sql / t_local:.2f}; load average {load()}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--many", type=int, default=0, help="also ~100 flags x this many persons vs local")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    defs = definitions()[:FLAGS]
    keys = [d["key"] for d in defs]
    with tempfile.TemporaryDirectory() as folder:
        export = os.path.join(folder, "persons.parquet")
        write_export(Path(export), args.rows)
        ours_path, theirs_path = os.path.join(folder, "ours.parquet"), os.path.join(folder, "theirs.parquet")
        print(f"{args.rows:,} persons x {FLAGS} flags; load average before: {load()}")

        def ours() -> None:
            simulate(export, engine="sql", definitions=defs, out=ours_path, progress=False).close()

        def theirs() -> None:
            con = duckdb.connect(config={"memory_limit": "1GB"})
            con.execute(f"COPY ({analyst_sql(export)}) TO '{theirs_path}' (FORMAT parquet)")
            con.close()

        t_theirs = best_of(args.runs, theirs)
        t_ours = best_of(args.runs, ours)
        columns = " OR ".join(f'o."{k}" IS DISTINCT FROM t."{k}"' for k in keys)
        differ = duckdb.sql(
            f"SELECT count(*) FROM read_parquet('{ours_path}') o JOIN read_parquet('{theirs_path}') t "
            f"USING (distinct_id) WHERE {columns}"
        ).fetchall()[0][0]
        n_ours = duckdb.sql(f"SELECT count(*) FROM read_parquet('{ours_path}')").fetchall()[0][0]
    print(f"hand-written DuckDB query (best of {args.runs}): {t_theirs:.2f} s")
    print(f"simulate(engine='sql')    (best of {args.runs}): {t_ours:.2f} s  ratio {t_ours / t_theirs:.2f}")
    print(f"rows that differ: {differ} of {n_ours:,}; load average after: {load()}")
    if args.many:
        many(args.many, args.runs)


if __name__ == "__main__":
    main()
