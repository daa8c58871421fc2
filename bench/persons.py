"""Benchmark: ``client.persons(...)`` and ``client.audience(flag)`` over a sandbox holding many persons.

The sandbox runs in this process (its handle stores the persons directly with ``sb.add_persons``, as if
ingestion had merged them), so the time includes the sandbox's own work (SQLite, JSON) on the same GIL. The
run prints the time of the persons frame, the query requests it took (a count, then keyset pages of at most
50,000 rows, PostHog's cap) and, from a second read under ``tracemalloc`` (which slows Python down, so it is
not timed), the peak Python memory of the process (the sandbox's answer included).

With ``--audience`` it then times ``client.audience`` for two flags (a multivariate rollout over a property
condition, and a 30% rollout) and checks its answer, for every distinct id, against the local engine run
directly on the persons as seeded (a frame built here, not read back through HogQL); and, on a 2,000-row
sample, against the service itself (``engine="remote"``: one ``/flags`` request per row, too slow for 1M).

Run: ``.venv/bin/python bench/persons.py [--persons 100000] [--audience]`` (100,000 persons: well under a
minute; 1,000,000 with ``--audience``: a few minutes on a busy 2-core machine).
"""

from __future__ import annotations

import argparse
import os
import resource
import time
import tracemalloc
from typing import Any

import pandas as pd

import analytics_nb as anb
from analytics_nb import sandbox

PLANS = ("free", "pro", "enterprise")
FLAGS: dict[str, dict[str, Any]] = {
    "checkout-test": {
        "groups": [
            {
                "properties": [
                    {"key": "plan", "operator": "exact", "value": ["pro", "enterprise"], "type": "person"}
                ],
                "rollout_percentage": 80,
            }
        ],
        "multivariate": {
            "variants": [
                {"key": "control", "rollout_percentage": 50},
                {"key": "test", "rollout_percentage": 50},
            ]
        },
    },
    "gradual": {"groups": [{"properties": [], "rollout_percentage": 30}]},
}


def _seed(persons: int) -> tuple[list[tuple[list[str], dict[str, Any], bool]], pd.DataFrame]:
    """The persons to store (2 distinct ids for one in three) and the same persons as a property-set frame
    (one row per distinct id), built here for the reference answer."""
    rows = []
    ids, plans = [], []
    for i in range(persons):
        person_ids = [f"user-{i:07d}"] + ([f"anon-{i:07d}"] if i % 3 == 0 else [])
        props = {"plan": PLANS[i % 3], "email": f"u{i}@acme.io", "n": i}
        rows.append((person_ids, props, i % 3 == 0))
        ids += person_ids
        plans += [props["plan"]] * len(person_ids)
    return rows, pd.DataFrame({"distinct_id": ids, "plan": plans})


def _persons(client: anb.Client, distinct: int) -> None:
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
        f"persons: distinct_ids={distinct:,} rows={len(frame):,} time={elapsed:.2f}s "
        f"requests={requests} peak_python_memory={peak / 2**20:.0f} MiB"
    )


def _audience(sb: sandbox.Sandbox, client: anb.Client, reference: pd.DataFrame) -> None:
    for key, filters in FLAGS.items():
        client.feature_flags.create(key, filters=filters, active=True)
    keys = list(FLAGS)
    before = len(sb.requests())
    started = time.perf_counter()
    result = client.audience(keys)
    elapsed = time.perf_counter() - started
    requests = len(sb.requests()) - before
    ours = result.frame.set_index("distinct_id")[keys]
    local = anb.simulate(reference, keys, engine="local", client=client).frame.set_index("distinct_id")[keys]
    local = local.loc[ours.index]
    same = all(ours[k].astype(object).equals(local[k].astype(object)) for k in keys)
    counts = {k: ours[k].astype(str).value_counts().to_dict() for k in keys}
    print(
        f"audience: rows={len(ours):,} flags={keys} time={elapsed:.2f}s requests={requests} "
        f"equals_local_engine_on_seeded_persons={same} counts={counts}"
    )
    sample = reference.sample(n=min(2000, len(reference)), random_state=7).reset_index(drop=True)
    started = time.perf_counter()
    remote = anb.simulate(sample, keys, engine="remote", client=client, estimate=False).frame
    remote_time = time.perf_counter() - started
    remote = remote.set_index("distinct_id")[keys]
    agree = all(remote[k].astype(object).equals(ours.loc[remote.index, k].astype(object)) for k in keys)
    print(f"remote sample: rows={len(remote):,} time={remote_time:.2f}s audience_equals_service={agree}")
    assert same and agree


def main() -> None:
    """Seed `--persons` persons, read them back (and with `--audience` simulate two flags), print figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--persons", type=int, default=100_000)
    parser.add_argument("--audience", action="store_true", help="also time client.audience and check it")
    args = parser.parse_args()
    started = time.perf_counter()
    with sandbox.start(seed="empty") as sb:
        rows, reference = _seed(args.persons)
        sb.add_persons(rows)
        del rows
        distinct = len(reference)
        print(
            f"seeded {args.persons:,} persons ({distinct:,} distinct ids) "
            f"in {time.perf_counter() - started:.1f}s"
        )
        with anb.Client(sb.url, personal_api_key=sb.personal_api_key, progress=False) as client:
            _persons(client, distinct)
            if args.audience:
                _audience(sb, client, reference)
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"total={time.perf_counter() - started:.1f}s peak_rss={peak_rss:.0f} MiB load={os.getloadavg()}")


if __name__ == "__main__":
    main()
