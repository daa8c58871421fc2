"""Scalar evaluation: one flag (or a set of flags) for one distinct id and one set of properties."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from analytics_nb.flags._definitions import (
    CohortGroup,
    CompiledFlag,
    ConditionSpec,
    FilterSpec,
    compile_cohorts,
    compile_flag,
    dependency_order,
    split_flag_input,
)
from analytics_nb.flags._errors import FlagDefinitionError
from analytics_nb.flags._hashing import hash_fraction, holdout_fraction
from analytics_nb.flags._operators import FALSE, INCONCLUSIVE, SERVER_ONLY, TRUE
from analytics_nb.flags._values import MISSING, BadValueError, normalize

Mode = Literal["server", "sdk"]
FlagValue = bool | str

REASON_DESCRIPTIONS: dict[str, str] = {
    "no_condition_match": "No matching condition set",
    "out_of_rollout_bound": "Out of rollout bound",
    "no_group_type": "No group type",
    "super_condition_value": "Super condition value",
    "holdout_condition_value": "Holdout condition value",
    "flag_disabled": "Flag is disabled",
}


class FlagResult:
    """The outcome of one flag for one subject: value, payload and why (reason code, condition index).

    Immutable; `description` (a sentence for the reason) is built on first read, not per evaluation.
    """

    __slots__ = (
        "_description",
        "condition_index",
        "flag_id",
        "inconclusive_cause",
        "key",
        "payload",
        "reason",
        "value",
        "version",
    )
    key: str
    value: bool | str | None
    payload: str | None
    reason: str
    condition_index: int | None
    inconclusive_cause: str | None
    flag_id: int | None
    version: int | None
    _description: str | None

    def __init__(
        self,
        key: str,
        value: bool | str | None,
        payload: str | None,
        reason: str,
        condition_index: int | None,
        description: str | None = None,
        inconclusive_cause: str | None = None,
        flag_id: int | None = None,
        version: int | None = None,
    ) -> None:
        setattr_ = object.__setattr__
        setattr_(self, "key", key)
        setattr_(self, "value", value)
        setattr_(self, "payload", payload)
        setattr_(self, "reason", reason)
        setattr_(self, "condition_index", condition_index)
        setattr_(self, "_description", description)
        setattr_(self, "inconclusive_cause", inconclusive_cause)
        setattr_(self, "flag_id", flag_id)
        setattr_(self, "version", version)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"FlagResult is immutable; cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"FlagResult is immutable; cannot delete {name!r}")

    def __getstate__(self) -> tuple[Any, ...]:
        return self._fields()

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        FlagResult.__init__(self, *state)

    @property
    def description(self) -> str:
        """A sentence for the reason ("Matched condition set 2", "Inconclusive: <cause>", ...)."""
        text = self._description
        if text is None:
            text = describe_reason(self.reason, self.condition_index, self.inconclusive_cause)
            object.__setattr__(self, "_description", text)
        return text

    def _fields(self) -> tuple[Any, ...]:
        return (
            self.key,
            self.value,
            self.payload,
            self.reason,
            self.condition_index,
            self.description,
            self.inconclusive_cause,
            self.flag_id,
            self.version,
        )

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not FlagResult:
            return NotImplemented
        return self._fields() == other._fields()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return (
            f"FlagResult(key={self.key!r}, value={self.value!r}, payload={self.payload!r}, "
            f"reason={self.reason!r}, condition_index={self.condition_index!r}, "
            f"description={self.description!r}, inconclusive_cause={self.inconclusive_cause!r}, "
            f"flag_id={self.flag_id!r}, version={self.version!r})"
        )

    @property
    def enabled(self) -> bool | None:
        """True for `True` or any variant, False for `False`, None when inconclusive."""
        if self.value is None:
            return None
        return self.value is not False


def describe_reason(reason: str, index: int | None, cause: str | None) -> str:
    """The description sentence of a reason code (the text /flags puts in `reason.description`)."""
    if reason == "condition_match":
        return f"Matched condition set {(index or 0) + 1}"
    if reason == "inconclusive":
        return f"Inconclusive: {cause}"
    return REASON_DESCRIPTIONS.get(reason, reason)


# ------------------------------------------------------------------------------------------ compiled sets


class CompiledFlags:
    """Validated flags in dependency order with their cohorts and group types: build once, evaluate often.

    `compile_flags(...)` returns one; pass it to `evaluate_flags` (or `evaluate_frame`) instead of the raw
    definitions so that each call skips parsing and validation (the sandbox's /decide does this).
    """

    def __init__(
        self,
        flags: list[CompiledFlag],
        cohorts: dict[str, CohortGroup] | None,
        group_type_mapping: Mapping[str, str] | None,
    ) -> None:
        keys = [f.key for f in flags]
        dupes = sorted({k for k in keys if keys.count(k) > 1})
        if dupes:
            raise FlagDefinitionError(dupes[0], "flag list", "the same flag key appears more than once")
        self.flags = flags
        self.order, self.alias = dependency_order(flags)
        self.cohorts = cohorts
        self.group_type_mapping = {str(k): str(v) for k, v in (group_type_mapping or {}).items()}
        self.by_key = {f.key: f for f in flags}
        #: whether dependency order is the given order (then results need no re-ordering)
        self.in_given_order = [f.key for f in self.order] == keys

    def __len__(self) -> int:
        return len(self.flags)

    def __repr__(self) -> str:
        return f"CompiledFlags({[f.key for f in self.flags]!r})"


def compile_flags(
    flags: Any,
    *,
    cohorts: Mapping[str, Any] | None = None,
    group_type_mapping: Mapping[str, str] | None = None,
) -> CompiledFlags:
    """Validate flag definitions once (a list of dicts/models, or a local-evaluation payload).

    Raises FlagDefinitionError naming the flag and filter of the first bad definition.
    """
    if isinstance(flags, CompiledFlags):
        if cohorts is None and group_type_mapping is None:
            return flags
        return CompiledFlags(
            flags.flags,
            compile_cohorts(cohorts) if cohorts is not None else flags.cohorts,
            group_type_mapping if group_type_mapping is not None else flags.group_type_mapping,
        )
    items, payload_mapping, payload_cohorts = split_flag_input(flags)
    compiled = [compile_flag(f) for f in items]
    cohort_src = cohorts if cohorts is not None else payload_cohorts
    return CompiledFlags(
        compiled,
        compile_cohorts(cohort_src) if cohort_src is not None else None,
        group_type_mapping if group_type_mapping is not None else payload_mapping,
    )


# ------------------------------------------------------------------------------------------ context


@dataclass(slots=True)
class _Context:
    server: bool
    now: dt.datetime
    cohorts: Mapping[str, CohortGroup]
    flag_values: Mapping[str, Any]
    alias: Mapping[str, str]
    #: {flag key: stored hash key} for flags with experience continuity (the sandbox's overrides table)
    hash_keys: Mapping[str, str] | None = None


def check_mode(mode: str) -> bool:
    """True for "server", False for "sdk"; anything else is a ValueError naming both choices."""
    if mode not in ("server", "sdk"):
        raise ValueError(
            f"mode must be 'server' (what /decide does) or 'sdk' (official SDK local "
            f"evaluation), got {mode!r}"
        )
    return mode == "server"


def _now(now: dt.datetime | None) -> dt.datetime:
    if now is None:
        return dt.datetime.now(dt.UTC)
    return now if now.tzinfo is not None else now.replace(tzinfo=dt.UTC)


def normalize_properties(props: Mapping[str, Any] | None, what: str) -> dict[str, Any]:
    """Plain values for a property dict; absent markers (None, NaN, NA, NaT) are dropped."""
    out: dict[str, Any] = {}
    if not props:
        return out
    if not isinstance(props, Mapping):
        raise TypeError(f"{what} must be a dict of property name -> value, got {type(props).__name__}")
    for k, v in props.items():
        try:
            nv = normalize(v)
        except BadValueError as exc:
            raise ValueError(f"{what}[{k!r}]: {exc}") from None
        if nv is not MISSING:
            out[k] = nv
    return out


def group_key_text(value: Any) -> str | None:
    """A group key as the text it is hashed with, None when absent."""
    v = normalize(value)
    if v is MISSING:
        return None
    if isinstance(v, (dict, list)):
        raise ValueError(f"a group key must be a string or number, got {type(v).__name__}")
    return str(v)


# ------------------------------------------------------------------------------------------ matching


def filter_code(spec: FilterSpec, props: Mapping[str, Any], ctx: _Context) -> int:
    """Outcome code of one filter against one property dict."""
    if spec.kind == "property":
        m = spec.matcher
        assert m is not None
        v = props.get(spec.key, MISSING)
        if v is MISSING:
            return m.missing(ctx.server)
        if not ctx.server and not m.sdk_supported:
            return INCONCLUSIVE
        code = m.match(v, ctx.server, ctx.now)
        return FALSE if code == INCONCLUSIVE and ctx.server else code
    if spec.kind == "cohort":
        group = ctx.cohorts.get(spec.cohort_id or "")
        if group is None:
            return SERVER_ONLY
        code = group_code(group, props, ctx)
        if spec.cohort_negate and code in (TRUE, FALSE):
            code = TRUE - code
        return code
    target = ctx.alias.get(spec.key, spec.key)
    if target not in ctx.flag_values:
        return INCONCLUSIVE
    return dependency_code(spec.expected, ctx.flag_values[target])


def dependency_code(expected: Any, actual: Any) -> int:
    """Whether a dependency's value satisfies flag_evaluates_to: true = any variant or True, a string = that
    variant, false = False. An unknown (None) value is inconclusive."""
    if actual is None:
        return INCONCLUSIVE
    if isinstance(actual, str) and actual:
        if isinstance(expected, bool):
            return TRUE if expected else FALSE
        return TRUE if actual == expected else FALSE
    if isinstance(actual, bool) and isinstance(expected, bool):
        return TRUE if actual == expected else FALSE
    return FALSE


def group_code(group: CohortGroup, props: Mapping[str, Any], ctx: _Context) -> int:
    """Outcome of a cohort property group (AND/OR, nested, leaf negation)."""
    if not group.children:
        return TRUE
    decisive = None
    inconclusive = False
    for child in group.children:
        if isinstance(child, CohortGroup):
            code = group_code(child, props, ctx)
        else:
            code = filter_code(child, props, ctx)
            if child.negation and code in (TRUE, FALSE):
                code = TRUE - code
        if code == SERVER_ONLY:
            return SERVER_ONLY
        if code == INCONCLUSIVE:
            inconclusive = True
        elif (code == TRUE) != group.is_and:
            decisive = code
    if decisive is not None:
        return decisive
    if inconclusive:
        return INCONCLUSIVE
    return TRUE if group.is_and else FALSE


def condition_code(cond: ConditionSpec, props: Mapping[str, Any], ctx: _Context) -> int:
    """AND of a condition's filters: any False wins; else the first undecidable filter decides its kind."""
    first_open = 0
    for spec in cond.filters:
        code = filter_code(spec, props, ctx)
        if code == FALSE:
            return FALSE
        if code != TRUE and not first_open:
            first_open = code
    return first_open or TRUE


def _explain(cond: ConditionSpec, props: Mapping[str, Any], ctx: _Context) -> str:
    for spec in cond.filters:
        code = filter_code(spec, props, ctx)
        if code in (INCONCLUSIVE, SERVER_ONLY):
            return describe_open_filter(spec, props, ctx)
    return "a condition could not be decided"


def describe_open_filter(spec: FilterSpec, props: Mapping[str, Any], ctx: _Context) -> str:
    """A sentence saying why one filter could not be decided locally."""
    if spec.kind == "cohort":
        if spec.cohort_id not in ctx.cohorts:
            return (
                f"cohort {spec.cohort_id} is not among the supplied cohorts (static cohorts need the server)"
            )
        return f"cohort {spec.cohort_id} could not be decided with the given properties"
    if spec.kind == "flag":
        return f"flag dependency {spec.key!r} has no known value (evaluate it first or pass flag_values)"
    if spec.key not in props:
        return f"property {spec.key!r} is not set"
    assert spec.matcher is not None
    if not spec.matcher.sdk_supported:
        return f"operator {spec.matcher.operator!r} is not evaluated by the official SDK locally"
    return (
        f"property {spec.key!r} value {props[spec.key]!r} cannot be compared with {spec.matcher.operator!r}"
    )


# ------------------------------------------------------------------------------------------ one flag


def _result(
    flag: CompiledFlag, value: bool | str | None, reason: str, index: int | None, cause: str | None = None
) -> FlagResult:
    if cause is None:
        # Without a cause every field follows from (flag, value, reason, index): share one immutable result.
        memo = flag.result_memo
        key = (value, reason, index)
        hit = memo.get(key)
        if hit is None:
            hit = FlagResult(
                flag.key, value, flag.payload_for(value), reason, index, None, None, flag.id, flag.version
            )
            if len(memo) < 256:
                memo[key] = hit
        return hit
    return FlagResult(
        flag.key, value, flag.payload_for(value), reason, index, None, cause, flag.id, flag.version
    )


def _matched_value(flag: CompiledFlag, override: str | None, bucket: str) -> bool | str:
    if override is not None:
        return override
    if flag.variants:
        variant = flag.variant_for(hash_fraction(flag.key, bucket, "variant"))
        if variant is not None:
            return variant
    return True


def evaluate_compiled(
    flag: CompiledFlag,
    distinct_id: str,
    person: Mapping[str, Any],
    groups: Mapping[str, str],
    group_props: Mapping[str, Mapping[str, Any]],
    mapping: Mapping[str, str],
    ctx: _Context,
) -> FlagResult:
    """Evaluate one compiled flag; inputs are already normalised (see evaluate_flag for the public form)."""
    if not flag.active:
        return _result(flag, False, "flag_disabled", None)
    server = ctx.server
    hash_key = ctx.hash_keys.get(flag.key) if flag.continuity and ctx.hash_keys else None
    if flag.continuity and not server and hash_key is None:
        return _result(
            flag,
            None,
            "inconclusive",
            None,
            "experience continuity needs the hash key the server stores per person",
        )
    if flag.aggregation is not None:
        name = mapping.get(str(flag.aggregation))
        if not name:
            if server:
                return _result(flag, False, "no_group_type", None)
            return _result(
                flag,
                None,
                "inconclusive",
                None,
                f"group type index {flag.aggregation} is not in group_type_mapping",
            )
        bucket = groups.get(name)
        if bucket is None:
            return _result(flag, False, "no_group_type", None)
        if name in group_props:
            props: Mapping[str, Any] = group_props[name]
        elif server:
            props = {}
        else:
            return _result(flag, None, "inconclusive", None, f"no group properties were given for {name!r}")
    else:
        props = person
        bucket = distinct_id if hash_key is None else hash_key
        if flag.device_bucketing:
            device = person.get("$device_id")
            if device is not None:
                bucket = str(device)
            elif not server:
                return _result(
                    flag, None, "inconclusive", None, "the flag buckets by $device_id, which is not set"
                )

    # Early access (super condition) first, then holdouts, then the release conditions.
    if server:
        sc = flag.super_condition
        if sc is not None and any(f.kind == "property" and f.key in props for f in sc.filters):
            code = condition_code(sc, props, ctx)
            matched = code == TRUE and (
                sc.rollout is None or hash_fraction(flag.key, bucket) <= sc.rollout / 100
            )
            value: bool | str = _matched_value(flag, sc.variant, bucket) if matched else False
            return _result(flag, value, "super_condition_value", 0)
    elif flag.feature_enrollment:
        if flag.aggregation is not None:
            return _result(
                flag,
                None,
                "inconclusive",
                None,
                "feature enrollment on a group flag is not evaluated by the official SDK locally",
            )
        enrolled = props.get(f"$feature_enrollment/{flag.key}", MISSING)
        if enrolled is MISSING:
            return _result(
                flag, None, "inconclusive", None, f"property '$feature_enrollment/{flag.key}' is not set"
            )
        return _result(flag, enrolled is True or enrolled == "true", "super_condition_value", 0)

    if flag.holdout is not None:
        hv, pct = flag.holdout
        if pct == 100.0 or holdout_fraction(bucket) <= pct / 100:
            return _result(flag, hv, "holdout_condition_value", None)
    if server and flag.holdout_group is not None:
        pct_hg, override = flag.holdout_group
        if pct_hg is None or holdout_fraction(bucket) <= pct_hg / 100:
            value = (
                override
                or (flag.variant_for(hash_fraction(flag.key, bucket, "variant")) if flag.variants else None)
                or "holdout"
            )
            return _result(flag, value, "holdout_condition_value", None)

    best_reason, best_index = "no_condition_match", None
    open_cause: str | None = None
    for cond in flag.server_conditions if server else flag.conditions:
        cprops, cbucket = props, bucket
        if cond.has_own_aggregation and cond.aggregation is not None:
            name = mapping.get(str(cond.aggregation))
            if not name or name not in groups:
                if best_reason != "no_group_type":
                    best_reason, best_index = "no_group_type", cond.index
                continue
            cbucket = groups[name]
            if name in group_props:
                cprops = group_props[name]
            elif server:
                cprops = {}
            else:
                open_cause = open_cause or f"no group properties were given for {name!r}"
                continue
        code = condition_code(cond, cprops, ctx)
        if code == SERVER_ONLY:
            return _result(flag, None, "inconclusive", None, _explain(cond, cprops, ctx))
        if code == INCONCLUSIVE:
            open_cause = open_cause or _explain(cond, cprops, ctx)
            continue
        if code == FALSE:
            continue
        if cond.rollout is not None and hash_fraction(flag.key, cbucket) > cond.rollout / 100:
            if best_reason == "no_condition_match":
                best_reason, best_index = "out_of_rollout_bound", cond.index
            if flag.early_exit:
                break
            continue
        return _result(flag, _matched_value(flag, cond.variant, cbucket), "condition_match", cond.index)
    if open_cause is not None:
        return _result(flag, None, "inconclusive", None, open_cause)
    return _result(flag, False, best_reason, best_index)


# ------------------------------------------------------------------------------------------ public API


def _prepare_groups(
    groups: Mapping[str, Any] | None,
    group_properties: Mapping[str, Any] | None,
) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
    gkeys: dict[str, str] = {}
    for name, key in (groups or {}).items():
        text = group_key_text(key)
        if text is not None:
            gkeys[str(name)] = text
    gprops = {
        str(name): normalize_properties(p, f"group_properties[{name!r}]")
        for name, p in (group_properties or {}).items()
    }
    return gkeys, gprops


def evaluate_flag(
    flag: Any,
    distinct_id: Any,
    *,
    person_properties: Mapping[str, Any] | None = None,
    groups: Mapping[str, Any] | None = None,
    group_properties: Mapping[str, Mapping[str, Any]] | None = None,
    group_type_mapping: Mapping[str, str] | None = None,
    cohorts: Mapping[str, Any] | None = None,
    flag_values: Mapping[str, Any] | None = None,
    mode: Mode = "server",
    now: dt.datetime | None = None,
    hash_key_overrides: Mapping[str, str] | None = None,
) -> FlagResult:
    """Evaluate one flag for one distinct id, the way /decide does (mode="server") or the official SDK's
    local evaluation does (mode="sdk": an undecidable flag gives value None, reason "inconclusive").

    Flag dependencies read `flag_values` ({flag key: value}); use evaluate_flags to compute them.
    `hash_key_overrides` ({flag key: hash key}) is the identifier a flag with `ensure_experience_continuity`
    is bucketed by (PostHog stores it when a request carries `$anon_distinct_id`); other flags ignore it.
    """
    server = check_mode(mode)
    compiled = flag if isinstance(flag, CompiledFlag) else compile_flag(flag)
    did = _distinct_id_text(distinct_id)
    person = normalize_properties(person_properties, "person_properties")
    if server:
        person.setdefault("distinct_id", did)
    gkeys, gprops = _prepare_groups(groups, group_properties)
    values = dict(flag_values or {})
    ctx = _Context(
        server,
        _now(now),
        compile_cohorts(cohorts) if cohorts else {},
        values,
        {k: k for k in values},
        _hash_keys(hash_key_overrides),
    )
    mapping = {str(k): str(v) for k, v in (group_type_mapping or {}).items()}
    return evaluate_compiled(compiled, did, person, gkeys, gprops, mapping, ctx)


def evaluate_flags(
    flags: Any,
    distinct_id: Any,
    *,
    person_properties: Mapping[str, Any] | None = None,
    groups: Mapping[str, Any] | None = None,
    group_properties: Mapping[str, Mapping[str, Any]] | None = None,
    group_type_mapping: Mapping[str, str] | None = None,
    cohorts: Mapping[str, Any] | None = None,
    flag_values: Mapping[str, Any] | None = None,
    mode: Mode = "server",
    now: dt.datetime | None = None,
    hash_key_overrides: Mapping[str, str] | None = None,
) -> dict[str, FlagResult]:
    """Evaluate every flag for one distinct id, dependencies first; returns {flag key: FlagResult} in the
    order the flags were given. `flags` may be a CompiledFlags from compile_flags (fast path).
    `hash_key_overrides` is as in evaluate_flag (experience continuity)."""
    server = check_mode(mode)
    compiled = flags if isinstance(flags, CompiledFlags) else compile_flags(flags)
    did = _distinct_id_text(distinct_id)
    person = normalize_properties(person_properties, "person_properties")
    if server:
        person.setdefault("distinct_id", did)
    gkeys, gprops = _prepare_groups(groups, group_properties)
    cohort_set = compile_cohorts(cohorts) if cohorts is not None else compiled.cohorts or {}
    mapping = (
        {str(k): str(v) for k, v in group_type_mapping.items()}
        if group_type_mapping is not None
        else compiled.group_type_mapping
    )
    values: dict[str, Any] = dict(flag_values or {})
    alias: Mapping[str, str] = compiled.alias
    if values:
        alias = dict(alias)
        for k in values:
            alias.setdefault(k, k)
    ctx = _Context(server, _now(now), cohort_set, values, alias, _hash_keys(hash_key_overrides))
    results: dict[str, FlagResult] = {}
    for flag in compiled.order:
        res = evaluate_compiled(flag, did, person, gkeys, gprops, mapping, ctx)
        results[flag.key] = res
        values[flag.key] = res.value
    if compiled.in_given_order:
        return results
    return {f.key: results[f.key] for f in compiled.flags}


def _hash_keys(overrides: Mapping[str, str] | None) -> dict[str, str] | None:
    """The hash-key overrides as {flag key: non-empty text}; a bad entry is a ValueError naming it."""
    if not overrides:
        return None
    if not isinstance(overrides, Mapping):
        raise TypeError(
            f"hash_key_overrides must be a dict of flag key -> hash key, got {type(overrides).__name__}"
        )
    out: dict[str, str] = {}
    for key, value in overrides.items():
        v = normalize(value)
        if v is MISSING or isinstance(v, (dict, list, bool)) or v == "":
            raise ValueError(
                f"hash_key_overrides[{key!r}] must be a non-empty string (the stored hash key), got {value!r}"
            )
        out[str(key)] = str(v)
    return out


def _distinct_id_text(distinct_id: Any) -> str:
    v = normalize(distinct_id)
    if v is MISSING or isinstance(v, (dict, list)) or v == "":
        raise ValueError(f"distinct_id must be a non-empty string or number, got {distinct_id!r}")
    return str(v)
