"""The dependency direction of docs/architecture.md holds: checked on imports, statically and at run time."""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from pathlib import Path

import pytest

import analytics_nb

PACKAGE = Path(analytics_nb.__file__).parent

#: part -> the parts it may import (statically, anywhere in its modules: at the top, inside functions
#: and under TYPE_CHECKING). The order is the one of docs/architecture.md; ``analytics_nb/__init__.py``
#: is the lazy public facade over all of them and is not a part.
ALLOWED: dict[str, set[str]] = {
    "wire": set(),
    "_palette": set(),  # the shared value colours of plots and panels (widgets branch)
    "_version": set(),  # __version__, read by the client's User-Agent without importing the package root
    "errors": {"wire"},
    "models": {"wire"},
    "tables": set(),  # family detection and pandas <-> Polars / Arrow / DuckDB / parquet (issue 16)
    "flags": {"wire", "models", "errors", "tables"},
    "sandbox": {"wire", "models", "flags"},
    "frames": {"wire", "models", "errors"},
    "client": {"wire", "models", "errors", "frames", "_version"},
    "capture": {"wire", "models", "errors", "flags", "frames", "client"},
    "simulation": {"wire", "models", "errors", "tables", "flags", "frames", "client", "_palette"},
    "embedded": {"client", "sandbox"},
    "session": {
        "wire",
        "models",
        "errors",
        "tables",
        "flags",
        "frames",
        "client",
        "capture",
        "simulation",
        "embedded",
    },
    "widgets": {
        "wire",
        "models",
        "errors",
        "flags",
        "frames",
        "client",
        "capture",
        "simulation",
        "session",
        "_palette",
    },
    "demo": {"models", "errors", "flags", "frames", "client", "capture", "simulation", "session", "widgets"},
    "cli": {"sandbox", "demo"},
}


