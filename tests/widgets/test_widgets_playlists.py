"""Headless tests of PlaylistEditor: every control driven from Python against a real sandbox over HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest

from _clients import client_for
from analytics_nb import Client
from analytics_nb.widgets import PlaylistEditor

WRITE_SCOPE = "session_recording_playlist:write"


@pytest.fixture
def client(empty_sandbox: Any) -> Iterator[Client]:
    c = client_for(empty_sandbox, project_id=empty_sandbox.project_id, max_retries=0)
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
        assert short_id in editor._table_view.table.value
    assert [value for _label, value in editor._table_view.picker.options] == list(frame["short_id"])
    assert editor._table_view.prev.disabled and not editor._table_view.next.disabled
    assert "13 playlists found" in editor.status_text


def test_paging_buttons_move_through_pages(
    empty_sandbox: Any, client: Client, seeded: dict[str, Any]
) -> None:
    editor = PlaylistEditor(client, page_size=5)
    first = list(editor.frame["short_id"])
    editor._table_view.next.click()
    assert editor.page == 1
    second = list(editor.frame["short_id"])
    assert not set(first) & set(second)
    editor._table_view.next.click()
    assert editor.page == 2 and len(editor.frame) == 3 and editor._table_view.next.disabled
    editor._table_view.prev.click()
    assert list(editor.frame["short_id"]) == second
    assert "page 2 of 3" in editor._table_view.page_label.value


def test_search_type_and_pinned_filters_reach_the_service(
    empty_sandbox: Any, client: Client, seeded: dict[str, Any]
) -> None:
    editor = PlaylistEditor(client, page_size=20)
    editor._filter_bar.search.value = "alpha"
    editor._filter_bar.refresh.click()
    assert sorted(editor.frame["name"]) == ["alpha 0", "alpha 1", "alpha 2", "alpha 3"]
    assert "search=alpha" in _requests(empty_sandbox, "GET")["query"].iloc[-1]

    editor.search("")
    editor._filter_bar.type.value = "filters"  # observing the dropdown reloads at once
    assert list(editor.frame["name"]) == ["saved search"]
    assert "type=filters" in _requests(empty_sandbox, "GET")["query"].iloc[-1]

    editor._filter_bar.type.value = ""
    editor._filter_bar.pinned.value = True
    assert len(editor.frame) == 3 and editor.frame["pinned"].all()
    assert "pinned=true" in _requests(empty_sandbox, "GET")["query"].iloc[-1]

    assert editor.search("zzz-nothing", pinned=False)
    assert len(editor.frame) == 0 and "nothing to show" in editor._table_view.table.value


# ---- the form and Save -------------------------------------------------------------------------


def test_selecting_fills_the_form_and_loads_recordings(
    empty_sandbox: Any, client: Client, seeded: dict[str, Any]
) -> None:
    target = seeded["alpha 1"]
    empty_sandbox.add_recording("rec-1", distinct_id="user-0", start_time="2026-11-20T10:00:00Z", duration=60)
    client.playlists.add_recording(target.short_id, "rec-1")
    editor = PlaylistEditor(client, page_size=20)
    editor._table_view.picker.value = target.short_id
    assert editor.selected is not None and editor.selected.short_id == target.short_id
    assert editor._form.name.value == "alpha 1"
    assert editor._form.description.value == "d1"
    assert json.loads(editor._form.filters.area.value) == {}
    assert list(editor.recordings["id"]) == ["rec-1"]
    assert editor._recordings_view.picker.options == ("rec-1",)
    assert "rec-1" in editor._recordings_view.table.value


def test_save_sends_one_patch_with_only_the_changed_fields(
    empty_sandbox: Any, client: Client, seeded: dict[str, Any]
) -> None:
    target = seeded["beta 5"]
    editor = PlaylistEditor(client, page_size=20)
    editor.select(target.short_id)
    editor._form.name.value = "beta renamed"
    editor._form.pinned.value = True
    assert editor.is_dirty and "unsaved" in editor._form.dirty.value
    empty_sandbox.clear_requests()
    editor._form.save.click()

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
    editor._form.description.value = "now described"
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
    editor._form.filters.area.value = broken
    editor._form.name.value = "kept name"
    empty_sandbox.clear_requests()
    editor._form.save.click()
    assert len(_requests(empty_sandbox, "PATCH")) == 0
    assert "not valid JSON" in editor.status_text and "line 1" in editor.status_text
    assert editor._form.filters.area.value == broken and editor._form.name.value == "kept name"
    assert "anb-error" in editor._status.line.value

    editor._form.filters.area.value = "[1, 2]"
    assert editor.save() is None and "must be a JSON object" in (editor.error or "")
    editor._form.filters.area.value = "{}"
    assert editor.save() is None and "needs non-empty filters" in (editor.error or "")
    assert len(_requests(empty_sandbox, "PATCH")) == 0

    editor._form.filters.area.value = '{"events": [{"id": "signup"}]}'
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
    editor._table_view.picker.value = second
    assert editor._form.name.value == "alpha 1"
    assert first in editor.drafts
    editor.select(first)
    assert editor._form.name.value == "draft name" and editor._form.description.value == "draft text"
    assert "unsaved edits" in editor.status_text
    editor._form.revert.click()
    assert editor._form.name.value == "alpha 0" and not editor.is_dirty
    assert "Kept your unsaved edits" in editor._status.log.outputs[0]["text"]


def test_refresh_keeps_a_dirty_form_and_updates_a_clean_one(
    empty_sandbox: Any, client: Client, seeded: dict[str, Any]
) -> None:
    target = seeded["beta 4"].short_id
    editor = PlaylistEditor(client, page_size=20)
    editor.select(target)
    client.playlists.update(target, description="changed elsewhere")
    editor._filter_bar.refresh.click()
    assert editor._form.description.value == "changed elsewhere"  # a clean form follows the service
    editor._form.name.value = "my draft"
    client.playlists.update(target, description="changed again")
    editor.refresh()
    assert editor._form.name.value == "my draft" and editor.is_dirty  # a draft is never overwritten
    assert editor._form.description.value == "changed again"  # untouched fields follow the service
    assert editor.changes() == {"name": "my draft"}


def test_busy_state_disables_buttons_while_a_request_runs(
    empty_sandbox: Any, client: Client, seeded: dict[str, Any]
) -> None:
    editor = PlaylistEditor(client, page_size=20)
    editor.select(seeded["alpha 2"].short_id)
    seen: list[tuple[bool, bool]] = []
    editor._form.save.observe(lambda c: seen.append((c["new"], editor.busy)), names="disabled")
    editor._form.name.value = "busy test"
    editor._form.save.click()
    assert seen[0] == (True, True)  # disabled while the PATCH ran
    assert seen[-1] == (False, False)  # enabled again afterwards
    assert not editor._form.save.disabled and not editor.busy


# ---- create, archive, restore ------------------------------------------------------------------


def test_create_collection_and_filters_playlists_from_the_form(empty_sandbox: Any, client: Client) -> None:
    editor = PlaylistEditor(client)
    assert len(editor.playlists) == 0
    editor._create_form.name.value = "fresh collection"
    editor._create_form.create.click()
    posts = _requests(empty_sandbox, "POST")
    assert json.loads(posts["body"].iloc[-1]) == {"type": "collection", "name": "fresh collection"}
    assert editor.selected is not None and editor.selected.name == "fresh collection"
    assert editor._create_form.name.value == ""

    editor._create_form.name.value = "fresh filters"
    editor._create_form.type.value = "filters"
    editor._create_form.create.click()  # no filters given: refused before sending
    assert "needs filters" in editor.status_text
    assert len(_requests(empty_sandbox, "POST")) == 1
    assert editor._create_form.name.value == "fresh filters"
    editor._create_form.filters.area.value = '{"events": [{"id": "$pageview"}]}'
    editor._create_form.create.click()
    assert editor.selected.name == "fresh filters" and editor.selected.type == "filters"
    assert sorted(editor.frame["name"]) == ["fresh collection", "fresh filters"]


def test_archive_asks_first_then_soft_deletes_and_restore_brings_it_back(
    empty_sandbox: Any, client: Client, seeded: dict[str, Any]
) -> None:
    target = seeded["beta 7"].short_id
    editor = PlaylistEditor(client, page_size=20)
    editor.select(target)
    empty_sandbox.clear_requests()
    editor._form.archive.click()
    assert editor._confirm.visible
    assert len(_requests(empty_sandbox, "PATCH")) == 0  # only asked
    editor._confirm.cancel.click()
    assert not editor._confirm.visible and _stored(empty_sandbox, target)["deleted"] == 0

    editor._form.archive.click()
    editor._confirm.yes.click()
    patch = _requests(empty_sandbox, "PATCH")
    assert len(patch) == 1 and json.loads(patch["body"].iloc[0]) == {"deleted": True}
    assert _stored(empty_sandbox, target)["deleted"] == 1
    assert editor.selected is None and target not in set(editor.frame["short_id"])
    assert editor.archived == [target] and editor._restore_view.short_id.value == target

    editor._restore_view.restore.click()
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
    editor._recordings_view.recording_id.value = "session-abc"
    editor._recordings_view.add.click()
    posts = _requests(empty_sandbox, "POST")
    assert posts["path"].iloc[-1].endswith(f"/{target}/recordings/session-abc/")
    assert list(editor.recordings["id"]) == ["session-abc"]
    assert editor._recordings_view.recording_id.value == ""
    assert editor.add_recording("session-def")
    assert sorted(editor.recordings["id"]) == ["session-abc", "session-def"]

    editor._recordings_view.picker.value = "session-abc"
    editor._recordings_view.remove.click()
    deletes = _requests(empty_sandbox, "DELETE")
    assert deletes["path"].iloc[-1].endswith(f"/{target}/recordings/session-abc/")
    assert list(editor.recordings["id"]) == ["session-def"]
    assert "Removed recording session-abc" in editor.status_text


# ---- errors in plain words, edits kept ---------------------------------------------------------


def test_missing_scope_names_the_scope_and_keeps_edits(empty_sandbox: Any, seeded: dict[str, Any]) -> None:
    key = empty_sandbox.create_personal_key(scopes=["session_recording_playlist:read"])
    with client_for(empty_sandbox, key, project_id=empty_sandbox.project_id, max_retries=0) as reader:
        editor = PlaylistEditor(reader, page_size=20)
        assert len(editor.playlists) == 13  # reading works
        editor.select(seeded["alpha 0"].short_id)
        editor._form.name.value = "not allowed"
        editor._form.description.value = "typed by hand"
        editor._form.save.click()
        assert editor.last_error is not None
        assert WRITE_SCOPE in editor.status_text
        assert "Traceback" not in editor._status.line.value and key not in editor._status.line.value
        assert editor._form.name.value == "not allowed" and editor._form.description.value == "typed by hand"
        assert editor.is_dirty and not editor._form.save.disabled
        assert _stored(empty_sandbox, seeded["alpha 0"].short_id)["name"] == "alpha 0"


def test_delete_is_refused_with_405_and_the_soft_delete_explained(
    empty_sandbox: Any, client: Client, seeded: dict[str, Any]
) -> None:
    target = seeded["alpha 2"].short_id
    editor = PlaylistEditor(client, page_size=20)
    editor.select(target)
    editor._form.name.value = "edited before delete"
    assert editor.delete() is False
    deletes = _requests(empty_sandbox, "DELETE")
    assert deletes["status"].iloc[-1] == 405
    assert "(405)" in editor.status_text and "Archive" in editor.status_text
    assert editor._form.name.value == "edited before delete"
    assert _stored(empty_sandbox, target)["deleted"] == 0


def test_network_fault_is_explained_edits_kept_and_retry_succeeds(
    empty_sandbox: Any, client: Client, seeded: dict[str, Any]
) -> None:
    target = seeded["beta 9"].short_id
    editor = PlaylistEditor(client, page_size=20)
    editor.select(target)
    editor._form.name.value = "saved after the outage"
    empty_sandbox.faults.add(path="*/session_recording_playlists/*", reset=True, methods=["PATCH"])
    editor._form.save.click()
    assert "Could not reach the service" in editor.status_text
    assert "edits are kept" in editor.status_text
    assert editor._form.name.value == "saved after the outage" and editor.is_dirty
    empty_sandbox.faults.clear()
    editor._form.save.click()
    assert editor.last_error is None
    assert _stored(empty_sandbox, target)["name"] == "saved after the outage"


def test_stopped_server_on_refresh_keeps_the_list(empty_sandbox: Any, seeded: dict[str, Any]) -> None:
    client = client_for(empty_sandbox, project_id=empty_sandbox.project_id, max_retries=0)
    editor = PlaylistEditor(client, page_size=20)
    before = list(editor.frame["short_id"])
    empty_sandbox.stop()
    try:
        assert editor.refresh() is False
        assert "Could not reach the service" in editor.status_text
        assert list(editor.frame["short_id"]) == before
        assert not editor._filter_bar.refresh.disabled
    finally:
        client.close()


def test_cloud_refuses_personal_keys_on_recordings_and_synthetic_playlists_are_read_only(
    cloud_sandbox: Any,
) -> None:
    with client_for(cloud_sandbox, project_id=cloud_sandbox.project_id, max_retries=0) as cloud:
        editor = PlaylistEditor(cloud, page_size=50)
        synthetic = [p for p in editor.playlists if p.is_synthetic]
        assert synthetic, "the cloud profile lists synthetic playlists"
        editor.select(synthetic[0].short_id)
        assert editor._form.save.disabled and editor._form.name.disabled
        assert "read only" in editor._form.title.value

        collection = next(p for p in editor.playlists if p.type == "collection" and not p.is_synthetic)
        editor.select(collection.short_id)
        editor._recordings_view.recording_id.value = "cloud-rec"
        editor._recordings_view.add.click()
        assert "does not accept personal API keys" in editor.status_text
        assert "web app" in editor.status_text
        assert editor._recordings_view.recording_id.value == "cloud-rec"


# ---- changes made in code (issue 29 #7) ------------------------------------------------------------------


def test_the_list_reloads_after_an_archive_made_in_code(
    empty_sandbox: Any, client: Client, seeded: dict[str, Any]
) -> None:
    """The notebook archives a playlist through the client (not the panel): the list was stale until a
    manual Refresh. Now the write marks the list outdated and it reloads at the end of the cell (here:
    ``refresh_if_outdated()``, what the IPython post_run_cell hook calls)."""
    editor = PlaylistEditor(client, page_size=20)
    gone = seeded["alpha 1"].short_id
    assert gone in editor.frame["short_id"].tolist() and editor.outdated is False
    assert editor.refresh_if_outdated() is False  # nothing changed: no request
    client.playlists.archive(gone)  # in code, through the same client
    assert editor.outdated is True
    assert editor.refresh_if_outdated() is True
    assert gone not in editor.frame["short_id"].tolist() and editor.outdated is False
    assert "Reloaded after changes made in code: 12 playlists found" in editor.status_text
    made = client.playlists.create("collection", "made in code")
    assert editor.outdated and editor.refresh_if_outdated()
    assert made.short_id in editor.frame["short_id"].tolist()


def test_the_panels_own_writes_and_other_paths_do_not_mark_it_outdated(
    empty_sandbox: Any, client: Client, seeded: dict[str, Any]
) -> None:
    editor = PlaylistEditor(client, page_size=20)
    assert editor.archive(seeded["beta 5"].short_id)  # the panel updated its list itself
    assert editor.outdated is False
    client.capture("user-1", "clicked")  # a write elsewhere
    assert editor.outdated is False
    assert len(client.core.write_listeners) == 1
    editor.close()  # a closed panel stops listening
    assert client.core.write_listeners == []
    client.playlists.create("collection", "after the panel is closed")
    assert editor.outdated is False


def test_the_post_run_cell_hook_reloads_in_ipython(
    empty_sandbox: Any, client: Client, seeded: dict[str, Any]
) -> None:
    """In a real IPython shell the end of a cell reloads an outdated list."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        shell.user_ns.update(client=client, PlaylistEditor=PlaylistEditor, gone=seeded["alpha 2"].short_id)
        shell.run_cell("editor = PlaylistEditor(client, page_size=20)")
        editor = shell.user_ns["editor"]
        assert seeded["alpha 2"].short_id in editor.frame["short_id"].tolist()
        shell.run_cell("client.playlists.archive(gone)")
        assert editor.outdated is False  # reloaded at the end of that cell
        assert seeded["alpha 2"].short_id not in editor.frame["short_id"].tolist()
        assert "Reloaded after changes made in code" in editor.status_text
    finally:
        InteractiveShell.clear_instance()


