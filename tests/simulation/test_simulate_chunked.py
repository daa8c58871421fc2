"""simulate(engine="local") over many rows (issue 35): chunked by default past 2 * LOCAL_CHUNK_ROWS rows,
each chunk's answers written into the preallocated result columns (no list of parts, no concatenation).
The chunked result must equal the one-evaluator result cell for cell and dtype for dtype, whatever the
input's dtypes (Arrow text, object text, numbers with gaps); ids are checked as before (blank, repeated)
on the fast paths for Arrow and object columns."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from _flags import condition, flag, prop
from analytics_nb.simulation import SimulationInputError, _local, normalise_property_sets, simulate

MAPPING = {"0": "company"}


def _definitions() -> list[dict[str, Any]]:
    three = {"a": 34, "b": 33, "c": 33}
    big = prop("size", 50, "gte", "group", group_type_index=0)
    return [
        flag("roll", condition(rollout=40)),
        flag("mail", condition(prop("email", "@Example", "icontains"), rollout=70)),
        flag("paid", condition(prop("plan", ["pro"]), prop("age", 30, "gte"))),
        flag(
            "mv",
            condition(prop("plan", "free", "is_not"), rollout=80),
            variants=three,
            payloads={"a": '{"x": 1}', "b": '"two"'},
        ),
        # every row gets a variant: an object column of text only (pandas would infer `str` for it)
        flag("all-text", condition(), variants=three),
        flag("big", condition(big), aggregation_group_type_index=0),
        # reads a property no column holds: NA with reason missing_property where it decides
        flag("stored", condition(prop("tier", "gold"), rollout=50)),
    ]


def _frame(n: int, arrow: bool) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    text = "str" if arrow else object
    emails = [None if i % 11 == 0 else f"u{i}@{'example' if i % 3 else 'Mail'}.com" for i in range(n)]
    age = pd.array([None if i % 13 == 0 else int(v) for i, v in enumerate(rng.integers(16, 80, n))], "Int64")
    return pd.DataFrame(
        {
            "distinct_id": pd.Series([f"user-{i}" for i in range(n)], dtype=text),
            "plan": pd.Series(rng.choice(["free", "pro", "team"], n).tolist(), dtype=text),
            "email": pd.Series(emails, dtype=text),
            "age": age,
            "group:company": pd.Series([f"co-{i % 9}" if i % 4 else None for i in range(n)], dtype=text),
            "group:company:size": rng.integers(1, 100, n),
        }
    ).set_axis(pd.RangeIndex(100, 100 + n))


@pytest.mark.parametrize("arrow", [True, False])
def test_chunked_simulation_equals_one_evaluator(arrow: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    frame = _frame(1_003, arrow)
    kwargs: dict[str, Any] = {
        "engine": "local",
        "definitions": _definitions(),
        "group_type_mapping": MAPPING,
        "progress": False,
        "reasons": True,
    }
    with pytest.warns(UserWarning):  # the absent `tier` property, in both runs
        whole = simulate(frame, **kwargs)
    monkeypatch.setattr(_local, "LOCAL_CHUNK_ROWS", 7)  # 144 chunks, the last one short
    chunks: list[int] = []
    real_add = _local._Assembly.add

    def counting(self: Any, start: int, part: pd.DataFrame) -> None:
        chunks.append(len(part))
        real_add(self, start, part)

    monkeypatch.setattr(_local._Assembly, "add", counting)
    with pytest.warns(UserWarning):
        chunked = simulate(frame, **kwargs)
    assert len(chunks) == 144 and chunks[-1] == 2
    pd.testing.assert_frame_equal(chunked.frame, whole.frame)
    out = chunked.frame
    assert (
        str(out["roll"].dtype) == "boolean" and out["mv"].dtype == object and out["all-text"].dtype == object
    )
    assert isinstance(out["mv:payload"].dtype, pd.CategoricalDtype)
    assert isinstance(out["roll:reason"].dtype, pd.CategoricalDtype)
    assert str(out["roll:condition_index"].dtype) == "Int64"
    assert out["stored"].isna().any() and out["mail"].notna().any()


@pytest.mark.parametrize("arrow", [True, False])
@pytest.mark.parametrize("blank", ["", "   ", "\u2003", " \t"])
def test_a_blank_id_is_refused_on_every_path(arrow: bool, blank: str) -> None:
    ids = ["a", "b", blank, " c"]  # " c" starts with white space but is an id
    frame = pd.DataFrame({"distinct_id": pd.Series(ids, dtype="str" if arrow else object)})
    with pytest.raises(SimulationInputError, match="distinct_id is empty at row 2"):
        normalise_property_sets(frame)
    frame = pd.DataFrame({"distinct_id": pd.Series(["a", " c"], dtype="str" if arrow else object)})
    assert normalise_property_sets(frame).frame["distinct_id"].tolist() == ["a", " c"]


@pytest.mark.parametrize("arrow", [True, False])
def test_a_repeated_id_is_refused_on_every_path(arrow: bool) -> None:
    frame = pd.DataFrame({"distinct_id": pd.Series(["a", "b", "a"], dtype="str" if arrow else object)})
    with pytest.raises(SimulationInputError, match="'a' appears more than once"):
        normalise_property_sets(frame)


def test_arrow_ids_are_kept_in_place() -> None:
    """An Arrow text id column is checked and hashed as it is (the engine reads its buffer); the result's
    ``distinct_id`` is that column itself, pandas 3's ``str``, as every engine gives it (before: ``object``,
    a Python string per row)."""
    frame = _frame(50, True)
    sets = normalise_property_sets(frame)
    assert sets.frame["distinct_id"].dtype == frame["distinct_id"].dtype
    assert sets.frame["distinct_id"].tolist() == frame["distinct_id"].tolist()
    out = simulate(frame, engine="local", definitions=_definitions()[:2], progress=False).frame
    assert out["distinct_id"].dtype == pd.Series(["a"]).dtype
    assert out["distinct_id"].tolist() == frame["distinct_id"].tolist()


@pytest.mark.parametrize("chunk_rows", [None, 20])
def test_the_results_arrow_ids_are_the_inputs_own_buffer(chunk_rows: int | None, monkeypatch: Any) -> None:
    """One evaluator or chunks: the result's ``distinct_id`` is the input's Arrow column, its text buffer
    shared (10M ids: no ~0.7 GB of Python strings, no second copy). Before, it was made an ``object``
    column, a Python string per row."""
    if chunk_rows is not None:
        monkeypatch.setattr(_local, "LOCAL_CHUNK_ROWS", chunk_rows)
    frame = _frame(50, True)
    out = simulate(frame, engine="local", definitions=_definitions()[:2], progress=False).frame

    def text_buffer(ids: pd.Series) -> int:
        chunks = ids.array.__arrow_array__()
        return int(chunks.chunks[0].buffers()[2].address)

    assert text_buffer(out["distinct_id"]) == text_buffer(frame["distinct_id"])


@pytest.mark.parametrize("ids", [["a", "b", "c", "d"], ["a", "b", "c", "a"]])
def test_equal_id_hashes_are_compared_as_text(ids: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The repeated-id check of an Arrow column sorts the ids' hashes; where two hashes are equal it must
    compare the ids themselves (every hash equal here), refusing a real repeat and nothing else."""
    from analytics_nb.flags import _hashing

    def same_hash(prefix: bytes, enc: Any, suffix: bytes, out: np.ndarray, rows: Any = None) -> None:
        out[:] = 0.5

    monkeypatch.setattr(_hashing, "fractions_into", same_hash)
    frame = pd.DataFrame({"distinct_id": pd.Series(ids, dtype="str")})
    if len(set(ids)) == len(ids):
        assert normalise_property_sets(frame).frame["distinct_id"].tolist() == ids
    else:
        with pytest.raises(SimulationInputError, match="'a' appears more than once"):
            normalise_property_sets(frame)


