"""Local simulation: the flag engine's `FrameEvaluator` over definitions (fetched or passed in)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd

if TYPE_CHECKING:
    from analytics_nb.flags import FrameEvaluator

from analytics_nb.simulation._definitions import Definitions
from analytics_nb.simulation._errors import SimulationInputError
from analytics_nb.simulation._inputs import PropertySets
from analytics_nb.simulation._output import select_flags

__all__ = ["check_group_mapping", "conform", "make_evaluator", "run_local"]


def check_group_mapping(sets: PropertySets, defs: Definitions) -> None:
    """Group keys given but no index -> type mapping: the group flags would silently ignore them."""
    if defs.group_type_mapping or not sets.group_key_columns:
        return
    for flag in defs.flags:
        index = (flag.get("filters") or {}).get("aggregation_group_type_index")
        if index is not None:
            types = ", ".join(repr(t) for t in sets.group_key_columns)
            raise SimulationInputError(
                f"flag {flag['key']!r} aggregates by group type index {index}, but the definitions carry no "
                f"group_type_mapping to say which of the group columns ({types}) that is; pass "
                f"group_type_mapping={{'{index}': '<type>'}} or definitions from "
                "client.feature_flags.local_evaluation().",
                key=str(flag["key"]),
            )


def make_evaluator(
    sets: PropertySets, defs: Definitions, *, mode: Literal["server", "sdk"] = "server"
) -> FrameEvaluator:
    """A `FrameEvaluator` over the property sets; it caches hashes so what-if re-runs are fast."""
    from analytics_nb.flags import FrameEvaluator

    check_group_mapping(sets, defs)
    return FrameEvaluator(
        sets.engine_frame(),
        defs.flags,
        mode=mode,
        cohorts=defs.cohorts or None,
        group_type_mapping=defs.group_type_mapping or None,
    )


def conform(
    frame: pd.DataFrame, sets: PropertySets, keys: Sequence[str] | None, *, payloads: bool, reasons: bool
) -> pd.DataFrame:
    """Engine output in the result conventions: input index, distinct_id first, chosen flags, error last."""
    if len(frame) == len(sets.frame) and not frame.index.equals(sets.frame.index):
        frame = frame.set_axis(sets.frame.index, axis=0)
    if "distinct_id" not in frame.columns:
        frame = frame.assign(distinct_id=sets.frame["distinct_id"])
    return select_flags(frame, keys, payloads=payloads, reasons=reasons)


def run_local(
    evaluator: Any,
    sets: PropertySets,
    keys: Sequence[str] | None,
    *,
    flags: list[dict[str, Any]] | None = None,
    payloads: bool = True,
    reasons: bool = False,
) -> pd.DataFrame:
    """Evaluate every flag (dependencies need them all), then keep ``keys``."""
    out = evaluator.run(flags, payloads=payloads, reasons=reasons)
    return conform(out, sets, keys, payloads=payloads, reasons=reasons)
