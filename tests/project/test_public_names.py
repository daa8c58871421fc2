"""Tests import public names where one exists (issue 38: "tests use public names where one exists").

A test that imports ``load_definitions`` from ``analytics_nb.simulation._definitions`` while
``analytics_nb.simulation`` exports the same object tests a path no analyst types, and breaks when the
internals move. The rule: a test file may import a private path only for a name that no public module
exports (tests of internals are legitimate). The checker and the rewrite are
``scripts/check_test_imports.py`` (``--fix`` rewrites the import lines).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "check_test_imports.py"


@pytest.fixture(scope="module")
def checker() -> ModuleType:
    """The script, loaded as a module (scripts/ is not a package)."""
    spec = importlib.util.spec_from_file_location("check_test_imports", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def index(checker: ModuleType) -> dict[tuple[str, int], list[str]]:
    return checker.public_index()  # type: ignore[no-any-return]


def test_no_test_imports_a_private_path_for_a_public_name(checker: ModuleType, index: dict) -> None:
    moves = checker.rewritable(checker.scan(index))
    found = [
        f"{imp.path.relative_to(ROOT)}:{imp.node.lineno}: from {pub} import {name}"
        for imp, name, pub in moves
    ]
    assert not found, (
        "these tests import a private path for a name a public module exports; import the public one "
        "(`python scripts/check_test_imports.py --fix` rewrites them):\n" + "\n".join(found)
    )


def test_the_checker_finds_a_public_path_and_leaves_internals(
    checker: ModuleType, index: dict, tmp_path: Path
) -> None:
    """A planted file: the public name is found (by identity, in the nearest public package), the internal one
    and the private-module import stay, and ``--fix`` keeps the line's ``noqa``."""
    path = tmp_path / "test_planted.py"
    path.write_text(
        "from analytics_nb.simulation._definitions import live_flags, load_definitions  # noqa: E402\n"
        "from analytics_nb.flags import _hashing\n"
        "import analytics_nb.simulation._sql\n"
    )
    found = checker.scan_file(path, index)
    assert [imp.targets for imp in found] == [
        {"live_flags": None, "load_definitions": "analytics_nb.simulation"},
        {"_hashing": None},
        {"analytics_nb.simulation._sql": None},
    ]
    assert checker.fix_file(path, found) == 1
    assert path.read_text().splitlines()[:2] == [
        "from analytics_nb.simulation._definitions import live_flags  # noqa: E402",
        "from analytics_nb.simulation import load_definitions  # noqa: E402",
    ]
