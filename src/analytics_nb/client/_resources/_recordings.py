"""A playlist's recordings as the service can give them, and bulk add/remove of its items.

Facts this module is built on (PostHog `posthog/session_recordings/session_recording_playlist_api.py`,
`recordings`, `bulk_add_recordings`, `bulk_delete_recordings`; `session_recording_api.py`,
`list_recordings_from_query`):

* A **collection** is answered by one `RecordingsQuery(session_ids=<every item>, date_from="-1y")`: the
  request's `limit`/`offset` are not used, so the answer holds at most 50 ClickHouse recordings
  (`SESSION_RECORDINGS_DEFAULT_LIMIT`, `has_next` set when more matched) plus every item persisted to
  long-term storage; items never ingested, expired, or started more than a year ago and not in long-term
  storage are absent. Asking again with `offset` gives the same answer.
* A **synthetic** playlist slices its session ids by `limit`/`offset`, then runs the same query per slice.
* A **saved filter** (`type="filters"`) builds its query from the request alone
  (`RecordingsQuery.model_validate(query_as_params_to_dict(request.GET))`, each parameter read as JSON when
  it parses): its stored `filters` are not read there, the PostHog app converts them into the request
  (`convertUniversalFiltersToRecordingsQuery`). A parameter left out takes the schema's default
  (`frontend/src/queries/schema/schema-general.ts`, `RecordingsQuery`: the last 3 days, newest
  `start_time` first, 50 a page, test accounts kept), so `limit`/`offset` page it and the stored filters
  must be sent (`saved_filter_params`); pinned items, if a legacy one has any, narrow it to their ids.
* `GET /session_recordings/?session_ids=[...]` honours `limit`, `offset` and the dates: recordings whose ids
  are known can be fetched past the collection's cap.
* `bulk_add` / `bulk_delete` take at most 20 ids a call and answer counts (`added_count` / `deleted_count`,
  `total_requested`), not per-id outcomes. The playlist API's scope lists name only `list`, `retrieve` and
  `recordings` (read), so these actions, like the one-by-one add/remove, refuse personal API keys (403
  "This action does not support personal API key access") on every build that has the lists.
"""

from __future__ import annotations

import asyncio
import time
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from analytics_nb.client._core import Core
from analytics_nb.errors import IncompleteRecordingsError, IncompleteRecordingsWarning, PostHogError

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "BULK_MAX",
    "MAX_RECORDINGS",
    "NO_PERSONAL_KEYS",
    "Incomplete",
    "bulk_change",
    "collect_recordings",
    "session_id_list",
]

Incomplete = Literal["warn", "raise", "ignore"]
INCOMPLETE_CHOICES = ("warn", "raise", "ignore")
#: The service's per-call cap of the bulk endpoints.
BULK_MAX = 20
#: The ClickHouse-backed throttle of the playlist API: 240 requests a minute per personal key
#: (`posthog/rate_limit.py`, `ClickHouseBurstRateThrottle`); bulk calls are spaced to stay under it.
CALLS_PER_MINUTE = 240
#: The default cap on a saved filter's recordings (``max_items=``): a service that keeps saying more follow is
#: not followed past it (each page is held in memory), and the caller is told.
MAX_RECORDINGS = 10_000
#: How many ids one `/session_recordings/?session_ids=` call names (its answer is capped at `limit`).
IDS_PER_QUERY = 50
#: The collection query's window (`date_from="-1y"`), also used when fetching known ids past the cap.
WINDOW = "-1y"

NO_PERSONAL_KEYS = (
    "PostHog refuses personal API keys for adding or removing a playlist's recordings: the playlist API's "
    "scope lists (session_recording_playlist_api.py: scope_object_read_actions = list, retrieve, "
    "recordings) do not name bulk_add, bulk_delete or the one-by-one action, so no scope on the key helps. "
    "Nothing was changed. Add or remove them in the PostHog app (select recordings, then 'Add to "
    "collection'); the sandbox's spec profile allows it for testing."
)


@dataclass
class _Answer:
    records: list[dict[str, Any]]
    has_next: bool


