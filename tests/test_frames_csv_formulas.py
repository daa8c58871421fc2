"""Issue 27 finding 4: CSV formula injection.

``frames.to_csv`` wrote cells starting with ``=``, ``+``, ``-``, ``@``, tab or CR unchanged, and a spreadsheet
runs them as formulas; playlist names, flag names and event properties are written by anyone in the project.
Now such cells get a leading ``'`` by default and ``read_csv`` restores them exactly; signed numbers are not
formulas and stay as they are.
"""

from __future__ import annotations

import csv
import io

import numpy as np
import pandas as pd
import pytest

from analytics_nb.frames import FormulaCellsWarning, read_csv, to_csv

ATTACKS = ['=HYPERLINK("http://x","y")', "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)", "\tx", "\r=1", "'quoted"]


def _cells(text: str) -> list[list[str]]:
    body = text.split("\n", 1)[1]
    return list(csv.reader(io.StringIO(body, newline="")))


def _frame() -> pd.DataFrame:
    n = len(ATTACKS)
    return pd.DataFrame(
        {
            "name": pd.array(ATTACKS, dtype="string"),
            "plain": pd.array(["a"] * n, dtype="string"),
            "props": pd.Series([{"k": v} for v in ATTACKS[:-1]] + ["=1+1"], dtype=object),
            "delta": np.array([-1.5, 2.0, -0.0, -1e-9, 3.0, -7.0, float("-inf")]),
            "count": pd.array([-1, 2, None, -4, 5, 6, -7], dtype="Int64"),
            "signed": pd.array(["-3", "+4.5", "-1e3", "-", "--1", "-3a", "+"], dtype="string"),
            "kind": pd.Categorical(["=cmd()", "ok"] * 3 + ["ok"]),
        }
    )


def test_formula_cells_are_neutralised_and_read_back_exactly() -> None:
    df = _frame()
    text = to_csv(df)
    assert text is not None
    rows = _cells(text)
    written = {name: [row[i] for row in rows[1:]] for i, name in enumerate(rows[0])}
    for column in written.values():
        for cell in column:  # no cell a spreadsheet would run (old code wrote ATTACKS unchanged)
            assert not cell or not (cell[0] in "=@\t\r" or (cell[0] in "+-" and not _number(cell))), cell
    assert written["name"][0] == "'" + ATTACKS[0] and written["name"][-1] == "''quoted"
    assert written["delta"][0] == "-1.5" and written["count"][0] == "-1"  # negative numbers untouched
    assert written["signed"][:3] == ["-3", "+4.5", "-1e3"]  # signed numbers in text too
    assert written["signed"][3:] == ["'-", "'--1", "'-3a", "'+"]
    assert written["plain"] == ["a"] * len(ATTACKS)  # columns without formulas are not touched
    back = read_csv(text)
    pd.testing.assert_frame_equal(back, df)


def _number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def test_column_names_and_index_are_neutralised_too() -> None:
    df = pd.DataFrame({"=cmd": ["x"], "'q": ["y"], "ok": ["=1"]}, index=pd.Index(["@idx"], name="+name"))
    text = to_csv(df)
    assert text is not None
    header = _cells(text)[0]
    assert header == ["'+name", "'=cmd", "''q", "ok"]
    pd.testing.assert_frame_equal(read_csv(text), df)


def test_warn_and_keep_write_cells_unchanged() -> None:
    df = pd.DataFrame({"name": ["=1+1", "fine"]})
    with pytest.warns(FormulaCellsWarning, match="1 cells") as caught:
        warned = to_csv(df, formulas="warn")
    assert caught[0].message.columns == ["name"]  # type: ignore[union-attr]
    kept = to_csv(df, formulas="keep")
    assert warned == kept and warned is not None and _cells(warned)[1] == ["=1+1"]
    pd.testing.assert_frame_equal(read_csv(kept), df)
    with pytest.raises(ValueError, match="formulas="):
        to_csv(df, formulas="strip")  # type: ignore[arg-type]
