"""Benchmark: listing 10,000 playlists into a DataFrame, and converting 100,000 playlist records.

(a) ``Client.playlists.frame()`` (500 per page, pages fetched concurrently and, with the ``fast`` extra,
    decoded by msgspec straight into compact rows for the frame builder: ``frames.PLAYLIST_ROWS``) against the
    loop a competent analyst would write: httpx following ``next`` one page at a time with ``?limit=500``
    (the largest page the service gives), then ``pd.json_normalize`` (target: at least 3x faster); the naive
    loop at the default page size (100) is printed too. Interleaved rounds, best of 3 for each. The
    sandbox child's CPU per page served is printed (from /proc): it bounds any client.
(b) ``analytics_nb.frames.playlists_frame`` on 100,000 records against ``pd.json_normalize`` on the same JSON.
    Target: at least 3x faster.

The sandbox runs in its own process, as a real service would. Run: ``.venv/bin/python bench/client_list.py``
(two to three minutes; prints both figures and ratios).
"""

from __future__ import annotations

import copy
import gc
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pandas as pd

from analytics_nb import Client
from analytics_nb.frames import playlists_frame
from analytics_nb.frames._rows import msgspec_module
from analytics_nb.sandbox import start

N_PLAYLISTS = int(os.environ.get("BENCH_PLAYLISTS", "10000"))  # smaller for a quick run
N_RECORDS = int(os.environ.get("BENCH_RECORDS", "100000"))
REPEATS = 3
ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def seed_playlists(sb: Any, n: int) -> None:
    """Insert ``n`` playlists straight into the sandbox's store (one transaction)."""
    rng = random.Random(7)
    owner = sb.ctx.store.query_one("SELECT id FROM users ORDER BY id LIMIT 1")["id"]
    start_at = datetime(2025, 1, 1, tzinfo=UTC)
    rows = []
    for i in range(n):
        kind = "collection" if i % 3 else "filters"
        filters = '{"date_from": "-7d", "events": [{"id": "$pageview"}]}' if kind == "filters" else "{}"
        stamp = (start_at + timedelta(minutes=i)).isoformat().replace("+00:00", "Z")
        rows.append(
            (
                sb.project_id,
                "".join(rng.choice(ALPHABET) for _ in range(8)),
                f"Playlist {i:05d}",
                None,
                f"bench playlist {i}",
                int(i % 17 == 0),
                filters,
                kind,
                stamp,
                owner,
                stamp,
                owner,
            )
        )
    with sb.ctx.store.transaction() as conn:
        conn.executemany(
            "INSERT INTO playlists(project_id, short_id, name, derived_name, description, pinned, filters, "
            "type, created_at, created_by, last_modified_at, last_modified_by) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            rows,
        )


def baseline_listing(sb: Any, limit: int | None = 500) -> pd.DataFrame:
    """What an analyst writes by hand: follow `next` page by page (``?limit=``, else the default page size),
    then json_normalize."""
    headers = {"Authorization": f"Bearer {sb.personal_api_key}"}
    url: str | None = f"{sb.url}/api/projects/{sb.project_id}/session_recording_playlists/"
    if limit is not None:
        url += f"?limit={limit}"
    results: list[dict[str, Any]] = []
    with httpx.Client(headers=headers, timeout=120) as http:
        while url:
            body = http.get(url).raise_for_status().json()
            results.extend(body["results"])
            url = body["next"]
    return pd.json_normalize(results)


def first_page(sb: Any) -> list[dict[str, Any]]:
    """The first 500 playlists as the service sends them (the records of benchmark (b))."""
    headers = {"Authorization": f"Bearer {sb.personal_api_key}"}
    url = f"{sb.url}/api/projects/{sb.project_id}/session_recording_playlists/?limit=500"
    with httpx.Client(headers=headers, timeout=120) as http:
        results: list[dict[str, Any]] = http.get(url).raise_for_status().json()["results"]
    return results


def best_of(fn: Callable[[], Any], repeats: int = REPEATS, *, collect: bool = True) -> tuple[float, Any]:
    """Best wall time of ``repeats`` runs with the garbage collector paused (and the last result); a full
    collection before each run unless ``collect=False`` (the caller collected, outside its CPU count)."""
    times = []
    result = None
    for _ in range(repeats):
        if collect:
            gc.collect()
        gc.disable()  # as timeit does: collector pauses would land on whichever side runs next
        try:
            t0 = time.perf_counter()
            result = fn()
            times.append(time.perf_counter() - t0)
        finally:
            gc.enable()
    return min(times), result


def serve() -> None:
    """Child process: a sandbox with N_PLAYLISTS playlists; prints url and key, runs until stdin closes."""
    with start(seed="empty") as sb:
        seed_playlists(sb, N_PLAYLISTS)
        info = {"url": sb.url, "key": sb.personal_api_key, "project_id": sb.project_id}
        print(json.dumps(info), flush=True)
        sys.stdin.read()


