"""`client.transformations` on an instance without the plugin API (PostHog PR #97440 removes plugins, plugin
configs and the `pipeline_*` routes): every verb, `iter()` included, says so and points to
`client.hog_functions` instead of a bare 404 (the sandbox's `no_plugin_api` switch plays that instance)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from analytics_nb import AsyncClient, Client
from analytics_nb.errors import NotFoundError
from analytics_nb.sandbox import Sandbox, start


@pytest.fixture(scope="module")
def gone() -> Iterator[tuple[Sandbox, int]]:
    with start(seed="demo", profile="spec") as sb:
        with Client(sb.url, personal_api_key=sb.personal_api_key, progress=False) as client:
            existing = client.transformations.list()[0].id
        assert existing is not None
        sb.set_switch("no_plugin_api")
        yield sb, existing


VERBS: dict[str, Callable[[Any, int], Any]] = {
    "iter": lambda t, i: next(iter(t.iter())),
    "iter (all)": lambda t, i: list(t.iter()),
    "list": lambda t, i: t.list(),
    "frame": lambda t, i: t.frame(),
    "get": lambda t, i: t.get(i),
    "create": lambda t, i: t.create(plugin_type="source", name="x"),
    "update": lambda t, i: t.update(i, name="renamed"),
    "delete": lambda t, i: t.delete(i),
    "check_for_updates": lambda t, i: t.check_for_updates(i),
    "source": lambda t, i: t.source(i),
    "sources_frame": lambda t, i: t.sources_frame(),
    "sources_frame(ids)": lambda t, i: t.sources_frame([i]),
    "update_source": lambda t, i: t.update_source(i, {"index.ts": "x"}),
    "upgrade": lambda t, i: t.upgrade(i),
    "activity": lambda t, i: t.activity(),
    "activity_records": lambda t, i: t.activity_records(),
    "activity_frame": lambda t, i: t.activity_frame(),
    "exports_unsubscribe_configs": lambda t, i: t.exports_unsubscribe_configs(),
    "repository": lambda t, i: t.repository(),
    "unused": lambda t, i: t.unused(),
}


@pytest.mark.parametrize("verb", list(VERBS))
def test_every_verb_says_the_plugin_api_is_gone(gone: tuple[Sandbox, int], verb: str) -> None:
    """`iter()` was missed before (a bare 404 from the first page); every verb now names PR #97440 and the
    replacement."""
    sb, existing = gone
    with (
        Client(sb.url, personal_api_key=sb.personal_api_key, progress=False) as client,
        pytest.raises(NotFoundError, match="#97440") as raised,
    ):
        VERBS[verb](client.transformations, existing)
    assert "client.hog_functions" in str(raised.value)
    assert sb.personal_api_key not in str(raised.value)


def test_async_iter_says_the_plugin_api_is_gone(gone: tuple[Sandbox, int]) -> None:
    sb, _ = gone

    async def walk() -> None:
        async with AsyncClient(sb.url, personal_api_key=sb.personal_api_key, progress=False) as client:
            async for _ in client.transformations.iter():
                pass

    with pytest.raises(NotFoundError, match=r"client\.hog_functions"):
        asyncio.run(walk())
