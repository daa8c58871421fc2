"""HogQL queries (`POST /api/projects/:id/query/`) and the project's persons as a frame.

PostHog's query API (posthog.com `contents/docs/api/queries.mdx`; `posthog/hogql/constants.py`) answers at
most 50,000 rows per query (`MAX_SELECT_RETURNED_ROWS`; 100 without a `LIMIT`), allows 240 queries a minute,
2,400 an hour and 3 at once per project, stops a query after its execution limit, and advises keyset paging
(`ORDER BY key ... WHERE key > last`) over `OFFSET`. This module pages that way, paces itself to those
limits whatever the client's `rate_limit=` says (one sliding window shared by the client's queries, at most
3 in flight), and slows down when an answer carries `X-PostHog-Rate-Limit-Warning`.

Long queries run asynchronously (`run="async"`, or `"auto"` once a query timed out or took over half the
sync execution limit): the query is sent with `"refresh": "force_async"` and the service answers 202 with a
`query_status` (`complete: false`, its `id`); the client polls `GET .../query/:id/?show_progress=true` (202
while it runs, 200 with `complete: true` and the whole answer in `results`, 400 with `error_message`),
showing a progress bar of `query_progress.rows_read` of `estimated_rows_total` (`posthog/api/query.py`
`create` / `retrieve`; `posthog/clickhouse/client/execute_async.py`; `QueryStatus` in `posthog/schema.py`;
`posthog/api/test/test_query.py` `test_full_hogql_query_async`, `TestQueryRetrieve`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from analytics_nb.client._core import Core, RateLimiter, decode_json, loads_json
from analytics_nb.client._progress import progress_bar
from analytics_nb.errors import PostHogError, ResponseFormatError, ServerError, ValidationError

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "MAX_ROWS",
    "QUERY_CONCURRENCY",
    "QUERY_RATES",
    "QueryRateLimitWarning",
    "Run",
    "describe_plan",
    "frame_from_answer",
    "groups_frame",
    "person_property_keys",
    "persons_frame",
    "plan",
    "run_query",
]

log = logging.getLogger("analytics_nb.client")

#: `MAX_SELECT_RETURNED_ROWS`, posthog/hogql/constants.py: rows one query answers at most.
MAX_ROWS = 50_000
#: The query API's limits per project (posthog/rate_limit.py `APIQueriesBurstThrottle` /
#: `APIQueriesSustainedThrottle`; docs: 3 concurrent queries).
QUERY_RATES: tuple[tuple[int, float], ...] = ((240, 60.0), (2400, 3600.0))
QUERY_CONCURRENCY = 3
#: Pause after an answer carrying `X-PostHog-Rate-Limit-Warning` (seconds): the service is about to 429.
WARNING_PAUSE = 1.0
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_$][A-Za-z0-9_$]*)*")
_UUID = re.compile(r"[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}")
_TIMEOUT_FIX = (
    "The query hit PostHog's execution time limit: narrow it (a shorter date range, a WHERE that selects "
    "fewer rows), select fewer columns (one property instead of all `properties`), or page with a smaller "
    "page_size."
)


Run = Literal["sync", "async", "auto"]
#: `auto` runs the rest of a paged read asynchronously once a sync query took this long (seconds): half the
#: sync execution limit of the query API (10 s, posthog.com `contents/docs/api/queries.mdx`).
SLOW_SYNC_SECONDS = 5.0
#: Polling an async query: the first wait, the longest wait, and how long before giving up (seconds; the
#: service keeps a status 600 s, `QueryStatusManager.STATUS_TTL_SECONDS`).
POLL_FIRST, POLL_MAX, POLL_TIMEOUT = 0.05, 2.0, 600.0


class QueryRateLimitWarning(UserWarning):
    """The service said it is close to throttling queries (`X-PostHog-Rate-Limit-Warning`)."""


class _Pacing:
    """The client's query pacing: one sliding window (240/min, 2,400/h) and a semaphore of 3."""

    def __init__(self) -> None:
        self.limiter = RateLimiter({"query": QUERY_RATES})
        self.semaphore = asyncio.Semaphore(QUERY_CONCURRENCY)
        self.requests = 0


