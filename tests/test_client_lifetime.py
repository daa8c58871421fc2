"""Issue 27 finding 5: a client reachable only through one of its resources (or an iterator a resource handed
out) stays open; a client nothing reaches any more is still collected, closed and its loop thread stopped."""

from __future__ import annotations

import gc
import threading
import weakref
from typing import Any

from analytics_nb import Client


def _loop_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "analytics-nb-client"}


def test_a_client_kept_only_through_its_resource_stays_open(sandbox: Any) -> None:
    playlists = Client(sandbox.url, personal_api_key=sandbox.personal_api_key, progress=False).playlists
    gc.collect()  # the Client object itself is unreachable now
    assert len(playlists.list(max_items=2)) == 2  # raised "This client is closed" before
    flags = Client(sandbox.url, personal_api_key=sandbox.personal_api_key, progress=False).feature_flags
    gc.collect()
    assert flags.list()


def test_an_iterator_keeps_its_client_open(sandbox: Any) -> None:
    iterator = Client(sandbox.url, personal_api_key=sandbox.personal_api_key, progress=False).playlists.iter(
        page_size=1, max_items=3
    )
    gc.collect()
    assert len(list(iterator)) == 3


def test_an_unreachable_client_is_still_closed_and_its_thread_stopped(sandbox: Any) -> None:
    before = _loop_threads()
    client = Client(sandbox.url, personal_api_key=sandbox.personal_api_key, progress=False)
    client.playlists.list(max_items=1)
    thread = client._loop.thread
    core = client._core
    ref = weakref.ref(client)
    del client
    gc.collect()
    assert ref() is None
    thread.join(10)
    assert not thread.is_alive() and core.closed
    assert _loop_threads() <= before
