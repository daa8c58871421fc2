"""Headless tests of PlaylistEditor: every control driven from Python against a real sandbox over HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest

from analytics_nb import Client
from analytics_nb.widgets import PlaylistEditor

WRITE_SCOPE = "session_recording_playlist:write"


def _client(sb: Any, key: str | None = None) -> Client:
    return Client(
        sb.url,
        personal_api_key=key or sb.personal_api_key,
        project_api_key=sb.project_api_key,
        project_id=sb.project_id,
        max_retries=0,
        timeout=10.0,
    )


@pytest.fixture
def client(empty_sandbox: Any) -> Iterator[Client]:
    c = _client(empty_sandbox)
    yield c
    c.close()


@pytest.fixture
def seeded(empty_sandbox: Any, client: Client) -> dict[str, Any]:
    """Twelve collections (three pinned, "alpha…" names on four) and one saved-filters playlist."""
    made: dict[str, Any] = {}
    for i in range(12):
        name = f"alpha {i}" if i < 4 else f"beta {i}"
        made[name] = client.playlists.create("collection", name, description=f"d{i}", pinned=i % 4 == 0)
    made["saved"] = client.playlists.create(
        "filters", "saved search", filters={"events": [{"id": "$pageview"}]}
    )
    empty_sandbox.clear_requests()
    return made


def _requests(sb: Any, method: str | None = None) -> pd.DataFrame:
    df = sb.requests()
    df = df[~df["path"].str.startswith("/_")]  # admin endpoints, if any
    if method is not None:
        df = df[df["method"] == method]
    return df.reset_index(drop=True)


def _stored(sb: Any, short_id: str) -> Any:
    return sb.ctx.store.query_one("SELECT * FROM playlists WHERE short_id=?", (short_id,))


# ---- list, filters, paging ---------------------------------------------------------------------


def test_lists_first_page_as_table_and_frame(
    empty_sandbox: Any, client: Client, seeded: dict[str, Any]
) -> None:
    editor = PlaylistEditor(client, page_size=5)
    assert len(editor.playlists) == 13
    assert editor.pages == 3
    frame = editor.frame
    assert isinstance(frame, pd.DataFrame) and len(frame) == 5
    assert "short_id" in frame.columns and frame["name"].notna().all()
    for short_id in frame["short_id"]:
        assert short_id in editor.table_view.table.value
    assert [value for _label, value in editor.table_view.picker.options] == list(frame["short_id"])
    assert editor.table_view.prev.disabled and not editor.table_view.next.disabled
    assert "13 playlists found" in editor.status_text


def test_paging_buttons_move_through_pages(
    empty_sandbox: Any, client: Client, seeded: dict[str, Any]
) -> None:
    editor = PlaylistEditor(client, page_size=5)
    first = list(editor.frame["short_id"])
    editor.table_view.next.click()
    assert editor.page == 1
    second = list(editor.frame["short_id"])
    assert not set(first) & set(second)
    editor.table_view.next.click()
    assert editor.page == 2 and len(editor.frame) == 3 and editor.table_view.next.disabled
    editor.table_view.prev.click()
    assert list(editor.frame["short_id"]) == second
    assert "page 2 of 3" in editor.table_view.page_label.value


def test_search_type_and_pinned_filters_reach_the_service(
    empty_sandbox: Any, client: Client, seeded: dict[str, Any]
) -> None:
    editor = PlaylistEditor(client, page_size=20)
    editor.filter_bar.search.value = "alpha"
    editor.filter_bar.refresh.click()
    assert sorted(editor.frame["name"]) == ["alpha 0", "alpha 1", "alpha 2", "alpha 3"]
    assert "search=alpha" in _requests(empty_sandbox, "GET")["query"].iloc[-1]

    editor.search("")
    editor.filter_bar.type.value = "filters"  # observing the dropdown reloads at once
    assert list(editor.frame["name"]) == ["saved search"]
    assert "type=filters" in _requests(empty_sandbox, "GET")["query"].iloc[-1]

    editor.filter_bar.type.value = ""
    editor.filter_bar.pinned.value = True
    assert len(editor.frame) == 3 and editor.frame["pinned"].all()
    assert "pinned=true" in _requests(empty_sandbox, "GET")["query"].iloc[-1]

    assert editor.search("zzz-nothing", pinned=False)
    assert len(editor.frame) == 0 and "nothing to show" in editor.table_view.table.value


# ---- the form and Save -------------------------------------------------------------------------


def test_selecting_fills_the_form_and_loads_recordings(
    empty_sandbox: Any, client: Client, seeded: dict[str, Any]
) -> None:
    target = seeded["alpha 1"]
    empty_sandbox.add_recording("rec-1", distinct_id="user-0", start_time="2026-11-20T10:00:00Z", duration=60)
    client.playlists.add_recording(target.short_id, "rec-1")
    editor = PlaylistEditor(client, page_size=20)
    editor.table_view.picker.value = target.short_id
    assert editor.selected is not None and editor.selected.short_id == target.short_id
    assert editor.form.name.value == "alpha 1"
    assert editor.form.description.value == "d1"
    assert json.loads(editor.form.filters.area.value) == {}
    assert list(editor.recordings["id"]) == ["rec-1"]
    assert editor.recordings_view.picker.options == ("rec-1",)
    assert "rec-1" in editor.recordings_view.table.value


def test_save_sends_one_patch_with_only_the_changed_fields(
    empty_sandbox: Any, client: Client, seeded: dict[str, Any]
) -> None:
    target = seeded["beta 5"]
    editor = PlaylistEditor(client, page_size=20)
    editor.select(target.short_id)
    editor.form.name.value = "beta renamed"
    editor.form.pinned.value = True
    assert editor.is_dirty and "unsaved" in editor.form.dirty.value
    empty_sandbox.clear_requests()
    editor.form.save.click()

    patches = _requests(empty_sandbox, "PATCH")
    assert len(patches) == 1
    assert patches["path"].iloc[0].endswith(f"/session_recording_playlists/{target.short_id}/")
    assert json.loads(patches["body"].iloc[0]) == {"name": "beta renamed", "pinned": True}
    assert patches["status"].iloc[0] == 200
    assert editor.last_error is None and not editor.is_dirty
    assert editor.selected.name == "beta renamed"
    assert _stored(empty_sandbox, target.short_id)["name"] == "beta renamed"
    shown = editor.frame.set_index("short_id")
    assert shown.loc[target.short_id, "name"] == "beta renamed"


def test_save_of_a_filters_playlist_resends_its_stored_filters(
    empty_sandbox: Any, client: Client, seeded: dict[str, Any]
) -> None:
    target = seeded["saved"]
    editor = PlaylistEditor(client, page_size=20)
    editor.select(target.short_id)
    editor.form.description.value = "now described"
    empty_sandbox.clear_requests()
    assert editor.save() is not None
    patches = _requests(empty_sandbox, "PATCH")
    assert len(patches) == 1
    assert json.loads(patches["body"].iloc[0]) == {
        "description": "now described",
        "filters": {"events": [{"id": "$pageview"}]},
    }


def test_filters_json_is_validated_before_anything_is_sent(
    empty_sandbox: Any, client: Client, seeded: dict[str, Any]
) -> None:
    target = seeded["saved"]
    editor = PlaylistEditor(client, page_size=20)
    editor.select(target.short_id)
    broken = '{"events": [ {"id": "$pageview"} '
    editor.form.filters.area.value = broken
    editor.form.name.value = "kept name"
    empty_sandbox.clear_requests()
    editor.form.save.click()
    assert len(_requests(empty_sandbox, "PATCH")) == 0
    assert "not valid JSON" in editor.status_text and "line 1" in editor.status_text
    assert editor.form.filters.area.value == broken and editor.form.name.value == "kept name"
    assert "anb-error" in editor.status.line.value

    editor.form.filters.area.value = "[1, 2]"
    assert editor.save() is None and "must be a JSON object" in (editor.error or "")
    editor.form.filters.area.value = "{}"
    assert editor.save() is None and "needs non-empty filters" in (editor.error or "")
    assert len(_requests(empty_sandbox, "PATCH")) == 0

    editor.form.filters.area.value = '{"events": [{"id": "signup"}]}'
    assert editor.save() is not None
    assert json.loads(_stored(empty_sandbox, target.short_id)["filters"]) == {"events": [{"id": "signup"}]}


def test_nothing_to_save_sends_nothing(empty_sandbox: Any, client: Client, seeded: dict[str, Any]) -> None:
    editor = PlaylistEditor(client, page_size=20)
    editor.select(seeded["alpha 0"].short_id)
    empty_sandbox.clear_requests()
    editor.save()
    assert len(_requests(empty_sandbox)) == 0
    assert "Nothing to save" in editor.status_text


def test_unsaved_edits_survive_switching_playlists_and_revert_discards(
    empty_sandbox: Any, client: Client, seeded: dict[str, Any]
) -> None:
    first, second = seeded["alpha 0"].short_id, seeded["alpha 1"].short_id
    editor = PlaylistEditor(client, page_size=20)
    editor.select(first)
    editor.edit(name="draft name", description="draft text")
    editor.table_view.picker.value = second
    assert editor.form.name.value == "alpha 1"
    assert first in editor.drafts
    editor.select(first)
    assert editor.form.name.value == "draft name" and editor.form.description.value == "draft text"
    assert "unsaved edits" in editor.status_text
    editor.form.revert.click()
    assert editor.form.name.value == "alpha 0" and not editor.is_dirty
    assert "Kept your unsaved edits" in editor.status.log.outputs[0]["text"]


def test_refresh_keeps_a_dirty_form_and_updates_a_clean_one(
    empty_sandbox: Any, client: Client, seeded: dict[str, Any]
) -> None:
    target = seeded["beta 4"].short_id
    editor = PlaylistEditor(client, page_size=20)
    editor.select(target)
    client.playlists.update(target, description="changed elsewhere")
    editor.filter_bar.refresh.click()
    assert editor.form.description.value == "changed elsewhere"  # a clean form follows the service
    editor.form.name.value = "my draft"
    client.playlists.update(target, description="changed again")
    editor.refresh()
    assert editor.form.name.value == "my draft" and editor.is_dirty  # a draft is never overwritten
    assert editor.form.description.value == "changed again"  # untouched fields follow the service
    assert editor.changes() == {"name": "my draft"}


def test_busy_state_disables_buttons_while_a_request_runs(
    empty_sandbox: Any, client: Client, seeded: dict[str, Any]
) -> None:
    editor = PlaylistEditor(client, page_size=20)
    editor.select(seeded["alpha 2"].short_id)
    seen: list[tuple[bool, bool]] = []
    editor.form.save.observe(lambda c: seen.append((c["new"], editor.busy)), names="disabled")
    editor.form.name.value = "busy test"
    editor.form.save.click()
    assert seen[0] == (True, True)  # disabled while the PATCH ran
    assert seen[-1] == (False, False)  # enabled again afterwards
    assert not editor.form.save.disabled and not editor.busy


# ---- create, archive, restore ------------------------------------------------------------------


def test_create_collection_and_filters_playlists_from_the_form(empty_sandbox: Any, client: Client) -> None:
    editor = PlaylistEditor(client)
    assert len(editor.playlists) == 0
    editor.create_form.name.value = "fresh collection"
    editor.create_form.create.click()
    posts = _requests(empty_sandbox, "POST")
    assert json.loads(posts["body"].iloc[-1]) == {"type": "collection", "name": "fresh collection"}
    assert editor.selected is not None and editor.selected.name == "fresh collection"
    assert editor.create_form.name.value == ""

    editor.create_form.name.value = "fresh filters"
    editor.create_form.type.value = "filters"
    editor.create_form.create.click()  # no filters given: refused before sending
    assert "needs filters" in editor.status_text
    assert len(_requests(empty_sandbox, "POST")) == 1
    assert editor.create_form.name.value == "fresh filters"
    editor.create_form.filters.area.value = '{"events": [{"id": "$pageview"}]}'
    editor.create_form.create.click()
    assert editor.selected.name == "fresh filters" and editor.selected.type == "filters"
    assert sorted(editor.frame["name"]) == ["fresh collection", "fresh filters"]


def test_archive_asks_first_then_soft_deletes_and_restore_brings_it_back(
    empty_sandbox: Any, client: Client, seeded: dict[str, Any]
) -> None:
    target = seeded["beta 7"].short_id
    editor = PlaylistEditor(client, page_size=20)
    editor.select(target)
    empty_sandbox.clear_requests()
    editor.form.archive.click()
    assert editor.confirm.visible
    assert len(_requests(empty_sandbox, "PATCH")) == 0  # only asked
    editor.confirm.cancel.click()
    assert not editor.confirm.visible and _stored(empty_sandbox, target)["deleted"] == 0

    editor.form.archive.click()
    editor.confirm.yes.click()
    patch = _requests(empty_sandbox, "PATCH")
    assert len(patch) == 1 and json.loads(patch["body"].iloc[0]) == {"deleted": True}
    assert _stored(empty_sandbox, target)["deleted"] == 1
    assert editor.selected is None and target not in set(editor.frame["short_id"])
    assert editor.archived == [target] and editor.restore_view.short_id.value == target

    editor.restore_view.restore.click()
    assert _stored(empty_sandbox, target)["deleted"] == 0
    assert editor.selected is not None and editor.selected.short_id == target
    assert target in set(editor.frame["short_id"]) and editor.archived == []


def test_archive_and_restore_of_a_filters_playlist(
    empty_sandbox: Any, client: Client, seeded: dict[str, Any]
) -> None:
    target = seeded["saved"].short_id
    editor = PlaylistEditor(client, page_size=20)
    assert editor.archive(target)
    assert _stored(empty_sandbox, target)["deleted"] == 1
    assert editor.restore() is not None
    assert _stored(empty_sandbox, target)["deleted"] == 0


# ---- recordings --------------------------------------------------------------------------------


def test_add_and_remove_recordings(empty_sandbox: Any, client: Client, seeded: dict[str, Any]) -> None:
    target = seeded["alpha 3"].short_id
    for n, session_id in enumerate(["session-abc", "session-def"]):
        empty_sandbox.add_recording(session_id, distinct_id=f"user-{n}", start_time="2026-11-20T10:00:00Z")
    editor = PlaylistEditor(client, page_size=20)
    editor.select(target)
    assert len(editor.recordings) == 0
    editor.recordings_view.recording_id.value = "session-abc"
    editor.recordings_view.add.click()
    posts = _requests(empty_sandbox, "POST")
    assert posts["path"].iloc[-1].endswith(f"/{target}/recordings/session-abc/")
    assert list(editor.recordings["id"]) == ["session-abc"]
    assert editor.recordings_view.recording_id.value == ""
    assert editor.add_recording("session-def")
    assert sorted(editor.recordings["id"]) == ["session-abc", "session-def"]

    editor.recordings_view.picker.value = "session-abc"
    editor.recordings_view.remove.click()
    deletes = _requests(empty_sandbox, "DELETE")
    assert deletes["path"].iloc[-1].endswith(f"/{target}/recordings/session-abc/")
    assert list(editor.recordings["id"]) == ["session-def"]
    assert "Removed recording session-abc" in editor.status_text


# ---- errors in plain words, edits kept ---------------------------------------------------------


def test_missing_scope_names_the_scope_and_keeps_edits(empty_sandbox: Any, seeded: dict[str, Any]) -> None:
    key = empty_sandbox.create_personal_key(scopes=["session_recording_playlist:read"])
    with _client(empty_sandbox, key) as reader:
        editor = PlaylistEditor(reader, page_size=20)
        assert len(editor.playlists) == 13  # reading works
        editor.select(seeded["alpha 0"].short_id)
        editor.form.name.value = "not allowed"
        editor.form.description.value = "typed by hand"
        editor.form.save.click()
        assert editor.last_error is not None
        assert WRITE_SCOPE in editor.status_text
        assert "Traceback" not in editor.status.line.value and key not in editor.status.line.value
        assert editor.form.name.value == "not allowed" and editor.form.description.value == "typed by hand"
        assert editor.is_dirty and not editor.form.save.disabled
        assert _stored(empty_sandbox, seeded["alpha 0"].short_id)["name"] == "alpha 0"


def test_delete_is_refused_with_405_and_the_soft_delete_explained(
    empty_sandbox: Any, client: Client, seeded: dict[str, Any]
) -> None:
    target = seeded["alpha 2"].short_id
    editor = PlaylistEditor(client, page_size=20)
    editor.select(target)
    editor.form.name.value = "edited before delete"
    assert editor.delete() is False
    deletes = _requests(empty_sandbox, "DELETE")
    assert deletes["status"].iloc[-1] == 405
    assert "(405)" in editor.status_text and "Archive" in editor.status_text
    assert editor.form.name.value == "edited before delete"
    assert _stored(empty_sandbox, target)["deleted"] == 0


def test_network_fault_is_explained_edits_kept_and_retry_succeeds(
    empty_sandbox: Any, client: Client, seeded: dict[str, Any]
) -> None:
    target = seeded["beta 9"].short_id
    editor = PlaylistEditor(client, page_size=20)
    editor.select(target)
    editor.form.name.value = "saved after the outage"
    empty_sandbox.faults.add(path="*/session_recording_playlists/*", reset=True, methods=["PATCH"])
    editor.form.save.click()
    assert "Could not reach the service" in editor.status_text
    assert "edits are kept" in editor.status_text
    assert editor.form.name.value == "saved after the outage" and editor.is_dirty
    empty_sandbox.faults.clear()
    editor.form.save.click()
    assert editor.last_error is None
    assert _stored(empty_sandbox, target)["name"] == "saved after the outage"


def test_stopped_server_on_refresh_keeps_the_list(empty_sandbox: Any, seeded: dict[str, Any]) -> None:
    client = _client(empty_sandbox)
    editor = PlaylistEditor(client, page_size=20)
    before = list(editor.frame["short_id"])
    empty_sandbox.stop()
    try:
        assert editor.refresh() is False
        assert "Could not reach the service" in editor.status_text
        assert list(editor.frame["short_id"]) == before
        assert not editor.filter_bar.refresh.disabled
    finally:
        client.close()


def test_cloud_refuses_personal_keys_on_recordings_and_synthetic_playlists_are_read_only(
    cloud_sandbox: Any,
) -> None:
    with _client(cloud_sandbox) as cloud:
        editor = PlaylistEditor(cloud, page_size=50)
        synthetic = [p for p in editor.playlists if p.is_synthetic]
        assert synthetic, "the cloud profile lists synthetic playlists"
        editor.select(synthetic[0].short_id)
        assert editor.form.save.disabled and editor.form.name.disabled
        assert "read only" in editor.form.title.value

        collection = next(p for p in editor.playlists if p.type == "collection" and not p.is_synthetic)
        editor.select(collection.short_id)
        editor.recordings_view.recording_id.value = "cloud-rec"
        editor.recordings_view.add.click()
        assert "does not accept personal API keys" in editor.status_text
        assert "web app" in editor.status_text
        assert editor.recordings_view.recording_id.value == "cloud-rec"
