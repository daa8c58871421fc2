"""The tests' shared helpers stay shared (issue 24: "shared fixtures in one conftest/plugin (sandbox, client,
flags)"): flag definitions are written with the builders of ``tests/_flags.py``, so no test file defines its
own ``_flag`` / ``_flags`` builder again (ten files each had one before)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
BUILDER_NAMES = frozenset({"_flag", "_flags"})


def _own_builders(source: str) -> list[tuple[int, str]]:
    """``(line, name)`` of each function named like a per-file flag builder, at any depth."""
    return [
        (node.lineno, node.name)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in BUILDER_NAMES
    ]


def test_no_test_file_defines_its_own_flag_builder() -> None:
    found = [
        f"{path.relative_to(TESTS)}:{line} {name}"
        for path in sorted(TESTS.rglob("*.py"))
        for line, name in _own_builders(path.read_text(encoding="utf-8"))
    ]
    assert not found, (
        "build flag definitions with tests/_flags.py (prop, condition, flag, definitions) instead of a "
        f"per-file builder: {found}"
    )


def test_the_scan_sees_a_nested_builder() -> None:
    """A builder inside a test function counts too (so the test above can fail)."""
    source = "def test_x() -> None:\n    def _flags() -> list:\n        return []\n"
    assert _own_builders(source) == [(2, "_flags")]
    assert _own_builders("def flags_of(sb): ...\n") == []
