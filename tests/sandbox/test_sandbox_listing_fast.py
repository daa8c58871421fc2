"""Issue 15 (listing speed), sandbox side: a listing page built from lean rows for orjson (users and counts
encoded once a page, filters read by orjson) answers exactly what the serializer path answered: the same
fields in the same order, the same values, `count` / `next` / `previous`, filters, orders and the `limit`
cap, also for rows older builds stored (non-finite numbers, lone surrogates, integers beyond 64 bits)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from _sandbox_helpers import api, playlists_path
from analytics_nb.sandbox import Sandbox, start
from analytics_nb.sandbox._resources import playlists as P

pytest.importorskip("orjson")

QUERIES: list[dict[str, Any]] = [
    {},
    {"limit": 500},
    {"limit": 600},  # clamped to 500
    {"limit": 7, "offset": 3},
    {"limit": 5, "offset": 60},
    {"order": "name"},
    {"order": "-name", "limit": 9},
    {"order": "created_at", "limit": 11, "offset": 4},
    {"order": "-created_at"},
    {"type": "filters"},
    {"type": "collection", "limit": 4},
    {"pinned": "true"},
    {"search": "é"},
    {"search": "playlist"},
    {"user": "true", "limit": 3},
    {"date_from": "-3650d"},
    {"offset": 100000},
]


@pytest.fixture(scope="module")
def sb() -> Iterator[Sandbox]:
    with start(seed="demo") as sandbox:
        store = sandbox.ctx.store
        with api(sandbox) as http:
            made = [
                http.post(playlists_path(sandbox), json=body).json()
                for body in (
                    {"type": "collection", "name": "Ünïcode é ✓ \U0001f600", "description": 'é\n\t"q"'},
                    {"type": "filters", "filters": {"date_from": "-7d", "x": [1.5, -0.0, 1e308, None, True]}},
                    {"type": "collection", "name": "no creator"},
                    {"type": "collection", "name": "gone creator", "pinned": True},
                    {"type": "filters", "filters": {"spaced": 1}},
                )
            ]
        rows = [
            ("no creator", "created_by=NULL, last_modified_by=NULL"),
            ("gone creator", "created_by=987654"),
        ]
        for name, change in rows:
            store.execute(f"UPDATE playlists SET {change} WHERE name=?", (name,))
        store.execute(  # stored text with spaces, as an older build might have written it
            "UPDATE playlists SET filters=? WHERE short_id=?", ('{ "spaced" : [1, 2] }', made[4]["short_id"])
        )
        yield sandbox


def _answers(sb: Sandbox, monkeypatch: pytest.MonkeyPatch, params: dict[str, Any]) -> tuple[Any, Any]:
    """(fast path answer, serializer path answer) as (status, content type, JSON text in wire order)."""
    out = []
    for fast in (True, False):
        calls: list[int] = []

        def counted(store: Any, rows: Any, calls: list[int] = calls, real: Any = P._fast_results) -> Any:
            calls.append(len(rows))
            return real(store, rows)

        with monkeypatch.context() as m:
            m.setattr(P, "_fast_results", counted)
            if not fast:
                m.setattr(P, "_ORJSON", None)  # the serializer path, as before (orjson still encodes)
            with api(sb) as http:
                resp = http.get(playlists_path(sb), params=params)
        assert len(calls) == (1 if fast else 0)  # each path was the one taken
        body = json.loads(resp.content)
        out.append((resp.status_code, resp.headers["content-type"], json.dumps(body, ensure_ascii=False)))
    return out[0], out[1]


@pytest.mark.parametrize("params", QUERIES, ids=[json.dumps(q) for q in QUERIES])
def test_fast_pages_equal_the_serializer_pages(
    sb: Sandbox, monkeypatch: pytest.MonkeyPatch, params: dict[str, Any]
) -> None:
    fast, slow = _answers(sb, monkeypatch, params)
    assert fast == slow


def test_every_page_of_a_walk_is_the_same_and_fields_keep_their_order(
    sb: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    with api(sb) as http:
        first = http.get(playlists_path(sb), params={"limit": 500}).json()
    assert list(first) == ["count", "next", "previous", "results"]
    assert list(first["results"][0]) == [
        "id",
        "short_id",
        "name",
        "derived_name",
        "description",
        "pinned",
        "created_at",
        "created_by",
        "deleted",
        "filters",
        "last_modified_at",
        "last_modified_by",
        "recordings_counts",
        "type",
        "is_synthetic",
    ]
    by_name = {p["name"]: p for p in first["results"]}
    assert by_name["no creator"]["created_by"] is None and by_name["gone creator"]["created_by"] is None
    assert any(p["recordings_counts"]["collection"]["count"] for p in first["results"])  # items counted
    for offset in range(0, first["count"], 13):
        fast, slow = _answers(sb, monkeypatch, {"limit": 13, "offset": offset})
        assert fast == slow, offset


@pytest.mark.parametrize(
    ("stored", "listed"),
    [
        ('{"duration": Infinity}', {"duration": None}),  # non-finite: null, as before
        ('{"n": 123456789012345678901234567890}', {"n": 123456789012345678901234567890}),  # exact
        ('{"t": "a\\ud800b"}', None),  # a lone surrogate: repaired as before (compared below)
        ('{"ok": "\\ud83d\\ude00"}', {"ok": "\U0001f600"}),  # an escaped pair is fine
    ],
)
def test_rows_older_builds_stored_list_as_before(
    sb: Sandbox, monkeypatch: pytest.MonkeyPatch, stored: str, listed: Any
) -> None:
    with api(sb) as http:
        made = http.post(playlists_path(sb), json={"type": "filters", "filters": {"a": 1}}).json()
        sb.ctx.store.execute("UPDATE playlists SET filters=? WHERE short_id=?", (stored, made["short_id"]))
        try:
            fast, slow = _answers(sb, monkeypatch, {"limit": 500})
            assert fast == slow and fast[0] == 200
            found = [p for p in json.loads(fast[2])["results"] if p["short_id"] == made["short_id"]]
            if listed is not None:
                assert found[0]["filters"] == listed
            else:
                assert found[0]["filters"]["t"].startswith("a") and "\ud800" not in found[0]["filters"]["t"]
        finally:
            http.patch(
                playlists_path(sb, made["short_id"] + "/"), json={"deleted": True, "filters": {"a": 1}}
            )
