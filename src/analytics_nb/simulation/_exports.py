"""PostHog's persons exports read as property sets: one row per distinct id, ``properties.X`` as property X.

Two shapes come out of PostHog's CSV exporter (`posthog/tasks/exports/csv_exporter.py`, which flattens each
record: dicts with dots, lists by index; fixture `posthog/tasks/exports/test/csv_renders/people.json`;
posthog-notes §11):

* the **persons list** CSV: ``id`` (the *person* id, not a distinct id), ``name`` (a display name, not a
  property), ``distinct_ids.0``, ``distinct_ids.1``, ..., ``properties.<key>``, ``created_at``, ``uuid``;
  booleans written ``True``/``False``, null as an empty cell;
* the **actors query** CSV (the persons table of the new UI, `DataTableExport.tsx`): the same record under
  ``person.`` (``person.id``, ``person.distinct_ids.0``, ``person.properties.<key>``, ...) beside the
  query's other columns (counts, display names), which are not person properties.

Flags hash the **distinct id** the app sends (posthog-notes §6.2), never the person id: a row per person
keyed by ``id`` answers for someone else. So a person with three distinct ids becomes three rows (``"all"``,
the default), each exact for that id; ``"first"`` keeps ``distinct_ids.0`` only. An export does not say
which id is the identified one, so ``"identified"`` (what the project's persons frame offers) is refused
here with the choices. Only ``properties.*`` become person properties; the person id is kept as the
``person_id`` column, shown in the result and never sent; the export's other columns are left out.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from analytics_nb.simulation._errors import SimulationInputError
from analytics_nb.wire import distinct_id_problem

__all__ = [
    "DISTINCT_IDS",
    "PERSON_ID",
    "DistinctIds",
    "ExportShape",
    "duplicate_columns_error",
    "export_shape",
    "from_export",
    "read_posthog_export",
]

DistinctIds = Literal["all", "first", "identified"]
DISTINCT_IDS = ("all", "first", "identified")
PERSON_ID = "person_id"
"""The column the export's person id goes to: kept in the result, never sent as a property."""

_PROPS = "properties."
_PASS_THROUGH = ("ip",)  # a column the user added next to the export's own (and group:<type>[:prop])


@dataclass(frozen=True)
class ExportShape:
    """Which export a frame is: ``prefix`` "" (persons list) or "person." (actors query), its distinct-id
    columns in index order and its person id column (None when absent)."""

    prefix: str
    id_columns: list[str]
    person_id: str | None
    dropped: list[str] = field(default_factory=list)


def duplicate_columns_error(columns: Sequence[Any]) -> SimulationInputError | None:
    """The error for column names given more than once (a stripped ``properties.`` prefix next to the
    export's own ``name``, two renames to one name), or None."""
    index = pd.Index(columns)
    dup = list(dict.fromkeys(index[index.duplicated()].tolist()))
    if not dup:
        return None
    named = ", ".join(repr(c) for c in dup[:6]) + (" ..." if len(dup) > 6 else "")
    return SimulationInputError(
        f"column name(s) {named} appear more than once; each property needs one column. Rename or drop "
        "the extra ones (df = df.loc[:, ~df.columns.duplicated()] keeps the first). A PostHog export needs "
        "no renaming: pass it as read (pd.read_csv(path)) and its properties.X columns are read as X.",
        column=str(dup[0]),
    )


def _id_columns(columns: Sequence[Any], prefix: str) -> list[str]:
    pattern = re.compile(re.escape(prefix + "distinct_ids.") + r"(\d+)")
    found = [(int(m.group(1)), c) for c in columns if isinstance(c, str) and (m := pattern.fullmatch(c))]
    return [c for _, c in sorted(found)]


def export_shape(columns: Sequence[Any]) -> ExportShape | None:
    """The export shape of these column names (`ExportShape`), or None when they are not an export's."""
    for prefix in ("person.", ""):
        ids = _id_columns(columns, prefix)
        if ids:
            person = prefix + "id"
            return ExportShape(prefix, ids, person if person in columns else None)
    return None


def _check_choice(distinct_ids: Any) -> None:
    if distinct_ids == "identified":
        raise SimulationInputError(
            "distinct_ids='identified': a PostHog export lists a person's distinct ids in the order PostHog "
            "recorded them (often the anonymous one first) and does not say which one is identified. Use "
            "distinct_ids='all' (one row per distinct id, exact for whichever id your app sends) or 'first' "
            "(distinct_ids.0 only); the project's persons frame can pick the identified id.",
            column="distinct_ids",
        )
    if distinct_ids not in DISTINCT_IDS:
        raise SimulationInputError(
            f"distinct_ids={distinct_ids!r}: use 'all' (one row per distinct id) or 'first' "
            "(distinct_ids.0 only).",
            column="distinct_ids",
        )


def _property_columns(frame: pd.DataFrame, shape: ExportShape) -> dict[str, str]:
    """Export column -> property name for every ``<prefix>properties.X`` column."""
    start = shape.prefix + _PROPS
    return {c: c[len(start) :] for c in frame.columns if isinstance(c, str) and c.startswith(start)}