class Server:
    """The sandbox in its own process (like a real service: it does not share the client's interpreter)."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdout is not None
        info = json.loads(self.proc.stdout.readline())
        self.url: str = info["url"]
        self.personal_api_key: str = info["key"]
        self.project_id: int = info["project_id"]

    def close(self) -> None:
        """Stop the child process."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def conversion(sample: list[dict[str, Any]]) -> str:
    """(b): ``playlists_frame`` vs ``pd.json_normalize`` on N_RECORDS records built from real ones."""
    records = [copy.deepcopy(sample[i % len(sample)]) for i in range(N_RECORDS)]
    for i, record in enumerate(records):
        record["id"] = i + 1
    frames_times, norm_times = [], []
    for _ in range(3):  # interleaved, best of three each
        t, converted = best_of(lambda: playlists_frame(records), repeats=1)
        frames_times.append(t)
        t, normalized = best_of(lambda: pd.json_normalize(records), repeats=1)
        norm_times.append(t)
    assert len(converted) == len(normalized) == N_RECORDS
    t_frames, t_norm = min(frames_times), min(norm_times)
    return (
        f"(b) {N_RECORDS:,} playlist records -> DataFrame: playlists_frame {t_frames:.3f}s, "
        f"pd.json_normalize {t_norm:.3f}s, ratio {t_norm / t_frames:.1f}x (target >= 3x)"
    )


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process (Linux /proc), 0.0 when unavailable."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def main() -> None:
    os.environ.setdefault("TQDM_DISABLE", "1")
    t0 = time.perf_counter()
    server = Server()
    msgspec = msgspec_module()
    decoding = f"msgspec {msgspec.__version__} rows" if msgspec else "orjson dicts (no msgspec)"
    print(f"page decoding for frames: {decoding}")
    print(
        f"sandbox with {N_PLAYLISTS:,} playlists ready in {time.perf_counter() - t0:.1f}s; "
        f"{os.cpu_count()} CPUs, load average {', '.join(f'{x:.1f}' for x in os.getloadavg())}"
    )
    contenders: dict[str, Callable[[], pd.DataFrame]] = {}
    best: dict[str, float] = {}
    frames: dict[str, pd.DataFrame] = {}
    try:
        with Client(server.url, personal_api_key=server.personal_api_key, progress=False) as client:
            client.playlists.list(max_items=500)  # warms the connection pool
            sample = first_page(server)  # the wire dicts the conversion benchmark copies
            line_b = conversion(sample)  # first, while the process is fresh
            gc.collect()
            contenders = {
                "client.playlists.frame()": client.playlists.frame,
                "httpx next-loop ?limit=500 + json_normalize": lambda: baseline_listing(server, 500),
                "httpx next-loop, default page size (naive)": lambda: baseline_listing(server, None),
            }
            pages = {name: N_PLAYLISTS // (100 if "default" in name else 500) for name in contenders}
            server_cpu: dict[str, float] = {}
            client_cpu: dict[str, float] = {}
            # Interleaved rounds, so that a change in machine load hits every contender alike.
            for _ in range(REPEATS):
                for name, fn in contenders.items():
                    frames.pop(name, None)
                    gc.collect()  # before the CPU count starts: the collection is not the contender's work
                    before, own = cpu_seconds(server.proc.pid), time.process_time()
                    t, frames[name] = best_of(fn, repeats=1, collect=False)
                    server_cpu[name] = cpu_seconds(server.proc.pid) - before
                    client_cpu[name] = min(time.process_time() - own, client_cpu.get(name, float("inf")))
                    best[name] = min(t, best.get(name, t))
    finally:
        server.close()
    ours = frames["client.playlists.frame()"]
    for name, frame in frames.items():
        assert len(frame) == N_PLAYLISTS, (name, len(frame))
        assert set(frame["short_id"]) == set(ours["short_id"]), name
    print(f"(a) list {N_PLAYLISTS:,} playlists -> DataFrame, best of {REPEATS}:")
    for name, t in best.items():
        per_page = 1000 * server_cpu[name] / pages[name]
        print(
            f"    {name:<46} {t:7.3f}s  (sandbox CPU {per_page:.1f} ms/page, last run; "
            f"client CPU {client_cpu[name]:.3f}s, least)"
        )
    t_client = best["client.playlists.frame()"]
    fair = best["httpx next-loop ?limit=500 + json_normalize"]
    naive = best["httpx next-loop, default page size (naive)"]
    print(
        f"    ratio vs the ?limit=500 loop: {fair / t_client:.2f}x (target >= 3x); "
        f"vs the naive loop: {naive / t_client:.2f}x"
    )
    print(line_b)
    print(f"load average after the run: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    if "--serve" in sys.argv:
        serve()
    else:
        main()
