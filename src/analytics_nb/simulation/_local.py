"""Local simulation: the flag engine's `FrameEvaluator` over definitions (fetched or passed in).

Past ``LOCAL_CHUNK_ROWS * 2`` rows the rows are evaluated in chunks of ``LOCAL_CHUNK_ROWS`` (one evaluator
per chunk, each chunk's answers written into the preallocated result columns: every flag value depends on
its own row only, so the result is the same), which keeps the peak memory one chunk's working set plus the
result and lets a progress bar move during a long run. What-if (`WhatIf`) keeps one evaluator over all
rows, so its cached hashes serve every re-run.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from analytics_nb.client import progress_bar
from analytics_nb.flags._door import (
    MISSING_COLUMNS,
    MissingColumns,
    MissingPropertyWarning,
    check_missing_columns_value,
    warn_absent_properties,
    warn_missing_properties,
)

if TYPE_CHECKING:
    from analytics_nb.flags import FrameEvaluator

from analytics_nb.simulation._definitions import Definitions
from analytics_nb.simulation._errors import SimulationInputError
from analytics_nb.simulation._inputs import PropertySets, normalise_property_sets, release_arrow_memory
from analytics_nb.simulation._output import result_ids, select_flags

__all__ = [
    "LOCAL_CHUNK_ROWS",
    "MISSING_COLUMNS",
    "ChunkedEvaluator",
    "MissingColumns",
    "MissingPropertyWarning",
    "check_group_mapping",
    "check_missing_columns",
    "conform",
    "local_evaluator",
    "make_evaluator",
    "run_local",
    "warn_absent_columns",
    "warn_missing_properties",
]

LOCAL_CHUNK_ROWS = 200_000
"""Rows per chunk of a long local run (about 0.3 s each for 10 flags); runs over twice this many are
chunked. Memory stays one chunk's working arrays plus the result, filled in place."""


def check_missing_columns(value: Any) -> MissingColumns:
    """``missing_columns=`` checked: "unknown" or "not_set", else a `SimulationInputError` naming both."""
    checked = check_missing_columns_value(value)
    if checked is None:
        raise SimulationInputError(
            f"missing_columns={value!r}: use 'unknown' (a property without a column may have a stored value "
            "in PostHog: answers that depend on it are NA) or 'not_set' (a missing column means the "
            "property is not set)."
        )
    return checked


def warn_absent_columns(
    empty: pd.DataFrame,
    defs: Definitions,
    *,
    mode: Literal["server", "sdk"],
    keys: Sequence[str] | None,
    missing_columns: MissingColumns,
) -> None:
    """For lazy runs (Dask, Spark) that cannot count before they compute: the engine over the input's
    columns with no rows says which flags read properties no column holds; one `MissingPropertyWarning`
    names them before anything runs (the rows are counted in ``summary()``'s ``unknown``)."""
    if missing_columns != "unknown":
        return
    evaluator = make_evaluator(normalise_property_sets(empty), defs, mode=mode, missing_columns="unknown")
    evaluator.run()
    absent = {k: v for k, v in evaluator.absent_properties.items() if keys is None or k in keys}
    warn_absent_properties(absent)


def check_group_mapping(sets: PropertySets | Sequence[str], defs: Definitions) -> None:
    """Group keys given (``sets``: the property sets, or their group types) but no index -> type mapping:
    the group flags would silently ignore them, so this raises `SimulationInputError` naming the fix."""
    group_types = list(sets.group_key_columns if isinstance(sets, PropertySets) else sets)
    if defs.group_type_mapping or not group_types:
        return
    for flag in defs.flags:
        index = (flag.get("filters") or {}).get("aggregation_group_type_index")
        if index is not None:
            types = ", ".join(repr(t) for t in group_types)
            raise SimulationInputError(
                f"flag {flag['key']!r} aggregates by group type index {index}, but the definitions carry no "
                f"group_type_mapping to say which of the group columns ({types}) that is; pass "
                f"group_type_mapping={{'{index}': '<type>'}}, client= (it fills the mapping from the "
                "service) or definitions from client.feature_flags.definitions().",
                key=str(flag["key"]),
            )


