"""Playlists over real HTTP against the sandbox: every endpoint and filter, soft delete, 405, recordings."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pandas as pd
import pytest

from _clients import client_for
from _sandbox_helpers import playlist_records
from analytics_nb import Client
from analytics_nb.errors import MethodNotAllowedError, NotFoundError, ValidationError
from analytics_nb.models import Playlist, Recording


def _walk(sb: Any, **params: Any) -> list[dict[str, Any]]:
    """The reference: follow `next` one page at a time with plain httpx."""
    headers = {"Authorization": f"Bearer {sb.personal_api_key}"}
    url: str | None = f"{sb.url}/api/projects/{sb.project_id}/session_recording_playlists/"
    out: list[dict[str, Any]] = []
    with httpx.Client(headers=headers) as http:
        first = True
        while url:
            body = http.get(url, params=params if first else None).raise_for_status().json()
            first = False
            out.extend(body["results"])
            url = body["next"]
    return out


def test_list_returns_every_playlist_once_as_models(client: Client, sandbox: Any) -> None:
    reference = _walk(sandbox)
    playlists = client.playlists.list()
    assert len(reference) >= 60
    assert all(isinstance(p, Playlist) for p in playlists)
    assert [p.id for p in playlists] == [r["id"] for r in reference]


def test_small_pages_fetched_concurrently_lose_and_repeat_nothing(sandbox: Any) -> None:
    with client_for(sandbox, max_concurrency=3) as small:
        ids = [p.short_id for p in small.playlists.iter(page_size=7)]
    assert len(ids) == len(set(ids))
    assert ids == [r["short_id"] for r in _walk(sandbox)]


def test_offset_and_max_items(client: Client, sandbox: Any) -> None:
    reference = [r["id"] for r in _walk(sandbox)]
    assert [p.id for p in client.playlists.list(page_size=5, max_items=12)] == reference[:12]
    assert [p.id for p in client.playlists.list(page_size=10, offset=3, max_items=4)] == reference[3:7]


@pytest.mark.parametrize(
    ("filters", "wire"),
    [
        ({"type": "collection"}, {"type": "collection"}),
        ({"type": "filters"}, {"type": "filters"}),
        ({"pinned": True}, {"pinned": "true"}),
        ({"search": "a"}, {"search": "a"}),
        ({"order": "name"}, {"order": "name"}),
        ({"order": "-created_at"}, {"order": "-created_at"}),
        ({"user": True}, {"user": "true"}),
        ({"date_from": "-3d"}, {"date_from": "-3d"}),
    ],
)
def test_each_filter_matches_the_service(
    client: Client, sandbox: Any, filters: dict[str, Any], wire: dict[str, str]
) -> None:
    got = [p.id for p in client.playlists.list(page_size=9, **filters)]
    assert got == [r["id"] for r in _walk(sandbox, **wire)]


def test_filter_semantics(client: Client) -> None:
    everything = client.playlists.list()
    collections = client.playlists.list(type="collection")
    assert collections and all(p.type == "collection" for p in collections)
    pinned = client.playlists.list(pinned=True)
    unpinned = client.playlists.list(pinned=False)  # the service ignores the value; applied client-side
    assert pinned and unpinned
    assert all(p.pinned for p in pinned) and not any(p.pinned for p in unpinned)
    assert len(pinned) + len(unpinned) == len(everything)
    creator = next(p.created_by.id for p in everything if p.created_by is not None)
    by_creator = client.playlists.list(created_by=creator)
    assert by_creator and all(p.created_by is not None and p.created_by.id == creator for p in by_creator)
    target = everything[len(everything) // 2]
    assert [p.short_id for p in client.playlists.list(short_id=target.short_id)] == [target.short_id]
    named = sorted(everything, key=lambda p: (p.name or p.derived_name or "").lower())
    ordered = client.playlists.list(order="name")
    assert [(p.name or p.derived_name or "").lower() for p in ordered] == [
        (p.name or p.derived_name or "").lower() for p in named
    ]
    word = (target.name or "x").split()[0]
    assert all(
        word.lower() in ((p.name or "") + (p.derived_name or "")).lower()
        for p in client.playlists.list(search=word)
    )


def test_date_filters_accept_datetimes(client: Client) -> None:
    future = datetime.now(UTC) + timedelta(days=1)
    assert client.playlists.list(date_from=future) == []
    assert len(client.playlists.list(date_to=future)) == len(client.playlists.list())


def test_create_get_update_collection(client: Client) -> None:
    created = client.playlists.create("collection", "Checkout drop-offs", description="from the notebook")
    assert created.short_id and len(created.short_id) == 8 and created.type == "collection"
    fetched = client.playlists.get(created.short_id)
    assert fetched.name == "Checkout drop-offs" and fetched.description == "from the notebook"
    updated = client.playlists.update(created.short_id, pinned=True, name="Checkout drop-offs v2")
    assert updated.pinned is True and updated.name == "Checkout drop-offs v2"
    assert updated.description == "from the notebook"  # untouched fields stay
    assert created.short_id in {p.short_id for p in client.playlists.list(pinned=True)}


def test_update_of_saved_filter_playlist_resends_its_filters(client: Client) -> None:
    filters = {"events": [{"id": "$pageview", "type": "events"}], "date_from": "-7d"}
    created = client.playlists.create("filters", "Pageviews", filters=filters)
    with pytest.raises(ValidationError, match="Nothing was changed"):  # only what the caller gives is sent
        client.playlists.update(created.short_id, name="Pageviews (renamed)")
    renamed = client.playlists.update(created.short_id, name="Pageviews (renamed)", keep_filters=True)
    assert renamed.name == "Pageviews (renamed)"
    assert renamed.filters == filters


def test_create_validation_errors_name_the_problem(client: Client) -> None:
    with pytest.raises(ValidationError) as info:
        client.playlists.create("filters", "no filters")
    assert info.value.status == 400
    assert "filters" in str(info.value)
    with pytest.raises(ValueError, match="type"):
        client.playlists.create("static", "x")  # type: ignore[arg-type]


def test_archive_hides_and_restore_brings_back(client: Client) -> None:
    created = client.playlists.create("filters", "To archive", filters={"date_from": "-1d"})
    archived = client.playlists.archive(created.short_id)
    assert archived.deleted is True
    assert created.short_id not in {p.short_id for p in client.playlists.list()}
    with pytest.raises(NotFoundError):
        client.playlists.get(created.short_id)
    restored = client.playlists.restore(created.short_id)
    assert restored.deleted is False and restored.filters == {"date_from": "-1d"}
    assert client.playlists.get(created.short_id).short_id == created.short_id


def test_restore_of_a_saved_filter_playlist_archived_elsewhere_explains_filters(sandbox: Any) -> None:
    with client_for(sandbox) as first, client_for(sandbox) as second:
        created = first.playlists.create("filters", "Archived elsewhere", filters={"date_from": "-2d"})
        first.playlists.archive(created.short_id)
        with pytest.raises(ValidationError) as info:
            second.playlists.restore(created.short_id)
        assert "filters=" in str(info.value)
        assert second.playlists.restore(created.short_id, filters={"date_from": "-2d"}).deleted is False


def test_delete_is_refused_with_the_soft_delete_explanation(client: Client, sandbox: Any) -> None:
    created = client.playlists.create("collection", "Cannot delete")
    with pytest.raises(MethodNotAllowedError) as info:
        client.playlists.delete(created.short_id)
    err = info.value
    assert err.status == 405 and err.method == "DELETE"
    assert "archive" in str(err) and "soft" in str(err)
    log = sandbox.requests()
    assert ((log["method"] == "DELETE") & (log["status"] == 405)).any()  # the server was really asked
    assert client.playlists.get(created.short_id).deleted is False


def test_recordings_add_list_remove(client: Client) -> None:
    created = client.playlists.create("collection", "Hand-picked")
    assert client.playlists.recordings(created.short_id) == []
    source = next(
        p
        for p in client.playlists.list(type="collection")
        if p.short_id != created.short_id
        and p.recordings_counts
        and p.recordings_counts.collection
        and p.recordings_counts.collection.count
    )
    existing = client.playlists.recordings(source.short_id)
    assert existing and all(isinstance(r, Recording) for r in existing)
    session_id = existing[0].id
    assert client.playlists.add_recording(created.short_id, session_id) == {"success": True}
    assert client.playlists.add_recording(created.short_id, session_id) == {"success": True}  # idempotent
    assert [r.id for r in client.playlists.recordings(created.short_id)] == [session_id]
    page = client.playlists.recordings_page(created.short_id)
    assert page.has_next is False and page.version is not None
    assert created.short_id in {p.short_id for p in client.playlists.list(session_recording_id=session_id)}
    assert client.playlists.remove_recording(created.short_id, session_id) == {"success": True}
    assert client.playlists.recordings(created.short_id) == []


def test_adding_to_a_saved_filter_playlist_is_a_validation_error(client: Client) -> None:
    created = client.playlists.create("filters", "Saved", filters={"date_from": "-1d"})
    with pytest.raises(ValidationError, match="type 'filters'"):
        client.playlists.add_recording(created.short_id, "0190-some-session")


def test_frame_has_one_row_per_playlist(client: Client) -> None:
    frame = client.playlists.frame(type="collection")
    playlists = client.playlists.list(type="collection")
    assert len(frame) == len(playlists)
    assert list(frame["short_id"]) == [p.short_id for p in playlists]
    assert "created_by_email" in frame.columns


def test_recordings_frame(client: Client) -> None:
    source = next(
        p
        for p in client.playlists.list(type="collection")
        if p.recordings_counts and p.recordings_counts.collection and p.recordings_counts.collection.count
    )
    frame = client.playlists.recordings_frame(source.short_id)
    assert len(frame) == source.recordings_counts.collection.count  # type: ignore[union-attr]


def test_rows_added_while_listing_neither_repeat_nor_push_others_out(client: Client, sandbox: Any) -> None:
    before = [r["id"] for r in _walk(sandbox)]
    iterator = client.playlists.iter(page_size=5)
    got = [next(iterator).id]  # the first page is in; the others are fetched after this point
    added = [client.playlists.create("collection", f"added while listing {i}").id for i in range(3)]
    got += [p.id for p in iterator]
    assert len(got) == len(set(got))  # the shift made pages overlap: repeats were dropped
    assert set(before) <= set(got)  # and the rows pushed past the old count were still fetched
    assert set(got) - set(before) <= set(added)


# -- issue 15 / issue 24: the frame is one build of the records its pages bring ---------------------------
@pytest.mark.parametrize(
    "filters",
    [
        {},
        {"page_size": 7},
        {"page_size": 3, "order": "name"},
        {"pinned": False, "page_size": 4},
        {"offset": 5},
    ],
)
def test_frame_equals_one_build_of_the_records(
    client: Client, monkeypatch: pytest.MonkeyPatch, filters: dict[str, Any]
) -> None:
    from analytics_nb.frames import PLAYLIST_ROWS, playlists_frame

    pages: list[bool] = []
    decode = PLAYLIST_ROWS.decode

    def counted(content: bytes) -> Any:
        pages.append(True)
        return decode(content)

    monkeypatch.setattr(PLAYLIST_ROWS, "decode", counted)
    df = client.playlists.frame(**filters)
    records = playlist_records(client, **filters)
    from analytics_nb.client._resources._playlists import with_recordings_count

    pd.testing.assert_frame_equal(df, with_recordings_count(playlists_frame(records)))
    if "page_size" in filters:
        assert len(pages) > 2  # it really went page by page


def test_max_items_cuts_inside_a_page_in_records_iter_and_frame(client: Client) -> None:
    every = playlist_records(client, page_size=7)
    assert [r["id"] for r in playlist_records(client, page_size=7, max_items=10)] == [
        r["id"] for r in every[:10]
    ]
    assert [p.id for p in client.playlists.iter(page_size=7, max_items=10)] == [r["id"] for r in every[:10]]
    assert client.playlists.frame(page_size=7, max_items=10)["id"].tolist() == [r["id"] for r in every[:10]]
    unpinned = [r["id"] for r in every if not r["pinned"]]
    got = playlist_records(client, page_size=7, pinned=False, max_items=9)
    assert [r["id"] for r in got] == unpinned[:9]
    assert [p.id for p in client.playlists.list(page_size=7, pinned=False, max_items=9)] == unpinned[:9]
    assert client.playlists.frame(page_size=7, pinned=False, max_items=9)["id"].tolist() == unpinned[:9]


def test_page_dedup_fast_check_only_takes_the_usual_page() -> None:
    from analytics_nb.client._pagination import _distinct_new_ids

    seen = {1}
    assert _distinct_new_ids([{"id": 2}, {"id": 3}], "id", seen) == [2, 3]
    assert _distinct_new_ids([{"id": 2}, {"id": 1}], "id", seen) is None  # seen before
    assert _distinct_new_ids([{"id": 2}, {"id": 2}], "id", seen) is None  # repeated in the page
    assert _distinct_new_ids([{"id": 2}, {"id": None}], "id", seen) is None  # keyless
    assert _distinct_new_ids([{"id": 2}, {"name": "x"}], "id", seen) is None  # key missing
    assert _distinct_new_ids([{"id": 2}, ["id"]], "id", seen) is None  # not a dict
    assert _distinct_new_ids([{"id": [1]}], "id", seen) is None  # unhashable
    assert _distinct_new_ids([{"id": 1.0}], "id", seen) is None  # equal to a seen id
