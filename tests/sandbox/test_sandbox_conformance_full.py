"""Issue 27 finding 9: schemathesis with every check, in both generation modes, against the sandbox.

Issue 27 measured 42 conformance failures (26 schema-valid requests refused, 15 schema-violating ones
accepted, 1 stateful link). The document now says what the server (and PostHog) accept; this bounded run
(few examples per operation, fixed seed) checks that positive requests are accepted and negative ones
refused, with the documented exceptions in ``tests/sandbox/schemathesis/schemathesis.toml``.
The count of failures it still finds is pinned at ``KNOWN_FAILURES`` (listed in the README); it may only
go down.
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
#: Failures this bounded run still finds (see the README, "Schema conformance"); lower it as they are fixed.
KNOWN_FAILURES = 14


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
            "-H",
            f"Authorization: Bearer {sb.personal_api_key}",
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
            # depth mismatch" Runtime Errors), the failure count varies and the error's traceback can print
            # the -H header (the personal key); one worker ran in ~41 s without them.
            "-w",
            "1",
        ]
        # schemathesis.toml sends the project token to the definitions endpoints (they refuse a personal key
        # without it, as the Rust service does); the token is public, the personal key stays in -H only.
        env = {**os.environ, "SANDBOX_PROJECT_TOKEN": sb.project_api_key}
        out = subprocess.run(
            cmd, capture_output=True, text=True, timeout=900, cwd=tmp_path, check=False, env=env
        )
    text = out.stdout + out.stderr
    assert sb.personal_api_key not in text
    found = re.search(r"(\d+) unique failures", text)
    failures = int(found.group(1)) if found else (0 if out.returncode == 0 else -1)
    assert failures >= 0, text[-3000:]
    assert failures <= KNOWN_FAILURES, text[-6000:]