async def _get_page(core: Core, path: str, params: Mapping[str, Any] | None) -> _Answer:
    body = await core.get_json(path, params=dict(params) if params else None)
    results = body.get("results", []) if isinstance(body, dict) else []
    records = [r for r in results if isinstance(r, dict)]
    return _Answer(records, bool(isinstance(body, dict) and body.get("has_next")))


def _add_new(out: list[dict[str, Any]], seen: set[Any], records: Iterable[dict[str, Any]]) -> int:
    added = 0
    for record in records:
        key = record.get("id")
        if key not in seen:
            seen.add(key)
            out.append(record)
            added += 1
    return added


def item_count(playlist: Mapping[str, Any]) -> int:
    """The playlist's item count as the service serializes it (`recordings_counts.collection.count`, None
    for 0)."""
    counts = playlist.get("recordings_counts")
    collection = counts.get("collection") if isinstance(counts, dict) else None
    count = collection.get("count") if isinstance(collection, dict) else None
    return count if isinstance(count, int) and not isinstance(count, bool) else 0


async def collect_recordings(
    core: Core,
    playlist: Mapping[str, Any],
    playlist_path: str,
    recordings_path: str,
    *,
    known_ids: Iterable[str] = (),
    incomplete: Incomplete = "warn",
    params: Mapping[str, Any] | None = None,
    max_items: int | None = MAX_RECORDINGS,
) -> list[dict[str, Any]]:
    """Every recording of ``playlist`` the service can give (raw dicts), by the route that suits its type;
    when fewer than its items came back, warn (or raise) naming how many are missing and why. A saved
    filter is read up to ``max_items`` recordings (None: no cap)."""
    if incomplete not in INCOMPLETE_CHOICES:
        raise ValueError(f"incomplete={incomplete!r} is not allowed; use 'warn', 'raise' or 'ignore'.")
    path = playlist_path + "recordings/"
    if playlist.get("type") == "filters" and not playlist.get("is_synthetic"):
        query = saved_filter_params(playlist.get("filters"), params, incomplete)
        return await _paged(core, path, query, playlist, incomplete, _check_max_items(max_items))
    if playlist.get("is_synthetic"):
        return await _synthetic(core, path, item_count(playlist))
    first = await _get_page(core, path, params)
    records: list[dict[str, Any]] = []
    seen: set[Any] = set()
    _add_new(records, seen, first.records)
    ids = [i for i in dict.fromkeys(str(k) for k in known_ids) if i not in seen]
    queried = set(ids)
    for start in range(0, len(ids), IDS_PER_QUERY):
        chunk = ids[start : start + IDS_PER_QUERY]
        query = {"session_ids": _json_list(chunk), "date_from": WINDOW, "limit": len(chunk)}
        _add_new(records, seen, (await _get_page(core, recordings_path, query)).records)
    expected = item_count(playlist)
    if len(records) < expected and incomplete != "ignore":
        message = _missing_message(playlist, expected, len(records), first.has_next, bool(queried))
        if incomplete == "raise":
            raise IncompleteRecordingsError(
                message, expected=expected, received=len(records), recordings=records
            )
        warnings.warn(
            IncompleteRecordingsWarning(message, expected=expected, received=len(records)), stacklevel=4
        )
    return records


def _json_list(values: list[str]) -> str:
    import json

    return json.dumps(values)


#: Stored saved-filter keys that are `RecordingsQuery` fields of the same meaning, sent as they are.
SAVED_FILTER_FIELDS = (
    "date_from",
    "date_to",
    "filter_test_accounts",
    "order",
    "order_direction",
    "operand",
    "events",
    "actions",
    "properties",
    "console_log_filters",
    "having_predicates",
)


def _is_empty(value: Any) -> bool:
    """A filter part that narrows nothing: None, an empty list/dict, or a group whose `values` are all
    empty (the app stores `filter_group: {type: AND, values: [{type: AND, values: []}]}` for "no filter")."""
    if value is None or value == [] or value == {}:
        return True
    if isinstance(value, dict) and set(value) <= {"type", "values"}:
        return all(_is_empty(v) for v in value.get("values") or [])
    return False


