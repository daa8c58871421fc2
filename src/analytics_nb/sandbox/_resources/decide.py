"""``/decide/`` and ``/flags/`` like the Rust flags service (posthog-notes §5), answered by our flag engine.

Shapes (``rust/feature-flags/src/api/types.rs`` and ``endpoint.rs`` ``get_versioned_response``, field for
field): ``/decide`` v missing/1 -> list of enabled keys, 2 -> enabled flags only, 3 -> the legacy map of every
flag (incl. false) with ``errorsWhileComputingFlags`` and payloads, >= 4 -> the detailed ``flags`` records of
``/flags?v=2``. A non-integer ``v`` counts as missing. ``/flags`` with v=2 (or neither ``v`` nor ``config``)
-> detailed records; v >= 3 -> the typed records posthog-python 7.91.1 reads from ``/flags/?v=4`` (one
``value``, ``metadata.config_version``); v missing/1 -> the legacy map. Config keys always on ``/decide``, on
``/flags`` only with ``config=true`` or with neither ``v`` nor ``config``. Every shape carries ``requestId``
and ``evaluatedAt``.

A flag the service fails to evaluate is ``enabled: false, failed: true`` with the error's reason in the
detailed records, ``value: null, failed: true`` in the typed ones, and plain ``false`` in the legacy map
(with ``errorsWhileComputingFlags: true``): exactly what the service sends since Feb 2026.

Errors are the Rust service's plain-text bodies. Controls for tests: :func:`set_flags_quota_limited`,
:func:`set_flag_failures`, and fault rules with ``kind="quota_limited"``, ``kind="flag_failure"`` (every flag
fails), ``kind="flag_failure:<key>"`` or ``kind="flag_key_mismatch"`` (each record names another flag);
``kind="rate_limit_warning"`` adds the warn tier's ``X-PostHog-Rate-Limit-Warning: true`` to the 200.

Runtime and tags: a flag whose ``evaluation_runtime`` is "server" or "client" is left out of the answer for
a caller of the other runtime or of one the service cannot tell (no ``evaluation_runtime`` in the body, an
unknown User-Agent, no browser headers); a flag with ``evaluation_tags`` is left out when the body's
``evaluation_environments`` name none of them (`rust/feature-flags/src/handler/flags.rs`).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from .._context import SandboxContext, context_of
from .._endpoints import Endpoint, Query
from .._geoip import client_ip, geoip_properties
from .._http import BodyTooLarge, read_limited
from .._store import Store
from . import feature_flags as _feature_flags
from . import persons as _persons
from .capture import BodyError, decode_body

__all__ = [
    "ENDPOINTS",
    "decide",
    "seed",
    "set_flag_failures",
    "set_flags_quota_limited",
]

SCHEMA = ""  # decide only reads: flags, cohorts, persons, groups, hash-key overrides
_ALLOW = "GET, POST, OPTIONS, HEAD"
_CORS = {"Access-Control-Allow-Origin": "*"}
_MAX_BODY = 2 * 1024 * 1024
_MAX_DISTINCT_ID = 200

MSG_NO_TOKEN = "No API token provided. Please include a valid API token in your request."
MSG_BAD_TOKEN = "The provided API key is invalid or has expired. Please check your API key and try again."
MSG_NO_DISTINCT_ID = "The distinct_id field is missing from the request. Please include a valid identifier."
_ACCEPTED_TYPES = ("", "application/json", "text/plain", "application/x-www-form-urlencoded")
#: Added to a 200 by the service's warn tier before its 429s (`rust/feature-flags/src/api/
#: flags_rate_limiter.rs`).
RATE_LIMIT_WARNING = "X-PostHog-Rate-Limit-Warning"


# -- controls ------------------------------------------------------------------------------------------------
def set_flags_quota_limited(ctx: SandboxContext, limited: bool = True) -> None:
    """Make decide/flags answer as a billing-limited project (`quotaLimited: ["feature_flags"]`, no flags)."""
    ctx.decide.quota_limited = bool(limited)


def set_flag_failures(ctx: SandboxContext, keys: Iterable[str] | str = ()) -> None:
    """Make these flags fail to compute, as the service answers a flag it could not evaluate: `failed: true`
    in detailed and typed records, `false` in the legacy map, left out of the v1/v2 lists of enabled
    flags, with `errorsWhileComputingFlags: true`; the other flags are still answered. Empty clears it."""
    if isinstance(keys, str):
        keys = [keys]
    ctx.decide.failing = frozenset(str(k) for k in keys)


# -- engine glue ---------------------------------------------------------------------------------------------
def _subset(fs: _feature_flags.FlagSet, keys: frozenset[str]) -> Any:
    """The compiled flags restricted to `keys` and what they depend on (cached per flag set), so that an SDK
    asking for one flag (`flag_keys_to_evaluate=[key]`) does not pay for every flag."""
    from analytics_nb.flags import CompiledFlags

    cache = fs.subsets
    sub = cache.get(keys)
    if sub is None:
        compiled = fs.compiled
        need: set[str] = set()
        stack = [k for k in keys if k in compiled.by_key]
        while stack:
            key = stack.pop()
            if key in need:
                continue
            need.add(key)
            for dep in compiled.by_key[key].dependencies:
                target = compiled.alias.get(dep)
                if target is not None:
                    stack.append(target)
        sub = CompiledFlags(
            [f for f in compiled.flags if f.key in need],
            compiled.cohorts,
            compiled.group_type_mapping,
            property_matching_version=compiled.property_matching_version,
            timezone=compiled.timezone,
        )
        if len(cache) < 512:
            cache[keys] = sub
    return sub


def _evaluate(
    fs: _feature_flags.FlagSet,
    distinct_id: str,
    person: dict[str, Any],
    groups: dict[str, str],
    group_props: dict[str, dict[str, Any]],
    mapping: dict[str, str],
    keys: frozenset[str] | None = None,
    hash_keys: dict[str, str] | None = None,
) -> dict[str, Any]:
    from analytics_nb.flags import evaluate_flags

    if fs.compiled is None:
        return {}
    return evaluate_flags(
        fs.compiled if keys is None else _subset(fs, keys),
        distinct_id,
        person_properties=person,
        groups=groups,
        group_properties=group_props,
        group_type_mapping=mapping,
        mode="server",
        hash_key_overrides=hash_keys,
    )


def _continuity_keys(fs: _feature_flags.FlagSet) -> frozenset[str]:
    """Keys of the compiled flags with `ensure_experience_continuity` (cached per flag set)."""
    keys = fs.continuity
    if keys is None:
        flags = fs.compiled.flags if fs.compiled is not None else []
        keys = frozenset(f.key for f in flags if f.continuity)
        fs.continuity = keys
    return keys


def _hash_keys(
    ctx: SandboxContext,
    fs: _feature_flags.FlagSet,
    project_id: int,
    distinct_id: str,
    payload: dict[str, Any],
) -> dict[str, str] | None:
    """Experience continuity (posthog-notes §6.2): with `$anon_distinct_id`, store it as the hash key of
    `distinct_id` for each continuity flag without one; then the stored hash keys of those flags."""
    keys = _continuity_keys(fs)
    if not keys:
        return None
    anon = _as_key(payload.get("$anon_distinct_id"))
    if anon:
        _feature_flags.write_hash_key_overrides(
            ctx.store, project_id, distinct_id, anon[:_MAX_DISTINCT_ID], sorted(keys)
        )
    stored = _feature_flags.hash_key_overrides(ctx.store, project_id, distinct_id)
    return {k: v for k, v in stored.items() if k in keys} or None


# -- request parsing -----------------------------------------------------------------------------------------
class _Reject(Exception):
    def __init__(self, status: int, text: str) -> None:
        super().__init__(text)
        self.status = status
        self.text = text


def _decode_failure(detail: str) -> _Reject:
    return _Reject(
        400, f"Failed to decode request: {detail}. Please check your request format and try again."
    )


def parse_version(raw: str | None) -> int | None:
    """`v` as the Rust service reads it: an integer, else None (missing or unparseable)."""
    if raw is None:
        return None
    try:
        return int(raw.strip())
    except ValueError:
        return None


def _as_key(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return str(value)
    return None


# -- runtime and tags (rust/feature-flags/src/handler/flags.rs) ---------------------------------------------
#: The SDK names after ``posthog-`` in a User-Agent and their runtime (`UserAgentInfo::parse_posthog_sdk` in
#: `rust/feature-flags/src/utils/user_agent.rs`); another name after ``posthog-`` is unknown.
_SDK_RUNTIMES = {
    **dict.fromkeys(
        ("python", "ruby", "php", "java", "go", "node", "dotnet", "elixir", "rs", "server"), "server"
    ),
    **dict.fromkeys(("js", "android", "ios", "react-native", "flutter"), "client"),
}
_BROWSER_MARKS = ("Mozilla/", "Chrome/", "Safari/", "Firefox/", "Edge/")  # `is_browser_user_agent`
_BROWSER_HEADERS = ("origin", "referer", "sec-fetch-mode", "sec-fetch-site")


def user_agent_runtime(user_agent: str | None) -> str | None:
    """ "server", "client" or None (unknown) for a User-Agent, as `UserAgentInfo::parse` reads it: a
    ``posthog-<sdk>/<version>`` first (an unknown SDK name is unknown), then browser marks, then
    ``python-requests/`` and ``curl/`` (server). ``analytics-nb/<version>`` is unknown."""
    if not user_agent:
        return None
    if user_agent.startswith("posthog-"):
        name, slash, version = user_agent[len("posthog-") :].partition("/")
        if not slash or not name or not version.split(" ", 1)[0]:
            return None
        return _SDK_RUNTIMES.get(name)
    if any(mark in user_agent for mark in _BROWSER_MARKS):
        return "client"
    if "python-requests/" in user_agent or "curl/" in user_agent:
        return "server"
    return None


def request_runtime(payload: dict[str, Any], headers: Mapping[str, str]) -> str | None:
    """The caller's runtime as `detect_evaluation_runtime_from_request` decides it: the body's
    ``evaluation_runtime`` ("client"/"server" in any case; any other text is "all"), else the User-Agent,
    else a browser header (``Origin``, ``Referer``, ``Sec-Fetch-Mode``/``-Site``: client), else None."""
    explicit = payload.get("evaluation_runtime")
    if explicit is not None:
        if not isinstance(explicit, str):
            raise _decode_failure("evaluation_runtime must be a string")
        low = explicit.lower()
        return low if low in ("client", "server") else "all"
    found = user_agent_runtime(headers.get("user-agent"))
    if found is not None:
        return found
    return "client" if any(h in headers for h in _BROWSER_HEADERS) else None


def _environment_tags(payload: dict[str, Any]) -> list[str]:
    """The body's ``evaluation_environments`` (`FlagRequest` in `rust/feature-flags/src/api/types.rs`)."""
    tags = payload.get("evaluation_environments")
    if tags is None:
        return []
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise _decode_failure("evaluation_environments must be a list of strings")
    return tags


