"""A missing optional engine is one line naming its extra (issue 38): ``engine="sql"`` without DuckDB said
``No module named 'duckdb'`` from deep inside the run. Each check hides the module (``sys.modules[name] =
None`` makes ``import name`` fail, as an environment without it does)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest

from _flags import flag
from analytics_nb import flags, simulation
from analytics_nb.tables import MissingExtraError, from_pandas

SETS = pd.DataFrame({"distinct_id": ["a", "b"]})
DEFS = [flag("f", active=None)]


def _one_line(
    monkeypatch: pytest.MonkeyPatch, hidden: str, call: Callable[[], Any]
) -> tuple[str, BaseException]:
    monkeypatch.setitem(sys.modules, hidden, None)
    with pytest.raises(ImportError) as info:
        call()
    message = str(info.value)
    assert "\n" not in message and info.value.__cause__ is None and info.value.__suppress_context__
    assert isinstance(info.value, MissingExtraError)
    return message, info.value


@pytest.mark.parametrize("hidden", ["duckdb", "pyarrow", "sqlglot"])
def test_engine_sql_without_its_engine_names_the_sql_extra(
    monkeypatch: pytest.MonkeyPatch, hidden: str
) -> None:
    message, _ = _one_line(
        monkeypatch, hidden, lambda: simulation.simulate(SETS, engine="sql", definitions=DEFS)
    )
    assert (
        message == f"engine='sql' needs {hidden}, which is not installed: pip install \"analytics-nb[sql]\""
    )


def test_asimulate_and_simulate_sql_name_the_extra_too(monkeypatch: pytest.MonkeyPatch) -> None:
    message, _ = _one_line(
        monkeypatch,
        "duckdb",
        lambda: asyncio.run(simulation.asimulate(SETS, engine="sql", definitions=DEFS)),
    )
    assert message.endswith('pip install "analytics-nb[sql]"')
    message, _ = _one_line(monkeypatch, "duckdb", lambda: simulation.simulate_sql(SETS, DEFS))
    assert message.startswith("simulate_sql needs duckdb") and message.endswith('"analytics-nb[sql]"')


def test_to_sql_and_the_table_families_name_their_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    message, _ = _one_line(monkeypatch, "sqlglot", lambda: flags.to_sql(DEFS))
    assert message.endswith('pip install "analytics-nb[sql]"')
    message, error = _one_line(monkeypatch, "polars", lambda: from_pandas(SETS, "polars"))
    assert message.endswith('pip install "analytics-nb[polars]"') and error.name == "polars"
