"""What today's flags service does with numbers, dates and versions (server mode).

Facts, each from PostHog/posthog rust/feature-flags/src/ (read, not copied):

* numbers: `properties/property_matching.rs` `to_f64_representation` - a JSON number as f64, anything
  else through its text and Rust's `f64::from_str` (so "inf", "Infinity", "NaN", "1e400" are numbers;
  " 5" and "0x10" are not);
* dates: `determine_parsed_date_for_property_matching` (a numeric string or a number is epoch seconds),
  `parse_date_string_in_tz` (relative dates, RFC 3339 with its own offset, naive dates and date-times in
  the team's time zone, then a lenient UTC fallback) and `properties/relative_date.rs`
  `parse_relative_date_in_tz` (``-?N[hdwmy]``, N < 10,000, calendar months/years on the team's wall clock);
* versions: `normalize_version_string` (strip one lowercase ``v``, trim), `canonicalize_version_string`
  (strip leading zeros of numeric parts, pad to three parts, keep pre-release/build) and the `semver`
  crate's `Version`/`VersionReq` (strict parsing, pre-release ordering, pre-releases only match a
  requirement naming the same major.minor.patch).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from analytics_nb.flags._sdk_rules import _months_back, parse_datetime_text
from analytics_nb.flags._values import service_text

# ---------------------------------------------------------------------------------------------- numbers

#: Rust's f64 grammar: optional sign, then inf/infinity/nan (any case) or a decimal with optional exponent.
_RUST_F64 = re.compile(r"[+-]?(?:(?i:inf|infinity|nan)|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)")


def rust_f64(text: str) -> float | None:
    """`text.parse::<f64>()`: a float (possibly inf/nan) or None when Rust would refuse it."""
    if _RUST_F64.fullmatch(text) is None:
        return None
    try:
        return float(text)
    except (ValueError, OverflowError):  # pragma: no cover - the grammar above only admits floats
        return None


def service_number(value: Any) -> float | None:
    """`to_f64_representation`: numbers as f64 (huge integers become +-inf as serde_json reads them),
    other values through their service text; None when not a number (bools, null, text)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        try:
            return float(value)
        except OverflowError:
            return math.inf if value > 0 else -math.inf
    if isinstance(value, float):
        return value
    return rust_f64(service_text(value))


# ---------------------------------------------------------------------------------------------- time zones


@lru_cache(maxsize=64)
def team_zone(name: str) -> dt.tzinfo:
    """The team's time zone by IANA name ("UTC", "Europe/Berlin"); ValueError names the fix."""
    if name in ("UTC", "utc", "Etc/UTC"):
        return dt.UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"timezone {name!r} is not an IANA time zone name; use e.g. 'UTC' or 'Europe/Berlin' "
            "(the project's timezone setting)"
        ) from None


def _localize(naive: dt.datetime, tz: dt.tzinfo) -> dt.datetime | None:
    """A wall-clock time in `tz` as an aware instant: the earlier one in a DST overlap, None in a DST gap
    (`relative_date.rs` `naive_to_utc_in_tz`)."""
    if tz is dt.UTC:
        return naive.replace(tzinfo=dt.UTC)
    aware = naive.replace(tzinfo=tz, fold=0)
    back = aware.astimezone(dt.UTC).astimezone(tz)
    if back.replace(tzinfo=None) != naive:
        return None
    return aware


# ---------------------------------------------------------------------------------------------- dates

_RELATIVE = re.compile(r"-?([0-9]+)([hdwmy])")
_RFC3339 = re.compile(r"(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2}(?:\.\d+)?)([Zz]|[+-]\d{2}:\d{2})")
_DATE_ONLY = re.compile(r"\d{4}-\d{2}-\d{2}")
_NAIVE = re.compile(r"(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2})(?::(\d{2})(\.\d+)?)?")


def _fraction(text: str | None) -> int:
    """Microseconds of a ``.123456789`` fraction (nanoseconds truncated)."""
    if not text:
        return 0
    return int((text[1:] + "000000")[:6])


