"""A flag's history as PostHog keeps it: an activity-log entry per write, and past versions rebuilt from it.

Every create and update of a flag (`feature_flags.create_flag` / `update_flag`) writes one ``FeatureFlag``
entry in the core ``activity_log`` table, in the same transaction and with the same timestamp as the write:
``created`` (``changes: []``), ``updated``, or ``deleted`` / ``restored`` when ``deleted`` flips (PostHog's
``ModelActivityMixin``; the names ``find_version_at_timestamp`` reads in
products/feature_flags/backend/version_history.py). An update's ``changes`` hold one
``{type, action, field, before, after}`` per changed field, ``version`` included (posthog/models/
activity_logging/activity_log.py ``Change``; the expected body of ``test_get_feature_flag_activity`` in
products/feature_flags/backend/api/test/test_feature_flag.py): ``action`` is ``created`` when ``before`` is
null, ``deleted`` when ``after`` is null, else ``changed``.

Served as the service routes them (products/feature_flags/backend/api/feature_flag.py,
``FeatureFlagViewSet``):

* ``GET .../feature_flags/:id/versions/:n/`` (the ``versions`` action,
  ``url_path=r"versions/(?P<version_number>[0-9]+)"``, scope ``feature_flag:read``): the flag at version
  ``n``, rebuilt by walking the activity log back from the current row and putting back each change's
  ``before`` (``reconstruct_flag_at_version``); the body is ``FeatureFlagVersionResponseSerializer``'s.
  404 ``{"detail": "Version n not found (current version is m)"}``; 422 ``{"detail": "Activity log is
  incomplete. Cannot reconstruct version n."}`` when an entry is missing; 400 for a flag with encrypted
  payloads. There is no ``versions/`` list (no such action).
* ``GET .../feature_flags/:id/activity/`` (``activity``) and ``GET .../feature_flags/activity/``
  (``all_activity``), scope ``activity_log:read``: ``{results, next, previous, total_count}``, newest first,
  paged by ``page`` / ``limit`` (``ActivityQuerySerializer``: integers >= 1, defaults 1 and 10;
  ``activity_page_response`` in posthog/models/activity_logging/activity_page.py).

Fault kind ``no_flag_versions``: ``versions/:n`` answers 404, as an instance without that action does (the
client then rebuilds from the activity log).
"""

from __future__ import annotations

import copy
import sqlite3
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from .._context import context_of
from .._endpoints import Endpoint, Query
from .._errors import not_found, validation_error
from .._http import SafeJSONResponse, request_url
from .._store import Store, dumps, loads

__all__ = ["ENDPOINTS", "SCHEMA", "TRACKED_FIELDS", "flag_changes", "record", "seed", "version_of"]

SCHEMA = ""  # the core activity_log table

#: The stored fields whose changes an entry records (PostHog logs every model field but those in
#: ``field_exclusions["FeatureFlag"]`` and ``common_field_exclusions``: timestamps, the creator, computed
#: fields; products/feature_flags/backend/version_history.py ``RECONSTRUCTABLE_FIELDS`` is the same set).
TRACKED_FIELDS = (
    "name",
    "key",
    "filters",
    "active",
    "deleted",
    "version",
    "ensure_experience_continuity",
    "rollback_conditions",
    "is_remote_configuration",
    "has_encrypted_payloads",
    "evaluation_runtime",
    "bucketing_identifier",
    "tags",
    "evaluation_tags",
)

#: The activities that bump a flag's version (the ones ``reconstruct_flag_at_version`` walks).
VERSION_ACTIVITIES = ("updated", "deleted", "restored")


def _action(before: Any, after: Any) -> str:
    if before is None:
        return "created"
    return "deleted" if after is None else "changed"