def excluded_by_scope(fs: _feature_flags.FlagSet, runtime: str | None, env_tags: list[str]) -> set[str]:
    """Keys /flags leaves out of its answer for this caller (`collect_excluded_by_runtime` and
    `collect_excluded_by_tags` in `rust/feature-flags/src/handler/flags.rs`): a "server"/"client" flag for a
    caller of the other runtime **or of an unknown one** (runtime "all" keeps every flag); a flag with
    evaluation tags when the request names environment tags and none of them is the flag's."""
    out: set[str] = set()
    wanted = set(env_tags)
    for key, (flag_runtime, tags) in fs.scoped.items():
        if (flag_runtime != "all" and runtime != "all" and flag_runtime != runtime) or (
            wanted and tags and not wanted.intersection(tags)
        ):
            out.add(key)
    return out


# -- responses -----------------------------------------------------------------------------------------------
def _config_keys() -> dict[str, Any]:
    return {
        "config": {"enable_collect_everything": True},
        "toolbarParams": {},
        "isAuthenticated": False,
        "supportedCompression": ["gzip", "gzip-js"],
        "sessionRecording": False,
        "capturePerformance": False,
        "autocapture_opt_out": False,
        "autocaptureExceptions": False,
        "analytics": {"endpoint": "/i/v0/e/"},
        "elementsChainAsString": True,
        "captureDeadClicks": False,
        "surveys": False,
        "heatmaps": False,
        "flagsPersistenceDefault": False,
        "defaultIdentifiedOnly": True,
        "siteApps": [],
        "errorTracking": {"autocaptureExceptions": False, "suppressionRules": []},
    }