#: An instant here is an integer count of nanoseconds since 1970-01-01T00:00:00Z, so that the service's
#: whole date range (chrono `NaiveDate::MIN` / `MAX`, years -262143 to 262142) compares, not only Python's
#: years 1 to 9999: "-9999y" is year -7973 there (`relative_date.rs` `parse_relative_date_naive`).
Instant = int

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_NS = 1_000_000_000
_MIN_YEAR, _MAX_YEAR = -262_143, 262_142
_CYCLE_YEARS, _CYCLE_DAYS = 400, 146_097  # the Gregorian calendar repeats every 400 years


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days from 1970-01-01 to a proleptic Gregorian date of any year."""
    cycles = (year - 1) // _CYCLE_YEARS  # brings the year into 1..400, where Python's calendar works
    year -= cycles * _CYCLE_YEARS
    return (dt.date(year, month, day) - dt.date(1970, 1, 1)).days + cycles * _CYCLE_DAYS


_MIN_NS = _days_from_civil(_MIN_YEAR, 1, 1) * 86_400 * _NS
_MAX_NS = (_days_from_civil(_MAX_YEAR, 12, 31) + 1) * 86_400 * _NS - 1


def instant(aware: dt.datetime) -> Instant:
    """An aware datetime as an instant (its microseconds kept)."""
    return (aware - _EPOCH) // dt.timedelta(microseconds=1) * 1000


def _years_back(when: dt.datetime, years: int, tz: dt.tzinfo) -> Instant | None:
    """`when` (a wall clock in `tz`) `years` calendar years back, as an instant; Feb 29 becomes Feb 28 in
    a common year. Years before 1 are computed 400-year cycles later (same calendar, the zone's earliest
    offset) and shifted back."""
    year = when.year - years
    day = when.day
    if when.month == 2 and day == 29 and not (year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)):
        day = 28
    if year >= 1:
        local = _localize(when.replace(year=year, day=day), tz)
        return None if local is None else instant(local)
    cycles = (1 - year + _CYCLE_YEARS - 1) // _CYCLE_YEARS
    local = _localize(when.replace(year=year + cycles * _CYCLE_YEARS, day=day), tz)
    if local is None:
        return None
    return instant(local) - cycles * _CYCLE_DAYS * 86_400 * _NS


def relative_instant(text: str, now: dt.datetime) -> Instant | bool | None:
    """A relative date resolved on the team's wall clock (`now` is aware, in the team's zone).

    False when `text` is not relative; None when it is but out of range.
    """
    m = _RELATIVE.fullmatch(text)
    if m is None:
        return False
    number, unit = int(m.group(1)), m.group(2)
    if number >= 10_000 or now.tzinfo is None:
        return None
    wall = now.replace(tzinfo=None)
    if unit == "y":
        return _years_back(wall, number, now.tzinfo)
    try:
        if unit == "h":
            result: dt.datetime | None = wall - dt.timedelta(hours=number)
        elif unit == "d":
            result = wall - dt.timedelta(days=number)
        elif unit == "w":
            result = wall - dt.timedelta(weeks=number)
        else:
            result = _months_back(wall, number)
    except OverflowError:
        return None
    local = None if result is None else _localize(result, now.tzinfo)
    return None if local is None else instant(local)


def parse_instant(text: str, now: dt.datetime) -> Instant | None:
    """`parse_date_string_in_tz`: the instant a date text stands for, naive values in `now`'s zone."""
    relative = relative_instant(text, now)
    if relative is not False:
        return relative
    parsed = _parse_absolute(text, now)
    return None if parsed is None else instant(parsed)


def _parse_absolute(text: str, now: dt.datetime) -> dt.datetime | None:
    tz = now.tzinfo or dt.UTC
    try:
        m = _RFC3339.fullmatch(text)
        if m is not None:
            offset = m.group(3)
            offset = "+00:00" if offset in ("Z", "z") else offset
            base = dt.datetime.fromisoformat(f"{m.group(1)}T{m.group(2)[:8]}{offset}")
            return base.replace(microsecond=_fraction(m.group(2)[8:] or None))
        if _DATE_ONLY.fullmatch(text):
            return _localize(dt.datetime.fromisoformat(text), tz)
        m = _NAIVE.fullmatch(text)
        if m is not None:
            naive = dt.datetime.fromisoformat(f"{m.group(1)}T{m.group(2)}:{m.group(3) or '00'}")
            return _localize(naive.replace(microsecond=_fraction(m.group(4))), tz)
    except ValueError:
        return None
    # the lenient fallback (`dateparser::parse`) reads naive values as UTC
    try:
        return parse_datetime_text(text, now.astimezone(dt.UTC))
    except (ValueError, OverflowError):
        return None


