"""Vectorised evaluation: many property sets (one DataFrame row each) x many flags.

Work is shared and cached: each filter is matched once per distinct value of its column (then broadcast with
numpy), sha1 bucket hashes are computed only for rows that need them and kept per (flag, salt, identifier),
and filter outcome arrays are kept per filter definition, so a what-if re-run with edited rollouts or variant
weights costs a few numpy operations.
"""

from __future__ import annotations

import datetime as dt
import difflib
import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analytics_nb.flags._definitions import CohortGroup, CompiledFlag, ConditionSpec, FilterSpec
from analytics_nb.flags._door import (
    MissingColumns,
    check_missing_columns_value,
    flag_keys,
    retired_flags_argument,
    warn_missing_properties,
)
from analytics_nb.flags._evaluate import (
    INITIAL_PROPERTIES,
    REASON_SCORE,
    CompiledFlags,
    Mode,
    _now,
    check_mode,
    compile_flags,
)
from analytics_nb.flags._hashing import EncodedIds, fractions_into, hash_many, raw_hash
from analytics_nb.flags._incomplete import (
    MissingReferences,
    compiled_definitions,
    missing_references,
    warn_missing,
)
from analytics_nb.flags._operators import ABORT, FALSE, INCONCLUSIVE, SERVER_ONLY, TRUE
from analytics_nb.flags._reader import Definitions, read_definitions
from analytics_nb.flags._values import (
    MISSING,
    BadValueError,
    Opaque,
    holds_sdk_opaque,
    normalize,
    service_text,
)
from analytics_nb.tables import Family, Output, check_output, default_output, from_pandas, to_pandas

#: `$initial_browser` -> `$browser`: the service fills a missing initial property from its twin
_INITIAL_SOURCE = {initial: name for name, initial in INITIAL_PROPERTIES.items()}

_RESERVED = {"distinct_id", "person_properties", "group_properties", "ip", "error"}
# value kinds
_K_FALSE, _K_TRUE, _K_VARIANT, _K_UNKNOWN = 0, 1, 2, 3
_REASONS = [
    "condition_match",
    "no_condition_match",
    "out_of_rollout_bound",
    "no_group_type",
    "super_condition_value",
    "holdout_condition_value",
    "flag_disabled",
    "inconclusive",
    "error",
    "needs_server",
    # the service's own code (below), kept at its place so codes of earlier versions keep their numbers
    "missing_dependency",
    # the row's answer depends on a property the frame has no column for (missing_columns="unknown")
    "missing_property",
]
_R = {name: i for i, name in enumerate(_REASONS)}
#: The categories of every `<key>:reason` column, local and remote alike (so the two compare and concatenate
#: as categoricals): the engine's codes, including the one code today's flags service sends that the engine
#: never gives, "missing_dependency" (rust/feature-flags/src/flags/flag_match_reason.rs,
#: FeatureFlagMatchReason's Display), and "missing_property", which only the engine gives (a property the
#: frame has no column for). A code outside this list (a newer service) is appended by the remote builder.
REASON_CODES: tuple[str, ...] = tuple(_REASONS)


@functools.cache
def reason_dtype() -> pd.CategoricalDtype:
    """The dtype of every `<key>:reason` column (``flags.REASON_DTYPE``). Built on first use: a categorical
    over text makes pandas 3 load pyarrow for its `str` index, and `import analytics_nb.flags` stays cheap."""
    return pd.CategoricalDtype(list(REASON_CODES))


@functools.lru_cache(maxsize=256)
def _payload_dtype(texts: tuple[str, ...]) -> pd.CategoricalDtype:
    """The dtype of a `<key>:payload` column: built once per set of payload texts (pandas checks the
    categories each time a dtype is built, which a chunked run would repeat for every chunk)."""
    return pd.CategoricalDtype(list(texts))


def __getattr__(name: str) -> Any:
    if name == "REASON_DTYPE":
        return reason_dtype()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_NO_ERROR = ""
#: codes into a column's distinct values: int32 (half of pandas' int64; 2**31 distinct values is plenty)
_CODE = np.int32


def _put(target: np.ndarray, rows: np.ndarray, value: Any) -> None:
    """``target[rows] = value`` for an integer array, as one branch-free pass: ``t ^= (t ^ v) & -rows``.

    A boolean-mask scatter costs about 8 ns a row when the mask is irregular (as rollout masks are); the
    blend costs a fraction of a nanosecond. `value` is a scalar or an array of `target`'s dtype.
    """
    mask = rows.view(np.int8) if target.itemsize == 1 else rows.astype(target.dtype)
    if not isinstance(value, np.ndarray):
        value = target.dtype.type(value)
    target ^= (target ^ value) & np.negative(mask)


def _lookup(table: np.ndarray, codes: np.ndarray, missing: Any) -> np.ndarray:
    """``table[codes]`` with `missing` where the code is -1: one take, through a table with an extra slot."""
    ext = np.empty(len(table) + 1, dtype=table.dtype)
    ext[:-1] = table
    ext[-1] = missing
    return ext.take(codes)


@dataclass(slots=True)
class _Column:
    """A property column as codes into a list of distinct plain values (-1 = absent)."""

    codes: np.ndarray
    uniques: list[Any]
    all_str: bool = False
    #: the frame has no column for this property and `missing_columns="unknown"`: every row's value is
    #: unknown (the service would read the person's stored value), not "not set"
    unknown: bool = False


def _factorize(
    series: pd.Series,
    errors: np.ndarray,
    where: str,
    *,
    nulls: bool = False,
    none_is_null: bool = False,
    sdk: bool = False,
) -> _Column:
    """Codes + plain distinct values for one column; bad cells go to `errors` and count as absent.

    A missing cell (NaN, None, pd.NA, NaT) is absent, or JSON null when `nulls`; the MISSING marker (a
    key a dict cell lacks) is always absent. A value outside JSON (timedelta, period, interval, complex,
    bytes, set, objects) is kept as `Opaque`, as the dict API keeps it: only the filters that read it
    answer for it (what the SDK or the service answers, or unknown), and other flags of its row answer.
    `errors` is still filled by the callers for a bad `distinct_id`. With `sdk` (sdk mode), a tuple, or a
    list or dict cell holding values posthog 7.91.1 does not read as JSON (numpy scalars: `[np.float64(1.5)]`,
    as `df.to_dict("records")` hands them over), is kept raw as `Opaque`, so the filters compare what the
    SDK compares for it, as the dict API does (`sdk_container_text`).
    """
    if series.dtype is not np.dtype(object):
        return _factorize_typed(series, errors, nulls)
    arr = series.to_numpy(dtype=object)
    codes = np.full(len(series), -1, dtype=_CODE)
    uniques: list[Any] = []
    index: dict[Any, int] = {}
    hashable = True
    for i, raw in enumerate(arr):
        if raw is MISSING:
            continue
        v = _plain_cell(raw, nulls or none_is_null, sdk)
        if v is MISSING:
            if not nulls:
                continue
            v = None
        if hashable:
            try:
                k = (Opaque, type(raw), raw) if type(v) is Opaque else (type(v), v)
                c = index.get(k)
                if c is None:
                    c = index[k] = len(uniques)
                    uniques.append(v)
                codes[i] = c
                continue
            except TypeError:
                hashable = False
        codes[i] = len(uniques)
        uniques.append(v)
    return _Column(codes, uniques)


def _factorize_typed(series: pd.Series, errors: np.ndarray, nulls: bool) -> _Column:
    """`_factorize` for a typed (non-object) column: pandas factorizes it, the distinct values are made
    plain once each."""
    codes, uniq = pd.factorize(series, use_na_sentinel=True)
    codes = np.asarray(codes, dtype=_CODE)
    if isinstance(series.dtype, pd.StringDtype):
        # a StringDtype holds only str values (missing ones became code -1)
        col = _Column(codes, uniq.tolist(), True)
    else:
        uniques: list[Any] = []
        for u in uniq:
            try:
                v = normalize(u)
            except BadValueError:
                v = Opaque(u)
            uniques.append(v)
        col = _Column(codes, uniques)
    if nulls:
        missing = (codes < 0) & (errors == _NO_ERROR)
        if missing.any():
            col.codes[missing] = len(col.uniques)
            col.uniques.append(None)
            col.all_str = False
    return col


def _plain_cell(raw: Any, none_is_null: bool, sdk: bool) -> Any:
    """One object cell as a plain value (MISSING when absent), or `Opaque` where it stays raw: a value
    outside JSON, and in sdk mode a tuple or a container holding values the SDK does not read as JSON."""
    try:
        if sdk and (isinstance(raw, tuple) or (isinstance(raw, (list, dict)) and holds_sdk_opaque(raw))):
            return Opaque(raw)
        return normalize(raw, none_is_null=none_is_null)
    except BadValueError:
        return Opaque(raw)


def _missing_column(n: int, unknown: bool = False) -> _Column:
    return _Column(np.full(n, -1, dtype=_CODE), [], unknown=unknown)


def _coalesce(first: _Column, second: _Column) -> _Column:
    """`first`'s value where present, else `second`'s."""
    fill = (first.codes < 0) & (second.codes >= 0)
    if not fill.any():
        return first
    codes = first.codes.copy()
    _put(codes, fill, second.codes + len(first.uniques))
    return _Column(codes, [*first.uniques, *second.uniques], first.all_str and second.all_str)


