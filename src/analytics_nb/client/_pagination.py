"""Limit/offset pagination: the first page tells ``count``, the rest are fetched concurrently (bounded).

Pages come back in order and records are de-duplicated by ``id`` (offset paging repeats a record when rows are
added or move forward meanwhile). Offset paging can also *skip* a row: one renamed while the listing runs
moves to the front under the default ``-last_modified_at`` order, into pages already read. So a full listing
checks itself: when the pages' ``count`` changed, or fewer distinct rows arrived than ``count`` said, the list
is walked again and the rows not seen yet are added (up to ``MAX_PASSES`` walks). A listing that still cannot
be shown complete ends with an ``IncompleteListingWarning`` giving the counts. A ``next`` link that repeats or
does not advance stops with a ``PaginationError`` instead of looping forever.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass, field
from operator import attrgetter, itemgetter
from typing import Any
from urllib.parse import parse_qs, urlsplit

from analytics_nb.client._core import Core
from analytics_nb.client._progress import progress_bar
from analytics_nb.errors import IncompleteListingWarning, PaginationError, PostHogError

__all__ = [
    "MAX_PAGE_SIZE",
    "MAX_PASSES",
    "PageGuard",
    "check_page_size",
    "collect",
    "iter_record_pages",
    "iter_records",
    "record_value",
]

MAX_PAGE_SIZE = 500
MAX_PASSES = 3
"""Walks of a list at most (the first and up to two check walks) before reporting it incomplete."""
STALL_PAGES = 3
"""Pages in a row that bring no new record before a followed ``next`` chain counts as stuck."""


class PageGuard:
    """Stops a followed chain of pages that cannot end: a ``next`` link seen before, an ``offset`` that does
    not advance, or ``STALL_PAGES`` pages in a row with nothing new (a server that ignores the offset)."""

    def __init__(self, what: str, *, key: str = "id") -> None:
        self.what = what
        self.key = key
        self._links: set[str] = set()
        self._offset: int | None = None
        self._ids: set[Any] = set()
        self._stalled = 0

    def link(self, url: str) -> None:
        """Check a ``next`` link before following it."""
        if url in self._links:
            raise PaginationError(
                f"Listing {self.what} stopped: the service sent the same next-page link twice ({url}), so "
                "following it would never end. The rows read so far are not returned; retry, or report it "
                "to whoever runs the server.",
                url=url,
            )
        self._links.add(url)
        offset = _offset_of(url)
        if offset is not None:
            if self._offset is not None and offset <= self._offset:
                raise PaginationError(
                    f"Listing {self.what} stopped: the next-page link does not advance (offset {offset} "
                    f"after {self._offset}), so following it would never end. Retry, or report it to whoever "
                    "runs the server.",
                    url=url,
                )
            self._offset = offset

    def page(self, records: list[Any]) -> None:
        """Check that a page brought at least one record not seen before (within ``STALL_PAGES`` pages)."""
        fresh = False
        for record in records:
            ident = record_value(record, self.key)
            if ident is None or ident not in self._ids:
                fresh = True
            if ident is not None:
                self._ids.add(ident)
        self._stalled = 0 if fresh or not records else self._stalled + 1
        if self._stalled >= STALL_PAGES:
            raise PaginationError(
                f"Listing {self.what} stopped: {STALL_PAGES} pages in a row repeated records already read "
                "while the service kept offering a next page, so the listing would never end. Retry, or "
                "report it to whoever runs the server.",
            )


@dataclass
class _Pass:
    """What one walk of a list saw: every ``count`` the pages gave."""

    counts: list[int] = field(default_factory=list)

    def note(self, count: int | None) -> None:
        if count is not None:
            self.counts.append(count)


def check_page_size(page_size: int) -> int:
    """Validate ``page_size`` (1..500, the real service's maximum)."""
    if isinstance(page_size, bool) or not isinstance(page_size, int) or not 1 <= page_size <= MAX_PAGE_SIZE:
        raise ValueError(
            f"page_size={page_size!r} must be an integer from 1 to {MAX_PAGE_SIZE} (the service's maximum)."
        )
    return page_size


def _query_int(url: str | None, name: str) -> int | None:
    if not url:
        return None
    values = parse_qs(urlsplit(url).query).get(name)
    try:
        return int(values[0]) if values else None
    except ValueError:
        return None


def _limit_of(url: str | None) -> int | None:
    return _query_int(url, "limit")


def _offset_of(url: str | None) -> int | None:
    return _query_int(url, "offset")


def record_value(record: Any, key: str) -> Any:
    """A record's ``key`` field: a dict as the service sends it, or a compact row decoded by a
    ``frames.RowFormat`` (a msgspec ``Struct``, whose fields are attributes); None when absent or when the
    record is neither."""
    if isinstance(record, dict):
        return record.get(key)
    if key in getattr(record.__class__, "__struct_fields__", ()):
        return getattr(record, key)
    return None


def _envelope(body: Any, path: str) -> tuple[list[dict[str, Any]], int | None, str | None]:
    if isinstance(body, list):  # an unpaginated list endpoint
        return body, len(body), None
    if not isinstance(body, dict) or not isinstance(body.get("results"), list):
        raise PostHogError(f"GET {path} did not answer with a paginated list {{count, next, results}}.")
    count = body.get("count")
    return body["results"], count if isinstance(count, int) else None, body.get("next")


async def _page(
    core: Core,
    path: str,
    params: dict[str, Any],
    offset: int,
    limit: int,
    decoder: Callable[[bytes], Any] | None = None,
) -> Any:
    async with core.semaphore:
        return await core.get_json(path, params={**params, "limit": limit, "offset": offset}, decoder=decoder)


async def iter_pages(
    core: Core,
    path: str,
    *,
    params: Mapping[str, Any] | None = None,
    page_size: int = MAX_PAGE_SIZE,
    offset: int = 0,
    max_items: int | None = None,
    desc: str = "records",
    seen: _Pass | None = None,
    decoder: Callable[[bytes], Any] | None = None,
) -> AsyncGenerator[list[Any], None]:
    """Yield the pages of a list endpoint in order; after the first, up to ``max_concurrency`` in flight.

    ``seen`` collects the ``count`` of every page (``iter_records`` uses it to check the walk). ``decoder``
    reads each page first (see ``Core.get_json``): records are then its compact rows where a page fits.
    """
    check_page_size(page_size)
    state = seen if seen is not None else _Pass()
    guard = PageGuard(desc)
    if max_items is not None and 0 < max_items < page_size:
        page_size = max_items
    base = {k: v for k, v in (params or {}).items() if v is not None}
    first = await _page(core, path, base, offset, page_size, decoder)
    results, count, next_url = _envelope(first, path)
    state.note(count)
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
            guard.page(results)
            while next_url:
                guard.link(next_url)
                body = await core.get_json(next_url, decoder=decoder)
                results, _count, next_url = _envelope(body, path)
                guard.page(results)
                bar.update(len(results))
                yield results
                if not results:
                    return
            return
        offsets = list(range(position, end, limit))
        tasks = [asyncio.ensure_future(_page(core, path, base, o, limit, decoder)) for o in offsets]
        last_next: str | None = None
        for task_offset, task in zip(offsets, tasks, strict=True):
            body = await task
            results, page_count, last_next = _envelope(body, path)
            state.note(page_count)
            got = len(results)
            # A short page in the middle (rows deleted meanwhile, or a smaller server clamp): fill the gap.
            while got < limit and last_next and task_offset + got < end:
                more, more_count, last_next = _envelope(
                    await _page(core, path, base, task_offset + got, limit - got, decoder), path
                )
                state.note(more_count)
                if not more:
                    break
                results = results + more
                got += len(more)
            bar.update(len(results))
            yield results
        # Rows added while listing: keep following `next` past the count we started with.
        next_url = last_next
        while next_url and max_items is None:
            guard.link(next_url)
            body = await core.get_json(next_url, decoder=decoder)
            results, page_count, next_url = _envelope(body, path)
            state.note(page_count)
            guard.page(results)
            bar.update(len(results))
            yield results
            if not results:
                break
    finally:
        for task in tasks:
            if not task.done():
                task.cancel()
        for task in tasks:  # collect cancelled/failed siblings so no "exception never retrieved" warnings
            if task.done() and not task.cancelled():
                task.exception()
        bar.close()


def _distinct_new_ids(page: list[Any], key: str, seen: set[Any]) -> list[Any] | None:
    """The ``key`` of every record of ``page`` when the records are all dicts (or all rows of one
    ``RowFormat``) holding a non-null ``key`` seen neither before nor elsewhere in the page (the usual page,
    checked at C speed); None otherwise (the caller then goes record by record)."""
    if not page:
        return []
    kind = page[0].__class__
    getter: Callable[[Any], Any]
    if kind is dict:
        getter = itemgetter(key)
    elif key in getattr(kind, "__struct_fields__", ()):
        getter = attrgetter(key)
    else:
        return None
    if not all(r.__class__ is kind for r in page):
        return None
    try:
        ids = list(map(getter, page))
    except (KeyError, TypeError, IndexError):  # a record without the key
        return None
    if None in ids:
        return None
    try:
        distinct = set(ids)
    except TypeError:  # an unhashable id: the record-by-record path reports it as before
        return None
    if len(distinct) != len(ids) or not distinct.isdisjoint(seen):
        return None
    return ids


async def iter_record_pages(
    core: Core,
    path: str,
    *,
    params: Mapping[str, Any] | None = None,
    page_size: int = MAX_PAGE_SIZE,
    offset: int = 0,
    max_items: int | None = None,
    key: str = "id",
    desc: str = "records",
    decoder: Callable[[bytes], Any] | None = None,
) -> AsyncGenerator[list[Any], None]:
    """Yield the records of each page that were not yielded before, as one list a page (empty lists are
    skipped): every record exactly once (de-duplicated by ``key``) in the service's order, up to
    ``max_items``. Callers that work a page at a time (frames) use this; ``iter_records`` yields the same
    records one by one. With ``decoder`` (``frames.RowFormat.decode``) the records of a page that fits it
    are compact rows rather than dicts (frame builders take both).

    A full listing (``offset=0``, no ``max_items``) checks itself: if the pages' ``count`` changed during the
    walk, or fewer distinct records came than ``count`` said (a row renamed meanwhile moved into pages
    already read), the list is walked again and only records not yielded yet are added, at the end. After
    ``MAX_PASSES`` walks that still could not be shown complete, an ``IncompleteListingWarning`` gives the
    counts. Records without ``key`` cannot be checked (nor de-duplicated).
    """
    if max_items is not None and (
        isinstance(max_items, bool) or not isinstance(max_items, int) or max_items < 0
    ):
        raise ValueError(f"max_items={max_items!r} must be a non-negative integer or None.")
    if max_items == 0:
        return
    seen: set[Any] = set()
    n = 0
    checkable = offset == 0 and max_items is None
    for walk in range(1, MAX_PASSES + 1):
        state = _Pass()
        walk_ids: set[Any] = set()
        keyless = False
        pages = iter_pages(
            core,
            path,
            params=params,
            page_size=page_size,
            offset=offset,
            max_items=max_items,
            desc=desc if walk == 1 else f"{desc} (check {walk - 1})",
            seen=state,
            decoder=decoder,
        )
        try:
            async for page in pages:
                ids = _distinct_new_ids(page, key, seen)
                if ids is not None:  # the usual page: every record keyed, none seen before, no repeats
                    walk_ids.update(ids)
                    seen.update(ids)
                    fresh = page
                else:
                    fresh = []
                    for record in page:
                        ident = record_value(record, key)
                        if ident is None:
                            keyless = True
                        else:
                            walk_ids.add(ident)
                            if ident in seen:
                                continue
                            seen.add(ident)
                        fresh.append(record)
                if max_items is not None and n + len(fresh) >= max_items:
                    fresh = fresh[: max_items - n]
                    if fresh:
                        yield fresh
                    return
                n += len(fresh)
                if fresh:
                    yield fresh
        finally:
            await pages.aclose()
        if not checkable or keyless or not state.counts:
            return
        counts = set(state.counts)
        if len(counts) == 1 and len(walk_ids) == state.counts[0]:
            return  # the count held still through this walk and every row of it was read
        if walk == MAX_PASSES:
            low, high = min(counts), max(counts)
            said = f"{low:,}" if low == high else f"between {low:,} and {high:,}"
            warnings.warn(
                IncompleteListingWarning(
                    f"Listing {desc} may be incomplete: {len(seen):,} distinct records were read while the "
                    f"service counted {said} and rows kept changing through {MAX_PASSES} walks (offset "
                    "paging skips a row that moves into pages already read). List again when edits have "
                    "settled, or order by a field that does not change (e.g. order='created_at').",
                    read=len(seen),
                    counts=sorted(counts),
                ),
                stacklevel=2,
            )


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
) -> AsyncGenerator[dict[str, Any], None]:
    """Yield every record exactly once (de-duplicated by ``key``) in the service's order, up to ``max_items``;
    the records of ``iter_record_pages`` one by one (see there for the self-check of a full listing)."""
    pages = iter_record_pages(
        core,
        path,
        params=params,
        page_size=page_size,
        offset=offset,
        max_items=max_items,
        key=key,
        desc=desc,
    )
    try:
        async for page in pages:
            for record in page:
                yield record
    finally:
        await pages.aclose()


async def collect(core: Core, path: str, **kw: Any) -> list[dict[str, Any]]:
    """All records of a list endpoint as raw dicts (see ``iter_records``)."""
    return [record async for record in iter_records(core, path, **kw)]