def epoch_instant(seconds: float) -> Instant | None:
    """`parse_float_timestamp`: `floor(seconds) as i64` seconds plus `round(fmod(seconds, 1) * 1e9) as u32`
    nanoseconds, with Rust's saturating casts: NaN is 0 seconds and 0 ns (1970-01-01, so the text "NaN"
    is a date), a negative fraction is 0 ns (-1.5 is -2 s), infinities are out of range (None), as is
    anything outside chrono's years."""
    if math.isnan(seconds):
        return 0
    if math.isinf(seconds):
        return None
    whole = math.floor(seconds)
    fraction = math.fmod(seconds, 1.0)
    nanos = min(round(fraction * 1e9), 2**32 - 1) if fraction > 0 else 0
    if nanos >= _NS:
        return None  # chrono refuses a nanosecond count of a second or more here
    value = whole * _NS + nanos
    return value if _MIN_NS <= value <= _MAX_NS else None


def property_instant(value: Any, now: dt.datetime) -> Instant | None:
    """`determine_parsed_date_for_property_matching`: a property value as an instant, or None."""
    if isinstance(value, str):
        number = rust_f64(value)
        if number is not None:
            return epoch_instant(number)
        return parse_instant(value, now)
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        try:
            return epoch_instant(float(value))
        except OverflowError:
            return None
    if isinstance(value, (dt.datetime, dt.date)):
        # a datetime travels as its ISO text, so a naive one is read in the team's zone
        return parse_instant(value.isoformat(), now)
    return None


def date_filter(value: Any) -> Callable[[dt.datetime], Instant | None] | None:
    """The filter side of a date operator: `target(now)`, or None when the filter is not a string (the
    service then never matches)."""
    if not isinstance(value, str):
        return None
    if _RELATIVE.fullmatch(value) is None and not _DATE_ONLY.fullmatch(value):
        fixed_probe = parse_instant(value, dt.datetime(2000, 6, 15, tzinfo=dt.UTC))
        if fixed_probe is not None and _RFC3339.fullmatch(value):
            return lambda now: fixed_probe
    last: list[Any] = [None, None]

    def target(now: dt.datetime) -> Instant | None:
        if last[0] is not now:
            last[0], last[1] = now, parse_instant(value, now)
        return last[1]

    return target


# ---------------------------------------------------------------------------------------------- versions

_NUMERIC_ID = re.compile(r"0|[1-9][0-9]*")
_ID = re.compile(r"[0-9A-Za-z-]+")


@dataclass(frozen=True, slots=True, order=False)
class Version:
    """A strict semver version as the `semver` crate parses it (build metadata kept: it takes part in
    equality and ordering there)."""

    major: int
    minor: int
    patch: int
    pre: tuple[str, ...]
    build: tuple[str, ...]

    def key(self) -> tuple[Any, ...]:
        # no pre-release sorts after any pre-release of the same core
        pre = (1,) if not self.pre else (0, *(_ident_key(p) for p in self.pre))
        return (self.major, self.minor, self.patch, pre, tuple(_ident_key(b) for b in self.build))


def _ident_key(ident: str) -> tuple[int, Any]:
    if ident.isdigit():
        return (0, int(ident))
    return (1, ident)


def _strip_zeros(part: str) -> str:
    if part and part.isascii() and part.isdigit():
        return part.lstrip("0") or "0"
    return part


def _canonical(text: str) -> str:
    cut = min((i for i in (text.find("-"), text.find("+")) if i >= 0), default=len(text))
    core, suffix = text[:cut], text[cut:]
    parts = [_strip_zeros(p) for p in core.split(".")]
    while len(parts) < 3:
        parts.append("0")
    return ".".join(parts) + suffix


