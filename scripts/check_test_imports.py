"""Find (and optionally rewrite) test imports of private names that a public module exports.

A test should import what an analyst imports: ``from analytics_nb.flags import evaluate``, not
``from analytics_nb.flags._engine import evaluate``, wherever the name is public. Then a test breaks when the
public surface changes, and the internals can move without touching every test. A private name that no public
module exports stays as it is: tests of internals are legitimate.

"Public" means a module whose dotted path has no part starting with ``_`` (packages count through their
``__init__``) and that lists the name in ``__all__``; the match is by object identity after importing both.
Where several public modules export the object, the one sharing the longest prefix with the private path is
chosen (``analytics_nb.flags._engine.x`` -> ``analytics_nb.flags``, not ``analytics_nb``).

Usage::

    python scripts/check_test_imports.py            # report; exit 1 if a private import has a public path
    python scripts/check_test_imports.py --fix      # rewrite those import lines in place
    python scripts/check_test_imports.py --counts   # the figures: files, rewritable, left private
"""

from __future__ import annotations

import argparse
import ast
import importlib
import pkgutil
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

PACKAGE = "analytics_nb"
ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"


def is_private(dotted: str) -> bool:
    """Whether any part of a dotted path starts with an underscore (``__init__`` parts aside)."""
    return any(part.startswith("_") for part in dotted.split("."))


def public_modules() -> dict[str, ModuleType]:
    """Every importable public module of the package by dotted name (one that fails to import is skipped)."""
    root = importlib.import_module(PACKAGE)
    found: dict[str, ModuleType] = {PACKAGE: root}
    for info in pkgutil.walk_packages(root.__path__, PACKAGE + "."):
        if is_private(info.name):
            continue
        try:
            found[info.name] = importlib.import_module(info.name)
        except Exception:  # an optional extra missing: that module cannot be a public path here
            continue
    return found


def public_index() -> dict[tuple[str, int], list[str]]:
    """Map (name, id(object)) to the public modules that export that object under that name in ``__all__``."""
    index: dict[tuple[str, int], list[str]] = {}
    for modname, module in public_modules().items():
        for name in getattr(module, "__all__", ()):
            if hasattr(module, name):
                index.setdefault((name, id(getattr(module, name))), []).append(modname)
    return index


def best_public(private_module: str, candidates: list[str]) -> str:
    """The candidate sharing the longest dotted prefix with the private module; shorter path on ties."""

    def shared(candidate: str) -> int:
        count = 0
        for a, b in zip(candidate.split("."), private_module.split("."), strict=False):
            if a != b:
                break
            count += 1
        return count

    return sorted(candidates, key=lambda c: (-shared(c), len(c), c))[0]


@dataclass
class PrivateImport:
    """One private import statement in a test file and, per imported name, its public module (or None)."""

    path: Path
    node: ast.ImportFrom | ast.Import
    targets: dict[str, str | None]  # imported name -> public module, None if none


def resolve(module: str, name: str, index: dict[tuple[str, int], list[str]]) -> str | None:
    """The public module exporting ``module.name`` (same name, same object), or None."""
    try:
        obj = getattr(importlib.import_module(module), name)
    except Exception:
        return None
    candidates = index.get((name, id(obj)))
    return best_public(module, candidates) if candidates else None


def scan_file(path: Path, index: dict[tuple[str, int], list[str]]) -> list[PrivateImport]:
    """The private imports of analytics_nb in one test file, each with its public paths."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if not (node.module == PACKAGE or node.module.startswith(PACKAGE + ".")):
                continue
            names = [alias.name for alias in node.names]
            if not is_private(node.module):  # a public module: only its private names are private imports
                names = [n for n in names if is_private(n)]
            if not names:
                continue
            targets = {n: (None if is_private(n) else resolve(node.module, n, index)) for n in names}
            found.append(PrivateImport(path, node, targets))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(PACKAGE + ".") and is_private(alias.name):
                    found.append(PrivateImport(path, node, {alias.name: None}))
    return found


def scan(index: dict[tuple[str, int], list[str]] | None = None) -> list[PrivateImport]:
    """Every private import of analytics_nb under ``tests/``."""
    index = public_index() if index is None else index
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        found.extend(scan_file(path, index))
    return found


def rewritable(found: list[PrivateImport]) -> list[tuple[PrivateImport, str, str]]:
    """(import, name, public module) for each privately imported name that has a public path."""
    return [(imp, name, pub) for imp in found for name, pub in imp.targets.items() if pub is not None]


def render(module: str, aliases: list[ast.alias], indent: str, comment: str) -> str:
    """One ``from module import ...`` statement, keeping the original's trailing comment (a ``noqa``)."""
    parts = ", ".join(a.name if a.asname is None else f"{a.name} as {a.asname}" for a in aliases)
    return f"{indent}from {module} import {parts}{comment}\n"


def fix_file(path: Path, imports: list[PrivateImport]) -> int:
    """Rewrite the import statements of one file, bottom-up so line numbers hold; return names moved."""
    lines = path.read_text().splitlines(keepends=True)
    moved = 0
    for imp in sorted(imports, key=lambda i: i.node.lineno, reverse=True):
        node = imp.node
        if not isinstance(node, ast.ImportFrom) or not any(imp.targets.values()):
            continue
        indent = lines[node.lineno - 1][: node.col_offset]
        groups: dict[str, list[ast.alias]] = {}
        for alias in node.names:
            target = imp.targets.get(alias.name) or str(node.module)
            groups.setdefault(target, []).append(alias)
            moved += target != node.module
        assert node.end_lineno is not None and node.end_col_offset is not None
        tail = lines[node.end_lineno - 1][node.end_col_offset :].rstrip("\n")
        comment = "  " + tail.strip() if tail.strip().startswith("#") else ""
        new = "".join(render(mod, aliases, indent, comment) for mod, aliases in groups.items())
        lines[node.lineno - 1 : node.end_lineno] = [new]
    path.write_text("".join(lines))
    return moved


def main(argv: list[str] | None = None) -> int:
    """Report, count or fix; exit 1 when a private import has a public path and --fix was not given."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fix", action="store_true", help="rewrite the imports in place")
    parser.add_argument("--counts", action="store_true", help="print the figures only")
    args = parser.parse_args(argv)
    found = scan()
    moves = rewritable(found)
    left = [(imp, n) for imp in found for n, pub in imp.targets.items() if pub is None]
    files = {imp.path for imp in found}
    print(f"test files importing private names: {len(files)} of {len(list(TESTS.rglob('*.py')))}")
    print(
        f"private imported names with a public path: {len(moves)} in {len({m[0].path for m in moves})} files"
    )
    print(
        f"private imported names without a public path: {len(left)} in {len({i.path for i, _ in left})} files"
    )
    if args.counts:
        return 0
    if args.fix:
        by_file: dict[Path, list[PrivateImport]] = {}
        for imp in found:
            by_file.setdefault(imp.path, []).append(imp)
        total = sum(fix_file(path, imps) for path, imps in by_file.items())
        print(f"rewrote {total} imported names")
        return 0
    for imp, name, pub in moves:
        where = imp.path.relative_to(ROOT)
        print(f"{where}:{imp.node.lineno}: {name} -> from {pub} import {name}")
    return 1 if moves else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    sys.exit(main())
