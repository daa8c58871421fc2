"""Build and reshape result frames in the flags frame conventions of docs/architecture.md."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from analytics_nb.flags import REASON_CODES

__all__ = [
    "INPUT_COLUMNS_ATTR",
    "SUFFIXES",
    "TEXT_IDS",
    "build_frame",
    "concat_frames",
    "flag_columns",
    "ids_are_text",
    "result_ids",
    "select_flags",
    "text_dtype",
]

SUFFIXES = (":payload", ":reason", ":condition_index")

#: ``frame.attrs`` key naming the input property columns (``country``, ``plan``) a result frame carries beside
#: its outputs (``SimulationResult.frame``): readers of result frames never take them for flags.
INPUT_COLUMNS_ATTR = "analytics_nb.input_columns"

#: The ``distinct_id`` dtype of every result (local, remote, both, sql, Dask, what-if) when the input ids are
#: text: pandas 3's default text dtype, ``str`` (what ``pd.Series(["a"]).dtype`` is: Arrow-backed where
#: pyarrow is installed, NaN for missing). Arrow holds 10M ids in ~0.2 GB where ``object`` held ~0.7 GB of
#: Python strings, and an Arrow input column is the result's own (no copy). Integer or mixed ids stay
#: ``object`` (their text, as before): the result never shows 7 as "7" in a text dtype that says it was text.
TEXT_IDS = pd.StringDtype(na_value=np.nan)


def text_dtype(dtype: Any) -> bool:
    """Whether ``dtype`` holds text only: pandas' ``str`` / ``string``, or an Arrow string type (a parquet,
    Arrow or Polars input read over Arrow buffers)."""
    if isinstance(dtype, pd.StringDtype):
        return True
    if isinstance(dtype, pd.ArrowDtype):
        import pyarrow as pa

        tests = (pa.types.is_string, pa.types.is_large_string, pa.types.is_string_view)
        return any(test(dtype.pyarrow_dtype) for test in tests)
    return False


def ids_are_text(ids: pd.Series) -> bool:
    """Whether input ids are text: a text dtype (`text_dtype`), or ``object`` cells that are all ``str`` (no
    cell at all counts as text: nothing is turned into text)."""
    if text_dtype(ids.dtype):
        return True
    return ids.dtype == object and pd.api.types.infer_dtype(ids, skipna=False) in ("string", "empty")


def result_ids(ids: pd.Series, dtype: Any) -> pd.Series:
    """The result's ``distinct_id`` column: ``ids`` in the property sets' id dtype (`TEXT_IDS` when the input
    ids were text, else ``object``; `normalise_property_sets` decides, once, for every door), with no copy
    when it is that dtype already."""
    return ids if ids.dtype == dtype else ids.astype(dtype)


def flag_column(values: Sequence[Any], index: pd.Index, *, multivariate: bool) -> pd.Series:
    """A flag's values: ``boolean`` dtype for on/off flags, ``object`` (variant or False) for multivariate;
    None becomes pd.NA."""
    if multivariate:
        return pd.Series([pd.NA if v is None else v for v in values], index=index, dtype=object)
    return pd.Series(pd.array([None if v is None else bool(v) for v in values], dtype="boolean"), index=index)


def category_column(
    values: Sequence[str | None], index: pd.Index, categories: Sequence[str] = ()
) -> pd.Series:
    """A ``category`` column (payloads, reasons: a few texts repeated), as the local engine builds them:
    ``categories`` first (e.g. REASON_CODES, so local and remote reasons share a dtype), then any other
    text in order of appearance; None is missing (NaN, like pandas 3's ``str``)."""
    extra = [v for v in dict.fromkeys(values) if v is not None and v not in set(categories)]
    dtype = pd.CategoricalDtype([*categories, *extra])
    return pd.Series(pd.Categorical(list(values), dtype=dtype), index=index)


def error_column(errors: Sequence[str | None], index: pd.Index) -> pd.Series:
    """The ``error`` column: pandas ``string`` dtype, NA where a row has no error (like the flag engine)."""
    return pd.Series(pd.array([None if e is None else str(e) for e in errors], dtype="string"), index=index)


def build_frame(
    index: pd.Index,
    distinct_ids: Sequence[str],
    flag_keys: Sequence[str],
    values: dict[str, list[Any]],
    *,
    multivariate: set[str],
    payloads: dict[str, list[Any]] | None = None,
    payload_texts: Mapping[str, Sequence[str]] | None = None,
    reasons: dict[str, list[Any]] | None = None,
    condition_index: dict[str, list[Any]] | None = None,
    errors: Sequence[str | None],
    id_dtype: Any = object,
) -> pd.DataFrame:
    """Assemble a result frame: distinct_id (in ``id_dtype``, the property sets' id dtype: see
    `result_ids`), one column per flag, then payload/reason/index columns, error."""
    cols: dict[str, pd.Series] = {"distinct_id": pd.Series(list(distinct_ids), index=index, dtype=id_dtype)}
    for key in flag_keys:
        cols[key] = flag_column(values[key], index, multivariate=key in multivariate)
    if payloads is not None:
        for key in flag_keys:
            cols[f"{key}:payload"] = category_column(payloads[key], index, (payload_texts or {}).get(key, ()))
    if reasons is not None:
        for key in flag_keys:
            cols[f"{key}:reason"] = category_column(reasons[key], index, REASON_CODES)
    if condition_index is not None:
        for key in flag_keys:
            cols[f"{key}:condition_index"] = pd.Series(
                pd.array(condition_index[key], dtype="Int64"), index=index
            )
    cols["error"] = error_column(errors, index)
    return pd.DataFrame(cols, index=index)


def flag_columns(frame: pd.DataFrame) -> list[str]:
    """The flag-value columns of a result frame (not distinct_id, error, the ``<key>:...`` extras or the input
    columns a ``SimulationResult.frame`` carries, named in ``frame.attrs[INPUT_COLUMNS_ATTR]``)."""
    inputs = set(frame.attrs.get(INPUT_COLUMNS_ATTR, ()))
    return [
        c
        for c in frame.columns
        if c not in ("distinct_id", "error")
        and c not in inputs
        and not any(str(c).endswith(s) for s in SUFFIXES)
    ]


def select_flags(
    frame: pd.DataFrame, keys: Sequence[str] | None, *, payloads: bool, reasons: bool
) -> pd.DataFrame:
    """Keep ``keys`` (None = all) and their extras, in the conventional column order, error last."""
    all_keys = flag_columns(frame)
    keys = all_keys if keys is None else [k for k in keys if k in all_keys]
    cols = ["distinct_id", *keys]
    if payloads:
        cols += [f"{k}:payload" for k in keys if f"{k}:payload" in frame.columns]
    if reasons:
        cols += [f"{k}:reason" for k in keys if f"{k}:reason" in frame.columns]
        cols += [f"{k}:condition_index" for k in keys if f"{k}:condition_index" in frame.columns]
    out = frame[cols]
    if "error" in frame.columns:
        out = out.assign(error=frame["error"])
    else:
        out = out.assign(error=error_column([None] * len(frame), frame.index))
    return out


def concat_frames(parts: Sequence[pd.DataFrame], *, ignore_index: bool = False) -> pd.DataFrame:
    """Result frames one under the other (chunks of one run), keeping their index. A ``category`` column
    stays one: pandas' concat falls back to ``object`` when the parts' categories differ (remote payloads
    seen in one chunk and not another), so the parts get the union of the categories first, in order of
    appearance.

    Args:
        parts: The result frames, in order.
        ignore_index: Number the rows 0..n-1 instead of keeping the parts' index.

    Returns:
        One frame.
    """
    frames = list(parts)
    if not frames:
        return pd.DataFrame()
    merged: dict[str, list[Any]] = {}
    for frame in frames:
        for name in frame.columns:
            dtype = frame[name].dtype
            if isinstance(dtype, pd.CategoricalDtype):
                merged.setdefault(name, []).extend(dtype.categories.tolist())
    if merged:
        union = {name: pd.CategoricalDtype(list(dict.fromkeys(cats))) for name, cats in merged.items()}
        frames = [f.astype({n: union[n] for n in f.columns if n in union}) for f in frames]
    return pd.concat(frames, ignore_index=ignore_index)