def _pacing(core: Core) -> _Pacing:
    pacing = getattr(core, "_query_pacing", None)
    if pacing is None:
        pacing = _Pacing()
        core._query_pacing = pacing  # type: ignore[attr-defined]
    return pacing


def _auth(core: Core) -> Any:
    """The personal key when there is one, else the project secret key (`phs_`, scope `query:read`)."""
    config = core.config
    if config.personal_api_key is not None:
        return True
    if config.secret_api_key is not None:
        return Core.key_auth(config.secret_api_key)
    raise ValueError(
        "query needs a key: pass personal_api_key= (scope query:read) or secret_api_key= (a project secret "
        "key, phs_..., with query:read)"
    )


class _Mode:
    """How a run sends its queries: `run` as asked, and whether `auto` has switched to async."""

    def __init__(self, run: Run, progress: bool | None) -> None:
        if run not in ("sync", "async", "auto"):
            raise ValueError(f"query: run must be 'sync', 'async' or 'auto', got {run!r}")
        self.run = run
        self.use_async = run == "async"
        self.progress = progress
        self.polls = 0


async def _send(core: Core, method: str, path: str, **kw: Any) -> Any:
    """One paced request of the query API (`query` bucket: 240/min, 2,400/h; polls count too, as
    `QueryViewSet.get_throttles` throttles every action); the response."""
    pacing = _pacing(core)
    await pacing.limiter.acquire("query")
    pacing.requests += 1
    try:
        response = await core.request(method, path, auth=_auth(core), **kw)
    except ValidationError as exc:
        raise ValidationError(
            f"PostHog refused the HogQL query: {exc.detail or exc.message} Fix the query text "
            "(client.query sends it as written).",
            status=exc.status,
            type=exc.type,
            code=exc.code,
            detail=exc.detail,
            attr=exc.attr,
            method=exc.method,
            url=exc.url,
        ) from None
    if response.headers.get("X-PostHog-Rate-Limit-Warning"):
        warnings.warn(
            "PostHog says queries are close to its rate limit (X-PostHog-Rate-Limit-Warning); the "
            f"client pauses {WARNING_PAUSE:g} s between queries while it says so.",
            QueryRateLimitWarning,
            stacklevel=2,
        )
        await asyncio.sleep(WARNING_PAUSE)
    return response


def _answer(core: Core, response: Any, body: Any) -> dict[str, Any]:
    if not isinstance(body, dict) or not isinstance(body.get("results"), list):
        raise ResponseFormatError(
            "The query endpoint answered without a `results` list; check that host= points at PostHog.",
            status=response.status_code,
            method=response.request.method if response.request else "POST",
            url=core.scrub(str(response.url)),
        )
    return body


async def _post(core: Core, hogql: str, mode: _Mode | None = None) -> dict[str, Any]:
    """One query, paced, at most 3 in flight: sync (one request), or async (submit and poll) when `mode`
    says so; `auto` resends a query that timed out asynchronously. The answer's JSON body."""
    mode = mode or _Mode("sync", False)
    async with _pacing(core).semaphore:
        if mode.use_async:
            return await _post_async(core, hogql, mode)
        started = time.monotonic()
        try:
            response = await _send(
                core,
                "POST",
                core.project_path("query/"),
                json={"query": {"kind": "HogQLQuery", "query": hogql}},
                idempotent=False,  # a timed-out query is not sent again as is (the fix is to narrow it)
                explain={504: _TIMEOUT_FIX},
            )
        except ServerError as exc:
            if mode.run != "auto" or exc.status != 504:
                raise
            log.info("the query timed out; sending it again as an async query (run='auto')")
            mode.use_async = True
            return await _post_async(core, hogql, mode)
        if mode.run == "auto" and time.monotonic() - started > SLOW_SYNC_SECONDS:
            mode.use_async = True  # the next queries of this run are as slow: run them async
    return _answer(core, response, decode_json(response, core.scrub(str(response.url))))


