"""What the official SDK posthog 7.91.1 does locally with numbers, dates and versions (sdk mode).

Facts from posthog/feature_flags.py (7.91.1): `_parse_numeric_value` (finite numbers and plain numeric
strings only), `_parse_date_filter` / `relative_date_parse_for_feature_flag_matching` (ISO dates, naive
values read as UTC, relative "-7d"), `parse_semver` / `_tilde_bounds` / `_caret_bounds` /
`_wildcard_bounds` (three numeric parts, no leading zeros, pre-release and build dropped).
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

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