def test_recordings_warning_goes_to_the_status_not_the_cell_output(
    empty_sandbox: Any, client: Client, seeded: dict[str, Any]
) -> None:
    """A collection item with no recording the service can load: `recordings()` warns
    (`IncompleteRecordingsWarning`); the editor shows it in its status line (kind "warning") and message
    log, keeps it in ``.warnings`` and lets nothing print in the cell."""
    import warnings

    from analytics_nb.errors import IncompleteRecordingsWarning

    target = seeded["alpha 2"]
    empty_sandbox.add_recording("rec-2", distinct_id="user-0", duration=60)
    client.playlists.add_recording(target.short_id, "rec-2")
    client.playlists.add_recording(target.short_id, "never-ingested")
    editor = PlaylistEditor(client, page_size=20)
    with warnings.catch_warnings(record=True) as leaked:
        warnings.simplefilter("always")
        editor._table_view.picker.value = target.short_id
    assert [w for w in leaked if issubclass(w.category, UserWarning)] == []
    assert list(editor.recordings["id"]) == ["rec-2"]
    assert editor.status_kind == "warning" and "1 recording(s)" in editor.status_text
    assert "IncompleteRecordingsWarning" in editor.status_text and "1 missing" in editor.status_text
    assert [w.category for w in editor.warnings] == [IncompleteRecordingsWarning]
    logged = "".join(o.get("text", "") for o in editor._status.log.outputs)
    assert logged.count("IncompleteRecordingsWarning") == 1
