"""Benchmark: ``playlists_frame`` vs ``pd.json_normalize`` on 100,000 realistic playlist records.

Run: ``.venv/bin/python bench/frames_convert.py [N]``. Prints the best of 3 for each and the speed ratio
(target: playlists_frame at least 3x faster). All convert the very same list of dicts, as the API returns
them. The baseline is what a competent analyst writes, ``pd.json_normalize(records)`` (nested fields
flattened, as ours); the naive ``pd.DataFrame(records)`` (nested dicts left as objects, so not the same
output) is printed too, for scale.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable
from typing import Any

import pandas as pd

from analytics_nb.frames import playlists_frame
from analytics_nb.frames._schema import gc_paused


def _user(rng: random.Random, i: int) -> dict[str, Any]:
    return {
        "id": i,
        "uuid": f"0188a2f3-6c3b-0000-9a53-{i:012d}",
        "distinct_id": f"user-distinct-{i}",
        "first_name": rng.choice(["Ada", "Grace", "Alan", "Linus", "Émilie"]),
        "last_name": rng.choice(["Lovelace", "Hopper", "Turing", "Torvalds", "du Châtelet"]),
        "email": f"user{i}@example.com",
        "is_email_verified": rng.random() < 0.8,
        "hedgehog_config": {"use_as_profile": True, "color": rng.choice(["blue", "green"]), "accessories": []}
        if rng.random() < 0.3
        else None,
        "role_at_organization": rng.choice(["engineering", "product", None]),
    }


def make_playlists(n: int, seed: int = 7) -> list[dict[str, Any]]:
    """``n`` playlist dicts shaped like the real service's list results."""
    rng = random.Random(seed)
    users = [_user(rng, i) for i in range(1, 51)]
    out = []
    for i in range(n):
        kind = "filters" if rng.random() < 0.5 else "collection"
        day = f"2025-{1 + i % 12:02d}-{1 + i % 28:02d}"
        created = f"{day}T{i % 24:02d}:{i % 60:02d}:{(i * 7) % 60:02d}.{i % 999999:06d}Z"
        out.append(
            {
                "id": i + 1,
                "short_id": f"{i:08x}"[-8:],
                "name": f"Playlist {i}, checkout" if rng.random() < 0.9 else None,
                "derived_name": f"Pageviews on /page/{i % 100}" if kind == "filters" else None,
                "description": "" if rng.random() < 0.7 else 'Sessions where users "rage-clicked"\nsee notes',
                "pinned": rng.random() < 0.1,
                "created_at": created,
                "created_by": rng.choice(users),
                "deleted": False,
                "filters": {
                    "events": [{"id": "$pageview", "type": "events", "order": 0, "name": "$pageview"}],
                    "date_from": "-7d",
                    "properties": [
                        {"key": "$browser", "value": ["Chrome"], "operator": "exact", "type": "event"}
                    ],
                }
                if kind == "filters"
                else {},
                "last_modified_at": created,
                "last_modified_by": rng.choice(users),
                "recordings_counts": {
                    "saved_filters": {
                        "count": None,
                        "has_more": None,
                        "watched_count": None,
                        "increased": None,
                        "last_refreshed_at": None,
                    },
                    "collection": {"count": rng.choice([None, 3, 12]), "watched_count": 0},
                },
                "type": kind,
                "is_synthetic": False,
            }
        )
    return out


def best_of(fn: Callable[[], Any], repeat: int = 3) -> float:
    """Best wall time of ``repeat`` runs, in seconds."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    records = make_playlists(n)
    ours = best_of(lambda: playlists_frame(records))
    baseline = best_of(lambda: pd.json_normalize(records))

    def normalize_gc_paused() -> None:
        with gc_paused():
            pd.json_normalize(records)

    # A stricter baseline: json_normalize with the same GC pause that playlists_frame uses.
    strict = best_of(normalize_gc_paused)
    naive = best_of(lambda: pd.DataFrame(records))
    print(f"records: {n}")
    print(f"playlists_frame:   {ours:.3f} s (best of 3)")
    print(f"pd.json_normalize: {baseline:.3f} s (best of 3)")
    print(f"pd.json_normalize, GC paused as ours: {strict:.3f} s (best of 3)")
    print(f"pd.DataFrame(records) (naive, nested left as dicts): {naive:.3f} s (best of 3)")
    print(f"ratio (json_normalize / playlists_frame): {baseline / ours:.1f}x  (target >= 3.0x)")
    print(f"ratio (json_normalize GC paused / playlists_frame): {strict / ours:.1f}x")


if __name__ == "__main__":
    main()
