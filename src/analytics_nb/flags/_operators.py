"""Property-filter operators: one matcher per filter, answering for a present property value in either mode.

Every matcher returns an outcome code: TRUE, FALSE, or INCONCLUSIVE (the official SDK could not decide
locally). Server mode follows today's flags service, `match_property` in PostHog/posthog
rust/feature-flags/src/properties/property_matching.rs: a property present with value null is present (its
text is ``null``), a filter value the service cannot use makes the filter false (its errors are read as
"no match" by `is_condition_match`), never an error of the flag. SDK mode follows posthog 7.91.1's
`match_property` (posthog/feature_flags.py): an unusable filter value or property value is inconclusive.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from itertools import repeat
from typing import Any, Final

import numpy as np

from analytics_nb.flags import _sdk_rules as sdk
from analytics_nb.flags import _service_rules as svc
from analytics_nb.flags._regex import Pattern, compile_pattern, sdk_support
from analytics_nb.flags._values import (
    BadValueError,
    Opaque,
    SdkTextAbort,
    ascii_lower,
    is_boolish,
    normalize,
    sdk_container_text,
    service_text,
    to_text,
    truthy,
)
from analytics_nb.wire.cells import json_default

FALSE: Final = 0
TRUE: Final = 1
INCONCLUSIVE: Final = 2
#: The official SDK stops the whole flag and asks the server (an unknown cohort): no later condition helps.
SERVER_ONLY: Final = 3
#: The official SDK raises an unexpected exception on this filter (sdk mode only): the whole flag asks the
#: server when no earlier filter of the condition was undecided, else the condition is undecided there
#: (`_match_condition_properties`' `except Exception` branch); a later False filter is never reached.
ABORT: Final = 4

EQUALITY = ("exact", "is_not")
PRESENCE = ("is_set", "is_not_set")
TEXT = ("icontains", "not_icontains", "starts_with", "not_starts_with", "ends_with", "not_ends_with")
MULTI = ("icontains_multi", "not_icontains_multi")
REGEX = ("regex", "not_regex")
NUMERIC = ("gt", "gte", "lt", "lte")
RANGE = ("between", "not_between")
DATES = ("is_date_before", "is_date_after", "is_date_exact")
SEMVER_CMP = ("semver_eq", "semver_neq", "semver_gt", "semver_gte", "semver_lt", "semver_lte")
SEMVER_RANGE = ("semver_tilde", "semver_caret", "semver_wildcard")
#: Every operator of the service's `OperatorType` that applies to a property value.
PROPERTY_OPERATORS: Final = frozenset(
    EQUALITY + PRESENCE + TEXT + MULTI + REGEX + NUMERIC + RANGE + DATES + SEMVER_CMP + SEMVER_RANGE
)
#: Operators the flags service has but posthog 7.91.1 does not evaluate locally (its PROPERTY_OPERATORS).
SERVER_ONLY_OPERATORS: Final = frozenset({"is_date_exact", *MULTI, *RANGE})
#: Operators that match when the property is absent (server mode, each operator's `None` arm).
NEGATIVE_OPERATORS: Final = frozenset(
    {
        "is_not",
        "not_icontains",
        "not_regex",
        "not_starts_with",
        "not_ends_with",
        "is_not_set",
        "not_icontains_multi",
        "not_between",
    }
)

#: fn(value, now) -> code, for a present value; `now` is aware (server mode: in the team's zone)
ValueFn = Callable[[Any, dt.datetime], int]
#: fn(list of str values) -> int8 codes, a fast path with the same answers as the ValueFn
StrsFn = Callable[[list[str]], np.ndarray]
#: fn(a pyarrow string array without nulls) -> int8 codes, the same answers as StrsFn over its values: for
#: a column with many distinct values, where building the Python strings would cost more than the match
ArrowFn = Callable[[Any], np.ndarray]


@dataclass(frozen=True, slots=True)
class PropertyMatcher:
    """A property filter ready to match: `match(value, server, now)` for a present value (None = JSON
    null), `missing(server)` for an absent one."""

    key: str
    operator: str
    negative: bool
    sdk_supported: bool
    server_fn: ValueFn
    sdk_fn: ValueFn
    #: the outcome for an absent property in server mode
    server_absent: int
    #: why the filter value is unusable (by the service, the SDK or both), None when it is fine
    problem: str | None = None
    server_strs: StrsFn | None = None
    sdk_strs: StrsFn | None = None
    #: server mode: why no value can be answered (the filter answers SERVER_ONLY, never a guess)
    server_unknown: str | None = None
    #: the same answers as `server_strs` / `sdk_strs` (which must both be set), over a pyarrow array
    arrow_strs: ArrowFn | None = None

    def match(self, value: Any, server: bool, now: dt.datetime) -> int:
        """The outcome for a present value (server mode answers INCONCLUSIVE only for a value the client
        could not send as JSON)."""
        if type(value) is Opaque:
            return self._opaque(value, server, now)
        if server:
            return self.server_fn(value, now)
        if not self.sdk_supported:
            return INCONCLUSIVE
        return self.sdk_fn(value, now)

    def _opaque(self, value: Opaque, server: bool, now: dt.datetime) -> int:
        """A value outside JSON. Server mode: the JSON the client would send (a set as a list), unknown
        when it cannot be sent (bytes, objects). sdk mode: what posthog 7.91.1 answers for it
        (`_match_property_value`): present for is_set / is_not_set; numeric operators read no number
        (False, after the filter value is checked); dates: `NaT` compares False, other values are
        inconclusive; versions parse its `str()`; text, exact and regex need its JSON text: inconclusive."""
        op = self.operator
        if op in PRESENCE:
            return TRUE if op == "is_set" else FALSE
        if server:
            return self._server_opaque(value, now)
        if not self.sdk_supported:
            return INCONCLUSIVE
        return self._sdk_opaque(value, now)

    def _server_opaque(self, value: Opaque, now: dt.datetime) -> int:
        """Server mode, a value outside JSON: the answer for the JSON the client would send (a set as a
        list), INCONCLUSIVE when it cannot be sent (bytes, objects)."""
        try:
            plain = normalize(json_default(value.raw), none_is_null=True)
        except (TypeError, BadValueError):
            return INCONCLUSIVE
        return self.server_fn(plain, now)

    def _sdk_opaque(self, value: Opaque, now: dt.datetime) -> int:
        """sdk mode, a value outside JSON, for an operator other than is_set / is_not_set that the SDK
        supports: what posthog 7.91.1 answers for it, as `_opaque` says, operator by operator."""
        op = self.operator
        raw = value.raw
        if isinstance(raw, float):  # np.float64: a float subclass
            if op in NUMERIC:
                return self.sdk_fn(float(raw), now)
            if op in EQUALITY or op in TEXT or op in REGEX:
                # `_format_json_float`: non-finite is inconclusive, else the text is repr(value); a repr
                # with an exponent ("np.float64(1e+16)") makes its `int(exponent_text)` raise ValueError,
                # which ends the whole flag as "ask the server" in the client (`get_feature_flag` catches
                # it), whatever later filters and conditions hold: ABORT (found by the widened fuzz)
                if not math.isfinite(raw):
                    return INCONCLUSIVE
                text = repr(raw)
                return ABORT if "e" in text.removeprefix("np.float64") else self.sdk_fn(text, now)
        if isinstance(raw, (list, dict)) and (op in EQUALITY or op in TEXT or op in REGEX):
            return self._sdk_container(raw, now)
        if op in NUMERIC:
            return self.sdk_fn(True, now)  # the SDK's numeric parse reads no number in a bool either
        if op in DATES:
            return FALSE if value.is_nat and self.problem is None else INCONCLUSIVE
        if op in SEMVER_CMP or op in SEMVER_RANGE:
            return self.sdk_fn(str(value.raw), now)
        return INCONCLUSIVE

    def _sdk_container(self, raw: list[Any] | dict[Any, Any], now: dt.datetime) -> int:
        """sdk mode, a list or dict cell holding values outside JSON (`holds_sdk_opaque`): posthog 7.91.1
        prints it item by item (`_value_to_string`), so `[np.float64(1.5)]` has the text
        "[np.float64(1.5)]" and exact / text / regex filters compare that text (issue 34); an item it cannot
        print is inconclusive, an exponent float64 ends the flag (ABORT, as for a bare one). Such a cell is
        never truthy to the SDK (`_is_truthy_property_value`: a float item is not), nor is its text."""
        try:
            text = sdk_container_text(raw)
        except SdkTextAbort:
            return ABORT
        return INCONCLUSIVE if text is None else self.sdk_fn(text, now)

    def match_strs(self, values: list[str], server: bool) -> np.ndarray | None:
        """Outcome codes for many plain strings at once, or None when there is no fast path."""
        fn = self.server_strs if server else self.sdk_strs
        if fn is None or (not server and not self.sdk_supported):
            return None
        return fn(values)

    def match_arrow(self, values: Any, server: bool) -> np.ndarray | None:
        """Outcome codes for a pyarrow string array without nulls, or None when there is no such path."""
        fn = self.server_strs if server else self.sdk_strs
        if fn is None or self.arrow_strs is None or (not server and not self.sdk_supported):
            return None
        return self.arrow_strs(values)

    def missing(self, server: bool) -> int:
        """The outcome when the property is absent: server mode answers, SDK mode cannot."""
        return self.server_absent if server else INCONCLUSIVE


def unknown_operator(key: str, operator: str, problem: str) -> PropertyMatcher:
    """A filter with an operator neither side knows: the SDK finds it inconclusive when it reaches it
    (`_match_property_value`: "Unknown operator"); the service cannot evaluate the flag at all (the caller
    marks the flag with an error)."""
    return PropertyMatcher(key, operator, False, False, _NEVER, _UNDECIDABLE, FALSE, problem)


def prepare_property(key: str, operator: str, value: Any, *, matching_version: int = 1) -> PropertyMatcher:
    """Build the matcher of a property filter; raises ValueError only for an operator neither the service
    nor the SDK knows. A filter value that is unusable gives a matcher with `problem` set."""
    if operator not in PROPERTY_OPERATORS:
        known = ", ".join(sorted(PROPERTY_OPERATORS))
        raise ValueError(f"unknown operator {operator!r}; use one of {known}")
    negative = operator in NEGATIVE_OPERATORS
    server_absent = TRUE if negative else FALSE
    if value is None and operator not in PRESENCE:
        # property_matching.rs `match_property`: a filter without a value never matches, present or not
        server_absent = FALSE
    if operator in EQUALITY:
        built = _exact(value, operator == "is_not", matching_version)
    elif operator in PRESENCE:
        code = TRUE if operator == "is_set" else FALSE
        built = _Built(_const(code), _const(code))
    elif operator in TEXT:
        built = _text(operator, value)
    elif operator in MULTI:
        built = _multi(operator, value)
    elif operator in REGEX:
        built = _regex(value, operator == "not_regex")
    elif operator in NUMERIC:
        built = _numeric(operator, value)
    elif operator in RANGE:
        built = _between(operator == "not_between", value)
    elif operator in DATES:
        built = _dates(operator, value)
    else:
        built = _semver(operator, value)
    return PropertyMatcher(
        key,
        operator,
        negative,
        operator not in SERVER_ONLY_OPERATORS,
        built.server,
        built.sdk,
        server_absent,
        built.problem,
        built.server_strs,
        built.sdk_strs,
        built.server_unknown,
        built.arrow_strs,
    )


@dataclass(slots=True)
class _Built:
    server: ValueFn
    sdk: ValueFn
    problem: str | None = None
    server_strs: StrsFn | None = None
    sdk_strs: StrsFn | None = None
    #: why the service's answer cannot be known for any value (a regex form the engine does not model)
    server_unknown: str | None = None
    arrow_strs: ArrowFn | None = None


def _const(code: int) -> ValueFn:
    def match(v: Any, now: dt.datetime) -> int:
        return code

    return match


_NEVER = _const(FALSE)
_UNDECIDABLE = _const(INCONCLUSIVE)


def _null_false_else_undecidable(v: Any, now: dt.datetime) -> int:
    """SDK, dates and versions with an unusable filter: a null value is false before the filter is read
    (`_is_unmatchable_null`), anything else is inconclusive."""
    return FALSE if v is None else INCONCLUSIVE


def _codes(hits: Any, n: int, negate: bool) -> np.ndarray:
    """TRUE/FALSE codes (int8) from an iterable of booleans, flipped when `negate`."""
    out = np.fromiter(hits, dtype=np.bool_, count=n)
    if negate:
        out = ~out
    return out.astype(np.int8)


def _sdk_text(value: Any) -> str | None:
    """The SDK's `_value_to_string`: strings as-is, JSON values as compact JSON, None when it raises."""
    return to_text(value)


