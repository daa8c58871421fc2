"""The parameters every entry point that evaluates flags over many persons shares, checked in one place.

``flags`` always means *which flag keys* (one key, a list of keys, or None for every flag) and
``definitions`` always the flag definitions, in `simulate`, `evaluate_frame`, `FrameEvaluator`, `WhatIf`,
`simulate_dask`, `simulate_spark` and `simulate_sql`. A property the persons have no column for is unknown
(``missing_columns="unknown"``, the default everywhere): the service would read the person's stored value, so
an answer that depends on it is NA with reason ``missing_property``, and one `MissingPropertyWarning` says
which flags, which properties and how many answers; ``missing_columns="not_set"`` reads a missing column as
"not set" and must be asked for.

Before this module, `evaluate_frame` and `FrameEvaluator` took the definitions as ``flags`` and defaulted to
"not_set" (issue 34: 6,000 answers read ``False`` at one door and NA at the other). The old spelling still
works for one release: definitions passed where keys belong are taken as definitions with a `FutureWarning`
(`retired_flags_argument`).
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Literal

__all__ = [
    "MISSING_COLUMNS",
    "MissingColumns",
    "MissingPropertyWarning",
    "caller_level",
    "check_missing_columns_value",
    "flag_keys",
    "retired_flags_argument",
    "warn_absent_properties",
    "warn_missing_properties",
]

MissingColumns = Literal["unknown", "not_set"]
MISSING_COLUMNS: tuple[str, ...] = ("unknown", "not_set")
"""``missing_columns=``: a property the persons have no column for is "unknown" (the default: the service
would read the person's stored value, so an answer that depends on it is NA) or "not_set"."""

MissingReport = Mapping[str, tuple[tuple[str, ...], int]]
"""{flag key: (the absent properties it reads, answers they made NA)}: `FrameEvaluator.missing_report`."""


class MissingPropertyWarning(UserWarning):
    """Flags read properties the persons have no column for: the answers that depend on them are NA
    (reason ``missing_property``). Add the columns, use ``engine="remote"``, or pass
    ``missing_columns="not_set"`` when a missing column does mean "not set"."""


def check_missing_columns_value(value: Any) -> MissingColumns | None:
    """``"unknown"`` / ``"not_set"`` as given, else None (each door raises its own error type naming both)."""
    if value == "unknown":
        return "unknown"
    if value == "not_set":
        return "not_set"
    return None


def caller_level() -> int:
    """The stacklevel of the first frame outside this package (the analyst's cell), for `warnings.warn`."""
    skip = (os.path.dirname(os.path.dirname(__file__)), os.path.dirname(threading.__file__))
    frame, level = sys._getframe(2), 2
    while frame is not None and frame.f_code.co_filename.startswith(skip):
        frame, level = frame.f_back, level + 1  # type: ignore[assignment]
    # none outside (the client's loop thread): the line in this package that warned
    return level if frame is not None else 2


def warn_missing_properties(report: MissingReport, rows: int) -> None:
    """One `MissingPropertyWarning` naming how many flags and answers absent properties made NA, each
    flag with what it needs, and the fixes; nothing when the report is empty. Every door builds its warning
    here, from the engine's own report, so the counts are the cells' counts."""
    report = {key: value for key, value in report.items() if value[1] > 0}
    if not report:
        return
    total = sum(count for _, count in report.values())
    parts = [
        f"{key!r} needs {', '.join(labels)} ({count:,} row{'s' if count != 1 else ''})"
        for key, (labels, count) in report.items()
    ]
    shown = "; ".join(parts[:10]) + (f"; and {len(parts) - 10} more flags" if len(parts) > 10 else "")
    warnings.warn(
        f"{len(report)} flag{'s' if len(report) != 1 else ''} read properties the property sets have no "
        f"column for, so {total:,} answer{'s' if total != 1 else ''} (over {rows:,} rows) are NA: {shown}. "
        "Add the column(s), or use engine='remote' (the service reads the stored properties), or pass "
        "missing_columns='not_set' if a missing column means the property is not set.",
        MissingPropertyWarning,
        stacklevel=caller_level(),
    )


def warn_absent_properties(absent: Mapping[str, tuple[str, ...]]) -> None:
    """The lazy runs' `MissingPropertyWarning` (Dask, Spark: the rows are not counted until computed):
    which flags read which properties no column holds; nothing when none do."""
    if not absent:
        return
    parts = [f"{key!r} needs {', '.join(labels)}" for key, labels in absent.items()]
    shown = "; ".join(parts[:10]) + (f"; and {len(parts) - 10} more flags" if len(parts) > 10 else "")
    warnings.warn(
        f"{len(absent)} flag{'s' if len(absent) != 1 else ''} read properties the frame has no column "
        f"for: {shown}. Their answers are NA (reason missing_property) wherever a row depends on them; "
        "summary()'s unknown column counts them. Add the column(s), or pass missing_columns='not_set' if a "
        "missing column means the property is not set.",
        MissingPropertyWarning,
        stacklevel=caller_level(),
    )


def _is_keys(value: Any) -> bool:
    """One flag key or a sequence of keys (as opposed to definitions in any `read_definitions` shape)."""
    if isinstance(value, str):
        text = value.strip()
        # JSON text or a path to a definitions file, not a key (PostHog's keys are [A-Za-z0-9_-]+)
        return not (text.startswith(("{", "[")) or text.endswith(".json") or os.sep in text)
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        return len(value) > 0 and all(isinstance(v, str) for v in value)
    return False


def retired_flags_argument(flags: Any, definitions: Any, *, where: str) -> tuple[Any, Any]:
    """``(flags, definitions)`` with the retired spelling taken for one release: definitions given as
    ``flags`` (``evaluate_frame(frame, defs)``, ``FrameEvaluator(frame, defs)``, ``run(edited)``) are the
    definitions, with a `FutureWarning` naming the new spelling."""
    if flags is None or definitions is not None or _is_keys(flags):
        return flags, definitions
    name = where.split("(")[0]
    warnings.warn(
        f"{where}: the flag definitions now go in definitions= ({name}(..., definitions=defs)); flags= "
        "means which flag keys, as in simulate. The old spelling works until the next release.",
        FutureWarning,
        stacklevel=caller_level(),
    )
    return None, flags


def flag_keys(flags: Any, *, where: str) -> tuple[str, ...] | None:
    """``flags=`` as a tuple of keys (None: every flag); anything else is a TypeError naming the fix."""
    if flags is None:
        return None
    if isinstance(flags, str):
        return (flags,)
    if isinstance(flags, Sequence) and all(isinstance(k, str) for k in flags):
        return tuple(flags)
    raise TypeError(
        f"{where}: flags= takes flag keys (a key or a list of keys), got {type(flags).__name__}; "
        "pass the flag definitions as definitions=."
    )
