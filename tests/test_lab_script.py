"""`bash scripts/lab`: the one command that opens the notebooks. Checked through ``--dry-run``, which prints
the commands it would run (venv, pip install of the `notebook` extra, jupyter lab / voila)
and runs nothing."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "lab"


def _run(
    *args: str, uid: int | None = None, tmp: Path | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("ANALYTICS_NB_")}
    full_env.update(env)
    if uid is not None:
        assert tmp is not None
        fake = tmp / "bin"
        fake.mkdir(exist_ok=True)
        (fake / "id").write_text(f"#!/bin/sh\necho {uid}\n")
        (fake / "id").chmod(0o755)
        full_env["PATH"] = f"{fake}{os.pathsep}{full_env['PATH']}"
    return subprocess.run(
        ["bash", str(SCRIPT), *args], capture_output=True, text=True, env=full_env, timeout=60, check=False
    )


def _commands(out: str) -> list[list[str]]:
    return [shlex.split(line) for line in out.splitlines() if line.startswith(("/", ".", "python3"))]


def test_fresh_machine_makes_the_venv_installs_the_notebook_extra_and_starts_lab(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    done = _run("--dry-run", ANALYTICS_NB_VENV=str(venv), ANALYTICS_NB_LAB_TOKEN="tok123")
    assert done.returncode == 0, done.stderr
    commands = _commands(done.stdout)
    assert commands[0] == ["python3", "-m", "venv", str(venv)]
    assert commands[2][-2:] == ["-e", ".[notebook]"]
    lab = commands[-1]
    assert lab[:2] == [f"{venv}/bin/jupyter", "lab"]
    assert "--ServerApp.ip=127.0.0.1" in lab
    assert "--ServerApp.port=8888" in lab and "--ServerApp.port_retries=0" in lab
    assert "--ServerApp.root_dir=notebooks" in lab
    assert "--IdentityProvider.token=tok123" in lab
    assert "Open the notebooks at: http://127.0.0.1:8888/lab?token=tok123" in done.stdout


def test_existing_venv_is_reused_and_no_install_skips_pip(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("#!/bin/sh\n")
    (venv / "bin" / "python").chmod(0o755)
    reused = _commands(_run("--dry-run", ANALYTICS_NB_VENV=str(venv)).stdout)
    assert not any(c[:3] == ["python3", "-m", "venv"] for c in reused)
    assert any("pip" in c for c in reused)
    skipped = _commands(_run("--dry-run", "--no-install", ANALYTICS_NB_VENV=str(venv)).stdout)
    assert len(skipped) == 1 and skipped[0][1] == "lab"


def test_the_token_is_random_when_not_given() -> None:
    tokens = []
    for _ in range(2):
        lab = _commands(_run("--dry-run", "--no-install").stdout)[-1]
        (token,) = [a.split("=", 1)[1] for a in lab if a.startswith("--IdentityProvider.token=")]
        tokens.append(token)
    assert len(tokens[0]) >= 32 and tokens[0] != tokens[1]


def test_voila_port_and_passthrough_arguments() -> None:
    done = _run("--voila", "--port", "9001", "--dry-run", "--", "--no-browser", ANALYTICS_NB_LAB_TOKEN="t")
    assert done.returncode == 0, done.stderr
    commands = _commands(done.stdout)
    assert any(c[-2:] == ["-e", ".[notebook,voila]"] for c in commands)
    voila = commands[-1]
    assert voila[0].endswith("/bin/voila") and voila[1] == "notebooks"
    assert "--Voila.ip=127.0.0.1" in voila and "--port=9001" in voila and "--Voila.token=t" in voila
    assert voila[-1] == "--no-browser"
    assert "http://127.0.0.1:9001/?token=t" in done.stdout
    assert "--ServerApp.port=9002" in _commands(_run("--port=9002", "--dry-run", "--no-install").stdout)[-1]


@pytest.mark.parametrize("uid, expected", [(0, True), (1000, False)])
def test_allow_root_only_when_root(tmp_path: Path, uid: int, expected: bool) -> None:
    lab = _commands(_run("--dry-run", "--no-install", uid=uid, tmp=tmp_path).stdout)[-1]
    assert ("--allow-root" in lab) is expected


@pytest.mark.parametrize(
    "args, message",
    [
        (["--port"], "--port needs a number"),
        (["--port", "abc"], "--port must be a number from 1 to 65535, not 'abc'"),
        (["--port", "70000"], "not '70000'"),
        (["--bogus"], "unknown argument '--bogus'"),
    ],
)
def test_bad_arguments_exit_2_with_the_fix(args: list[str], message: str) -> None:
    done = _run("--dry-run", *args)
    assert done.returncode == 2
    assert message in done.stderr
    assert done.stdout == ""


def test_help_lists_the_options() -> None:
    done = _run("--help")
    assert done.returncode == 0
    for option in ("--port", "--voila", "--dry-run"):
        assert option in done.stdout