# ---------------------------------------------------------------- exact / is_not


def _exact(value: Any, negate: bool, version: int) -> _Built:
    if isinstance(value, tuple):
        value = list(value)
    items = value if isinstance(value, list) else [value]
    server = _exact_server(value, negate, version)
    sdk, problem = _exact_sdk(value, items, negate, version)
    strs: StrsFn | None = None
    plain_text = value is not None and problem is None and all(isinstance(i, str) for i in items)
    if plain_text and not (is_boolish(value) and (version != 2 or value == [])):
        targets = frozenset(item.lower() for item in items)

        def strs(values: list[str]) -> np.ndarray:
            return _codes(map(targets.__contains__, map(str.lower, values)), len(values), negate)

    return _Built(server, sdk, problem, strs, strs)


def _exact_server(value: Any, negate: bool, version: int) -> ValueFn:
    """The service's exact / is_not: compute_exact_match in `match_property`."""
    if value is None:
        return _NEVER
    if is_boolish(value) and (version != 2 or value == []):
        target = truthy(value)

        def by_truth(v: Any, now: dt.datetime) -> int:
            return TRUE if (truthy(v) == target) != negate else FALSE

        return by_truth
    if isinstance(value, list):
        s_targets = frozenset(service_text(item).lower() for item in value)

        def listed(v: Any, now: dt.datetime) -> int:
            return TRUE if (service_text(v).lower() in s_targets) != negate else FALSE

        return listed
    s_single = service_text(value).lower()

    def single(v: Any, now: dt.datetime) -> int:
        return TRUE if (service_text(v).lower() == s_single) != negate else FALSE

    return single