def saved_filter_params(
    filters: Any, params: Mapping[str, Any] | None, incomplete: Incomplete = "warn"
) -> dict[str, Any]:
    """The request a saved filter's recordings need: its stored `filters` as `RecordingsQuery` parameters
    (lists and objects as JSON text, as `query_as_params_to_dict` reads them), `duration` added to
    `having_predicates` as the app does, then the caller's ``params`` over them. A stored filter this
    client cannot convert (a non-empty `filter_group`, unknown keys) is named in a warning: the answer is
    then not narrowed by it (more recordings than the app lists), never silently."""
    stored = filters if isinstance(filters, Mapping) else {}
    query: dict[str, Any] = {}
    for key in SAVED_FILTER_FIELDS:
        value = stored.get(key)
        if value is not None and value != []:
            query[key] = value
    duration = stored.get("duration")
    if isinstance(duration, list) and duration:
        query["having_predicates"] = [*query.get("having_predicates", []), *duration]
    skipped = sorted(
        k for k, v in stored.items() if k not in SAVED_FILTER_FIELDS and k != "duration" and not _is_empty(v)
    )
    if skipped and incomplete != "ignore" and not set(skipped) <= set(params or {}):
        warnings.warn(
            f"The saved filter's {', '.join(skipped)} could not be sent: the recordings endpoint reads only "
            "its request, and this client does not convert these parts (the PostHog app does, in "
            "convertUniversalFiltersToRecordingsQuery), so the recordings returned are not narrowed by "
            "them. Pass them as RecordingsQuery parameters yourself (e.g. properties=[...]); "
            "incomplete='ignore' silences this.",
            UserWarning,
            stacklevel=5,
        )
    query.update(params or {})
    return {k: (_json_text(v) if isinstance(v, list | dict) else v) for k, v in query.items()}


def _json_text(value: Any) -> str:
    import json

    return json.dumps(value, separators=(",", ":"))


def _check_max_items(max_items: int | None) -> int | None:
    if max_items is None:
        return None
    if isinstance(max_items, bool) or not isinstance(max_items, int) or max_items < 1:
        raise ValueError(f"max_items={max_items!r} must be a positive whole number, or None for no cap.")
    return max_items


async def _paged(
    core: Core,
    path: str,
    params: Mapping[str, Any] | None,
    playlist: Mapping[str, Any],
    incomplete: Incomplete,
    max_items: int | None = MAX_RECORDINGS,
) -> list[dict[str, Any]]:
    """A saved filter's recordings: its query honours `limit`/`offset` (an explicit `offset` selects offset
    paging in `SessionRecordingListFromQuery`; without one it pages by a cursor this route does not
    return), so page from offset 0 until `has_next` is off. A service that says more follow but gives
    nothing new is reported, not taken as the end; so is one still saying more follow at ``max_items``
    recordings (memory stays bounded: a server that never stops is not followed forever)."""
    records: list[dict[str, Any]] = []
    seen: set[Any] = set()
    query = dict(params or {})
    query.setdefault("offset", 0)
    capped = False
    for _ in range(10_000):
        answer = await _get_page(core, path, query)
        fresh = _add_new(records, seen, answer.records)
        if max_items is not None and len(records) >= max_items:
            capped = answer.has_next or len(records) > max_items
            del records[max_items:]
            if not capped:
                return records
            break
        if not answer.has_next:
            return records
        if not fresh:
            break
        query["offset"] = int(query["offset"]) + len(answer.records)
    if incomplete != "ignore":
        _report_paged(playlist, records, query, incomplete, max_items if capped else None)
    return records


