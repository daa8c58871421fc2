"""`SimulationResult.verify`: check a sample of a result's rows against PostHog's own answer and explanation.

PostHog explains one person's answer for one flag (``test_evaluation``, posthog-notes §11; PostHog/posthog
#55149; `client.feature_flags.test_evaluation`). It reads the person's **stored** properties, so it is an
oracle for rows that carry a real person's properties (a PostHog export, the project's persons); for a row
whose properties are not the stored ones the check says so (``cause``) instead of calling the answer wrong.
A row the service has no person for is counted as "person not found", and a cell the simulation left NA
(unknown) is counted, not compared: neither is a mismatch.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd

from analytics_nb.client import Core, FeatureFlags
from analytics_nb.errors import NotFoundError, PostHogError
from analytics_nb.simulation._errors import SimulationInputError
from analytics_nb.wire.cells import is_missing, plain_value

if TYPE_CHECKING:
    from analytics_nb.models import FlagTestEvaluation
    from analytics_nb.simulation._result import SimulationResult

__all__ = ["MISMATCH_COLUMNS", "Verification", "averify_result"]

#: The columns of `Verification.mismatches` (and of `Verification.checks`, which adds ``status``).
MISMATCH_COLUMNS = [
    "row",
    "distinct_id",
    "flag",
    "simulated",
    "posthog",
    "reason",
    "condition_index",
    "cause",
    "explanation",
]
CONCURRENCY = 4  # test_evaluation is a private-API call (480/min by default): a few in flight


@dataclass(repr=False)
class Verification:
    """What `SimulationResult.verify` found: ``mismatches`` (one row per differing (row, flag)),
    ``checks`` (every check with its ``status``: agree / differ / person not found / unknown here /
    error) and ``summary``, one line."""

    mismatches: pd.DataFrame
    checks: pd.DataFrame
    summary: str

    def __repr__(self) -> str:
        return self.summary

    def _repr_html_(self) -> str:
        return f"<p><b>{self.summary}</b></p>" + self.mismatches.head(20).to_html(index=False)


def _same(a: Any, b: Any) -> bool:
    """A flag value as the result holds it equals the service's (True/False/variant text)."""
    a, b = plain_value(a), plain_value(b)
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return str(a) == str(b)


def _same_property(given: Any, stored: Any) -> bool:
    given, stored = plain_value(given), plain_value(stored)
    if isinstance(given, int | float) and isinstance(stored, int | float) and not isinstance(given, bool):
        return math.isclose(float(given), float(stored))
    return str(given) == str(stored)


def _differing(row: Mapping[str, Any], person_columns: Sequence[str], stored: Mapping[str, Any]) -> list[str]:
    """The row's properties whose value is not the person's stored one (a missing cell is not compared)."""
    out = []
    for col in person_columns:
        value = row.get(col)
        if is_missing(value):
            continue
        if col not in stored or not _same_property(value, stored[col]):
            out.append(col)
    return out


def _explanation(answer: FlagTestEvaluation) -> str:
    """PostHog's explanation of its answer: the deciding condition's text and its property verdicts."""
    parts = []
    for cond in answer.conditions:
        if answer.condition_index is not None and cond.index != answer.condition_index:
            continue
        props = "; ".join(p.explanation or "" for p in cond.properties if p.explanation)
        parts.append(f"condition {cond.index}: {cond.explanation or ''}" + (f" ({props})" if props else ""))
    return " | ".join(parts) or str(answer.reason or "")


def _sample(result: SimulationResult, n: int, seed: int) -> pd.DataFrame:
    frame = result.source.collect(inputs=True)  # pandas whichever engine answered
    usable = frame[frame["error"].isna()] if "error" in frame.columns else frame
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise SimulationInputError(f"n={n!r} must be a positive number of rows to check (default 50).")
    return usable.sample(n=min(n, len(usable)), random_state=seed) if len(usable) else usable


def _groups(row: Mapping[str, Any]) -> dict[str, Any] | None:
    found = {
        str(k)[len("group:") :]: plain_value(v)
        for k, v in row.items()
        if str(k).startswith("group:") and str(k).count(":") == 1 and not is_missing(v)
    }
    return found or None


