"""Benchmark of flag simulation on the demo sandbox (run: ``.venv/bin/python bench/simulate.py``, ~4 minutes).

(a) remote ``simulate(df, client=client)`` at its default settings (every flag evaluated, one ``/flags/?v=4``
    a row, the number in flight adapted to throughput and latency), printed beside fixed settings
    (``concurrency=10``, the former default, ``concurrency=32``, the thread pools' own, and
    ``concurrency=128``), against what a
    competent analyst would write, over the same rows and with the same output (a DataFrame of flags per row):
    sync httpx in a 32-thread pool (one shared ``httpx.Client`` with 32 connections), the official ``posthog``
    SDK 7.91.1 in a 32-thread pool (``get_all_flags`` per row; tuned: its flags session gets an HTTP adapter
    with 32 pooled connections, as its own https adapter has only 10), and the naive sequential httpx loop.
    Three conditions: loopback (no latency: the CPU of client and sandbox is the limit; simulate's loopback
    default of 4 in flight), and 20 ms and 100 ms of latency added by the sandbox's own fault injection on
    ``/decide*`` and ``/flags*`` (the thread pools stay at 32). Rounds are interleaved (every contender once
    a round) and each contender's best of 3 is kept; the ratio is the default simulate's against the best
    32-thread baseline (issue 23 target: >= 2x the SDK's 32 threads at 20 and 100 ms; the machine is shared,
    so the load average is printed with every figure).
    Each line also gives this process's CPU per row. The sequential loop runs on fewer rows at 20/100 ms
    (its rate does not depend on the row count).
(b) local ``simulate`` for 1,000,000 property sets x 12 flags: time and peak memory (in a child process).
(c) a what-if re-run after a rollout change on 100,000 rows: time.

The sandbox runs in a child process (``start(mode="process")``), so server and client do not share one GIL.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pandas as pd

os.environ.setdefault("TQDM_DISABLE", "1")

SEEDED_FLAGS = [
    "beta-feature",
    "new-checkout",
    "pricing-page-experiment",
    "paid-upsell",
    "power-users",
    "phone-verification",
    "recent-signups",
    "legacy-accounts",
    "ios-redesign",
    "company-dashboard",
    "onboarding-holdout",
    "gradual-rollout",
]
SCHEMA: dict[str, Any] = {
    "country": ["US", "CA", "GB", "DE", "FR", "JP", "BR", "IN"],
    "plan": ["free", "starter", "pro", "enterprise"],
    "email": ["a@example.com", "qa-7@acme.io", "someone@test.dev", "x@globex.com"],
    "$os": ["iOS", "Android", "Windows", "macOS"],
    "app_version": ["1.2.0", "2.3.0", "2.9.1", "3.0.0"],
    "signup_date": ["2023-03-01", "2025-06-01", "2026-10-20"],
    "sessions_count": (0, 2000),
    "lifetime_value": (0.0, 1000.0),
}
THREADS = 32
REPEATS = 3
#: (label, added latency in s, rows, rows for the sequential loop)
SCENARIOS: tuple[tuple[str, float | None, int, int], ...] = (
    ("loopback", None, 3000, 3000),
    ("20 ms added latency", 0.02, 3000, 300),
    ("100 ms added latency", 0.1, 2000, 60),
)
#: The fixed settings printed beside the default (adaptive) one; 32 is the thread pools' concurrency.
FIXED = (10, 32, 128)


def property_sets(n: int, seed: int = 1) -> pd.DataFrame:
    from analytics_nb.simulation import random_property_sets

    return random_property_sets(n, SCHEMA, seed=seed, id_prefix="bench")


def bodies(df: pd.DataFrame) -> list[dict[str, Any]]:
    recs = df.to_dict("records")
    return [
        {"distinct_id": r.pop("distinct_id"), "person_properties": {k: _plain(v) for k, v in r.items()}}
        for r in recs
    ]


def _plain(v: Any) -> Any:
    return v.item() if hasattr(v, "item") else v


def timed(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """(wall seconds, this process's CPU seconds, result) of ``fn()``."""
    cpu = time.process_time()
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, time.process_time() - cpu, out


def httpx_loop(sb: Any, rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The naive baseline: one httpx.Client, one row after the other."""
    import httpx

    out = []
    with httpx.Client(base_url=sb.url, timeout=30) as http:
        for r in rows:
            resp = http.post("/decide/", params={"v": "3"}, json={"api_key": sb.project_api_key, **r})
            out.append(resp.raise_for_status().json()["featureFlags"])
    return pd.DataFrame(out)


def httpx_threads(sb: Any, rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Sync httpx in a 32-thread pool sharing one client with 32 keep-alive connections."""
    import httpx

    limits = httpx.Limits(max_connections=THREADS, max_keepalive_connections=THREADS)
    with httpx.Client(base_url=sb.url, timeout=30, limits=limits) as http:

        def one(r: dict[str, Any]) -> dict[str, Any]:
            resp = http.post("/decide/", params={"v": "3"}, json={"api_key": sb.project_api_key, **r})
            return resp.raise_for_status().json()["featureFlags"]  # type: ignore[no-any-return]

        with ThreadPoolExecutor(THREADS) as pool:
            return pd.DataFrame(list(pool.map(one, rows)))


def _tune_sdk() -> None:
    """Give the SDK's flags session 32 pooled connections for http:// (it mounts its own adapter, with
    urllib3's default pool of 10, on https:// only): without this, 22 of 32 threads open a new connection
    for every request."""
    from posthog import request as ph_request
    from requests.adapters import HTTPAdapter

    adapter = HTTPAdapter(pool_connections=4, pool_maxsize=THREADS, max_retries=0)
    ph_request._flags_session.mount("http://", adapter)


def sdk_threads(sb: Any, rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The official SDK (remote evaluation, ``get_all_flags`` per row) in a 32-thread pool."""
    from posthog import Posthog

    ph = Posthog(sb.project_api_key, host=sb.url, sync_mode=True, disable_geoip=True, max_retries=0)
    try:

        def one(r: dict[str, Any]) -> dict[str, Any]:
            flags = ph.get_all_flags(
                r["distinct_id"], person_properties=r["person_properties"], only_evaluate_locally=False
            )
            if not flags:
                raise RuntimeError("the SDK returned no flags")
            return flags

        with ThreadPoolExecutor(THREADS) as pool:
            return pd.DataFrame(list(pool.map(one, rows)))
    finally:
        ph.shutdown()


def set_delay(sb: Any, seconds: float | None) -> None:
    sb.faults.clear()
    if seconds:
        for path in ("/decide*", "/flags*"):
            sb.faults.add(path=path, delay=seconds)


def part_a(sb: Any, scale: float = 1.0) -> None:
    from analytics_nb import Client
    from analytics_nb.simulation import simulate

    _tune_sdk()
    n_max = max(s[2] for s in SCENARIOS)
    df = property_sets(n_max)
    rows = bodies(df)
    with Client(
        sb.url,
        personal_api_key=sb.personal_api_key,
        project_api_key=sb.project_api_key,
        project_id=sb.project_id,
        progress=False,
    ) as client:
        simulate(df.head(50), client=client)  # definitions, project key, connections
        httpx_threads(sb, rows[:64])
        sdk_threads(sb, rows[:64])
        summary = []
        for label, delay, full_count, full_seq in SCENARIOS:
            count, seq_count = max(64, int(full_count * scale)), max(10, int(full_seq * scale))
            set_delay(sb, delay)
            sub, sub_rows = df.head(count), rows[:count]
            contenders: dict[str, tuple[int, Callable[[], pd.DataFrame]]] = {
                "simulate (default: adaptive)": (count, lambda sub=sub: simulate(sub, client=client).frame),
                **{
                    f"simulate concurrency={k}": (
                        count,
                        lambda sub=sub, k=k: simulate(sub, client=client, concurrency=k).frame,
                    )
                    for k in FIXED
                },
                "httpx 32 threads": (count, lambda r=sub_rows: httpx_threads(sb, r)),
                "SDK 32 threads": (count, lambda r=sub_rows: sdk_threads(sb, r)),
                "sequential httpx loop": (seq_count, lambda r=rows[:seq_count]: httpx_loop(sb, r)),
            }
            best: dict[str, tuple[float, float]] = {}
            frames: dict[str, pd.DataFrame] = {}
            for _ in range(REPEATS):
                for name, (n, fn) in contenders.items():
                    wall, cpu, frame = timed(fn)
                    assert len(frame) == n, (name, len(frame))
                    frames[name] = frame
                    if name not in best or wall < best[name][0]:
                        best[name] = (wall, cpu)
            ours = frames["simulate (default: adaptive)"]
            assert ours["error"].isna().all(), ours["error"].dropna().head()
            flags = [c for c in frames["httpx 32 threads"].columns if c in ours.columns]
            same = sum(
                int((ours[f].astype(object).to_numpy() == frames["httpx 32 threads"][f].to_numpy()).sum())
                for f in flags
            )
            rates = {name: contenders[name][0] / wall for name, (wall, _cpu) in best.items()}
            print(
                f"(a) remote, {label}: {count} rows x every flag ({len(flags)}), best of {REPEATS} "
                f"(load average {os.getloadavg()[0]:.1f}); transport {client.core.transport_name}"
            )
            for name, rate in rates.items():
                wall, cpu = best[name]
                n = contenders[name][0]
                print(
                    f"    {name:<34} {rate:8.1f} rows/s  ({wall:6.2f} s for {n}; client CPU "
                    f"{1000 * cpu / n:.2f} ms/row)"
                )
            default = rates["simulate (default: adaptive)"]
            threads = max(rates["httpx 32 threads"], rates["SDK 32 threads"])
            vs_sdk, vs_threads = default / rates["SDK 32 threads"], default / threads
            vs_loop = default / rates["sequential httpx loop"]
            print(
                f"    default vs SDK 32 threads: {vs_sdk:.2f}x; vs best 32-thread baseline: "
                f"{vs_threads:.2f}x; vs sequential loop: {vs_loop:.2f}x; same values as httpx threads: "
                f"{same}/{len(flags) * count}; load average now {os.getloadavg()[0]:.1f}"
            )
            summary.append(f"{label} {vs_sdk:.2f}x SDK / {vs_threads:.2f}x threads / {vs_loop:.2f}x loop")
        set_delay(sb, None)
        print(
            "(a) default simulate vs SDK 32 threads / best 32-thread baseline / plain loop: "
            + "; ".join(summary)
        )
        print("    target (issue 23): >= 2x the SDK's 32 threads at 20 ms and 100 ms added latency")
        both = simulate(df.head(2000), engine="both", client=client)
        print(agreement_line(both))


def agreement_line(both: Any) -> str:
    """Local vs remote over the compared cells: an NA on one side (a property the rows lack locally, a flag
    the service failed or did not return) is counted apart, not as a disagreement."""
    agreement, diffs = both.agreement, both.differences
    assert agreement is not None and diffs is not None
    cells, agree = int(agreement["rows"].sum()), int(agreement["agree"].sum())
    local_na, remote_na = diffs["local"].isna(), diffs["remote"].isna()
    n_local_na, n_remote_na = int(local_na.sum()), int((remote_na & ~local_na).sum())
    disagree = int((~local_na & ~remote_na).sum())
    valued = cells - n_local_na - n_remote_na
    return (
        f"agreement local vs remote, 2000 fresh ids x {len(agreement)} flags ({cells} cells): "
        f"{agree}/{valued} of the cells with a value on both sides agree "
        f"({agree / valued if valued else float('nan'):.2%}), {disagree} disagree; "
        f"NA apart: {n_local_na} local (a property the rows lack), {n_remote_na} remote (failed or not "
        "returned)"
    )


def part_b_child(n: int, defs_path: str) -> None:
    from analytics_nb.simulation import simulate

    with open(defs_path) as fh:
        defs = json.load(fh)
    df = property_sets(n, seed=2)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t, _cpu, res = timed(lambda: simulate(df, SEEDED_FLAGS, engine="local", definitions=defs, payloads=True))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert len(res.frame) == n
    print(
        f"(b) local simulate, {n:,} property sets x {len(SEEDED_FLAGS)} flags: {t:.2f} s "
        f"({n / t:,.0f} rows/s); peak RSS {peak / 1024:.0f} MiB (input built: {before / 1024:.0f} MiB, "
        f"+{(peak - before) / 1024:.0f} MiB during simulate)"
    )


def part_b(h: Any, n: int) -> None:
    import tempfile

    from analytics_nb import Client

    with Client(
        h.url,
        personal_api_key=h.personal_api_key,
        project_api_key=h.project_api_key,
        project_id=h.project_id,
        progress=False,
    ) as client:
        resp = client.feature_flags.local_evaluation()
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(resp.model_dump(by_alias=True, mode="json", exclude_unset=True), fh)
    try:
        subprocess.run([sys.executable, __file__, "--child-b", str(n), fh.name], check=True)
    finally:
        os.unlink(fh.name)


def part_c(h: Any, n: int) -> None:
    from analytics_nb import Client
    from analytics_nb.simulation import WhatIf, with_rollout, with_variant_weights

    with Client(
        h.url,
        personal_api_key=h.personal_api_key,
        project_api_key=h.project_api_key,
        project_id=h.project_id,
        progress=False,
    ) as client:
        defs = client.feature_flags.local_evaluation()
    df = property_sets(n, seed=3)
    t_build, _, session = timed(lambda: WhatIf(df, defs, flags=SEEDED_FLAGS))
    edited = with_rollout(defs, "gradual-rollout", 60)
    t_run, _, res = timed(lambda: session.run(edited))
    weights = with_variant_weights(defs, "new-checkout", {"control": 20, "test": 80})
    t_w, _, res_w = timed(lambda: session.run(weights))
    moved = int(res.moves["count"].sum())
    print(
        f"(c) what-if on {n:,} rows: first evaluation {t_build:.2f} s; re-run after a rollout change "
        f"{t_run * 1000:.0f} ms ({moved:,} rows moved); after a variant-weight change {t_w * 1000:.0f} ms "
        f"({int(res_w.moves['count'].sum()):,} moved)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--local-rows", type=int, default=1_000_000)
    parser.add_argument("--whatif-rows", type=int, default=100_000)
    parser.add_argument("--parts", default="abc")
    parser.add_argument("--scale", type=float, default=1.0, help="row counts of (a) times this (quick runs)")
    parser.add_argument("--child-b", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_b:
        part_b_child(int(args.child_b[0]), args.child_b[1])
        return
    from analytics_nb.sandbox import start

    with start(seed="demo", mode="process") as sb:
        print(
            f"sandbox: demo seed, process mode; python {sys.version.split()[0]}, {os.cpu_count()} cpus, "
            f"load average {', '.join(f'{x:.1f}' for x in os.getloadavg())}"
        )
        if "a" in args.parts:
            part_a(sb, args.scale)
        if "b" in args.parts:
            part_b(sb, args.local_rows)
        if "c" in args.parts:
            part_c(sb, args.whatif_rows)


if __name__ == "__main__":
    main()