def _parse_strict(text: str) -> Version | None:
    core, _, build = text.partition("+")
    core, _, pre = core.partition("-")
    parts = core.split(".")
    if len(parts) != 3 or not all(p.isascii() and _NUMERIC_ID.fullmatch(p) for p in parts):
        return None
    pre_ids: tuple[str, ...] = ()
    if "-" in text.partition("+")[0]:
        pre_ids = tuple(pre.split("."))
        for ident in pre_ids:
            if not _ID.fullmatch(ident) or (ident.isdigit() and not _NUMERIC_ID.fullmatch(ident)):
                return None
    build_ids: tuple[str, ...] = ()
    if "+" in text:
        build_ids = tuple(build.split("."))
        if not all(_ID.fullmatch(b) for b in build_ids):
            return None
    return Version(int(parts[0]), int(parts[1]), int(parts[2]), pre_ids, build_ids)


def service_version(value: Any) -> Version | None:
    """`to_semver_representation`: the property or filter value as a version, None when unparsable."""
    text = service_text(value)
    text = (text[1:] if text.startswith("v") else text).strip()
    return _parse_strict(_canonical(text))


@dataclass(frozen=True, slots=True)
class Requirement:
    """A `VersionReq` made of one range: lower bound (inclusive), upper bound (exclusive, None = none),
    and the core (major, minor, patch) whose pre-releases it admits."""

    lower: Version | None
    upper: tuple[int, int, int] | None
    pre_core: tuple[int, int, int] | None

    def matches(self, v: Version) -> bool:
        if self.lower is not None and v.key()[:4] < self.lower.key()[:4]:
            return False
        if self.upper is not None and (v.major, v.minor, v.patch) >= self.upper:
            return False
        if v.pre:
            # the semver crate: a pre-release matches only when a comparator names the same core with a
            # pre-release of its own
            return self.pre_core is not None and (v.major, v.minor, v.patch) == self.pre_core
        return True


def _caret_upper(parts: list[int]) -> tuple[int, int, int]:
    if len(parts) == 1:
        return (parts[0] + 1, 0, 0)
    if len(parts) == 2:
        return (parts[0] + 1, 0, 0) if parts[0] > 0 else (0, parts[1] + 1, 0)
    if parts[0] > 0:
        return (parts[0] + 1, 0, 0)
    if parts[1] > 0:
        return (0, parts[1] + 1, 0)
    return (0, 0, parts[2] + 1)


def service_requirement(operator: str, value: Any) -> Requirement | None:
    """The `VersionReq` the service builds for semver_tilde / semver_caret / semver_wildcard, or None when
    `VersionReq::parse` would refuse it (the filter then never matches)."""
    text = service_text(value)
    normalized = (text[1:] if text.startswith("v") else text).strip()
    if operator in ("semver_tilde", "semver_caret"):
        version = _parse_strict(_canonical(normalized))
        if version is None:
            return None
        core = (version.major, version.minor, version.patch)
        if operator == "semver_tilde":
            upper = (version.major, version.minor + 1, 0)
        else:
            upper = _caret_upper([version.major, version.minor, version.patch])
        return Requirement(version, upper, core if version.pre else None)
    # wildcard: numeric parts (leading zeros stripped) then x/X/* wildcards; a bare version is a caret req
    pattern = ".".join(_strip_zeros(p) for p in normalized.split(".")).replace("*", "x")
    parts = pattern.split(".")
    if not 1 <= len(parts) <= 3:
        return None
    if parts[0] in ("x", "X") and len(parts) > 1:
        # semver `VersionReq::from_str`: a leading wildcard stands alone ("x.x": UnexpectedAfterWildcard)
        return None
    numbers: list[int] = []
    wild = False
    for p in parts:
        if p in ("x", "X"):
            wild = True
            continue
        if wild or not (p.isascii() and _NUMERIC_ID.fullmatch(p)):
            return None  # a number after a wildcard ("1.*.3"), or not a number
        numbers.append(int(p))
    if not numbers:
        return Requirement(None, None, None)
    if wild or len(numbers) < 3:
        padded = [*numbers, 0, 0, 0]
        lower = Version(padded[0], padded[1], padded[2], (), ())
        if wild:
            upper = (numbers[0] + 1, 0, 0) if len(numbers) == 1 else (numbers[0], numbers[1] + 1, 0)
        else:
            upper = _caret_upper(numbers)
        return Requirement(lower, upper, None)
    lower = Version(numbers[0], numbers[1], numbers[2], (), ())
    return Requirement(lower, _caret_upper(numbers), None)