def make_evaluator(
    sets: PropertySets,
    defs: Definitions,
    *,
    mode: Literal["server", "sdk"] = "server",
    now: dt.datetime | None = None,
    missing_columns: MissingColumns = "unknown",
) -> FrameEvaluator:
    """A `FrameEvaluator` over the property sets; it caches hashes so what-if re-runs are fast. ``now``: the
    instant relative dates are read against (default: now); ``missing_columns``: see `MISSING_COLUMNS`."""
    from analytics_nb.flags import FrameEvaluator

    check_group_mapping(sets, defs)
    evaluator = FrameEvaluator(
        sets.engine_frame(),
        definitions=defs.flags,
        mode=mode,
        cohorts=defs.cohorts or None,
        group_type_mapping=defs.group_type_mapping or None,
        property_matching_version=getattr(defs, "property_matching_version", None),
        now=now,
        missing_columns=missing_columns,
    )
    evaluator._warn = False  # the runner warns once for the whole run (all chunks), from the same report
    return evaluator


class ChunkedEvaluator:
    """The local engine over many rows, one `FrameEvaluator` per chunk of ``chunk_rows`` rows.

    The first chunk's evaluator is built at once (so bad definitions or a missing group mapping fail before
    any request is sent); the others are built when run and dropped after, so memory stays one chunk's.
    Relative dates ("-7d") are read against one instant, taken when this evaluator is built, in every
    chunk and every re-run (so a row's answer does not depend on which chunk holds it).
    """

    def __init__(
        self,
        sets: PropertySets,
        defs: Definitions,
        *,
        mode: Literal["server", "sdk"] = "server",
        chunk_rows: int = LOCAL_CHUNK_ROWS,
        missing_columns: MissingColumns = "unknown",
    ) -> None:
        self.sets = sets
        self.defs = defs
        self.mode: Literal["server", "sdk"] = mode
        self.chunk_rows = chunk_rows
        self.missing_columns: MissingColumns = missing_columns
        self.now = dt.datetime.now(dt.UTC)
        #: after each run, the chunks' `FrameEvaluator.missing_report` added up
        self.missing_report: dict[str, tuple[tuple[str, ...], int]] = {}
        self._first: FrameEvaluator | None = self._evaluator(0)

    def _evaluator(self, start: int) -> FrameEvaluator:
        return make_evaluator(
            self._chunk(start), self.defs, mode=self.mode, now=self.now, missing_columns=self.missing_columns
        )

    def __len__(self) -> int:
        return len(self.sets)

    def _chunk(self, start: int) -> PropertySets:
        return dataclasses.replace(self.sets, frame=self.sets.frame.iloc[start : start + self.chunk_rows])

    def run(
        self, definitions: Any = None, *, payloads: bool = False, reasons: bool = False, progress: Any = None
    ) -> pd.DataFrame:
        """Evaluate every chunk and concatenate the results (``progress.update(rows)`` after each chunk)."""
        # the ids are the input's own column (the chunks' copies of it are not kept)
        parts = _Assembly(len(self.sets), self.sets.frame["distinct_id"])
        report: dict[str, tuple[tuple[str, ...], int]] = {}
        for start in range(0, len(self.sets), self.chunk_rows):
            evaluator = self._first if start == 0 and self._first is not None else None
            if evaluator is None:
                evaluator = self._evaluator(start)
            self._first = None  # built once; later runs rebuild it like the others
            # run once and dropped: its caches are released as it goes (else the evaluator, which its
            # sources refer back to, waits for the cyclic garbage collector with every cached hash: ~45 MB
            # a 200,000-row chunk piled up until the run ended)
            evaluator._one_shot = True
            part: pd.DataFrame = evaluator.run(definitions=definitions, payloads=payloads, reasons=reasons)
            for key, (labels, count) in evaluator.missing_report.items():
                report[key] = (labels, report.get(key, ((), 0))[1] + count)
            self.missing_report = report
            parts.add(start, part)
            if progress is not None:
                progress.update(len(part))
            del part, evaluator
            release_arrow_memory()  # the chunk's Arrow temporaries, kept by Arrow's allocator otherwise
        return parts.frame()


