"""Fail when a committed notebook has a code cell without stored outputs (nbval would pass it silently)."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def unexecuted_cells(path: Path) -> list[int]:
    """Indexes of code cells that have source but were never executed (no execution_count)."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    return [
        i
        for i, cell in enumerate(nb.get("cells", []))
        if cell.get("cell_type") == "code"
        and "".join(cell.get("source", [])).strip()
        and cell.get("execution_count") is None
    ]


def main(argv: list[str]) -> int:
    folder = Path(argv[1] if len(argv) > 1 else "notebooks")
    notebooks = sorted(folder.glob("*.ipynb"))
    bad = {str(p): cells for p in notebooks if (cells := unexecuted_cells(p))}
    for name, cells in bad.items():
        print(f"{name}: code cells {cells} have no stored outputs; run scripts/execute_notebooks.py",
              file=sys.stderr)
    print(f"check_notebooks: {len(notebooks)} notebooks, {len(bad)} with unexecuted cells")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
