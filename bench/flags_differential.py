"""Widened differential fuzz (issue 28), the big run: sdk mode against posthog 7.91.1 on flag cases whose
property values are, about half of them, cells as analysts hold them (numpy scalars, `pd.NA`, `NaT`, bytes,
sets, Decimal, tuples, objects...), fed to both unconverted. Prints the agreement figure (target >= 99.9%),
the outcome mix, the load average and the first disagreements. The bounded version runs in the suite
(tests/flags/test_flags_differential_cells.py); both share tests/flags/_raw_cell_fuzz.py.

Run: .venv/bin/python bench/flags_differential.py [cases=10000] [seed=1]      (about 3 ms per answer)
"""

from __future__ import annotations

import logging
import os
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "tests" / "flags"), str(HERE.parent / "tests")]

from _raw_cell_fuzz import run  # noqa: E402


def main() -> None:
    cases = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    warnings.simplefilter("ignore")
    logging.getLogger("posthog").setLevel(logging.CRITICAL)
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    started = time.perf_counter()
    result = run(cases, seed)
    elapsed = time.perf_counter() - started
    print(
        f"sdk mode vs posthog 7.91.1, {cases:,} widened cases (seed {seed}): {result.agreed:,} of "
        f"{result.total:,} answers agree = {result.share:.4%} (target >= 99.9%); {result.raw_subjects:,} "
        f"subjects hold a raw cell; {elapsed:.0f} s"
    )
    print(f"outcomes (the SDK's): {dict(result.outcomes)}")
    for text in result.disagreements[:10]:
        print(f"- {text[:600]}")
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