class _Assembly:
    """The chunks' results written into the whole result's columns as they come: no list of parts and no
    concatenation, so the peak holds the result once (not the parts and their concatenation). Booleans,
    categories, Int64, object and numpy columns are filled in place; any other column (``distinct_id`` in
    its input's dtype, ``error``'s string) is kept as pieces and joined column by column at the end."""

    def __init__(self, n: int, ids: pd.Series) -> None:
        self.n = n
        self.ids = ids
        self.order: list[Any] | None = None
        self.columns: dict[Any, _Filled | list[pd.Series]] = {}

    def add(self, start: int, part: pd.DataFrame) -> None:
        if self.order is None:
            self.order = list(part.columns)
            self.columns = {
                name: _Filled.make(part[name], self.n) or [] for name in self.order if name != "distinct_id"
            }
        elif list(part.columns) != self.order:  # one set of definitions gives every chunk the same columns
            raise AssertionError("the chunks of one local run have different columns")
        for name, target in self.columns.items():
            if isinstance(target, list):
                target.append(part[name])
            else:
                target.write(start, part[name])

    def frame(self) -> pd.DataFrame:
        index = pd.RangeIndex(self.n)
        data: dict[Any, Any] = {}
        for name in self.order or []:
            if name == "distinct_id":
                data[name] = self.ids.set_axis(index, axis=0)
                continue
            target = self.columns.pop(name)
            if isinstance(target, list):
                data[name] = pd.concat(target, ignore_index=True) if target else pd.Series(index=index)
            else:
                values = target.array()
                # an object column stays object (pandas would infer `str` for all-text values)
                dtype = values.dtype if isinstance(values, np.ndarray) else None
                data[name] = pd.Series(values, index=index, dtype=dtype, copy=False)
        return pd.DataFrame(data, index=index, copy=False)


@dataclasses.dataclass
class _Filled:
    """One result column of a known kind, preallocated for every row and filled a chunk at a time."""

    kind: str
    values: np.ndarray
    mask: np.ndarray | None = None
    dtype: Any = None

    @classmethod
    def make(cls, series: pd.Series, n: int) -> _Filled | None:
        dtype = series.dtype
        if isinstance(dtype, pd.BooleanDtype):
            return cls("boolean", np.zeros(n, dtype=bool), np.zeros(n, dtype=bool))
        if isinstance(dtype, pd.Int64Dtype):
            return cls("Int64", np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool))
        if isinstance(dtype, pd.CategoricalDtype):
            return cls(
                "category",
                np.full(n, -1, dtype=np.int8 if len(dtype.categories) < 127 else np.int32),
                None,
                dtype,
            )
        if isinstance(dtype, np.dtype):
            return cls("numpy", np.empty(n, dtype=dtype))
        return None

    def write(self, start: int, series: pd.Series) -> None:
        end = start + len(series)
        if self.kind in ("boolean", "Int64"):
            assert self.mask is not None
            na = series.isna().to_numpy()
            self.values[start:end] = series.to_numpy(
                dtype=self.values.dtype, na_value=self.values.dtype.type(0)
            )
            self.mask[start:end] = na
        elif self.kind == "category":
            self.values[start:end] = self._codes(series)
        else:
            self.values[start:end] = series.to_numpy(dtype=self.values.dtype)

    def _codes(self, series: pd.Series) -> np.ndarray:
        """The chunk's category codes in this column's categories; categories it adds are appended (codes
        written before keep their meaning)."""
        if series.dtype != self.dtype:
            merged = list(dict.fromkeys([*self.dtype.categories, *series.cat.categories]))
            self.dtype = pd.CategoricalDtype(merged)
            if len(merged) >= 127 and self.values.dtype == np.int8:
                self.values = self.values.astype(np.int32)
            series = series.astype(self.dtype)
        return series.cat.codes.to_numpy()

    def array(self) -> Any:
        if self.kind == "boolean":
            assert self.mask is not None
            return pd.arrays.BooleanArray(self.values, self.mask)
        if self.kind == "Int64":
            assert self.mask is not None
            return pd.arrays.IntegerArray(self.values, self.mask)
        if self.kind == "category":
            return pd.Categorical.from_codes(self.values, dtype=self.dtype, validate=False)
        return self.values


