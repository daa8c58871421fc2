"""scripts/check_notebooks.py: the committed notebooks pass; a notebook that closes its client, prints frames
as text or was never executed is refused with the fix
(issue 14: panels dead after Run All, to_string tables)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_notebooks", ROOT / "scripts" / "check_notebooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["check_notebooks"] = module
    spec.loader.exec_module(module)
    return module


check = _load()


def _notebook(path: Path, *sources: str, executed: bool = True) -> Path:
    cells: list[dict[str, object]] = [
        {
            "cell_type": "code",
            "id": f"c{i}",
            "metadata": {},
            "execution_count": i + 1 if executed else None,
            "outputs": [],
            "source": source,
        }
        for i, source in enumerate(sources)
    ]
    nb = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(nb), encoding="utf-8")
    return path


def test_the_example_notebooks_pass() -> None:
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    assert len(notebooks) == 6
    for path in notebooks:
        assert check.problems(path) == [], path
    assert check.main(["check_notebooks", str(ROOT / "notebooks")]) == 0


def test_a_cell_closing_the_client_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _notebook(tmp_path / "a.ipynb", "client = anb.Client.sandbox()", "x = 1\nclient.close()")
    assert check.closing_cells(tmp_path / "a.ipynb") == [1]
    assert check.main(["check_notebooks", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "code cells [1] close a client" in err and "markdown cell" in err


def test_await_aclose_and_commented_close(tmp_path: Path) -> None:
    path = _notebook(tmp_path / "b.ipynb", "await client.aclose()", "# client.close() when you are done")
    assert check.closing_cells(path) == [0]


def test_printing_a_frame_as_text_is_refused(tmp_path: Path) -> None:
    path = _notebook(tmp_path / "c.ipynb", "print(df.head().to_string())", "df", "# df.to_string() is text")
    assert check.to_string_cells(path) == [0]
    assert "display(df)" in check.problems(path)[0]


def test_unexecuted_cells_are_refused(tmp_path: Path) -> None:
    path = _notebook(tmp_path / "d.ipynb", "x = 1", "   ", executed=False)
    assert check.unexecuted_cells(path) == [0]
    assert "no stored outputs" in check.problems(path)[0]
