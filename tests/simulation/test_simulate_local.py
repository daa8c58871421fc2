"""Local simulation and what-if against a brute-force, row-at-a-time re-evaluation with the flag engine."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pandas as pd
import pytest

from _flags import condition, flag, prop
from analytics_nb.flags import FrameEvaluator, evaluate_flags
from analytics_nb.simulation import (
    WhatIf,
    grid,
    simulate,
    whatif,
    with_condition,
    with_rollout,
    with_variant_weights,
    without_condition,
)

FLAGS: list[dict[str, Any]] = [
    flag("rollout", condition(rollout=30), id=1, payloads={"true": '{"a": 1}'}),
    flag(
        "exp",
        condition(prop("plan", ["pro", "team"])),
        id=2,
        variants={"control": 50, "test": 50},
        payloads={"test": '{"steps": 1}'},
    ),
    flag("us-only", condition(prop("country", "US")), id=3),
]


FLAGS.append(
    flag(
        "dependent",
        condition(prop("rollout", True, "flag_evaluates_to", type="flag"), prop("plan", "free", "is_not")),
        id=4,
    )
)


@pytest.fixture(scope="module")
def sets() -> pd.DataFrame:
    return grid({"country": ["US", "DE", "FR"], "plan": ["free", "pro", "team"]}, ids_per_cell=40, seed=0)


def brute_force(frame: pd.DataFrame, flags: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Each row through `evaluate_flags`, the engine's scalar path."""
    out: dict[str, list[Any]] = {f["key"]: [] for f in flags}
    for rec in frame.to_dict("records"):
        props = {k: v for k, v in rec.items() if k != "distinct_id"}
        results = evaluate_flags(flags, rec["distinct_id"], person_properties=props)
        for key in out:
            out[key].append(results[key].value)
    return out


def test_local_matches_scalar_engine(sets: pd.DataFrame) -> None:
    result = simulate(sets, engine="local", definitions=FLAGS)
    frame = result.outputs  # the outputs only; .frame carries the input columns after distinct_id
    assert list(frame.columns[:5]) == ["distinct_id", "rollout", "exp", "us-only", "dependent"]
    assert list(result.frame.columns[:7]) == ["distinct_id", "country", "plan", *frame.columns[1:5]]
    assert frame.index.equals(sets.index) and frame.columns[-1] == "error"
    assert str(frame["rollout"].dtype) == "boolean" and frame["exp"].dtype == object
    expected = brute_force(sets, FLAGS)
    for key, values in expected.items():
        assert frame[key].astype(object).tolist() == values, key
    assert (frame.loc[frame["rollout"].astype(bool), "rollout:payload"] == '{"a": 1}').all()
    assert frame.loc[(sets["country"] == "US").to_numpy(), "us-only"].all()


def test_local_flags_filter_and_order(sets: pd.DataFrame) -> None:
    result = simulate(sets, ["us-only", "exp"], engine="local", definitions=FLAGS, payloads=False)
    assert list(result.outputs.columns) == ["distinct_id", "us-only", "exp", "error"]
    assert list(result.frame.columns) == ["distinct_id", "country", "plan", "us-only", "exp", "error"]
    summary = result.summary()
    assert set(summary["flag"]) == {"us-only", "exp"}
    assert summary.groupby("flag")["count"].sum().eq(len(sets)).all()


def _moves_by_brute_force(
    sets: pd.DataFrame, base: list[dict[str, Any]], edited: list[dict[str, Any]]
) -> Counter:
    a = brute_force(sets, base)
    b = brute_force(sets, edited)
    moves: Counter = Counter()
    for key in a:
        for x, y in zip(a[key], b[key], strict=True):
            if x != y or type(x) is not type(y):
                moves[(key, x, y)] += 1
    return moves


@pytest.mark.parametrize(
    "edit",
    [
        lambda d: with_rollout(d, "rollout", 70),
        lambda d: with_rollout(d, "rollout", 10),
        lambda d: with_variant_weights(d, "exp", {"control": 20, "test": 80}),
        lambda d: with_condition(d, "us-only", {"country": "DE"}, 50),
        lambda d: without_condition(d, "exp", 0),
    ],
    ids=["rollout-up", "rollout-down", "weights", "add-condition", "remove-condition"],
)
def test_whatif_moves_match_brute_force(sets: pd.DataFrame, edit: Any) -> None:
    edited = edit(FLAGS)
    result = whatif(sets, FLAGS, edited)
    got = Counter({(r["flag"], r["from"], r["to"]): r["count"] for r in result.moves.to_dict("records")})
    assert got == _moves_by_brute_force(sets, FLAGS, edited)
    assert len(result.changes) == sum(got.values())
    assert sum(got.values()) > 0


def test_whatif_session_reuses_the_evaluator(sets: pd.DataFrame) -> None:
    session = WhatIf(sets, FLAGS)
    first = session.run(with_rollout(FLAGS, "rollout", 60))
    second = session.run(with_rollout(FLAGS, "rollout", 30))  # back to the current definitions
    assert first.moves["flag"].tolist() == ["rollout", "dependent"]  # the dependent flag moves too
    assert first.moves.loc[0, "from"] is False and first.moves.loc[0, "to"] is True
    assert second.moves.empty and second.changes.empty
    evaluator = FrameEvaluator(sets, definitions=FLAGS)
    again = whatif(evaluator, FLAGS, with_rollout(FLAGS, "rollout", 60))
    assert again.moves.to_dict("records") == first.moves.to_dict("records")


def test_group_flags_need_a_group_type_mapping() -> None:
    from analytics_nb.simulation import SimulationInputError

    group_flag = flag("company-flag", active=None, aggregation_group_type_index=0)
    rows = [{"distinct_id": "a", "group:company": "acme"}, {"distinct_id": "b"}]
    with pytest.raises(SimulationInputError, match=r"group_type_mapping=\{'0': '<type>'\}"):
        simulate(rows, engine="local", definitions=[group_flag])
    result = simulate(rows, engine="local", definitions=[group_flag], group_type_mapping={"0": "company"})
    assert result.frame["company-flag"].tolist() == [True, False]
    # the SQL engine refuses it the same way (it answered False, 'no_group_type', for the row with a group)
    with pytest.raises(SimulationInputError, match=r"group_type_mapping=\{'0': '<type>'\}"):
        simulate(rows, engine="sql", definitions=[group_flag], progress=False)
    sql = simulate(
        rows, engine="sql", definitions=[group_flag], group_type_mapping={"0": "company"}, progress=False
    )
    assert sql.frame["company-flag"].astype(object).tolist() == [True, False]
    session = WhatIf(rows, [group_flag], group_type_mapping={0: "company"})
    change = session.run(with_rollout([group_flag], "company-flag", 0))
    assert change.moves.to_dict("records") == [
        {"flag": "company-flag", "from": True, "to": False, "count": 1}
    ]