def local_evaluator(
    sets: PropertySets,
    defs: Definitions,
    *,
    mode: Literal["server", "sdk"] = "server",
    chunk_rows: int | None = None,
    missing_columns: MissingColumns = "unknown",
) -> FrameEvaluator | ChunkedEvaluator:
    """One `FrameEvaluator` for up to ``2 * chunk_rows`` rows (default ``LOCAL_CHUNK_ROWS``), else a
    `ChunkedEvaluator` (so that a progress bar moves)."""
    chunk_rows = chunk_rows or LOCAL_CHUNK_ROWS
    if len(sets) > 2 * chunk_rows:
        return ChunkedEvaluator(sets, defs, mode=mode, chunk_rows=chunk_rows, missing_columns=missing_columns)
    return make_evaluator(sets, defs, mode=mode, missing_columns=missing_columns)


def conform(
    frame: pd.DataFrame, sets: PropertySets, keys: Sequence[str] | None, *, payloads: bool, reasons: bool
) -> pd.DataFrame:
    """Engine output in the result conventions: input index, distinct_id first (in the property sets' id
    dtype, as every door gives it: `result_ids`), chosen flags, error last."""
    if len(frame) == len(sets.frame) and not frame.index.equals(sets.frame.index):
        frame = frame.set_axis(sets.frame.index, axis=0)
    ids = sets.frame["distinct_id"]
    if "distinct_id" not in frame.columns:
        frame = frame.assign(distinct_id=ids)
    elif frame["distinct_id"].dtype != ids.dtype:
        frame = frame.assign(distinct_id=result_ids(frame["distinct_id"], ids.dtype))
    return select_flags(frame, keys, payloads=payloads, reasons=reasons)


def run_local(
    evaluator: Any,
    sets: PropertySets,
    keys: Sequence[str] | None,
    *,
    definitions: list[dict[str, Any]] | None = None,
    payloads: bool = True,
    reasons: bool = False,
    progress: bool | None = None,
) -> pd.DataFrame:
    """Evaluate every flag (dependencies need them all), then keep ``keys``.

    A `ChunkedEvaluator` (a long run) shows a ``tqdm.auto`` bar of rows unless ``progress=False`` or
    ``TQDM_DISABLE`` says otherwise. Answers made NA by properties the sets have no column for are
    reported in one `MissingPropertyWarning`.
    """
    if isinstance(evaluator, ChunkedEvaluator):
        bar = progress_bar(progress, total=len(evaluator), desc="local", unit="row")
        try:
            out = evaluator.run(definitions, payloads=payloads, reasons=reasons, progress=bar)
        finally:
            bar.close()
    else:
        # pandas here even when the caller's evaluator was built over Polars / Arrow (it answers in that
        # family by default); the result's `.data` converts at the end
        out = evaluator.run(definitions=definitions, payloads=payloads, reasons=reasons, output="pandas")
    report = getattr(evaluator, "missing_report", None) or {}
    if keys is not None:
        report = {k: v for k, v in report.items() if k in keys}
    warn_missing_properties(report, len(sets))
    return conform(out, sets, keys, payloads=payloads, reasons=reasons)
