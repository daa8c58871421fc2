"""`frames.to_csv_batches`: frames written one batch at a time read back as `to_csv` of them concatenated
(issue 35, results streamed): the header line is the whole file's even when a later batch changes it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from analytics_nb.frames import read_csv, to_csv, to_csv_batches


def _parts(frame: pd.DataFrame, rows: int) -> Callable[[], list[pd.DataFrame]]:
    calls: list[int] = []

    def batches() -> list[pd.DataFrame]:
        calls.append(1)
        return [frame.iloc[i : i + rows] for i in range(0, max(len(frame), 1), rows)]

    batches.calls = calls  # type: ignore[attr-defined]
    return batches


def _same(frame: pd.DataFrame, tmp_path: Path, rows: int) -> int:
    """Streamed and whole files read back equal; how many passes the streamed writer made."""
    whole, streamed = tmp_path / "whole.csv", tmp_path / "streamed.csv"
    to_csv(frame, whole)
    batches = _parts(frame, rows)
    to_csv_batches(batches, streamed)
    pd.testing.assert_frame_equal(read_csv(streamed), read_csv(whole))
    assert not (tmp_path / "streamed.csv.part").exists()
    return len(batches.calls)  # type: ignore[attr-defined]


def _frame(n: int = 9) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "distinct_id": [f"u{i}" for i in range(n)],
            "flag": pd.array([True, False, None] * (n // 3), dtype="boolean"),
            "variant": pd.Series(["control", False, pd.NA] * (n // 3), dtype=object),
            "flag:reason": pd.Categorical(["condition_match", "no_condition_match", None] * (n // 3)),
            "flag:condition_index": pd.array([0, None, 1] * (n // 3), dtype="Int64"),
            "error": pd.array([None, "boom", None] * (n // 3), dtype="string"),
        }
    )


def test_batches_read_back_as_the_whole_frame_in_one_pass(tmp_path: Path) -> None:
    assert _same(_frame(), tmp_path, rows=2) == 1
    labelled = _frame().set_axis(pd.Index(range(100, 109), name=None), axis=0)
    assert _same(labelled, tmp_path, rows=4) == 1


@pytest.mark.parametrize(
    ("column", "late"),
    [
        ("error", "=cmd()"),  # a formula cell only in the last batch: the column is escaped
        ("error", ""),  # an empty text: NA needs a token
    ],
)
def test_a_later_batch_that_changes_the_header_is_written_again(
    tmp_path: Path, column: str, late: str
) -> None:
    frame = _frame()
    frame.loc[8, column] = late
    assert _same(frame, tmp_path, rows=3) == 2
    assert read_csv(tmp_path / "streamed.csv")[column].iloc[8] == late


def test_categories_are_the_union_of_the_batches(tmp_path: Path) -> None:
    frame = _frame(6)
    first = frame.iloc[:3].assign(**{"flag:reason": pd.Categorical(["condition_match"] * 3)})
    last = frame.iloc[3:].assign(**{"flag:reason": pd.Categorical(["holdout", None, "condition_match"])})
    calls: list[int] = []

    def batches() -> list[pd.DataFrame]:
        calls.append(1)
        return [first, last]

    to_csv_batches(batches, tmp_path / "s.csv")
    back = read_csv(tmp_path / "s.csv")
    assert len(calls) == 2
    assert list(back["flag:reason"].cat.categories) == ["condition_match", "holdout"]
    assert back["flag:reason"].iloc[3] == "holdout" and pd.isna(back["flag:reason"].iloc[4])
    assert back["flag:reason"].iloc[:3].tolist() == ["condition_match"] * 3


def test_an_index_that_does_not_continue_the_rows_is_written(tmp_path: Path) -> None:
    frame = _frame(6)
    parts = [frame.iloc[:3], frame.iloc[3:].reset_index(drop=True)]  # each numbered from 0 (Dask partitions)
    whole = pd.concat(parts)
    to_csv_batches(lambda: parts, tmp_path / "s.csv")
    to_csv(whole, tmp_path / "w.csv")
    pd.testing.assert_frame_equal(read_csv(tmp_path / "s.csv"), read_csv(tmp_path / "w.csv"))
    assert list(read_csv(tmp_path / "s.csv").index) == [0, 1, 2, 0, 1, 2]


def test_no_rows_and_secrets(tmp_path: Path) -> None:
    empty = _frame().iloc[:0]
    to_csv_batches(lambda: [empty], tmp_path / "e.csv")
    to_csv(empty, tmp_path / "w.csv")
    pd.testing.assert_frame_equal(read_csv(tmp_path / "e.csv"), read_csv(tmp_path / "w.csv"))
    frame = _frame()
    frame.loc[7, "error"] = "phx_abcdefghijkl"
    with pytest.raises(ValueError, match="API key"):
        to_csv_batches(_parts(frame, 3), tmp_path / "k.csv")
    assert not (tmp_path / "k.csv").exists() and not (tmp_path / "k.csv.part").exists()
    with pytest.raises(ValueError, match="columns differ"):
        to_csv_batches(lambda: [frame.iloc[:3], frame.iloc[3:, :2]], tmp_path / "d.csv")


@pytest.mark.parametrize("rows", [1, 2, 3])
@pytest.mark.parametrize("formulas", ["escape", "keep"])
def test_every_header_entry_is_the_whole_frames(tmp_path: Path, rows: int, formulas: Any) -> None:
    """Formula cells, an empty text next to a literal "<NA>", categories, JSON cells, datetimes, a formula
    column name and a carriage return, spread over batches: the header line is to_csv's, byte for byte."""
    frame = pd.DataFrame(
        {
            "a": ["=x", "", None, "<NA>"],
            "b": pd.Categorical(["p", None, "q", "p"]),
            "c": pd.array([1, None, 3, 4], dtype="Int64"),
            "d": [{"k": 1}, None, [1], "s"],
            "e": pd.to_datetime(["2020-01-01", None, "2021-01-01", "2022-01-01"], utc=True),
            "=f": [1.5, float("nan"), -float("inf"), 2.0],
            "g": pd.array(["x\ry", None, "", "'q"], dtype="string"),
        }
    )
    to_csv_batches(
        lambda: [frame.iloc[i : i + rows] for i in range(0, 4, rows)], tmp_path / "s.csv", formulas=formulas
    )
    to_csv(frame, tmp_path / "w.csv", formulas=formulas)
    pd.testing.assert_frame_equal(read_csv(tmp_path / "s.csv"), read_csv(tmp_path / "w.csv"))
    with open(tmp_path / "s.csv") as streamed, open(tmp_path / "w.csv") as whole:
        assert streamed.readline() == whole.readline()
