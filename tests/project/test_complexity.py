"""No function above 20 on the request, capture, engine and SQL paths, as radon counts (issue 38).

Radon's cyclomatic complexity adds one per boolean operator (``a and b or c`` is +2), which ruff's McCabe
check (C901, ``max-complexity`` in pyproject.toml) does not, so a function can pass ruff and fail here.
The figure in docs/architecture.md is measured with ``radon cc -s -n C src/analytics_nb``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import analytics_nb

radon_complexity = pytest.importorskip("radon.complexity", reason="radon is in the test extra")
radon_visitors = pytest.importorskip("radon.visitors", reason="radon is in the test extra")

PACKAGE = Path(analytics_nb.__file__).parent
LIMIT = 20

#: The request, capture, engine and SQL paths: every module under these folders, and these files.
FOLDERS = ("client", "capture", "flags", "session")
FILES = ("simulation/_sql.py", "simulation/_sql_engine.py", "simulation/_sql_source.py")

#: (module path, function's full name) -> why it stays one function; each is named in docs/architecture.md.
KEPT_WHOLE: dict[tuple[str, str], str] = {
    ("flags/_backtrack.py", "_run"): (
        "the regex VM's dispatch loop: one branch per instruction, and a call per step would slow every"
        " look-around match"
    ),
}


def _modules() -> list[Path]:
    paths = [p for folder in FOLDERS for p in sorted((PACKAGE / folder).rglob("*.py"))]
    return paths + [PACKAGE / f for f in FILES]


def _over_limit() -> dict[tuple[str, str], int]:
    found: dict[tuple[str, str], int] = {}
    for path in _modules():
        for block in radon_complexity.cc_visit(path.read_text(encoding="utf-8")):
            if isinstance(block, radon_visitors.Function) and block.complexity > LIMIT:
                found[(path.relative_to(PACKAGE).as_posix(), block.fullname)] = block.complexity
    return found


def test_no_function_above_20_on_the_request_capture_engine_and_sql_paths() -> None:
    new = {key: cc for key, cc in _over_limit().items() if key not in KEPT_WHOLE}
    listing = "\n".join(f"  {path} {name}: {cc}" for (path, name), cc in sorted(new.items()))
    assert not new, (
        f"{len(new)} function(s) above {LIMIT} (radon cc, boolean operators counted):\n{listing}\n"
        "split them into named steps, or keep one whole in KEPT_WHOLE with the reason (and in"
        " docs/architecture.md)"
    )


def test_the_kept_list_is_still_needed() -> None:
    """A function in KEPT_WHOLE that is now at or under the limit leaves the list (and the docs' table)."""
    over = _over_limit()
    stale = sorted(key for key in KEPT_WHOLE if key not in over)
    assert not stale, f"no longer above {LIMIT}, remove from KEPT_WHOLE and docs/architecture.md: {stale}"


def test_each_kept_function_is_named_in_the_architecture_page() -> None:
    """docs/architecture.md's complexity table names every function kept whole, as `part.module.name`."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "architecture.md").read_text(encoding="utf-8")
    for path, name in KEPT_WHOLE:
        dotted = f"{path.removesuffix('.py').replace('/', '.')}.{name}"
        assert f"`{dotted}`" in page, f"docs/architecture.md's complexity table does not name {dotted}"


def test_the_check_sees_a_function_above_the_limit() -> None:
    """Radon counts each boolean operator: one `if` with 19 `and`s is 21 (1 + 1 + 19), above the limit."""
    source = "def f(a):\n    if " + " and ".join(["a"] * 20) + ":\n        return 1\n"
    (block,) = radon_complexity.cc_visit(source)
    assert block.complexity == 21 > LIMIT
