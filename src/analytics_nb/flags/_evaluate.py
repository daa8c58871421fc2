"""Scalar evaluation: one flag (or a set of flags) for one distinct id and one set of properties."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from analytics_nb.flags._definitions import (
    CohortGroup,
    CompiledFlag,
    ConditionSpec,
    FilterSpec,
    compile_cohorts,
    compile_flag,
    dependency_order,
    error_flag,
)
from analytics_nb.flags._errors import FlagDefinitionError
from analytics_nb.flags._hashing import hash_fraction, holdout_fraction
from analytics_nb.flags._operators import ABORT, FALSE, INCONCLUSIVE, SERVER_ONLY, TRUE
from analytics_nb.flags._reader import read_definitions
from analytics_nb.flags._service_rules import team_zone
from analytics_nb.flags._values import (
    MISSING,
    BadValueError,
    Opaque,
    holds_sdk_opaque,
    normalize,
    sdk_opaque,
    service_text,
)

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

#: flag_match_reason.rs `FeatureFlagMatchReason::score`: a later condition's reason replaces the kept one
#: when it scores at least as high.
REASON_SCORE: dict[str, int] = {
    "super_condition_value": 6,
    "holdout_condition_value": 5,
    "condition_match": 4,
    "out_of_rollout_bound": 3,
    "no_condition_match": 2,
    "no_group_type": 1,
    "flag_disabled": 0,
}

#: flag_matching_utils.rs `INITIAL_PROPERTY_MAP`: person properties whose `$initial_` twin the service fills
#: in when it is missing (`populate_missing_initial_properties`).
INITIAL_PROPERTIES: dict[str, str] = {
    name: f"$initial_{name.removeprefix('$')}"
    for name in (
        "$app_build", "$app_name", "$app_namespace", "$app_version", "$browser", "$browser_version",
        "$device_type", "$current_url", "$pathname", "$os", "$os_version", "$referring_domain",
        "$referrer", "$screen_height", "$screen_width", "$viewport_height", "$viewport_width",
        "$raw_user_agent", "utm_source", "utm_medium", "utm_campaign", "utm_content", "utm_term",
        "gclid", "gad_source", "gclsrc", "dclid", "gbraid", "wbraid", "fbclid", "msclkid", "twclid",
        "li_fat_id", "mc_cid", "igshid", "ttclid", "rdt_cid", "epik", "qclid", "sccid", "irclid", "_kx",
    )
}  # fmt: skip


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
        return self._fields() == other._fields()

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
    def error(self) -> str | None:
        """Why the flag's definition could not be evaluated (names the flag, the filter and the fix), or
        None. Such a result has value False in server mode (the service answers it as failed) and None in
        sdk mode; every other flag is still computed."""
        return self.inconclusive_cause if self.reason == "error" else None

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
    if reason == "error":
        return f"Error: {cause}"
    if reason == "needs_server":
        return f"Needs the server: {cause}"
    return REASON_DESCRIPTIONS.get(reason, reason)


# ------------------------------------------------------------------------------------------ compiled sets


class CompiledFlags:
    """Validated flags in dependency order with their cohorts and group types: build once, evaluate often.

    `compile_flags(...)` returns one; pass it to `evaluate_flags` (or `evaluate_frame`) instead of the raw
    definitions so that each call skips parsing and validation (the sandbox's /decide does this).
    `errors` maps the key of each flag that cannot be evaluated to why; those flags answer with reason
    "error", the others are unaffected.
    """

    def __init__(
        self,
        flags: list[CompiledFlag],
        cohorts: dict[str, CohortGroup] | None,
        group_type_mapping: Mapping[str, str] | None,
        *,
        strict: bool = True,
        cohort_errors: Mapping[str, str] | None = None,
        property_matching_version: int = 1,
        timezone: str = "UTC",
        skipped: list[str] | None = None,
    ) -> None:
        self.skipped: list[str] = list(skipped or [])
        seen: dict[str, CompiledFlag] = {}
        for f in flags:
            if f.key in seen:
                if strict:
                    raise FlagDefinitionError(f.key, "flag list", "the same flag key appears more than once")
                self.skipped.append(
                    f"flag {f.key!r}: the same flag key appears more than once; the first definition is used"
                )
                continue
            seen[f.key] = f
        flags = list(seen.values())
        if cohort_errors:
            flags = [_with_cohort_error(f, cohort_errors) for f in flags]
        cycles: dict[str, str] | None = None if strict else {}
        order, alias = dependency_order(flags, cycles=cycles)
        if cycles:
            flags = [error_flag(f.definition, cycles[f.key]) if f.key in cycles else f for f in flags]
            order, alias = dependency_order(flags)
        self.flags = flags
        self.order, self.alias = order, alias
        self.cohorts = cohorts
        self.cohort_errors = dict(cohort_errors or {})
        self.group_type_mapping = {str(k): str(v) for k, v in (group_type_mapping or {}).items()}
        self.by_key = {f.key: f for f in flags}
        self.property_matching_version = property_matching_version
        self.timezone = timezone
        self.strict = strict
        #: whether dependency order is the given order (then results need no re-ordering)
        self.in_given_order = [f.key for f in self.order] == [f.key for f in flags]

    @property
    def errors(self) -> dict[str, str]:
        """{flag key: why it cannot be evaluated} for every active flag answered with reason "error" (an
        inactive flag is never evaluated, so its definition cannot fail)."""
        return {f.key: f.error for f in self.flags if f.error is not None and f.active}

    def __len__(self) -> int:
        return len(self.flags)

    def __repr__(self) -> str:
        return f"CompiledFlags({[f.key for f in self.flags]!r})"


def _with_cohort_error(flag: CompiledFlag, cohort_errors: Mapping[str, str]) -> CompiledFlag:
    """The flag, or an error stand-in when one of its filters uses a cohort that could not be compiled."""
    for cond in flag.conditions:
        for spec in cond.filters:
            if spec.kind == "cohort" and spec.cohort_id in cohort_errors:
                return error_flag(
                    flag.definition,
                    f"flag {flag.key!r}, {spec.label}: uses cohort {spec.cohort_id}, which cannot be "
                    f"evaluated ({cohort_errors[spec.cohort_id or '']})",
                )
    return flag


def _sdk_enrollment(raw: Any) -> bool | None:
    """posthog 7.91.1's `_match_feature_enrollment` returns `enrollment is True or enrollment == "true"` as
    the flag's value: for a cell outside JSON a numpy bool (the same answer as a bool) or something that is
    no answer at all (`pd.NA`, an array of comparisons): None (found by the widened differential fuzz)."""
    try:
        answer = raw is True or raw == "true"
    except Exception:  # a cell whose __eq__ raises: the SDK's client reads the exception as "ask the server"
        return None
    return bool(answer) if isinstance(answer, (bool, np.bool_)) else None


def _matching_version(value: Any) -> int:
    if value is None:
        return 1
    if value in (1, 2) and not isinstance(value, bool):
        return int(value)
    raise ValueError(
        f"property_matching_version must be 1 or 2 (as in the /flags/definitions payload), got {value!r}"
    )


def _payload_matching_version(value: Any) -> int:
    """`property_matching_version` as a definitions payload carries it: 2 when it equals the integer 2,
    else 1 (None, 0, 1, 3, the text "2", anything else). posthog 7.91.1 reads it so
    (`Client._update_flag_state`: `data.get("property_matching_version", 1)`, then
    `_match_exact_property`: `property_matching_version != 2` means version 1); server mode reads the
    payload the same way (the service's own matcher reads the team setting, which only PostHog staff
    change, and has no other version)."""
    try:
        return 2 if value == 2 and not isinstance(value, str) else 1
    except Exception:  # an object whose == fails: not 2
        return 1


def compile_flags(
    flags: Any,
    *,
    cohorts: Mapping[str, Any] | None = None,
    group_type_mapping: Mapping[str, str] | None = None,
    strict: bool = False,
    property_matching_version: int | None = None,
    timezone: str | None = None,
) -> CompiledFlags:
    """Validate flag definitions once (a list of dicts/models, or a local-evaluation payload).

    One bad definition affects only its own flag: it is kept with an error (see `CompiledFlags.errors`)
    and answers with reason "error"; every other flag evaluates. `strict=True` raises FlagDefinitionError
    naming the flag and filter of the first bad definition instead (also for filter values the service
    or the SDK cannot use). `property_matching_version` (1 or 2) defaults to the payload's, else 1;
    `timezone` is the project's (IANA name, default "UTC"): server mode reads naive dates and relative
    dates in it.

    Args:
        flags: A list of flag dicts or models, or a local-evaluation payload (any shape `read_definitions`
            reads).
        cohorts: ``{cohort id: cohort filters}``. None: the payload's.
        group_type_mapping: ``{group type index: name}``. None: the payload's.
        strict: Raise on the first bad definition instead of keeping it with an error.
        property_matching_version: 1 (legacy) or 2 (explicit ``exact`` / ``is_not``). None: the payload's,
            else 1.
        timezone: The project's IANA time zone. None: ``"UTC"``.

    Returns:
        `CompiledFlags`, reusable across calls.

    Raises:
        FlagDefinitionError: ``strict=True`` and a definition is bad (naming the flag and the filter).
    """
    if timezone is not None:
        team_zone(timezone)  # validate early: a ValueError naming the fix
    if isinstance(flags, CompiledFlags):
        return _recompile(
            flags,
            cohorts=cohorts,
            group_type_mapping=group_type_mapping,
            strict=strict,
            property_matching_version=property_matching_version,
            timezone=timezone,
        )
    # the one reader of every definitions shape (flags._reader): a shape it cannot read raises, always
    defs = read_definitions(flags)
    version = (
        _matching_version(property_matching_version)
        if property_matching_version is not None
        else _payload_matching_version(defs.property_matching_version)
    )
    compiled: list[CompiledFlag] = []
    for raw in defs.flags:
        try:
            compiled.append(compile_flag(raw, strict=strict, matching_version=version))
        except FlagDefinitionError as exc:
            if strict:
                raise
            compiled.append(error_flag(raw, str(exc)))
    payload_mapping = defs.group_type_mapping or None
    cohort_src = cohorts if cohorts is not None else (defs.cohorts or None)
    cohort_errors: dict[str, str] | None = None if strict else {}
    return CompiledFlags(
        compiled,
        compile_cohorts(cohort_src, errors=cohort_errors, matching_version=version)
        if cohort_src is not None
        else None,
        group_type_mapping if group_type_mapping is not None else payload_mapping,
        strict=strict,
        cohort_errors=cohort_errors,
        property_matching_version=version,
        timezone=timezone or "UTC",
    )


def _recompile(
    flags: CompiledFlags,
    *,
    cohorts: Mapping[str, Any] | None,
    group_type_mapping: Mapping[str, str] | None,
    strict: bool,
    property_matching_version: int | None,
    timezone: str | None,
) -> CompiledFlags:
    """Already compiled flags with other options: the same object when nothing changes; the same flags
    with new cohorts, group types or time zone (they do not change the compiled flags); compiled again
    from their definitions for another property matching version."""
    same_version = property_matching_version in (None, flags.property_matching_version)
    if cohorts is None and group_type_mapping is None and same_version and timezone in (None, flags.timezone):
        return flags
    if not same_version:
        return compile_flags(
            [f.definition for f in flags.flags],
            cohorts=cohorts,
            group_type_mapping=group_type_mapping
            if group_type_mapping is not None
            else flags.group_type_mapping,
            strict=strict,
            property_matching_version=property_matching_version,
            timezone=timezone or flags.timezone,
        )
    new_errors: dict[str, str] | None = None if strict else {}
    return CompiledFlags(
        flags.flags,
        compile_cohorts(cohorts, errors=new_errors, matching_version=flags.property_matching_version)
        if cohorts is not None
        else flags.cohorts,
        group_type_mapping if group_type_mapping is not None else flags.group_type_mapping,
        strict=strict,
        cohort_errors=new_errors if cohorts is not None else flags.cohort_errors,
        property_matching_version=flags.property_matching_version,
        timezone=timezone or flags.timezone,
    )


# ------------------------------------------------------------------------------------------ context


@dataclass(slots=True)
class _Context:
    server: bool
    #: the evaluation instant; in server mode expressed in the team's time zone
    now: dt.datetime
    cohorts: Mapping[str, CohortGroup]
    flag_values: Mapping[str, Any]
    alias: Mapping[str, str]
    #: {flag key: stored hash key} for flags with experience continuity (the sandbox's overrides table)
    hash_keys: Mapping[str, str] | None = None
    #: server mode: person properties, and group properties by group type index, for routing filters
    #: by their `type` (flag_matching.rs `PropertyContext::resolve_for_filter`)
    person: Mapping[str, Any] | None = None
    group_by_index: Mapping[int, Mapping[str, Any]] | None = None
    #: the request's device id (bucketing_identifier "device_id")
    device_id: str | None = None
    #: server mode: whether the condition being matched aggregates by a group
    cond_group: bool = False


def check_mode(mode: str) -> bool:
    """True for "server", False for "sdk"; anything else is a ValueError naming both choices."""
    if mode not in ("server", "sdk"):
        raise ValueError(
            f"mode must be 'server' (what /decide does) or 'sdk' (official SDK local "
            f"evaluation), got {mode!r}"
        )
    return mode == "server"


def _now(now: dt.datetime | None, server: bool = False, timezone: str = "UTC") -> dt.datetime:
    """The evaluation instant (aware); server mode expresses it in the team's zone, so naive dates and
    relative dates are read on the team's wall clock."""
    if now is None:
        now = dt.datetime.now(dt.UTC)
    elif now.tzinfo is None:
        now = now.replace(tzinfo=dt.UTC)
    if server and timezone != "UTC":
        return now.astimezone(team_zone(timezone))
    return now


def normalize_properties(props: Mapping[str, Any] | None, what: str, server: bool = True) -> dict[str, Any]:
    """Plain values for a property dict. `None` is JSON null (present: the service and the SDK both keep
    it); a float NaN is a value that no comparison matches (as the SDK reads it).

    Values outside JSON never fail the call: a filter that reads one answers as its reference would
    (`Opaque`). In sdk mode every value the SDK does not read as JSON (numpy integers and booleans,
    `pd.NA`, `NaT`, bytes, sets, objects) is kept as given; in server mode values are read as the JSON
    the client would send (numpy scalars as numbers, `pd.NA` / `NaT` as null, sets as lists), and what
    cannot be sent (bytes, objects) is kept opaque."""
    out: dict[str, Any] = {}
    if not props:
        return out
    if not isinstance(props, Mapping):
        raise TypeError(f"{what} must be a dict of property name -> value, got {type(props).__name__}")
    for k, v in props.items():
        if not server and (sdk_opaque(v) or holds_sdk_opaque(v)):
            out[k] = Opaque(v)
            continue
        if server and (v is pd.NA or v is pd.NaT):
            out[k] = None  # the client sends them as JSON null (wire.cells.json_default)
            continue
        try:
            nv = normalize(v, none_is_null=True, nan_is_value=True)
        except BadValueError:
            nv = Opaque(v)
        if nv is not MISSING:
            out[k] = nv
    return out


def fill_initial_properties(person: dict[str, Any]) -> None:
    """Server mode: copy `$browser` to a missing `$initial_browser` (and the other pairs the service fills,
    flag_matching_utils.rs `populate_missing_initial_properties`)."""
    for name, initial in INITIAL_PROPERTIES.items():
        if name in person and initial not in person:
            person[initial] = person[name]


def group_key_text(value: Any) -> str | None:
    """A group key as the text the SDK hashes (``str(key)``), None when absent."""
    v = normalize(value)
    if v is MISSING:
        return None
    if isinstance(v, (dict, list)):
        raise ValueError(f"a group key must be a string or number, got {type(v).__name__}")
    return str(v)


def service_group_key(value: Any) -> str | None:
    """A group key as the service uses it: a non-empty string, or a number (as serde_json prints it);
    anything else (empty, boolean, null) means "no group key" and its conditions are skipped
    (flag_matching.rs `get_match`, `hashed_identifier`)."""
    v = normalize(value)
    if isinstance(v, bool) or v is MISSING or v is None:
        return None
    if isinstance(v, str):
        return v or None
    if isinstance(v, (int, float)):
        return service_text(v)
    return None


# ------------------------------------------------------------------------------------------ matching


def filter_code(spec: FilterSpec, props: Mapping[str, Any], ctx: _Context) -> int:
    """Outcome code of one filter against one property dict (server mode: the filter's `type` picks the
    dict, see _Context)."""
    if spec.kind == "property":
        m = spec.matcher
        assert m is not None
        if ctx.server and ctx.person is not None:
            props = _routed(spec, props, ctx)
        v = props.get(spec.key, MISSING)
        if v is MISSING:
            return m.missing(ctx.server)
        if not ctx.server and not m.sdk_supported:
            return INCONCLUSIVE
        code = m.match(v, ctx.server, ctx.now)
        # server mode: unusable values do not match; only a value the client could not send is unknown
        return FALSE if code == INCONCLUSIVE and ctx.server and type(v) is not Opaque else code
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


def _routed(spec: FilterSpec, props: Mapping[str, Any], ctx: _Context) -> Mapping[str, Any]:
    """`resolve_for_filter`: person filters read the person, group filters the group of their own
    `group_type_index` (else the condition's); `props` is the condition's own source."""
    if spec.route == "person":
        return ctx.person if ctx.person is not None else props
    if spec.group_index is not None and ctx.group_by_index is not None:
        return ctx.group_by_index.get(spec.group_index, _EMPTY)
    return props if ctx.cond_group else _EMPTY


_EMPTY: Mapping[str, Any] = {}


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
        if code in (SERVER_ONLY, ABORT):
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
        if code == ABORT:  # the SDK raised here: the flag asks the server, or an earlier open filter decides
            return first_open or SERVER_ONLY
        if code != TRUE and not first_open:
            first_open = code
    return first_open or TRUE


def _explain(cond: ConditionSpec, props: Mapping[str, Any], ctx: _Context) -> str:
    for spec in cond.filters:
        code = filter_code(spec, props, ctx)
        if code in (INCONCLUSIVE, SERVER_ONLY, ABORT):
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
    value = props[spec.key]
    if type(value) is Opaque:
        kind = type(value.raw).__name__
        if ctx.server:
            return f"property {spec.key!r} holds a {kind} value, which cannot be sent to the service as JSON"
        operator = spec.matcher.operator
        return f"property {spec.key!r} holds a {kind} value, which the SDK cannot compare ({operator!r})"
    if ctx.server and spec.matcher.server_unknown is not None:
        return f"property {spec.key!r}: {spec.matcher.server_unknown}"
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
    """Evaluate one compiled flag; inputs are already normalised (see evaluate_flag for the public form).
    Server mode is `_evaluate_server`; sdk mode follows posthog 7.91.1's client: who is bucketed and with
    which properties (`_sdk_subject`), early access and holdouts (`_sdk_early`), then the conditions."""
    if not flag.active:
        return _result(flag, False, "flag_disabled", None)
    if flag.error is not None and ctx.server:
        return _result(flag, False, "error", None, flag.error)
    if flag.needs_server is not None:
        return _result(flag, None, "needs_server", None, flag.needs_server)
    if ctx.server:
        return _evaluate_server(flag, distinct_id, person, groups, group_props, mapping, ctx)
    subject = _sdk_subject(flag, distinct_id, person, groups, group_props, mapping, ctx)
    if isinstance(subject, FlagResult):
        return subject
    props, bucket = subject
    early = _sdk_early(flag, props, bucket)
    if early is not None:
        return early
    return _sdk_conditions(flag, props, bucket, groups, group_props, mapping, ctx)


def _inconclusive(flag: CompiledFlag, cause: str) -> FlagResult:
    return _result(flag, None, "inconclusive", None, cause)


def _sdk_subject(
    flag: CompiledFlag,
    distinct_id: str,
    person: Mapping[str, Any],
    groups: Mapping[str, str],
    group_props: Mapping[str, Mapping[str, Any]],
    mapping: Mapping[str, str],
    ctx: _Context,
) -> tuple[Mapping[str, Any], str] | FlagResult:
    """sdk mode: the properties and the bucketing value of the flag's subject (a person, or the group the
    flag aggregates by), or the result when the SDK cannot evaluate locally."""
    hash_key = ctx.hash_keys.get(flag.key) if flag.continuity and ctx.hash_keys else None
    if flag.continuity and hash_key is None:
        return _inconclusive(flag, "experience continuity needs the hash key the server stores per person")
    if flag.aggregation is not None:
        name = mapping.get(str(flag.aggregation))
        if not name:
            return _inconclusive(flag, f"group type index {flag.aggregation} is not in group_type_mapping")
        group_key = groups.get(name)
        if group_key is None:
            return _result(flag, False, "no_group_type", None)
        if name not in group_props:
            return _inconclusive(flag, f"no group properties were given for {name!r}")
        return group_props[name], group_key
    bucket = distinct_id if hash_key is None else hash_key
    if flag.device_bucketing:
        device = ctx.device_id or person.get("$device_id")
        if not device:
            return _inconclusive(flag, "the flag buckets by $device_id, which is not set")
        bucket = str(device)
    return person, bucket


def _sdk_early(flag: CompiledFlag, props: Mapping[str, Any], bucket: str) -> FlagResult | None:
    """sdk mode: a definition the SDK cannot read, early access (`feature_enrollment`) and holdouts, which
    come before the release conditions; None when the conditions decide."""
    if flag.error is not None and not flag.sdk_evaluates:
        # the SDK's client checks (active, continuity, group given) come first; then the definition fails
        return _result(flag, None, "error", None, flag.error)
    if flag.feature_enrollment:
        if flag.aggregation is not None:
            return _inconclusive(
                flag, "feature enrollment on a group flag is not evaluated by the official SDK locally"
            )
        enrolled = props.get(f"$feature_enrollment/{flag.key}", MISSING)
        if enrolled is MISSING:
            return _inconclusive(flag, f"property '$feature_enrollment/{flag.key}' is not set")
        if type(enrolled) is not Opaque:
            return _result(flag, enrolled is True or enrolled == "true", "super_condition_value", 0)
        answer = _sdk_enrollment(enrolled.raw)
        if answer is None:
            return _inconclusive(
                flag,
                f"property '$feature_enrollment/{flag.key}' holds a {type(enrolled.raw).__name__} value, "
                "whose comparison with 'true' the SDK returns as the flag's value",
            )
        return _result(flag, answer, "super_condition_value", 0)
    if flag.holdout is not None:
        hv, pct = flag.holdout
        if pct == 100.0 or holdout_fraction(bucket) <= pct / 100:
            return _result(flag, hv, "holdout_condition_value", None)
    return None


def _sdk_conditions(
    flag: CompiledFlag,
    props: Mapping[str, Any],
    bucket: str,
    groups: Mapping[str, str],
    group_props: Mapping[str, Mapping[str, Any]],
    mapping: Mapping[str, str],
    ctx: _Context,
) -> FlagResult:
    """sdk mode: the release conditions in order (a condition may aggregate by its own group); the first
    matched one inside its rollout answers, an undecidable one makes the answer inconclusive unless a later
    one matches, an unknown cohort stops the flag."""
    best_reason, best_index = "no_condition_match", None
    open_cause: str | None = None
    for cond in flag.conditions:
        cprops, cbucket = props, bucket
        if cond.has_own_aggregation and cond.aggregation is not None:
            name = mapping.get(str(cond.aggregation))
            if not name or name not in groups:
                if best_reason != "no_group_type":
                    best_reason, best_index = "no_group_type", cond.index
                continue
            cbucket = groups[name]
            if name not in group_props:
                open_cause = open_cause or f"no group properties were given for {name!r}"
                continue
            cprops = group_props[name]
        code = condition_code(cond, cprops, ctx)
        if code == SERVER_ONLY:
            return _inconclusive(flag, _explain(cond, cprops, ctx))
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
        return _inconclusive(flag, open_cause)
    return _result(flag, False, best_reason, best_index)


def _evaluate_server(
    flag: CompiledFlag,
    distinct_id: str,
    person: Mapping[str, Any],
    groups: Mapping[str, str],
    group_props: Mapping[str, Mapping[str, Any]],
    mapping: Mapping[str, str],
    ctx: _Context,
) -> FlagResult:
    """Today's service, flag_matching.rs `FeatureFlagMatcher::get_match`: early access, holdout, then the
    conditions in listed order, each with its own aggregation; `groups` holds only valid group keys
    (service_group_key)."""
    # the guards spare the calls for the many flags without early access or a holdout
    if flag.feature_enrollment or flag.super_condition is not None:
        early = _server_early_access(flag, distinct_id, person, ctx)
        if early is not None:
            return early
    if flag.holdout is not None:
        held = _server_holdout(flag, distinct_id, groups, mapping, ctx)
        if held is not None:
            return held
    by_index: dict[int, Mapping[str, Any]] = {}
    for index, name in mapping.items():
        if str(index).isdigit():
            by_index[int(index)] = group_props.get(name, _EMPTY)
    ctx.person = person
    ctx.group_by_index = by_index
    try:
        return _server_conditions(flag, distinct_id, person, groups, mapping, by_index, ctx)
    finally:
        ctx.person = None
        ctx.group_by_index = None
        ctx.cond_group = False


def _server_early_access(
    flag: CompiledFlag, distinct_id: str, person: Mapping[str, Any], ctx: _Context
) -> FlagResult | None:
    """Early access: `feature_enrollment` reads `$feature_enrollment/<key>` (then falls through when unset);
    otherwise the legacy `super_groups` decide when the person has any of their properties. Both answer
    true/false (never a variant), reason super_condition_value, condition index 0. None: fall through."""
    if flag.feature_enrollment:
        enrolled = person.get(f"$feature_enrollment/{flag.key}", MISSING)
        if enrolled is MISSING:
            return None
        return _result(flag, enrolled is True or enrolled == "true", "super_condition_value", 0)
    sc = flag.super_condition
    if sc is None or not sc.filters or not any(f.key in person for f in sc.filters):
        return None
    ctx.cond_group = False
    code = condition_code(sc, person, ctx)
    if code in (INCONCLUSIVE, SERVER_ONLY):  # SERVER_ONLY: a filter only the service can answer
        return _result(flag, None, "inconclusive", None, _explain(sc, person, ctx))
    ok = code == TRUE and _in_rollout(flag, sc.rollout, _person_bucket(flag, distinct_id, ctx))
    return _result(flag, ok, "super_condition_value", 0)


def _server_holdout(
    flag: CompiledFlag, distinct_id: str, groups: Mapping[str, str], mapping: Mapping[str, str], ctx: _Context
) -> FlagResult | None:
    """Holdout (`is_holdout_condition_match`): hashed on the flag-level identifier, "holdout-" prefix.
    None: not held out."""
    if flag.holdout is None:
        return None
    hv, pct = flag.holdout
    if flag.aggregation is None:
        ident: str | None = _person_bucket(flag, distinct_id, ctx)
    else:
        ident = groups.get(mapping.get(str(flag.aggregation), ""), "")
    if pct >= 100.0 or holdout_fraction(ident or "") <= pct / 100:
        return _result(flag, hv, "holdout_condition_value", None)
    return None


def _server_subject(
    flag: CompiledFlag,
    cond: ConditionSpec,
    distinct_id: str,
    person: Mapping[str, Any],
    groups: Mapping[str, str],
    mapping: Mapping[str, str],
    by_index: Mapping[int, Mapping[str, Any]],
    ctx: _Context,
) -> tuple[str, Mapping[str, Any]] | str:
    """One condition's (bucket, properties), person or group by its aggregation; or the reason it is
    skipped (device-id bucketing without a device id; a group type the request does not name)."""
    agg = cond.aggregation
    if agg is None:
        bucket = _person_bucket(flag, distinct_id, ctx)
        if bucket is None:  # device-id bucketing without a device id: this condition is skipped
            return "out_of_rollout_bound"
        ctx.cond_group = False
        return bucket, person
    group_name = mapping.get(str(agg))
    group_key = groups.get(group_name) if group_name else None
    if group_key is None:
        return "no_group_type"
    ctx.cond_group = True
    return group_key, by_index.get(agg, _EMPTY)


def _server_conditions(
    flag: CompiledFlag,
    distinct_id: str,
    person: Mapping[str, Any],
    groups: Mapping[str, str],
    mapping: Mapping[str, str],
    by_index: Mapping[int, Mapping[str, Any]],
    ctx: _Context,
) -> FlagResult:
    """The conditions in listed order: the first that matches with the subject in its rollout decides;
    otherwise false with the best reason seen (or unknown, when a passed-over match was unknown)."""
    best, best_index = "no_group_type", None
    pending = _Pending()
    for cond in flag.conditions:
        subject = _server_subject(flag, cond, distinct_id, person, groups, mapping, by_index, ctx)
        if isinstance(subject, str):
            best, best_index = _rank(best, best_index, subject, cond.index)
            continue
        bucket, props = subject
        code = condition_code(cond, props, ctx)
        if code == SERVER_ONLY:
            # a cohort the caller did not supply (a static cohort): only the service knows
            return _result(flag, None, "inconclusive", None, _explain(cond, props, ctx))
        if code != TRUE:
            best, best_index = _rank(best, best_index, "no_condition_match", cond.index)
            if code == INCONCLUSIVE:
                pending.add(flag, cond, bucket, _in_rollout(flag, cond.rollout, bucket), props, ctx)
            continue
        if not _in_rollout(flag, cond.rollout, bucket):
            best, best_index = _rank(best, best_index, "out_of_rollout_bound", cond.index)
            if flag.early_exit:
                # PostHog PR #57321 (flag_matching.rs; posthog-python `_match_flag_conditions`): the
                # properties matched but the rollout excludes the person: stop here, False
                if pending.value:
                    return pending.unknown(flag)
                return _result(flag, False, "out_of_rollout_bound", cond.index)
            continue
        if pending.differs(flag, cond, bucket):
            return pending.unknown(flag)
        value = _matched_value(flag, cond.variant, bucket)
        return _result(flag, value, "condition_match", cond.index)
    if pending.value:
        return pending.unknown(flag)
    return _result(flag, False, best, best_index)


class _Pending:
    """Server mode: conditions passed over whose match was unknown (a dependency without a known value);
    the answer is known only when every outcome of the unknown gives the same one (as frames do)."""

    __slots__ = ("buckets", "cause", "odd", "stop", "value")

    def __init__(self) -> None:
        self.value = self.odd = self.stop = False
        self.buckets: set[str] = set()
        self.cause: str | None = None

    def add(
        self,
        flag: CompiledFlag,
        cond: ConditionSpec,
        bucket: str,
        within: bool,
        props: Mapping[str, Any],
        ctx: _Context,
    ) -> None:
        self.cause = self.cause or _explain(cond, props, ctx)
        self.buckets.add(bucket)
        if within:
            self.value = True
            self.odd |= flag.multivariate and cond.variant is not None
        elif flag.early_exit:
            self.stop = True

    def differs(self, flag: CompiledFlag, cond: ConditionSpec, bucket: str) -> bool:
        """Whether a match at `cond` might not be the answer (see frames' `_Pending.differs`)."""
        if self.stop or self.odd:
            return True
        other = cond.variant is not None or bool(self.buckets - {bucket})
        return self.value and flag.multivariate and other

    def unknown(self, flag: CompiledFlag) -> FlagResult:
        return _result(flag, None, "inconclusive", None, self.cause)


def _rank(best: str, best_index: int | None, new: str, index: int) -> tuple[str, int | None]:
    """`get_highest_priority_match_evaluation`: the new reason wins when it scores at least as high."""
    if REASON_SCORE[best] <= REASON_SCORE[new]:
        return new, index
    return best, best_index


def _person_bucket(flag: CompiledFlag, distinct_id: str, ctx: _Context) -> str | None:
    """`hashed_identifier` for a person condition: the device id for device-id bucketing (None when
    there is none), else the continuity hash key, else the distinct id."""
    if flag.device_bucketing:
        device = ctx.device_id or (ctx.person or {}).get("$device_id")
        return str(device) if isinstance(device, str) and device else None
    if flag.continuity and ctx.hash_keys:
        return ctx.hash_keys.get(flag.key, distinct_id)
    return distinct_id


def _in_rollout(flag: CompiledFlag, rollout: float | None, bucket: str | None) -> bool:
    """`check_rollout`: 100% (or none) always passes; else the bucket's hash must be <= the share."""
    if rollout is None or rollout == 100.0:
        return True
    if not bucket:
        return True  # the service hashes an empty identifier to 0.0
    return hash_fraction(flag.key, bucket) <= rollout / 100


# ------------------------------------------------------------------------------------------ public API


def _prepare_groups(
    groups: Mapping[str, Any] | None,
    group_properties: Mapping[str, Any] | None,
    server: bool,
) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
    """Group keys as text and group properties with `$group_key` filled in for every group given (the
    SDK's client adds it, `_add_local_person_and_group_properties`; the service's groups carry it).
    Server mode keeps only the keys the service accepts (service_group_key)."""
    gkeys: dict[str, str] = {}
    for name, key in (groups or {}).items():
        text = service_group_key(key) if server else group_key_text(key)
        if text is None and not server:
            continue
        if text is not None:
            gkeys[str(name)] = text
    gprops = {
        str(name): normalize_properties(p, f"group_properties[{name!r}]", server)
        for name, p in (group_properties or {}).items()
    }
    for name, key in (groups or {}).items():
        v = normalize(key)
        if v is MISSING or isinstance(v, (dict, list)):
            continue
        gprops.setdefault(str(name), {}).setdefault("$group_key", v)
    return gkeys, gprops


def _prepare_person(
    person_properties: Mapping[str, Any] | None, distinct_id: str, server: bool
) -> dict[str, Any]:
    """Person properties with `distinct_id` added unless given (the service adds it to every person,
    flag_matching_utils.rs `fetch_and_locally_cache_all_relevant_properties`; the SDK's client too,
    `_person_properties_for_local_evaluation`), and server mode's `$initial_*` fill."""
    person = normalize_properties(person_properties, "person_properties", server)
    person.setdefault("distinct_id", distinct_id)
    if server:
        fill_initial_properties(person)
    return person


def _device_text(device_id: Any) -> str | None:
    if device_id is None:
        return None
    v = normalize(device_id)
    if v is MISSING or v is None or isinstance(v, (dict, list, bool)):
        raise ValueError(f"device_id must be a string, got {device_id!r}")
    return str(v) or None


def _one_flag(
    flag: Any, cohorts: Mapping[str, Any] | None, group_type_mapping: Mapping[str, str] | None
) -> tuple[dict[str, Any], Mapping[str, Any] | None, Mapping[str, str] | None, int | None]:
    """The one flag `evaluate_flag` was given (any definitions shape holding exactly one flag), with the
    cohorts, group type mapping and matching version it carries unless the caller gave them."""
    defs = read_definitions(flag)
    if len(defs.flags) != 1:
        raise ValueError(
            f"evaluate_flag takes one flag; these definitions hold {len(defs.flags)} "
            f"({defs.keys[:5]!r}): use evaluate_flags, or pick one"
        )
    return (
        defs.flags[0],
        cohorts if cohorts is not None else (defs.cohorts or None),
        group_type_mapping if group_type_mapping is not None else (defs.group_type_mapping or None),
        defs.property_matching_version,
    )


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
    device_id: Any = None,
    property_matching_version: int | None = None,
    timezone: str = "UTC",
    strict: bool = False,
) -> FlagResult:
    """Evaluate one flag for one distinct id, the way today's flags service does (mode="server") or the
    official SDK's local evaluation does (mode="sdk": an undecidable flag gives value None, reason
    "inconclusive").

    Flag dependencies read `flag_values` ({flag key: value}); use evaluate_flags to compute them.
    `hash_key_overrides` ({flag key: hash key}) is the identifier a flag with `ensure_experience_continuity`
    is bucketed by (PostHog stores it when a request carries `$anon_distinct_id`); other flags ignore it.
    `device_id` buckets flags with bucketing_identifier "device_id" (else the `$device_id` property).
    `timezone` is the project's: server mode reads naive and relative dates in it. A definition that
    cannot be evaluated gives reason "error" (`FlagResult.error` says why) unless `strict`, which raises.

    Args:
        flag: One flag definition (dict or model).
        distinct_id: The person's distinct id (the bucketing identifier).
        person_properties: The person's properties. None: none known.
        groups: ``{group type: group key}`` for group flags. None: no groups.
        group_properties: ``{group type: properties}``. None: none known.
        group_type_mapping: ``{group type index: name}``, needed by group flags.
        cohorts: ``{cohort id: cohort filters}`` for cohort conditions.
        flag_values: ``{flag key: value}`` of the flags this one depends on.
        mode: ``"server"`` (the flags service) or ``"sdk"`` (the SDK's local evaluation).
        now: The instant relative dates are read against. None: now.
        hash_key_overrides: ``{flag key: hash key}`` for experience continuity.
        device_id: The device id for flags bucketed by device. None: the ``$device_id`` property.
        property_matching_version: 1 or 2. None: 1.
        timezone: The project's IANA time zone.
        strict: Raise on a bad definition instead of answering reason "error".

    Returns:
        The `FlagResult`: value, payload, reason, condition index.
    """
    server = check_mode(mode)
    if isinstance(flag, CompiledFlag):
        compiled = flag
        version = _matching_version(property_matching_version)
    else:
        raw, cohorts, group_type_mapping, given_version = _one_flag(flag, cohorts, group_type_mapping)
        version = (
            _matching_version(property_matching_version)
            if property_matching_version is not None
            else _payload_matching_version(given_version)
        )
        try:
            compiled = compile_flag(raw, strict=strict, matching_version=version)
        except FlagDefinitionError as exc:
            if strict:
                raise
            compiled = error_flag(raw, str(exc))
    did = _distinct_id_text(distinct_id)
    person = _prepare_person(person_properties, did, server)
    gkeys, gprops = _prepare_groups(groups, group_properties, server)
    values = dict(flag_values or {})
    ctx = _Context(
        server,
        _now(now, server, timezone),
        compile_cohorts(cohorts, matching_version=version) if cohorts else {},
        values,
        {k: k for k in values},
        _hash_keys(hash_key_overrides),
        device_id=_device_text(device_id),
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
    device_id: Any = None,
    property_matching_version: int | None = None,
    timezone: str | None = None,
    strict: bool = False,
) -> dict[str, FlagResult]:
    """Evaluate every flag for one distinct id, dependencies first; returns {flag key: FlagResult} in the
    order the flags were given. `flags` may be a CompiledFlags from compile_flags (fast path).

    One bad definition answers only its own flag with reason "error"; `strict=True` raises instead.
    `property_matching_version` and `timezone` default to the compiled set's (see compile_flags);
    `hash_key_overrides` and `device_id` are as in evaluate_flag.

    Args:
        flags: The flag definitions, or `CompiledFlags` from `compile_flags`.
        distinct_id: The person's distinct id.
        person_properties: The person's properties. None: none known.
        groups: ``{group type: group key}``. None: no groups.
        group_properties: ``{group type: properties}``. None: none known.
        group_type_mapping: ``{group type index: name}``. None: the definitions'.
        cohorts: ``{cohort id: cohort filters}``. None: the definitions'.
        flag_values: Values of flags already computed (outside this set).
        mode: ``"server"`` or ``"sdk"``.
        now: The instant relative dates are read against. None: now.
        hash_key_overrides: ``{flag key: hash key}`` for experience continuity.
        device_id: The device id for flags bucketed by device.
        property_matching_version: 1 or 2. None: the compiled set's.
        timezone: The project's IANA time zone. None: the compiled set's.
        strict: Raise on a bad definition instead of answering reason "error".

    Returns:
        ``{flag key: FlagResult}``.
    """
    server = check_mode(mode)
    compiled = compile_flags(
        flags,
        cohorts=cohorts,
        strict=strict,
        property_matching_version=property_matching_version,
        timezone=timezone,
    )
    did = _distinct_id_text(distinct_id)
    person = _prepare_person(person_properties, did, server)
    gkeys, gprops = _prepare_groups(groups, group_properties, server)
    cohort_set = compiled.cohorts or {}
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
    ctx = _Context(
        server,
        _now(now, server, compiled.timezone),
        cohort_set,
        values,
        alias,
        _hash_keys(hash_key_overrides),
        device_id=_device_text(device_id),
    )
    results: dict[str, FlagResult] = {}
    for flag in compiled.order:
        res = evaluate_compiled(flag, did, person, gkeys, gprops, mapping, ctx)
        results[flag.key] = res
        values[flag.key] = None if res.reason == "error" else res.value
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