def _exact_sdk(value: Any, items: list[Any], negate: bool, version: int) -> tuple[ValueFn, str | None]:
    """The SDK's exact / is_not, `_match_exact_property` (the property text is computed first: a datetime
    is inconclusive), and the problem when the value has no JSON text."""
    if any(_sdk_text(item) is None for item in items):
        return _UNDECIDABLE, f"value {value!r} has no JSON text (the SDK cannot compare it)"
    if value == []:

        def own_truth(v: Any, now: dt.datetime) -> int:
            if _sdk_text(v) is None:
                return INCONCLUSIVE
            return TRUE if truthy(v) != negate else FALSE

        return own_truth, None
    if version != 2 and is_boolish(value):
        k_target = truthy(value)

        def by_truth(v: Any, now: dt.datetime) -> int:
            if _sdk_text(v) is None:
                return INCONCLUSIVE
            return TRUE if (truthy(v) == k_target) != negate else FALSE

        return by_truth, None
    k_targets = frozenset(str(_sdk_text(item)).lower() for item in items)

    def listed(v: Any, now: dt.datetime) -> int:
        text = _sdk_text(v)
        if text is None:
            return INCONCLUSIVE
        return TRUE if (text.lower() in k_targets) != negate else FALSE

    return listed, None


# ---------------------------------------------------------------- text


