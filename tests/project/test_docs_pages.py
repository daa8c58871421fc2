"""Every code block of the docs runs: each Python block of every page in ``docs/`` is executed, and shell
blocks name only scripts, files and commands that exist.

A page's Python blocks share one namespace, in page order (as cells of a notebook do), and set themselves
up: the runnable ones start from ``Client.sandbox()`` or ``sandbox.start()``, the embedded PostHog on
127.0.0.1. A block that cannot run here (PostHog Cloud keys) is preceded by an HTML comment
``<!-- not run: why -->``: it is only compiled, so a typo in it still fails, and it must be listed in
``NOT_RUN`` with the same reason, so the list stays short and visible. ``docs/architecture.md`` is excluded
as a whole (``NOT_RUN_PAGES``): its ``python`` fences are signature sketches, not code.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
import tomllib
import types
import warnings
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md"))
FENCE = re.compile(
    r"(?P<skip><!-- not run: (?P<why>[^>]*?) -->\s*\n)?"
    r"^(?P<indent>[ \t]*)```(?P<lang>\w*)[^\n]*\n(?P<code>.*?)^(?P=indent)```",
    re.S | re.M,
)

# Blocks that are only compiled, by (page, reason): keep it tiny.
NOT_RUN = {
    ("get-started/connect.md", "needs PostHog Cloud keys"),
    ("explanation/simulation.md", "needs a Databricks Spark session"),
}
# Whole pages whose python fences are not code (counted in test_not_run_list).
NOT_RUN_PAGES = {"architecture.md": "signature sketches of the parts' APIs, not runnable code"}


def page_id(page: Path) -> str:
    return page.relative_to(DOCS).as_posix()


def fences(page: Path) -> list[re.Match[str]]:
    return list(FENCE.finditer(page.read_text(encoding="utf-8")))


def blocks(page: Path) -> list[tuple[bool, str]]:
    """The page's Python blocks as (runs, source)."""
    return [(m["skip"] is None, m["code"]) for m in fences(page) if m["lang"] == "python"]


RUN_PAGES = [p for p in PAGES if page_id(p) not in NOT_RUN_PAGES and blocks(p)]


def test_pages_exist() -> None:
    tasks = [p for p in PAGES if p.parent.name in ("get-started", "how-to")]
    assert len(tasks) >= 8, tasks
    assert all(blocks(p) for p in tasks), [p.name for p in tasks if not blocks(p)]
    assert len(RUN_PAGES) >= 15, [page_id(p) for p in RUN_PAGES]


def test_not_run_list() -> None:
    """Every ``not run`` marker has a reason and is listed in NOT_RUN; the list is tiny."""
    found = {(page_id(p), m["why"].strip()) for p in PAGES for m in fences(p) if m["skip"]}
    assert found == NOT_RUN, f"markers in the pages {sorted(found)} != NOT_RUN {sorted(NOT_RUN)}"
    assert all(why for _, why in found)
    assert len(NOT_RUN) + len(NOT_RUN_PAGES) <= 3
    stray = [(page_id(p), m["lang"]) for p in PAGES for m in fences(p) if m["skip"] and m["lang"] != "python"]
    assert not stray, f"'not run' before a non-Python block: {stray}"


@pytest.mark.parametrize("page", RUN_PAGES, ids=[page_id(p) for p in RUN_PAGES])
def test_page_runs(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TQDM_DISABLE", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    keys = ("POSTHOG_HOST", "POSTHOG_PERSONAL_API_KEY", "POSTHOG_PROJECT_API_KEY", "POSTHOG_SECRET_API_KEY")
    for name in keys:
        monkeypatch.delenv(name, raising=False)
    module = types.ModuleType(f"docs_{page.stem.replace('-', '_')}")  # pydantic generics look their module up
    monkeypatch.setitem(sys.modules, module.__name__, module)
    namespace: dict[str, Any] = module.__dict__
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a page may show a warning: the reader sees it
            for number, (runs, code) in enumerate(blocks(page), 1):
                compiled = compile(code, f"{page_id(page)}[block {number}]", "exec")
                if runs:
                    exec(compiled, namespace)
    finally:
        for value in list(namespace.values()):  # a failed block leaves no client or sandbox running
            if type(value).__name__ == "Client":
                value.close()
            elif type(value).__name__ in ("Sandbox", "ProcessSandbox"):
                value.stop()  # idempotent
    assert os.environ.get("TQDM_DISABLE") == "1"


# --- shell blocks ---

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
REPO_PATH = re.compile(r"^(scripts|notebooks|tests|docs|src|bench)/")
SHELL_LANGS = ("bash", "sh", "shell", "console")


def shell_commands(code: str) -> list[list[str]]:
    """The commands of a shell block, as token lists (continuations joined, comments and prompts dropped)."""
    commands = []
    for line in code.replace("\\\n", " ").splitlines():
        line = line.split(" #", 1)[0].strip().removeprefix("$ ")
        if not line or line.startswith("#"):
            continue
        for part in re.split(r"&&|\|\||;|\|", line):
            if part.strip():
                commands.append(shlex.split(part))
    return commands


SHELL = [(p, m["code"]) for p in PAGES for m in fences(p) if m["lang"] in SHELL_LANGS]


def check_command(tokens: list[str]) -> list[str]:
    """What a command names that does not exist (empty when it all does)."""
    problems = []
    head, args = tokens[0], tokens[1:]
    bin_dir = Path(sys.executable).parent
    if head == "bash":
        if not (ROOT / args[0]).is_file():
            problems.append(f"no script {args[0]}")
    elif head.startswith(".venv/bin/"):
        if not (bin_dir / head.removeprefix(".venv/bin/")).exists():
            problems.append(f"no {head} in the test venv")
    elif head == "analytics-nb":
        assert "analytics-nb" in PYPROJECT["project"]["scripts"]
        cli = (ROOT / "src/analytics_nb/cli.py").read_text(encoding="utf-8")
        if args and f'"{args[0]}"' not in cli:
            problems.append(f"analytics-nb has no command {args[0]}")
    elif head in ("pip", "python", "python3"):
        pass
    elif shutil.which(head) is None and not (bin_dir / head).exists():
        problems.append(f"no command {head}")
    extras = PYPROJECT["project"]["optional-dependencies"]
    for token in tokens[2:] if head == "bash" else tokens[1:]:
        if REPO_PATH.match(token) and not (ROOT / token).exists():
            problems.append(f"no file {token}")
        if token.startswith("analytics-nb["):
            problems += [f"no extra {e}" for e in token[13:].rstrip("]").split(",") if e not in extras]
    return problems


def test_shell_blocks_name_what_exists() -> None:
    assert SHELL, "no shell blocks found"
    problems = [
        f"{page_id(page)}: {' '.join(tokens)}: {problem}"
        for page, code in SHELL
        for tokens in shell_commands(code)
        for problem in check_command(tokens)
    ]
    assert not problems, "\n".join(problems)


def test_shell_check_catches_a_missing_script() -> None:
    assert check_command(["bash", "scripts/nope"]) == ["no script scripts/nope"]
    assert check_command(["pip", "install", "analytics-nb[fast,nope]"]) == ["no extra nope"]
    assert check_command(["analytics-nb", "serve"]) == ["analytics-nb has no command serve"]