def _arrow_strings(series: pd.Series) -> Any:
    """The pyarrow array behind an Arrow-backed text column (no copy), or None for any other column."""
    dtype = series.dtype
    if isinstance(dtype, pd.StringDtype) and dtype.storage == "pyarrow":
        return series.array.__arrow_array__()
    return None


class _Source:
    """Where one kind of properties comes from: person columns, or one group type's columns."""

    def __init__(self, evaluator: FrameEvaluator, name: str) -> None:
        self.ev = evaluator
        self.name = name
        self.columns: dict[str, _Column] = {}

    def column(self, key: str) -> _Column:
        col = self.columns.get(key)
        if col is None:
            col = self.columns[key] = self.ev._load_column(self.name, key)
        return col

    def unknown(self, key: str) -> bool:
        """Whether the frame has no value of `key` for any row (`missing_columns="unknown"`), without
        reading the column."""
        col = self.columns.get(key)
        return col.unknown if col is not None else self.ev._column_unknown(self.name, key)


def is_group_key_column(name: Any) -> bool:
    """Whether a property-set column holds a group key: ``group:<type>`` (one colon; ``group:<type>:<prop>``
    is a group property). The one spelling of the rule for the engine, simulation and capture.

    Args:
        name: A column name.

    Returns:
        Whether the column is ``group:<type>``.
    """
    text = str(name)
    return text.startswith("group:") and text.count(":") == 1


