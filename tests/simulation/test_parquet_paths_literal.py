"""Issue 37 finding 4: a parquet path is read literally. DuckDB's ``read_parquet`` expands ``*``, ``?`` and
``[...]`` in any path, so ``a[1].parquet`` beside ``a1.parquet`` gave the sibling's rows and ``a*b.parquet``
every ``a...b`` file. A glob is read only when asked for: the caller expands it and passes the list."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from analytics_nb.sandbox._resources.demo_flags import demo_persons
from analytics_nb.simulation import SimulationInputError, simulate

pytest.importorskip("duckdb", reason="the 'sql' extra is not installed")
pytest.importorskip("sqlglot", reason="the 'sql' extra is not installed")


def _persons(n: int, tag: str) -> pd.DataFrame:
    """The demo persons, one column per property (the columns all-null in a small sample typed)."""
    frame = pd.DataFrame([{**props, "distinct_id": f"{tag}-{i}"} for i, props in demo_persons(n)])
    for name, dtype in (("$feature_enrollment/early-access-ai", "boolean"), ("phone", "string")):
        frame[name] = frame[name].astype(dtype) if name in frame else pd.array([None] * n, dtype=dtype)
    return frame


@pytest.fixture
def exports(tmp_path: Path) -> Path:
    """``a[1].parquet`` (30 rows) beside ``a1.parquet`` (50), ``a*b.parquet`` (20) beside ``aXb.parquet``
    (70) and ``aYb.parquet`` (40), and a folder ``d[1]`` (10) beside ``d1`` (60)."""
    for name, n in (("a[1]", 30), ("a1", 50), ("a*b", 20), ("aXb", 70), ("aYb", 40)):
        _persons(n, name).to_parquet(tmp_path / f"{name}.parquet")
    for name, n in (("d[1]", 10), ("d1", 60)):
        (tmp_path / name).mkdir()
        _persons(n, name).to_parquet(tmp_path / name / "part-0.parquet")
    return tmp_path


@pytest.mark.parametrize("engine", ["sql", "local"])
@pytest.mark.parametrize(("name", "rows"), [("a[1].parquet", 30), ("a*b.parquet", 20), ("d[1]", 10)])
def test_a_path_with_glob_characters_is_that_file(
    exports: Path, demo_definitions: Any, engine: str, name: str, rows: int
) -> None:
    kw: dict[str, Any] = {"progress": False} if engine == "sql" else {}
    result = simulate(exports / name, engine=engine, definitions=demo_definitions, **kw)
    try:
        assert len(result.outputs) == rows
    finally:
        getattr(result, "close", lambda: None)()


def test_a_glob_is_read_when_the_caller_expands_it(exports: Path, demo_definitions: Any) -> None:
    files = sorted(exports.glob("a?b.parquet"))  # aXb, aYb (and a*b, whose name matches too)
    assert [f.name for f in files] == ["a*b.parquet", "aXb.parquet", "aYb.parquet"]
    with simulate(files, engine="sql", definitions=demo_definitions, progress=False) as sql:
        assert len(sql.outputs) == 130
    local = simulate([str(f) for f in files], engine="local", definitions=demo_definitions)
    assert len(local.outputs) == 130


def test_a_pattern_that_is_no_file_says_paths_are_literal(exports: Path, demo_definitions: Any) -> None:
    with pytest.raises(SimulationInputError, match="read literally") as info:
        simulate(exports / "a?.parquet", engine="sql", definitions=demo_definitions, progress=False)
    assert "glob(" in str(info.value)
