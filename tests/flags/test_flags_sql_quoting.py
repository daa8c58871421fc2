"""Flags as SQL are safe for any key, property name and value: every identifier, literal and comment is
printed by sqlglot for its dialect (issue 37 #3: a key with a newline ended the header comment and made a
second statement in all six dialects); `read_definitions` refuses a flag key PostHog refuses; a NUL in a
property name is answered by the local engine or refused with an error naming the column (issue 37 #7)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from _flags import condition, flag, prop
from analytics_nb.flags import Definitions, DefinitionsError, evaluate_frame, read_definitions, to_sql
from analytics_nb.simulation import SimulationInputError, simulate

sqlglot = pytest.importorskip("sqlglot")
duckdb = pytest.importorskip("duckdb")
from analytics_nb.flags._sql import DIALECTS  # noqa: E402
from analytics_nb.simulation._sql import run_sql  # noqa: E402

HOSTILE_KEYS = [
    "x\n; COPY (SELECT 42) TO '{path}' (FORMAT csv); --",
    "y */ ; COPY (SELECT 42) TO '{path}' (FORMAT csv); /*",
    "z'; COPY (SELECT 42) TO '{path}'; --",
    'w"; --\r\n',
]


def _quoted(
    key: str, name: str = "plan", operator: str = "regex", value: Any = "^p", rollout: float = 50
) -> dict[str, Any]:
    """One condition on one person property, written with the shared builders (tests/_flags.py)."""
    return flag(key, condition(prop(name, value, operator), rollout=rollout))


@pytest.mark.parametrize("raw", HOSTILE_KEYS)
def test_a_hostile_flag_key_stays_inside_its_comment_and_literals(raw: str, tmp_path: Path) -> None:
    target = tmp_path / "written.csv"
    key = raw.format(path=target)
    # built directly: read_definitions refuses such keys (below), but to_sql must be safe on its own
    defs = Definitions([_quoted(key), _quoted(key + "2", operator="icontains", value="o")])
    for dialect in DIALECTS:
        text = to_sql(defs, dialect=dialect)
        assert len(sqlglot.parse(text, read=dialect)) == 1, dialect
    con = duckdb.connect()
    con.register("persons", pd.DataFrame({"distinct_id": ["a", "b"], "plan": ["pro", "free"]}))
    got = con.sql(to_sql(defs)).df()
    assert not target.exists()
    assert list(got.columns)[1] == key and len(got) == 2


def test_odd_property_names_and_values_are_quoted_for_each_engine() -> None:
    prop = "we\"ird\\ `name` 'x'\n"
    values = ["a\\b", "it's", 'q"uote', "back\\'slash", "new\nline"]
    flags = [
        _quoted(f"f{i}", name=prop, operator=op, value=v)
        for i, (op, v) in enumerate((op, v) for op in ("exact", "icontains", "starts_with") for v in values)
    ]
    for f in flags:
        f["filters"]["groups"][0]["rollout_percentage"] = 100
    frame = pd.DataFrame({"distinct_id": [f"u{i}" for i in range(6)], prop: [*values, None]})
    want = evaluate_frame(frame, definitions=flags, reasons=True)
    engines = ["duckdb"]
    try:
        import chdb  # noqa: F401

        engines.append("clickhouse")
    except ImportError:  # pragma: no cover - chDB is optional
        pass
    for engine in engines:
        got, query = run_sql(frame, flags, engine=engine)
        assert not query.local_flags, engine
        for f in flags:
            assert got[f["key"]].astype(object).tolist() == want[f["key"]].astype(object).tolist(), (
                engine,
                f,
            )
    # not vacuous: each value matches its own exact filter
    assert sum(bool(want[f"f{i}"].iloc[i]) for i in range(len(values))) == len(values)


@pytest.mark.parametrize("key", ["a b", "x\n-- y", "abc\n", "naïve", "semi;colon", "dot.ted", ""])
def test_read_definitions_refuses_a_key_posthog_refuses(key: str) -> None:
    with pytest.raises(DefinitionsError) as caught:
        read_definitions([_quoted("fine-key_1"), _quoted(key)])
    assert repr(key) in str(caught.value) and caught.value.key == key


def test_read_definitions_names_a_bad_key_from_json_text() -> None:
    text = '{"flags": [{"key": "bad\\nkey", "filters": {"groups": []}}]}'
    with pytest.raises(DefinitionsError, match=r"'bad\\nkey'.*letters, numbers, hyphens"):
        read_definitions(text)
    assert read_definitions([_quoted("Fine-Key_9")]).keys == ["Fine-Key_9"]


def test_a_nul_in_a_property_name() -> None:
    name = "pl\x00an"
    flag = _quoted("nul", name=name, operator="exact", value=["pro"], rollout=100)
    text = to_sql([flag], schema={"distinct_id": "string", name: "string"})
    assert len(sqlglot.parse(text)) == 1 and "needs the local engine" in text
    frame = pd.DataFrame({"distinct_id": ["a", "b"], name: ["pro", "free"]})
    assert simulate(frame, engine="local", definitions=[flag]).outputs["nul"].tolist() == [True, False]
    with pytest.raises(SimulationInputError, match=r"'pl\\x00an'.*NUL"):
        simulate(frame, engine="sql", definitions=[flag], progress=False)
    with pytest.raises(ValueError, match="NUL"):
        run_sql(frame, [flag])