class FrameEvaluator:
    """Evaluate flags for every row of a frame, caching hashes and filter matches for what-if re-runs.

    `run()` evaluates the definitions given here; `run(definitions=edited)` evaluates edited definitions,
    recomputing only what changed (a new rollout percentage or variant split reuses every hash and property
    match). Relative dates ("-7d") are resolved once, against `now` (default: the time the evaluator was
    built; pass one instant to evaluators over parts of one population so that every part reads dates alike).
    The parameters are `simulate`'s: ``flags`` the keys to answer, ``definitions`` the definitions,
    ``missing_columns="unknown"``.

    Missing cells (NaN, None, pd.NA, NaT) mean "this person lacks the property"; `nulls="null"` reads
    them as JSON null instead (present: `is_set` true, `exact "null"` matches in server mode). A `None`
    inside a `person_properties` dict cell is always null, as in evaluate_flags. A cell outside JSON
    (timedelta, period, interval, complex, bytes, set, objects) matters only to the flags whose filters read
    it, as in evaluate_flags: each answers what its reference answers for that value, or `<NA>` with reason
    "inconclusive"; the row's other flags answer.
    `strict`, `property_matching_version` and `timezone` are as in compile_flags.

    A property the frame has no column for (and no `person_properties` / `group_properties` dict column
    holds) is unknown by default (`missing_columns="unknown"`, as at every door), as it is when the service
    reads a person's stored properties: a row whose answer depends on it is `<NA>` with reason
    "missing_property", and each run warns once (`MissingPropertyWarning`); rows an earlier condition
    decides, or that no value of it could change, keep their answer. `missing_columns="not_set"` reads it as
    "not set" (as the dict API `evaluate_flags` does). `missing_report` says, after each run, which flags
    read which absent properties and how many rows they made unknown. (sdk mode finds an absent property
    inconclusive in either case, as the SDK does.)

    `frame` may be pandas, Polars (eager or lazy), a PyArrow table, record batch or dataset, a DuckDB
    relation or a parquet path (read as pandas over Arrow's buffers, without copying the values). `run()`
    answers in the frame's family (Polars in, Polars out; Arrow in, Arrow out; DuckDB and parquet give
    pandas), or in `output` ("pandas", "polars", "arrow"); `self.output` is that family.

    Args:
        frame: One row per person (pandas, Polars, Arrow, DuckDB, a parquet path).
        flags: The flag keys `run()` answers (a key or a list). None: every flag of the definitions.
        definitions: The current flag definitions (any shape `read_definitions` reads).
        mode: ``"server"`` or ``"sdk"``.
        missing_columns: A property the frame has no column for: ``"unknown"`` (NA with a warning) or
            ``"not_set"`` (absent).
        cohorts: ``{cohort id: cohort filters}``. None: the definitions'.
        group_type_mapping: ``{group type index: name}``. None: the definitions'.
        strict: Raise on a bad definition instead of answering reason "error".
        property_matching_version: 1 or 2. None: the definitions', else 1.
        timezone: The project's IANA time zone. None: the definitions', else UTC.
        nulls: ``"absent"`` (a missing cell means the person lacks the property) or ``"null"``.
        output: The family ``run()`` answers in. None: the frame's.
        now: The instant relative dates are read against. None: when the evaluator is built.
    """

    def __init__(
        self,
        frame: Any,
        flags: Sequence[str] | str | None = None,
        *,
        definitions: Any = None,
        mode: Mode = "server",
        missing_columns: MissingColumns = "unknown",
        cohorts: Mapping[str, Any] | None = None,
        group_type_mapping: Mapping[str, str] | None = None,
        strict: bool = False,
        property_matching_version: int | None = None,
        timezone: str | None = None,
        nulls: str = "absent",
        output: Output | None = None,
        now: dt.datetime | None = None,
    ) -> None:
        flags, definitions = retired_flags_argument(flags, definitions, where="FrameEvaluator(frame, defs)")
        if definitions is None:
            raise TypeError(
                "FrameEvaluator needs definitions= (the flag definitions, any shape read_definitions reads)."
            )
        #: the flag keys `run()` answers (None: every flag); dependencies are evaluated all the same
        self.flags = flag_keys(flags, where="FrameEvaluator")
        chosen = check_output(output)
        frame, family = _read_frame(frame)
        #: the family `run()` answers in: the input's (Polars in, Polars out) or the `output` asked for
        self.output: Output = chosen or default_output(family)
        if "distinct_id" not in frame.columns:
            raise ValueError(
                "the frame needs a 'distinct_id' column (one row per user); "
                f"it has {list(frame.columns)[:10]}"
            )
        if nulls not in ("absent", "null"):
            raise ValueError(
                f"nulls must be 'absent' (missing cells lack the property) or 'null', got {nulls!r}"
            )
        if check_missing_columns_value(missing_columns) is None:
            raise ValueError(
                "missing_columns must be 'unknown' (a property without a column may have a stored value: "
                f"answers that depend on it are NA) or 'not_set', got {missing_columns!r}"
            )
        self.mode = mode
        self._server = check_mode(mode)
        self._nulls = nulls == "null"
        self._unknown_absent = missing_columns == "unknown"
        #: after each run: {flag key: (the absent properties it reads, rows they made unknown)}
        self.missing_report: dict[str, tuple[tuple[str, ...], int]] = {}
        #: after each run: {flag key: the absent properties it reads}, whether or not a row depended on them
        #: (known from the columns alone: what a lazy run over partitions can say before it computes)
        self.absent_properties: dict[str, tuple[str, ...]] = {}
        self._strict = strict
        self._compiled = compile_flags(
            definitions,
            cohorts=cohorts,
            group_type_mapping=group_type_mapping,
            strict=strict,
            property_matching_version=property_matching_version,
            timezone=timezone,
        )
        self._cohorts: Mapping[str, CohortGroup] = self._compiled.cohorts or {}
        self._mapping = self._compiled.group_type_mapping
        self._frame = frame
        self._n = len(frame)
        self._now: dt.datetime = _now(now, self._server, self._compiled.timezone)
        self._errors = np.full(self._n, _NO_ERROR, dtype=object)
        #: the ids as Python text (None for a bad one), built on first use (an Arrow column needs none)
        self._id_list: list[str | None] | None = None
        # encoded once, contiguously: every rollout / variant / holdout hash of a person reads this buffer
        self._id_enc = self._encode_ids()
        self._device_enc: EncodedIds | None = None
        self._sources: dict[str, _Source] = {}
        self._filter_cache: dict[tuple[str, str], np.ndarray] = {}
        self._hash_cache: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}
        self._group_keys: dict[str, tuple[np.ndarray, list[str]]] = {}
        self._group_passed: dict[str, np.ndarray] = {}
        #: set by evaluate_frame (no re-run will follow): caches a re-run would need are released as soon as
        #: their flag is done, which lowers the peak memory of a big frame
        self._one_shot = False
        #: warn (`MissingPropertyWarning`) after each run; the simulation's runners warn once for all chunks
        self._warn = True
        #: the last object output column of each name, to hand back unchanged ones on a what-if re-run
        self._object_columns: dict[str, tuple[tuple[Any, ...], np.ndarray, pd.Series]] = {}
        self._plain_columns = [
            c
            for c in frame.columns
            if isinstance(c, str) and c not in _RESERVED and not c.startswith("group:")
        ]

    # ------------------------------------------------------------------ inputs

    @property
    def _ids(self) -> list[str | None]:
        """The ids as Python text, None where the row has an error (a missing or bad id)."""
        if self._id_list is None:
            self._id_list = self._load_ids()
        return self._id_list

    def _encode_ids(self) -> EncodedIds:
        """The ids encoded for hashing; an Arrow-backed text column is read in place (no Python string per
        row), and its null or empty ids are marked as errors as `_load_ids` marks them."""
        col = self._frame["distinct_id"]
        arrow = _arrow_strings(col)
        if arrow is None:
            ids = self._ids
            return EncodedIds.from_strs([s if s is not None else "" for s in ids] if None in ids else ids)  # type: ignore[arg-type]
        enc = EncodedIds.from_arrow(arrow)
        bad = np.diff(enc.offsets) == 0  # a null id has no text either
        if bad.any():
            self._errors[bad] = "distinct_id is missing or not a string/number"
        return enc

    def _load_ids(self) -> list[str | None]:
        col = self._frame["distinct_id"]
        if col.dtype == object:
            plain: list[Any] = col.tolist()
            if set(map(type, plain)) == {str}:  # the usual object column: only text, read as it is
                for bad_row in [i for i, v in enumerate(plain) if not v]:
                    self._errors[bad_row] = "distinct_id is missing or not a string/number"
                    plain[bad_row] = None
                return plain
        if pd.api.types.is_float_dtype(col.dtype):
            raise ValueError(
                "the 'distinct_id' column has a float dtype, and 3.0 and 3 hash differently (a flag would "
                "bucket these users as '3.0'); convert it first, e.g. "
                "frame['distinct_id'] = frame['distinct_id'].astype('Int64').astype('string')"
            )
        if isinstance(col.dtype, pd.StringDtype):
            # one object array with "" for missing cells, then one comparison (no per-row Python work)
            values = col.to_numpy(dtype=object, na_value="")
            bad = values == ""
            ids: list[str | None] = values.tolist()
            del values
            if bad.any():
                self._errors[bad] = "distinct_id is missing or not a string/number"
                for bad_row in np.flatnonzero(bad).tolist():
                    ids[bad_row] = None
            return ids
        if pd.api.types.is_integer_dtype(col.dtype) and not col.isna().any():
            return [str(v) for v in col.tolist()]
        out: list[str | None] = []
        for i, raw in enumerate(col.tolist()):
            try:
                v = normalize(raw)
            except BadValueError as exc:
                self._errors[i] = f"distinct_id: {exc}"
                out.append(None)
                continue
            if v is MISSING or v == "" or isinstance(v, (dict, list)):
                self._errors[i] = "distinct_id is missing or not a string/number"
                out.append(None)
            else:
                out.append(str(v))
        return out

    def _source(self, name: str) -> _Source:
        src = self._sources.get(name)
        if src is None:
            src = self._sources[name] = _Source(self, name)
        return src

    def _load_column(self, source: str, key: str) -> _Column:
        frame = self._frame
        nulls = self._nulls
        if source == "empty":
            return _missing_column(self._n)
        if source == "person":
            col = self._person_column(key)
            if self._server and not col.unknown and key in _INITIAL_SOURCE and _INITIAL_SOURCE[key] != key:
                # the service fills a missing `$initial_x` from `$x` (populate_missing_initial_properties)
                base = self._source("person").column(_INITIAL_SOURCE[key])
                col = _coalesce(col, base)
            return col
        name = source.removeprefix("group:")
        col_name = f"group:{name}:{key}"
        if col_name in frame.columns:
            col = _factorize(
                frame[col_name], self._errors, f"column {col_name!r}", nulls=nulls, sdk=not self._server
            )
        elif "group_properties" in frame.columns:
            inner = [d.get(name) if isinstance(d, Mapping) else None for d in frame["group_properties"]]
            col = _factorize(
                self._dict_values(pd.Series(inner, dtype=object), key),
                self._errors,
                f"group_properties[{name!r}][{key!r}]",
                nulls=nulls,
                none_is_null=True,
                sdk=not self._server,
            )
        else:
            col = _missing_column(self._n, self._unknown_absent)
        if key == "$group_key":
            # the group's key is one of its properties unless given (the SDK's client adds it)
            keys = self._group_key_values(name)
            col = keys if col.unknown else _coalesce(col, keys)
        return col

    def _column_unknown(self, source: str, key: str) -> bool:
        """`_load_column(source, key).unknown`, read from the column names alone."""
        if not self._unknown_absent or source == "empty":
            return False
        columns = self._frame.columns
        if source == "person":
            return (
                key not in self._plain_columns and key != "distinct_id" and "person_properties" not in columns
            )
        name = source.removeprefix("group:")
        return (
            key != "$group_key" and f"group:{name}:{key}" not in columns and "group_properties" not in columns
        )

    def _person_column(self, key: str) -> _Column:
        frame = self._frame
        if key in self._plain_columns:
            return _factorize(
                frame[key], self._errors, f"column {key!r}", nulls=self._nulls, sdk=not self._server
            )
        if key == "distinct_id":
            # the service and the SDK's client add distinct_id to the person properties unless sent
            ids = pd.Series(self._ids, dtype=object)
            if "person_properties" in frame.columns:
                sent = self._dict_values(frame["person_properties"], key)
                ids = pd.Series(
                    [s if s is not MISSING else i for s, i in zip(sent, ids, strict=True)], dtype=object
                )
            return _factorize(ids, self._errors, "distinct_id", none_is_null=True)
        if "person_properties" in frame.columns:
            return _factorize(
                self._dict_values(frame["person_properties"], key),
                self._errors,
                f"person_properties[{key!r}]",
                nulls=self._nulls,
                none_is_null=True,
                sdk=not self._server,
            )
        return _missing_column(self._n, self._unknown_absent)

    def _group_key_values(self, name: str) -> _Column:
        col_name = f"group:{name}"
        if col_name not in self._frame.columns:
            return _missing_column(self._n)
        return _factorize(self._frame[col_name], self._errors, f"column {col_name!r}")

    @staticmethod
    def _dict_values(col: pd.Series, key: str) -> pd.Series:
        """The values of `key` in dict cells; MISSING where a cell is no dict or lacks the key."""
        return pd.Series(
            [d.get(key, MISSING) if isinstance(d, Mapping) else MISSING for d in col], dtype=object
        )

    def _group_key_codes(self, name: str) -> tuple[np.ndarray, list[str]]:
        """Codes (-1 = no key) and distinct key texts of the `group:<name>` column."""
        hit = self._group_keys.get(name)
        if hit is None:
            col_name = f"group:{name}"
            if col_name in self._frame.columns:
                col = _factorize(self._frame[col_name], self._errors, f"column {col_name!r}")
                texts = []
                for i, u in enumerate(col.uniques):
                    if isinstance(u, (dict, list)):
                        bad = col.codes == i
                        self._errors[bad & (self._errors == _NO_ERROR)] = (
                            f"{col_name}: a group key must be a string"
                        )
                        col.codes[bad] = -1
                    elif self._server and (u is True or u is False or u == "" or u is None or u is MISSING):
                        # the service skips group conditions without a usable key (empty, boolean)
                        col.codes[col.codes == i] = -1
                    texts.append(service_text(u) if self._server and isinstance(u, float) else str(u))
                hit = (col.codes, texts)
            else:
                hit = (np.full(self._n, -1, dtype=_CODE), [])
            self._group_keys[name] = hit
        return hit

    def _group_props_passed(self, name: str) -> np.ndarray:
        """Rows for which the SDK has properties of group type `name` (given ones, or the `$group_key` its
        client adds for a passed group)."""
        hit = self._group_passed.get(name)
        if hit is None:
            prefix = f"group:{name}:"
            if any(isinstance(c, str) and c.startswith(prefix) for c in self._frame.columns):
                hit = np.ones(self._n, dtype=bool)
            elif "group_properties" in self._frame.columns:
                hit = np.array(
                    [
                        isinstance(d, Mapping) and isinstance(d.get(name), Mapping)
                        for d in self._frame["group_properties"]
                    ],
                    dtype=bool,
                )
            else:
                hit = np.zeros(self._n, dtype=bool)
            # the SDK's client gives every passed group a `$group_key` property, so a key is enough
            hit = hit | (self._group_key_codes(name)[0] >= 0)
            self._group_passed[name] = hit
        return hit

    # ------------------------------------------------------------------ hashing

    def _hashes(self, prefix: str, suffix: str, bucket: str, rows: np.ndarray) -> np.ndarray:
        """Bucket fractions sha1(prefix + identifier + suffix) for `rows` (others may be stale/NaN)."""
        cache_key = (prefix + "\x00" + suffix, bucket)
        hit = self._hash_cache.get(cache_key)
        if hit is None:
            hit = self._hash_cache[cache_key] = (np.full(self._n, np.nan), np.zeros(self._n, dtype=bool))
        values, done = hit
        need = rows & ~done
        if need.any():
            pfx, sfx = prefix.encode("utf-8"), suffix.encode("utf-8")
            if bucket.startswith("group:"):
                codes, texts = self._group_key_codes(bucket.removeprefix("group:"))
                table = hash_many(pfx, [t.encode("utf-8") for t in texts], sfx)
                np.copyto(values, _lookup(table, codes, np.nan))
                done |= codes >= 0
            else:
                idx = np.flatnonzero(need)
                sel = None if len(idx) == self._n else idx
                fractions_into(pfx, self._bucket_ids(bucket), sfx, values, sel)
                done |= need
        return values

    def _bucket_ids(self, bucket: str) -> EncodedIds:
        if bucket == "person":
            return self._id_enc
        if bucket == "device":
            enc = self._device_enc
            if enc is None:
                col = self._source("person").column("$device_id")
                texts = [str(u) for u in col.uniques]
                ids = self._ids
                enc = self._device_enc = EncodedIds.from_strs(
                    [texts[c] if c >= 0 else (ids[i] or "") for i, c in enumerate(col.codes.tolist())]
                )
            return enc
        raise AssertionError(bucket)

    # ------------------------------------------------------------------ matching

    def _routed(self, spec: FilterSpec, source: _Source) -> _Source:
        """Server mode: person filters read the person, group filters their own group type (else the
        condition's group); flag_matching.rs `PropertyContext::resolve_for_filter`."""
        if spec.route == "person":
            return self._source("person")
        if spec.group_index is not None:
            name = self._mapping.get(str(spec.group_index))
            return self._source(f"group:{name}") if name else self._source("empty")
        return source if source.name.startswith("group:") else self._source("empty")

    def _filter_codes(self, spec: FilterSpec, source: _Source, state: _RunState) -> np.ndarray:
        if spec.kind == "flag":
            return state.dependency_codes(spec)
        if self._server and spec.kind == "property":
            source = self._routed(spec, source)
        cache_key = (spec.signature, source.name)
        hit = self._filter_cache.get(cache_key)
        if hit is not None:
            return hit
        if spec.kind == "property":
            out = self._property_codes(spec, source)
        else:
            group = self._cohorts.get(spec.cohort_id or "")
            if group is None:
                out = np.full(self._n, SERVER_ONLY, dtype=np.int8)
            else:
                out = self._group_codes(group, source, state)
                if spec.cohort_negate:
                    out = _negate(out)
        if not _has_dependency(spec, self._cohorts):
            self._filter_cache[cache_key] = out
        return out

    def _property_codes(self, spec: FilterSpec, source: _Source) -> np.ndarray:
        m = spec.matcher
        assert m is not None
        if source.unknown(spec.key):
            return np.full(self._n, INCONCLUSIVE, dtype=np.int8)
        server, now = self._server, self._now
        direct = self._arrow_codes(m, source, spec.key) if spec.key not in source.columns else None
        if direct is not None:
            return direct
        col = source.column(spec.key)
        fast = m.match_strs(col.uniques, server) if col.all_str else None
        if not server and not m.sdk_supported:
            table = np.full(len(col.uniques), INCONCLUSIVE, dtype=np.int8)
        elif fast is not None:
            table = fast
        else:
            match = m.match
            table = np.fromiter(
                (match(u, server, now) for u in col.uniques), dtype=np.int8, count=len(col.uniques)
            )
            table[table == ABORT] = SERVER_ONLY  # (an np.float64 cell the SDK fails on; frames read floats)
            if server:  # an unusable value does not match; one the client cannot send stays unknown
                opaque = [i for i, u in enumerate(col.uniques) if type(u) is Opaque]
                keep = table[opaque]
                table[table == INCONCLUSIVE] = FALSE
                table[opaque] = keep
        return _lookup(table.astype(np.int8, copy=False), col.codes, m.missing(server))

    def _arrow_codes(self, m: Any, source: _Source, key: str) -> np.ndarray | None:
        """A text filter (icontains, starts_with, ...) over an Arrow-backed person column, matched by Arrow
        row by row instead of once per distinct value: a column of mostly distinct values (emails) would cost
        a Python string each. None where this path does not apply (the caller factorizes the column)."""
        if source.name != "person" or self._nulls or key not in self._plain_columns or key in _INITIAL_SOURCE:
            return None
        arrow = _arrow_strings(self._frame[key])
        if arrow is None or m.arrow_strs is None:
            return None
        import pyarrow.compute as pc

        nulls = arrow.null_count > 0
        codes = m.match_arrow(pc.fill_null(arrow, "") if nulls else arrow, self._server)
        if codes is None:
            return None
        if nulls:
            _put(codes, np.asarray(arrow.is_null(), dtype=bool), m.missing(self._server))
        return codes

    def _group_codes(self, group: CohortGroup, source: _Source, state: _RunState) -> np.ndarray:
        n = self._n
        if not group.children:
            return np.full(n, TRUE, dtype=np.int8)
        decisive = np.zeros(n, dtype=bool)
        inconclusive = np.zeros(n, dtype=bool)
        server_only = np.zeros(n, dtype=bool)
        want = FALSE if group.is_and else TRUE
        for child in group.children:
            if isinstance(child, CohortGroup):
                code = self._group_codes(child, source, state)
            else:
                code = self._filter_codes(child, source, state)
                if child.negation:
                    code = _negate(code)
            server_only |= code == SERVER_ONLY
            inconclusive |= code == INCONCLUSIVE
            decisive |= code == want
        out = np.full(n, TRUE if group.is_and else FALSE, dtype=np.int8)
        _put(out, inconclusive, INCONCLUSIVE)
        _put(out, decisive, want)
        _put(out, server_only, SERVER_ONLY)
        return out

    def _condition_codes(self, cond: ConditionSpec, source: _Source, state: _RunState) -> np.ndarray:
        n = self._n
        if not cond.filters:
            return np.full(n, TRUE, dtype=np.int8)
        if len(cond.filters) == 1:
            return self._filter_codes(cond.filters[0], source, state)
        # one pass per filter: FALSE wins, else the first open code (INCONCLUSIVE / SERVER_ONLY), else TRUE
        any_false = np.zeros(n, dtype=bool)
        first_open = np.zeros(n, dtype=np.int8)
        for spec in cond.filters:
            code = self._filter_codes(spec, source, state)
            any_false |= code == FALSE
            _put(first_open, (code >= INCONCLUSIVE) & (first_open == 0), code)
        out = first_open
        _put(out, out == 0, TRUE)
        _put(out, any_false, FALSE)
        return out

    def missing_references(self, definitions: Any = None) -> MissingReferences:
        """The cohorts and group type names the flags use but this evaluator lacks (a flags frame carries
        neither): their answers are NA, or False for a group flag in server mode (see
        `flags.missing_references`). A group type's name counts only where it changes an answer: in sdk
        mode, or when the frame has a ``group:<type>`` column.

        Args:
            definitions: Edited definitions for `run` (any shape `read_definitions` reads; they are evaluated
                with this evaluator's cohorts and group type mapping). None: the ones given at construction.

        Returns:
            A `MissingReferences` (falsy when nothing is missing).
        """
        defs = compiled_definitions(self._compiled)
        if definitions is not None:
            defs = Definitions(
                read_definitions(definitions).flags, defs.cohorts, defs.group_type_mapping, defs.kind
            )
        missing = missing_references(defs)
        if self._server and not any(is_group_key_column(c) for c in self._frame.columns):
            return missing.without_groups()
        return missing

    # ------------------------------------------------------------------ running

    def run(
        self,
        flags: Sequence[str] | str | None = None,
        *,
        definitions: Any = None,
        payloads: bool = False,
        reasons: bool = False,
        output: Output | None = None,
    ) -> Any:
        """Evaluate (optionally edited) flags for every row; a DataFrame aligned to the input index.

        Columns: distinct_id, one per flag (boolean dtype, or object holding the variant key / False; pd.NA
        when unknown), optional `<key>:payload` and `<key>:reason` (category; NaN when there is none),
        `<key>:condition_index` (Int64), and `error` (string). `pd.isna` finds the missing cells of each.
        The frame is in `output` (default `self.output`, the input's family); in Arrow and Polars a boolean
        flag is a `bool` column (null where unknown), a multivariate flag a `string` column (the variant
        key, "false" where none matched) and a category column a dictionary column, without the pandas
        index.

        A property the frame has no column for makes the answers that depend on it NA (reason
        ``missing_property``) unless the evaluator was built with ``missing_columns="not_set"``; each run
        warns once (`MissingPropertyWarning`) with the flags, the properties and the counts.

        Args:
            flags: The flag keys to answer (a key or a list). None: the evaluator's ``flags`` (every flag
                when it was built without). Flags they depend on are evaluated all the same.
            definitions: Edited definitions to evaluate instead (what-if). None: the ones given at
                construction.
            payloads: Add ``<key>:payload`` columns.
            reasons: Add ``<key>:reason`` and ``<key>:condition_index`` columns.
            output: The result's family. None: the evaluator's.

        Returns:
            The result, aligned to the input's index.
        """
        flags, definitions = retired_flags_argument(flags, definitions, where="FrameEvaluator.run(edited)")
        family = check_output(output) or self.output
        compiled = (
            self._compiled
            if definitions is None
            else compile_flags(
                definitions,
                cohorts=None,
                group_type_mapping=self._mapping,
                strict=self._strict,
                property_matching_version=self._compiled.property_matching_version,
                timezone=self._compiled.timezone,
            )
        )
        keys = self.flags if flags is None else flag_keys(flags, where="FrameEvaluator.run")
        check_keys(keys, [f.key for f in compiled.flags])
        clash = {f.key for f in compiled.flags} & {"distinct_id", "error"}
        if clash:
            raise ValueError(
                f"flag key {sorted(clash)[0]!r} would collide with an output column; rename the flag"
            )
        state = _RunState(self, compiled)
        self.missing_report = {}
        self.absent_properties = {}
        for flag in compiled.order:
            state.evaluate(flag)
            state.note_absent(flag)
            if self._one_shot:
                # a flag's own hashes ("{key}." prefixes) serve no other flag; holdout hashes are shared
                for key in [k for k in self._hash_cache if not k[0].startswith("holdout-")]:
                    del self._hash_cache[key]
                if not reasons:  # only the value (kind, variant) is output or read by dependent flags
                    res = state.results[flag.key]
                    res.reason = np.empty(0, dtype=res.reason.dtype)
                    res.index = np.empty(0, dtype=res.index.dtype)
        if self._one_shot:
            # nothing below reads the inputs' codes, matches, hashes or encoded ids: free them before the
            # output columns are built
            self._release_caches()
        if keys is not None:
            self.missing_report = {k: v for k, v in self.missing_report.items() if k in keys}
        if self._warn:
            warn_missing_properties(self.missing_report, self._n)
        out = state.frame(payloads=payloads, reasons=reasons, keys=keys)
        return out if family == "pandas" else from_pandas(out, family)

    def _release_caches(self) -> None:
        self._sources.clear()
        self._filter_cache.clear()
        self._hash_cache.clear()
        self._group_keys.clear()
        self._group_passed.clear()
        self._device_enc = None
        self._id_enc = EncodedIds(b"", np.zeros(1, dtype=np.int64))
        self._id_list = []


