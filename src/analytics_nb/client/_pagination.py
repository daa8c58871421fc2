"""Limit/offset pagination: the first page tells ``count``, the rest are fetched concurrently (bounded).

Pages come back in order, records are de-duplicated by ``id`` (offset paging can repeat a record when rows are
added meanwhile), and a page that comes back short is completed before moving on, so nothing is lost.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import Any
from urllib.parse import parse_qs, urlsplit

from analytics_nb.client._core import Core
from analytics_nb.client._progress import progress_bar
from analytics_nb.errors import PostHogError

__all__ = ["MAX_PAGE_SIZE", "check_page_size", "collect", "iter_records"]

MAX_PAGE_SIZE = 500


def check_page_size(page_size: int) -> int:
    """Validate ``page_size`` (1..500, the real service's maximum)."""
    if isinstance(page_size, bool) or not isinstance(page_size, int) or not 1 <= page_size <= MAX_PAGE_SIZE:
        raise ValueError(
            f"page_size={page_size!r} must be an integer from 1 to {MAX_PAGE_SIZE} (the service's maximum)."
        )
    return page_size


def _limit_of(url: str | None) -> int | None:
    if not url:
        return None
    values = parse_qs(urlsplit(url).query).get("limit")
    try:
        return int(values[0]) if values else None
    except ValueError:
        return None


def _envelope(body: Any, path: str) -> tuple[list[dict[str, Any]], int | None, str | None]:
    if isinstance(body, list):  # an unpaginated list endpoint
        return body, len(body), None
    if not isinstance(body, dict) or not isinstance(body.get("results"), list):
        raise PostHogError(f"GET {path} did not answer with a paginated list {{count, next, results}}.")
    count = body.get("count")
    return body["results"], count if isinstance(count, int) else None, body.get("next")


async def _page(core: Core, path: str, params: dict[str, Any], offset: int, limit: int) -> Any:
    async with core.semaphore:
        return await core.get_json(path, params={**params, "limit": limit, "offset": offset})


async def iter_pages(
    core: Core,
    path: str,
    *,
    params: Mapping[str, Any] | None = None,
    page_size: int = MAX_PAGE_SIZE,
    offset: int = 0,
    max_items: int | None = None,
    desc: str = "records",
) -> AsyncGenerator[list[dict[str, Any]], None]:
    """Yield the pages of a list endpoint in order; after the first, up to ``max_concurrency`` in flight."""
    check_page_size(page_size)
    if max_items is not None and 0 < max_items < page_size:
        page_size = max_items
    base = {k: v for k, v in (params or {}).items() if v is not None}
    first = await _page(core, path, base, offset, page_size)
    results, count, next_url = _envelope(first, path)
    if not next_url or not results:
        yield results
        return
    # The service may clamp the page size; its `next` link says what it used.
    limit = _limit_of(next_url) or len(results)
    end = count if count is not None else None
    if max_items is not None:
        end = offset + max_items if end is None else min(end, offset + max_items)
    total = count if count is None or max_items is None else min(count - offset, max_items)
    bar = progress_bar(core.config.progress, total=total, desc=desc)
    tasks: list[asyncio.Task[Any]] = []
    try:
        bar.update(len(results))
        yield results
        position = offset + len(results)
        if end is None:  # no count: follow `next` one page at a time
            while next_url:
                body = await core.get_json(next_url)
                results, _count, next_url = _envelope(body, path)
                bar.update(len(results))
                yield results
            return
        offsets = list(range(position, end, limit))
        tasks = [asyncio.ensure_future(_page(core, path, base, o, limit)) for o in offsets]
        last_next: str | None = None
        for task_offset, task in zip(offsets, tasks, strict=True):
            body = await task
            results, _count, last_next = _envelope(body, path)
            got = len(results)
            # A short page in the middle (rows deleted meanwhile, or a smaller server clamp): fill the gap.
            while got < limit and last_next and task_offset + got < end:
                more, _c, last_next = _envelope(
                    await _page(core, path, base, task_offset + got, limit - got), path
                )
                if not more:
                    break
                results = results + more
                got += len(more)
            bar.update(len(results))
            yield results
        # Rows added while listing: keep following `next` past the count we started with.
        next_url = last_next
        while next_url and max_items is None:
            body = await core.get_json(next_url)
            results, _count, next_url = _envelope(body, path)
            bar.update(len(results))
            yield results
    finally:
        for task in tasks:
            if not task.done():
                task.cancel()
        for task in tasks:  # collect cancelled/failed siblings so no "exception never retrieved" warnings
            if task.done() and not task.cancelled():
                task.exception()
        bar.close()


async def iter_records(
    core: Core,
    path: str,
    *,
    params: Mapping[str, Any] | None = None,
    page_size: int = MAX_PAGE_SIZE,
    offset: int = 0,
    max_items: int | None = None,
    key: str = "id",
    desc: str = "records",
) -> AsyncIterator[dict[str, Any]]:
    """Yield every record once (de-duplicated by ``key``), in the service's order, up to ``max_items``."""
    if max_items is not None and (
        isinstance(max_items, bool) or not isinstance(max_items, int) or max_items < 0
    ):
        raise ValueError(f"max_items={max_items!r} must be a non-negative integer or None.")
    if max_items == 0:
        return
    seen: set[Any] = set()
    n = 0
    pages: AsyncGenerator[list[dict[str, Any]], None] = iter_pages(
        core, path, params=params, page_size=page_size, offset=offset, max_items=max_items, desc=desc
    )
    try:
        async for page in pages:
            for record in page:
                ident = record.get(key) if isinstance(record, dict) else None
                if ident is not None:
                    if ident in seen:
                        continue
                    seen.add(ident)
                yield record
                n += 1
                if max_items is not None and n >= max_items:
                    return
    finally:
        await pages.aclose()


async def collect(core: Core, path: str, **kw: Any) -> list[dict[str, Any]]:
    """All records of a list endpoint as raw dicts (see ``iter_records``)."""
    return [record async for record in iter_records(core, path, **kw)]
