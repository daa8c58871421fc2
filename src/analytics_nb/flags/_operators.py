"""Property-filter operators: validation of the filter value, and matching one present property value.

Every matcher returns an outcome code: TRUE, FALSE, or INCONCLUSIVE (the official SDK could not decide
locally, e.g. an unparsable date). In server mode the caller turns INCONCLUSIVE into FALSE, which is
what the flags service does with a value it cannot compare.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from itertools import repeat
from typing import Any, Final

import numpy as np

from analytics_nb.flags._values import ascii_lower, is_boolish, to_text, truthy

FALSE: Final = 0
TRUE: Final = 1
INCONCLUSIVE: Final = 2
#: The official SDK stops the whole flag and asks the server (an unknown cohort): no later condition helps.
SERVER_ONLY: Final = 3

EQUALITY = ("exact", "is_not")
PRESENCE = ("is_set", "is_not_set")
TEXT = ("icontains", "not_icontains", "starts_with", "not_starts_with", "ends_with", "not_ends_with")
REGEX = ("regex", "not_regex")
NUMERIC = ("gt", "gte", "lt", "lte")
DATES = ("is_date_before", "is_date_after", "is_date_exact")
SEMVER_CMP = ("semver_eq", "semver_neq", "semver_gt", "semver_gte", "semver_lt", "semver_lte")
SEMVER_RANGE = ("semver_tilde", "semver_caret", "semver_wildcard")
PROPERTY_OPERATORS: Final = frozenset(
    EQUALITY + PRESENCE + TEXT + REGEX + NUMERIC + DATES + SEMVER_CMP + SEMVER_RANGE
)
#: Operators the flags service supports but the official Python SDK 7.91.1 does not evaluate locally.
SERVER_ONLY_OPERATORS: Final = frozenset({"is_date_exact"})
#: Operators that match when the property is absent (server mode).
NEGATIVE_OPERATORS: Final = frozenset(
    {"is_not", "not_icontains", "not_regex", "not_starts_with", "not_ends_with", "is_not_set"}
)

MatchFn = Callable[[Any, bool, dt.datetime], int]


@dataclass(frozen=True, slots=True)
class PropertyMatcher:
    """A validated property filter: `match(value, server, now)` for a present value."""

    key: str
    operator: str
    negative: bool
    sdk_supported: bool
    match: MatchFn
    #: optional fast path: outcome codes for a list of plain strings (same answers as `match`)
    match_strs: Callable[[list[str]], np.ndarray] | None = None

    def missing(self, server: bool) -> int:
        """The outcome when the property is absent: server mode answers, SDK mode cannot."""
        if server:
            return TRUE if self.negative else FALSE
        return INCONCLUSIVE


def prepare_property(key: str, operator: str, value: Any) -> PropertyMatcher:
    """Validate a property filter and build its matcher; raises ValueError describing a bad value."""
    if operator not in PROPERTY_OPERATORS:
        known = ", ".join(sorted(PROPERTY_OPERATORS))
        raise ValueError(f"unknown operator {operator!r}; use one of {known}")
    if operator in EQUALITY:
        fn = _prepare_exact(value, negate=operator == "is_not")
    elif operator in PRESENCE:
        fn = _const(TRUE if operator == "is_set" else FALSE)
    elif operator in TEXT:
        fn = _prepare_text(operator, value)
    elif operator in REGEX:
        fn = _prepare_regex(value, negate=operator == "not_regex")
    elif operator in NUMERIC:
        fn = _prepare_numeric(operator, value)
    elif operator in DATES:
        fn = _prepare_date(operator, value)
    else:
        fn = _prepare_semver(operator, value)
    return PropertyMatcher(
        key,
        operator,
        operator in NEGATIVE_OPERATORS,
        operator not in SERVER_ONLY_OPERATORS,
        fn,
        getattr(fn, "match_strs", None),
    )


def _const(code: int) -> MatchFn:
    def match(v: Any, server: bool, now: dt.datetime) -> int:
        return code

    return match


# ---------------------------------------------------------------- exact / is_not


def _check_scalar_json(value: Any, what: str) -> str:
    text = to_text(value)
    if text is None:
        raise ValueError(f"{what} {value!r} is not a JSON value")
    return text


def _prepare_exact(value: Any, *, negate: bool) -> MatchFn:
    if isinstance(value, tuple):
        value = list(value)
    if isinstance(value, dict):
        raise ValueError(
            "the value of exact/is_not must be a string, number, bool or a list of them, not a dict"
        )
    if value == []:

        def test(v: Any, text: str) -> bool:
            return truthy(v)
    elif is_boolish(value):
        target = truthy(value)

        def test(v: Any, text: str) -> bool:
            return truthy(v) == target
    elif isinstance(value, list):
        targets = frozenset(_check_scalar_json(item, "list item").lower() for item in value)

        def test(v: Any, text: str) -> bool:
            return text.lower() in targets
    else:
        single = _check_scalar_json(value, "value").lower()

        def test(v: Any, text: str) -> bool:
            return text.lower() == single

    def match(v: Any, server: bool, now: dt.datetime) -> int:
        text = to_text(v, datetimes_as_iso=server)
        if text is None:
            return INCONCLUSIVE
        return TRUE if test(v, text) != negate else FALSE

    if isinstance(value, list) and value and not is_boolish(value):
        match.match_strs = lambda strs: _codes(  # type: ignore[attr-defined]
            map(targets.__contains__, map(str.lower, strs)), len(strs), negate
        )
    elif not isinstance(value, list) and not is_boolish(value):
        match.match_strs = lambda strs: _codes(  # type: ignore[attr-defined]
            map(single.__eq__, map(str.lower, strs)), len(strs), negate
        )
    return match


def _codes(hits: Any, n: int, negate: bool) -> np.ndarray:
    """TRUE/FALSE codes (int8) from an iterable of booleans, flipped when `negate`."""
    out = np.fromiter(hits, dtype=np.bool_, count=n)
    if negate:
        out = ~out
    return out.astype(np.int8)


# ---------------------------------------------------------------- text


def _text_filter_value(value: Any, operator: str) -> str:
    if isinstance(value, (list, dict, tuple)) or value is None:
        raise ValueError(f"the value of {operator} must be a string (or a number), got {value!r}")
    text = to_text(value)
    if text is None:
        raise ValueError(f"the value of {operator} must be a string (or a number), got {value!r}")
    return text


def _prepare_text(operator: str, value: Any) -> MatchFn:
    needle = ascii_lower(_text_filter_value(value, operator))
    negate = operator.startswith("not_")
    base = operator.removeprefix("not_")

    def match(v: Any, server: bool, now: dt.datetime) -> int:
        text = to_text(v, datetimes_as_iso=server)
        if text is None:
            return INCONCLUSIVE
        hay = ascii_lower(text)
        if base == "icontains":
            hit = needle in hay
        elif base == "starts_with":
            hit = hay.startswith(needle)
        else:
            hit = hay.endswith(needle)
        return TRUE if hit != negate else FALSE

    test = {"icontains": str.__contains__, "starts_with": str.startswith, "ends_with": str.endswith}[base]

    def match_strs(strs: list[str]) -> np.ndarray:
        # str.lower equals ASCII-only lowering on ASCII text, and runs in C
        lowered = map(str.lower, strs) if all(map(str.isascii, strs)) else map(ascii_lower, strs)
        return _codes(map(test, lowered, repeat(needle)), len(strs), negate)

    match.match_strs = match_strs  # type: ignore[attr-defined]
    return match


# ---------------------------------------------------------------- regex


def strict_end_anchors(pattern: str) -> str:
    """Rewrite unescaped ``$`` outside character classes as ``\\Z``: the service's regex engine has no
    "before a final newline" match for ``$``, Python's has."""
    out: list[str] = []
    i, in_class = 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
        elif c == "[":
            in_class = True
            if pattern[i + 1 : i + 2] == "^":
                out.append("[^")
                i += 2
                if pattern[i : i + 1] == "]":
                    out.append("]")
                    i += 1
                continue
            if pattern[i + 1 : i + 2] == "]":
                out.append("[]")
                i += 2
                continue
        elif c == "$":
            out.append(r"\Z")
            i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _prepare_regex(value: Any, *, negate: bool) -> MatchFn:
    if isinstance(value, (list, dict, tuple)) or value is None:
        raise ValueError(f"the regex value must be a pattern string, got {value!r}")
    pattern = str(value)
    try:
        compiled = re.compile(strict_end_anchors(pattern))
    except re.error as exc:
        raise ValueError(f"invalid regex {pattern!r}: {exc}") from None
    search = compiled.search

    def match(v: Any, server: bool, now: dt.datetime) -> int:
        text = to_text(v, datetimes_as_iso=server)
        if text is None:
            return INCONCLUSIVE
        return TRUE if (search(text) is not None) != negate else FALSE

    match.match_strs = lambda strs: _codes(  # type: ignore[attr-defined]
        (search(s) is not None for s in strs), len(strs), negate
    )
    return match


