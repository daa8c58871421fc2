"""`simulate(path, flags=[2 keys], engine="sql")` against giving only those 2 definitions: with `flags=`
narrowing the SQL path, the two take the same time (issue 35: 19-22 s against 0.8-1.3 s on 200k rows).

Prints the best of 3 runs each and the load average (the machine is shared: read the ratio).

    .venv/bin/python bench/sql_narrow.py --rows 200000
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import warnings

import pandas as pd

from analytics_nb.sandbox._resources.demo_flags import demo_flag_definitions, demo_persons
from analytics_nb.simulation import simulate

ASKED = ["new-checkout", "beta-feature"]


def best_of(runs: int, path: str, keys: list[str] | None, definitions: list[dict]) -> float:
    """The fastest of `runs` runs of simulate(engine="sql") with a summary counted in SQL."""
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        with simulate(path, keys, engine="sql", definitions=definitions, progress=False) as result:
            result.summary()
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=200_000)
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # the demo cohort is not in the definitions: its flag is NA
    definitions = demo_flag_definitions(1)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "persons.parquet")
        pd.DataFrame([{"distinct_id": i, **p} for i, p in demo_persons(args.rows)]).to_parquet(path)
        asked = best_of(3, path, ASKED, definitions)
        only = best_of(3, path, None, [f for f in definitions if f["key"] in ASKED])
    print(f"{args.rows:,} rows, {len(definitions)} flags, 2 asked: {asked:.2f} s")
    print(f"{args.rows:,} rows, only the 2 definitions given: {only:.2f} s (ratio {asked / only:.2f})")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
