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
from operator import attrgetter, itemgetter
from typing import Any
from urllib.parse import parse_qs, urlsplit

from analytics_nb.client._core import Core
from analytics_nb.client._progress import progress_bar
from analytics_nb.errors import IncompleteListingWarning, PaginationError, ResponseFormatError

__all__ = [
    "MAX_FOLLOWED_PAGES",
    "MAX_PAGE_SIZE",
    "MAX_PASSES",
    "PageGuard",
    "check_page_size",
    "collect",
    "envelope",
    "iter_record_pages",
    "margin",
    "record_value",
]

MAX_PAGE_SIZE = 500
MAX_PASSES = 3
"""Walks of a list at most (the first and up to two check walks) before reporting it incomplete."""
MARGIN_RECORDS = 1000
"""Records past a listing's ``count`` that following ``next`` reads at least before it stops (``margin``)."""
MAX_FOLLOWED_PAGES = 2000
"""``next`` links followed at most in one walk of a list that gives no ``count``."""
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


def _is_record(record: Any) -> bool:
    kind = record.__class__
    return kind is dict or hasattr(kind, "__struct_fields__") or isinstance(record, dict)


def envelope(body: Any, path: str) -> tuple[list[Any], int | None, str | None]:
    """``(results, count, next)`` of a list answer (a plain list: an unpaginated endpoint). A page that is
    not ``{count, next, results: [objects]}`` is a ``ResponseFormatError`` naming what was wrong: a record
    that is not an object would otherwise be returned as it is, or fail later in a frame builder."""
    count: int | None
    if isinstance(body, list):  # an unpaginated list endpoint
        results, count, next_url = body, len(body), None
    elif isinstance(body, dict) and isinstance(body.get("results"), list):
        raw_count = body.get("count")
        count = raw_count if isinstance(raw_count, int) else None
        results, next_url = body["results"], body.get("next")
    else:
        raise ResponseFormatError(
            f"GET {path} did not answer with a paginated list {{count, next, results}} (got "
            f"{type(body).__name__}); check that host= points at the PostHog API itself.",
            method="GET",
            url=path,
        )
    if not all(map(_is_record, results)):
        position, bad = next((i, r) for i, r in enumerate(results) if not _is_record(r))
        raise ResponseFormatError(
            f"GET {path} answered a page whose record {position} is {type(bad).__name__}, not an object; "
            "check that host= points at the PostHog API itself (not a proxy or another service).",
            method="GET",
            url=path,
        )
    if next_url is not None and not isinstance(next_url, str):
        raise ResponseFormatError(
            f"GET {path} answered a page whose next link is {type(next_url).__name__}, not text or null.",
            method="GET",
            url=path,
        )
    return results, count, next_url


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


