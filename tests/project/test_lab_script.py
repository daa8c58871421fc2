"""`bash scripts/lab`: the one command that opens the notebooks. Checked through ``--dry-run``, which prints
the commands it would run (venv, pip install of the `notebook` extra, jupyter lab / voila)
and runs nothing."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
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
    assert commands[2][-2:] == ["-e", ".[notebook,fast,scale,sql]"]
    lab = commands[-1]
    assert lab[:2] == [f"{venv}/bin/jupyter", "lab"]
    assert "--ServerApp.ip=127.0.0.1" in lab
    assert "--ServerApp.port=8888" in lab and "--ServerApp.port_retries=0" in lab
    assert "--ServerApp.root_dir=notebooks" in lab
    assert not any("tok123" in arg for command in commands for arg in command)  # never on a command line
    assert "JUPYTER_TOKEN_FILE=" in done.stdout and "(mode 0600; JUPYTER_TOKEN unset)" in done.stdout
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
        out = _run("--dry-run", "--no-install").stdout
        (url,) = [line for line in out.splitlines() if line.startswith("Open the notebooks at: ")]
        tokens.append(url.split("?token=", 1)[1])
        assert not any(tokens[-1] in arg for arg in _commands(out)[-1])
    assert len(tokens[0]) >= 32 and tokens[0] != tokens[1]


def test_voila_port_and_passthrough_arguments() -> None:
    done = _run("--voila", "--port", "9001", "--dry-run", "--", "--no-browser", ANALYTICS_NB_LAB_TOKEN="t")
    assert done.returncode == 0, done.stderr
    commands = _commands(done.stdout)
    assert any(c[-2:] == ["-e", ".[notebook,fast,scale,sql,voila]"] for c in commands)
    voila = commands[-1]
    assert voila[0].endswith("/bin/voila") and voila[1] == "notebooks"
    assert "--Voila.ip=127.0.0.1" in voila and "--port=9001" in voila
    # the token comes from JUPYTER_TOKEN_FILE; without auto_token Voila would serve with no token at all
    assert "--Voila.auto_token=True" in voila and not any(a.startswith("--Voila.token") for a in voila)
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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def _serving(tmp_path: Path, token: str, *args: str) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """``bash scripts/lab --no-install`` for real in this venv; yields the script's process and base URL once
    the server answers ``/api/status`` with the token; stops it (TERM to the script, which passes it on)."""
    venv = Path(sys.prefix)
    tool = "voila" if "--voila" in args else "jupyter"
    if not (venv / "bin" / tool).exists():
        pytest.skip(f"{tool} is not installed in this venv")
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANALYTICS_NB_", "JUPYTER_"))}
    env.update(
        ANALYTICS_NB_VENV=str(venv),
        ANALYTICS_NB_LAB_TOKEN=token,
        JUPYTER_CONFIG_DIR=str(tmp_path / "config"),
        JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
        JUPYTER_PLATFORM_DIRS="1",
        JUPYTER_TOKEN="a-token-from-the-environment",  # the script's own token wins over a stray one
    )
    log = (tmp_path / "lab.log").open("w")
    proc = subprocess.Popen(
        ["bash", str(SCRIPT), "--no-install", "--port", str(port), *args, "--", "--no-browser"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    probe = "/" if tool == "voila" else "/api/status"  # Voila serves no /api/status
    try:
        deadline = time.monotonic() + 90
        while True:
            assert proc.poll() is None, (tmp_path / "lab.log").read_text()[-2000:]
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{base}{probe}", params={"token": token}, timeout=1).status_code == 200:
                    break
            assert time.monotonic() < deadline, "the server did not answer within 90 s"
            time.sleep(0.25)
        yield proc, base
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        log.close()


def _descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (from /proc/<pid>/stat's parent ids)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
    found = [pid]
    for parent in found:
        found.extend(child for child, p in parents.items() if p == parent)
    return found


_AS_OTHER_USER = """
import json, os, pathlib, sys
token, token_file, pid = sys.stdin.read(), sys.argv[1], sys.argv[2]  # never the token in this argv
seen = []
for entry in pathlib.Path("/proc").iterdir():
    try:
        if entry.name.isdigit() and token.encode() in (entry / "cmdline").read_bytes():
            seen.append(int(entry.name))
    except OSError:
        pass
def readable(path):
    try:
        open(path, "rb").read()
        return True
    except OSError:
        return False