def _text(operator: str, value: Any) -> _Built:
    negate = operator.startswith("not_")
    base = operator.removeprefix("not_")
    test: Callable[[str, str], bool] = {
        "icontains": str.__contains__,
        "starts_with": str.startswith,
        "ends_with": str.endswith,
    }[base]
    if value is None:
        server: ValueFn = _NEVER
    else:
        s_needle = ascii_lower(service_text(value))

        def server(v: Any, now: dt.datetime) -> int:
            return TRUE if test(ascii_lower(service_text(v)), s_needle) != negate else FALSE

    k_text = _sdk_text(value)
    problem = None
    if k_text is None:
        problem = f"the value of {operator} must be text, got {value!r}"
        sdk: ValueFn = _UNDECIDABLE
    else:
        k_needle = ascii_lower(k_text)

        def sdk(v: Any, now: dt.datetime) -> int:
            text = _sdk_text(v)
            if text is None:
                return INCONCLUSIVE
            return TRUE if test(ascii_lower(text), k_needle) != negate else FALSE

    if isinstance(value, str):
        needle = ascii_lower(value)

        def strs(values: list[str]) -> np.ndarray:
            # str.lower equals ASCII-only lowering on ASCII text, and runs in C
            lowered = map(str.lower, values) if all(map(str.isascii, values)) else map(ascii_lower, values)
            return _codes(map(test, lowered, repeat(needle)), len(values), negate)

        return _Built(server, sdk, problem, strs, strs, arrow_strs=_arrow_text(base, needle, negate))
    return _Built(server, sdk, problem)