def _negate(code: np.ndarray) -> np.ndarray:
    # TRUE (1) <-> FALSE (0): flip the low bit of those two codes only
    return code ^ (code <= TRUE).view(np.int8)


def _has_dependency(spec: FilterSpec, cohorts: Mapping[str, CohortGroup]) -> bool:
    if spec.kind == "flag":
        return True
    if spec.kind != "cohort":
        return False
    seen: set[str] = set()

    def walk(group: CohortGroup) -> bool:
        for child in group.children:
            if isinstance(child, CohortGroup):
                if walk(child):
                    return True
            elif child.kind == "flag":
                return True
            elif child.kind == "cohort" and child.cohort_id not in seen and child.cohort_id in cohorts:
                seen.add(child.cohort_id or "")
                if walk(cohorts[child.cohort_id or ""]):
                    return True
        return False

    group = cohorts.get(spec.cohort_id or "")
    return group is not None and walk(group)


@dataclass(slots=True)
class _FlagArrays:
    kind: np.ndarray
    #: for multivariate flags: per row, the position of the variant key in `labels` (-1 = none)
    variant: np.ndarray | None
    reason: np.ndarray
    index: np.ndarray
    labels: list[str]

    def label(self, text: str) -> int:
        """The code of a variant key, added to `labels` if new."""
        try:
            return self.labels.index(text)
        except ValueError:
            self.labels.append(text)
            return len(self.labels) - 1


