"""Type checkers see every verb form's parameters: ``python scripts/check_typed_surface.py``.

Run by ``scripts/test`` and ``tests/project/test_typed_surface.py``.

``tests/project/typing_misspelt.py`` calls each verb form (``Client.simulate``, ``asimulate``,
``anb.Client(...)``, ...) with a misspelt keyword, one call per line marked ``# misspelt``. mypy (and pyright,
when it is installed) must report an error on each marked line and nowhere else: a form typed
``(*args, **kwargs)`` accepts any keyword, so its line would be missing from the report. Exit 1 otherwise.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "tests" / "project" / "typing_misspelt.py"
MARK = re.compile(r"\)  # misspelt")  # a call, then the mark


def marked_lines(path: Path = SAMPLE) -> set[int]:
    """The lines that must be reported."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return {n for n, line in enumerate(lines, 1) if MARK.search(line)}


def mypy_lines(path: Path = SAMPLE) -> set[int]:
    """The lines mypy reports an error on (it reads ``pyproject.toml``: ``mypy_path = "src"``)."""
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--hide-error-context", "--no-error-summary", str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    if done.returncode not in (0, 1):
        raise RuntimeError(f"mypy did not run: {done.stdout}{done.stderr}")
    pattern = re.compile(rf"{re.escape(path.name)}:(\d+): error:")
    return {int(m.group(1)) for m in map(pattern.search, done.stdout.splitlines()) if m}


def pyright() -> str | None:
    """The pyright command, when installed next to this Python or on PATH (never installed here)."""
    beside = Path(sys.executable).with_name("pyright")
    return str(beside) if beside.exists() else shutil.which("pyright")


def pyright_lines(command: str, path: Path = SAMPLE) -> set[int]:
    done = subprocess.run(
        [command, "--outputjson", "--pythonpath", sys.executable, str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    report = json.loads(done.stdout)
    return {
        d["range"]["start"]["line"] + 1
        for d in report.get("generalDiagnostics", [])
        if d["severity"] == "error"
    }


def main() -> int:
    expected = marked_lines()
    checkers = {"mypy": mypy_lines}
    command = pyright()
    if command is not None:
        checkers["pyright"] = lambda: pyright_lines(command)
    else:
        print("check_typed_surface: pyright is not installed; mypy only")
    failed = False
    for name, check in checkers.items():
        found = check()
        if found != expected:
            failed = True
            missed = sorted(expected - found)
            extra = sorted(found - expected)
            print(
                f"{name}: misspelt keywords not caught on lines {missed}; unexpected errors on lines {extra}"
            )
        else:
            print(f"{name}: all {len(expected)} misspelt keywords caught")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