class _Walk:
    """One walk of a list endpoint, a page per ``next_page()`` call (None at the end): the first page tells
    ``count``, the rest are fetched concurrently (up to ``max_concurrency`` in flight, in order, a short page
    in the middle filled), then ``next`` is followed past the count (rows added meanwhile) under a
    ``PageGuard`` and a cap: past ``count`` plus ``margin(count)`` records, or ``MAX_FOLLOWED_PAGES`` pages
    without a count, the walk stops and ``capped`` says why (a server that keeps handing new ids would
    otherwise be followed forever). Plain coroutines, not a generator: ``iter_record_pages`` is the one
    generator of a listing."""

    def __init__(
        self,
        core: Core,
        path: str,
        params: dict[str, Any],
        *,
        page_size: int,
        offset: int,
        fetch_max: int | None,
        desc: str,
        decoder: Callable[[bytes], Any] | None,
    ) -> None:
        self.core, self.path, self.params, self.decoder = core, path, params, decoder
        self.offset, self.fetch_max, self.desc = offset, fetch_max, desc
        self.page_size = fetch_max if fetch_max is not None and 0 < fetch_max < page_size else page_size
        self.counts: list[int] = []
        self.guard = PageGuard(desc)
        self.capped: str | None = None
        self._started = False
        self._next_url: str | None = None
        self._plan: list[tuple[int, asyncio.Task[Any]]] = []
        self._limit = self.page_size
        self._end: int | None = None
        self._read = 0
        self._followed = 0
        self._bar: Any = None

    async def next_page(self) -> list[Any] | None:
        """The next page's records, or None when the walk is over."""
        if not self._started:
            self._started = True
            return await self._first()
        if self._plan:
            task_offset, task = self._plan.pop(0)
            results = await self._fill(task_offset, await task)
            return self._count_in(results)
        return await self._follow()

    async def _first(self) -> list[Any]:
        first = await _page(self.core, self.path, self.params, self.offset, self.page_size, self.decoder)
        results, count, self._next_url = self._envelope(first)
        if not self._next_url or not results:
            self._next_url = None
            return results
        # The service may clamp the page size; its `next` link says what it used.
        self._limit = _limit_of(self._next_url) or len(results)
        end = count
        if self.fetch_max is not None:
            end = self.offset + self.fetch_max if end is None else min(end, self.offset + self.fetch_max)
        self._end = end
        total = count if count is None or self.fetch_max is None else min(count - self.offset, self.fetch_max)
        self._bar = progress_bar(self.core.config.progress, total=total, desc=self.desc)
        if end is not None:
            start = self.offset + len(results)
            self._plan = [
                (o, asyncio.ensure_future(self._fetch(o, self._limit)))
                for o in range(start, end, self._limit)
            ]
            self._next_url = None  # taken from the last planned page
        else:
            self.guard.page(results)
        return self._count_in(results)

    async def _fetch(self, offset: int, limit: int) -> Any:
        return await _page(self.core, self.path, self.params, offset, limit, self.decoder)

    async def _fill(self, task_offset: int, body: Any) -> list[Any]:
        """A planned page; a short one in the middle is filled (rows deleted meanwhile, a smaller clamp)."""
        results, _count, last_next = self._envelope(body)
        got = len(results)
        assert self._end is not None
        while got < self._limit and last_next and task_offset + got < self._end:
            body = await self._fetch(task_offset + got, self._limit - got)
            more, _more_count, last_next = self._envelope(body)
            if not more:
                break
            results = results + more
            got += len(more)
        if not self._plan:
            self._next_url = last_next if self.fetch_max is None else None
        return results

    async def _follow(self) -> list[Any] | None:
        """The page at ``next`` (rows added while listing, or a list without a count), within the cap."""
        if not self._next_url:
            return None
        cap = self._cap()
        if cap is not None:
            self.capped, self._next_url = cap, None
            return None
        self.guard.link(self._next_url)
        body = await self.core.get_json(self._next_url, decoder=self.decoder)
        results, _count, self._next_url = self._envelope(body)
        self.guard.page(results)
        self._followed += 1
        if not results:
            self._next_url = None
        return self._count_in(results)

    def _cap(self) -> str | None:
        """Why following ``next`` must stop here, or None."""
        count = self.counts[0] if self.counts else None
        if count is not None and self._read >= count + margin(count):
            return (
                f"Listing {self.desc} stopped after {self._read:,} records: the service counted {count:,} "
                f"but kept offering next pages with new records (the limit is the count plus "
                f"{margin(count):,}). "
                "The records read are returned; list again (rows may have been added very fast), pass "
                "max_items= to read a bounded part, or report it to whoever runs the server."
            )
        if count is None and self._followed >= MAX_FOLLOWED_PAGES:
            return (
                f"Listing {self.desc} stopped after {self._followed:,} pages ({self._read:,} records): the "
                "service gives no count and kept offering next pages with new records. The records read are "
                "returned; pass max_items= to read a bounded part, or report it to whoever runs the server."
            )
        return None

    def _envelope(self, body: Any) -> tuple[list[Any], int | None, str | None]:
        results, count, next_url = envelope(body, self.core.scrub(self.path))
        if count is not None:
            self.counts.append(count)
        return results, count, next_url

    def _count_in(self, results: list[Any]) -> list[Any]:
        self._read += len(results)
        if self._bar is not None:
            self._bar.update(len(results))
        return results

    def close(self) -> None:
        """Cancel the pages still in flight (collecting their errors: no "never retrieved" warnings) and
        close the progress bar."""
        tasks = [task for _offset, task in self._plan]
        self._plan = []
        for task in tasks:
            if not task.done():
                task.cancel()
        for task in tasks:
            if task.done() and not task.cancelled():
                task.exception()
        if self._bar is not None:
            self._bar.close()