async def _post_async(core: Core, hogql: str, mode: _Mode) -> dict[str, Any]:
    """Submit with `refresh: force_async` and poll the status until it is complete; a bar shows
    `query_progress` while it runs."""
    response = await _send(
        core,
        "POST",
        core.project_path("query/"),
        json={"query": {"kind": "HogQLQuery", "query": hogql}, "refresh": "force_async"},
        idempotent=False,
        explain={504: _TIMEOUT_FIX},
    )
    body = decode_json(response, core.scrub(str(response.url)))
    status = body.get("query_status") if isinstance(body, dict) else None
    if not isinstance(status, dict) or not status.get("query_async"):
        return _answer(core, response, body)  # answered at once (a cached result)
    query_id = str(status.get("id") or "")
    if not _IDENT_ID.fullmatch(query_id):
        raise ResponseFormatError(
            "The query endpoint started an async query without a usable `id`; check that host= points at "
            "PostHog.",
            status=response.status_code,
            method="POST",
            url=core.scrub(str(response.url)),
        )
    bar = progress_bar(mode.progress, total=None, desc=f"query {query_id[:8]} running", unit="row")
    try:
        status = await _poll(core, query_id, status, bar, mode)
    finally:
        bar.close()
    return _answer(core, response, status.get("results"))


_IDENT_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")


async def _poll(core: Core, query_id: str, status: dict[str, Any], bar: Any, mode: _Mode) -> dict[str, Any]:
    """Poll `GET .../query/:id/` until `complete`; the final status (an error status raises)."""
    wait, deadline = POLL_FIRST, time.monotonic() + POLL_TIMEOUT
    while not status.get("complete"):
        if time.monotonic() > deadline:
            raise ServerError(
                f"The async query {query_id} did not complete in {POLL_TIMEOUT:g} s; narrow it (a shorter "
                "date range, fewer rows or columns) or page it with a smaller page_size.",
                status=None,
            )
        await asyncio.sleep(wait)
        wait = min(wait * 2, POLL_MAX)
        mode.polls += 1
        try:
            response = await _send(
                core,
                "GET",
                core.project_path(f"query/{query_id}/"),
                params={"show_progress": "true"},
                idempotent=True,
            )
        except PostHogError as exc:
            raise _failed(query_id, exc) from None
        body = decode_json(response, core.scrub(str(response.url)))
        found = body.get("query_status") if isinstance(body, dict) else None
        if not isinstance(found, dict):
            raise ResponseFormatError(
                "The query status endpoint answered without a `query_status`; check that host= points at "
                "PostHog.",
                status=response.status_code,
                method="GET",
                url=core.scrub(str(response.url)),
            )
        status = found
        _show_progress(bar, status.get("query_progress"))
    return status


def _show_progress(bar: Any, progress: Any) -> None:
    """Move the bar to `rows_read` of `estimated_rows_total` (ClickHouse's own estimate)."""
    if not isinstance(progress, dict) or not hasattr(bar, "n"):
        return
    total, read = progress.get("estimated_rows_total"), progress.get("rows_read")
    if isinstance(total, int) and total > 0:
        bar.total = total
    if isinstance(read, int) and read >= bar.n:
        bar.update(read - bar.n)


def _failed(query_id: str, exc: PostHogError) -> PostHogError:
    """A failed async query's error: the status's `error_message` (400), else the service's error."""
    message = None
    if exc.status in (400, 500) and exc.detail:
        try:
            found = json.loads(exc.detail).get("query_status") or {}
            message = found.get("error_message") if found.get("error") else None
        except (ValueError, AttributeError):
            message = None
    if exc.status == 400 and message:
        return ValidationError(
            f"PostHog says the async query {query_id} failed: {message} Fix the query text (client.query "
            "sends it as written).",
            status=exc.status,
            method=exc.method,
            url=exc.url,
        )
    if exc.status == 500:
        return ServerError(
            f"PostHog says the async query {query_id} failed with an internal error; try again, or narrow "
            "the query.",
            status=500,
            method=exc.method,
            url=exc.url,
        )
    return exc