def _value_of(result: Any) -> bool | str:
    value = result.value
    if value is None:
        return False
    return value


def _reason(code: Any, condition_index: Any, description: Any) -> dict[str, Any]:
    """`FlagEvaluationReason`: `description` is left out when there is none (`skip_serializing_if`)."""
    reason: dict[str, Any] = {"code": code, "condition_index": condition_index}
    if description:
        reason["description"] = description
    return reason


def _detail(key: str, result: Any, meta: dict[str, Any]) -> dict[str, Any]:
    """A `FlagDetails` record (`/flags?v=2`, `/decide?v>=4`): `failed` only when true, so never here."""
    value = _value_of(result)
    enabled = value is not False
    return {
        "key": key,
        "enabled": enabled,
        "variant": value if isinstance(value, str) else None,
        "reason": _reason(result.reason, result.condition_index, result.description),
        "metadata": {
            "id": result.flag_id if result.flag_id is not None else meta.get("id"),
            "version": result.version if result.version is not None else meta.get("version"),
            "description": None,
            "payload": result.payload if enabled else None,
            "has_experiment": False,
        },
    }


#: The reason of a flag the sandbox is told to fail (`set_flag_failures`): what the service's
#: `FlagDetails::create_error` writes for a timed-out evaluation (`FlagError::TimeoutError(None)`:
#: `evaluation_error_code()` is "timeout_error"; the description text is the sandbox's own).
FAILED_REASON = ("timeout_error", "Timeout while evaluating the flag")


