"""The property-set and grid texts of the FlagSimulator: parsed into typed values, written back from frames.

Typing is conservative: empty is missing, true/false are booleans, plain numbers are numbers, and anything
else (``007`` included) stays text, so nothing typed is changed silently.
"""

from __future__ import annotations

import csv
import io
import re
from typing import Any

import pandas as pd

from analytics_nb.widgets._errors import FormError

__all__ = ["cell_text", "parse_grid_text", "parse_property_text", "property_text"]

_INT = re.compile(r"^-?(0|[1-9]\d*)$")
_FLOAT = re.compile(r"^-?(0|[1-9]\d*)\.\d+$")


def _cell_value(text: str) -> Any:
    """A typed cell value from text: empty is missing, true/false are booleans, plain numbers are numbers.

    Numbers with leading zeros (``007``) stay text, so nothing typed is changed silently.
    """
    value = text.strip()
    if value == "":
        return None
    lowered = value.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if _INT.match(value):
        return int(value)
    if _FLOAT.match(value):
        return float(value)
    return value


def cell_text(value: Any) -> str:
    """A cell as text: missing is empty, booleans are true/false."""
    if value is None or value is pd.NA or (isinstance(value, float) and value != value):
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def parse_property_text(text: str) -> pd.DataFrame:
    """Parse the property-set text (a CSV header with ``distinct_id`` then one row per set) into a DataFrame.

    Raises FormError naming the line to fix when a row has the wrong number of cells or a bad header.
    """
    lines = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    if not lines:
        raise FormError(
            "The property sets are empty: write a header line such as 'distinct_id,country,plan' and one "
            "line per property set, build a grid, or call load(df)."
        )
    rows = list(csv.reader(io.StringIO("\n".join(lines)), skipinitialspace=True))
    header = [h.strip() for h in rows[0]]
    if "distinct_id" not in header:
        raise FormError(
            f"The first line must be a header that names a 'distinct_id' column, got {', '.join(header)!r}; "
            "for example 'distinct_id,country'."
        )
    empty = [i + 1 for i, h in enumerate(header) if not h]
    if empty:
        raise FormError(f"Header column {empty[0]} has no name; name every column in the first line.")
    duplicated = sorted({h for h in header if header.count(h) > 1})
    if duplicated:
        raise FormError(f"The header names {duplicated[0]!r} twice; each column needs its own name.")
    records: list[dict[str, Any]] = []
    for number, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            raise FormError(
                f"Property-set line {number} has {len(row)} cells but the header has {len(header)} "
                f"({', '.join(header)}); add or remove commas on that line (quote text that contains commas)."
            )
        record = {name: _cell_value(cell) for name, cell in zip(header, row, strict=True)}
        if record["distinct_id"] is None:
            raise FormError(f"Property-set line {number} has an empty distinct_id; give every row an id.")
        record["distinct_id"] = str(row[header.index("distinct_id")]).strip()
        records.append(record)
    if not records:
        raise FormError("There is a header but no property sets: add one line per property set below it.")
    columns: dict[str, Any] = {}
    for name in header:
        values = [r[name] for r in records]
        kinds = {type(v) for v in values if v is not None}
        columns[name] = pd.Series(values, dtype=object) if len(kinds) != 1 or None in values else values
    frame = pd.DataFrame(columns)
    frame["distinct_id"] = frame["distinct_id"].astype(str)
    return frame


def property_text(frame: pd.DataFrame) -> str:
    """The CSV-like text shown for a DataFrame of property sets (nested cells are written as their text)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([str(c) for c in frame.columns])
    for row in frame.itertuples(index=False, name=None):
        writer.writerow([cell_text(v) for v in row])
    return out.getvalue()


def parse_grid_text(text: str) -> dict[str, list[Any]]:
    """Parse grid lines ``property: value, value, ...`` (or ``=``) into the dict ``simulate.grid`` takes."""
    values: dict[str, list[Any]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = re.match(r"^\s*([^:=]+?)\s*[:=]\s*(.*)$", line)
        if not match:
            raise FormError(
                f"Grid line {number} ({line.strip()!r}) needs the form 'property: value, value'; "
                "e.g. 'country: US, DE'."
            )
        name, rest = match.group(1), match.group(2)
        cells = next(csv.reader(io.StringIO(rest), skipinitialspace=True), [])
        parsed = [_cell_value(c) for c in cells if c.strip()]
        if not parsed:
            raise FormError(
                f"Grid line {number} lists no values for {name!r}; give at least one after the colon."
            )
        if name in values:
            raise FormError(f"Grid line {number} repeats the property {name!r}; list its values on one line.")
        values[name] = parsed
    if not values:
        raise FormError("The grid is empty: write one line per property, e.g. 'country: US, DE'.")
    return values
