"""Execute every example notebook in place (kernel ``python3``) and store its outputs for nbval.

Run it after editing a notebook: ``.venv/bin/python scripts/execute_notebooks.py [notebook.ipynb ...]``
(``--allow-errors`` stores a failing cell's error and goes on, for debugging; never commit such a run).
Progress bars are disabled (``TQDM_DISABLE=1``) and the ``POSTHOG_*`` variables are removed for the run, so
the stored outputs are the embedded sandbox's, stable from one run to the next.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
KERNEL = "python3"
TIMEOUT = 180


def execute(path: Path, *, allow_errors: bool = False) -> float:
    """Run one notebook top to bottom in its own folder and write it back with outputs; returns seconds."""
    nb = nbformat.read(path, as_version=4)
    nb.metadata["kernelspec"] = {"name": KERNEL, "display_name": "Python 3", "language": "python"}
    started = time.perf_counter()
    NotebookClient(
        nb,
        timeout=TIMEOUT,
        kernel_name=KERNEL,
        allow_errors=allow_errors,
        resources={"metadata": {"path": str(path.parent)}},
    ).execute()
    elapsed = time.perf_counter() - started
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for output in cell.get("outputs", []):
            if output.get("name") == "stderr":
                raise SystemExit(
                    f"{path.name}: a cell wrote to stderr (nbval strict mode would fail): "
                    f"{''.join(output.get('text', ''))[:300]}"
                )
    nbformat.write(nb, path)
    return elapsed


def main(argv: list[str]) -> int:
    """Execute the notebooks named on the command line, or every ``notebooks/*.ipynb``."""
    os.environ["TQDM_DISABLE"] = "1"
    for name in [v for v in os.environ if v.startswith("POSTHOG_")]:
        del os.environ[name]
    allow_errors = "--allow-errors" in argv  # while writing a notebook: store the error and go on
    named = [Path(a).resolve() for a in argv[1:] if a != "--allow-errors"]
    paths = named or sorted(NOTEBOOKS.glob("*.ipynb"))
    if not paths:
        print(f"no notebooks found in {NOTEBOOKS}", file=sys.stderr)
        return 1
    for path in paths:
        seconds = execute(path, allow_errors=allow_errors)
        print(f"executed {path.relative_to(ROOT)} in {seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
