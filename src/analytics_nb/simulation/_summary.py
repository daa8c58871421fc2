"""Per-flag value counts with 95% Wilson confidence intervals, and crosstabs of a flag against a property."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from analytics_nb.flags._door import caller_level

__all__ = [
    "SUMMARY_COLUMNS",
    "UNKNOWN_NOTE_SHARE",
    "Z95",
    "UnknownShareWarning",
    "add_counts",
    "summarize",
    "summary_from_counts",
    "unknown_note",
    "value_counts",
    "warn_unknown",
    "wilson_interval",
]

Z95 = 1.959963984540054
"""The two-sided 95% normal quantile."""


def wilson_interval(count: Any, n: Any, z: float = Z95) -> tuple[Any, Any]:
    """Wilson score interval for ``count`` successes out of ``n`` (scalars or arrays); NaN where n == 0.

    Wilson rather than the normal approximation because shares near 0% or 100% are common in rollouts.

    Args:
        count: Successes (a scalar or an array).
        n: Trials (a scalar or an array).
        z: The normal quantile; the default gives a 95% interval.

    Returns:
        ``(low, high)`` shares.
    """
    k = np.asarray(count, dtype=float)
    m = np.asarray(n, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = k / m
        z2 = z * z
        denom = 1.0 + z2 / m
        center = (p + z2 / (2.0 * m)) / denom
        half = z * np.sqrt(p * (1.0 - p) / m + z2 / (4.0 * m * m)) / denom
        low = np.clip(center - half, 0.0, 1.0)
        high = np.clip(center + half, 0.0, 1.0)
    low = np.where(m > 0, low, np.nan)
    high = np.where(m > 0, high, np.nan)
    if low.ndim == 0:
        return float(low), float(high)
    return low, high


def _value_order(values: Sequence[Any], variants: Sequence[str] | None) -> list[Any]:
    """True first, then the variants in definition order, then other values sorted, False last."""
    present = list(dict.fromkeys(values))
    head: list[Any] = [v for v in (True,) if any(x is True for x in present)]
    ordered_variants = [v for v in (variants or []) if v in present]
    rest = sorted(
        (v for v in present if not isinstance(v, bool) and v not in ordered_variants), key=lambda v: str(v)
    )
    tail: list[Any] = [False] if any(x is False for x in present) else []
    return [*head, *ordered_variants, *rest, *tail]


ValueCounts = dict[tuple[str, Any], int]
"""Counts of one flag's known values, keyed ``("b", True)`` / ``("s", "control")`` (True never merges
with 1)."""


def _tag(v: Any) -> tuple[str, Any]:
    return ("b", v) if isinstance(v, bool) else ("s", v)


def value_counts(frame: pd.DataFrame, flag_keys: Sequence[str]) -> dict[str, tuple[ValueCounts, int]]:
    """Per flag: (counts of its known values, rows with an unknown value). Counts of parts of a frame add up
    to the counts of the whole (`add_counts`), which is how the distributed summary combines partitions."""
    out: dict[str, tuple[ValueCounts, int]] = {}
    for key in flag_keys:
        col = frame[key]
        known_mask = col.notna().to_numpy(dtype=bool)
        known = col[known_mask]
        counts: ValueCounts = {}
        for v in known.tolist():
            k = _tag(bool(v) if isinstance(v, bool | np.bool_) else v)
            counts[k] = counts.get(k, 0) + 1
        out[key] = (counts, len(col) - len(known))
    return out


def add_counts(
    a: dict[str, tuple[ValueCounts, int]], b: dict[str, tuple[ValueCounts, int]]
) -> dict[str, tuple[ValueCounts, int]]:
    """The counts of two parts added (flags missing from one part count as zero there)."""
    out: dict[str, tuple[ValueCounts, int]] = {}
    for key in dict.fromkeys([*a, *b]):
        ca, ua = a.get(key, ({}, 0))
        cb, ub = b.get(key, ({}, 0))
        merged = dict(ca)
        for k, c in cb.items():
            merged[k] = merged.get(k, 0) + c
        out[key] = (merged, ua + ub)
    return out


def summarize(
    frame: pd.DataFrame, flag_keys: Sequence[str], variants: dict[str, list[str]] | None = None
) -> pd.DataFrame:
    """Value counts per flag: flag, value, count, rows, share_of_rows, n (rows with a known value), share,
    ci_low, ci_high, unknown.

    ``share_of_rows`` is over every row; ``share`` (and its 95% Wilson interval) over the rows with a known
    value; ``unknown`` counts the rows where the value is NA (a property the rows lack, an error, an
    inconclusive local evaluation) so that nothing is dropped silently. When a flag is unknown for
    ``UNKNOWN_NOTE_SHARE`` of its rows or more, the table's ``attrs["note"]`` says so in one line and one
    `UnknownShareWarning` shows it (issue 34: "True 2,500, share 1.0000, unknown 7,500" read as 100% True).
    """
    return summary_from_counts(value_counts(frame, flag_keys), flag_keys, variants)


def summary_from_counts(
    counted: dict[str, tuple[ValueCounts, int]],
    flag_keys: Sequence[str],
    variants: dict[str, list[str]] | None = None,
    *,
    z: float = Z95,
) -> pd.DataFrame:
    """The `summarize` table from value counts (of a frame, or added up over a distributed frame's parts);
    ``z``: the normal quantile of the Wilson intervals (95% by default)."""
    records: list[dict[str, Any]] = []
    for key in flag_keys:
        counts, unknown = counted.get(key, ({}, 0))
        values = [v for _, v in counts]
        n = sum(counts.values())
        order = _value_order(values, (variants or {}).get(key))
        if not order:
            records.append({"flag": key, "value": pd.NA, "count": 0, "n": 0, "unknown": unknown})
            continue
        for v in order:
            records.append({"flag": key, "value": v, "count": counts[_tag(v)], "n": n, "unknown": unknown})
    out = (
        pd.DataFrame.from_records(records, columns=["flag", "value", "count", "n", "unknown"])
        if records
        else pd.DataFrame(columns=["flag", "value", "count", "n", "unknown"])
    )
    out["value"] = out["value"].astype(object)
    count = out["count"].to_numpy(dtype=float)
    totals = out["n"].to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(totals > 0, count / np.where(totals > 0, totals, 1), np.nan)
    low, high = wilson_interval(count, totals, z)
    rows = totals + out["unknown"].to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        of_rows = np.where(rows > 0, count / np.where(rows > 0, rows, 1), np.nan)
    out["share"] = share
    out["rows"] = rows.astype("int64")
    out["share_of_rows"] = of_rows
    out["ci_low"] = np.asarray(low, dtype=float)
    out["ci_high"] = np.asarray(high, dtype=float)
    out["count"] = out["count"].astype("int64")
    out["n"] = out["n"].astype("int64")
    out["unknown"] = out["unknown"].astype("int64")
    out = out[SUMMARY_COLUMNS]
    note = unknown_note(counted, flag_keys)
    if note:
        out.attrs["note"] = note
    return out


SUMMARY_COLUMNS = [
    "flag",
    "value",
    "count",
    "rows",
    "share_of_rows",
    "n",
    "share",
    "ci_low",
    "ci_high",
    "unknown",
]
"""The columns of ``summary()``, the same for every engine (local, remote, both, SQL, Dask)."""

UNKNOWN_NOTE_SHARE = 0.10
"""A flag unknown for this share of its rows or more gets the summary's one-line note."""


class UnknownShareWarning(UserWarning):
    """A summary's flag is unknown (NA) for a large share of its rows: ``share`` is over the decided rows
    only; read ``share_of_rows`` (over every row) and ``unknown`` beside it."""


def unknown_note(counted: dict[str, tuple[ValueCounts, int]], flag_keys: Sequence[str]) -> str:
    """One line naming the flags unknown for `UNKNOWN_NOTE_SHARE` of their rows or more ("" when none)."""
    heavy = []
    for key in flag_keys:
        counts, unknown = counted.get(key, ({}, 0))
        rows = sum(counts.values()) + unknown
        if rows and unknown / rows >= UNKNOWN_NOTE_SHARE:
            heavy.append(f"{key!r} {unknown:,} of {rows:,} ({unknown / rows:.0%})")
    if not heavy:
        return ""
    shown = ", ".join(heavy[:3]) + (f" and {len(heavy) - 3} more" if len(heavy) > 3 else "")
    return (
        f"unknown answers: {shown}; `share` is over the decided rows only, `share_of_rows` over every row "
        "(the frame's error / <key>:reason columns say why)."
    )


def warn_unknown(summary: pd.DataFrame) -> pd.DataFrame:
    """Show the summary's note (if any) as one `UnknownShareWarning`; returns the summary."""
    note = summary.attrs.get("note")
    if note:
        warnings.warn(note, UnknownShareWarning, stacklevel=caller_level())
    return summary


def crosstab(
    flag_values: pd.Series,
    by_values: pd.Series,
    *,
    normalize: bool | Literal["all", "index", "columns"] = False,
    margins: bool = False,
) -> pd.DataFrame:
    """A crosstab of a property (rows) against a flag's values (columns); missing values shown as "(missing)".

    ``normalize="index"`` gives each property value's variant shares.
    """
    flag = flag_values.astype(object).where(flag_values.notna(), "(unknown)")
    by = by_values.astype(object).where(by_values.notna(), "(missing)")
    flag.name, by.name = flag_values.name, by_values.name
    table = pd.crosstab(by, flag, normalize=normalize, margins=margins)
    return table


def format_share(share: float, low: float, high: float) -> str:
    """``"42.0% [38.1%, 46.0%]"``, for reprs."""
    if math.isnan(share):
        return "n/a"
    return f"{share:.1%} [{low:.1%}, {high:.1%}]"
