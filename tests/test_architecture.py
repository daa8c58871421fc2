"""The dependency direction of docs/architecture.md holds: checked on imports, statically and at run time."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import analytics_nb

PACKAGE = Path(analytics_nb.__file__).parent

#: part -> the parts it must never import (statically, anywhere in its modules).
FORBIDDEN = {
    "models": {"flags", "sandbox", "client", "frames", "simulate", "capture", "widgets", "embedded"},
    "flags": {"sandbox", "client", "frames", "simulate", "capture", "widgets", "embedded"},
    "sandbox": {"client", "frames", "simulate", "capture", "widgets", "embedded", "errors"},
    "frames": {"sandbox", "simulate", "capture", "widgets", "embedded"},
    "simulate": {"sandbox", "widgets", "embedded"},
    "capture": {"sandbox", "widgets", "embedded"},
}


def _imported_parts(path: Path) -> set[str]:
    """The top-level analytics_nb parts a module imports by absolute name."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    parts: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        for name in names:
            bits = name.split(".")
            if bits[0] == "analytics_nb" and len(bits) > 1:
                parts.add(bits[1])
    return parts


@pytest.mark.parametrize("part", sorted(FORBIDDEN))
def test_no_part_imports_a_part_to_its_right(part: str) -> None:
    offenders = {
        str(path.relative_to(PACKAGE)): sorted(_imported_parts(path) & FORBIDDEN[part])
        for path in (PACKAGE / part).rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def _modules_after_import(module: str) -> set[str]:
    code = f"import sys, {module}; print('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return set(out.split())


def test_sandbox_runs_without_the_client() -> None:
    loaded = _modules_after_import("analytics_nb.sandbox")
    assert "analytics_nb.sandbox" in loaded
    assert not {m for m in loaded if m.startswith(("analytics_nb.client", "analytics_nb.capture"))}


def test_client_core_does_not_load_the_sandbox() -> None:
    loaded = _modules_after_import("analytics_nb.client")
    assert "analytics_nb.client" in loaded
    assert not {m for m in loaded if m.startswith("analytics_nb.sandbox")}


def test_importing_the_package_is_cheap() -> None:
    loaded = _modules_after_import("analytics_nb")
    assert "analytics_nb" in loaded
    assert not {"pandas", "httpx", "ipywidgets", "starlette"} & loaded


def test_public_names_resolve() -> None:
    assert set(analytics_nb.__all__) - {"__version__"} == set(analytics_nb._LAZY)
    for name in analytics_nb.__all__:
        assert getattr(analytics_nb, name) is not None
