"""The SQL path asked for some flags evaluates only those and what they depend on, writes only the asked
columns, and reports absent properties from the local engine's own report (the same
`MissingPropertyWarning` as ``engine="local"``); a property without a column is unknown by default on
every SQL door (`simulate_sql`, `run_sql`, `to_sql` with a schema) unless ``missing_columns="not_set"``."""

from __future__ import annotations

import warnings
from typing import Any

import pandas as pd
import pytest

from _flags import condition, flag, prop
from analytics_nb.flags import to_sql
from analytics_nb.sandbox._resources.demo_flags import demo_flag_definitions, demo_persons
from analytics_nb.simulation import MissingPropertyWarning, simulate

pytest.importorskip("duckdb", reason="the 'sql' extra is not installed")
pytest.importorskip("sqlglot", reason="the 'sql' extra is not installed")
from analytics_nb.flags._sql import NEEDS_LOCAL
from analytics_nb.simulation import simulate_sql
from analytics_nb.simulation._sql import run_sql


def _one(key: str, properties: list[dict[str, Any]], rollout: float = 100) -> dict[str, Any]:
    """One condition of ``properties``, written with the shared builders (tests/_flags.py)."""
    return flag(key, condition(*properties, rollout=rollout))


def _prop(key: str, operator: str, value: Any, type_: str = "person") -> dict[str, Any]:
    return prop(key, value, operator, type=type_)


PLAN = _one("plan-pro", [_prop("plan", "exact", ["pro"])])
FLAGS = [
    PLAN,
    _one("depends", [_prop("plan-pro", "flag_evaluates_to", True, "flag")], 50),
    _one("regexy", [_prop("email", "regex", "^a")]),  # the local engine answers regex
    _one("other", [_prop("email", "icontains", "example")], 30),
]


def _missing_messages(caught: list[Any]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, MissingPropertyWarning)]