def _failed_detail(key: str, meta: dict[str, Any]) -> dict[str, Any]:
    """`FlagDetails::create_error`: `enabled: false`, `failed: true`, the error's code, no payload."""
    return {
        "key": key,
        "enabled": False,
        "variant": None,
        "failed": True,
        "reason": _reason(FAILED_REASON[0], None, FAILED_REASON[1]),
        "metadata": {
            "id": meta.get("id"),
            "version": meta.get("version"),
            "description": None,
            "payload": None,
            "has_experiment": False,
        },
    }


def _typed(record: dict[str, Any]) -> dict[str, Any]:
    """A `FlagDetailsV3` record (`From<FlagDetails>`, config version 1: every sandbox flag has classic
    release conditions): one typed `value` (null when failed) instead of `enabled`/`variant`; metadata
    gains `config_version` and, for a variant, `variant_key`."""
    failed = bool(record.get("failed"))
    meta = record["metadata"]
    value: Any = record["variant"] if record["variant"] is not None else record["enabled"]
    if failed:
        value = None
    metadata: dict[str, Any] = {
        "id": meta["id"],
        "version": meta["version"],
        "config_version": 1,
        "description": meta["description"],
        "payload": meta["payload"],
        "has_experiment": meta["has_experiment"],
    }
    if record["variant"] is not None:
        metadata["variant_key"] = record["variant"]
    typed: dict[str, Any] = {"key": record["key"], "value": value}
    if failed:
        typed["failed"] = True
    typed["reason"] = record["reason"]
    typed["metadata"] = metadata
    return typed


