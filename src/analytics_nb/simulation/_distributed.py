"""The local flag engine over a Dask DataFrame, partition by partition, on whatever scheduler Dask uses (a
``dask.distributed`` cluster when a Client is active).

``simulate_dask(ddf, definitions=...)`` returns the one `SimulationResult` over a `DaskSource`: ``.frame`` is
a lazy Dask DataFrame of results (one `FrameEvaluator` per partition, the same columns as the pandas result);
``.summary()`` and ``.crosstab()`` are computed on the cluster from per-partition counts added up there, so
only the small tables come back; ``.whatif(edited)`` (`DaskRun.whatif`) re-evaluates only the flags whose
definitions changed (and the flags they depend on) and counts the moves on the cluster.

The definitions travel to the workers once: they are one task of the graph (``dask.delayed``, or a Future
scattered to every worker with ``broadcast=True`` when a distributed Client is active) that every
partition's task depends on, not a copy pickled into each partition's task.

Each partition is checked like a pandas frame (``normalise_property_sets``). A distinct_id repeated anywhere
in the frame, in one partition or across two, is refused as pandas refuses it (`SimulationInputError`
naming the id, where it is and how many repeats): before the lazy result is built, each partition hashes
its ids (64 bits of the id's text, the text simulate compares) on the workers and the hashes are counted in
buckets spread over the cluster by hash value (`check_unique_ids`), so no worker holds more than its share
of the hashes and no row comes back; only when a repeat is found are the few rows holding it looked up, to
name them. ``check_ids=False`` skips that pass over the ids (an export known to be unique).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from analytics_nb.simulation._answers import Counts, Normalize, write_parquet
from analytics_nb.simulation._definitions import (
    Definitions,
    fill,
    has_group_columns,
    live_flags,
    load_definitions,
    warn_unfilled,
)
from analytics_nb.simulation._errors import SimulationInputError
from analytics_nb.simulation._inputs import check_flag_keys, id_text, normalise_property_sets
from analytics_nb.simulation._local import (
    MissingColumns,
    check_missing_columns,
    conform,
    make_evaluator,
    warn_absent_columns,
)
from analytics_nb.simulation._output import flag_columns
from analytics_nb.simulation._result import SimulationResult, with_inputs
from analytics_nb.simulation._summary import ValueCounts, add_counts, value_counts
from analytics_nb.simulation._whatif import WhatIfResult, _affected, diff_frames
from analytics_nb.tables import family_of
from analytics_nb.tables._extras import require

__all__ = ["DaskRun", "DaskSource", "is_dask", "simulate_dask"]

Mode = Literal["server", "sdk"]


def is_dask(obj: Any) -> bool:
    """A Dask DataFrame (told from its type's module, so Dask is not imported to ask)."""
    return type(obj).__module__.split(".", 1)[0] in ("dask", "dask_expr") and hasattr(obj, "map_partitions")


def _dask() -> tuple[Any, Any]:
    return require("dask", "simulate_dask"), require("dask.dataframe", "simulate_dask")


def _shared(value: Any) -> Any:
    """``value`` as one graph node every partition's task depends on: a Future broadcast to every worker
    when a distributed Client is active, else a ``dask.delayed`` object (a single task)."""
    dask, _ = _dask()
    try:
        from distributed import get_client

        client = get_client()
    except (ImportError, ValueError):
        client = None
    if client is not None:
        future = client.scatter(value, broadcast=True, hash=False)  # type: ignore[no-untyped-call]
        return dask.delayed(future)
    return dask.delayed(value, pure=True)


#: most buckets the id hashes are spread over when they are counted (one per partition up to this)
_MAX_ID_BUCKETS = 32


def _id_hashes(ids: pd.Series) -> pd.Series:
    """One partition's ids as 64-bit hashes of their text (what simulate compares: ``1`` and ``"1"`` are one
    id); missing ids are left out - the partition's own check names them."""
    present = ids[ids.notna()]
    return pd.Series(_hash_texts(id_text(present)), dtype="uint64", name="distinct_id")


def _hash_texts(text: pd.Series) -> np.ndarray:
    """64-bit hashes of id texts (pandas' own hasher): equal texts hash alike, different ones almost never."""
    return pd.util.hash_array(text.to_numpy(dtype=object), categorize=False)


def _rows_with_hashes(part: pd.DataFrame, wanted: frozenset[int]) -> list[tuple[int, Any, str]]:
    """(hash, index label, id text) of the rows of one partition whose id hashes to one of ``wanted``."""
    ids = part["distinct_id"]
    present = ids[ids.notna()]
    text = id_text(present)
    hashes = _hash_texts(text)
    hit = np.isin(hashes, np.fromiter(wanted, dtype=np.uint64, count=len(wanted)))
    return list(zip(hashes[hit].tolist(), present.index[hit].tolist(), text[hit].tolist(), strict=True))


def _split_hashes(ids: pd.Series, buckets: int) -> tuple[np.ndarray, ...]:
    """One partition's id hashes split into ``buckets`` arrays by ``hash % buckets``."""
    hashes = _id_hashes(ids).to_numpy()
    which = hashes % np.uint64(buckets)
    return tuple(hashes[which == b] for b in range(buckets))


def _count_repeats(*slices: np.ndarray) -> tuple[int, list[int]]:
    """(rows beyond the first of each repeated hash, up to ``_CANDIDATES`` repeated hashes) over one
    bucket's slices."""
    ordered = np.sort(np.concatenate(slices)) if slices else np.empty(0, dtype=np.uint64)
    same = ordered[1:] == ordered[:-1]
    return int(same.sum()), np.unique(ordered[1:][same])[:_CANDIDATES].tolist()


#: repeated hashes per bucket whose rows are looked up to confirm a repeat (a 64-bit collision of two
#: different ids is about 3e-6 likely at 10M ids; eight false ones in a row in one bucket is never seen)
_CANDIDATES = 8


def check_unique_ids(ddf: Any) -> None:
    """Refuse a Dask frame whose distinct_id repeats, within a partition or across partitions, as
    `normalise_property_sets` refuses a pandas frame; counted on the cluster.

    Each partition's task hashes its ids and splits the hashes into ``B`` buckets by value; bucket ``b``'s
    task receives slice ``b`` of every partition and counts repeats among them (a sort). Equal ids hash
    alike and meet in one bucket; a bucket holds ``1/B`` of the hashes (8 bytes an id), and only two
    numbers per bucket come back. (Measured on this 2-core machine with 1M ids: 0.5-0.7 s, against
    1.4-1.6 s for Dask's own ``value_counts(split_out=B)``, whose shuffle has a larger fixed cost.)
    """
    dask, _ = _dask()
    buckets = max(1, min(ddf.npartitions, _MAX_ID_BUCKETS))
    split = [
        dask.delayed(_split_hashes, nout=buckets, pure=True)(part, buckets)
        for part in ddf["distinct_id"].to_delayed()
    ]
    counted = dask.compute(*[dask.delayed(_count_repeats)(*[s[b] for s in split]) for b in range(buckets)])
    hash_extra = sum(n for n, _ in counted)
    if not hash_extra:
        return
    wanted = frozenset(h for _, hashes in counted for h in hashes)
    # the frame's own partitions (a projected column may be read in fewer, larger ones): numbers the user's
    found = dask.compute(*[dask.delayed(_rows_with_hashes)(part, wanted) for part in ddf.to_delayed()])
    by_text: dict[str, list[tuple[int, Any]]] = {}
    per_hash: dict[int, int] = {}
    for i, rows in enumerate(found):
        for h, label, text in rows:
            by_text.setdefault(text, []).append((i, label))
            per_hash[h] = per_hash.get(h, 0) + 1
    repeats = {text: where for text, where in by_text.items() if len(where) > 1}
    if not repeats:
        return  # a 64-bit hash collision of different ids: nothing repeats
    # rows beyond the first of each repeated id: the hash count less what collisions of different ids added
    extra = hash_extra - sum(n - 1 for n in per_hash.values()) + sum(len(w) - 1 for w in repeats.values())
    first, where = next(iter(repeats.items()))
    parts = sorted({i for i, _ in where})
    shown = ", ".join(f"partition {i} row {label!r}" for i, label in where[:5])
    raise SimulationInputError(
        f"distinct_id {first!r} appears more than once ({shown}"
        f"{', ...' if len(where) > 5 else ''}; {extra} duplicate row(s) in all, "
        f"{'within one partition' if len(parts) == 1 else 'across partitions'}); each property set must "
        "have its own id. Drop repeats first (ddf = ddf.drop_duplicates('distinct_id')) or make them "
        "unique; check_ids=False skips this check.",
        column="distinct_id",
        row=where[0][1],
    )


def _evaluate_part(
    part: pd.DataFrame,
    defs: Definitions,
    mode: Mode,
    keys: Sequence[str] | None,
    only: Sequence[str] | None,
    payloads: bool,
    now: dt.datetime | None = None,
    missing_columns: MissingColumns = "unknown",
) -> pd.DataFrame:
    """One partition through the local engine; ``only``: evaluate just these flags (a what-if re-run);
    ``now``: the run's instant for relative dates (one for every partition)."""
    sets = normalise_property_sets(part)
    evaluator = make_evaluator(sets, defs, mode=mode, now=now, missing_columns=missing_columns)
    flags = None if only is None else [f for f in defs.flags if f["key"] in set(only)]
    out = evaluator.run(definitions=flags, payloads=payloads, reasons=False)
    return conform(out, sets, keys, payloads=payloads, reasons=False)


def _edit_part(
    base: pd.DataFrame,
    part: pd.DataFrame,
    defs: Definitions,
    mode: Mode,
    needed: Sequence[str],
    affected: Sequence[str],
    payloads: bool,
    now: dt.datetime | None = None,
    missing_columns: MissingColumns = "unknown",
) -> pd.DataFrame:
    """A base result partition with the ``affected`` flags re-evaluated from the input partition."""
    new = (
        _evaluate_part(part, defs, mode, None, needed, payloads, now, missing_columns)
        if needed
        else base.iloc[:, :0]
    )
    updates: dict[str, Any] = {}
    for key in affected:
        for col in (key, f"{key}:payload"):
            if col in base.columns:
                updates[col] = new[col] if col in new.columns else pd.Series(pd.NA, index=base.index)
    return base.assign(**updates)


def _counts_part(frame: pd.DataFrame, keys: Sequence[str]) -> dict[str, tuple[ValueCounts, int]]:
    return value_counts(frame, keys)


def _add_all(parts: Sequence[dict[str, tuple[ValueCounts, int]]]) -> dict[str, tuple[ValueCounts, int]]:
    return functools.reduce(add_counts, parts, {})


def _crosstab_part(result: pd.DataFrame, inputs: pd.DataFrame, key: str, by: str) -> pd.DataFrame:
    """Long counts (by, value, count) of one partition, in the crosstab's labels."""
    col = result[key]
    flag = col.astype(object).where(col.notna(), "(unknown)")
    values = inputs[by]
    prop = values.astype(object).where(values.notna(), "(missing)")
    long = pd.DataFrame({"by": prop.to_numpy(), "value": flag.to_numpy(), "one": 1})
    return long.groupby(["by", "value"], sort=False, dropna=False)["one"].sum().reset_index(name="count")


def _concat_long(parts: Sequence[pd.DataFrame]) -> pd.DataFrame:
    long = pd.concat(parts, ignore_index=True)
    return long.groupby(["by", "value"], sort=False, dropna=False)["count"].sum().reset_index()


def _moves_part(base: pd.DataFrame, edited: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    moves, _ = diff_frames(base, edited, keys)
    return moves


def _add_moves(parts: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Moves of every partition added up: flag, from, to, count (largest first per flag, like pandas)."""
    totals: dict[tuple[str, tuple[str, Any], tuple[str, Any]], int] = {}
    tagged: dict[tuple[str, Any], Any] = {}
    for moves in parts:
        for flag, a, b, c in moves.itertuples(index=False, name=None):
            ka = ("na", None) if a is pd.NA else (type(a).__name__, a)
            kb = ("na", None) if b is pd.NA else (type(b).__name__, b)
            tagged[ka], tagged[kb] = a, b
            totals[(flag, ka, kb)] = totals.get((flag, ka, kb), 0) + int(c)
    rows = [(f, tagged[a], tagged[b], c) for (f, a, b), c in totals.items()]
    out = pd.DataFrame(rows, columns=["flag", "from", "to", "count"])
    flags = list(dict.fromkeys(out["flag"]))
    out["_f"] = out["flag"].map({f: i for i, f in enumerate(flags)})
    out = out.sort_values(["_f", "count"], ascending=[True, False], kind="stable").drop(columns="_f")
    out["count"] = out["count"].astype("int64")
    for c in ("from", "to"):
        out[c] = out[c].astype(object)
    return out.reset_index(drop=True)


def _missing_part(
    part: pd.DataFrame,
    defs: Definitions,
    mode: Mode,
    now: dt.datetime | None,
    missing_columns: MissingColumns,
) -> dict[str, tuple[tuple[str, ...], int]]:
    """One partition's `FrameEvaluator.missing_report` (the answers absent columns made NA)."""
    evaluator = make_evaluator(
        normalise_property_sets(part), defs, mode=mode, now=now, missing_columns=missing_columns
    )
    evaluator.run(payloads=False, reasons=False)
    return dict(evaluator.missing_report)


def _add_reports(
    parts: Sequence[dict[str, tuple[tuple[str, ...], int]]],
) -> dict[str, tuple[tuple[str, ...], int]]:
    total: dict[str, tuple[tuple[str, ...], int]] = {}
    for report in parts:
        for key, (labels, count) in report.items():
            total[key] = (labels, total.get(key, ((), 0))[1] + count)
    return total


def _write_part(result: pd.DataFrame, inputs: pd.DataFrame | None, path: Path) -> str:
    """One partition's answers (with its input columns when given) to one parquet file."""
    frame = result if inputs is None else with_inputs(result, inputs)
    write_parquet(frame, path)
    return str(path)


@dataclass(frozen=True)
class DaskRun:
    """The settings of a `simulate_dask` run, kept on its `SimulationResult` (``result.backend``): they make
    the `DaskSource` over the result's lazy frame and re-run edited flags (``result.whatif``)."""

    definitions: Definitions
    mode: Mode = "server"
    flags: list[str] | None = None  # the keys asked for (None: every flag)
    payloads: bool = True
    #: the instant relative dates ("-7d") are read against, in every partition and what-if re-run: the
    #: time of the `simulate_dask` call (the lazy result may be computed much later)
    now: dt.datetime | None = None
    #: a property the partitions have no column for: "unknown" (NA where it matters) or "not_set"
    missing_columns: MissingColumns = "unknown"

    def source(self, frame: Any, inputs: Any) -> DaskSource:
        """The answers of ``frame`` (lazy results) over ``inputs`` (the lazy property sets)."""
        return DaskSource(frame, inputs, self)

    def result(self, frame: Any, inputs: Any) -> SimulationResult:
        """The one result over a lazy Dask frame of answers."""
        return SimulationResult(frame, "dask", inputs, self.mode, self.definitions.variants(), backend=self)

    def whatif(self, result: SimulationResult, edited: Any) -> WhatIfResult:
        """Re-evaluate only the flags ``edited`` changes (and what they depend on), lazily; count the moves
        on the cluster (`SimulationResult.whatif`)."""
        dask, dd = _dask()
        started = time.perf_counter()
        edited_defs = live_flags(load_definitions(edited))
        edited_defs.group_type_mapping = {
            **self.definitions.group_type_mapping,
            **edited_defs.group_type_mapping,
        }
        if not edited_defs.cohorts:  # an edited flags frame or list: the current cohorts, as `WhatIf` does
            edited_defs.cohorts = dict(self.definitions.cohorts)
        if edited_defs.cohorts and edited_defs.cohorts != self.definitions.cohorts:
            affected = set(edited_defs.keys) | set(self.definitions.keys)
            needed = set(edited_defs.keys)
        else:
            affected, needed = _affected(self.definitions, edited_defs)
        keys = [k for k in result.flags if k in affected]
        new_frame = dd.map_partitions(
            _edit_part,
            result.frame,
            result.inputs,
            _shared(edited_defs),
            self.mode,
            sorted(needed),
            keys,
            self.payloads,
            self.now,
            self.missing_columns,
            meta=result.frame._meta,
            align_dataframes=False,
        )
        moves = [
            dask.delayed(_moves_part)(b, e, keys)
            for b, e in zip(result.frame.to_delayed(), new_frame.to_delayed(), strict=True)
        ]
        total = dask.delayed(_add_moves)(moves).compute()
        new = dataclasses.replace(self, definitions=edited_defs).result(new_frame, result.inputs)
        return WhatIfResult(result, new, total, None, time.perf_counter() - started)


@dataclass(repr=False)
class DaskSource:
    """The answers of a `simulate_dask` run, where they lie: counted per partition on the cluster (only
    the counts come back); ``collect`` is the one call that brings every row back."""

    frame: Any  # dask.dataframe.DataFrame of results
    inputs: Any  # the Dask DataFrame of property sets
    run: DaskRun
    lazy = True

    @property
    def keys(self) -> list[str]:
        return flag_columns(self.frame._meta)

    def __len__(self) -> int:
        return len(self.frame)  # the partitions' row counts, added on the cluster

    def counts(self, keys: Sequence[str]) -> Counts:
        dask, _ = _dask()
        counts = [dask.delayed(_counts_part)(p, list(keys)) for p in self.frame.to_delayed()]
        total: Counts = dask.delayed(_add_all)(counts).compute()
        return total

    def crosstab(self, key: str, by: str, *, normalize: Normalize, margins: bool) -> pd.DataFrame:
        """Counts per partition, added up on the cluster; only the (property value, flag value) counts come
        back (``by`` a column of the inputs)."""
        dask, _ = _dask()
        if by not in self.inputs.columns:
            raise SimulationInputError(f"no property column {by!r} in the property sets.", column=by)
        results, inputs = self.frame.to_delayed(), self.inputs.to_delayed()
        parts = [dask.delayed(_crosstab_part)(r, i, key, by) for r, i in zip(results, inputs, strict=True)]
        long = dask.delayed(_concat_long)(parts).compute()
        index = pd.Series(long["by"].to_numpy(dtype=object), name=by)
        columns = pd.Series(long["value"].to_numpy(dtype=object), name=key)
        table = pd.crosstab(
            index, columns, values=long["count"], aggfunc="sum", normalize=normalize, margins=margins
        ).fillna(0)
        return table if normalize is not False else table.astype("int64")

    def collect(self, *, inputs: bool = False) -> pd.DataFrame:
        """Every row as pandas (computed on the cluster and brought back)."""
        dask, _ = _dask()
        if not inputs:
            out: pd.DataFrame = self.frame.compute()
            return out
        outputs, sets = dask.compute(self.frame, self.inputs)
        return with_inputs(outputs, sets)

    def batches(self, rows: int, *, inputs: bool) -> Iterator[pd.DataFrame]:
        """One partition computed at a time (with its property sets when ``inputs``), in slices of at most
        ``rows`` rows; nothing is collected whole (one empty frame when there is no row)."""
        dask, _ = _dask()
        yielded = False
        for n in range(self.frame.npartitions):
            part: pd.DataFrame = self.frame.partitions[n]
            if inputs:
                outputs, sets = dask.compute(part, self.inputs.partitions[n])
                part = with_inputs(outputs, sets)
            else:
                (part,) = dask.compute(part)
            for start in range(0, len(part), rows):
                yielded = True
                yield part.iloc[start : start + rows]
        if not yielded:
            meta = self.frame._meta
            yield with_inputs(meta, self.inputs._meta) if inputs else meta

    def head(self, n: int) -> pd.DataFrame:
        """The first ``n`` rows (from the first partition)."""
        out: pd.DataFrame = self.frame.head(n)
        return out

    def errors(self) -> pd.DataFrame:
        """The rows with an error (selected on the cluster)."""
        frame = self.frame
        out: pd.DataFrame = frame[frame["error"].notna()][["distinct_id", "error"]].compute()
        return out

    def to_parquet(self, path: str | Path, *, inputs: bool) -> Path:
        """A folder of ``part-<i>.parquet`` files, one per partition, written by the workers."""
        dask, _ = _dask()
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        results = self.frame.to_delayed()
        sets = self.inputs.to_delayed() if inputs else [None] * len(results)
        writes = [
            dask.delayed(_write_part)(r, i, folder / f"part-{n}.parquet")
            for n, (r, i) in enumerate(zip(results, sets, strict=True))
        ]
        dask.compute(*writes)
        return folder

    def missing_report(self) -> dict[str, tuple[tuple[str, ...], int]]:
        """The answers absent columns made NA, counted on the cluster (one more pass over the partitions,
        only when some flag reads a property no column holds)."""
        run = self.run
        if run.missing_columns != "unknown" or not _absent(self.inputs._meta, run):
            return {}
        dask, _ = _dask()
        defs = _shared(run.definitions)
        parts = [
            dask.delayed(_missing_part)(p, defs, run.mode, run.now, run.missing_columns)
            for p in self.inputs.to_delayed()
        ]
        report: dict[str, tuple[tuple[str, ...], int]] = dask.delayed(_add_reports)(parts).compute()
        keys = set(self.keys)
        return {k: v for k, v in report.items() if k in keys}


def _absent(empty: pd.DataFrame, run: DaskRun) -> dict[str, tuple[str, ...]]:
    """The flags reading properties no column of ``empty`` (the frame's meta) holds, from the engine."""
    evaluator = make_evaluator(
        normalise_property_sets(empty), run.definitions, mode=run.mode, missing_columns="unknown"
    )
    evaluator.run()
    absent: dict[str, tuple[str, ...]] = dict(evaluator.absent_properties)
    return absent


def simulate_dask(
    ddf: Any,
    flags: Sequence[str] | str | None = None,
    *,
    definitions: Any,
    mode: Mode = "server",
    payloads: bool = True,
    group_type_mapping: dict[str, str] | None = None,
    client: Any = None,
    check_ids: bool = True,
    missing_columns: MissingColumns = "unknown",
) -> SimulationResult:
    """The local flag engine over a Dask DataFrame, lazily, one partition at a time (see the module doc).

    ``definitions`` as for `simulate` (JSON, dicts, models, a LocalEvaluationResponse, a flags DataFrame).
    A repeated distinct_id is refused as in `simulate` (`SimulationInputError`), counted on the cluster
    before the result is built (one pass over the ids); ``check_ids=False`` skips it.

    Args:
        ddf: A Dask DataFrame of property sets (``distinct_id`` plus property columns).
        flags: Flag keys to evaluate. None: every flag of the definitions.
        definitions: The flag definitions (required: the cluster does not call PostHog).
        mode: ``"server"`` or ``"sdk"``.
        payloads: Add ``<key>:payload`` columns.
        group_type_mapping: ``{group type index: name}``. None: the definitions'.
        client: A sync ``Client`` that fills the cohorts and group type names the definitions lack (a
            flags DataFrame carries neither) from its project, before anything is sent to the cluster. None:
            they stay missing (those answers are NA) and an `IncompleteDefinitionsWarning` says so.
        check_ids: Count repeated distinct ids on the cluster first (one pass over the ids).
        missing_columns: A property the frame has no column for: ``"unknown"`` (answers that depend on it
            are NA, reason ``missing_property``; one `MissingPropertyWarning` names the flags and
            properties before anything runs, and ``summary()``'s ``unknown`` counts the rows) or
            ``"not_set"``.

    Returns:
        The lazy `SimulationResult` (``engine == "dask"``; ``.frame`` the lazy Dask DataFrame of answers).
    """
    if not is_dask(ddf):
        raise SimulationInputError(
            f"simulate_dask needs a Dask DataFrame, got {type(ddf).__name__} ({family_of(ddf)}); use "
            "simulate(..., engine='local') for it."
        )
    if mode not in ("server", "sdk"):
        raise SimulationInputError(f"mode={mode!r}: use 'server' or 'sdk'.")
    _dask()  # a clear error when dask is missing
    defs = live_flags(load_definitions(definitions))
    if group_type_mapping:
        defs.group_type_mapping.update({str(k): str(v) for k, v in group_type_mapping.items()})
    defs = fill(defs, client)
    keys = check_flag_keys(flags, defs.keys)
    warn_unfilled(defs, keys, groups_matter=mode == "sdk" or has_group_columns(ddf.columns))
    if "distinct_id" not in ddf.columns:
        normalise_property_sets(ddf._meta)  # the pandas message: no distinct_id column, and the fix
    if check_ids:
        check_unique_ids(ddf)
    # the result's columns and dtypes, from the engine over the (empty) meta partition
    now = dt.datetime.now(dt.UTC)  # one instant for relative dates in every partition
    missing_columns = check_missing_columns(missing_columns)
    warn_absent_columns(ddf._meta, defs, mode=mode, keys=keys, missing_columns=missing_columns)
    meta = _evaluate_part(ddf._meta, defs, mode, keys, None, payloads, now, missing_columns)
    frame = ddf.map_partitions(
        _evaluate_part,
        _shared(defs),
        mode,
        keys,
        None,
        payloads,
        now,
        missing_columns,
        meta=meta,
        align_dataframes=False,
    )
    run = DaskRun(defs, mode, keys, payloads, now=now, missing_columns=missing_columns)
    return run.result(frame, ddf)
