"""Feature flag definitions: list, get, frame and the definitions the SDKs read for local evaluation.

Definitions come from today's ``/flags/definitions?token=`` on the ingestion host (the Rust flags service,
``rust/feature-flags/src/api/flag_definitions.rs``; the Django ``/api/feature_flag/local_evaluation`` is now
its alias, PostHog #56043 / #61780), authenticated by a Project Secret API Key (``phs_``, scope
``feature_flag:read``; #63111, #66174) or a personal key. As posthog-python 7.91.1 does, the client keeps the
weak ETag and sends ``If-None-Match``: a 304 reuses the definitions it has. A cold cache answers 503 (the
service has no database fallback): retried with backoff, then explained. Only where ``/flags/definitions``
does not exist (404: an older self-hosted PostHog) does the client fall back to the Django path, with a
`LegacyEndpointWarning`.
"""

from __future__ import annotations

import builtins
import datetime as dt
import json
import warnings
import weakref
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Unpack

from analytics_nb.client._core import Core, decode_json, parse_model
from analytics_nb.client._pagination import iter_record_pages, record_value
from analytics_nb.client._resources._base import (
    PAGING,
    Pages,
    Paging,
    Resource,
    check_choice,
    check_filters,
    check_id,
    collect_frame,
    collect_models,
    iterate_models,
    paging_of,
    require_text,
)
from analytics_nb.client._resources._flag_history import (
    DefinitionsHistoryWarning,
    HistoryGap,
    HistoryReader,
    as_moment,
    dedupe_key,
    entry_time,
    gaps_payload,
    local_shape,
    rebuild_from_activity,
    warn_gaps,
)
from analytics_nb.models import (
    ActivityLogEntry,
    FeatureFlag,
    FeatureFlagVersion,
    FlagTestEvaluation,
    LocalEvaluationResponse,
)
from analytics_nb.wire import check_distinct_id

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "DefinitionsCache",
    "DefinitionsHistoryWarning",
    "FeatureFlagFilters",
    "FeatureFlags",
    "LegacyEndpointWarning",
    "cached_definitions",
    "flag_list_query",
]

DEFINITIONS_PATH = "/flags/definitions"
LEGACY_PATH = "/api/feature_flag/local_evaluation/"

# The list filters the service reads: PostHog products/feature_flags/backend/api/feature_flag.py,
# FeatureFlagViewSet._apply_filters (called by _filter_request; posthog/api/feature_flag.py
# FeatureFlagViewSet._filter_request before the move) and the `list` extend_schema parameters.
FLAG_TYPES = ("boolean", "multivariant", "experiment", "remote_config")
#: FeatureFlag.EVALUATION_RUNTIME_CHOICES (posthog/models/feature_flag/feature_flag.py); the older list
#: schema said "both", a value no flag has.
EVALUATION_RUNTIMES = ("server", "client", "all")
#: ``order`` goes to the queryset's ``order_by`` as given (a field the model lacks is a server error
#: there), so only these model fields are sent; the default is ``-created_at``.
ORDER_FIELDS = ("created_at", "updated_at", "key", "name", "id", "active")
ORDERS = tuple(sign + field for field in ORDER_FIELDS for sign in ("", "-"))
#: _apply_filters refuses a longer search with a 400 ("Search term cannot exceed 200 characters").
MAX_SEARCH = 200


class FeatureFlagFilters(Paging, total=False):
    """The list filters of ``/feature_flags/`` the service reads, plus the paging controls (see
    ``FeatureFlags.iter``)."""

    active: bool | Literal["STALE"]
    created_by_id: int | builtins.list[int]
    search: str
    key: str
    type: Literal["boolean", "multivariant", "experiment", "remote_config"]
    evaluation_runtime: Literal["server", "client", "all"]
    excluded_properties: Sequence[str]
    tags: Sequence[str]
    excluded_tags: Sequence[str]
    order: str