print(json.dumps({"seen": seen, "file": readable(token_file), "environ": readable(f"/proc/{pid}/environ")}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("mode", [(), ("--voila",)], ids=["lab", "voila"])
def test_the_token_is_on_no_command_line_and_other_users_cannot_read_it(
    tmp_path: Path, mode: tuple[str, ...]
) -> None:
    """Issue 27 #2: the token used to be an argument (``--IdentityProvider.token=...``), which every local
    user reads in ``ps`` / ``/proc/<pid>/cmdline`` and then drives the Jupyter API (code execution). Now it
    goes through a 0600 file named by JUPYTER_TOKEN_FILE: no process started by the script has it in its
    argv, the server asks for it, and another user (``nobody``) sees it neither in any cmdline nor in the
    file."""
    token = "secret-" + os.urandom(12).hex()
    with _serving(tmp_path, token, *mode) as (proc, base):
        tree = _descendants(proc.pid)
        assert len(tree) >= 2  # the script and the server
        for pid in tree:
            with contextlib.suppress(FileNotFoundError):
                assert token.encode() not in Path(f"/proc/{pid}/cmdline").read_bytes(), pid
        server = tree[1]
        environ = dict(
            item.split(b"=", 1) for item in Path(f"/proc/{server}/environ").read_bytes().split(b"\0") if item
        )
        assert b"JUPYTER_TOKEN" not in environ  # a stray JUPYTER_TOKEN would win over the file
        token_file = Path(environ[b"JUPYTER_TOKEN_FILE"].decode())
        assert token_file.read_text() == token
        assert token_file.stat().st_mode & 0o777 == 0o600
        assert token_file.parent.stat().st_mode & 0o777 == 0o700
        # the token is needed: without it the server refuses (Voila sends to its login page)
        probe = "/" if mode else "/api/kernels"
        assert httpx.get(f"{base}{probe}", timeout=5).status_code in (302, 401, 403)
        stray = {"token": "a-token-from-the-environment"}
        assert httpx.get(f"{base}{probe}", params=stray, timeout=5).status_code in (302, 401, 403)
        assert httpx.get(f"{base}{probe}", params={"token": token}, timeout=5).status_code == 200
        if os.geteuid() == 0 and Path("/usr/bin/python3").exists():
            seen = subprocess.run(
                ["/usr/bin/python3", "-c", _AS_OTHER_USER, str(token_file), str(server)],
                input=token,
                user="nobody",
                group="nogroup",
                capture_output=True,
                text=True,
                timeout=30,
                check=True,
                cwd="/",
            )
            assert json.loads(seen.stdout) == {"seen": [], "file": False, "environ": False}
    assert not token_file.exists()  # removed when the server stopped
    # the script prints the URL to open (its user's terminal); the server itself logs the token masked only
    logged = [line for line in (tmp_path / "lab.log").read_text().splitlines() if token in line]
    opened = f"Open the notebooks at: {base}/" + ("" if mode else "lab")
    assert [line.split("?token=")[0] for line in logged] == [opened]


@pytest.mark.slow
def test_it_really_serves_the_notebooks_on_localhost_behind_the_token(tmp_path: Path) -> None:
    """The command itself (no --dry-run) in this venv: JupyterLab answers on 127.0.0.1 with the token only."""
    with _serving(tmp_path, "real-run-token") as (_proc, base):
        listing = httpx.get(f"{base}/api/contents", params={"token": "real-run-token"}, timeout=5).json()
        assert {"01_quickstart.ipynb", "04_flag_simulation.ipynb"} <= {f["name"] for f in listing["content"]}
        assert httpx.get(f"{base}/api/contents", timeout=5).status_code == 403  # no token, no access
        assert httpx.get(f"{base}/lab", params={"token": "real-run-token"}, timeout=5).status_code == 200
    assert f"Open the notebooks at: {base}/lab?token=real-run-token" in (tmp_path / "lab.log").read_text()


def _notebook_imports() -> dict[str, set[str]]:
    """The top-level modules each example notebook imports (``import x`` / ``from x import y``)."""
    import ast

    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        for cell in cells:
            if cell["cell_type"] != "code":
                continue
            source = "".join(cell["source"])
            lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
            for node in ast.walk(ast.parse("\n".join(lines))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    found.setdefault(name.split(".")[0], set()).add(path.name)
    return found


def _installed_closure(extras: list[str]) -> set[str]:
    """The distributions ``pip install analytics-nb[extras]`` brings (normalised names), from this venv's
    metadata: the requirements with their markers evaluated for those extras, followed recursively."""
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    wanted: list[tuple[str, tuple[str, ...]]] = [("analytics-nb", tuple(extras))]
    seen: set[str] = set()
    while wanted:
        name, with_extras = wanted.pop()
        key = canonicalize_name(name)
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        seen.add(key)
        for text in requires:
            req = Requirement(text)
            marker_envs = [{"extra": e} for e in with_extras] or [{"extra": ""}]
            if req.marker is not None and not any(req.marker.evaluate(env) for env in marker_envs):
                continue
            if canonicalize_name(req.name) not in seen or req.extras:
                wanted.append((req.name, tuple(req.extras)))
    return seen


def test_the_script_installs_what_every_example_notebook_imports() -> None:
    """Issue 29 #5: ``06_scale`` failed with "No module named 'pyarrow'" where the script opened it, because
    the script installed only the `notebook` extra. Every module a notebook imports must come with the extras
    the script installs (read from its --dry-run), both for JupyterLab and Voila."""
    from importlib import metadata

    from packaging.utils import canonicalize_name

    providers = metadata.packages_distributions()
    for args in ((), ("--voila",)):
        commands = _commands(_run("--dry-run", *args).stdout)
        (spec,) = [c[-1] for c in commands if c[-2:-1] == ["-e"]]
        extras = spec.removeprefix(".[").removesuffix("]").split(",")
        installed = _installed_closure(extras)
        missing = {}
        for module, notebooks in _notebook_imports().items():
            if module in sys.stdlib_module_names or module == "analytics_nb":
                continue
            dists = {canonicalize_name(d) for d in providers.get(module, [])}
            assert dists, f"{module} (imported by {sorted(notebooks)}) is not installed in this venv"
            if not dists & installed:
                missing[module] = sorted(notebooks)
        assert missing == {}, f"scripts/lab {' '.join(args)} installs .[{','.join(extras)}] without {missing}"


#: what a notebook calls that imports an optional engine inside the package (not a notebook import), and
#: the extra that installs it
ENGINE_CALLS = {
    r"engine=\\?[\"']sql": "sql",
    r"\bsimulate_sql\(": "sql",
    r"\bto_sql\(": "sql",
    r"\bsimulate_dask\(": "dask",
    r"\bsimulate_spark\(": "spark",
}


def test_the_script_installs_the_engines_the_notebooks_run() -> None:
    """Issue 38: ``06_scale`` stopped at its ``engine="sql"`` / ``to_sql`` cells (2 of 11 cells unrun) in
    the lab environment: DuckDB and SQLGlot are imported by the package, not by the notebook, so the import
    check above did not see them."""
    import re
    from importlib import metadata

    from packaging.requirements import Requirement

    extras_of = {}
    for text in metadata.requires("analytics-nb") or []:
        req = Requirement(text)
        for extra in re.findall(r'extra == "([\w-]+)"', str(req.marker)):
            extras_of.setdefault(extra, set()).add(req.name)
    commands = _commands(_run("--dry-run").stdout)
    (spec,) = [c[-1] for c in commands if c[-2:-1] == ["-e"]]
    installed = set().union(
        *(extras_of.get(e, set()) for e in spec.removeprefix(".[").removesuffix("]").split(","))
    )
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        text = path.read_text(encoding="utf-8")
        for pattern, extra in ENGINE_CALLS.items():
            if re.search(pattern, text):
                assert extras_of[extra] <= installed, (
                    f"{path.name} calls {pattern}; install the {extra} extra"
                )


@pytest.mark.slow
def test_voila_shows_the_error_text_of_a_failing_cell(tmp_path: Path) -> None:
    """Issue 29 #5: Voila showed only "There was an error when executing cell [1]" for 06_scale's missing
    pyarrow. The script's Voila command (from its --dry-run) shows the error itself."""
    venv = Path(sys.prefix)
    if not (venv / "bin" / "voila").exists():
        pytest.skip("voila is not installed in this venv")
    port = _free_port()
    out = _run(
        "--voila", "--dry-run", "--no-install", "--port", str(port), ANALYTICS_NB_VENV=str(venv)
    ).stdout
    voila = _commands(out)[-1]
    assert "--VoilaConfiguration.show_tracebacks=True" in voila
    pages = tmp_path / "pages"
    pages.mkdir()
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None}
    notebook = {
        "cells": [
            {**cell, "source": "import not_a_module_for_this_test"},
            {**cell, "source": "print('after')"},
        ],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (pages / "failing.ipynb").write_text(json.dumps(notebook))
    token_file = tmp_path / "token"
    token_file.write_text("voila-error-token")
    token_file.chmod(0o600)
    command = [voila[0], str(pages), *voila[2:], "--no-browser"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANALYTICS_NB_", "JUPYTER_"))}
    env.update(
        JUPYTER_TOKEN_FILE=str(token_file),
        JUPYTER_CONFIG_DIR=str(tmp_path / "config"),
        JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
        JUPYTER_PLATFORM_DIRS="1",
    )
    log = (tmp_path / "voila.log").open("w")
    proc = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        page = None
        while page is None:
            assert proc.poll() is None, (tmp_path / "voila.log").read_text()[-2000:]
            with contextlib.suppress(httpx.HTTPError):
                answer = httpx.get(
                    f"{base}/voila/render/failing.ipynb", params={"token": "voila-error-token"}, timeout=60
                )
                if answer.status_code == 200:
                    page = answer.text
            assert time.monotonic() < deadline, "Voila did not render within 90 s"
            time.sleep(0.25)
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        log.close()
    assert "No module named" in page and "not_a_module_for_this_test" in page