def flag_changes(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    """One ``{type, action, field, before, after}`` per tracked field that differs (``version`` last, as
    PostHog's body lists it after the fields)."""
    out = []
    for field in TRACKED_FIELDS:
        old, new = before.get(field), after.get(field)
        if old != new and field != "version":
            out.append(
                {
                    "type": "FeatureFlag",
                    "action": _action(old, new),
                    "field": field,
                    "before": old,
                    "after": new,
                }
            )
    if before.get("version") != after.get("version"):
        old, new = before.get("version"), after.get("version")
        out.append(
            {"type": "FeatureFlag", "action": "changed", "field": "version", "before": old, "after": new}
        )
    return out


def _detail(key: str, changes: list[dict[str, Any]]) -> dict[str, Any]:
    """The entry's ``detail`` (``DetailSerializer``: changes, trigger, type, short_id; name: the flag key)."""
    return {"changes": changes, "trigger": None, "type": None, "name": key, "short_id": None}


def record(
    conn: sqlite3.Connection,
    *,
    project_id: int,
    flag_id: int,
    before: dict[str, Any] | None,
    after: dict[str, Any],
    user_id: int | None,
    stamp: str,
) -> None:
    """Write the activity entry of one flag write inside the caller's transaction, timestamped ``stamp``
    (the write's own ``updated_at``): ``created`` when ``before`` is None, else ``deleted`` / ``restored``
    when ``deleted`` flips, else ``updated``."""
    if before is None:
        activity, changes = "created", []
    else:
        changes = flag_changes(before, after)
        flipped = bool(before.get("deleted")) != bool(after.get("deleted"))
        activity = ("deleted" if after.get("deleted") else "restored") if flipped else "updated"
    org = conn.execute("SELECT organization_id FROM projects WHERE id=?", (project_id,)).fetchone()
    conn.execute(
        "INSERT INTO activity_log(organization_id, project_id, scope, item_id, activity, detail, user_id, "
        "created_at) VALUES (?,?,?,?,?,?,?,?)",
        (
            None if org is None else org[0],
            project_id,
            "FeatureFlag",
            str(flag_id),
            activity,
            dumps(_detail(str(after.get("key")), copy.deepcopy(changes))),
            user_id,
            stamp,
        ),
    )


# -- versions ------------------------------------------------------------------------------------------------
class _Incomplete(Exception):
    pass


def _version_after(changes: Any) -> Any:
    for change in changes if isinstance(changes, list) else []:
        if isinstance(change, dict) and change.get("field") == "version":
            return change.get("after")
    return None


def _entries_newest_first(store: Store, project_id: int, flag_id: int) -> list[sqlite3.Row]:
    return store.query(
        "SELECT activity, detail, user_id, created_at FROM activity_log WHERE project_id=? AND "
        "scope='FeatureFlag' AND item_id=? AND activity IN ('updated','deleted','restored') "
        "ORDER BY created_at DESC, id DESC",
        (project_id, str(flag_id)),
    )


def _walk_back(
    fields: dict[str, Any], entries: list[sqlite3.Row], target: int
) -> tuple[str | None, int | None]:
    """Undo, newest first, the entries that lead past ``target`` (putting back each change's ``before``);
    ``(timestamp, user)`` of the entry that made ``target`` (None, None: ``target`` is the creation).
    Raises `_Incomplete` when an entry is missing: each undone entry must lead into the version the walk
    stands at (the chain check PostHog makes for its v2 configs in ``reconstruct_flag_at_version``; the
    sandbox makes it for every flag, so a gap is a 422, never a wrong version)."""
    for row in entries:
        detail = loads(row["detail"]) or {}
        changes = detail.get("changes") if isinstance(detail, dict) else None
        after = _version_after(changes)
        if after is None:
            continue
        if after != fields.get("version"):
            raise _Incomplete
        if after == target:
            return row["created_at"], row["user_id"]
        for change in changes or []:
            if isinstance(change, dict) and change.get("field") in TRACKED_FIELDS:
                fields[change["field"]] = copy.deepcopy(change.get("before"))
    if target != 1 or fields.get("version") != 1:
        raise _Incomplete
    return None, None


def version_of(store: Store, project_id: int, flag_id: int, target: int) -> tuple[int, dict[str, Any]]:
    """``(status, body)`` of ``versions/:target/``: 200 with the version, 404 out of range or no such live
    flag, 422 when the activity log cannot rebuild it, 400 for encrypted payloads."""
    row = store.query_one(
        "SELECT id, body, version, deleted FROM feature_flags WHERE project_id=? AND id=?",
        (project_id, flag_id),
    )
    if row is None or row["deleted"]:
        raise not_found()
    stored = loads(row["body"])
    current = int(row["version"])
    encrypted = {"detail": "Version history is not available for flags with encrypted payloads."}
    if stored.get("has_encrypted_payloads"):
        return 400, encrypted
    if not 1 <= target <= current:
        return 404, {"detail": f"Version {target} not found (current version is {current})"}
    fields = {f: copy.deepcopy(stored.get(f)) for f in TRACKED_FIELDS}
    fields["version"] = current
    stamp = stored.get("updated_at") or stored.get("created_at")
    user = _user_id(stored.get("last_modified_by"))
    if target != current:
        try:
            stamp, user = _walk_back(fields, _entries_newest_first(store, project_id, flag_id), target)
        except _Incomplete:
            return 422, {"detail": f"Activity log is incomplete. Cannot reconstruct version {target}."}
        if stamp is None:  # the creation: no entry leads into version 1
            stamp, user = stored.get("created_at"), _user_id(stored.get("created_by"))
    if fields.get("has_encrypted_payloads"):
        return 400, encrypted
    return 200, _version_body(flag_id, stored, fields, historical=target != current, stamp=stamp, user=user)


def _user_id(user: Any) -> int | None:
    return user.get("id") if isinstance(user, dict) and isinstance(user.get("id"), int) else None


def _version_body(
    flag_id: int, stored: dict[str, Any], fields: dict[str, Any], *, historical: bool, stamp: Any, user: Any
) -> dict[str, Any]:
    """``FeatureFlagVersionResponseSerializer``'s fields (in products/feature_flags/backend/api/
    feature_flag.py)."""
    filters = fields.get("filters")
    if not isinstance(filters, dict) or not filters:
        filters = {"groups": []}
    elif "groups" not in filters:
        filters = {**filters, "groups": []}
    return {
        "id": flag_id,
        "key": fields.get("key"),
        "name": fields.get("name") or "",
        "filters": filters,
        "active": bool(fields.get("active", True)),
        "deleted": bool(fields.get("deleted", False)),
        "version": fields.get("version"),
        "ensure_experience_continuity": bool(fields.get("ensure_experience_continuity") or False),
        "has_enriched_analytics": False,
        "is_remote_configuration": bool(fields.get("is_remote_configuration") or False),
        "has_encrypted_payloads": bool(fields.get("has_encrypted_payloads") or False),
        "evaluation_runtime": fields.get("evaluation_runtime") or "all",
        "bucketing_identifier": fields.get("bucketing_identifier") or "distinct_id",
        "last_called_at": stored.get("last_called_at"),
        "created_at": stored.get("created_at"),
        "created_by": _user_id(stored.get("created_by")),
        "is_historical": historical,
        "version_timestamp": stamp,
        "modified_by": user,
    }


# -- the activity log ----------------------------------------------------------------------------------------
def _page_params(request: Request) -> tuple[int, int]:
    """``limit`` and ``page`` as ``ActivityQuerySerializer`` reads them: integers >= 1 (else 400 naming the
    field), defaults 10 and 1."""
    out = []
    for name, default in (("limit", 10), ("page", 1)):
        raw = request.query_params.get(name)
        if raw is None or raw == "":
            out.append(default)
            continue
        try:
            value = int(raw)
        except ValueError:
            raise validation_error("A valid integer is required.", attr=name, code="invalid") from None
        if value < 1:
            raise validation_error(
                "Ensure this value is greater than or equal to 1.", attr=name, code="min_value"
            )
        out.append(min(value, 10**9))
    return out[0], out[1]


def _entry(row: sqlite3.Row) -> dict[str, Any]:
    """One entry as ``ActivityLogSerializer`` writes it (a system entry's user is PostHog's System user)."""
    user = (
        {"first_name": row["first_name"], "email": row["email"]}
        if row["user_id"] is not None
        else {"first_name": "System", "email": None, "is_system": True}
    )
    return {
        "id": f"{row['id']:08d}-0000-4000-8000-000000000000",
        "user": user,
        "activity": row["activity"],
        "scope": row["scope"],
        "item_id": row["item_id"],
        "detail": loads(row["detail"]),
        "created_at": row["created_at"],
    }


def _activity_response(request: Request, project_id: int, flag_id: int | None) -> Response:
    ctx = context_of(request)
    limit, page = _page_params(request)
    where = "a.project_id=? AND a.scope='FeatureFlag'"
    params: list[Any] = [project_id]
    if flag_id is not None:
        where += " AND a.item_id=?"
        params.append(str(flag_id))
    total_row = ctx.store.query_one(f"SELECT COUNT(*) AS n FROM activity_log a WHERE {where}", tuple(params))
    total = int(total_row["n"]) if total_row else 0
    rows = ctx.store.query(
        "SELECT a.*, u.first_name, u.email FROM activity_log a LEFT JOIN users u ON u.id=a.user_id "
        f"WHERE {where} ORDER BY a.created_at DESC, a.id DESC LIMIT ? OFFSET ?",
        (*params, limit, (page - 1) * limit),
    )
    url = request_url(request)
    nxt = str(url.include_query_params(page=page + 1, limit=limit)) if page * limit < total else None
    prev = str(url.include_query_params(page=page - 1, limit=limit)) if page > 1 else None
    return SafeJSONResponse(
        {"results": [_entry(r) for r in rows], "next": nxt, "previous": prev, "total_count": total}
    )


def _flag_id(request: Request) -> int:
    value = int(request.path_params["flag_id"])
    if not 0 < value < 2**63:
        raise not_found()
    return value


def _live_flag(request: Request, project_id: int, flag_id: int) -> None:
    """404 unless the project has this flag, not deleted (``get_object`` on the flag queryset)."""
    row = context_of(request).store.query_one(
        "SELECT 1 FROM feature_flags WHERE project_id=? AND id=? AND deleted=0", (project_id, flag_id)
    )
    if row is None:
        raise not_found()


async def flag_activity(request: Request) -> Response:
    """GET ``.../feature_flags/:id/activity/``: the flag's entries, newest first, one page."""
    ctx = context_of(request)
    ctx.authenticate_personal(request, "activity_log:read")
    project_id, flag_id = ctx.project_id_of(request), _flag_id(request)
    _live_flag(request, project_id, flag_id)
    return _activity_response(request, project_id, flag_id)


async def all_activity(request: Request) -> Response:
    """GET ``.../feature_flags/activity/``: every flag's entries of the project, newest first, one page."""
    ctx = context_of(request)
    ctx.authenticate_personal(request, "activity_log:read")
    return _activity_response(request, ctx.project_id_of(request), None)


async def flag_version(request: Request) -> Response:
    """GET ``.../feature_flags/:id/versions/:n/``: the flag as it was at version ``n``."""
    ctx = context_of(request)
    ctx.authenticate_personal(request, "feature_flag:read")
    project_id, flag_id = ctx.project_id_of(request), _flag_id(request)
    if ctx.faults.active("no_flag_versions", request.method, request.url.path):
        raise not_found()
    raw = str(request.path_params["version_number"])
    if not raw.isascii() or not raw.isdigit() or len(raw) > 18:  # the action's url_path is [0-9]+
        raise not_found()
    status, body = version_of(ctx.store, project_id, flag_id, int(raw))
    return SafeJSONResponse(body, status_code=status)


_BASE = "/api/projects/{project_id}/feature_flags/"
_ENV = "/api/environments/{project_id}/feature_flags/"
_PAGE = (
    Query("limit", "integer", minimum=1, validated=True, description="Entries per page (default 10)."),
    Query("page", "integer", minimum=1, validated=True, description="1-based page number (default 1)."),
)


#: The ``versions`` action answers its own refusals as ``{"detail": ...}`` (``Response({"detail": str(e)})``
#: for VersionNotFound, VersionHistoryIncomplete and encrypted payloads); an unknown flag is the usual body.
_DETAIL = {"type": "object", "required": ["detail"], "properties": {"detail": {"type": "string"}}}
_DETAIL_ONLY = {
    str(code): {"description": what, "content": {"application/json": {"schema": _DETAIL}}}
    for code, what in (
        (400, "Version history is not available for flags with encrypted payloads."),
        (404, "No such flag, or version out of range."),
        (422, "Activity log incomplete; cannot reconstruct this version."),
    )
}


def _ep(method: str, suffix: str, handler: Any, op: str, summary: str, **kw: Any) -> Endpoint:
    return Endpoint(method, _BASE + suffix, handler, op, summary, aliases=(_ENV + suffix,), **kw)


ENDPOINTS = [
    _ep(
        "GET",
        "activity/",
        all_activity,
        "feature_flags_all_activity_retrieve",
        "Activity of every flag",
        query=_PAGE,
    ),
    _ep(
        "GET",
        "{flag_id:int}/activity/",
        flag_activity,
        "feature_flags_activity_retrieve",
        "A flag's activity",
        query=_PAGE,
    ),
    _ep(
        "GET",
        "{flag_id:int}/versions/{version_number}/",
        flag_version,
        "feature_flags_versions_retrieve",
        "A flag as it was at version n",
        errors=(401, 403),
        extra_responses=_DETAIL_ONLY,
    ),
]


def seed(store: Store, ctx: Any) -> None:
    """Nothing to seed: the flags' own writes record their history."""
    del store, ctx