def test_each_chunk_evaluator_is_freed_when_its_chunk_is_done(monkeypatch: pytest.MonkeyPatch) -> None:
    """A regression: a chunk's evaluator and its sources refer to each other, so when dropped it waited for
    the cyclic garbage collector with all its cached hashes and matches (~45 MB a 200,000-row chunk), and a
    10M-row run piled them up. Each chunk's evaluator must be gone (caches released) as soon as it is done,
    without the collector."""
    import gc
    import weakref

    from analytics_nb.simulation import load_definitions

    refs: list[weakref.ref[Any]] = []
    real = _local.make_evaluator

    def tracked(*args: Any, **kwargs: Any) -> Any:
        evaluator = real(*args, **kwargs)
        refs.append(weakref.ref(evaluator))
        return evaluator

    monkeypatch.setattr(_local, "make_evaluator", tracked)
    sets = normalise_property_sets(_frame(300, True))
    defs = load_definitions({"flags": _definitions(), "group_type_mapping": MAPPING})
    engine = _local.ChunkedEvaluator(sets, defs, chunk_rows=50)
    gc.disable()
    try:
        engine.run(payloads=True)
        alive = sum(ref() is not None for ref in refs)
    finally:
        gc.enable()
    assert len(refs) == 6 and alive == 0