def test_the_missing_property_warning_is_the_local_engines_own() -> None:
    frame = pd.DataFrame(
        [{"distinct_id": i, "email": p.get("email"), "plan": p.get("plan")} for i, p in demo_persons(2000)]
    )
    defs = demo_flag_definitions(1)
    messages = {}
    for engine in ("local", "sql"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = simulate(frame, engine=engine, definitions=defs, progress=False, reasons=True)
        messages[engine] = _missing_messages(caught)
        if engine == "sql":
            result.close()
    assert len(messages["local"]) == 1 and messages["sql"] == messages["local"]
    assert "8 flags" in messages["sql"][0] and "14,190 answers" in messages["sql"][0]


def test_simulate_sql_reads_a_property_without_a_column_as_unknown_by_default() -> None:
    frame = pd.DataFrame({"distinct_id": ["a", "b", "c"], "email": ["x@example.com", None, "y"]})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sim = simulate_sql(frame, [PLAN], progress=False)
    with sim:
        got = sim.sql_frame()
        assert got["plan-pro"].isna().all() and sim.frame["plan-pro"].isna().all()
        assert set(got["plan-pro:reason"]) == {"missing_property"}
        assert sim.missing_report == {"plan-pro": (("the person's stored `plan`",), 3)}
    assert len(_missing_messages(caught)) == 1 and "'plan-pro'" in _missing_messages(caught)[0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sim = simulate_sql(frame, [PLAN], progress=False, missing_columns="not_set")
    with sim:  # the old reading, only when asked for
        assert sim.sql_frame()["plan-pro"].tolist() == [False, False, False]
        assert sim.frame["plan-pro"].tolist() == [False, False, False]
    assert not _missing_messages(caught)
    with pytest.raises(Exception, match="missing_columns"):
        simulate_sql(frame, [PLAN], missing_columns="absent")


def test_run_sql_and_to_sql_leave_a_flag_on_an_absent_column_to_the_local_engine() -> None:
    frame = pd.DataFrame({"distinct_id": ["a", "b"], "email": ["x", "y"]})
    got, query = run_sql(frame, [PLAN])
    assert "plan-pro" in query.local_flags and set(got["plan-pro:reason"]) == {NEEDS_LOCAL}
    assert got["plan-pro"].isna().all()
    got, query = run_sql(frame, [PLAN], missing_columns="not_set")
    assert not query.local_flags and got["plan-pro"].tolist() == [False, False]
    text = to_sql([PLAN], schema={"distinct_id": "string", "email": "string"})
    assert "needs the local engine" in text
    assert "needs the local engine" not in to_sql(
        [PLAN], schema={"distinct_id": "string", "email": "string"}, missing_columns="not_set"
    )


def _persons(n: int) -> pd.DataFrame:
    plans = ["pro", "free", None, "Pro"]
    return pd.DataFrame(
        {
            "distinct_id": [f"user-{i}" for i in range(n)],
            "plan": [plans[i % 4] for i in range(n)],
            "email": [f"a{i}@example.com" if i % 3 else f"b{i}@test.dev" for i in range(n)],
        }
    )


@pytest.mark.parametrize("reasons", [False, True])
def test_flags_narrow_the_sql_path_to_the_asked_flags_and_their_dependencies(reasons: bool) -> None:
    frame = _persons(300)
    local = simulate(frame, ["depends"], engine="local", definitions=FLAGS, reasons=reasons)
    sql = simulate(frame, ["depends"], engine="sql", definitions=FLAGS, reasons=reasons, progress=False)
    with sql:
        pd.testing.assert_frame_equal(sql.outputs, local.outputs)
        pd.testing.assert_frame_equal(sql.summary(), local.summary())
        # only the asked flag and its dependency are compiled; the regex flag is not sent to the local engine
        assert [sf.key for sf in sql.sim.query.flags] == ["depends"]
        # (the other two read `email`; the dependency reads `plan`)
        assert "regexy" not in sql.sql and "email" not in sql.sql and '"plan"' in sql.sql
        assert sql.local_flags == {} and sql.local_rows == 0
        columns = [row[0] for row in sql.sim.con.execute(f"DESCRIBE SELECT * FROM {sql._answers}").fetchall()]
        # reasons only when asked; without them a row the local engine must answer is marked `_anb_local`
        # (`depends` may meet an undecided dependency), a row key like `_anb_row`; no payload column (the
        # frame's payloads are read back from the values, equal to the local engine's above)
        extras = ["depends:reason", "depends:condition_index"] if reasons else []
        marker = [] if reasons else ["_anb_local"]
        assert columns == ["distinct_id", "_anb_row", "depends", *extras, *marker, "error"]
        assert "depends:payload" in sql.outputs.columns


def test_narrowed_rows_left_to_the_local_engine_without_reason_columns() -> None:
    """A row the SQL cannot decide (a Kelvin sign compared case-insensitively) is still found and
    answered by the local engine when no reason column is written."""
    kelvin = _one("kelvin", [_prop("plan", "exact", ["kelvin"])])
    frame = pd.DataFrame({"distinct_id": ["a", "b", "c"], "plan": ["\u212aelvin", "kelvin", "pro"]})
    local = simulate(frame, ["kelvin"], engine="local", definitions=[kelvin, *FLAGS])
    sql = simulate(frame, ["kelvin"], engine="sql", definitions=[kelvin, *FLAGS], progress=False)
    with sql:
        assert sql.local_rows == 1
        pd.testing.assert_frame_equal(sql.outputs, local.outputs)
        columns = [row[0] for row in sql.sim.con.execute(f"DESCRIBE SELECT * FROM {sql._answers}").fetchall()]
        assert "kelvin:reason" not in columns and "_anb_local" in columns


def test_an_unknown_flag_key_is_named() -> None:
    with pytest.raises(ValueError, match="nope"):
        to_sql(FLAGS, flags=["nope"])