async def _ask(
    flags: FeatureFlags,
    flag_id: int,
    distinct_id: str,
    groups: dict[str, Any] | None,
    gate: asyncio.Semaphore,
) -> Any:
    async with gate:
        try:
            return await flags.test_evaluation(flag_id, distinct_id=distinct_id, groups=groups)
        except NotFoundError:
            return "person not found"
        except PostHogError as exc:
            return f"error: {exc}"


def _check(
    label: Any, row: Mapping[str, Any], key: str, answer: Any, person_columns: Sequence[str]
) -> dict[str, Any]:
    """One check's record: its status and, for a mismatch, why."""
    simulated = row.get(key)
    record = dict.fromkeys(MISMATCH_COLUMNS)
    record.update(row=label, distinct_id=row["distinct_id"], flag=key, simulated=plain_value(simulated))
    if isinstance(answer, str):
        record.update(status=answer.split(":", 1)[0], cause=answer)
        return record
    record.update(
        posthog=answer.result,
        reason=answer.reason,
        condition_index=answer.condition_index,
        explanation=_explanation(answer),
    )
    if is_missing(simulated):
        record["status"] = "unknown here"
    elif _same(simulated, answer.result):
        record["status"] = "agree"
    else:
        record["status"] = "differ"
        differing = _differing(row, person_columns, answer.person_properties)
        record["cause"] = (
            f"the row's {', '.join(differing)} differ from the person's stored value(s): PostHog evaluated "
            "the stored person"
            if differing
            else "PostHog answers otherwise for the same properties (see explanation)"
        )
    return record


def _summary(checks: pd.DataFrame, rows: int, flags: int) -> str:
    counts = checks["status"].value_counts() if len(checks) else pd.Series(dtype=int)

    def count(status: str) -> str:
        return f"{int(counts.get(status, 0)):,}"

    differ = checks[checks["status"] == "differ"] if len(checks) else checks
    stored = int(differ["cause"].str.startswith("the row's").sum()) if len(differ) else 0
    return (
        f"verify: {rows:,} rows x {flags:,} flags = {len(checks):,} checks against PostHog's "
        f"test_evaluation: {count('agree')} agree, {count('differ')} differ ({stored:,} where the row's "
        f"properties are not the person's), {count('person not found')} person not found, "
        f"{count('unknown here')} unknown here, {count('error')} errors"
    )


async def averify_result(
    result: SimulationResult, core: Core, *, n: int, flags: Sequence[str] | None, seed: int
) -> Verification:
    """`SimulationResult.verify` on ``core``'s loop: sample, ask, compare."""
    keys = result._keys(flags)
    sample = _sample(result, n, seed)
    resource = FeatureFlags(core)
    ids = {f.key: f.id for f in await resource.list() if f.key in keys and f.id is not None}
    missing = [k for k in keys if k not in ids]
    if missing:
        raise SimulationInputError(
            f"flag(s) {', '.join(map(repr, missing))} are not in the project's flag list, so PostHog cannot "
            "explain them; pass flags= with keys it has.",
            key=missing[0],
        )
    gate = asyncio.Semaphore(CONCURRENCY)
    person_columns = [c for c in result.input_columns if not c.startswith("group:") and c not in ("ip",)]
    person_columns = [c for c in person_columns if c != "person_id"]
    rows = [(label, dict(zip(sample.columns, values, strict=True))) for label, values in sample.iterrows()]
    asks = [
        _ask(resource, ids[k], str(row["distinct_id"]), _groups(row), gate) for _, row in rows for k in keys
    ]
    answers = iter(await asyncio.gather(*asks))
    records = [_check(label, row, k, next(answers), person_columns) for label, row in rows for k in keys]
    checks = pd.DataFrame.from_records(records, columns=[*MISMATCH_COLUMNS, "status"])
    mismatches = checks[checks["status"] == "differ"][MISMATCH_COLUMNS].reset_index(drop=True)
    return Verification(mismatches, checks, _summary(checks, len(rows), len(keys)))