class _Pending:
    """Server mode, per row: conditions passed over whose match was unknown (a property without a column,
    a dependency without a known value). The row's answer is known only when every value of the unknown
    would give the same one."""

    def __init__(self, n: int) -> None:
        self.n = n
        #: whether any condition was unknown for some row (the arrays below are built on first use)
        self.active = False
        #: an unknown condition within its rollout: had it matched, the flag would have matched there
        self.value = np.zeros(0, dtype=bool)
        #: ... with a value a later match may not share (a variant override, or another bucket)
        self.odd = np.zeros(0, dtype=bool)
        #: an unknown condition outside its rollout on an early-exit flag: had it matched, False
        self.stop = np.zeros(0, dtype=bool)
        self.buckets: set[str] = set()

    def add(
        self, flag: CompiledFlag, cond: ConditionSpec, bucket: str, within: np.ndarray, beyond: np.ndarray
    ) -> None:
        if not self.active:
            self.active = True
            self.value, self.odd, self.stop = (np.zeros(self.n, dtype=bool) for _ in range(3))
        self.value |= within
        if flag.multivariate and cond.variant is not None:
            self.odd |= within
        self.buckets.add(bucket)
        if flag.early_exit:
            self.stop |= beyond

    def differs(self, flag: CompiledFlag, cond: ConditionSpec, bucket: str) -> np.ndarray:
        """Rows whose match at `cond` might not be the answer: an earlier unknown condition would have
        stopped the flag, or matched with another value (a boolean flag's value is always True)."""
        out = self.stop | self.odd
        if flag.multivariate and (cond.variant is not None or self.buckets - {bucket}):
            out = out | self.value
        return out