def _created_by_ids(value: Any) -> str:
    """``created_by_id`` as the service parses it: one id, or comma-separated ids (``parse_created_by_ids``
    in products/feature_flags/backend/api/feature_flag.py; a list needs today's PostHog)."""
    values = value if isinstance(value, list | tuple) else [value]
    if not values:
        raise ValueError("created_by_id needs at least one user id, e.g. created_by_id=1.")
    try:
        return ",".join(str(check_id("created_by_id", v)) for v in values)
    except ValueError:
        raise ValueError(
            f"created_by_id={value!r}: give a user's integer id or a list of them (the created_by column "
            "of client.feature_flags.list(), or the member's id under Settings > Organization > Members)."
        ) from None


def _json_names(name: str, value: Any) -> str:
    """A list of flag keys or tag names, JSON-encoded as the service reads it (``json.loads``)."""
    what = "flag keys, e.g. ['old-flag']" if name == "excluded_properties" else "tag names, e.g. ['checkout']"
    if not isinstance(value, list | tuple) or not all(isinstance(k, str) and k for k in value):
        raise ValueError(f"{name} must be a list of {what}, got {value!r}.")
    return json.dumps(list(value))


def _text(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be non-empty text, got {value!r}.")
    return value.strip()


def _checked_here(params: Mapping[str, str]) -> Callable[[Any], bool] | None:
    """The filters an older self-hosted PostHog does not read (``key``, ``tags``, ``excluded_tags``: its
    posthog/api/feature_flag.py _filter_request ignores them and would answer every flag), checked on each
    record too. Today's service has already applied them, so the check keeps every record it sends."""
    key = params.get("key", "").lower()
    tags = set(json.loads(params["tags"])) if "tags" in params else set()
    excluded = set(json.loads(params["excluded_tags"])) if "excluded_tags" in params else set()
    if not (key or tags or excluded):
        return None

    def keep(record: Any) -> bool:
        if key and str(record_value(record, "key") or "").lower() != key:
            return False
        stored = record_value(record, "tags")
        names = {str(t) for t in stored} if isinstance(stored, list) else set()
        return (not tags or bool(names & tags)) and not names & excluded

    return keep


def flag_list_query(filters: Mapping[str, Any]) -> dict[str, str]:
    """The query parameters for the flag filters given, each value checked (a ValueError naming the field
    and the values the service reads): the service ignores a value it does not know, which would answer
    every flag."""
    params: dict[str, str] = {}
    for name, value in filters.items():
        if value is None:
            continue
        if name == "active":
            if not (isinstance(value, bool) or value == "STALE"):
                raise ValueError(f"active={value!r} is not allowed; use True, False or 'STALE'.")
            params["active"] = value if value == "STALE" else str(bool(value)).lower()
        elif name == "created_by_id":
            params["created_by_id"] = _created_by_ids(value)
        elif name in ("search", "key"):
            text = _text(name, value)
            if name == "search" and len(text) > MAX_SEARCH:
                raise ValueError(f"search is {len(text)} characters; the service takes at most {MAX_SEARCH}.")
            params[name] = text
        elif name == "type":
            params["type"] = check_choice("type", value, FLAG_TYPES)
        elif name == "evaluation_runtime":
            params["evaluation_runtime"] = check_choice("evaluation_runtime", value, EVALUATION_RUNTIMES)
        elif name in ("excluded_properties", "tags", "excluded_tags"):
            params[name] = _json_names(name, value)
        elif name == "order":
            params["order"] = check_choice("order", value, ORDERS)
    return params


class LegacyEndpointWarning(UserWarning):
    """The PostHog instance lacks today's endpoint (an older self-hosted one): the client used the older
    one it still serves (``/api/feature_flag/local_evaluation``)."""


@dataclass
class DefinitionsCache:
    """The last definitions a client read: the parsed answer, its ETag and where they came from."""

    response: LocalEvaluationResponse
    etag: str | None
    source: str
    fetches: int = 1
    not_modified: int = 0


_CACHES: weakref.WeakKeyDictionary[Core, DefinitionsCache] = weakref.WeakKeyDictionary()


def cached_definitions(core: Core) -> DefinitionsCache | None:
    """The definitions this client already holds (None before the first fetch): no request is sent."""
    return _CACHES.get(core)


def _explanations(key_kind: str) -> dict[int, str]:
    need = (
        "flag definitions need a Project Secret API Key (phs_..., Project settings > Secret API keys, scope "
        "feature_flag:read) as secret_api_key= (or POSTHOG_SECRET_API_KEY), or a personal API key with the "
        "feature_flag:read scope"
    )
    return {
        401: f"the {key_kind} was refused for this project's definitions: {need}; check the key, that it "
        "belongs to this project (project_api_key) and that it has the scope.",
        403: f"the {key_kind} lacks the feature_flag:read scope: {need}.",
        503: "the flags service has no cached definitions for this project yet (a cold cache: it serves "
        "definitions from its cache only). It was retried with backoff; wait a minute and call again, or "
        "use engine='remote', which does not need definitions.",
    }


class FeatureFlags(Resource):
    """``/api/projects/:id/feature_flags/`` and ``/api/feature_flag/local_evaluation/``."""

    def _path(self, suffix: str = "") -> str:
        return self._core.project_path("feature_flags/" + suffix)

    def _pages(self, filters: Mapping[str, Any]) -> Pages:
        """The listing's pages (the one paging path) for the `FeatureFlagFilters` given (checked first)."""
        check_filters("feature flag", filters, FeatureFlagFilters)
        params = flag_list_query({k: v for k, v in filters.items() if k not in PAGING})
        return iter_record_pages(
            self._core,
            self._path(),
            params=params,
            desc="flags",
            keep=_checked_here(params),
            **paging_of(filters),
        )

    async def iter(self, **filters: Unpack[FeatureFlagFilters]) -> AsyncIterator[FeatureFlag]:
        """Iterate over the project's (non-deleted) flag definitions matching the filters, as models.

        Filters (`FeatureFlagFilters`, what the service's list reads): ``active`` (True, False or
        ``"STALE"``: on, fully rolled out and not called or created in the last 30 days), ``created_by_id``
        (a user id, or a list of them: today's PostHog), ``search`` (text in the key or name,
        case-insensitive; a space also matches ``-`` and ``_``), ``key`` (exactly this key, case-insensitive;
        also checked here, as an older self-hosted PostHog ignores it), ``type`` (``"boolean"``,
        ``"multivariant"``, ``"experiment"``, ``"remote_config"``), ``evaluation_runtime`` (``"server"``,
        ``"client"``, ``"all"``), ``excluded_properties`` (flag keys to leave out), ``tags`` (flags with any
        of these tags), ``excluded_tags`` (flags with none of them; both also checked here), ``order``
        (``[-]created_at``, ``key``, ``name``, ``updated_at``, ``id``, ``active``; default ``-created_at``).
        Paging: ``page_size`` (<=500), ``offset``, ``max_items``. An unknown keyword (``serach="x"``) or a
        value the service does not read is a ValueError naming it, before any request (sent, it would be
        ignored: every flag).

        Args:
            **filters: The filters and paging keywords above; none: every flag.

        Yields:
            `FeatureFlag` models, in the service's order.
        """
        async for flag in iterate_models(self._pages(filters), FeatureFlag):
            yield flag

    async def list(self, **filters: Unpack[FeatureFlagFilters]) -> builtins.list[FeatureFlag]:
        """All flag definitions matching the filters (see ``iter``) as models.

        Args:
            **filters: The filters and paging keywords of ``iter``.

        Returns:
            The `FeatureFlag` models.
        """
        return await collect_models(self._pages(filters), FeatureFlag)

    async def frame(self, **filters: Unpack[FeatureFlagFilters]) -> pd.DataFrame:
        """A DataFrame of the flag definitions matching the filters (see ``iter``;
        ``analytics_nb.frames.feature_flags_frame``).

        Args:
            **filters: The filters and paging keywords of ``iter``.

        Returns:
            One row per flag.
        """
        from analytics_nb.frames import feature_flags_frame

        return await collect_frame(self._pages(filters), feature_flags_frame)

    async def get(self, id: int) -> FeatureFlag:
        """One flag definition by numeric id.

        Args:
            id: The flag's numeric id.

        Returns:
            The `FeatureFlag`.
        """
        return parse_model(FeatureFlag, await self._core.get_json(self._path(f"{check_id('id', id)}/")))

    async def create(
        self,
        key: str,
        *,
        name: str | None = None,
        filters: dict[str, Any] | None = None,
        active: bool | None = None,
        **extra: Any,
    ) -> FeatureFlag:
        """Create a flag definition (``filters`` in the wire shape: groups, multivariate, payloads).

        Args:
            key: The flag key code checks.
            name: A description. None: none.
            filters: The release conditions in the wire shape. None: the service's default.
            active: Turn it on. None: the service's default.
            **extra: Other wire fields, sent as given.

        Returns:
            The created `FeatureFlag`.
        """
        body: dict[str, Any] = {"key": require_text("key", key)}
        for field, value in (("name", name), ("filters", filters), ("active", active)):
            if value is not None:
                body[field] = value
        body.update(extra)
        return parse_model(FeatureFlag, await self._core.send_json("POST", self._path(), body))

    async def test_evaluation(
        self,
        id: int,
        *,
        distinct_id: str | None = None,
        person_id: str | None = None,
        timestamp: str | None = None,
        groups: Mapping[str, Any] | None = None,
    ) -> FlagTestEvaluation:
        """PostHog's own answer for one person and flag, explained condition by condition
        (``POST .../feature_flags/:id/test_evaluation/``, posthog-notes §11; PostHog/posthog #55149).

        The service reads the person's **stored** properties (returned as ``person_properties``): an oracle
        for rows that carry a real person's properties, not for made-up property sets.

        Args:
            id: The flag's numeric id.
            distinct_id: The person, by a distinct id (the rollout hashes this id). Give it or ``person_id``.
            person_id: The person, by person id (the service picks the id it hashes and does not say which).
            timestamp: ISO 8601: evaluate the flag and the person as they were then. None: now.
            groups: ``{group type: group key}`` for group flags. None: none.

        Returns:
            The `FlagTestEvaluation`: ``result``, ``reason``, ``condition_index``, ``person_properties``,
            ``evaluation_distinct_id`` and one record per condition.

        Raises:
            ValueError: Neither ``distinct_id`` nor ``person_id`` is given.
            NotFoundError: No such flag or person.
        """
        if distinct_id is None and person_id is None:
            raise ValueError("test_evaluation needs distinct_id= or person_id= (the person to evaluate).")
        body: dict[str, Any] = {}
        if distinct_id is not None:
            body["distinct_id"] = str(check_distinct_id(distinct_id))  # as given: never stripped
        for name, value in (("person_id", person_id), ("timestamp", timestamp)):
            if value is not None:
                body[name] = require_text(name, value)
        if groups is not None:
            body["groups"] = {str(k): v for k, v in groups.items()}
        path = self._path(f"{check_id('id', id)}/test_evaluation/")
        return parse_model(FlagTestEvaluation, await self._core.send_json("POST", path, body))

    async def update(self, id: int, **fields: Any) -> FeatureFlag:
        """PATCH the fields given (e.g. ``active=False`` or new ``filters``).

        Args:
            id: The flag's numeric id.
            **fields: The fields to change.

        Returns:
            The updated `FeatureFlag`.
        """
        if not fields:
            raise ValueError("update() needs at least one field to change, e.g. active=False.")
        path = self._path(f"{check_id('id', id)}/")
        return parse_model(FeatureFlag, await self._core.send_json("PATCH", path, fields))

    async def definitions(
        self, *, refresh: bool = False, as_of: dt.datetime | str | None = None
    ) -> LocalEvaluationResponse:
        """The definitions the SDKs use for local evaluation (flags, group type mapping, cohorts) from
        ``/flags/definitions`` as posthog-python 7.91.1 polls it: ``If-None-Match`` with the ETag the client
        holds, so an unchanged answer (304) reuses them. ``refresh=True`` asks without the ETag.

        ``as_of``: the definitions as they were at that moment instead (see `definitions_at`): each flag at
        the version in force then, rebuilt from ``versions/:n`` (or the activity log); a flag created after
        it is absent; what the history cannot give is named in a `DefinitionsHistoryWarning`.

        Auth: ``secret_api_key`` (``phs_``) when the client has one, else the personal key. A 404 (an
        older self-hosted PostHog without ``/flags/definitions``) falls back to
        ``/api/feature_flag/local_evaluation`` with a `LegacyEndpointWarning`.

        Args:
            refresh: Ask without the ETag (a full answer even when nothing changed).
            as_of: A past moment (timezone-aware datetime or ISO text). None: today's definitions.

        Returns:
            The `LocalEvaluationResponse`.
        """
        from analytics_nb.errors import NotFoundError

        if as_of is not None:
            return (await self.definitions_at([as_of]))[0]
        core = self._core
        config = core.config
        key = config.secret_api_key or config.personal_api_key
        if key is None:
            raise ValueError(
                "flag definitions need a key: pass secret_api_key='phs_...' (a Project Secret API Key with "
                "feature_flag:read; or set POSTHOG_SECRET_API_KEY) or personal_api_key='phx_...' to the "
                "Client."
            )
        kind = "secret API key (phs_)" if config.secret_api_key is not None else "personal API key (phx_)"
        cached = _CACHES.get(core)
        headers = {"If-None-Match": cached.etag} if cached and cached.etag and not refresh else {}
        token = await core.project_api_key()
        try:
            response = await core.request(
                "GET",
                DEFINITIONS_PATH,
                service="ingest",
                params={"token": token, "send_cohorts": ""},
                headers=headers,
                auth=core.key_auth(key),
                explain=_explanations(kind),
            )
            source = DEFINITIONS_PATH
        except NotFoundError:
            warnings.warn(
                f"{config.ingest_url} has no {DEFINITIONS_PATH} (an older self-hosted PostHog): flag "
                f"definitions were read from {LEGACY_PATH} instead. PostHog Cloud serves {DEFINITIONS_PATH} "
                "(PostHog #56043); upgrade the instance to get ETags and secret-key access.",
                LegacyEndpointWarning,
                stacklevel=3,
            )
            response = await core.request(
                "GET",
                LEGACY_PATH,
                params={"token": token, "send_cohorts": ""},
                headers=headers,
                auth=core.key_auth(key),
                explain=_explanations(kind),
            )
            source = LEGACY_PATH
        if response.status_code == 304 and cached is not None:
            cached.not_modified += 1
            return cached.response
        parsed = parse_model(LocalEvaluationResponse, decode_json(response, core.scrub(str(response.url))))
        fetches = cached.fetches + 1 if cached is not None else 1
        _CACHES[core] = DefinitionsCache(parsed, response.headers.get("ETag"), source, fetches=fetches)
        return parsed

    async def local_evaluation(
        self, *, send_cohorts: bool = True, refresh: bool = False
    ) -> LocalEvaluationResponse:
        """The definitions for local evaluation: `definitions` (today's ``/flags/definitions``, ETag-cached;
        the Django ``/api/feature_flag/local_evaluation`` only where that does not exist). Cohorts always
        come with them, as the service always sends them (``send_cohorts`` is kept for compatibility).

        Args:
            send_cohorts: Kept for compatibility; cohorts always come.
            refresh: Ask without the ETag.

        Returns:
            The `LocalEvaluationResponse`.
        """
        del send_cohorts
        return await self.definitions(refresh=refresh)

    # -- history: versions/:n, the activity log, definitions at past moments --------------------------------
    async def _flag_id(self, flag: int | str | FeatureFlag) -> int:
        """The id of ``flag``: an id, a `FeatureFlag`, or a key (looked up: exactly one live flag)."""
        if isinstance(flag, FeatureFlag):
            return check_id("flag", flag.id)
        if isinstance(flag, str) and not flag.strip().isdigit():
            found = [f for f in await self.list(key=flag) if f.key == flag]
            if len(found) != 1 or found[0].id is None:
                raise ValueError(f"flag={flag!r}: no live flag has this key; give its id or an existing key.")
            return found[0].id
        return check_id("flag", int(flag) if isinstance(flag, str) else flag)

    async def version(self, flag: int | str | FeatureFlag, n: int) -> FeatureFlagVersion:
        """The flag as it was at version ``n``: ``GET .../feature_flags/:id/versions/:n/`` (PostHog rebuilds
        it from its activity log; 404 out of range, 422 when the log cannot rebuild it, 400 for encrypted
        payloads).

        Args:
            flag: The flag's id (a text of digits is an id too), key or model.
            n: The version number (1 is the creation).

        Returns:
            The `FeatureFlagVersion`.
        """
        flag_id = await self._flag_id(flag)
        path = self._path(f"{flag_id}/versions/{check_id('n', n)}/")
        explain = {422: "the activity log cannot rebuild this version (an entry is missing)."}
        return parse_model(FeatureFlagVersion, await self._core.get_json(path, explain=explain))

    async def versions(self, flag: int | str | FeatureFlag) -> builtins.list[FeatureFlagVersion]:
        """Every version of a flag, oldest first: ``versions/:n`` for n = 1 .. the current version (one
        request each). Where the instance does not serve ``versions/:n`` (404) they are rebuilt from the
        activity log's before/after (``rebuilt_locally``); a version neither can rebuild is left out and
        named in a `DefinitionsHistoryWarning`.

        Args:
            flag: The flag's id, key or model.

        Returns:
            The `FeatureFlagVersion` of each version.
        """
        from analytics_nb.errors import NotFoundError, PostHogError

        flag_id = await self._flag_id(flag)
        current = await self._core.get_json(self._path(f"{flag_id}/"))
        last = check_id("version", current.get("version") or 1)
        out: builtins.list[FeatureFlagVersion] = []
        entries: builtins.list[dict[str, Any]] | None = None
        gaps: builtins.list[HistoryGap] = []
        now = dt.datetime.now(dt.UTC)
        for n in range(1, last + 1):
            try:
                out.append(await self.version(flag_id, n))
                continue
            except NotFoundError:
                pass  # in range: the instance has no versions/:n
            except PostHogError as exc:
                if exc.status not in (400, 422):
                    raise
            if entries is None:
                entries = await self.activity_records(flag_id)
            fields = rebuild_from_activity(current, entries, n)
            if fields is None:
                gaps.append(
                    HistoryGap(str(current.get("key")), f"version {n}: the activity log is incomplete", now)
                )
                continue
            out.append(
                parse_model(
                    FeatureFlagVersion,
                    {
                        **local_shape(current, None),
                        **fields,
                        "id": flag_id,
                        "is_historical": n != last,
                        "rebuilt_locally": True,
                    },
                )
            )
        warn_gaps(gaps)
        return out

    async def _activity_pages(self, flag_id: int | None) -> AsyncIterator[builtins.list[dict[str, Any]]]:
        """The entries of each page of a flag's activity (None: every flag's), newest first, pages of 100
        until ``next`` is empty; an entry seen on an earlier page (new activity shifts them) is left out."""
        path = self._path("activity/") if flag_id is None else self._path(f"{flag_id}/activity/")
        seen: set[str] = set()
        page = 1
        while True:
            body = await self._core.get_json(path, params={"page": page, "limit": 100})
            results = body.get("results") if isinstance(body, dict) else None
            if not results:
                return
            fresh = [e for e in results if isinstance(e, dict) and dedupe_key(e) not in seen]
            seen.update(dedupe_key(e) for e in fresh)
            yield fresh
            if not body.get("next") or not fresh:
                return
            page += 1

    async def activity_records(
        self, flag: int | str | FeatureFlag | None = None, *, since: dt.datetime | None = None
    ) -> builtins.list[dict[str, Any]]:
        """A flag's activity entries (``flag`` None: every flag's, ``.../feature_flags/activity/``) as raw
        wire dicts, newest first, pages of 100 followed until ``next`` is empty or the entries reach
        ``since`` (entries at or before it are not kept).

        Args:
            flag: The flag's id, key or model. None: every flag of the project.
            since: Keep only entries after this moment (and stop reading there). None: the whole log.

        Returns:
            The entries as dicts.
        """
        flag_id = None if flag is None else await self._flag_id(flag)
        entries: builtins.list[dict[str, Any]] = []
        async for fresh in self._activity_pages(flag_id):
            kept = fresh if since is None else [e for e in fresh if (entry_time(e) or since) > since]
            entries.extend(kept)
            if len(kept) < len(fresh):
                break  # newest first: the rest is older
        return entries

    async def activity(self, flag: int | str | FeatureFlag | None = None) -> builtins.list[ActivityLogEntry]:
        """A flag's activity log, newest first: each create and update with who (``user``), when
        (``created_at``) and what (``detail.changes``: field, before, after; ``version`` included).
        ``.../feature_flags/:id/activity/`` (scope ``activity_log:read``); ``flag`` None: every flag of the
        project (``.../feature_flags/activity/``).

        Args:
            flag: The flag's id, key or model. None: every flag.

        Returns:
            The `ActivityLogEntry` models.
        """
        return [parse_model(ActivityLogEntry, e) for e in await self.activity_records(flag)]

    async def live_records(self) -> builtins.list[dict[str, Any]]:
        """Every live flag as the listing sends it (raw wire dicts, deleted flags not included)."""
        records: builtins.list[dict[str, Any]] = []
        async for page in self._pages({}):
            records.extend(page)
        return records

    async def definitions_at(
        self, moments: Sequence[dt.datetime | str]
    ) -> builtins.list[LocalEvaluationResponse]:
        """The definitions as they were at each moment: every flag at the version in force then (the entries
        at or before a moment count, as PostHog's ``find_version_at_timestamp``), rebuilt from
        ``versions/:n``, or from the activity log's before/after where the instance does not serve it. A
        flag created after a moment is absent; one deleted at it too. Cohorts, group types and the
        ``property_matching_version`` are today's.

        One `DefinitionsHistoryWarning` names what the history could not give (a flag deleted since, a
        version the log cannot rebuild: those flags are left out; every cohort a flag uses: read as it is
        today). Each answer keeps them as ``history_gaps`` (and the moment as ``as_of``).

        Reads today's definitions, the flag list and the project's flag activity back to the earliest
        moment once, then one ``versions/:n`` per flag version needed.

        Args:
            moments: Timezone-aware datetimes or ISO texts.

        Returns:
            One `LocalEvaluationResponse` per moment, in order.
        """
        when = [as_moment("as_of", m) for m in moments]
        if not when:
            return []
        reader = HistoryReader(self, min(when))
        await reader.load()
        out: builtins.list[LocalEvaluationResponse] = []
        all_gaps: builtins.list[HistoryGap] = []
        today = reader.today.to_wire(exclude_unset=False)
        for moment in when:
            gaps: builtins.list[HistoryGap] = []
            flags = await reader.at(moment, gaps)
            gaps.extend(reader.cohort_gaps(flags, moment))
            all_gaps.extend(gaps)
            body = {**today, "flags": flags, "as_of": moment.isoformat(), "history_gaps": gaps_payload(gaps)}
            out.append(parse_model(LocalEvaluationResponse, body))
        warn_gaps(all_gaps)
        return out
