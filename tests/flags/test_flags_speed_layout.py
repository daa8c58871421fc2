"""The lean layout of the vectorised engine (no timing here; speed is measured in bench/flags_engine.py).

Ids are encoded once into one UTF-8 buffer; property codes are int32 and condition indexes int16; mask writes
are branch-free blends that must equal boolean scatters; a what-if re-run of rollout / variant edits hashes
nothing again.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pandas as pd
import pytest

from _flags import condition, flag, prop
from analytics_nb.flags import FrameEvaluator, _frame, evaluate_frame
from analytics_nb.flags._hashing import EncodedIds
from analytics_nb.flags._operators import FALSE, INCONCLUSIVE, SERVER_ONLY, TRUE


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64])
def test_put_equals_a_boolean_scatter(dtype: Any) -> None:
    rng = np.random.default_rng(5)
    for _ in range(50):
        n = int(rng.integers(0, 300))
        base = rng.integers(-100, 100, n).astype(dtype)
        rows = rng.random(n) < rng.random()
        for value in (int(rng.integers(-100, 100)), -1, 0, rng.integers(-100, 100, n).astype(dtype)):
            want = base.copy()
            want[rows] = value[rows] if isinstance(value, np.ndarray) else value
            got = base.copy()
            _frame._put(got, rows, value)
            assert got.dtype == base.dtype and got.tolist() == want.tolist()


def test_lookup_and_negate() -> None:
    table = np.array([TRUE, FALSE, INCONCLUSIVE], dtype=np.int8)
    codes = np.array([2, -1, 0, 1, -1], dtype=np.int32)
    assert _frame._lookup(table, codes, SERVER_ONLY).tolist() == [INCONCLUSIVE, SERVER_ONLY, TRUE, FALSE, 3]
    code = np.array([FALSE, TRUE, INCONCLUSIVE, SERVER_ONLY], dtype=np.int8)
    assert _frame._negate(code).tolist() == [TRUE, FALSE, INCONCLUSIVE, SERVER_ONLY]


PRO = {"key": "plan", "operator": "exact", "value": "pro", "type": "person"}
HALVES = [{"key": "a", "rollout_percentage": 50}, {"key": "b", "rollout_percentage": 50}]


FLAGS = [flag("mv", condition(PRO, rollout=60), variants=HALVES), flag("r", condition(rollout=30))]
"""Copied (``copy.deepcopy``) by each test that uses them: a test may edit its copy."""


def test_ids_are_encoded_once_and_codes_are_narrow(monkeypatch: pytest.MonkeyPatch) -> None:
    ids = [f"ü-{i}" if i % 7 else f"user-{i}" for i in range(500)]
    frame = pd.DataFrame({"distinct_id": pd.array(ids, dtype="str"), "plan": ["pro", "free"] * 250})
    ev = FrameEvaluator(frame, definitions=copy.deepcopy(FLAGS))
    assert isinstance(ev._id_enc, EncodedIds) and ev._id_enc.data == "".join(ids).encode("utf-8")
    calls: list[int] = []
    real = _frame.fractions_into

    def counting(prefix: bytes, ids: EncodedIds, suffix: bytes, out: np.ndarray, rows: Any = None) -> None:
        assert ids is ev._id_enc  # every person hash reads the one buffer
        calls.append(len(ids) if rows is None else len(rows))
        real(prefix, ids, suffix, out, rows)

    monkeypatch.setattr(_frame, "fractions_into", counting)
    first = ev.run()
    assert calls and ev._source("person").column("plan").codes.dtype == np.int32
    hashed = len(calls)
    edited = copy.deepcopy(FLAGS)
    edited[1]["filters"]["groups"][0]["rollout_percentage"] = 20  # fewer rows in: all hashes are cached
    edited[0]["filters"]["multivariate"]["variants"] = [
        {"key": "a", "rollout_percentage": 10},
        {"key": "b", "rollout_percentage": 90},
    ]
    second = ev.run(definitions=edited)
    assert len(calls) == hashed, "a narrower rollout and new variant weights must reuse the cached hashes"
    assert second["r"].sum() < first["r"].sum()
    assert (second["mv"] == "b").sum() > (first["mv"] == "b").sum()
    assert first["mv"].dtype == object and str(first["r"].dtype) == "boolean"


def test_flag_arrays_are_narrow() -> None:
    frame = pd.DataFrame({"distinct_id": [f"u{i}" for i in range(50)], "plan": ["pro"] * 50})
    ev = FrameEvaluator(frame, definitions=copy.deepcopy(FLAGS))
    state = _frame._RunState(ev, ev._compiled)
    for compiled in ev._compiled.order:
        state.evaluate(compiled)
    for res in state.results.values():
        assert res.kind.dtype == np.int8 and res.reason.dtype == np.int8 and res.index.dtype == np.int16


def test_reused_output_columns_stay_independent() -> None:
    """Unchanged object columns are handed back on a re-run; writing to one result must not touch the other
    result, nor the input frame (copy-on-write)."""
    frame = pd.DataFrame({"distinct_id": [f"u{i}" for i in range(200)], "plan": ["pro", "free"] * 100})
    flags = copy.deepcopy(FLAGS)
    for definition in flags:
        definition["filters"]["payloads"] = {"a": '{"x": 1}', "true": '{"on": true}'}
    ev = FrameEvaluator(frame, definitions=flags)
    first = ev.run(payloads=True, reasons=True)
    second = ev.run(payloads=True, reasons=True)
    # the category columns are handed back too (their codes are the same array)
    for name in ("mv:payload", "mv:reason"):
        assert second[name].dtype == "category"
        assert np.shares_memory(first[name].array.codes, second[name].array.codes)
    before = first.copy(deep=True)
    second.loc[0, "mv"] = "changed"
    # a category column takes only its own categories: write one that differs from row 0's
    payload = second["mv:payload"]
    other = next(c for c in payload.cat.categories if c != payload.iloc[0])
    second.loc[0, "mv:payload"] = other
    second.loc[0, "mv:reason"] = "flag_disabled"
    second.loc[0, "distinct_id"] = "changed"
    column = second["mv"]
    column.iloc[1] = "changed too"
    pd.testing.assert_frame_equal(first, before)
    assert frame["distinct_id"].iloc[0] == "u0"
    third = ev.run(payloads=True, reasons=True)
    pd.testing.assert_frame_equal(third, before)


@pytest.mark.parametrize("reasons", [False, True])
@pytest.mark.parametrize("mode", ["server", "sdk"])
def test_one_shot_evaluation_equals_a_kept_evaluator(reasons: bool, mode: str) -> None:
    """evaluate_frame frees each flag's caches as it goes; the answers must be those of a FrameEvaluator."""
    flags = copy.deepcopy(FLAGS)
    holdout = [condition(rollout=10, variant="holdout-1")]
    flags.append(flag("dep", condition(prop("mv", "a", type="flag"), rollout=80), holdout_groups=holdout))
    frame = pd.DataFrame({"distinct_id": [f"u{i}" for i in range(300)], "plan": ["pro", "free", "pro"] * 100})
    one_shot = evaluate_frame(frame, definitions=flags, mode=mode, payloads=True, reasons=reasons)
    kept = FrameEvaluator(frame, definitions=flags, mode=mode).run(payloads=True, reasons=reasons)
    pd.testing.assert_frame_equal(one_shot, kept)