def _report_paged(
    playlist: Mapping[str, Any],
    records: list[dict[str, Any]],
    query: Mapping[str, Any],
    incomplete: Incomplete,
    cap: int | None,
) -> None:
    """Warn (or raise) that a saved filter's recordings stopped before the service's last page: at the
    ``cap`` (``max_items``), or on a page with nothing new."""
    name = playlist.get("name") or playlist.get("derived_name") or playlist.get("short_id")
    head = f"Saved filter {name!r} ({playlist.get('short_id')}): {len(records)} recordings came back and "
    if cap is not None:
        message = head + (
            f"the service says more match (has_next): reading stopped at max_items={cap}, so at least one "
            "(an unknown number) is missing. Narrow the query (date_from/date_to) or pass a larger "
            "max_items= (None: no cap); incomplete='ignore' silences this."
        )
    else:
        message = head + (
            "the service says more match (has_next) but gave no new one at offset "
            f"{query['offset']}: at least one (an unknown number) is missing. Narrow the query "
            "(date_from/date_to) and ask again; incomplete='ignore' silences this."
        )
    if incomplete == "raise":
        raise IncompleteRecordingsError(
            message, expected=len(records) + 1, received=len(records), recordings=records
        )
    warnings.warn(
        IncompleteRecordingsWarning(message, expected=len(records) + 1, received=len(records)),
        stacklevel=5,
    )


async def _synthetic(core: Core, path: str, count: int) -> list[dict[str, Any]]:
    """A synthetic playlist slices its ids by `limit`/`offset`: walk the slices up to its item count."""
    records: list[dict[str, Any]] = []
    seen: set[Any] = set()
    step = IDS_PER_QUERY
    for offset in range(0, max(count, 1), step):
        answer = await _get_page(core, path, {"limit": step, "offset": offset})
        _add_new(records, seen, answer.records)
    return records


def _missing_message(
    playlist: Mapping[str, Any], expected: int, received: int, capped: bool, asked_by_id: bool
) -> str:
    name = playlist.get("name") or playlist.get("derived_name") or playlist.get("short_id")
    missing = expected - received
    lines = [
        f"Playlist {name!r} ({playlist.get('short_id')}) has {expected} items but {received} recordings came "
        f"back: {missing} missing."
    ]
    if capped:
        lines.append(
            "The service answers a collection with one query capped at 50 recordings and ignores "
            "limit/offset (session_recording_playlist_api.py, recordings), so asking again cannot page past "
            "it. Pass session_ids=[...] (the collection's ids, e.g. the session_id column of "
            "add_recordings()'s report) to fetch the rest through /session_recordings/."
        )
    lines.append(
        ("The ids you passed that did not come back" if asked_by_id else "Items beyond the cap aside, items")
        + " have no recording the service can load: never ingested, expired, or started more than a year "
        "ago and not in long-term storage."
    )
    lines.append("incomplete='ignore' silences this; incomplete='raise' makes it an error.")
    return " ".join(lines)


# -- bulk add / remove ------------------------------------------------------------------------------------
def session_id_list(session_ids: Any, column: str | None = None) -> list[str]:
    """The ids of a list/tuple/Series/Index, or of a DataFrame's ``column`` (default: ``session_id``,
    ``session_recording_id`` or ``id``, the first present), in order; bad input is a ValueError naming the
    position and the fix."""
    values = _values_of(session_ids, column)
    out: list[str] = []
    for position, value in enumerate(values):
        if isinstance(value, bool) or not isinstance(value, str | int) or not str(value).strip():
            raise ValueError(
                f"session id #{position} is {value!r}: each must be a non-empty string (a recording's id). "
                "Drop empty or missing values first, e.g. frame.dropna(subset=['session_id'])."
            )
        out.append(str(value).strip())
    if not out:
        raise ValueError(
            "no session ids given: pass a list of recording ids or a DataFrame with a session_id column."
        )
    return out


def _values_of(session_ids: Any, column: str | None) -> list[Any]:
    if isinstance(session_ids, str):
        return [session_ids]
    if hasattr(session_ids, "columns"):  # a DataFrame
        columns = [str(c) for c in session_ids.columns]
        names = [column] if column is not None else ["session_id", "session_recording_id", "id"]
        found = next((n for n in names if n in columns), None)
        if found is None:
            raise ValueError(
                f"the DataFrame has no {' / '.join(names)} column (it has {', '.join(columns[:8])}); "
                "pass column='<name of the session id column>'."
            )
        return list(session_ids[found])
    if isinstance(session_ids, Mapping) or not isinstance(session_ids, Iterable):
        raise ValueError(
            f"session_ids must be a list of ids or a DataFrame, got {type(session_ids).__name__}."
        )
    return list(session_ids)


@dataclass
class _Outcome:
    status: str
    detail: str = ""


