"""Parse and validate flag definitions (wire-shape dicts or pydantic models) into a compiled form."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from analytics_nb.flags._errors import FlagDefinitionError
from analytics_nb.flags._operators import (
    PROPERTY_OPERATORS,
    PropertyMatcher,
    prepare_property,
    unknown_operator,
)

FilterKind = Literal["property", "cohort", "flag"]


#: Operators of other filter types (cohort, flag) on a property filter: the service never matches them, the
#: SDK finds them unknown; neither fails the flag before reaching them.
MISPLACED_OPERATORS = frozenset({"in", "not_in", "flag_evaluates_to"})


@dataclass(frozen=True, slots=True)
class FilterSpec:
    """One validated property filter of a condition (or of a cohort)."""

    kind: FilterKind
    key: str
    label: str
    signature: str
    matcher: PropertyMatcher | None = None
    cohort_id: str | None = None
    cohort_negate: bool = False
    expected: bool | str | None = None
    negation: bool = False
    #: the property source by the filter's `type` (server mode routes by it): "person" or "group"
    route: str = "person"
    #: a group filter's own `group_type_index` (None: the condition's aggregation)
    group_index: int | None = None


@dataclass(frozen=True, slots=True)
class ConditionSpec:
    """One condition group: filters AND-ed, then the rollout check."""

    index: int
    filters: tuple[FilterSpec, ...]
    rollout: float | None
    variant: str | None
    #: a condition-level aggregation that differs from the flag's (mixed targeting); None otherwise
    aggregation: int | None
    has_own_aggregation: bool


@dataclass(frozen=True, slots=True)
class CompiledFlag:
    """A validated flag definition, ready for scalar or vectorised evaluation."""

    key: str
    id: int | None
    version: int | None
    active: bool
    aggregation: int | None
    #: release conditions in definition order; today's service and the SDK both run them in this order
    #: (the service stopped trying variant overrides first in PostHog PR #37859)
    conditions: tuple[ConditionSpec, ...]
    variants: tuple[tuple[str, float, float], ...]
    payloads: Mapping[str, str]
    early_exit: bool
    continuity: bool
    device_bucketing: bool
    feature_enrollment: bool
    holdout: tuple[str, float] | None
    holdout_group: tuple[float | None, str | None] | None
    super_condition: ConditionSpec | None
    dependencies: frozenset[str]
    definition: Mapping[str, Any] = field(repr=False, compare=False)
    #: why the definition cannot be evaluated (names the flag, the filter and the fix); None when it can
    error: str | None = field(default=None, compare=False)
    #: the new rules format (`filters.version == 2`): answered as "needs the server", never as version 1
    needs_server: str | None = field(default=None, compare=False)
    #: sdk mode evaluates the flag despite `error` (an unknown operator is an inconclusive filter there)
    sdk_evaluates: bool = field(default=False, compare=False)
    #: memo of the evaluator's immutable results without a cause, by (value, reason, condition index)
    result_memo: dict[tuple[Any, str, int | None], Any] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    @property
    def server_conditions(self) -> tuple[ConditionSpec, ...]:
        """The conditions in the order the service runs them: the listed order."""
        return self.conditions

    @property
    def multivariate(self) -> bool:
        """Whether the flag can return a string (variants or a holdout variant)."""
        return bool(self.variants) or self.holdout is not None or self.holdout_group is not None

    def variant_for(self, fraction: float) -> str | None:
        """The variant whose [min, max) range holds `fraction`, None when the table does not cover it."""
        for key, low, high in self.variants:
            if low <= fraction < high:
                return key
        return None

    def payload_for(self, value: bool | str | None) -> str | None:
        """The wire payload (JSON text) for a matched value, None when unmatched or not configured."""
        if value is None or value is False:
            return None
        return self.payloads.get(value if isinstance(value, str) else "true")


# ------------------------------------------------------------------------------------------ inputs


def as_plain(obj: Any) -> Any:
    """A pydantic model (anything with model_dump) as its wire-shape dict; other values unchanged."""
    dump = getattr(obj, "model_dump", None)
    if callable(dump) and not isinstance(obj, type):
        return dump(by_alias=True, mode="json")
    return obj


# ------------------------------------------------------------------------------------------ helpers


def _number(value: Any, flag: str, where: str, what: str, *, lo: float = 0.0, hi: float = 100.0) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                raise FlagDefinitionError(flag, where, f"{what} must be a number, got {value!r}") from None
        else:
            raise FlagDefinitionError(flag, where, f"{what} must be a number, got {value!r}")
    number = float(value)
    if not math.isfinite(number) or not lo <= number <= hi:
        raise FlagDefinitionError(flag, where, f"{what} must be between {lo:g} and {hi:g}, got {value!r}")
    return number


def _optional_int(value: Any, flag: str, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, str) and value.strip().isdigit():
            return int(value)
        raise FlagDefinitionError(flag, where, f"must be an integer or null, got {value!r}")
    return value


def _list(value: Any, flag: str, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        raise FlagDefinitionError(flag, where, f"must be a list, got {type(value).__name__}")
    return list(value)


def _mapping(value: Any, flag: str, where: str) -> Mapping[str, Any]:
    value = as_plain(value)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise FlagDefinitionError(flag, where, f"must be an object, got {type(value).__name__}")
    return value


def _signature(raw: Mapping[str, Any]) -> str:
    try:
        return json.dumps(raw, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return repr(sorted(raw.items(), key=lambda kv: str(kv[0])))


# ------------------------------------------------------------------------------------------ filters


def compile_filter(
    raw: Any, flag: str | None, where: str, *, strict: bool = False, matching_version: int = 1
) -> FilterSpec:
    """Validate one property filter dict; raises FlagDefinitionError naming the flag and the filter when the
    filter cannot be evaluated at all (unknown operator, wrong type). A filter value the service or the
    SDK cannot use is kept (the service never matches it, the SDK is inconclusive) unless `strict`."""
    raw = as_plain(raw)
    if not isinstance(raw, Mapping):
        raise FlagDefinitionError(
            flag, where, f"a property filter must be an object, got {type(raw).__name__}"
        )
    kind = raw.get("type") or "person"
    operator = raw.get("operator") or "exact"
    key = raw.get("key")
    label = f"{where} (key {key!r}, operator {operator!r})"
    if kind == "cohort":
        return _cohort_filter(raw, flag, label, operator)
    if kind == "flag":
        return _flag_filter(raw, flag, label, operator)
    if not isinstance(key, str) or key == "":
        raise FlagDefinitionError(flag, label, "a property filter needs a non-empty string key")
    if operator in MISPLACED_OPERATORS:
        return _misplaced_filter(raw, flag, label, kind, operator, strict=strict)
    return _property_filter(raw, flag, label, operator, strict=strict, matching_version=matching_version)


def _cohort_filter(raw: Mapping[str, Any], flag: str | None, label: str, operator: Any) -> FilterSpec:
    """A `type: cohort` filter: operator in / not_in (or exact), the value a cohort id."""
    value = raw.get("value")
    if operator not in ("exact", "in", "not_in"):
        raise FlagDefinitionError(flag, label, "a cohort filter's operator must be 'in' or 'not_in'")
    if value is None or isinstance(value, (bool, list, dict)):
        raise FlagDefinitionError(flag, label, f"a cohort filter's value must be a cohort id, got {value!r}")
    return FilterSpec(
        "cohort",
        str(raw.get("key")),
        label,
        _signature(raw),
        cohort_id=str(value),
        cohort_negate=operator == "not_in",
        negation=bool(raw.get("negation", False)),
    )


def _flag_filter(raw: Mapping[str, Any], flag: str | None, label: str, operator: Any) -> FilterSpec:
    """A `type: flag` filter: flag_evaluates_to with true, false or a variant key."""
    key, value = raw.get("key"), raw.get("value")
    if operator != "flag_evaluates_to":
        raise FlagDefinitionError(
            flag, label, "a flag-dependency filter's operator must be 'flag_evaluates_to'"
        )
    if not key or value is None:
        raise FlagDefinitionError(flag, label, "a flag-dependency filter needs the flag key and a value")
    if not isinstance(value, (bool, str)):
        raise FlagDefinitionError(
            flag, label, f"flag_evaluates_to needs true, false or a variant key, got {value!r}"
        )
    negation = bool(raw.get("negation", False))
    return FilterSpec("flag", str(key), label, _signature(raw), expected=value, negation=negation)


def _misplaced_filter(
    raw: Mapping[str, Any], flag: str | None, label: str, kind: Any, operator: str, *, strict: bool
) -> FilterSpec:
    """A property filter with a cohort or flag operator: an error if strict, else one no one can match."""
    key = raw["key"]
    needed = "flag" if operator == "flag_evaluates_to" else "cohort"
    misplaced = FlagDefinitionError(
        flag, label, f"operator {operator!r} needs type {needed!r}, the filter has type {kind!r}"
    )
    if strict:
        raise misplaced
    # Not an error of the flag: the service's `match_property` answers a validation error (no match)
    # when it reaches the filter (rust/feature-flags/src/properties/property_matching.rs, the In /
    # NotIn / FlagEvaluatesTo arms); posthog 7.91.1 finds the operator unknown (inconclusive) when it
    # reaches it. An earlier condition that matches decides before either reads it.
    return FilterSpec(
        "property",
        key,
        label,
        _signature(raw),
        matcher=unknown_operator(key, operator, str(misplaced)),
        negation=bool(raw.get("negation", False)),
    )


def _property_filter(
    raw: Mapping[str, Any],
    flag: str | None,
    label: str,
    operator: Any,
    *,
    strict: bool,
    matching_version: int,
) -> FilterSpec:
    """A person or group property filter, its value prepared for the operator."""
    key = raw["key"]
    try:
        matcher = prepare_property(key, operator, raw.get("value"), matching_version=matching_version)
    except ValueError as exc:
        error = FlagDefinitionError(flag, label, f"{exc} (fix the filter in PostHog, or delete it)")
        if strict or not isinstance(operator, str):
            raise error from None
        # kept as a filter the SDK finds inconclusive; compile_flag marks the flag as an error for the
        # service, which cannot evaluate it
        matcher = unknown_operator(key, operator, str(error))
    if strict and matcher.problem is not None:
        raise FlagDefinitionError(flag, label, matcher.problem)
    route = "group" if raw.get("type") == "group" else "person"
    gti = raw.get("group_type_index")
    group_index = gti if isinstance(gti, int) and not isinstance(gti, bool) else None
    return FilterSpec(
        "property",
        key,
        label,
        _signature(raw),
        matcher=matcher,
        negation=bool(raw.get("negation", False)),
        route=route,
        group_index=group_index,
    )


def _compile_condition(
    raw: Any,
    index: int,
    flag: str,
    where: str,
    valid_variants: set[str],
    flag_aggregation: int | None,
    *,
    strict: bool = False,
    matching_version: int = 1,
) -> ConditionSpec:
    group = _mapping(raw, flag, where)
    filters = tuple(
        compile_filter(p, flag, f"{where}.properties[{i}]", strict=strict, matching_version=matching_version)
        for i, p in enumerate(_list(group.get("properties"), flag, f"{where}.properties"))
    )
    rollout_raw = group.get("rollout_percentage")
    rollout = None if rollout_raw is None else _number(rollout_raw, flag, where, "rollout_percentage")
    variant = group.get("variant")
    if variant is not None and not isinstance(variant, str):
        raise FlagDefinitionError(flag, where, f"variant must be a variant key or null, got {variant!r}")
    has_own = "aggregation_group_type_index" in group
    aggregation = (
        _optional_int(
            group.get("aggregation_group_type_index"), flag, f"{where}.aggregation_group_type_index"
        )
        if has_own
        else flag_aggregation
    )
    return ConditionSpec(
        index,
        filters,
        rollout,
        variant if variant and variant in valid_variants else None,
        aggregation,
        has_own and aggregation != flag_aggregation,
    )


def compile_flag(raw: Any, *, strict: bool = True, matching_version: int = 1) -> CompiledFlag:
    """Validate one flag definition; raises FlagDefinitionError naming the flag and the filter at fault.

    With `strict=False` only a definition that cannot be evaluated at all raises (see compile_filter);
    the variant percentages need not sum to 100 (the service and the SDK both walk the cumulative table).
    """
    definition, key = _definition_and_key(raw)
    filters = _mapping(definition.get("filters"), key, "filters")
    aggregation = _optional_int(
        filters.get("aggregation_group_type_index"), key, "filters.aggregation_group_type_index"
    )
    variants = _compile_variants(filters, key, strict=strict)
    valid = {v[0] for v in variants}
    needs_server = _needs_server(filters, key)
    conditions = [
        _compile_condition(
            g,
            i,
            key,
            f"filters.groups[{i}]",
            valid,
            aggregation,
            strict=strict,
            matching_version=matching_version,
        )
        for i, g in enumerate([] if needs_server else _list(filters.get("groups"), key, "filters.groups"))
    ]
    payloads, holdout, holdout_group = (
        _payloads(filters, key),
        _holdout(filters, key),
        _holdout_group(filters, key),
    )
    # Early access: `feature_enrollment: true` (the service reads `$feature_enrollment/<key>`), or the legacy
    # `super_groups` (flag_matching.rs `get_match`, `is_super_condition_match`).
    super_condition = _super_condition(filters, key, valid, strict=strict, matching_version=matching_version)
    deps, unknown = _dependencies_and_unknown([*conditions, *([super_condition] if super_condition else [])])
    bucketing = definition.get("bucketing_identifier") or filters.get("bucketing_identifier")
    return CompiledFlag(
        key=key,
        id=_optional_int(definition.get("id"), key, "id")
        if not isinstance(definition.get("id"), str)
        else None,
        version=definition.get("version") if isinstance(definition.get("version"), int) else None,
        active=bool(definition.get("active", True)) and not definition.get("deleted", False),
        aggregation=aggregation,
        conditions=tuple(conditions),
        variants=tuple(variants),
        payloads=payloads,
        early_exit=bool(filters.get("early_exit")),
        continuity=bool(definition.get("ensure_experience_continuity")),
        device_bucketing=bucketing == "device_id",
        feature_enrollment=filters.get("feature_enrollment") is True,
        holdout=holdout,
        holdout_group=holdout_group,
        super_condition=super_condition,
        dependencies=frozenset(deps),
        definition=definition,
        needs_server=needs_server,
        error=unknown,
        sdk_evaluates=unknown is not None,
    )


def _definition_and_key(raw: Any) -> tuple[Mapping[str, Any], str]:
    """The definition as plain data and its key; an error when it is not an object or has no key."""
    definition = as_plain(raw)
    if not isinstance(definition, Mapping):
        raise FlagDefinitionError(
            None, "flag definition", f"must be an object, got {type(definition).__name__}"
        )
    key = definition.get("key")
    if not isinstance(key, str) or not key:
        raise FlagDefinitionError(None, "flag definition", f"needs a non-empty string 'key', got {key!r}")
    return definition, key


def _compile_variants(
    filters: Mapping[str, Any], key: str, *, strict: bool
) -> list[tuple[str, float, float]]:
    """The variants as (key, low, high) on the cumulative table; strict: the percentages sum to 100."""
    variants: list[tuple[str, float, float]] = []
    multivariate = _mapping(filters.get("multivariate"), key, "filters.multivariate")
    raw_variants = _list(multivariate.get("variants"), key, "filters.multivariate.variants")
    low, total, seen = 0.0, 0.0, set()
    for i, v in enumerate(raw_variants):
        where = f"filters.multivariate.variants[{i}]"
        v = _mapping(v, key, where)
        vkey = v.get("key")
        if not isinstance(vkey, str) or not vkey:
            raise FlagDefinitionError(key, where, f"a variant needs a non-empty string key, got {vkey!r}")
        if vkey in seen:
            raise FlagDefinitionError(key, where, f"variant key {vkey!r} is used twice")
        seen.add(vkey)
        pct = _number(v.get("rollout_percentage"), key, where, "rollout_percentage")
        high = low + pct / 100
        variants.append((vkey, low, high))
        low = high
        total += pct
    if strict and raw_variants and abs(total - 100.0) > 1e-6:
        raise FlagDefinitionError(
            key,
            "filters.multivariate.variants",
            f"variant rollout percentages sum to {total:g}, they must sum to 100",
        )
    return variants


def _needs_server(filters: Mapping[str, Any], key: str) -> str | None:
    """Why only the flags service can evaluate this flag (a rules format other than 1), or None."""
    # PostHog/posthog-sdk-test-harness contracts/feature_flag_rules_v2 (fixtures/wire/definitions.json):
    # `filters.version` absent or 1 is the classic format; 2 (or 2.0) the rules format; anything else is
    # unsupported, and a local reader must fall back to the server. None of them is read as version 1.
    rules_version = filters.get("version", 1)
    if not isinstance(rules_version, bool) and rules_version == 1:
        return None
    what = (
        "the new rules format (filters.version 2)"
        if rules_version == 2 and not isinstance(rules_version, bool)
        else f"an unsupported rules format (filters.version {rules_version!r})"
    )
    return (
        f"flag {key!r} uses {what}; only the flags service evaluates it: ask the server "
        "(simulate(engine='remote'))"
    )


def _payloads(filters: Mapping[str, Any], key: str) -> dict[str, str]:
    """The payloads by variant (or "true"), each as JSON text; a null payload is no payload."""
    payloads: dict[str, str] = {}
    for pkey, pval in _mapping(filters.get("payloads"), key, "filters.payloads").items():
        if pval is None:
            continue
        payloads[str(pkey)] = pval if isinstance(pval, str) else json.dumps(pval)
    return payloads


def _holdout(filters: Mapping[str, Any], key: str) -> tuple[str, float] | None:
    """The experiment holdout (its flag-style key, exclusion percentage clamped to 0-100), or None."""
    raw_holdout = filters.get("holdout")
    if not raw_holdout:
        return None
    h = _mapping(raw_holdout, key, "filters.holdout")
    if h.get("exclusion_percentage") is None or h.get("id") is None:
        return None
    pct = _number(
        h["exclusion_percentage"], key, "filters.holdout", "exclusion_percentage", lo=-math.inf, hi=math.inf
    )
    return (f"holdout-{h['id']}", min(max(pct, 0.0), 100.0))


def _holdout_group(filters: Mapping[str, Any], key: str) -> tuple[float | None, str | None] | None:
    """The legacy first holdout group without properties: (rollout percentage, variant), or None."""
    raw_hg = _list(filters.get("holdout_groups"), key, "filters.holdout_groups")
    if not raw_hg:
        return None
    hg = _mapping(raw_hg[0], key, "filters.holdout_groups[0]")
    if hg.get("properties"):
        return None
    pct_raw = hg.get("rollout_percentage")
    pct_hg = (
        None if pct_raw is None else _number(pct_raw, key, "filters.holdout_groups[0]", "rollout_percentage")
    )
    hv = hg.get("variant")
    return (pct_hg, hv if isinstance(hv, str) and hv else None)


def _super_condition(
    filters: Mapping[str, Any], key: str, valid: set[str], *, strict: bool, matching_version: int
) -> ConditionSpec | None:
    """The first of the legacy `super_groups`, compiled, or None."""
    raw_super = _list(filters.get("super_groups"), key, "filters.super_groups")
    if not raw_super:
        return None
    return _compile_condition(
        raw_super[0],
        0,
        key,
        "filters.super_groups[0]",
        valid,
        None,
        strict=strict,
        matching_version=matching_version,
    )


def _dependencies_and_unknown(conditions: Iterable[ConditionSpec]) -> tuple[set[str], str | None]:
    """The flags these conditions depend on, and the problem of the first operator nobody knows."""
    deps: set[str] = set()
    unknown: str | None = None
    for cond in conditions:
        deps.update(f.key for f in cond.filters if f.kind == "flag")
        for f in cond.filters:
            if (
                unknown is None
                and f.matcher is not None
                and f.matcher.operator not in PROPERTY_OPERATORS
                and f.matcher.operator not in MISPLACED_OPERATORS
            ):
                unknown = f.matcher.problem
    return deps, unknown


def error_flag(definition: Any, message: str) -> CompiledFlag:
    """A stand-in for a definition that cannot be evaluated: evaluating it gives an error result that
    carries `message` (the flag, the filter and the fix); other flags are unaffected."""
    plain = as_plain(definition)
    plain = plain if isinstance(plain, Mapping) else {}
    raw_id, raw_version = plain.get("id"), plain.get("version")
    raw_filters = plain.get("filters")
    agg = raw_filters.get("aggregation_group_type_index") if isinstance(raw_filters, Mapping) else None
    return CompiledFlag(
        key=str(plain.get("key")),
        id=raw_id if isinstance(raw_id, int) and not isinstance(raw_id, bool) else None,
        version=raw_version if isinstance(raw_version, int) and not isinstance(raw_version, bool) else None,
        active=bool(plain.get("active", True)) and not plain.get("deleted", False),
        # kept so that the SDK's checks that come before matching (group given, continuity) still apply
        aggregation=agg if isinstance(agg, int) and not isinstance(agg, bool) else None,
        conditions=(),
        variants=(),
        payloads={},
        early_exit=False,
        continuity=bool(plain.get("ensure_experience_continuity")),
        device_bucketing=False,
        feature_enrollment=False,
        holdout=None,
        holdout_group=None,
        super_condition=None,
        dependencies=frozenset(),
        definition=plain,
        error=message,
    )


# ------------------------------------------------------------------------------------------ cohorts


@dataclass(frozen=True, slots=True)
class CohortGroup:
    """A cohort's AND/OR property group; children are groups or (filter, negation) leaves."""

    is_and: bool
    children: tuple[CohortGroup | FilterSpec, ...]