def _dtype(kind: str) -> str | None:
    """The pandas dtype of a ClickHouse type name (None: keep the values as they came)."""
    base = kind.removeprefix("Nullable(").rstrip(")") if kind.startswith("Nullable(") else kind
    if base in ("String", "UUID") or base.startswith(("FixedString", "LowCardinality(String")):
        return "string"
    if re.fullmatch(r"U?Int(8|16|32|64)", base):
        return "Int64"
    if base.startswith("Float") or base.startswith("Decimal"):
        return "Float64"
    if base == "Bool":
        return "boolean"
    if base.startswith("DateTime") or base == "Date":
        return "datetime"
    return None


def frame_from_answer(columns: Sequence[str], types: Sequence[str], rows: list[list[Any]]) -> pd.DataFrame:
    """A DataFrame typed by the answer's ClickHouse `types` (strings, Int64, Float64, boolean, UTC times)."""
    import pandas as pd

    names = _unique(columns)
    frame = pd.DataFrame.from_records(rows, columns=names) if rows else pd.DataFrame(columns=names)
    for name, kind in zip(names, types, strict=False):
        dtype = _dtype(str(kind))
        if dtype == "datetime":
            frame[name] = pd.to_datetime(frame[name], utc=True, format="ISO8601")
        elif dtype is not None:
            frame[name] = frame[name].astype(dtype)  # type: ignore[call-overload]
    return frame


def _unique(columns: Sequence[str]) -> list[str]:
    """Column names made unique (`id`, `id_2`): two `properties.x` of two tables share the name `x`."""
    seen: dict[str, int] = {}
    out = []
    for name in columns:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name}_{seen[name]}")
    return out


def _literal(value: Any) -> str:
    """A HogQL literal of a key value (a string quoted with its quotes escaped, or a number)."""
    if isinstance(value, bool) or value is None:
        raise ValueError(f"page_by: cannot page on the value {value!r}; page by a column without nulls")
    if isinstance(value, int | float):
        return repr(value)
    text = str(value).replace("\\", "\\\\").replace("'", "\\'")
    return f"'{text}'"


async def _pages(
    core: Core,
    build: Callable[[str | None, int], str],
    key_index: int,
    page_size: int,
    bar: Any = None,
    total: int | None = None,
    on_page: Callable[[list[list[Any]]], None] | None = None,
    mode: _Mode | None = None,
) -> tuple[list[str], list[str], list[list[Any]], int]:
    """Keyset paging: `build(after, limit)` is the query of the page after the key `after`. Returns columns,
    types, rows and requests.

    A query with a `LIMIT` answers no `hasMore` (`HogQLQueryRunner._calculate` paginates only queries
    without one), and a service may cap the `LIMIT` below `page_size` without saying so. So a page shorter
    than `page_size` ends the run only when it is also shorter than a page already read (then it is the
    last of a capped run) or `total` rows (a count read first) are in; otherwise one more page is asked for,
    and an empty page ends it. `on_page` takes each page instead of the returned rows (so a caller can keep
    only what it needs of a page and let the rest go)."""
    after: str | None = None
    rows: list[list[Any]] = []
    columns: list[str] = []
    types: list[str] = []
    requests, longest, seen = 0, 0, 0
    while True:
        body = await _post(core, build(after, page_size), mode)
        requests += 1
        columns, types = list(body.get("columns") or []), list(body.get("types") or [])
        page = body["results"]
        seen += len(page)
        if on_page is not None:
            on_page(page)
        else:
            rows += page
        if bar is not None:
            bar.update(len(page))
        done = total is not None and seen >= total
        short = len(page) < page_size and len(page) < longest
        if not page or done or (body.get("hasMore") is not True and short):
            return columns, types, rows, requests
        longest = max(longest, len(page))
        after = _literal(page[-1][key_index])