def _settle_unmatched(
    best: np.ndarray, und: np.ndarray, kind: np.ndarray, reason: np.ndarray, index: np.ndarray
) -> None:
    """The rows no condition matched: false, with the best-ranked reason and its condition index."""
    if not und.any():
        return
    by_score = np.full(8, _R["no_group_type"], dtype=np.int8)
    for name in ("no_group_type", "no_condition_match", "out_of_rollout_bound"):
        by_score[REASON_SCORE[name]] = _R[name]
    _put(kind, und, _K_FALSE)
    _put(reason, und, by_score.take(best // 4096))
    _put(index, und, (best % 4096 - 1).astype(index.dtype))


class _RunState:
    """Results of one run: per-flag value kinds, variants, reasons and condition indexes."""

    def __init__(self, ev: FrameEvaluator, compiled: CompiledFlags) -> None:
        self.ev = ev
        self.compiled = compiled
        self.results: dict[str, _FlagArrays] = {}
        #: rows with a known error when the run started (errors found later are applied in `frame`)
        self.bad = ev._errors != _NO_ERROR
        #: per flag: the properties it reads (its dependencies' included) that the frame has no column for
        self.absent: dict[str, tuple[str, ...]] = {}

    def open_reason(self, flag: CompiledFlag) -> str:
        """The reason of a row left unknown by an undecided condition."""
        return "missing_property" if self.absent_reads(flag) else "inconclusive"

    def absent_reads(self, flag: CompiledFlag) -> tuple[str, ...]:
        """The properties `flag` reads (its cohorts and dependencies included) that the frame has no
        column, when `missing_columns="unknown"`: "the person's stored `country`", "the stored `industry` of
        group 'company'"."""
        ev = self.ev
        hit = self.absent.get(flag.key)
        if hit is not None or not ev._unknown_absent:
            return hit or ()
        found: dict[str, None] = {}
        seen: set[str] = set()

        def visit(first: FilterSpec, source: _Source) -> None:
            # depth first through cohorts, in order, with a stack of iterators: a closure recursing through
            # another (visit <-> walk) is a reference cycle that kept this run and its evaluator (every
            # cached array) alive until the cyclic collector ran
            stack: list[Iterator[FilterSpec | CohortGroup]] = [iter([first])]
            while stack:
                item = next(stack[-1], None)
                if item is None:
                    stack.pop()
                elif isinstance(item, CohortGroup):
                    stack.append(iter(item.children))
                elif item.kind == "property":
                    note_property(item, source)
                elif item.kind == "cohort":
                    group = ev._cohorts.get(item.cohort_id or "")
                    if group is not None and item.cohort_id not in seen:
                        seen.add(item.cohort_id or "")
                        stack.append(iter(group.children))
                else:
                    found.update(
                        dict.fromkeys(self.absent.get(self.compiled.alias.get(item.key, item.key), ()))
                    )

        def note_property(spec: FilterSpec, source: _Source) -> None:
            src = ev._routed(spec, source) if ev._server else source
            if src.unknown(spec.key):
                where = src.name.removeprefix("group:")
                label = (
                    f"the person's stored `{spec.key}`"
                    if src.name == "person"
                    else f"the stored `{spec.key}` of group {where!r}"
                )
                found[label] = None

        person = ev._source("person")
        if flag.feature_enrollment and person.unknown(f"$feature_enrollment/{flag.key}"):
            found[f"the person's stored `$feature_enrollment/{flag.key}`"] = None
        conds = [*flag.conditions, *([flag.super_condition] if flag.super_condition is not None else [])]
        for cond in conds:
            agg = cond.aggregation if ev._server or cond.has_own_aggregation else flag.aggregation
            name = ev._mapping.get(str(agg)) if agg is not None else None
            source = person if agg is None else ev._source(f"group:{name}") if name else None
            if source is not None:
                for spec in cond.filters:
                    visit(spec, source)
        out = self.absent[flag.key] = tuple(found)
        return out

    def note_absent(self, flag: CompiledFlag) -> None:
        """Record in `missing_report` how many rows of `flag` absent properties made unknown."""
        ev = self.ev
        labels = self.absent_reads(flag)
        if not labels:
            return
        ev.absent_properties[flag.key] = labels
        res = self.results[flag.key]
        unknown = (res.kind == _K_UNKNOWN) & ~(ev._errors != _NO_ERROR)
        if ev._server:
            unknown &= res.reason == _R["missing_property"]
        count = int(unknown.sum())
        if count:
            ev.missing_report[flag.key] = (labels, count)

    def dependency_codes(self, spec: FilterSpec) -> np.ndarray:
        n = self.ev._n
        target = self.compiled.alias.get(spec.key, spec.key)
        res = self.results.get(target)
        if res is None:
            return np.full(n, INCONCLUSIVE, dtype=np.int8)
        expected = spec.expected
        out = np.full(n, FALSE, dtype=np.int8)
        if isinstance(expected, bool):
            hit = (res.kind == _K_VARIANT) if expected else np.zeros(n, dtype=bool)
            hit |= res.kind == (_K_TRUE if expected else _K_FALSE)
        else:
            hit = (
                (res.kind == _K_VARIANT) & (res.variant == res.labels.index(expected))
                if res.variant is not None and expected in res.labels
                else np.zeros(n, dtype=bool)
            )
        out[hit] = TRUE
        out[res.kind == _K_UNKNOWN] = INCONCLUSIVE
        return out

    def evaluate(self, flag: CompiledFlag) -> None:
        ev = self.ev
        n = ev._n
        server = ev._server
        kind = np.full(n, _K_FALSE, dtype=np.int8)
        variant = np.full(n, -1, dtype=np.int16) if flag.multivariate else None
        reason = np.full(n, _R["no_condition_match"], dtype=np.int8)
        # condition indexes are small: int16 unless a flag has more conditions than that holds
        wide = max(len(flag.conditions), len(flag.server_conditions)) >= 32000
        index = np.full(n, -1, dtype=np.int32 if wide else np.int16)
        decided = self.bad.copy()
        _put(kind, decided, _K_UNKNOWN)
        labels = [v[0] for v in flag.variants]
        self.results[flag.key] = arrays = _FlagArrays(kind, variant, reason, index, labels)

        def settle(rows: np.ndarray, k: int, r: str, idx: int = -1, var: Any = None) -> None:
            # fused: one blend per output array (no boolean scatters), skipped when no row is settled
            if not rows.any():
                return
            m8 = np.negative(rows.view(np.int8))
            np.bitwise_xor(kind, (kind ^ np.int8(k)) & m8, out=kind)
            np.bitwise_xor(reason, (reason ^ np.int8(_R[r])) & m8, out=reason)
            m_index = m8.astype(index.dtype)
            np.bitwise_xor(index, (index ^ np.asarray(idx, dtype=index.dtype)) & m_index, out=index)
            if var is not None and variant is not None:
                v = var if isinstance(var, np.ndarray) else np.int16(arrays.label(var))
                np.bitwise_xor(variant, (variant ^ v) & m8.astype(np.int16), out=variant)
            np.bitwise_or(decided, rows, out=decided)

        und = ~decided
        if not flag.active:
            settle(und, _K_FALSE, "flag_disabled")
            return
        if flag.error is not None and server:
            settle(und, _K_FALSE, "error")
            return
        if flag.needs_server is not None:
            settle(und, _K_UNKNOWN, "needs_server")
            return
        if server:
            self._evaluate_server(flag, kind, reason, index, decided, settle)
            return
        subject = self._sdk_subject(flag, decided, settle)
        if subject is None:
            return
        source, bucket = subject
        if self._sdk_early(flag, source, bucket, decided, settle):
            return
        self._sdk_conditions(flag, source, bucket, reason, index, decided, settle)

    def _sdk_subject(
        self, flag: CompiledFlag, decided: np.ndarray, settle: Any
    ) -> tuple[_Source, str] | None:
        """sdk mode: the source and bucketing column of the flag's subject (a person, or the group the flag
        aggregates by), settling the rows the SDK cannot evaluate locally; None when no row is left."""
        ev = self.ev
        if flag.continuity:
            settle(~decided, _K_UNKNOWN, "inconclusive")
            return None
        person = ev._source("person")
        if flag.aggregation is not None:
            name = ev._mapping.get(str(flag.aggregation))
            if not name:
                settle(~decided, _K_UNKNOWN, "inconclusive")
                return None
            codes, _ = ev._group_key_codes(name)
            settle(~decided & (codes < 0), _K_FALSE, "no_group_type")
            settle(~decided & ~ev._group_props_passed(name), _K_UNKNOWN, "inconclusive")
            return ev._source(f"group:{name}"), f"group:{name}"
        if flag.device_bucketing:
            dev = person.column("$device_id")
            settle(~decided & (dev.codes < 0), _K_UNKNOWN, "inconclusive")
            return person, "device"
        return person, "person"

    def _sdk_early(
        self, flag: CompiledFlag, source: _Source, bucket: str, decided: np.ndarray, settle: Any
    ) -> bool:
        """sdk mode: a definition the SDK cannot read, early access and holdouts, before the conditions.
        True when they decided every row left."""
        ev = self.ev
        if flag.error is not None and not flag.sdk_evaluates:
            # the SDK's client checks (continuity, group given) come first; then the definition fails
            settle(~decided, _K_UNKNOWN, "error")
            return True
        if flag.feature_enrollment:
            und = ~decided
            if flag.aggregation is not None:
                settle(und, _K_UNKNOWN, "inconclusive")
                return True
            col = source.column(f"$feature_enrollment/{flag.key}")
            table = np.array([u is True or u == "true" for u in col.uniques], dtype=bool)
            present = col.codes >= 0
            on = _lookup(table, col.codes, False)
            settle(und & ~present, _K_UNKNOWN, "inconclusive")
            settle(und & present & on, _K_TRUE, "super_condition_value", 0)
            settle(und & present & ~on, _K_FALSE, "super_condition_value", 0)
            return True
        if flag.holdout is not None:
            hv, pct = flag.holdout
            rows = ~decided
            if pct < 100.0:
                rows &= ~(ev._hashes("holdout-", "", bucket, rows) > pct / 100)
            settle(rows, _K_VARIANT, "holdout_condition_value", -1, hv)
        return False

    def _sdk_conditions(
        self,
        flag: CompiledFlag,
        source: _Source,
        bucket: str,
        reason: np.ndarray,
        index: np.ndarray,
        decided: np.ndarray,
        settle: Any,
    ) -> None:
        """sdk mode: the release conditions in order, as `_evaluate._sdk_conditions` for every row."""
        ev = self.ev
        kind = self.results[flag.key].kind
        open_seen = np.zeros(ev._n, dtype=bool)
        for cond in flag.conditions:
            und = ~decided
            if not und.any():
                break
            csource, cbucket = source, bucket
            if cond.has_own_aggregation and cond.aggregation is not None:
                name = ev._mapping.get(str(cond.aggregation))
                later = (reason == _R["no_condition_match"]) | (reason == _R["out_of_rollout_bound"])
                if not name:
                    better = und & later
                    reason[better] = _R["no_group_type"]
                    index[better] = cond.index
                    continue
                codes, _ = ev._group_key_codes(name)
                nokey = und & (codes < 0)
                better = nokey & later
                reason[better] = _R["no_group_type"]
                index[better] = cond.index
                und = und & ~nokey
                missing_props = und & ~ev._group_props_passed(name)
                open_seen |= missing_props
                und &= ~missing_props
                csource, cbucket = ev._source(f"group:{name}"), f"group:{name}"
            code = ev._condition_codes(cond, csource, self)
            settle(und & (code == SERVER_ONLY), _K_UNKNOWN, "inconclusive")
            open_seen |= und & (code == INCONCLUSIVE)
            hit = und & (code == TRUE)
            if cond.rollout is not None and cond.rollout < 100 and hit.any():
                oor = hit & (ev._hashes(f"{flag.key}.", "", cbucket, hit) > cond.rollout / 100)
                first = oor & (reason == _R["no_condition_match"])
                reason[first] = _R["out_of_rollout_bound"]
                index[first] = cond.index
                hit &= ~oor
                if flag.early_exit:
                    settle(oor & open_seen, _K_UNKNOWN, "inconclusive")
                    kind[oor & ~open_seen] = _K_FALSE
                    decided[oor] = True
            self._settle_match(flag, hit, cond.variant, cbucket, "condition_match", cond.index, settle)
        settle(~decided & open_seen, _K_UNKNOWN, "inconclusive")
        # the rest stay False with their best reason (no_condition_match, out_of_rollout_bound, no_group_type)

    def _evaluate_server(
        self,
        flag: CompiledFlag,
        kind: np.ndarray,
        reason: np.ndarray,
        index: np.ndarray,
        decided: np.ndarray,
        settle: Any,
    ) -> None:
        """Rows in server mode: the vectorised form of `_evaluate._evaluate_server` (flag_matching.rs
        `get_match`)."""
        ev = self.ev
        n = ev._n
        person = ev._source("person")
        person_bucket = "device" if flag.device_bucketing else "person"
        if flag.device_bucketing:
            dev = person.column("$device_id")
            ok_dev = np.array([isinstance(u, str) and u != "" for u in dev.uniques], dtype=bool)
            has_device = _lookup(ok_dev, dev.codes, False)
        else:
            has_device = np.ones(n, dtype=bool)

        if self._server_gate(flag, person, person_bucket, has_device, decided, settle):
            return
        self._server_holdout(flag, person_bucket, decided, settle)
        self._server_conditions(flag, person, person_bucket, has_device, kind, reason, index, decided, settle)

    def _server_gate(
        self,
        flag: CompiledFlag,
        person: _Source,
        person_bucket: str,
        has_device: np.ndarray,
        decided: np.ndarray,
        settle: Any,
    ) -> bool:
        """Server mode, early access: `feature_enrollment`, else the legacy super condition when the
        person has one of its properties. True when nothing below may run (the stored enrollment is
        unknown)."""
        ev = self.ev
        n = ev._n
        if flag.feature_enrollment:
            col = person.column(f"$feature_enrollment/{flag.key}")
            if col.unknown:  # the person's stored enrollment decides, and the frame does not have it
                settle(~decided, _K_UNKNOWN, "missing_property")
                return True
            table = np.array([u is True or u == "true" for u in col.uniques], dtype=bool)
            present = col.codes >= 0
            on = _lookup(table, col.codes, False)
            und = ~decided
            settle(und & present & on, _K_TRUE, "super_condition_value", 0)
            settle(und & present & ~on, _K_FALSE, "super_condition_value", 0)
        elif flag.super_condition is not None and flag.super_condition.filters:
            sc = flag.super_condition
            mentioned = np.zeros(n, dtype=bool)
            unknown = False
            for f in sc.filters:
                col = person.column(f.key)
                mentioned |= col.codes >= 0
                unknown |= col.unknown
            if unknown:  # whether the person has a stored value of the gate's properties is unknown
                settle(~decided & ~mentioned, _K_UNKNOWN, "missing_property")
            rows = ~decided & mentioned
            if rows.any():
                code = ev._condition_codes(sc, person, self)
                # a filter only the service can answer (SERVER_ONLY) leaves the gate unknown too, as the
                # dict path answers it (`_server_early_access`)
                settle(
                    rows & ((code == INCONCLUSIVE) | (code == SERVER_ONLY)),
                    _K_UNKNOWN,
                    self.open_reason(flag),
                )
                rows &= ~decided
                ok = rows & (code == TRUE)
                if sc.rollout is not None and sc.rollout != 100:
                    ok &= ~(
                        has_device & (ev._hashes(f"{flag.key}.", "", person_bucket, ok) > sc.rollout / 100)
                    )
                settle(ok, _K_TRUE, "super_condition_value", 0)
                settle(rows & ~ok, _K_FALSE, "super_condition_value", 0)

        return False

    def _server_holdout(
        self, flag: CompiledFlag, person_bucket: str, decided: np.ndarray, settle: Any
    ) -> None:
        """Server mode: the holdout, bucketed like the flag (by person, device or group key)."""
        ev = self.ev
        n = ev._n
        if flag.holdout is not None:
            hv, pct = flag.holdout
            rows = ~decided
            if pct < 100.0 and rows.any():
                if flag.aggregation is None:
                    bucket = person_bucket
                    held = ev._hashes("holdout-", "", bucket, rows) <= pct / 100
                else:
                    name = ev._mapping.get(str(flag.aggregation), "")
                    codes, _ = ev._group_key_codes(name) if name else (np.full(n, -1), [])
                    held = np.full(n, raw_hash("holdout-") <= pct / 100)
                    if name:
                        keyed = codes >= 0
                        h = ev._hashes("holdout-", "", f"group:{name}", rows & keyed)
                        held[keyed] = h[keyed] <= pct / 100
                rows &= held
            settle(rows, _K_VARIANT, "holdout_condition_value", -1, hv)

    def _server_conditions(
        self,
        flag: CompiledFlag,
        person: _Source,
        person_bucket: str,
        has_device: np.ndarray,
        kind: np.ndarray,
        reason: np.ndarray,
        index: np.ndarray,
        decided: np.ndarray,
        settle: Any,
    ) -> None:
        """Server mode: the release conditions in order, each with its own aggregation, ranking the reason
        of the rows no condition matched as the service does."""
        ev = self.ev
        n = ev._n
        # The best reason so far per row as one number, score * 4096 + condition index + 1: a running
        # maximum keeps the higher score, and among equal scores the later condition (as the service does).
        best = np.full(n, REASON_SCORE["no_group_type"] * 4096, dtype=np.int32)

        def rank(rows: np.ndarray, new: str, idx: int) -> None:
            if rows.any():
                key = REASON_SCORE[new] * 4096 + min(idx, 4094) + 1
                np.maximum(best, rows * np.int32(key), out=best)

        pending = _Pending(n)
        for cond in flag.conditions:
            und = ~decided
            if not und.any():
                break
            subject = self._condition_rows(flag, cond, und, person, person_bucket, has_device, rank)
            if subject is None:
                continue
            rows, csource, cbucket = subject
            code = ev._condition_codes(cond, csource, self)
            hit, undecided = self._rank_unmatched(rows, code, cond.index, rank, settle)
            out: np.ndarray | None = None
            if cond.rollout is not None and cond.rollout != 100 and (undecided is not None or hit.any()):
                hit, out = self._rollout(flag, cond, cbucket, hit, undecided, pending, decided, rank, settle)
            if undecided is not None:
                if out is None:
                    pending.add(flag, cond, cbucket, undecided, np.zeros(n, dtype=bool))
                else:
                    pending.add(flag, cond, cbucket, undecided & ~out, undecided & out)
            if pending.active:
                # a definite match here, but an earlier unknown condition may have answered otherwise
                settle(hit & pending.differs(flag, cond, cbucket), _K_UNKNOWN, self.open_reason(flag))
                hit &= ~decided
            self._settle_match(flag, hit, cond.variant, cbucket, "condition_match", cond.index, settle)
        # no condition matched: unknown where an unknown condition would have matched
        if pending.active:
            settle(~decided & pending.value, _K_UNKNOWN, self.open_reason(flag))
        _settle_unmatched(best, ~decided, kind, reason, index)

    def _condition_rows(
        self,
        flag: CompiledFlag,
        cond: ConditionSpec,
        und: np.ndarray,
        person: _Source,
        person_bucket: str,
        has_device: np.ndarray,
        rank: Callable[[np.ndarray, str, int], None],
    ) -> tuple[np.ndarray, _Source, str] | None:
        """The undecided rows one condition reads, with its source and bucket (person, or its group type);
        rows it cannot read are ranked (no device id, no group key). None: no row left for it."""
        ev = self.ev
        if cond.aggregation is None:
            if flag.device_bucketing:
                rank(und & ~has_device, "out_of_rollout_bound", cond.index)
                rows = und & has_device
            else:
                rows = und
            csource, cbucket = person, person_bucket
        else:
            group_name = ev._mapping.get(str(cond.aggregation))
            if not group_name:
                rank(und, "no_group_type", cond.index)
                return None
            codes, _ = ev._group_key_codes(group_name)
            rank(und & (codes < 0), "no_group_type", cond.index)
            rows = und & (codes >= 0)
            csource, cbucket = ev._source(f"group:{group_name}"), f"group:{group_name}"
        if not rows.any():
            return None
        return rows, csource, cbucket

    @staticmethod
    def _rank_unmatched(
        rows: np.ndarray,
        code: np.ndarray,
        idx: int,
        rank: Callable[[np.ndarray, str, int], None],
        settle: Any,
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """Settle the rows only the service can answer, rank those the condition does not match; returns
        the matched rows and the rows whose match is unknown (None when there are none)."""
        matched = code == TRUE
        # one reduction tells whether any row is open (SERVER_ONLY / INCONCLUSIVE): the common case
        # skips the rest of this bookkeeping
        any_open = bool(code.max(initial=TRUE) > TRUE)
        server_only = code == SERVER_ONLY if any_open else None
        if server_only is not None and server_only.any():
            settle(rows & server_only, _K_UNKNOWN, "inconclusive")
            rank(rows & ~matched & ~server_only, "no_condition_match", idx)
        else:
            rank(rows & ~matched, "no_condition_match", idx)
        # rows whose match is unknown (a property without a column, a dependency with no known value)
        undecided = rows & (code == INCONCLUSIVE) if any_open else None
        if undecided is not None and not undecided.any():
            undecided = None
        return rows & matched, undecided

    def _rollout(
        self,
        flag: CompiledFlag,
        cond: ConditionSpec,
        cbucket: str,
        hit: np.ndarray,
        undecided: np.ndarray | None,
        pending: _Pending,
        decided: np.ndarray,
        rank: Callable[[np.ndarray, str, int], None],
        settle: Any,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The condition's rollout over the matched and unknown rows: matched rows outside it are ranked
        (and settled false with early exit); returns the rows still matched and the rows outside."""
        assert cond.rollout is not None  # the caller reads a rollout below 100 only
        need = hit if undecided is None else hit | undecided
        out = self.ev._hashes(f"{flag.key}.", "", cbucket, need) > cond.rollout / 100
        oor = hit & out
        rank(oor, "out_of_rollout_bound", cond.index)
        hit = hit & ~oor
        if flag.early_exit and oor.any():
            # PostHog PR #57321 (flag_matching.rs; posthog-python `_match_flag_conditions`): the
            # properties matched but the rollout excludes the person: stop here, False
            if pending.active:
                settle(oor & pending.value, _K_UNKNOWN, self.open_reason(flag))
            settle(oor & ~decided, _K_FALSE, "out_of_rollout_bound", cond.index)
        return hit, out

    def _settle_match(
        self,
        flag: CompiledFlag,
        rows: np.ndarray,
        override: str | None,
        bucket: str,
        reason: str,
        idx: int,
        settle: Any,
    ) -> None:
        if not rows.any():
            return
        if override is not None:
            settle(rows, _K_VARIANT, reason, idx, override)
            return
        if not flag.variants:
            settle(rows, _K_TRUE, reason, idx)
            return
        h = self.ev._hashes(f"{flag.key}.", "variant", bucket, rows)
        chosen = np.full(self.ev._n, -1, dtype=np.int16)
        covered = np.zeros(self.ev._n, dtype=bool)
        for code, (_vkey, low, high) in enumerate(flag.variants):
            in_range = rows & ~covered & (h >= low) & (h < high)
            _put(chosen, in_range, code)
            covered |= in_range
        settle(rows & covered, _K_VARIANT, reason, idx, chosen)
        settle(rows & ~covered, _K_TRUE, reason, idx)

    # ------------------------------------------------------------------ output

    def _reused(self, name: str, key: tuple[Any, ...], pos: np.ndarray) -> pd.Series | None:
        """The column ``name`` of the previous run when it was built from the same ``key`` and ``pos``: a
        what-if re-run hands unchanged columns back instead of rebuilding them (copy-on-write keeps the two
        results independent)."""
        hit = self.ev._object_columns.get(name)
        if hit is not None and hit[0] == key and np.array_equal(hit[1], pos):
            return hit[2]
        return None

    def _keep(self, name: str, key: tuple[Any, ...], pos: np.ndarray, series: pd.Series) -> pd.Series:
        if not self.ev._one_shot:
            self.ev._object_columns[name] = (key, pos, series)
        return series

    def _object_column(self, name: str, lookup: list[Any], pos: np.ndarray) -> pd.Series:
        """An object column whose row i is ``lookup[pos[i]]`` (a multivariate flag's values). Building one
        costs a pointer copy and a reference count a row, so an unchanged one is reused on a re-run."""
        key = tuple(("NA", None) if v is pd.NA else (type(v).__name__, v) for v in lookup)
        series = self._reused(name, key, pos)
        if series is None:
            values = np.array(lookup, dtype=object).take(pos)
            series = self._keep(
                name, key, pos, pd.Series(values, index=self.ev._frame.index, dtype=object, copy=False)
            )
        return series

    def _category_column(self, name: str, dtype: pd.CategoricalDtype, codes: np.ndarray) -> pd.Series:
        """A ``category`` column from its codes (-1 = missing, NaN in pandas); one byte a row."""
        key = ("category", tuple(dtype.categories))
        series = self._reused(name, key, codes)
        if series is None:
            cat = pd.Categorical.from_codes(codes, dtype=dtype, validate=False)
            series = self._keep(name, key, codes, pd.Series(cat, index=self.ev._frame.index, copy=False))
        return series

    def _payload_column(self, flag: CompiledFlag, labels: list[str], pos: np.ndarray) -> pd.Series:
        """``<key>:payload``: ``category`` over the flag's payload texts; row i is the payload of its value
        (``pos`` as in `frame`: a variant label, then False, True, NA); missing where there is none."""
        texts = list(dict.fromkeys(flag.payloads.values()))
        code_of = {t: i for i, t in enumerate(texts)}

        def code(label: str) -> int:
            text = flag.payloads.get(label)
            return -1 if text is None else code_of[text]

        # codes in the type pandas keeps for this many categories (int8 below 127), so nothing is converted
        narrow = np.int8 if len(texts) < 127 else np.int32
        lookup = np.array([*(code(v) for v in labels), -1, code("true"), -1], dtype=narrow)
        return self._category_column(f"{flag.key}:payload", _payload_dtype(tuple(texts)), lookup.take(pos))

    def frame(self, *, payloads: bool, reasons: bool, keys: Sequence[str] | None = None) -> pd.DataFrame:
        """The output columns of the flags in ``keys``, in that order (None: every flag, in the definitions'
        order)."""
        ev = self.ev
        data: dict[str, Any] = {"distinct_id": ev._frame["distinct_id"]}
        extra: dict[str, Any] = {}
        bad_rows = ev._errors != _NO_ERROR
        any_bad = bool(bad_rows.any())
        by_key = {flag.key: flag for flag in self.compiled.flags}
        for flag in self.compiled.flags if keys is None else [by_key[k] for k in dict.fromkeys(keys)]:
            # one-shot: each flag's arrays are released once its columns are built
            res = self.results.pop(flag.key) if ev._one_shot else self.results[flag.key]
            _put(res.kind, bad_rows, _K_UNKNOWN)
            unknown = res.kind == _K_UNKNOWN
            # one lookup position per row: a variant label, then False, True, NA
            m = len(res.labels)
            pos = (res.kind == _K_TRUE).astype(np.int16) + np.int16(m)
            if res.variant is not None:
                _put(pos, res.kind == _K_VARIANT, res.variant)
            _put(pos, unknown, m + 2)
            if flag.multivariate:
                data[flag.key] = self._object_column(flag.key, [*res.labels, False, True, pd.NA], pos)
            else:
                data[flag.key] = pd.Series(
                    pd.arrays.BooleanArray(res.kind == _K_TRUE, unknown), index=ev._frame.index, copy=False
                )
            if payloads:
                extra[f"{flag.key}:payload"] = self._payload_column(flag, res.labels, pos)
            if reasons:
                # the reason codes are reason_dtype()'s codes; an error row has none
                codes = np.where(bad_rows, np.int8(-1), res.reason) if any_bad else res.reason
                extra[f"{flag.key}:reason"] = self._category_column(
                    f"{flag.key}:reason", reason_dtype(), codes
                )
                # an error row has no condition index either (one found after its flag ran included)
                extra[f"{flag.key}:condition_index"] = pd.arrays.IntegerArray(
                    np.maximum(res.index, 0).astype(np.int64), (res.index < 0) | bad_rows
                )
        for name, values in extra.items():
            data[name] = (
                values
                if isinstance(values, (pd.api.extensions.ExtensionArray, pd.Series))
                else pd.Series(values, index=ev._frame.index, dtype=object, copy=False)
            )
        out = pd.DataFrame(data, index=ev._frame.index, copy=False)
        if any_bad:
            errors = ev._errors.copy()
            errors[~bad_rows] = None
            out["error"] = pd.array(errors, dtype="string")
        else:
            out["error"] = pd.Series(pd.NA, index=ev._frame.index, dtype="string")
        return out


def check_keys(keys: Sequence[str] | None, known: Sequence[str]) -> None:
    """Every key asked for is a flag of the definitions, else a ValueError naming the nearest key."""
    for key in keys or ():
        if key not in known:
            near = difflib.get_close_matches(key, list(known), n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise ValueError(
                f"flag {key!r} is not in the definitions{hint}; the definitions have {len(known)} flags."
            )


def _read_frame(frame: Any) -> tuple[pd.DataFrame, Family]:
    """The input as pandas and its family (`analytics_nb.tables.to_pandas`: Polars, Arrow, DuckDB and
    parquet over Arrow's buffers); anything that is not a table is a TypeError naming the families."""
    converted, family = to_pandas(frame)
    if family == "records":
        raise TypeError(
            "frame must be a table (pandas, Polars, PyArrow, DuckDB or a parquet path), got "
            f"{type(frame).__name__}; for a list of dicts use pd.DataFrame(rows)."
        )
    return converted, family


def evaluate_frame(
    frame: Any,
    flags: Sequence[str] | str | None = None,
    *,
    definitions: Any = None,
    mode: Mode = "server",
    missing_columns: MissingColumns = "unknown",
    cohorts: Mapping[str, Any] | None = None,
    group_type_mapping: Mapping[str, str] | None = None,
    payloads: bool = False,
    reasons: bool = False,
    strict: bool = False,
    property_matching_version: int | None = None,
    timezone: str | None = None,
    nulls: str = "absent",
    output: Output | None = None,
    now: dt.datetime | None = None,
) -> Any:
    """Evaluate flags for every row of `frame` (one user per row): the flag engine without a client, with
    `simulate`'s parameter names and defaults (``flags`` the keys, ``definitions`` the definitions,
    ``missing_columns="unknown"``). See FrameEvaluator for what-if re-runs, missing cells (`nulls`), the
    instant relative dates are read against (`now`), the input families and the other options. The result is
    in the frame's family (Polars in, Polars out; Arrow in, Arrow out) or in `output` ("pandas", "polars",
    "arrow").

    Args:
        frame: One row per person: ``distinct_id`` plus property columns (pandas, Polars, Arrow, DuckDB, a
            parquet path).
        flags: Flag keys to answer (one key, or a list). None: every flag of the definitions.
        definitions: The flag definitions (any shape `read_definitions` reads).
        mode: ``"server"`` or ``"sdk"``.
        missing_columns: A property the frame has no column for: ``"unknown"`` (answers that depend on it
            are NA, reason ``missing_property``, with one `MissingPropertyWarning`) or ``"not_set"`` (the
            person lacks it).
        cohorts: ``{cohort id: cohort filters}``. None: the definitions'.
        group_type_mapping: ``{group type index: name}``. None: the definitions'.
        payloads: Add ``<key>:payload`` columns.
        reasons: Add ``<key>:reason`` and ``<key>:condition_index`` columns.
        strict: Raise on a bad definition instead of answering reason "error".
        property_matching_version: 1 or 2. None: the definitions', else 1.
        timezone: The project's IANA time zone. None: the definitions', else UTC.
        nulls: ``"absent"`` (a missing cell means the person lacks the property) or ``"null"`` (it holds
            null).
        output: ``"pandas"``, ``"polars"`` or ``"arrow"``. None: the frame's family.
        now: The instant relative dates are read against. None: now.

    Returns:
        ``distinct_id`` and one column per flag (NA where the answer is unknown), in the chosen family.

    Warns:
        MissingPropertyWarning: Flags read properties the frame has no column for (``missing_columns=
            "unknown"``): how many answers are NA, per flag, and the fixes.
        IncompleteDefinitionsWarning: Flags use cohorts or group type indexes the definitions (and
            ``cohorts`` / ``group_type_mapping``) do not carry, as a flags DataFrame does not: their answers
            are NA; pass the definitions response (``client.feature_flags.definitions()``) instead.
    """
    flags, definitions = retired_flags_argument(flags, definitions, where="evaluate_frame(frame, defs)")
    evaluator = FrameEvaluator(
        frame,
        flags,
        definitions=definitions,
        mode=mode,
        missing_columns=missing_columns,
        cohorts=cohorts,
        group_type_mapping=group_type_mapping,
        strict=strict,
        property_matching_version=property_matching_version,
        timezone=timezone,
        nulls=nulls,
        output=output,
        now=now,
    )
    evaluator._one_shot = True
    # a flags frame carries no cohorts / group type names: say so once, the answers stay NA
    warn_missing(evaluator.missing_references(), stacklevel=2)
    return evaluator.run(payloads=payloads, reasons=reasons)


__all__ = ["FrameEvaluator", "check_keys", "evaluate_frame", "is_group_key_column"]