def _compile_group(raw: Any, where: str, matching_version: int = 1) -> CohortGroup:
    raw = as_plain(raw)
    if raw == {}:
        return CohortGroup(True, ())
    if not isinstance(raw, Mapping):
        raise FlagDefinitionError(None, where, "a cohort property group must be an object")
    kind = raw.get("type")
    if kind not in ("AND", "OR"):
        raise FlagDefinitionError(
            None, where, f"a cohort property group's type must be 'AND' or 'OR', got {kind!r}"
        )
    values = raw.get("values")
    if not isinstance(values, (list, tuple)):
        raise FlagDefinitionError(None, where, "a cohort property group needs a 'values' list")
    children: list[CohortGroup | FilterSpec] = []
    for i, item in enumerate(values):
        item = as_plain(item)
        sub = f"{where}.values[{i}]"
        if isinstance(item, Mapping) and (
            item == {} or "values" in item or item.get("type") in ("AND", "OR")
        ):
            children.append(_compile_group(item, sub, matching_version))
        else:
            children.append(compile_filter(item, None, sub, matching_version=matching_version))
    return CohortGroup(kind == "AND", tuple(children))


def compile_cohorts(
    cohorts: Mapping[str, Any] | None,
    *,
    errors: dict[str, str] | None = None,
    matching_version: int = 1,
) -> dict[str, CohortGroup]:
    """Validate cohort definitions {id: property group} (or {id: {"filters": {"properties": group}}}).

    Raises FlagDefinitionError for the first bad cohort, unless `errors` is given: then each bad cohort is
    left out and `errors[cohort id]` says why (flags that use it answer with that error).
    """
    out: dict[str, CohortGroup] = {}
    for cid, raw in (as_plain(cohorts) or {}).items():
        raw = as_plain(raw)
        if isinstance(raw, Mapping) and "values" not in raw and "type" not in raw:
            if isinstance(raw.get("filters"), Mapping):
                raw = raw["filters"].get("properties", {})
            elif "properties" in raw:
                raw = raw["properties"]
        try:
            out[str(cid)] = _compile_group(raw, f"cohort {cid!s}", matching_version)
        except FlagDefinitionError as exc:
            if errors is None:
                raise
            errors[str(cid)] = str(exc)
    while True:
        try:
            _check_cohort_cycles(out)
            break
        except FlagDefinitionError as exc:
            if errors is None:
                raise
            bad = exc.where.removeprefix("cohort ")
            errors[bad] = str(exc)
            out.pop(bad, None)
    return out


