"""The engine's Arrow paths (issue 35): a text filter over an Arrow-backed column is matched by Arrow row
by row (no Python string per distinct value), and an Arrow-backed ``distinct_id`` is hashed from its buffer.
Both must answer exactly as the object-column path does: ASCII-only lowering, nulls, non-ASCII text, empty
and missing ids, a frame that is a slice of a larger one (the buffer's offsets do not start at 0)."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pandas as pd
import pytest

from _flags import condition, flag, prop
from analytics_nb.flags import FrameEvaluator, evaluate_frame

TEXTS = ["X@Example.com", "ÉX@example.COM", "İx@EXAMPLE.com", "a@b.c", "", "example", "EXAMPLE@", "ü", None]
OPERATORS = ["icontains", "not_icontains", "starts_with", "not_starts_with", "ends_with", "not_ends_with"]


NEEDLES = {"icontains": "@EXAMPLE.", "starts_with": "éx", "ends_with": ".COM"}
#: one flag per text operator, every other one with a rollout (so the Arrow ids are hashed)
FLAGS = [
    flag(
        f"f-{op}",
        condition(prop("email", NEEDLES[op.removeprefix("not_")], op), rollout=60 if i % 2 else None),
    )
    for i, op in enumerate(OPERATORS)
]


def _defs() -> list[dict[str, Any]]:
    return copy.deepcopy(FLAGS)


def _frame(n: int, arrow: bool) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    emails = [TEXTS[i] for i in rng.integers(0, len(TEXTS), n)]
    ids: list[Any] = [f"user-{i}" if i % 5 else f"ü-{i}" for i in range(n)]
    ids[3], ids[8] = "", None  # a bad id: the row is an error row on both paths
    dtype = "str" if arrow else object
    return pd.DataFrame({"distinct_id": pd.Series(ids, dtype=dtype), "email": pd.Series(emails, dtype=dtype)})


@pytest.mark.parametrize("chunks", [1, 2])
@pytest.mark.parametrize("mode", ["server", "sdk"])
def test_arrow_columns_answer_as_object_columns(mode: str, chunks: int) -> None:
    frame = _frame(400, True)
    if chunks == 2:  # a concatenated frame: each Arrow column has two chunks
        frame = pd.concat([frame.iloc[:150], frame.iloc[150:]])
        assert frame["email"].array.__arrow_array__().num_chunks == 2
    arrow = evaluate_frame(frame, definitions=_defs(), mode=mode, reasons=True)
    plain = evaluate_frame(_frame(400, False), definitions=_defs(), mode=mode, reasons=True)
    pd.testing.assert_frame_equal(arrow.drop(columns="distinct_id"), plain.drop(columns="distinct_id"))
    assert arrow["error"].notna().sum() == 2
    assert arrow["f-icontains"].sum() > 0 and arrow["f-not_icontains"].sum() > 0


def test_a_text_filter_on_an_arrow_column_does_not_build_its_distinct_values() -> None:
    """The old engine factorized the column into Python strings first (a million of them for emails)."""
    ev = FrameEvaluator(_frame(50, True), definitions=_defs())
    ev.run()
    assert "email" not in ev._source("person").columns
    assert ev._id_list is None  # the ids were hashed from the Arrow buffer, never made Python strings


def test_a_slice_of_an_arrow_frame_hashes_its_own_rows() -> None:
    """A chunk is a slice: its Arrow buffers start past 0, and each row must still hash its own id."""
    frame = _frame(300, True)
    whole = evaluate_frame(frame, definitions=_defs(), reasons=True)
    part = evaluate_frame(frame.iloc[101:250], definitions=_defs(), reasons=True)
    pd.testing.assert_frame_equal(part, whole.iloc[101:250])
