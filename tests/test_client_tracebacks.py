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