def _mode(endpoint: str, version: int | None, config: bool) -> tuple[str, bool]:
    """The response shape and whether the config keys go with it (`get_versioned_response` in
    `rust/feature-flags/src/api/endpoint.rs`; typed records for `/flags?v>=3`, which posthog-python 7.91.1
    asks for with `v=4`: `FlagsResponseV3` in `api/types.rs`)."""
    if endpoint == "decide":
        if version is None or version <= 1:
            return "v1", True
        return {2: "v2", 3: "v3"}.get(version, "detailed"), True
    if version is None and not config:
        return "detailed", True
    if version is not None and version >= 3:
        return "typed", config
    return ("detailed" if version == 2 else "v3"), config


def _build(
    *,
    endpoint: str,
    version: int | None,
    config: bool,
    results: Mapping[str, Any],
    failed: set[str],
    meta: dict[str, dict[str, Any]],
    quota_limited: bool,
    request_id: str,
) -> tuple[dict[str, Any], bool]:
    """The version-shaped answer without the config keys, and whether the config keys go with it.

    Every shape is derived from the detailed records, as the service derives them (`types.rs`): a failed
    flag is `enabled: false` there, so it is absent from the v1/v2 lists of enabled flags and **`false`**
    in the legacy v3 map (`LegacyFlagsResponse::from_response` keeps every record)."""
    mode, with_config = _mode(endpoint, version, config)
    records = {k: _detail(k, r, meta.get(k, {})) for k, r in results.items()}
    for key in sorted(failed):
        records[key] = _failed_detail(key, meta.get(key, {}))
    errors = bool(failed)

    def legacy(record: dict[str, Any]) -> bool | str:
        return record["variant"] if record["variant"] is not None else record["enabled"]

    body: dict[str, Any] = {}
    if mode == "v1":
        body["featureFlags"] = [k for k, r in records.items() if r["enabled"]]
    elif mode == "v2":
        body["featureFlags"] = {k: legacy(r) for k, r in records.items() if r["enabled"]}
    elif mode == "v3":
        body["errorsWhileComputingFlags"] = errors
        body["featureFlags"] = {k: legacy(r) for k, r in records.items()}
        body["featureFlagPayloads"] = {
            k: r["metadata"]["payload"] for k, r in records.items() if r["metadata"]["payload"] is not None
        }
    else:
        body["errorsWhileComputingFlags"] = errors
        body["flags"] = records if mode == "detailed" else {k: _typed(r) for k, r in records.items()}
    if quota_limited:
        body["quotaLimited"] = ["feature_flags"]
    body["requestId"] = request_id
    body["evaluatedAt"] = int(time.time() * 1000)
    return body, with_config


#: The constant config keys, encoded once: `{"config":...,"siteApps":[],...` without the closing brace.
_CONFIG_PREFIX = json.dumps(_config_keys(), separators=(",", ":"))[:-1]


def _json(answer: tuple[dict[str, Any], bool], status: int = 200) -> Response:
    body, with_config = answer
    text = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
    if with_config:
        text = _CONFIG_PREFIX + ("," + text[1:] if len(text) > 2 else "}")
    return Response(text, status_code=status, media_type="application/json", headers=_CORS)


def _text(status: int, text: str) -> Response:
    return PlainTextResponse(text, status_code=status, headers=_CORS)


