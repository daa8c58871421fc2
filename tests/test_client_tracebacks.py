"""Errors from the sync API read short: the user's call and the package's sentence, not the loop plumbing."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import traceback
from pathlib import Path
from typing import Any

import pytest

from analytics_nb import Client
from analytics_nb.client._loop import for_caller
from analytics_nb.errors import MethodNotAllowedError, NetworkError

SENTENCE = "Playlists cannot be hard-deleted"

MISTAKE = textwrap.dedent(
    """
    import analytics_nb as nb
    client = nb.Client.sandbox(seed="demo", progress=False)
    short_id = client.playlists.list(max_items=1)[0].short_id
    client.playlists.delete(short_id)
    """
)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "ANALYTICS_NB_FULL_TRACEBACK"}
    env["TQDM_DISABLE"] = "1"
    return env


def test_a_typical_mistake_has_a_short_traceback_in_process(sandbox: Any) -> None:
    with Client(sandbox.url, personal_api_key=sandbox.personal_api_key, progress=False) as client:
        short_id = client.playlists.list(max_items=1)[0].short_id
        with pytest.raises(MethodNotAllowedError) as info:
            client.playlists.delete(short_id)
    text = "".join(traceback.format_exception(info.value))
    lines = text.splitlines()
    assert len(lines) <= 12, text
    assert "client.playlists.delete(short_id)" in text  # the user's call
    assert SENTENCE in lines[-1]  # the package's sentence, last
    for plumbing in ("_core.py", "concurrent/futures", "_resources", "During handling"):
        assert plumbing not in text


def test_a_typical_mistake_has_a_short_traceback_in_plain_python(tmp_path: Path) -> None:
    script = tmp_path / "mistake.py"
    script.write_text(MISTAKE, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=_env(), timeout=120
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1
    assert len(lines) <= 12, done.stderr
    assert lines[-1].startswith("analytics_nb.errors.MethodNotAllowedError:") and SENTENCE in lines[-1]
    assert "client.playlists.delete(short_id)" in done.stderr


def test_a_typical_mistake_has_a_short_traceback_in_ipython(tmp_path: Path) -> None:
    ipython = shutil.which("ipython", path=str(Path(sys.executable).parent))
    if ipython is None:
        pytest.skip("IPython is not installed")
    script = tmp_path / "mistake.py"
    script.write_text(MISTAKE, encoding="utf-8")
    done = subprocess.run(
        [ipython, "--colors=NoColor", "--no-banner", "-c", f"%run {script}"],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
    )
    out = done.stdout + done.stderr
    lines = [line for line in out.strip().splitlines() if line.strip()]
    assert any(SENTENCE in line for line in lines), out
    assert len(lines) <= 20, out
    assert "_core.py" not in out and "concurrent" not in out


def test_full_tracebacks_on_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANALYTICS_NB_FULL_TRACEBACK", "1")
    with (
        Client("http://127.0.0.1:9", personal_api_key="phx_" + "x" * 40, max_retries=0) as client,
        pytest.raises(NetworkError) as info,
    ):
        client.playlists.list()
    assert "_core.py" in "".join(traceback.format_exception(info.value))


def _raised(exc: BaseException) -> BaseException:
    try:
        raise exc
    except BaseException as caught:
        return caught


def test_only_the_packages_errors_are_trimmed_and_their_cause_is_kept() -> None:
    cause = _raised(ConnectionResetError("reset by peer"))
    try:
        try:
            raise KeyError("inside the transport")
        except KeyError:
            raise NetworkError("could not reach the service", method="GET", url="http://x/") from cause
    except NetworkError as exc:
        error = exc
    trimmed = for_caller(error)
    assert trimmed is error and error.__traceback__ is None
    assert error.__cause__ is cause and cause.__traceback__ is None  # kept, one line
    text = "".join(traceback.format_exception(error))
    assert "ConnectionResetError: reset by peer" in text and "KeyError" not in text
    bug = _raised(ZeroDivisionError("a bug"))
    assert for_caller(bug).__traceback__ is not None  # a bug keeps every frame


BAD_INPUT_CELLS = [
    # (the cell, text its error must contain: the fix)
    ('nb.Client("eu.posthog.com")', "host='eu'"),
    ('nb.Client("http://eu.posthog.com")', "https://eu.posthog.com"),
    ('nb.Client("https://eu.posthog.com/project/123")', "host='eu'"),
    ('nb.Client("posthog.example.com")', "host='https://posthog.example.com'"),
    ('nb.AsyncClient("us.i.posthog.com")', "host='us'"),
    ('nb.Client.from_env(host="eu.i.posthog.com")', "host='eu'"),
    ('nb.Client("us", personal_api_key="\u201cphx_abcdefgh12345\u201d")', "copy the key again"),
    ('nb.Client("us", personal_api_key="\'phx_abcdefgh12345\'")', "without quotes"),
    ('nb.Client("us", personal_api_key="phx_abc defgh12345")', "SPACE"),
    ('nb.Client("us", project_api_key="phc_abc\\ndefgh12345")', "project_api_key"),
    ('nb.Client("us", max_retries=-1)', "max_retries=-1 must be 0 or more"),
]


def test_bad_input_errors_are_short_in_ipython_and_name_the_fix(tmp_path: Path) -> None:
    """Issue 29 #4: each bad-input error is at most 20 lines as IPython shows a cell's error (75 to 90 lines
    before), and its sentence names the fix; the key given appears only in the user's own line."""
    ipython = shutil.which("ipython", path=str(Path(sys.executable).parent))
    if ipython is None:
        pytest.skip("IPython is not installed")
    script = tmp_path / "cells.py"
    cells = [f"import analytics_nb as nb\n{cell}" for cell, _ in BAD_INPUT_CELLS]
    script.write_text(
        f"cells = {cells!r}\nfor cell in cells:\n    print('=====CELL')\n    get_ipython().run_cell(cell)\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [ipython, "--colors=NoColor", "--no-banner", "-c", f"%run {script}"],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
    )
    outputs = (done.stdout + done.stderr).split("=====CELL")[1:]
    assert len(outputs) == len(BAD_INPUT_CELLS), done.stdout + done.stderr
    for (cell, fix), out in zip(BAD_INPUT_CELLS, outputs, strict=True):
        lines = [line for line in out.strip().splitlines() if line.strip()]
        assert lines[-1].startswith("ValueError: "), (cell, out)
        assert fix in lines[-1], (cell, out)
        assert len(lines) <= 20, (cell, out)
        shown = [line for line in lines if cell not in line]  # the user's own line shows what they typed
        assert not any("abcdefgh" in line.replace(" ", "") for line in shown), (cell, out)