def margin(count: int) -> int:
    """How many records past ``count`` a walk follows ``next`` before it stops: a quarter of the count, at
    least ``MARGIN_RECORDS`` (rows really added while listing)."""
    return max(count // 4, MARGIN_RECORDS)


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
    keep: Callable[[Any], bool] | None = None,
) -> AsyncGenerator[list[Any], None]:
    """The one paging path of every listing: the records of each page not yielded before, one list a page
    (empty lists skipped), every record exactly once (de-duplicated by ``key``) in the service's order, up
    to ``max_items``. ``keep`` filters records on this side (``max_items`` counts the kept ones). With
    ``decoder`` (``frames.RowFormat.decode``) the records of a page that fits it are compact rows rather
    than dicts. Every record is an object (or a row): anything else is a ``ResponseFormatError``.

    A full listing (``offset=0``, no ``max_items``) checks itself: if the pages' ``count`` changed during the
    walk, or fewer distinct records came than ``count`` said (a row renamed meanwhile moved into pages
    already read), the list is walked again and only records not yielded yet are added, at the end. After
    ``MAX_PASSES`` walks that still could not be shown complete, an ``IncompleteListingWarning`` gives the
    counts; a walk stopped by its cap (see ``_Walk``) warns the same way. Records without ``key`` cannot be
    checked (nor de-duplicated).
    """
    _check_max_items(max_items)
    check_page_size(page_size)
    if max_items == 0:
        return
    base = {k: v for k, v in (params or {}).items() if v is not None}
    seen: set[Any] = set()
    n = 0
    checkable = offset == 0 and max_items is None
    for walk_number in range(1, MAX_PASSES + 1):
        walk = _Walk(
            core,
            path,
            base,
            page_size=page_size,
            offset=offset,
            fetch_max=max_items if keep is None else None,
            desc=desc if walk_number == 1 else f"{desc} (check {walk_number - 1})",
            decoder=decoder,
        )
        walk_ids: set[Any] = set()
        keyless = False
        try:
            while (page := await walk.next_page()) is not None:
                fresh, page_keyless = _fresh(page, key, seen, walk_ids)
                keyless = keyless or page_keyless
                if keep is not None:
                    fresh = [record for record in fresh if keep(record)]
                if max_items is not None and n + len(fresh) >= max_items:
                    if fresh[: max_items - n]:
                        yield fresh[: max_items - n]
                    return
                n += len(fresh)
                if fresh:
                    yield fresh
        finally:
            walk.close()
        if not _walk_again(
            walk, walk_ids, checkable=checkable and not keyless, read=len(seen), last=walk_number
        ):
            return


def _check_max_items(max_items: Any) -> None:
    if max_items is not None and (
        isinstance(max_items, bool) or not isinstance(max_items, int) or max_items < 0
    ):
        raise ValueError(f"max_items={max_items!r} must be a non-negative integer or None.")


def _walk_again(walk: _Walk, walk_ids: set[Any], *, checkable: bool, read: int, last: int) -> bool:
    """After a walk: whether to walk the list again (its ``count`` moved, or fewer distinct records came
    than it said). A walk stopped by its cap, or the last check walk still short, warns with the counts."""
    if walk.capped is not None:
        warnings.warn(
            IncompleteListingWarning(walk.capped, read=read, counts=sorted(set(walk.counts))), stacklevel=4
        )
        return False
    if not checkable or not walk.counts:
        return False
    counts = set(walk.counts)
    if len(counts) == 1 and len(walk_ids) == walk.counts[0]:
        return False  # the count held still through this walk and every row of it was read
    if last < MAX_PASSES:
        return True
    low, high = min(counts), max(counts)
    said = f"{low:,}" if low == high else f"between {low:,} and {high:,}"
    warnings.warn(
        IncompleteListingWarning(
            f"Listing {walk.desc.split(' (check')[0]} may be incomplete: {read:,} distinct records were read "
            f"while the service counted {said} and rows kept changing through {MAX_PASSES} walks (offset "
            "paging skips a row that moves into pages already read). List again when edits have settled, "
            "or order by a field that does not change (e.g. order='created_at').",
            read=read,
            counts=sorted(counts),
        ),
        stacklevel=4,
    )
    return False


def _fresh(page: list[Any], key: str, seen: set[Any], walk_ids: set[Any]) -> tuple[list[Any], bool]:
    """The records of ``page`` not seen before (``seen`` and ``walk_ids`` updated), and whether any had no
    ``key``."""
    ids = _distinct_new_ids(page, key, seen)
    if ids is not None:  # the usual page: every record keyed, none seen before, no repeats
        walk_ids.update(ids)
        seen.update(ids)
        return page, False
    fresh: list[Any] = []
    keyless = False
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
    return fresh, keyless


async def collect(core: Core, path: str, **kw: Any) -> list[Any]:
    """All records of a list endpoint as raw dicts (see ``iter_record_pages``)."""
    out: list[Any] = []
    async for page in iter_record_pages(core, path, **kw):
        out.extend(page)
    return out
