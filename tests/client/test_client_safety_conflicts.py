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


@pytest.mark.filterwarnings("ignore:keep_filters=True:UserWarning")  # the hook holds the rename for 1 s
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


_RENAMER = """
import sys, warnings
from pathlib import Path
from analytics_nb import Client
url, key, short_id, stop, ready = sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4]), Path(sys.argv[5])
warnings.simplefilter("error")  # a slow keep_filters resend would warn: fail loudly instead
with Client(url, personal_api_key=key, progress=False, max_retries=0) as client:
    i = 0
    while not stop.exists() and i < 2000:
        client.playlists.update(short_id, name=f"r{i}", keep_filters=True)
        ready.touch()
        i += 1
print("RENAMED", i)
"""


def test_filter_writes_undone_by_another_processes_keep_filters_are_reported(
    two: tuple[Client, Client, str, Any], tmp_path: Any
) -> None:
    """Issue 37 #7: another OS process renames with ``keep_filters=True`` in a loop (read the filters, write
    them back) while this one sets new filters 60 times. PostHog has no conditional update, so a rename
    that read the filters before a write can land after it and undo it; on the old code 7 of 100 such
    writes were lost while ``update`` returned normally. Every write undone must now raise
    ``ConflictError``: checked against the sandbox's log of the PATCHes in the order it applied them."""
    import json
    import subprocess
    import sys

    a, _b, short_id, sb = two
    import time

    stop, ready = tmp_path / "stop", tmp_path / "ready"
    renamer = subprocess.Popen(
        [sys.executable, "-c", _RENAMER, sb.url, sb.personal_api_key, short_id, str(stop), str(ready)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not ready.exists() and time.monotonic() < deadline and renamer.poll() is None:
            time.sleep(0.02)
        sb.clear_requests()
        outcome: dict[str, str] = {}
        for i in range(60):
            mine = {"date_from": f"-{i + 1}d", "events": [{"id": f"w{i}"}]}
            try:
                a.playlists.update(short_id, filters=mine)
                outcome[f"w{i}"] = "ok"
            except ConflictError as exc:
                assert short_id in str(exc) and f'"w{i}"' in str(exc)
                outcome[f"w{i}"] = "conflict"
    finally:
        stop.touch()
        out, err = renamer.communicate(timeout=60)
    assert "RENAMED" in out, err
    log = sb.requests()
    patches = log[(log["method"] == "PATCH") & log["path"].str.contains(short_id)]
    bodies = [json.loads(b) for b in patches["body"]]
    assert sum("name" in b for b in bodies) > 30, "the renamer did not run alongside"
    current = None
    lost: set[str] = set()
    for body in bodies:  # the filters as stored after each PATCH, in the order they were applied
        event = body["filters"]["events"][0]["id"]
        if "name" not in body:
            current = event
        elif current is not None and event != current:
            lost.add(current)  # a rename resent older filters over this write
    silent = sorted(w for w in lost if outcome.get(w) == "ok")
    assert not silent, f"writes undone without a ConflictError: {silent} (outcomes {outcome})"