def _arrow_text(base: str, needle: str, negate: bool) -> ArrowFn:
    """`strs` of a text operator over a pyarrow string array: Arrow's `ascii_lower` lowers the ASCII letters
    only, as `ascii_lower` does (and `str.lower` on ASCII text), and a substring / prefix / suffix test on
    UTF-8 bytes answers as on the text (UTF-8 never matches inside a character)."""

    def arrow(values: Any) -> np.ndarray:
        import pyarrow.compute as pc

        fn = {"icontains": pc.match_substring, "starts_with": pc.starts_with, "ends_with": pc.ends_with}[base]
        hits = np.asarray(fn(pc.ascii_lower(values), needle), dtype=bool)
        return (hits != negate).view(np.int8)

    return arrow


def _multi(operator: str, value: Any) -> _Built:
    """icontains_multi / not_icontains_multi: any of the needles (a list, or one value) in the text."""
    negate = operator.startswith("not_")
    if value is None:
        return _Built(_NEVER, _UNDECIDABLE)
    needles = [ascii_lower(service_text(v)) for v in (value if isinstance(value, list) else [value])]

    def server(v: Any, now: dt.datetime) -> int:
        hay = ascii_lower(service_text(v))
        return TRUE if any(n in hay for n in needles) != negate else FALSE

    return _Built(server, _UNDECIDABLE)


# ---------------------------------------------------------------- regex


def _regex_server(value: Any, negate: bool) -> tuple[ValueFn, Pattern | None]:
    """regex / not_regex in server mode: the answer function and the pattern compiled in the service's
    dialect (None when there is no value or the service rejects the pattern); kept apart from `_regex`,
    which also builds the SDK's side and the fast paths."""
    if value is None:
        return _NEVER, None
    s_pattern = compile_pattern(service_text(value))
    if s_pattern is None:
        return _NEVER, None  # an invalid pattern never matches, for regex and not_regex alike
    if s_pattern.unknown is not None:
        # the service runs it, the engine cannot say how: unknown for every value (issue 34); SERVER_ONLY
        # is the code both the dict and the frame paths keep as unknown in server mode
        return _const(SERVER_ONLY), s_pattern
    s_search = s_pattern.search

    def server(v: Any, now: dt.datetime) -> int:
        hit = s_search(service_text(v))
        if hit is None:  # past the backtrack bound: the service reads the error as no match
            return FALSE
        return TRUE if hit != negate else FALSE

    return server, s_pattern


