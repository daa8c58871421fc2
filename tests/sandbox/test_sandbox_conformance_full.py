"""Issue 27 finding 9: schemathesis with every check, in both generation modes, against the sandbox.

Issue 27 measured 42 conformance failures (26 schema-valid requests refused, 15 schema-violating ones
accepted, 1 stateful link). The document now says what the server (and PostHog) accept; this bounded run
(few examples per operation, fixed seed) checks that positive requests are accepted and negative ones
refused, with the documented exceptions in ``tests/sandbox/schemathesis/schemathesis.toml``: refusals for
reasons no schema states (stored state, listed per operation as ``x-refusals``; the HTTP parser's
request-line limit), which ``tests/sandbox/schemathesis/hooks.py`` accepts exactly. It finds no failure
(``KNOWN_FAILURES``, 0: a failure is a regression to fix, not a count to raise).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from analytics_nb.sandbox import start

pytest.importorskip("schemathesis")

CONFIG = Path(__file__).parent / "schemathesis" / "schemathesis.toml"
HOOKS = Path(__file__).parent / "schemathesis" / "hooks.py"
#: Failures this bounded run finds (docs/explanation/sandbox.md, "Schema conformance").
KNOWN_FAILURES = 0


def _failures(text: str) -> str:
    """The run's FAILURES section, long lines (URLs of several hundred KB) cut, for the assertion message."""
    start = text.find("FAILURES")
    end = text.find("WARNINGS", start)
    lines = text[max(start, 0) : end if end > 0 else None].splitlines()
    return "\n".join(line if len(line) <= 400 else line[:400] + " ..." for line in lines)[:12000]


def _st() -> str:
    found = shutil.which("st", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.skip("the schemathesis CLI is not installed next to this Python")
    return found


def test_positive_and_negative_requests_conform_in_a_bounded_run(tmp_path: Path) -> None:
    with start(seed="demo") as sb:
        cmd = [
            _st(),
            "--config-file",
            str(CONFIG),
            "run",
            f"{sb.url}/api/schema/",
            "-c",
            "all",
            "-n",
            "3",
            "--seed",
            "1",
            "--no-shrink",
            "--max-failures",
            "300",
            "--phases",
            "examples,coverage,fuzzing",
            # One worker: with two, Hypothesis's lambda-description cache races ("AST constructor recursion
            # depth mismatch" Runtime Errors), the failure count varies and the error's traceback printed the
            # request's headers (the personal key); one worker ran in ~41 s without them.
            "-w",
            "1",
        ]
        # schemathesis.toml sends the personal key (headers) and, to the definitions endpoints, the project
        # token (they refuse a personal key without it, as the Rust service does) from the environment: the
        # key is neither in argv (`ps`) nor in a local of this test (`pytest -l`).
        out = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=900,
            cwd=tmp_path,
            check=False,
            env={
                **os.environ,
                "SANDBOX_PERSONAL_API_KEY": sb.personal_api_key,
                "SANDBOX_PROJECT_TOKEN": sb.project_api_key,
                "SCHEMATHESIS_HOOKS": str(HOOKS),
            },
        )
    text = out.stdout + out.stderr
    leaked = sb.personal_api_key in text
    assert not leaked, "schemathesis's output holds the personal key: the failure text is not shown"
    found = re.search(r"(\d+) unique failures?\b", text)
    failures = int(found.group(1)) if found else (0 if out.returncode == 0 else -1)
    assert failures >= 0, text[-3000:]
    assert failures <= KNOWN_FAILURES, _failures(text)
