"""How `simulate_sql` shares the work with the local engine (issue 35): a flag SQL cannot express sends
every row to the local engine, which then answers every flag without the query running as well; the
local engine reads text columns as ``StringDtype`` (matched once per distinct value); the answers stay the
local engine's."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

import analytics_nb.simulation._sql as sql_module
from analytics_nb.simulation import simulate, simulate_sql

pytest.importorskip("duckdb", reason="the 'sql' extra is not installed")

ROLLOUT = {"key": "half", "filters": {"groups": [{"properties": [], "rollout_percentage": 50}]}}
REGEX = {
    "key": "rx",
    "filters": {
        "groups": [{"properties": [{"key": "email", "operator": "regex", "value": "^a", "type": "person"}]}]
    },
}


def _frame(n: int = 400) -> pd.DataFrame:
    return pd.DataFrame(
        {"distinct_id": [f"u{i}" for i in range(n)], "email": [f"{'ab'[i % 2]}{i}@x.io" for i in range(n)]}
    )


def _spy(monkeypatch: pytest.MonkeyPatch) -> tuple[list[int], list[dict[str, Any]]]:
    hashed: list[int] = []
    dtypes: list[dict[str, Any]] = []
    real_buckets, real_evaluator = sql_module.bucket_set, sql_module.FrameEvaluator

    def buckets(fields: Any) -> Any:
        real = real_buckets(fields)

        def counted(ids: Any, *guards: Any) -> Any:
            got = real(ids, *guards)
            hashed.append(len(got) - got.field(0).null_count)  # the rows hashed for the first bucket
            return got

        return counted

    def evaluator(frame: pd.DataFrame, **kw: Any) -> Any:
        dtypes.append(frame.dtypes.to_dict())
        return real_evaluator(frame, **kw)

    monkeypatch.setattr(sql_module, "bucket_set", buckets)
    monkeypatch.setattr(sql_module, "FrameEvaluator", evaluator)
    return hashed, dtypes


def test_a_flag_sql_cannot_express_routes_every_flag_to_the_local_engine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hashed, dtypes = _spy(monkeypatch)
    frame = _frame()
    want = simulate(frame, engine="local", definitions=[ROLLOUT, REGEX])
    with simulate_sql(frame, [ROLLOUT, REGEX], progress=False, hasher="native") as sim:
        assert sim.local_flags.keys() == {"rx"} and sim.local_rows == len(frame)
        assert hashed == []  # the query did not run: no row hashed by SQL for `half`
        got = sim.sql_frame().sort_values("_anb_row")
        assert got["half"].tolist() == want.frame["half"].astype(object).tolist()
        assert got["rx"].tolist() == want.frame["rx"].astype(object).tolist()
    assert dtypes and isinstance(dtypes[0]["email"], pd.StringDtype)
    assert isinstance(dtypes[0]["distinct_id"], pd.StringDtype)


def test_without_such_a_flag_the_query_answers_and_hashes(monkeypatch: pytest.MonkeyPatch) -> None:
    hashed, dtypes = _spy(monkeypatch)
    frame = _frame()
    want = simulate(frame, engine="local", definitions=[ROLLOUT])
    with simulate_sql(frame, [ROLLOUT], progress=False, hasher="native") as sim:
        assert sim.local_flags == {} and sim.local_rows == 0 and dtypes == []
        assert sum(hashed) == len(frame)
        got = sim.sql_frame().sort_values("_anb_row")
        assert got["half"].tolist() == want.frame["half"].astype(object).tolist()


def test_the_definitions_are_compiled_once_for_every_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """The query's compiled flags serve the local engine's batches (issue 34: "definitions compiled once"):
    before, every batch of rows the local engine answered compiled the definitions again (400 rows in
    batches of 50: 9 compiles for one run)."""
    import analytics_nb.flags._evaluate as evaluate_module

    compiles: list[int] = []
    real = evaluate_module.read_definitions

    def counting(definitions: Any) -> Any:
        compiles.append(1)
        return real(definitions)

    monkeypatch.setattr(evaluate_module, "read_definitions", counting)
    got = simulate_sql(_frame(), [ROLLOUT, REGEX], batch_rows=50)
    assert len(compiles) == 1, len(compiles)
    want = simulate(_frame(), engine="local", definitions=[ROLLOUT, REGEX])
    assert got.frame["rx"].tolist() == want.frame["rx"].tolist()