def _batch_outcomes(kind: str, ids: list[str], done: int) -> list[_Outcome]:
    """Per-id outcomes of one bulk call from the counts the service answers (exact when all or none of
    the batch changed, else said to be one of the two)."""
    changed, unchanged = ("added", "already in playlist") if kind == "add" else ("removed", "not in playlist")
    if done == len(ids):
        return [_Outcome(changed) for _ in ids]
    if done == 0:
        return [_Outcome(unchanged) for _ in ids]
    detail = f"{done} of the {len(ids)} ids of this call were {changed}; the service does not say which"
    return [_Outcome(f"{changed} or {unchanged}", detail) for _ in ids]


def _done_count(body: Any, kind: Literal["add", "remove"]) -> int:
    """The answer's `added_count` / `deleted_count` (0 when absent or not an integer)."""
    done = body.get("added_count" if kind == "add" else "deleted_count") if isinstance(body, dict) else None
    return done if isinstance(done, int) and not isinstance(done, bool) else 0


def _not_sent_after(
    outcomes: dict[str, tuple[int, _Outcome]],
    batches: list[list[str]],
    failed_at: int,
    kind: Literal["add", "remove"],
    n_unique: int,
) -> None:
    """After a failed call: the later calls' ids are `not sent`, and a warning counts what was not done."""
    for number in range(failed_at + 1, len(batches)):
        for session_id in batches[number]:
            outcomes[session_id] = (number, _Outcome("not sent", "an earlier call failed"))
    not_done = sum(len(b) for b in batches[failed_at:])
    warnings.warn(
        f"{not_done} of {n_unique} ids were not {kind}ed: call {failed_at + 1} of {len(batches)} "
        "failed (see the report's status/detail); re-run with the ids whose status is 'failed' or "
        "'not sent'.",
        UserWarning,
        stacklevel=4,
    )


async def bulk_change(
    core: Core,
    path: str,
    kind: Literal["add", "remove"],
    ids: list[str],
    *,
    calls_per_minute: float = CALLS_PER_MINUTE,
) -> pd.DataFrame:
    """Send ``ids`` to ``path`` (`bulk_add` / `bulk_delete`) 20 a call, spaced under the throttle; one report
    row per id given (`session_id`, `batch`, `status`, `detail`). A refusal of the first call raises (nothing
    changed); a failure later marks that call `failed` and the rest `not sent`, and warns."""
    import pandas as pd

    if not calls_per_minute or calls_per_minute <= 0:
        raise ValueError("calls_per_minute must be a positive number (the service allows 240 a minute).")
    unique = list(dict.fromkeys(ids))
    batches = [unique[i : i + BULK_MAX] for i in range(0, len(unique), BULK_MAX)]
    outcomes: dict[str, tuple[int, _Outcome]] = {}
    interval = 60.0 / calls_per_minute
    last = 0.0
    failed_at: int | None = None
    for number, batch in enumerate(batches):
        wait = last + interval - time.monotonic()
        if number and wait > 0:
            await asyncio.sleep(wait)
        last = time.monotonic()
        try:
            body = await core.send_json(
                "POST",
                path,
                {"session_recording_ids": batch},
                idempotent=True,
                explain={403: NO_PERSONAL_KEYS},
            )
        except PostHogError as exc:
            if number == 0:
                raise
            failed_at = number
            for session_id in batch:
                outcomes[session_id] = (number, _Outcome("failed", str(exc).splitlines()[0]))
            break
        done = _done_count(body, kind)
        for session_id, outcome in zip(batch, _batch_outcomes(kind, batch, done), strict=True):
            outcomes[session_id] = (number, outcome)
    if failed_at is not None:
        _not_sent_after(outcomes, batches, failed_at, kind, len(unique))
    rows = []
    first_seen: set[str] = set()
    for session_id in ids:
        number, outcome = outcomes[session_id]
        if session_id in first_seen:
            rows.append((session_id, number, "duplicate", "listed again; sent once"))
            continue
        first_seen.add(session_id)
        rows.append((session_id, number, outcome.status, outcome.detail))
    return pd.DataFrame(rows, columns=["session_id", "batch", "status", "detail"])
