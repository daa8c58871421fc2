"""Issue 15 (listing speed), compact rows: ``Client.playlists.frame()`` decodes listing pages with msgspec
straight into rows (``frames.PLAYLIST_ROWS``) and builds the frame from them. These tests hold it to the one
promise that makes it safe: the frame is the one ``playlists_frame`` builds from the dicts, with the same
columns, dtypes, values, extra columns and errors, whatever the pages hold; pages that do not fit the rows are
read as dicts (an unknown field, a value of another JSON type, what msgspec reads differently from ``json``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _clients import client_for
from _examples import examples
from _local_http import Answer, local_server
from _sandbox_helpers import playlist_records
from analytics_nb import Client
from analytics_nb.client._pagination import _distinct_new_ids, record_value
from analytics_nb.frames import PLAYLIST_ROWS, RowFormat, playlists_frame
from analytics_nb.frames import _rows as rows_module
from analytics_nb.frames._convert import PLAYLIST_COLUMNS, PLAYLIST_TAIL
from analytics_nb.sandbox import Sandbox, start

pytest.importorskip("msgspec")

KEY = "phx_rowsSECRET1234567890abcdefgh"
LIST = "/api/projects/1/session_recording_playlists/"

USER = {
    "id": 1,
    "uuid": "0190aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee",
    "distinct_id": "d1",
    "first_name": "Ada",
    "last_name": "Lovelace",
    "email": "ada@example.com",
    "is_email_verified": True,
    "hedgehog_config": None,
    "role_at_organization": "engineering",
}


def _record(i: int, **fields: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": i,
        "short_id": f"s{i:07d}",
        "name": f"Playlist {i}",
        "derived_name": None,
        "description": "",
        "pinned": False,
        "created_at": "2025-01-01T00:00:00Z",
        "created_by": USER,
        "deleted": False,
        "filters": {},
        "last_modified_at": "2025-01-02T03:04:05.123456Z",
        "last_modified_by": USER,
        "recordings_counts": {"collection": {"count": None, "watched_count": 0}},
        "type": "collection",
        "is_synthetic": False,
    }
    record.update(fields)
    return record


def _page(records: list[Any], **envelope: Any) -> bytes:
    return json.dumps(
        {"count": len(records), "next": None, "previous": None, "results": records, **envelope}
    ).encode()


def _rows_of(content: bytes) -> list[Any]:
    page = PLAYLIST_ROWS.decode(content)
    assert page is not None, "the page should fit the rows"
    return page["results"]


def _outcome(build: Any, records: list[Any]) -> tuple[str, Any]:
    try:
        return "frame", build(records)
    except (TypeError, ValueError) as exc:
        return "error", (type(exc), str(exc))


def _listing_frame(records: list[Any]) -> Any:
    """What ``client.playlists.frame()`` gives for these records: ``playlists_frame`` plus the
    ``recordings_count`` column the listing adds."""
    from analytics_nb.client._resources._playlists import with_recordings_count

    return with_recordings_count(playlists_frame(records))


def _same(a: tuple[str, Any], b: tuple[str, Any]) -> None:
    assert a[0] == b[0], (a, b)
    if a[0] == "frame":
        pd.testing.assert_frame_equal(a[1], b[1])
        assert list(a[1].dtypes) == list(b[1].dtypes)
    else:
        assert a[1] == b[1]


# -- decoding: what fits the rows, and what goes the dict way ------------------------------------------------
@pytest.mark.parametrize(
    ("content", "why"),
    [
        (_page([_record(1, owner="x")]), "a field the rows do not know (it must become an extra column)"),
        (_page([_record(1, name=5)]), "a number in a text field (the dict builder turns it into text)"),
        (_page([_record(1, pinned=1)]), "a number in a boolean field"),
        (_page([_record(1, id=1.0)]), "a float in an integer field"),
        (_page([_record(1, id="7")]), "text in an integer field"),
        (_page([_record(1)]).replace(b'"filters": {}', b'"filters": NaN'), "NaN, which only json reads"),
        (_page([_record(1)]).replace(b'"filters": {}', b'"filters": 1e400'), "a number msgspec refuses"),
        (_page([_record(1, name="a\ud800b")]), "a lone surrogate escape"),
        (b"[]", "an unpaginated list"),
        (b'{"count": 0}', "no results"),
        (b"not json", "not JSON at all"),
    ],
)
def test_pages_that_do_not_fit_the_rows_are_left_to_json(content: bytes, why: str) -> None:
    assert PLAYLIST_ROWS.decode(content) is None, why


def test_rows_read_what_json_reads() -> None:
    big = 123456789012345678901234567890
    content = _page([_record(big), _record(2, filters={"n": big, "f": -0.0, "e": 1e308})])
    content = content.replace(b'"id": 2,', b'"id": 3, "id": 2,')  # a repeated key: the last one counts
    rows = _rows_of(content)
    assert [r.id for r in rows] == [big, 2]
    assert rows[1].filters == {"n": big, "f": -0.0, "e": 1e308}
    assert math.copysign(1, rows[1].filters["f"]) == -1
    _same(_outcome(PLAYLIST_ROWS.frame, rows), _outcome(playlists_frame, json.loads(content)["results"]))


def test_rows_with_an_integer_beyond_64_bits_give_the_clear_error() -> None:
    with pytest.raises(ValueError, match="field 'id': expected an integer within 64 bits"):
        PLAYLIST_ROWS.frame(_rows_of(_page([_record(2**64)])))


def test_without_msgspec_every_page_is_left_to_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rows_module, "msgspec_module", lambda: None)
    fresh = RowFormat(
        "Bare", spec=PLAYLIST_COLUMNS, users=("created_by",), tail=PLAYLIST_TAIL, build=playlists_frame
    )
    assert fresh.decode(_page([_record(1)])) is None
    records = [_record(1), _record(2)]
    _same(_outcome(fresh.frame, records), _outcome(playlists_frame, records))


# -- frames from rows --------------------------------------------------------------------------------------
def test_json_cells_of_rows_sharing_a_user_are_separate_objects() -> None:
    hog = {"use_as_profile": True, "accessories": ["beret"]}
    user = {**USER, "hedgehog_config": hog, "team_colour": {"hex": "#f00"}}  # an unknown user field too
    content = _page([_record(1, created_by=user), _record(2, created_by=user), _record(3, created_by=None)])
    frame = PLAYLIST_ROWS.frame(_rows_of(content))
    _same(("frame", frame), _outcome(playlists_frame, json.loads(content)["results"]))
    cells = frame["created_by_hedgehog_config"]
    assert cells[0] == cells[1] == hog and cells[0] is not cells[1]
    cells[0]["accessories"].append("scarf")  # editing one row's cell leaves the other row alone
    assert cells[1]["accessories"] == ["beret"]
    extra = frame["created_by_team_colour"]
    assert extra[0] == extra[1] == {"hex": "#f00"} and extra[0] is not extra[1]
    assert pd.isna(frame.loc[2, "created_by_email"])


@pytest.mark.parametrize(
    "fields",
    [
        {"created_at": "yesterday"},  # not a date-time
        {"created_by": {**USER, "id": "abc"}},  # a user id that is not a number
        {"created_by": {**USER, "is_email_verified": "maybe"}},
        {"created_by": "someone"},  # a bare value where a user goes
    ],
)
def test_a_value_the_builder_refuses_gives_the_dict_builders_error(fields: dict[str, Any]) -> None:
    content = _page([_record(1), _record(2, **fields)])
    expected = _outcome(playlists_frame, json.loads(content)["results"])
    assert expected[0] == "error"
    _same(_outcome(PLAYLIST_ROWS.frame, _rows_of(content)), expected)


def test_rows_and_dicts_mixed_build_the_dict_frame() -> None:
    rows = _rows_of(_page([_record(1), _record(2, created_by=7)]))  # a bare user id
    dicts = [_record(3, extra_field=[1, 2])]
    _same(
        _outcome(PLAYLIST_ROWS.frame, rows + dicts),
        _outcome(
            playlists_frame, json.loads(_page([_record(1), _record(2, created_by=7)]))["results"] + dicts
        ),
    )


_TEXT = st.one_of(st.none(), st.text(max_size=6), st.integers(-3, 3))
_VALUE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=5),
)
_JSONISH = st.recursive(
    _VALUE,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=6,
)
_USER = st.one_of(
    st.none(),
    st.integers(0, 5),
    st.fixed_dictionaries(
        {},
        optional={
            "id": st.one_of(st.none(), st.integers(0, 3), st.text(max_size=2)),
            "email": _TEXT,
            "first_name": _TEXT,
            "is_email_verified": st.one_of(st.none(), st.booleans(), st.integers(0, 2)),
            "hedgehog_config": _JSONISH,
            "nickname": _JSONISH,
        },
    ),
)
_RECORD = st.fixed_dictionaries(
    {"id": st.one_of(st.integers(1, 2**64), st.none())},
    optional={
        "short_id": _TEXT,
        "name": _TEXT,
        "pinned": st.one_of(st.none(), st.booleans(), st.integers(0, 1)),
        "created_at": st.one_of(
            st.none(), st.sampled_from(["2025-01-01T00:00:00Z", "2025-06-30T12:34:56.5+02:00", "nope"])
        ),
        "created_by": _USER,
        "last_modified_by": _USER,
        "filters": _JSONISH,
        "recordings_counts": _JSONISH,
        "surprise": _JSONISH,  # a field the rows do not know
    },
)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_RECORD, max_size=6))
def test_any_page_gives_the_dict_frame_and_error(records: list[dict[str, Any]]) -> None:
    content = _page(records)
    decoded = PLAYLIST_ROWS.decode(content)
    got = decoded["results"] if decoded is not None else json.loads(content)["results"]
    _same(_outcome(PLAYLIST_ROWS.frame, got), _outcome(playlists_frame, json.loads(content)["results"]))


# -- paging over rows --------------------------------------------------------------------------------------
def test_paging_reads_keys_of_rows() -> None:
    rows = _rows_of(_page([_record(1), _record(2, pinned=True)]))
    assert record_value(rows[1], "pinned") is True and record_value(rows[0], "nope") is None
    assert record_value({"id": 4}, "id") == 4 and record_value("text", "id") is None
    assert _distinct_new_ids(rows, "id", set()) == [1, 2]
    assert _distinct_new_ids(rows, "id", {2}) is None  # already seen: the record-by-record path
    assert _distinct_new_ids([rows[0], _record(3)], "id", set()) is None  # mixed kinds


def test_frame_over_http_reads_repeats_once_and_keeps_unknown_fields() -> None:
    """Offset paging repeats a row when rows move meanwhile: the frame holds it once; a page with an unknown
    field is read as dicts and its field becomes a column, while the other pages are rows."""
    pages = {
        0: [_record(1), _record(2)],
        2: [_record(2), _record(3)],  # 2 again: a row moved while listing
        4: [_record(4, owner="kept"), _record(5)],  # an unknown field
    }

    def listing(handler: BaseHTTPRequestHandler) -> Answer:
        offset = int(parse_qs(urlsplit(handler.path).query).get("offset", ["0"])[0])
        nxt = f"http://127.0.0.1{LIST}?limit=2&offset={offset + 2}" if offset + 2 < 5 else None
        body = json.dumps({"count": 5, "next": nxt, "previous": None, "results": pages.get(offset, [])})
        return 200, {"Content-Type": "application/json"}, body.encode()

    with (
        local_server({LIST: listing}) as server,
        client_for(server.url, KEY, project_id=1, max_retries=0) as client,
    ):
        frame = client.playlists.frame(page_size=2)
        records = playlist_records(client, page_size=2)
    assert frame["id"].tolist() == [1, 2, 3, 4, 5]
    assert frame["owner"].tolist() == [None, None, None, "kept", None]
    _same(("frame", frame), _outcome(_listing_frame, records))


# -- against the sandbox -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def varied() -> Iterator[Sandbox]:
    """A sandbox whose playlists have several creators (one with a hedgehog), no creator, a creator since
    deleted, and non-ASCII text."""
    with start(seed="demo") as sb:
        store = sb.ctx.store
        org = store.query_one("SELECT organization_id FROM users ORDER BY id LIMIT 1")["organization_id"]
        ids = []
        for i, hog in enumerate([None, '{"use_as_profile": true, "color": "green"}', "null"]):
            ids.append(
                store.execute(
                    "INSERT INTO users(uuid, distinct_id, first_name, email, hedgehog_config, "
                    "organization_id) VALUES (?,?,?,?,?,?)",
                    (
                        f"0190aaaa-bbbb-7ccc-8ddd-00000000000{i}",
                        f"d{i}",
                        f"Ünï {i} ✓",
                        f"u{i}@x.example",
                        hog,
                        org,
                    ),
                )
            )
        with Client(sb.url, personal_api_key=sb.personal_api_key, progress=False) as client:
            for i in range(60):
                client.playlists.create("collection", f"lïst {i:02d} \U0001f600", description=f"d{i}")
        for i, row in enumerate(store.query("SELECT id FROM playlists ORDER BY id")):
            creator = [*ids, None, 987654][i % 5]
            store.execute(
                "UPDATE playlists SET created_by=?, last_modified_by=? WHERE id=?",
                (creator, ids[i % 3], row["id"]),
            )
        yield sb


@pytest.mark.parametrize("page_size", [7, 500])
def test_frame_from_rows_equals_the_frame_of_the_records(
    varied: Sandbox, monkeypatch: pytest.MonkeyPatch, page_size: int
) -> None:
    fits: list[bool] = []
    decode = PLAYLIST_ROWS.decode

    def counted(content: bytes) -> Any:
        page = decode(content)
        fits.append(page is not None)
        return page

    monkeypatch.setattr(PLAYLIST_ROWS, "decode", counted)
    with Client(varied.url, personal_api_key=varied.personal_api_key, progress=False) as client:
        frame = client.playlists.frame(page_size=page_size)
        records = playlist_records(client, page_size=page_size)
    assert fits and all(fits)  # every page of the sandbox's answer fits the rows
    _same(("frame", frame), _outcome(_listing_frame, records))
    assert 0 < frame["created_by_email"].isna().sum() < len(frame)  # no creator, or one since deleted
    assert frame["created_by_hedgehog_config"].map(lambda v: isinstance(v, dict)).any()