def plan(rows: int, page_size: int) -> dict[str, Any]:
    """What reading `rows` rows takes at the query API's limits: pages (queries) and the least minutes the
    limits allow (240 a minute, then 2,400 an hour), not counting PostHog's own time per query."""
    pages = max(1, -(-rows // page_size))
    per_minute, per_hour = QUERY_RATES[0][0], QUERY_RATES[1][0]
    if pages <= per_minute:
        minutes = 0.0
    elif pages <= per_hour:
        minutes = float(-(-pages // per_minute) - 1)
    else:
        minutes = float((-(-pages // per_hour) - 1) * 60)
    return {"rows": rows, "pages": pages, "queries": pages + 1, "min_minutes_at_limits": minutes}


def describe_plan(p: Mapping[str, Any]) -> str:
    """The plan as one line (the progress bar's title, the log)."""
    wait = (
        "no wait for the limits"
        if not p["min_minutes_at_limits"]
        else f"at least {p['min_minutes_at_limits']:g} min at 240/min, 2,400/h"
    )
    return f"persons: {p['rows']:,} distinct ids in {p['pages']:,} pages ({p['queries']:,} queries, {wait})"


async def run_query(
    core: Core, hogql: str, *, page_by: str | None = None, page_size: int = MAX_ROWS, run: Run = "auto"
) -> pd.DataFrame:
    """`client.query`: the answer as a typed frame; with `page_by`, every row, paged by keyset; `run`
    chooses sync or async queries (see the module docstring)."""
    if not isinstance(hogql, str) or not hogql.strip():
        raise ValueError("query: hogql must be the text of a HogQL SELECT, e.g. 'SELECT id FROM persons'")
    if not 1 <= int(page_size) <= MAX_ROWS:
        raise ValueError(f"query: page_size must be between 1 and {MAX_ROWS:,} (the service's row cap)")
    mode = _Mode(run, core.config.progress)
    if page_by is None:
        body = await _post(core, hogql, mode)
        cut = body.get("hasMore") is True or (
            body.get("hasMore") is None and len(body["results"]) >= MAX_ROWS
        )
        if cut:
            warnings.warn(
                f"The query answered {len(body['results']):,} rows, PostHog's cap for it (100 without a "
                "LIMIT, 50,000 at most), and more may match; pass page_by='<a unique column>' to read them "
                "all by keyset.",
                stacklevel=3,
            )
        return frame_from_answer(body.get("columns") or [], body.get("types") or [], body["results"])
    if not _IDENT.fullmatch(page_by):
        raise ValueError(f"query: page_by must name one column of the query's answer, got {page_by!r}")
    inner = hogql.strip().rstrip(";")

    def build(after: str | None, limit: int) -> str:
        where = f" WHERE {page_by} > {after}" if after is not None else ""
        return f"SELECT * FROM ({inner}){where} ORDER BY {page_by} LIMIT {limit}"

    first = await _post(core, build(None, 1), mode)
    names = list(first.get("columns") or [])
    if page_by.split(".")[-1] not in names:
        raise ValueError(f"query: page_by={page_by!r} is not a column of the answer ({', '.join(names)})")
    key = names.index(page_by.split(".")[-1])
    columns, types, rows, _ = await _pages(core, build, key, int(page_size), mode=mode)
    return frame_from_answer(columns, types, rows)


def person_property_keys(flags: Any) -> list[str]:
    """The person property keys the definitions read (filters of `type: "person"`, cohorts' included), in
    first-seen order. Takes what `flags=` takes elsewhere: a definitions object (`.flags` / `.cohorts`), the
    local-evaluation answer, a list of flag dicts or models."""
    found: dict[str, None] = {}

    def walk(node: Any) -> None:
        if hasattr(node, "model_dump"):
            node = node.model_dump(by_alias=True, mode="json")
        if isinstance(node, Mapping):
            if node.get("type") == "person" and isinstance(node.get("key"), str):
                found.setdefault(node["key"], None)
            for value in node.values():
                walk(value)
        elif isinstance(node, list | tuple):
            for value in node:
                walk(value)

    if hasattr(flags, "flags") and not isinstance(flags, Mapping):
        walk(getattr(flags, "flags", None))
        walk(getattr(flags, "cohorts", None))
    else:
        walk(flags)
    return list(found)


_PERSONS_QUERY = (
    "SELECT pdi.distinct_id AS distinct_id, p.id AS person_id, p.is_identified AS is_identified, "
    "p.properties AS properties FROM person_distinct_ids pdi JOIN persons p ON pdi.person_id = p.id"
)


def _identified_id(ids: list[str]) -> tuple[str, bool]:
    """The documented rule for `distinct_ids="identified"`: the person's id that is not a UUID (the SDKs give
    anonymous users a UUID; your own ids usually are not one), the smallest of them when several (then
    `True`: ambiguous), else the smallest id."""
    named = sorted(i for i in ids if not _UUID.fullmatch(i))
    if named:
        return named[0], len(named) > 1
    return sorted(ids)[0], False


async def persons_frame(
    core: Core,
    *,
    properties: Iterable[str] | None,
    flags: Any,
    distinct_ids: Literal["all", "identified"],
    page_size: int,
    run: Run = "auto",
) -> tuple[pd.DataFrame, int]:
    """`client.persons`: the frame and the number of requests it took."""
    import pandas as pd

    if distinct_ids not in ("all", "identified"):
        raise ValueError(f"persons: distinct_ids must be 'all' or 'identified', got {distinct_ids!r}")
    if isinstance(properties, str):
        raise ValueError("persons: properties must be a list of property keys, e.g. ['email', 'plan']")
    keys = (
        list(properties)
        if properties is not None
        else (person_property_keys(flags) if flags is not None else None)
    )

    def build(after: str | None, limit: int) -> str:
        where = f" WHERE pdi.distinct_id > {after}" if after is not None else ""
        return f"{_PERSONS_QUERY}{where} ORDER BY pdi.distinct_id LIMIT {limit}"

    mode = _Mode(run, core.config.progress)
    counted = await _post(core, "SELECT count() FROM person_distinct_ids", mode)
    the_plan = plan(int(counted["results"][0][0]) if counted["results"] else 0, page_size)
    log.info(describe_plan(the_plan))
    bar = progress_bar(
        core.config.progress if the_plan["pages"] > 1 else False,
        total=the_plan["rows"],
        desc=describe_plan(the_plan),
        unit="id",
    )
    decoded: list[tuple[str, str, dict[str, Any]]] = []

    def keep(page: list[list[Any]]) -> None:  # only the wanted properties of a page stay in memory
        props = _all_properties(page)
        if keys is not None:
            props = [{k: p[k] for k in keys if k in p} for p in props]
        decoded.extend(zip([str(r[0]) for r in page], [str(r[1]) for r in page], props, strict=True))

    try:
        _, _, _, requests = await _pages(
            core, build, 0, page_size, bar, total=the_plan["rows"], on_page=keep, mode=mode
        )
    finally:
        bar.close()
    if keys is None:
        keys = list(dict.fromkeys(k for _, _, props in decoded for k in props))
    if distinct_ids == "identified":
        decoded = _one_per_person(decoded)
    data: dict[str, Any] = {
        "person_id": pd.array([d[1] for d in decoded], dtype="string"),
        "distinct_id": pd.array([d[0] for d in decoded], dtype="string"),
    }
    for key in keys:
        if key in data:
            raise ValueError(f"persons: the property {key!r} has the name of a column; it cannot be a column")
        data[key] = pd.Series([props.get(key) for _, _, props in decoded], dtype="object")
    frame = pd.DataFrame(data)
    frame.attrs["plan"] = {
        **the_plan,
        "requests": requests + 1 + mode.polls,
        "async": mode.use_async,
        "polls": mode.polls,
    }
    return frame, requests + 1 + mode.polls


def _all_properties(rows: list[list[Any]]) -> list[dict[str, Any]]:
    """Every row's `properties` (JSON text, as HogQL answers it) decoded in one pass (one JSON array: a
    tenth of the time of a decode per row); a row whose text is not an object reads as `{}`."""
    texts = [r[3] if isinstance(r[3], str) and r[3].startswith("{") else "{}" for r in rows]
    try:
        values = loads_json(("[" + ",".join(texts) + "]").encode())
    except ValueError:
        values = [_properties(t) for t in texts]
    return [v if isinstance(v, dict) else {} for v in values]


def _properties(text: Any) -> dict[str, Any]:
    if isinstance(text, dict):
        return text
    try:
        value = json.loads(text) if isinstance(text, str) else {}
    except ValueError:
        value = {}
    return value if isinstance(value, dict) else {}


def _one_per_person(rows: list[tuple[str, str, dict[str, Any]]]) -> list[tuple[str, str, dict[str, Any]]]:
    by_person: dict[str, list[tuple[str, str, dict[str, Any]]]] = {}
    for row in rows:
        by_person.setdefault(row[1], []).append(row)
    out, ambiguous = [], 0
    for members in by_person.values():
        chosen, several = _identified_id([m[0] for m in members])
        ambiguous += several
        out.append(next(m for m in members if m[0] == chosen))
    if ambiguous:
        warnings.warn(
            f"{ambiguous:,} persons have several distinct ids that are not UUIDs; the smallest was taken as "
            "the identified one. Use distinct_ids='all' to see every id.",
            stacklevel=4,
        )
    return sorted(out, key=lambda r: r[0])


async def groups_frame(
    core: Core,
    group_type: str,
    index: int,
    *,
    properties: Iterable[str] | None,
    page_size: int,
    run: Run = "auto",
) -> pd.DataFrame:
    """`client.groups`: the project's groups of one type as property sets for the simulation door.

    HogQL's `groups` table (`posthog/hogql/database/schema/groups.py`: `index` is the group type index,
    `key` the group key, `properties` the group's properties as JSON), paged by keyset on `key`. The frame
    has `distinct_id` (the group key: a group flag's hash is taken over the group key, so the distinct id
    does not change its answer), `group:<type>` (the key) and `group:<type>:<property>` columns."""
    import pandas as pd

    if isinstance(properties, str):
        raise ValueError("groups: properties must be a list of property keys, e.g. ['tier', 'seats']")
    keys = list(properties) if properties is not None else None
    mode = _Mode(run, core.config.progress)
    counted = await _post(core, f"SELECT count() FROM groups WHERE index = {int(index)}", mode)
    the_plan = plan(int(counted["results"][0][0]) if counted["results"] else 0, page_size)

    def build(after: str | None, limit: int) -> str:
        where = f" AND key > {after}" if after is not None else ""
        return (
            f"SELECT key, index, key, properties FROM groups WHERE index = {int(index)}{where} "
            f"ORDER BY key LIMIT {limit}"
        )

    found: list[tuple[str, dict[str, Any]]] = []

    def keep(page: list[list[Any]]) -> None:
        props = _all_properties(page)
        if keys is not None:
            props = [{k: p[k] for k in keys if k in p} for p in props]
        found.extend(zip([str(r[0]) for r in page], props, strict=True))

    _, _, _, requests = await _pages(
        core, build, 0, page_size, total=the_plan["rows"], on_page=keep, mode=mode
    )
    if keys is None:
        keys = list(dict.fromkeys(k for _, props in found for k in props))
    ids = pd.array([key for key, _ in found], dtype="string")
    data: dict[str, Any] = {"distinct_id": ids, f"group:{group_type}": ids.copy()}
    for key in keys:
        data[f"group:{group_type}:{key}"] = pd.Series([p.get(key) for _, p in found], dtype="object")
    frame = pd.DataFrame(data)
    frame.attrs["plan"] = {**the_plan, "requests": requests + 1 + mode.polls, "async": mode.use_async}
    return frame
