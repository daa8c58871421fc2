"""Normalise property sets (a DataFrame or a list of dicts) to the flag-engine frame conventions; validate.

Every check here runs before any request is sent, so bad input never costs a half-finished simulation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd

from analytics_nb.simulation._errors import SimulationInputError
from analytics_nb.simulation._exports import PERSON_ID, duplicate_columns_error, export_shape, from_export
from analytics_nb.simulation._output import TEXT_IDS, ids_are_text
from analytics_nb.tables import Family, Output, TableInputError, check_output, to_pandas
from analytics_nb.wire import distinct_id_problem
from analytics_nb.wire.cells import is_missing
from analytics_nb.wire.cells import plain_value as json_value

__all__ = [
    "PropertySets",
    "id_text",
    "is_missing",
    "json_value",
    "normalise_property_sets",
    "output_choice",
    "read_table",
]


def read_table(property_sets: Any) -> tuple[Any, Family]:
    """`analytics_nb.tables.to_pandas` with its errors as `SimulationInputError` (what simulate raises)."""
    try:
        return to_pandas(property_sets)
    except TableInputError as exc:
        raise SimulationInputError(str(exc)) from None


def output_choice(output: Any) -> Output | None:
    """``output=`` checked (`analytics_nb.tables.check_output`), refused with a `SimulationInputError`."""
    try:
        return check_output(output)
    except TableInputError as exc:
        raise SimulationInputError(str(exc)) from None


RESERVED = ("distinct_id", "person_properties", "group_properties", "groups", "ip", "error")
_SCALAR_TYPES: tuple[type, ...] = (
    str,
    bool,
    int,
    float,
    type(None),
    np.generic,
    datetime,
    date,
    time,
    Decimal,
    type(pd.NA),
    type(pd.NaT),
)
_NESTED_TYPES: tuple[type, ...] = (list, tuple, dict, set, frozenset, np.ndarray, pd.Series, pd.DataFrame)
# infer_dtype results that cannot hold a nested or exotic cell: the per-cell scan is skipped for them.
_SAFE_INFERRED = {
    "string",
    "integer",
    "floating",
    "boolean",
    "mixed-integer-float",
    "datetime",
    "datetime64",
    "date",
    "time",
    "decimal",
    "empty",
    "timedelta",
    "timedelta64",
}
_MAX_LISTED = 5


@dataclass
class PropertySets:
    """Validated property sets: the normalised frame plus which columns play which part.

    ``frame`` keeps the input's index, ``distinct_id`` (text) first, group keys as ``group:<type>`` columns.
    ``info_columns`` (``person_id``: PostHog's person id, not a person property) are shown in the result
    and never sent nor read by the engine.
    """

    frame: pd.DataFrame
    person_columns: list[str] = field(default_factory=list)
    group_key_columns: dict[str, str] = field(default_factory=dict)
    group_property_columns: dict[str, dict[str, str]] = field(default_factory=dict)
    has_ip: bool = False
    info_columns: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.frame)

    @property
    def distinct_ids(self) -> list[str]:
        """The rows' distinct ids, in order."""
        return self.frame["distinct_id"].tolist()

    def engine_frame(self) -> pd.DataFrame:
        """The frame handed to the flag engine (everything but ``ip``, which only remote decide uses)."""
        cols = [c for c in self.frame.columns if c != "ip" and c not in self.info_columns]
        return self.frame[cols]

    def requests(self) -> list[dict[str, Any]]:
        """One decide request per row: distinct_id, person_properties, groups, group_properties, ip."""
        frame = self.frame
        n = len(frame)
        ids = frame["distinct_id"].tolist()
        person_values = {c: frame[c].tolist() for c in self.person_columns}
        group_keys = {t: frame[c].tolist() for t, c in self.group_key_columns.items()}
        group_props = {
            t: {p: frame[c].tolist() for p, c in cols.items()}
            for t, cols in self.group_property_columns.items()
        }
        ips = frame["ip"].tolist() if self.has_ip else [None] * n
        out: list[dict[str, Any]] = []
        for i in range(n):
            person: dict[str, Any] = {}
            for col, values in person_values.items():
                v = values[i]
                if not is_missing(v):
                    person[col] = json_value(v)
            groups: dict[str, str] = {}
            for gtype, values in group_keys.items():
                v = values[i]
                if not is_missing(v):
                    groups[gtype] = str(json_value(v))
            gprops: dict[str, dict[str, Any]] = {}
            for gtype, cols in group_props.items():
                for prop, values in cols.items():
                    v = values[i]
                    if not is_missing(v):
                        gprops.setdefault(gtype, {})[prop] = json_value(v)
            ip = ips[i]
            out.append(
                {
                    "distinct_id": ids[i],
                    "person_properties": person,
                    "groups": groups,
                    "group_properties": gprops,
                    "ip": None if is_missing(ip) else str(ip),
                }
            )
        return out


def _is_column(value: Any) -> bool:
    """A list-like of values (not text, not a dict): one column of a dict of columns."""
    return isinstance(value, list | tuple | np.ndarray | pd.Series | pd.Index)


def _to_frame(property_sets: Any) -> pd.DataFrame:
    if isinstance(property_sets, pd.DataFrame):
        return property_sets.copy(deep=False)
    if isinstance(property_sets, Mapping):
        # A dict of equal-length lists is columns, as pd.DataFrame reads it; a dict of scalars is one set.
        columns = {k: v for k, v in property_sets.items() if _is_column(v)}
        if columns:
            lengths = {str(k): len(v) for k, v in columns.items()}
            if len(set(lengths.values())) > 1:
                shown = ", ".join(f"{k!r}: {n}" for k, n in list(lengths.items())[:6])
                raise SimulationInputError(
                    f"property_sets is a dict of columns of different lengths ({shown}); give every column "
                    "one value per property set (the same length), or pass a list of dicts."
                )
            return pd.DataFrame(dict(property_sets))
        raise SimulationInputError(
            "property_sets is one dict of single values; wrap it in a list for one property set "
            "(simulate([{'distinct_id': 'u1', 'country': 'US'}])), give columns as lists "
            "({'distinct_id': ['u1', 'u2'], 'country': ['US', 'DE']}) or pass a DataFrame."
        )
    if isinstance(property_sets, str | bytes) or not isinstance(property_sets, Iterable):
        raise SimulationInputError(
            f"property_sets must be a DataFrame or a list of dicts, not {type(property_sets).__name__}."
        )
    rows = list(property_sets)
    for i, row in enumerate(rows):
        if not isinstance(row, Mapping):
            raise SimulationInputError(
                f"property set {i} is a {type(row).__name__}, not a dict; give each property set as a dict "
                "like {'distinct_id': 'u1', 'country': 'US'}.",
                row=i,
            )
    if not rows:
        return pd.DataFrame({"distinct_id": pd.Series([], dtype=object)})
    return pd.DataFrame.from_records(rows)


def _first_bad(mask: pd.Series) -> list[Any]:
    return mask.index[mask.to_numpy(dtype=bool)][:_MAX_LISTED].tolist()


def _check_scalar_column(frame: pd.DataFrame, col: str) -> None:
    series = frame[col]
    if series.dtype != object:
        return
    if pd.api.types.infer_dtype(series, skipna=True) in _SAFE_INFERRED:
        return
    nested = series.map(lambda v: isinstance(v, _NESTED_TYPES))
    if nested.any():
        rows = _first_bad(nested)
        example = series.loc[rows[0]] if frame.index.is_unique else series[nested].iloc[0]
        raise SimulationInputError(
            f"column {col!r} holds a nested value ({type(example).__name__}) at row {rows[0]!r}"
            f"{' (also rows ' + ', '.join(map(repr, rows[1:])) + ')' if len(rows) > 1 else ''}; property "
            "values must be scalars (text, number, bool, date). Flatten it into separate columns or "
            "encode it as text, e.g. df[col] = df[col].map(json.dumps).",
            column=col,
            row=rows[0],
        )
    odd = series.map(lambda v: not isinstance(v, _SCALAR_TYPES))
    if odd.any():
        rows = _first_bad(odd)
        example = series[odd].iloc[0]
        raise SimulationInputError(
            f"column {col!r} holds a {type(example).__name__} at row {rows[0]!r}, which is not a property "
            "value; use text, a number, a bool or a date (e.g. df[col] = df[col].astype(str)).",
            column=col,
            row=rows[0],
        )


def _check_dict_column(frame: pd.DataFrame, col: str, *, depth: int) -> None:
    """``person_properties`` (depth 1) or ``group_properties`` (depth 2: type -> props) dict cells."""
    for label, cell in zip(frame.index, frame[col].tolist(), strict=True):
        if is_missing(cell):
            continue
        if not isinstance(cell, Mapping):
            raise SimulationInputError(
                f"column {col!r} must hold dicts, but row {label!r} holds a {type(cell).__name__}; "
                + (
                    "give {property: value}."
                    if depth == 1
                    else "give {group type: {property: value}}, e.g. {'company': {'plan': 'pro'}}."
                ),
                column=col,
                row=label,
            )
        inner: list[tuple[str, Any]] = []
        if depth == 1:
            inner = [(str(k), v) for k, v in cell.items()]
        else:
            for gtype, props in cell.items():
                if not isinstance(props, Mapping):
                    raise SimulationInputError(
                        f"column {col!r} row {label!r}: group type {gtype!r} maps to a "
                        f"{type(props).__name__}; "
                        "give {group type: {property: value}}.",
                        column=col,
                        row=label,
                    )
                inner.extend((f"{gtype}.{k}", v) for k, v in props.items())
        for key, value in inner:
            if isinstance(value, _NESTED_TYPES) or not isinstance(value, _SCALAR_TYPES):
                raise SimulationInputError(
                    f"column {col!r} row {label!r}: property {key!r} holds a nested or unsupported value "
                    f"({type(value).__name__}); property values must be scalars. Flatten it or encode it "
                    "as text.",
                    column=col,
                    row=label,
                )


def _expand_dicts(frame: pd.DataFrame, col: str) -> pd.DataFrame:
    """A ``person_properties`` / ``group_properties`` dict column becomes plain columns (one form for the
    engine and for crosstabs). Where a row has both, the column's value wins and the dict fills the gaps."""
    cells = frame[col].tolist()
    flat: list[dict[str, Any]] = []
    for cell in cells:
        row: dict[str, Any] = {}
        if isinstance(cell, Mapping):
            if col == "person_properties":
                row = {str(k): v for k, v in cell.items()}
            else:
                for gtype, props in cell.items():
                    row.update({f"group:{gtype}:{k}": v for k, v in props.items()})
        flat.append(row)
    out = frame.drop(columns=[col])
    names = list(dict.fromkeys(k for row in flat for k in row))
    for name in names:
        if col == "person_properties" and (name in RESERVED or name.startswith("group:")):
            raise SimulationInputError(
                f"person property {name!r} in column 'person_properties' clashes with a reserved column; "
                "rename the property.",
                column=col,
                key=name,
            )
        values = pd.Series([row.get(name) for row in flat], index=frame.index, dtype=object)
        if name in out.columns:
            current = out[name].astype(object)
            out[name] = current.where(current.notna(), values)
        else:
            out[name] = values
    return out


def _expand_groups(frame: pd.DataFrame) -> pd.DataFrame:
    """A ``groups`` column of ``{type: key}`` dicts becomes ``group:<type>`` columns."""
    cells = frame["groups"].tolist()
    types: list[str] = []
    for label, cell in zip(frame.index, cells, strict=True):
        if is_missing(cell):
            continue
        if not isinstance(cell, Mapping):
            raise SimulationInputError(
                f"column 'groups' must hold {{group type: group key}} dicts, but row {label!r} holds a "
                f"{type(cell).__name__}; or give the keys as 'group:<type>' columns.",
                column="groups",
                row=label,
            )
        for gtype in cell:
            if str(gtype) not in types:
                types.append(str(gtype))
    out = frame.drop(columns=["groups"])
    for gtype in types:
        col = f"group:{gtype}"
        values = [None if is_missing(c) else c.get(gtype) for c in cells]
        if col in out.columns:
            raise SimulationInputError(
                f"group type {gtype!r} is given twice: in the 'groups' column and as column "
                f"{col!r}; keep one.",
                column=col,
            )
        out[col] = pd.Series(values, index=out.index, dtype=object)
    return out


def id_text(ids: pd.Series) -> pd.Series:
    """Ids as Python text (what the service does with numeric ids), vectorised for the common dtypes."""
    kind = pd.api.types.infer_dtype(ids, skipna=False)
    if kind == "string":
        return pd.Series(ids.to_numpy(dtype=object), index=ids.index, dtype=object)
    if kind == "integer":
        return pd.Series(ids.astype(str).to_numpy(dtype=object), index=ids.index, dtype=object)
    return pd.Series([str(json_value(v)) for v in ids.tolist()], index=ids.index, dtype=object)


#: Column names that may hold a distinct id under another name (a hint names them). Never a person id
#: (``id``, ``person_id``, ``uuid``): flags hash the distinct id, so renaming a person id answers for others.
_DISTINCT_ID_SPELLINGS = {"distinct_id", "distinctid", "user_id", "userid", "$distinct_id"}
_PERSON_ID_SPELLINGS = {"id", "person_id", "personid", "uuid", "person_uuid", "person.id"}


def _no_distinct_id(columns: Any) -> str:
    """The message for property sets without a ``distinct_id`` column: a hint towards a column that may hold
    distinct ids, and a warning against a person id column (never suggested)."""
    names = [str(c) for c in columns]

    def spelled(name: str) -> str:
        return name.lower().replace("-", "_").replace(" ", "_")

    near = [c for c in names if spelled(c) in _DISTINCT_ID_SPELLINGS]
    person = [c for c in names if spelled(c) in _PERSON_ID_SPELLINGS]
    text = "property sets need a 'distinct_id' column naming the person of each row"
    if near:
        text += f" (did you mean {near[0]!r}? rename it: df.rename(columns={{{near[0]!r}: 'distinct_id'}}))"
    if person:
        text += (
            f"; {person[0]!r} looks like a person id, not a distinct id: flags hash the distinct id the app "
            "sends, so answers keyed by a person id are other people's. A PostHog persons export is read "
            "as it is (its distinct_ids.N columns, one row per distinct id)"
        )
    return text + "; add one, e.g. df['distinct_id'] = [f'user-{i}' for i in range(len(df))]."


def _strip_properties_prefix(frame: pd.DataFrame) -> pd.DataFrame:
    """``properties.X`` columns (PostHog's flattened person properties) read as property ``X``; a clash with
    an existing ``X`` column is refused naming both."""
    renames = {
        c: c[len("properties.") :]
        for c in frame.columns
        if isinstance(c, str) and c.startswith("properties.")
    }
    if not renames:
        return frame
    for source, name in renames.items():
        if name in frame.columns or name in RESERVED:
            raise SimulationInputError(
                f"column {source!r} is property {name!r}, and the frame also has a column {name!r} (or the "
                "name is reserved); keep one of them.",
                column=source,
            )
    return frame.rename(columns=renames)


def _blank_ids(texts: pd.Series) -> pd.Series:
    """Ids that are empty or only white space (``str.strip`` empties them). Only an id that is empty or
    starts with white space can be one, so `strip` runs on those alone (the first characters of an Arrow
    column are read by Arrow and tested once per distinct character)."""
    if isinstance(texts.dtype, pd.StringDtype) and texts.dtype.storage == "pyarrow":
        import pyarrow.compute as pc

        first = pd.Series(pc.utf8_slice_codeunits(texts.array.__arrow_array__(), 0, 1), dtype=texts.dtype)
        codes, uniques = pd.factorize(first)
        spaced = np.array([u == "" or u.isspace() for u in uniques] + [False], dtype=bool)
        candidates = np.flatnonzero(spaced[codes])
    else:
        candidates = np.flatnonzero([not t or t[0].isspace() for t in texts.tolist()])
    blank = np.zeros(len(texts), dtype=bool)
    values: list[Any] = texts.iloc[candidates].tolist() if len(candidates) else []
    blank[candidates] = [not str(t).strip() for t in values]
    return pd.Series(blank, index=texts.index)


def _duplicated_ids(texts: pd.Series) -> pd.Series:
    """``texts.duplicated(keep=False)``; for an Arrow column Arrow's hash set of the ids first says whether
    any repeats (the usual answer, no), which costs a fraction of pandas' pass."""
    if isinstance(texts.dtype, pd.StringDtype) and texts.dtype.storage == "pyarrow" and _distinct(texts):
        return pd.Series(False, index=texts.index)
    return texts.duplicated(keep=False)


def _distinct(texts: pd.Series) -> bool:
    """Whether every id of an Arrow text column is distinct, in 8 bytes a row: each id's bucket hash (the
    flag engine's column SHA-1 over the Arrow buffer, no Python string per row), sorted; two equal ids have
    equal hashes, so no equal neighbours means no repeat, and the rare equal hashes are compared as text. (A
    hash set of the ids, `pyarrow.compute.unique`, held ~110 bytes a row: 1.1 GB at 10M rows.)"""
    from analytics_nb.flags._hashing import EncodedIds, fractions_into

    ids = EncodedIds.from_arrow(texts.array.__arrow_array__())
    hashes = np.empty(len(texts), dtype=np.float64)
    fractions_into(b"", ids, b"", hashes)
    ordered = np.sort(hashes)
    same = ordered[1:] == ordered[:-1]
    if not same.any():
        return True
    suspects = texts[np.isin(hashes, ordered[1:][same])].tolist()
    return len(set(suspects)) == len(suspects)


def release_arrow_memory() -> None:
    """Hand the memory Arrow's allocator keeps after a large computation back to the system: mimalloc and
    jemalloc retain freed blocks, so the hash set of 10M ids would stay in the process (~0.8 GB) for the
    rest of the run. Nothing when pyarrow is not loaded."""
    import sys

    pa = sys.modules.get("pyarrow")
    if pa is not None:
        pa.default_memory_pool().release_unused()


def normalise_property_sets(property_sets: Any) -> PropertySets:
    """Validate ``property_sets`` and return them in the flag-engine frame conventions.

    Raises `SimulationInputError` (a ValueError) naming the column, row and fix for: no ``distinct_id``
    column, a missing or duplicated id, a nested or unsupported cell, a malformed dict column, a column
    name given twice. A PostHog persons or actors export (``distinct_ids.N``, ``properties.X``) is read as
    `analytics_nb.simulation.read_posthog_export` reads it: one row per distinct id (``simulation._exports``).

    Args:
        property_sets: The property sets (any family `simulate` takes).

    Returns:
        The validated `PropertySets`.
    """
    frame = _to_frame(property_sets)
    duplicated = duplicate_columns_error(list(frame.columns))
    if duplicated is not None:
        raise duplicated
    if export_shape(list(frame.columns)) is not None:
        frame = from_export(frame)  # PostHog's persons / actors CSV: one row per distinct id
    else:
        frame = _strip_properties_prefix(frame)
    if "distinct_id" not in frame.columns:
        raise SimulationInputError(_no_distinct_id(frame.columns), column="distinct_id")
    bad_names = [c for c in frame.columns if not isinstance(c, str)]
    if bad_names:
        raise SimulationInputError(
            f"column name {bad_names[0]!r} is not text; property names must be strings "
            "(df.columns = df.columns.map(str)).",
            column=str(bad_names[0]),
        )
    ids = frame["distinct_id"]
    problem = distinct_id_problem(ids)  # float ids (one gap made the column float64): refused with the fix
    if problem:
        raise SimulationInputError(problem, column="distinct_id")
    missing = ids.isna()
    if missing.any():
        rows = _first_bad(missing)
        raise SimulationInputError(
            f"distinct_id is missing at row {rows[0]!r}"
            f"{' (also rows ' + ', '.join(map(repr, rows[1:])) + ')' if len(rows) > 1 else ''}; every "
            "property "
            "set needs an id: fill it in or drop those rows (df.dropna(subset=['distinct_id'])).",
            column="distinct_id",
            row=rows[0],
        )
    _check_scalar_column(frame, "distinct_id")
    # text ids become pandas 3's `str` (`TEXT_IDS`), the dtype of every result's distinct_id: an Arrow column
    # is kept as it is (its buffers shared; the engine hashes them, no Python string per row); integer or
    # mixed ids become their text in an ``object`` column, as before
    texts = ids.astype(TEXT_IDS) if ids_are_text(ids) else id_text(ids).astype(object)
    empty = _blank_ids(texts)
    if empty.any():
        rows = _first_bad(empty)
        raise SimulationInputError(
            f"distinct_id is empty at row {rows[0]!r}; the service rejects empty ids: give each row an id.",
            column="distinct_id",
            row=rows[0],
        )
    dup = _duplicated_ids(texts)
    if dup.any():
        first = texts[dup].iloc[0]
        rows = texts.index[(texts == first).to_numpy()][:_MAX_LISTED].tolist()
        n_dup = int(texts.duplicated().sum())
        raise SimulationInputError(
            f"distinct_id {first!r} appears more than once (rows {', '.join(map(repr, rows))}; {n_dup} "
            "duplicate "
            "row(s) in all); each property set must have its own id. Make them unique (e.g. "
            "df['distinct_id'] = df['distinct_id'] + '-' + df.groupby('distinct_id').cumcount().astype(str)) "
            "or drop repeats with df.drop_duplicates('distinct_id').",
            column="distinct_id",
            row=rows[0],
        )
    frame["distinct_id"] = texts
    if "error" in frame.columns:
        raise SimulationInputError(
            "property sets have a column named 'error', which the result reserves for row errors; rename it "
            "(df.rename(columns={'error': 'error_property'})).",
            column="error",
        )
    if "groups" in frame.columns:
        frame = _expand_groups(frame)
    if "person_properties" in frame.columns:
        _check_dict_column(frame, "person_properties", depth=1)
        frame = _expand_dicts(frame, "person_properties")
    if "group_properties" in frame.columns:
        _check_dict_column(frame, "group_properties", depth=2)
        frame = _expand_dicts(frame, "group_properties")
    group_keys: dict[str, str] = {}
    group_props: dict[str, dict[str, str]] = {}
    person_cols: list[str] = []
    info_cols = [PERSON_ID] if PERSON_ID in frame.columns else []
    for col in frame.columns:
        if col in ("distinct_id", "person_properties", "group_properties", "ip", PERSON_ID):
            continue
        if col.startswith("group:"):
            parts = col.split(":", 2)
            if len(parts) < 2 or not parts[1]:
                raise SimulationInputError(
                    f"column {col!r} does not name a group type; use 'group:<type>' for the group key and "
                    "'group:<type>:<property>' for group properties.",
                    column=col,
                )
            if len(parts) == 2:
                group_keys[parts[1]] = col
            elif not parts[2]:
                raise SimulationInputError(
                    f"column {col!r} names no group property; use 'group:<type>:<property>'.", column=col
                )
            else:
                group_props.setdefault(parts[1], {})[parts[2]] = col
        else:
            person_cols.append(col)
        _check_scalar_column(frame, col)
    if "ip" in frame.columns:
        _check_scalar_column(frame, "ip")
    ordered = ["distinct_id", *[c for c in frame.columns if c != "distinct_id"]]
    return PropertySets(
        frame=frame[ordered],
        person_columns=person_cols,
        group_key_columns=group_keys,
        group_property_columns=group_props,
        has_ip="ip" in frame.columns,
        info_columns=info_cols,
    )


def check_flag_keys(requested: Sequence[str] | str | None, known: Sequence[str]) -> list[str] | None:
    """Validate ``flags=`` against the known flag keys; returns the list (None = all)."""
    if requested is None:
        return None
    if isinstance(requested, str):
        requested = [requested]
    wanted = [str(k) for k in requested]
    known_set = set(known)
    for key in wanted:
        if key not in known_set:
            import difflib

            near = difflib.get_close_matches(key, list(known), n=1)
            hint = f" Did you mean {near[0]!r}?" if near else ""
            listed = ", ".join(map(repr, list(known)[:20])) + (" ..." if len(known) > 20 else "")
            raise SimulationInputError(
                f"unknown flag key {key!r}.{hint} Known flags: {listed or '(none)'}; pass keys from "
                "that list "
                "in flags=, or flags=None for all.",
                key=key,
            )
    return list(dict.fromkeys(wanted))
