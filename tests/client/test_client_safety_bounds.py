"""Issue 37 findings 5-8: a deadline for each whole request, bounded memory for answers and paging, `/flags`
records checked against their keys, and a `phs_` key given as the personal key explained.

Faults come from the sandbox's own injection: ``trickle`` (the body one byte at a time), ``kind="endless_pages"``
(a saved filter that always says more follow), ``kind="flag_key_mismatch"`` (a `/flags` record whose ``key``
is not its entry's)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from _clients import client_for
from analytics_nb.errors import (
    NetworkError,
)
from analytics_nb.sandbox import Sandbox

TRANSPORTS = [
    "httpx",
    pytest.param(
        "aiohttp",
        marks=pytest.mark.skipif(
            not __import__("analytics_nb.client._transport", fromlist=["x"]).aiohttp_available(),
            reason="the fast extra is not installed",
        ),
    ),
]


@pytest.fixture
def faults(sandbox: Sandbox) -> Iterator[Sandbox]:
    """The module's sandbox, its fault rules cleared after the test."""
    yield sandbox
    sandbox.faults.clear()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_trickling_answer_is_cut_at_the_timeout(faults: Sandbox, transport: str) -> None:
    # A byte every 50 ms never lets a read time out; the whole request must still end at timeout=1 s.
    faults.faults.add(path="/api/projects/*/feature_flags*", trickle=0.05, methods=["GET"])
    with client_for(faults, ids=True, timeout=1.0, http_transport=transport) as client:
        started = time.monotonic()
        with pytest.raises(NetworkError) as info:
            client.feature_flags.list()
        took = time.monotonic() - started
    assert took < 3.0, took  # one attempt, not retried, cut at the deadline
    message = str(info.value)
    assert "timeout=1 s" in message and "whole request" in message
    assert faults.personal_api_key not in message


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_trickled_answer_within_the_timeout_is_read(faults: Sandbox, transport: str) -> None:
    faults.faults.add(path="/api/projects/*/", trickle=0.001, methods=["GET"])
    with client_for(faults, ids=True, timeout=20.0, http_transport=transport) as client:
        assert client.projects.get(faults.project_id).id == faults.project_id