def _regex(value: Any, negate: bool) -> _Built:
    """regex / not_regex: the service's answer (`_regex_server`), the SDK's, the fast paths over many
    strings, and the filter's problem or why the service's answer is unknown."""
    server, s_pattern = _regex_server(value, negate)
    # sdk: `_match_regex_property` / `_match_regex` - the pattern is str(value); "" always matches; what the
    # SDK sends to the server (sdk_support) is inconclusive; a pattern Python's `re` refuses is False for
    # both operators; otherwise the pattern means the same in both dialects and the service's answers.
    k_source = str(value)
    k_pattern = compile_pattern(k_source)
    python_ok = _python_compiles(k_source)
    support = sdk_support(k_source)

    def sdk(v: Any, now: dt.datetime) -> int:
        text = _sdk_text(v)
        if text is None:
            return INCONCLUSIVE
        if k_source == "":
            return FALSE if negate else TRUE
        if support.defers:
            return INCONCLUSIVE
        if not python_ok:
            return FALSE
        if support.defers_value(text) or k_pattern is None:
            return INCONCLUSIVE
        hit = k_pattern.search(text)
        if hit is None:
            return INCONCLUSIVE
        return TRUE if hit != negate else FALSE

    server_strs: StrsFn | None = None
    sdk_strs: StrsFn | None = None
    if isinstance(value, str) and s_pattern is not None and s_pattern.engine == "rust":
        search = s_pattern.search

        def server_strs(values: list[str]) -> np.ndarray:
            return _codes((bool(search(s)) for s in values), len(values), negate)

        value_traits = (
            support.word_class or support.space_class or (support.end_anchor and support.quantified)
        )
        if python_ok and value != "" and not support.defers and not value_traits:
            sdk_strs = server_strs
    elif isinstance(value, str) and s_pattern is None and value != "":
        server_strs = lambda values: np.zeros(len(values), dtype=np.int8)  # noqa: E731
    problem = None
    if value is None or s_pattern is None:
        problem = (
            f"invalid regex {value!r} for the service's dialect (Rust regex / fancy_regex): it never "
            "matches, for regex and not_regex alike; fix the pattern"
        )
    unknown = None
    if s_pattern is not None and s_pattern.unknown is not None:
        unknown = (
            f"regex {service_text(value)!r} uses {s_pattern.unknown}, which fancy_regex (the service) runs "
            "but the engine does not model: the service's answer is unknown"
        )
    return _Built(server, sdk, problem, server_strs, sdk_strs, server_unknown=unknown)