# -- evaluation ----------------------------------------------------------------------------------------------
def decide(
    ctx: SandboxContext,
    payload: Any,
    *,
    endpoint: str = "flags",
    version: int | None = 2,
    config: bool = False,
    ip: str | None = None,
    kinds: Iterable[str] = (),
    headers: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Answer one decoded decide/flags request body as the endpoint would (a dict), without HTTP.

    Raises `_Reject` (its `status` and plain `text`) on bad input; `kinds` are fault-rule kinds to apply;
    `headers` (lower-case names) are the request's, read for the caller's runtime."""
    body, with_config = _answer(
        ctx, payload, endpoint=endpoint, version=version, config=config, ip=ip, kinds=kinds, headers=headers
    )
    return {**_config_keys(), **body} if with_config else body


def _identity(ctx: SandboxContext, payload: Any) -> tuple[int, str]:
    """The project (from the body's token) and the distinct id a decoded body asks about; raises `_Reject`
    (401 for a missing or unknown token, 400 for a missing id)."""
    if not isinstance(payload, dict):
        raise _decode_failure("invalid JSON")
    token = payload.get("token")
    if token is None:
        token = payload.get("api_key")
    if token is None:
        token = payload.get("$token")
    if token is None or token == "":
        raise _Reject(401, MSG_NO_TOKEN)
    if not isinstance(token, str):
        raise _Reject(401, MSG_BAD_TOKEN)
    project_id = ctx.token_project(token)
    if project_id is None:
        raise _Reject(401, MSG_BAD_TOKEN)
    raw_id = payload.get("distinct_id")
    if raw_id is None:
        raw_id = payload.get("$distinct_id")
    if raw_id is None or raw_id == "":
        raise _Reject(400, MSG_NO_DISTINCT_ID)
    if isinstance(raw_id, str):
        distinct_id = raw_id
    elif isinstance(raw_id, int | float) and not isinstance(raw_id, bool):
        distinct_id = str(raw_id)
    else:
        distinct_id = json.dumps(raw_id, separators=(",", ":"))
    distinct_id = distinct_id[:_MAX_DISTINCT_ID]
    return project_id, distinct_id


def _overrides(payload: Any) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The body's ``person_properties``, ``groups`` and ``group_properties`` (empty when absent); raises
    `_Reject` when one is not a JSON object of the right shape."""
    overrides = payload.get("person_properties")
    if overrides is None:
        overrides = {}
    if not isinstance(overrides, dict):
        raise _decode_failure("person_properties must be a JSON object")
    raw_groups = payload.get("groups")
    if raw_groups is None:
        raw_groups = {}
    if not isinstance(raw_groups, dict):
        raise _decode_failure("groups must be a JSON object of group type -> group key")
    group_overrides = payload.get("group_properties")
    if group_overrides is None:
        group_overrides = {}
    if not isinstance(group_overrides, dict) or not all(
        isinstance(v, dict) for v in group_overrides.values()
    ):
        raise _decode_failure("group_properties must be a JSON object of group type -> properties object")
    return overrides, raw_groups, group_overrides


def _answer(
    ctx: SandboxContext,
    payload: Any,
    *,
    endpoint: str = "flags",
    version: int | None = 2,
    config: bool = False,
    ip: str | None = None,
    kinds: Iterable[str] = (),
    headers: Mapping[str, str] | None = None,
) -> tuple[dict[str, Any], bool]:
    """The answer to one decoded body (see `decide`) and whether the config keys go with it."""
    project_id, distinct_id = _identity(ctx, payload)
    overrides, raw_groups, group_overrides = _overrides(payload)
    runtime = request_runtime(payload, headers or {})
    env_tags = _environment_tags(payload)

    controls = ctx.decide
    kinds = set(kinds)
    request_id = str(uuid.uuid4())
    quota = bool(controls.quota_limited) or "quota_limited" in kinds
    if quota or payload.get("disable_flags") is True:
        return _build(
            endpoint=endpoint,
            version=version,
            config=config,
            results={},
            failed=set(),
            meta={},
            quota_limited=quota,
            request_id=request_id,
        )

    fs = _feature_flags.flag_set(ctx.store, project_id)
    store = ctx.store
    person = _persons.person_properties(store, project_id, distinct_id)
    person["distinct_id"] = distinct_id
    device_id = payload.get("$device_id", payload.get("device_id"))
    if isinstance(device_id, str) and device_id:
        person["$device_id"] = device_id  # bucketing of flags with bucketing_identifier="device_id"
    if ip and ctx.geoip and payload.get("geoip_disable") is not True:
        person.update(geoip_properties(ip))
    person.update(overrides)
    groups = {str(name): key for name, value in raw_groups.items() if (key := _as_key(value)) is not None}
    mapping = fs.group_type_mapping
    group_props: dict[str, dict[str, Any]] = {}
    if groups:
        mapping = _persons.group_type_mapping(store, project_id)
        group_props = _persons.group_properties_for(store, project_id, groups, mapping)
        for name, props in group_overrides.items():
            group_props[str(name)] = {**group_props.get(str(name), {}), **props}
    elif fs.has_group_flags:
        mapping = _persons.group_type_mapping(store, project_id)

    failing = set(controls.failing)
    if "flag_failure" in kinds:
        failing |= {d["key"] for d in fs.definitions}
    failing |= {k.split(":", 1)[1] for k in kinds if k.startswith("flag_failure:")}
    failing |= fs.bad_keys
    wanted = payload.get("flag_keys_to_evaluate")
    if wanted is None:
        wanted = payload.get("flag_keys")
    keep = frozenset(str(k) for k in wanted) if isinstance(wanted, list) and wanted else None
    hash_keys = _hash_keys(ctx, fs, project_id, distinct_id, payload)
    try:
        results = _evaluate(fs, distinct_id, person, groups, group_props, mapping, keep, hash_keys)
    except ValueError:  # a property value no operator can read (e.g. a nested object in an override)
        raise _decode_failure("a person or group property holds a value no flag operator can read") from None
    known = {d["key"] for d in fs.definitions} if failing else set()
    failed = {k for k in failing if k in known}
    for key in failed:
        results.pop(key, None)
    if fs.scoped:  # left out, not evaluated: not in the answer at all (flags.rs `fetch_and_filter`)
        for key in excluded_by_scope(fs, runtime, env_tags):
            results.pop(key, None)
            failed.discard(key)
    if keep is not None:
        results = {k: v for k, v in results.items() if k in keep}
        failed &= keep
    meta = fs.meta
    if meta is None:
        meta = {d["key"]: {"id": d["id"], "version": d["version"]} for d in fs.definitions}
        fs.meta = meta
    return _build(
        endpoint=endpoint,
        version=version,
        config=config,
        results=results,
        failed=failed,
        meta=meta,
        quota_limited=False,
        request_id=request_id,
    )


async def _handle(request: Request, endpoint: str) -> Response:
    method = request.method
    if method == "OPTIONS":
        return Response(
            status_code=204,
            headers={
                "allow": _ALLOW,
                **_CORS,
                "Access-Control-Allow-Methods": _ALLOW,
                "Access-Control-Allow-Headers": "*",
            },
        )
    if method == "HEAD":
        return Response(status_code=200, headers=_CORS)
    ctx = context_of(request)
    query = request.query_params
    version = parse_version(query.get("v"))
    config = (query.get("config") or "").lower() in ("true", "1")
    if method == "GET":
        request_id = str(uuid.uuid4())
        return _json(
            _build(
                endpoint=endpoint,
                version=version,
                config=config,
                results={},
                failed=set(),
                meta={},
                quota_limited=False,
                request_id=request_id,
            )
        )
    if method != "POST":
        return Response(status_code=405, headers={"allow": _ALLOW})
    ctype = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if ctype not in _ACCEPTED_TYPES and not ctype.endswith("+json"):
        return _text(
            400,
            f"Failed to decode request: unsupported content type: {ctype}. "
            "Please check your request format and try again.",
        )
    try:
        raw = await read_limited(request, _MAX_BODY)
    except BodyTooLarge:
        return _text(413, "Failed to buffer the request body: length limit exceeded")
    compression = query.get("compression")
    try:
        if ctype == "application/x-www-form-urlencoded" and (
            raw.startswith(b"\x1f\x8b") or (compression or "").lower().startswith("gzip")
        ):
            raise BodyError("decode", "gzip is not supported with form data")
        payload = decode_body(
            raw,
            content_type=ctype,
            content_encoding=request.headers.get("content-encoding", ""),
            compression=compression,
            limit=_MAX_BODY,
        )
    except BodyError as exc:
        detail = "invalid JSON" if exc.kind == "parse" else exc.message
        return _text(
            400, f"Failed to decode request: {detail}. Please check your request format and try again."
        )
    kinds = [f.kind for f in ctx.faults.pick(method, request.scope["path"], with_kind=True) if f.kind]
    ip = client_ip(request.headers, request.client.host if request.client else None)
    try:
        answer = _answer(
            ctx,
            payload,
            endpoint=endpoint,
            version=version,
            config=config,
            ip=ip,
            kinds=kinds,
            headers=request.headers,
        )
    except _Reject as exc:
        return _text(exc.status, exc.text)
    if "flag_key_mismatch" in kinds:
        _mismatch_keys(answer[0])
    response = _json(answer)
    if "rate_limit_warning" in kinds:  # the warn tier: a 200 that says 429s come next
        response.headers[RATE_LIMIT_WARNING] = "true"
    return response


def _mismatch_keys(body: dict[str, Any]) -> None:
    """A test control (``kind="flag_key_mismatch"``): every detailed record names another flag than the
    entry it sits under (``{"flags": {"a": {"key": "a-other", ...}}}``), as a broken proxy or server might."""
    flags = body.get("flags")
    if isinstance(flags, dict):
        body["flags"] = {k: {**r, "key": f"{k}-other"} for k, r in flags.items() if isinstance(r, dict)}


async def decide_endpoint(request: Request) -> Response:
    """`/decide/`: POST evaluates; GET minimal; HEAD 200; OPTIONS 204."""
    return await _handle(request, "decide")


async def flags_endpoint(request: Request) -> Response:
    """`/flags/`: POST evaluates (`v=2`, and `v=4` as posthog-python sends); GET minimal; HEAD; OPTIONS."""
    return await _handle(request, "flags")


_METHODS = ("GET", "POST", "HEAD", "OPTIONS")
_TEXT_ERRORS = (400, 401, 413)
#: The decide/flags body, as documented (the sandbox reads more spellings, as the Rust service does).
DECIDE_BODY: dict[str, Any] = {
    "type": "object",
    "properties": {
        "api_key": {"type": "string"},
        "token": {"type": "string"},
        "distinct_id": {"type": "string"},
        "groups": {"type": "object", "additionalProperties": {"type": "string"}},
        "person_properties": {"type": "object"},
        "group_properties": {"type": "object", "additionalProperties": {"type": "object"}},
        "geoip_disable": {"type": "boolean"},
        "flag_keys_to_evaluate": {"type": "array", "items": {"type": "string"}},
        "$anon_distinct_id": {"type": "string"},
        "evaluation_runtime": {"type": "string"},
        "evaluation_environments": {"type": "array", "items": {"type": "string"}},
    },
}
_QUERY = (Query("v"), Query("config"), Query("compression"))  # `v` read leniently: text in the document


def _endpoints(path: str, handler: Any, name: str, summary: str) -> list[Endpoint]:
    common: dict[str, Any] = {"auth": "token", "text_errors": True, "body_limit": None}
    return [
        Endpoint(
            "POST",
            path,
            handler,
            name,
            summary,
            query=_QUERY,
            body_schema=DECIDE_BODY,
            errors=_TEXT_ERRORS,
            fast=True,
            **common,
        ),
        Endpoint(
            "GET",
            path,
            handler,
            f"{name}_get",
            "The config keys without flags",
            query=_QUERY,
            errors=(),
            **common,
        ),
        Endpoint(
            "HEAD",
            path,
            handler,
            f"{name}_head",
            "Liveness",
            returns="empty",
            errors=(),
            documented=False,
            **common,
        ),
        Endpoint(
            "OPTIONS",
            path,
            handler,
            f"{name}_options",
            "CORS preflight",
            status=204,
            returns="empty",
            errors=(),
            **common,
        ),
    ]


ENDPOINTS = [
    *_endpoints("/decide/", decide_endpoint, "decide", "Evaluate feature flags (v=1..4)"),
    *_endpoints("/flags/", flags_endpoint, "flags", "Evaluate feature flags (v=2, v=4)"),
]


def seed(store: Store, ctx: SandboxContext) -> None:
    """Nothing to seed: decide reads the flags, persons and groups the other resources seed."""