def _kept_columns(frame: pd.DataFrame, shape: ExportShape, props: dict[str, str]) -> dict[str, str]:
    """Source column -> output column: the properties, the person id, and what the user added (``ip``,
    ``group:`` columns); the export's other columns are left out (listed in ``dropped``)."""
    kept: dict[str, str] = {}
    if shape.person_id is not None:
        kept[shape.person_id] = PERSON_ID
    for col in frame.columns:
        if col in props:
            kept[col] = props[col]
        elif isinstance(col, str) and (col in _PASS_THROUGH or col.startswith("group:")):
            kept[col] = col
    from analytics_nb.simulation._inputs import RESERVED  # one list of reserved names (no cycle: a leaf)

    taken: dict[str, str] = {}
    for source, name in kept.items():
        if name in taken or (source in props and (name in RESERVED or name == PERSON_ID)):
            other = taken.get(name, name)
            raise SimulationInputError(
                f"export column {source!r} would become {name!r}, which {other!r} already is (or the "
                "result reserves); rename one of them before simulating.",
                column=source,
            )
        taken[name] = source
    return kept


def _id_matrix(frame: pd.DataFrame, shape: ExportShape) -> np.ndarray:
    """The distinct-id columns as text (n rows x k ids), missing as None; float ids refused with the fix."""
    columns = []
    for col in shape.id_columns:
        series = frame[col]
        problem = distinct_id_problem(series, field=col)
        if problem:
            raise SimulationInputError(
                problem + " Reading the export with analytics_nb.simulation.read_posthog_export(path) keeps "
                "ids as text.",
                column=col,
            )
        columns.append([None if pd.isna(v) or str(v) == "" else str(v) for v in series.tolist()])
    return np.array(columns, dtype=object).T.reshape(len(frame), len(columns))


def from_export(frame: pd.DataFrame, distinct_ids: Any = "all") -> pd.DataFrame:
    """A PostHog persons or actors export (as read by pandas) as property sets.

    One row per distinct id (``"all"``, each row the person's properties) or per person with
    ``distinct_ids.0`` (``"first"``); ``distinct_id`` first, then ``person_id``, then the properties
    (``properties.email`` -> ``email``). Raises `SimulationInputError` for a frame that is not an export,
    a float id column, a person without any distinct id (``"first"``), or a name clash.
    """
    _check_choice(distinct_ids)
    err = duplicate_columns_error(list(frame.columns))
    if err is not None:
        raise err
    shape = export_shape(list(frame.columns))
    if shape is None:
        raise SimulationInputError(
            "this frame is not a PostHog persons export: it has no distinct_ids.0 (persons list) or "
            "person.distinct_ids.0 (actors query) column.",
            column="distinct_ids.0",
        )
    if "distinct_id" in frame.columns:
        raise SimulationInputError(
            "the frame has both a 'distinct_id' column and the export's distinct_ids.N columns; drop "
            "'distinct_id' (the export's ids are read, one row per id) or the distinct_ids.N columns.",
            column="distinct_id",
        )
    props = _property_columns(frame, shape)
    kept = _kept_columns(frame, shape, props)
    ids = _id_matrix(frame, shape)
    present = pd.notna(ids) if ids.size else np.zeros(ids.shape, dtype=bool)
    if distinct_ids == "first":
        present[:, 1:] = False
    rows, cols = np.nonzero(present)  # row-major: each person's ids in index order
    body = frame.iloc[rows][list(kept)].rename(columns=kept).reset_index(drop=True)
    body.insert(0, "distinct_id", pd.Series(ids[rows, cols], dtype=object))
    return body


def _read_csv(source: Any) -> pd.DataFrame:
    """Read PostHog's CSV as it writes it: ids as text, only an empty cell is missing (a country 'NA' or a
    distinct id 'null' is a value, not pandas' default NA)."""
    if isinstance(source, str | os.PathLike) and not os.path.exists(source) and "\n" in str(source):
        source = io.StringIO(str(source))  # CSV text given directly
    header = pd.read_csv(source, nrows=0)
    if hasattr(source, "seek"):
        source.seek(0)
    text = {c: "string" for c in header.columns if export_shape([c]) is not None or c in ("id", "person.id")}
    return pd.read_csv(source, dtype=text, keep_default_na=False, na_values=[""])


def read_posthog_export(source: Any, distinct_ids: DistinctIds = "all") -> pd.DataFrame:
    """Read a PostHog persons export (the persons list CSV or an actors query CSV) as property sets.

    ``source`` is a path, a file object, CSV text, or a DataFrame already read. ``distinct_ids="all"`` (the
    default) gives one row per distinct id with the person's properties, so every id the app may send is
    answered exactly (flags hash the distinct id, never the person id); ``"first"`` keeps one row per person
    with ``distinct_ids.0``. ``properties.X`` becomes property ``X``; the person id is kept as ``person_id``
    (never sent); the export's other columns (``name``, ``created_at``, ``uuid``, query columns) are left
    out. ``simulate`` reads an export frame the same way (with ``"all"``) when given one directly.

    Args:
        source: The export: a path, file object, CSV text or DataFrame.
        distinct_ids: ``"all"`` or ``"first"``. (``"identified"`` is refused: an export does not say which
            id is the identified one.)

    Returns:
        A pandas DataFrame: ``distinct_id``, ``person_id``, then one column per property.
    """
    _check_choice(distinct_ids)
    frame = source if isinstance(source, pd.DataFrame) else _read_csv(source)
    return from_export(frame, distinct_ids)
