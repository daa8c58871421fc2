"""Issue 12 finding 3: renaming a saved-filter playlist must not undo a concurrent change of its filters.

The interleaving is made exact with httpx's own response hook on the renaming client (no mocking): the
moment its read of the stored filters comes back, a second client sets new filters; on the old code the
rename then wrote the old filters back, silently.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from analytics_nb import Client
from analytics_nb.errors import ConflictError, PostHogError, ValidationError

OLD = {"date_from": "-7d", "events": [{"id": "$pageview"}]}
NEW = {"date_from": "-30d", "events": [{"id": "signup"}]}


@pytest.fixture
def two(empty_sandbox: Any) -> Iterator[tuple[Client, Client, str, Any]]:
    options: dict[str, Any] = {"progress": False, "max_retries": 0}
    with (
        Client(empty_sandbox.url, personal_api_key=empty_sandbox.personal_api_key, **options) as a,
        Client(empty_sandbox.url, personal_api_key=empty_sandbox.personal_api_key, **options) as b,
    ):
        created = a.playlists.create("filters", "Saved", filters=OLD)
        yield a, b, created.short_id, empty_sandbox


def _after_first_read(client: Client, short_id: str, action: Any, wait: float = 1.0) -> dict[str, Any]:
    """Run ``action`` in a thread as soon as ``client`` has read playlist ``short_id`` once (GET), giving it
    up to ``wait`` seconds to finish before the client goes on."""
    state: dict[str, Any] = {"fired": False, "error": None, "done": False}

    async def hook(response: httpx.Response) -> None:
        request = response.request
        if state["fired"] or request.method != "GET" or not request.url.path.endswith(f"/{short_id}/"):
            return
        state["fired"] = True

        def run() -> None:
            try:
                action()
            except BaseException as exc:  # reported to the test
                state["error"] = exc
            state["done"] = True

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        state["thread"] = thread
        await asyncio.to_thread(thread.join, wait)

    client._core._client().event_hooks["response"].append(hook)
    return state


def test_rename_does_not_undo_a_concurrent_filters_change(two: tuple[Client, Client, str, Any]) -> None:
    a, b, short_id, _sb = two
    state = _after_first_read(a, short_id, lambda: b.playlists.update(short_id, filters=NEW))
    renamed = a.playlists.update(short_id, name="Renamed", keep_filters=True)  # in-process: the lock holds
    state["thread"].join(5)
    assert state["fired"] and state["done"]
    if state["error"] is not None:  # allowed: the writer was told its change did not stay
        assert isinstance(state["error"], ConflictError)
    stored = a.playlists.get(short_id)
    assert renamed.name == stored.name == "Renamed"
    assert stored.filters == NEW  # the concurrent change survived the rename


def test_only_the_changed_field_is_sent_to_a_collection(two: tuple[Client, Client, str, Any]) -> None:
    a, _b, _short_id, sb = two
    collection = a.playlists.create("collection", "C")
    a.playlists.update(collection.short_id, name="C2")
    log = sb.requests()
    patch = log[(log["method"] == "PATCH") & log["path"].str.contains(collection.short_id)].iloc[-1]
    assert '"filters"' not in patch["body"] and '"name":"C2"' in patch["body"].replace(" ", "")


def test_filters_overwritten_right_after_writing_raise_a_conflict(
    two: tuple[Client, Client, str, Any],
) -> None:
    a, _b, short_id, sb = two
    # another program (plain HTTP, outside this process's clients) writes right after a's PATCH lands
    other = httpx.Client(headers={"Authorization": f"Bearer {sb.personal_api_key}"})
    fired = {"n": 0}

    async def hook(response: httpx.Response) -> None:
        if response.request.method == "PATCH" and fired["n"] == 0:
            fired["n"] += 1
            url = str(response.request.url)
            await asyncio.to_thread(other.patch, url, json={"filters": OLD, "name": "Saved"})

    a._core._client().event_hooks["response"].append(hook)
    with pytest.raises(ConflictError) as info:
        a.playlists.update(short_id, filters=NEW)
    other.close()
    err = info.value
    assert isinstance(err, PostHogError)
    assert err.current is not None and err.current.filters == OLD
    assert "apply your change again" in str(err)


def test_rename_sends_only_the_name_so_another_process_change_is_never_undone(
    two: tuple[Client, Client, str, Any],
) -> None:
    """Issue 27 #3: another process (plain HTTP, outside this process's locks) sets new filters right after
    the renaming client's first exchange; the old code had read the filters and wrote them back over the
    new ones. Now the rename sends only the name: the service refuses it (it needs a saved filter's
    filters) and nothing is undone."""
    a, _b, short_id, sb = two
    other = httpx.Client(headers={"Authorization": f"Bearer {sb.personal_api_key}"})
    fired = {"n": 0}

    async def hook(response: httpx.Response) -> None:
        if short_id in response.request.url.path and fired["n"] == 0:
            fired["n"] += 1
            url = f"{sb.url}/api/projects/{sb.project_id}/session_recording_playlists/{short_id}/"
            await asyncio.to_thread(other.patch, url, json={"filters": NEW})

    a._core._client().event_hooks["response"].append(hook)
    with pytest.raises(ValidationError, match="Nothing was changed") as info:
        a.playlists.update(short_id, name="Renamed")
    other.close()
    assert "filters=" in str(info.value) and "keep_filters=True" in str(info.value)
    stored = a.playlists.get(short_id)
    assert fired["n"] == 1 and stored.filters == NEW and stored.name == "Saved"
    log = sb.requests()
    patches = log[(log["method"] == "PATCH") & log["path"].str.contains(short_id)]
    assert '"filters"' not in patches["body"].iloc[0]  # the rename carried the name only
    renamed = a.playlists.update(short_id, name="Renamed", filters=stored.filters)
    assert renamed.name == "Renamed" and renamed.filters == NEW


_WRITER = """
import sys, httpx
url, key, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
with httpx.Client(headers={"Authorization": f"Bearer {key}"}) as http:
    for i in range(n):
        mine = {"date_from": f"-{i + 1}d", "events": [{"id": f"e{i}"}]}
        http.patch(url, json={"filters": mine}).raise_for_status()
        seen = http.get(url).json()["filters"]
        if seen != mine:
            print("UNDONE", i, seen)
print("DONE")
"""


def test_two_processes_renames_and_filter_writes_undo_nothing(two: tuple[Client, Client, str, Any]) -> None:
    """Two OS processes: one writes filters 25 times (checking each write by reading it back), this one
    updates the same saved-filter playlist 25 times without filters, and a collection's name while the
    other changes its description: no write of either is undone."""
    import subprocess
    import sys

    a, _b, short_id, sb = two
    collection = a.playlists.create("collection", "C0", description="d0")
    url = f"{sb.url}/api/projects/{sb.project_id}/session_recording_playlists/{short_id}/"
    writer = subprocess.Popen(
        [sys.executable, "-c", _WRITER, url, sb.personal_api_key, "25"], stdout=subprocess.PIPE, text=True
    )
    refused = 0
    for i in range(25):
        try:
            a.playlists.update(short_id, name=f"n{i}", pinned=bool(i % 2))
        except ValidationError:
            refused += 1
        a.playlists.update(collection.short_id, name=f"C{i + 1}")
    out, _ = writer.communicate(timeout=60)
    assert "DONE" in out and "UNDONE" not in out, out
    assert refused == 25
    assert a.playlists.get(short_id).filters == {"date_from": "-25d", "events": [{"id": "e24"}]}
    stored = a.playlists.get(collection.short_id)
    assert stored.name == "C25" and stored.description == "d0"
