"""Check the committed example notebooks before nbval runs them; exit 1 with the fix when one breaks a rule.

- Every code cell with source has stored outputs (nbval passes a never-executed cell silently).
- No code cell closes a client (``client.close()``, ``.aclose()``): after "Run All" (and always in Voila,
  which runs every cell) the panels built above would be dead. Say in a markdown cell how to close instead.
- No code cell prints a frame as text (``print(df.to_string())``): show the frame itself (a bare ``df`` or
  ``display(df)``), so JupyterLab renders the table; nbval still compares its ``text/plain``.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

_CLOSES = re.compile(r"^[^#\n]*\b\w+\.a?close\(\s*\)", re.MULTILINE)
_PRINTS_TEXT = re.compile(r"^[^#\n]*\.to_string\(", re.MULTILINE)


def _code_cells(path: Path) -> list[tuple[int, dict[str, Any], str]]:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return [
        (i, cell, "".join(cell.get("source", [])))
        for i, cell in enumerate(nb.get("cells", []))
        if cell.get("cell_type") == "code"
    ]


def unexecuted_cells(path: Path) -> list[int]:
    """Indexes of code cells that have source but were never executed (no execution_count)."""
    return [
        i for i, cell, source in _code_cells(path) if source.strip() and cell.get("execution_count") is None
    ]


def closing_cells(path: Path) -> list[int]:
    """Indexes of code cells that close a client (``x.close()`` / ``x.aclose()`` outside a comment)."""
    return [i for i, _cell, source in _code_cells(path) if _CLOSES.search(source)]


def to_string_cells(path: Path) -> list[int]:
    """Indexes of code cells that turn a frame into text (``.to_string(`` outside a comment)."""
    return [i for i, _cell, source in _code_cells(path) if _PRINTS_TEXT.search(source)]


def problems(path: Path) -> list[str]:
    """One sentence per broken rule in notebook ``path`` (empty when it is fine)."""
    found = []
    if cells := unexecuted_cells(path):
        found.append(f"{path}: code cells {cells} have no stored outputs; run scripts/execute_notebooks.py")
    if cells := closing_cells(path):
        found.append(
            f"{path}: code cells {cells} close a client, so panels are dead after Run All (and in Voila); "
            "remove the close and say in a markdown cell how to close when done"
        )
    if cells := to_string_cells(path):
        found.append(
            f"{path}: code cells {cells} print a frame with .to_string(); show the frame itself "
            "(a bare `df` as the last line, or display(df)) so JupyterLab renders the table"
        )
    return found


def main(argv: list[str]) -> int:
    folder = Path(argv[1] if len(argv) > 1 else "notebooks")
    notebooks = sorted(folder.glob("*.ipynb"))
    bad = {str(p): found for p in notebooks if (found := problems(p))}
    for found in bad.values():
        for sentence in found:
            print(sentence, file=sys.stderr)
    print(f"check_notebooks: {len(notebooks)} notebooks, {len(bad)} with problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