def _parts() -> set[str]:
    """Every part in the package: its sub-packages and top-level modules (not ``__init__``)."""
    found = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    found |= {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    return found


def _absolute(path: Path, node: ast.ImportFrom) -> str:
    """The absolute module an ImportFrom names (relative imports resolved against the module's package)."""
    if node.level == 0:
        return node.module or ""
    package = path.relative_to(PACKAGE.parent).with_suffix("").parts
    if path.name != "__init__.py":
        package = package[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


@functools.cache
def _imports(path: Path) -> tuple[ast.Import | ast.ImportFrom, ...]:
    """Every Import/ImportFrom node of a module, wherever it is (each module parsed once per run)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return tuple(node for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom))


def _imported_parts(path: Path) -> set[str]:
    """The analytics_nb parts a module imports: every Import/ImportFrom node, wherever it is."""
    parts: set[str] = set()
    for node in _imports(path):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(path, node)
            # `from analytics_nb import errors` names a part; `from analytics_nb.x import y` names part x
            if module == "analytics_nb":
                names = [f"{module}.{alias.name}" for alias in node.names]
            else:
                names = [module]
        for name in names:
            bits = name.split(".")
            if bits[0] == "analytics_nb" and len(bits) > 1 and bits[1] in ALLOWED:
                parts.add(bits[1])
    return parts


def _modules(part: str) -> list[Path]:
    folder = PACKAGE / part
    return sorted(folder.rglob("*.py")) if folder.is_dir() else [PACKAGE / f"{part}.py"]


def _graph() -> dict[str, set[str]]:
    return {
        part: set().union(*(_imported_parts(path) for path in _modules(part))) - {part} for part in ALLOWED
    }


def test_every_part_has_a_row() -> None:
    assert _parts() == set(ALLOWED)


@pytest.mark.parametrize("part", sorted(ALLOWED))
def test_no_part_imports_a_part_to_its_right(part: str) -> None:
    offenders = {
        str(path.relative_to(PACKAGE)): sorted(_imported_parts(path) - ALLOWED[part] - {part})
        for path in _modules(part)
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_parts_form_a_dag_counting_imports_inside_functions() -> None:
    graph = _graph()
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(part: str) -> None:
        state[part] = "open"
        path.append(part)
        for dep in sorted(graph[part]):
            assert state.get(dep) != "open", "import cycle: " + " -> ".join([*path, dep])
            if dep not in state:
                visit(dep)
        path.pop()
        state[part] = "done"

    for part in sorted(graph):
        if part not in state:
            visit(part)


def _imports_from_the_root(path: Path) -> list[str]:
    """Names a module imports from the package root that are not parts (``from analytics_nb import x``)."""
    return [
        alias.name
        for node in _imports(path)
        if isinstance(node, ast.ImportFrom) and _absolute(path, node) == "analytics_nb"
        for alias in node.names
        if alias.name not in ALLOWED
    ]


def test_no_part_imports_a_name_from_the_package_root() -> None:
    """The root facade imports every part under TYPE_CHECKING, so ``from analytics_nb import __version__``
    in a part is a hidden cycle through all of them (mypy then could not type ``capture``'s async twins
    from ``session``: "Cannot determine type"). Parts import the module that holds the name."""
    offenders = {
        str(path.relative_to(PACKAGE)): names
        for part in ALLOWED
        for path in _modules(part)
        if (names := _imports_from_the_root(path))
    }
    assert offenders == {}


def test_the_walk_counts_imports_inside_functions_and_type_checking(tmp_path: Path) -> None:
    snippet = tmp_path / "snippet.py"
    snippet.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from analytics_nb import errors\n"
        "def f():\n    from analytics_nb.simulation import simulate\n"
        "class C:\n    def m(self):\n        import analytics_nb.widgets._base\n",
        encoding="utf-8",
    )
    assert _imported_parts(snippet) == {"errors", "simulation", "widgets"}
    beside_playlists = PACKAGE / "client" / "_resources" / "_playlists.py"
    relative = ast.parse("from ...frames import to_csv").body[0]
    assert isinstance(relative, ast.ImportFrom)
    assert _absolute(beside_playlists, relative) == "analytics_nb.frames"


def _modules_after_import(module: str) -> set[str]:
    code = f"import sys, {module}; print('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return set(out.split())


def test_sandbox_runs_without_the_client() -> None:
    loaded = _modules_after_import("analytics_nb.sandbox")
    assert "analytics_nb.sandbox" in loaded
    assert not {m for m in loaded if m.startswith(("analytics_nb.client", "analytics_nb.capture"))}


def test_the_clients_load_neither_the_sandbox_nor_the_widgets() -> None:
    loaded = _modules_after_import("analytics_nb.session")
    assert "analytics_nb.session" in loaded
    assert not {m for m in loaded if m.startswith(("analytics_nb.sandbox", "analytics_nb.widgets"))}


def test_client_core_does_not_load_the_sandbox() -> None:
    loaded = _modules_after_import("analytics_nb.client")
    assert "analytics_nb.client" in loaded
    assert not {m for m in loaded if m.startswith("analytics_nb.sandbox")}


def test_importing_the_package_is_cheap() -> None:
    loaded = _modules_after_import("analytics_nb")
    assert "analytics_nb" in loaded
    assert not {"pandas", "httpx", "ipywidgets", "starlette"} & loaded


def test_dir_lists_the_public_names_and_no_helpers() -> None:
    assert dir(analytics_nb) == sorted(analytics_nb.__all__)
    helpers = {"import_module", "Any", "TYPE_CHECKING", "annotations"}
    assert not helpers & set(vars(analytics_nb))  # helpers are imported under private names
    assert callable(analytics_nb.simulate) and analytics_nb.simulate is analytics_nb.simulation.simulate


def test_public_names_resolve() -> None:
    assert set(analytics_nb.__all__) - {"__version__"} == set(analytics_nb._LAZY)
    for name in analytics_nb.__all__:
        assert getattr(analytics_nb, name) is not None
