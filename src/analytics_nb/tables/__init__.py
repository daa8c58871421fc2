"""Tables of every family the package reads: pandas, Polars (eager and lazy), PyArrow tables, record batches
and datasets, DuckDB relations and parquet paths.

The one place where a caller's table becomes the pandas frame the flag engine and the simulation read
(`to_pandas`, over Arrow buffers without copying the values) and where a pandas result goes back to the
caller's family (`from_pandas`, `default_output`). It sits at the bottom of the package (it imports no other
part), so `flags` and `simulation` both use it. Polars, PyArrow and DuckDB are imported only when one of
their objects is passed in: ``import analytics_nb.tables`` loads none of them.
"""

from __future__ import annotations

from analytics_nb.tables._convert import (
    OUTPUTS,
    Family,
    Output,
    check_output,
    default_output,
    family_of,
    from_pandas,
    text_column,
    to_pandas,
)
from analytics_nb.tables._errors import TableInputError
from analytics_nb.tables._extras import MissingExtraError

__all__ = [
    "OUTPUTS",
    "Family",
    "MissingExtraError",
    "Output",
    "TableInputError",
    "check_output",
    "default_output",
    "family_of",
    "from_pandas",
    "text_column",
    "to_pandas",
]