def _python_compiles(pattern: str) -> bool:
    """Whether Python's `re` (which the SDK compiles patterns with) accepts the pattern."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # FutureWarning on "[[" (a POSIX class in Rust syntax)
        try:
            re.compile(pattern)
        except (re.error, OverflowError, RecursionError):
            return False
    return True


# ---------------------------------------------------------------- numeric


_NUMERIC_COMPARE: dict[str, Callable[[float, float], bool]] = {
    "gt": lambda a, b: a > b,
    "gte": lambda a, b: a >= b,
    "lt": lambda a, b: a < b,
    "lte": lambda a, b: a <= b,
}


def _numeric(operator: str, value: Any) -> _Built:
    compare = _NUMERIC_COMPARE[operator]
    s_target = None if value is None else svc.service_number(value)
    problems = []
    if s_target is None:
        server: ValueFn = _NEVER
        problems.append("the service reads it as no number")
    else:
        target = s_target

        def server(v: Any, now: dt.datetime) -> int:
            number = svc.service_number(v)
            return TRUE if number is not None and compare(number, target) else FALSE

    k_target = sdk.parse_number(value)
    if k_target is None:
        sdk_fn: ValueFn = _UNDECIDABLE
        problems.append("the SDK needs a finite number")
    else:
        k_value = k_target

        def sdk_fn(v: Any, now: dt.datetime) -> int:
            number = sdk.parse_number(v)
            return TRUE if number is not None and compare(number, k_value) else FALSE

    problem = (
        f"the value of {operator} must be a number, got {value!r} ({'; '.join(problems)})"
        if problems
        else None
    )
    return _Built(server, sdk_fn, problem)


def _between(negate: bool, value: Any) -> _Built:
    """between / not_between: inclusive [min, max] from a two-element numeric list with min <= max."""
    bounds = None
    if isinstance(value, (list, tuple)) and len(value) == 2:
        low, high = svc.service_number(value[0]), svc.service_number(value[1])
        if low is not None and high is not None and low == low and high == high and low <= high:
            bounds = (low, high)
    if bounds is None:
        return _Built(
            _NEVER,
            _UNDECIDABLE,
            f"between/not_between needs a two-number list [min, max] with min <= max, got {value!r}",
        )
    low, high = bounds

    def server(v: Any, now: dt.datetime) -> int:
        number = svc.service_number(v)
        if number is None or number != number:  # not a number, or NaN: no match for either operator
            return FALSE
        return TRUE if (low <= number <= high) != negate else FALSE

    return _Built(server, _UNDECIDABLE)


# ---------------------------------------------------------------- dates


def _dates(operator: str, value: Any) -> _Built:
    compare: Callable[[Any, Any], bool] = {
        "is_date_before": lambda a, b: a < b,
        "is_date_after": lambda a, b: a > b,
        "is_date_exact": lambda a, b: a == b,
    }[operator]
    problems = []
    s_target = None if value is None else svc.date_filter(value)
    if s_target is None or (
        not isinstance(value, str) or svc.parse_instant(value, dt.datetime.now(dt.UTC)) is None
    ):
        problems.append("the service cannot read it as a date")
    if s_target is None:
        server: ValueFn = _NEVER
    else:
        target_at = s_target

        def server(v: Any, now: dt.datetime) -> int:
            when = svc.property_instant(v, now)
            if when is None:
                return FALSE
            target = target_at(now)
            if target is None:
                return FALSE
            return TRUE if compare(when, target) else FALSE

    sdk_fn: ValueFn = _UNDECIDABLE if operator == "is_date_exact" else _null_false_else_undecidable
    if operator != "is_date_exact":
        try:
            if isinstance(value, (list, dict, tuple, bool)) or value is None:
                raise ValueError(value)
            sdk.resolve_date_filter(value, dt.datetime(2000, 6, 15, tzinfo=dt.UTC))
            k_target = sdk.compile_date_filter(value)
        except (ValueError, OverflowError):
            problems.append("the SDK cannot read it as a date")
        else:
            k_at = k_target

            def sdk_fn(v: Any, now: dt.datetime) -> int:
                if v is None:
                    return FALSE
                try:
                    when = k_at(now)
                except ValueError:
                    return INCONCLUSIVE
                if isinstance(v, dt.datetime):
                    return (
                        TRUE
                        if compare(v if v.tzinfo is not None else v.replace(tzinfo=dt.UTC), when)
                        else FALSE
                    )
                if isinstance(v, dt.date):
                    return TRUE if compare(v, when.date()) else FALSE
                if isinstance(v, str):
                    parsed = sdk._parse_value_text(v, now)
                    if parsed is None:
                        return INCONCLUSIVE
                    return TRUE if compare(parsed, when) else FALSE
                return INCONCLUSIVE

    problem = None
    if problems:
        problem = (
            f"the value of {operator} must be an ISO 8601 date (2024-05-01, 2024-05-01T10:00:00Z) or "
            f"relative (-7d, -2w), got {value!r}"
        )
    return _Built(server, sdk_fn, problem)


# ---------------------------------------------------------------- semver


def _semver(operator: str, value: Any) -> _Built:
    problems = []
    server: ValueFn = _NEVER
    if value is not None:
        if operator in SEMVER_RANGE:
            req = svc.service_requirement(operator, value)
            if req is not None:
                matches = req.matches

                def server(v: Any, now: dt.datetime) -> int:
                    version = svc.service_version(v)
                    return TRUE if version is not None and matches(version) else FALSE
        else:
            wanted = svc.service_version(value)
            if wanted is not None:
                key = wanted.key()
                cmp = sdk._SEMVER_COMPARE[operator]

                def server(v: Any, now: dt.datetime) -> int:
                    version = svc.service_version(v)
                    return TRUE if version is not None and cmp(version.key(), key) else FALSE

    if server is _NEVER:
        problems.append("the service cannot parse it")

    sdk_fn: ValueFn = _null_false_else_undecidable
    try:
        if isinstance(value, (list, dict, tuple, bool)) or value is None:
            raise ValueError(value)
        if operator in SEMVER_RANGE:
            lower, upper = sdk._semver_bounds(operator, value)

            def k_test(version: tuple[int, int, int]) -> bool:
                return lower <= version < upper
        else:
            k_wanted = sdk.parse_semver(value)
            k_cmp = sdk._SEMVER_COMPARE[operator]

            def k_test(version: tuple[int, int, int]) -> bool:
                return k_cmp(version, k_wanted)
    except ValueError:
        problems.append("the SDK cannot parse it")
    else:

        def sdk_fn(v: Any, now: dt.datetime) -> int:
            if v is None:
                return FALSE
            try:
                version = sdk.parse_semver(v)
            except (ValueError, TypeError):
                return INCONCLUSIVE
            return TRUE if k_test(version) else FALSE

    problem = None
    if problems:
        problem = (
            f"the value of {operator} must be a version like '1.2.3', got {value!r} ({'; '.join(problems)})"
        )
    return _Built(server, sdk_fn, problem)