def _check_cohort_cycles(cohorts: Mapping[str, CohortGroup]) -> None:
    def refs(group: CohortGroup) -> Iterable[str]:
        for child in group.children:
            if isinstance(child, CohortGroup):
                yield from refs(child)
            elif child.kind == "cohort" and child.cohort_id is not None:
                yield child.cohort_id

    state: dict[str, int] = {}

    def visit(cid: str, path: list[str]) -> None:
        if state.get(cid) == 2 or cid not in cohorts:
            return
        if state.get(cid) == 1:
            cycle = " -> ".join([*path[path.index(cid) :], cid])
            raise FlagDefinitionError(
                None, f"cohort {cid}", f"cohorts refer to each other in a cycle: {cycle}"
            )
        state[cid] = 1
        for ref in refs(cohorts[cid]):
            visit(ref, [*path, cid])
        state[cid] = 2

    for cid in cohorts:
        visit(cid, [])


# ------------------------------------------------------------------------------------------ flag sets


def dependency_order(
    flags: list[CompiledFlag], *, cycles: dict[str, str] | None = None
) -> tuple[list[CompiledFlag], dict[str, str]]:
    """Flags sorted so each comes after the flags it depends on, and the dependency-key -> flag-key map.

    A dependency filter names a flag by key (or by id, as the server stores it). Raises
    FlagDefinitionError on a cycle, unless `cycles` is given: then `cycles[flag key]` names the cycle of
    each flag on it (the caller answers those flags with an error) and the order is still complete.
    """
    by_key = {f.key: f for f in flags}
    alias: dict[str, str] = {k: k for k in by_key}
    for f in flags:
        if f.id is not None and str(f.id) not in alias:
            alias[str(f.id)] = f.key
    state: dict[str, int] = {}
    order: list[CompiledFlag] = []

    def visit(f: CompiledFlag, path: list[str]) -> None:
        if state.get(f.key) == 2:
            return
        if state.get(f.key) == 1:
            members = path[path.index(f.key) :]
            cycle = " -> ".join([*members, f.key])
            error = FlagDefinitionError(
                f.key,
                "flag dependencies",
                f"flags depend on each other in a cycle: {cycle}; remove one of these flag conditions",
            )
            if cycles is None:
                raise error
            for member in members:
                cycles.setdefault(member, str(FlagDefinitionError(member, error.where, error.problem)))
            return
        state[f.key] = 1
        for dep in sorted(f.dependencies):
            target = alias.get(dep)
            if target is not None:
                visit(by_key[target], [*path, f.key])
        state[f.key] = 2
        order.append(f)

    for f in flags:
        visit(f, [])
    return order, alias