# ---------------------------------------------------------------- numeric

_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def parse_number(value: Any) -> float | None:
    """A finite float from a number or a plain numeric string ("12", "-1.5e3"); None otherwise (bools too)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        if _NUMBER.fullmatch(value) is None:
            return None
    elif not isinstance(value, (int, float, Decimal)):
        return None
    try:
        number = float(value)
    except (ValueError, OverflowError):
        return None
    if number != number or number in (float("inf"), float("-inf")):
        return None
    return number


def _prepare_numeric(operator: str, value: Any) -> MatchFn:
    target = parse_number(value)
    if target is None:
        raise ValueError(f"the value of {operator} must be a finite number or numeric string, got {value!r}")
    compare = _NUMERIC_COMPARE[operator]

    def match(v: Any, server: bool, now: dt.datetime) -> int:
        number = parse_number(v)
        if number is None:
            return FALSE
        return TRUE if compare(number, target) else FALSE

    return match


_NUMERIC_COMPARE: dict[str, Callable[[float, float], bool]] = {
    "gt": lambda a, b: a > b,
    "gte": lambda a, b: a >= b,
    "lt": lambda a, b: a < b,
    "lte": lambda a, b: a <= b,
}

# ---------------------------------------------------------------- dates

_RELATIVE = re.compile(r"^-?(?P<number>[0-9]+)(?P<unit>[a-z])$")


_YEAR_ONLY = re.compile(r"\d{4}")
_SPACED_OFFSET = re.compile(r" ([+-]\d{2}:\d{2})$")


def parse_datetime_text(text: str, now: dt.datetime) -> dt.datetime:
    """Parse an ISO-ish date string ("2024-01-02", "...Z", "... UTC", a bare year) to an aware datetime."""
    s = text.strip()
    if s.endswith("Z"):
        s = s[:-1] + "+00:00"
    elif s.upper().endswith(" UTC"):
        s = s[:-4] + "+00:00"
    elif len(s) == 4 and _YEAR_ONLY.fullmatch(s):
        return dt.datetime(int(s), now.month, now.day, tzinfo=dt.UTC)
    # " +05:00" -> "+05:00"; the pattern is exactly 7 characters at the end, so test that cheaply first.
    if len(s) >= 7 and s[-7] == " ":
        s = _SPACED_OFFSET.sub(r"\1", s)
    parsed = dt.datetime.fromisoformat(s)
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=dt.UTC)


#: Parsed property-value texts that do not depend on `now` (a datetime, or None when unparsable).
_PARSED_TEXT: dict[str, dt.datetime | None] = {}
_PARSED_TEXT_MAX = 4096


def _parse_value_text(text: str, now: dt.datetime) -> dt.datetime | None:
    """parse_datetime_text for a property value, memoised (a bare year depends on `now`: never memoised);
    None when the text is not a date."""
    try:
        return _PARSED_TEXT[text]
    except KeyError:
        pass
    try:
        parsed: dt.datetime | None = parse_datetime_text(text, now)
    except (ValueError, OverflowError):
        parsed = None
    if len(text.strip()) != 4:
        if len(_PARSED_TEXT) >= _PARSED_TEXT_MAX:
            _PARSED_TEXT.clear()
        _PARSED_TEXT[text] = parsed
    return parsed


def _months_back(when: dt.datetime, months: int) -> dt.datetime | None:
    index = when.year * 12 + when.month - 1 - months
    year, month = divmod(index, 12)
    if not 1 <= year <= 9999:
        return None
    day = when.day
    # Clamp the day through every intermediate month (Mar 31 - 2 months -> Jan 28 via Feb 28).
    for step in range(when.year * 12 + when.month - 2, index - 1, -1):
        if day <= 28:
            break
        y, m = divmod(step, 12)
        day = min(day, _days_in_month(y, m + 1))
    return when.replace(year=year, month=month + 1, day=day)


def _days_in_month(year: int, month: int) -> int:
    return calendar.monthrange(year, month)[1]


def resolve_relative(text: str, now: dt.datetime) -> dt.datetime | bool | None:
    """A relative date ("-7d", "-2w", "-24h", "-3m", "-1y") resolved against `now`.

    Returns False when `text` is not relative, None when it is relative but out of range.
    """
    m = _RELATIVE.search(text)
    if m is None:
        return False
    number, unit = int(m.group("number")), m.group("unit")
    if number >= 10_000:
        return None
    if unit == "h":
        return now - dt.timedelta(hours=number)
    if unit == "d":
        return now - dt.timedelta(days=number)
    if unit == "w":
        return now - dt.timedelta(weeks=number)
    if unit == "m":
        return _months_back(now, number)
    if unit == "y":
        year = now.year - number
        if not 1 <= year <= 9999:
            return None
        day = 28 if number > 0 and (now.month, now.day) == (2, 29) else now.day
        return now.replace(year=year, day=day)
    return None


def resolve_date_filter(value: Any, now: dt.datetime) -> dt.datetime:
    """The instant a date filter value stands for at `now`; raises ValueError when it is not a date."""
    text = str(value)
    relative = resolve_relative(text, now)
    if relative is None:
        raise ValueError(f"relative date {text!r} is out of range")
    if relative is not False:
        return relative  # type: ignore[return-value]
    try:
        return parse_datetime_text(text, now)
    except (ValueError, OverflowError):
        raise ValueError(
            f"date value {value!r} is neither ISO 8601 (2024-05-01, 2024-05-01T10:00:00Z) "
            "nor relative (-7d, -2w)"
        ) from None


def compile_date_filter(value: Any) -> Callable[[dt.datetime], dt.datetime]:
    """Parse a date filter value once; returns `target(now)`, the instant it stands for at `now`.

    A relative value ("-7d") keeps its parsed offset and is subtracted from each `now`; an absolute one is
    parsed once (a bare year still follows `now`'s month and day). `target` raises ValueError like
    resolve_date_filter when the result is out of range.
    """
    text = str(value)
    m = _RELATIVE.search(text)
    if m is not None:
        number, unit = int(m.group("number")), m.group("unit")
        delta = {"h": dt.timedelta(hours=1), "d": dt.timedelta(days=1), "w": dt.timedelta(weeks=1)}.get(unit)
        if number < 10_000 and delta is not None:
            try:
                offset = delta * number
            except OverflowError:
                offset = None
            if offset is not None:

                def shifted(now: dt.datetime) -> dt.datetime:
                    try:
                        return now - offset
                    except OverflowError:
                        return resolve_date_filter(value, now)

                return shifted
        return lambda now: resolve_date_filter(value, now)
    stripped = text.strip()
    if len(stripped) == 4 and _YEAR_ONLY.fullmatch(stripped):
        return lambda now: resolve_date_filter(value, now)
    try:
        fixed = parse_datetime_text(text, dt.datetime(2000, 6, 15, tzinfo=dt.UTC))
    except (ValueError, OverflowError):
        return lambda now: resolve_date_filter(value, now)
    return lambda now: fixed


def _prepare_date(operator: str, value: Any) -> MatchFn:
    if isinstance(value, (list, dict, tuple, bool)) or value is None:
        raise ValueError(f"the value of {operator} must be a date string, got {value!r}")
    probe = dt.datetime(2000, 6, 15, tzinfo=dt.UTC)
    resolve_date_filter(value, probe)
    sdk_exact = operator == "is_date_exact"
    target = compile_date_filter(value)

    def compare(a: Any, b: Any) -> int:
        if operator == "is_date_before":
            return TRUE if a < b else FALSE
        if operator == "is_date_after":
            return TRUE if a > b else FALSE
        return TRUE if a == b else FALSE

    def match(v: Any, server: bool, now: dt.datetime) -> int:
        if sdk_exact and not server:
            return INCONCLUSIVE
        when = target(now)
        if isinstance(v, dt.datetime):
            return compare(v if v.tzinfo is not None else v.replace(tzinfo=dt.UTC), when)
        if isinstance(v, dt.date):
            return compare(v, when.date())
        if isinstance(v, str):
            parsed = _parse_value_text(v, now)
            if parsed is None:
                return INCONCLUSIVE
            return compare(parsed, when)
        if server and isinstance(v, (int, float)) and not isinstance(v, bool):
            try:
                return compare(dt.datetime.fromtimestamp(v, dt.UTC), when)
            except (ValueError, OverflowError, OSError):
                return FALSE
        return INCONCLUSIVE

    return match


# ---------------------------------------------------------------- semver


def _semver_part(part: str) -> int:
    if not part or not part.isdigit():
        raise ValueError(f"invalid version number part {part!r}")
    if len(part) > 1 and part[0] == "0":
        raise ValueError(f"version number part {part!r} has a leading zero")
    return int(part)


def parse_semver(value: Any) -> tuple[int, int, int]:
    """(major, minor, patch) from "v1.2.3-beta+build"; missing parts are 0. Raises ValueError."""
    text = str(value).strip().lstrip("vV")
    text = text.split("-")[0].split("+")[0]
    parts = text.split(".")
    if not parts[0]:
        raise ValueError("empty version")
    major = _semver_part(parts[0])
    minor = _semver_part(parts[1]) if len(parts) > 1 and parts[1] else 0
    patch = _semver_part(parts[2]) if len(parts) > 2 and parts[2] else 0
    return (major, minor, patch)


def _semver_bounds(operator: str, value: Any) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    if operator == "semver_wildcard":
        cleaned = str(value).strip().lstrip("vV").replace("*", "").rstrip(".")
        parts = [p for p in cleaned.split(".") if p]
        if not parts:
            raise ValueError("empty wildcard pattern")
        nums = [_semver_part(p) for p in parts[:3]]
        if len(nums) == 1:
            return (nums[0], 0, 0), (nums[0] + 1, 0, 0)
        if len(nums) == 2:
            return (nums[0], nums[1], 0), (nums[0], nums[1] + 1, 0)
        return (nums[0], nums[1], nums[2]), (nums[0], nums[1], nums[2] + 1)
    major, minor, patch = parse_semver(value)
    if operator == "semver_tilde":
        return (major, minor, patch), (major, minor + 1, 0)
    if major > 0:
        upper = (major + 1, 0, 0)
    elif minor > 0:
        upper = (0, minor + 1, 0)
    else:
        upper = (0, 0, patch + 1)
    return (major, minor, patch), upper


_SEMVER_COMPARE: dict[str, Callable[[tuple[int, int, int], tuple[int, int, int]], bool]] = {
    "semver_eq": lambda a, b: a == b,
    "semver_neq": lambda a, b: a != b,
    "semver_gt": lambda a, b: a > b,
    "semver_gte": lambda a, b: a >= b,
    "semver_lt": lambda a, b: a < b,
    "semver_lte": lambda a, b: a <= b,
}


def _prepare_semver(operator: str, value: Any) -> MatchFn:
    if isinstance(value, (list, dict, tuple, bool)) or value is None:
        raise ValueError(f"the value of {operator} must be a version string like '1.2.3', got {value!r}")
    try:
        if operator in SEMVER_RANGE:
            lower, upper = _semver_bounds(operator, value)

            def test(version: tuple[int, int, int]) -> bool:
                return lower <= version < upper
        else:
            wanted = parse_semver(value)
            cmp = _SEMVER_COMPARE[operator]

            def test(version: tuple[int, int, int]) -> bool:
                return cmp(version, wanted)
    except ValueError as exc:
        raise ValueError(f"the value of {operator} must be a version like '1.2.3': {exc}") from None

    def match(v: Any, server: bool, now: dt.datetime) -> int:
        try:
            version = parse_semver(v)
        except (ValueError, TypeError):
            return INCONCLUSIVE
        return TRUE if test(version) else FALSE

    return match
