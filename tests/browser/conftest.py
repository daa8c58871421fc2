"""Browser-test plumbing: a sandbox in this process, a Voila server rendering a test notebook in another
process (its kernel reaches the sandbox over HTTP on 127.0.0.1), and Debian's chromium driven by Playwright.

The browser tests skip, with the reason, when /usr/bin/chromium, Playwright or Voila is missing; with
ANALYTICS_NB_REQUIRE_BROWSER=1 (CI, which installs chromium with apt-get) they fail instead.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from chromium_launch import chromium_missing, launch

# The notebooks here need a sandbox started by the tests; never collect them with --nbval.
collect_ignore_glob = ["notebooks/*.ipynb"]

NOTEBOOKS = Path(__file__).parent / "notebooks"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def _missing() -> str | None:
    if (missing := chromium_missing()) is not None:
        return missing
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright (Python) is not installed"
    if not (Path(sys.executable).parent / "voila").exists() and shutil.which("voila") is None:
        return "voila is not installed"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip the browser tests, with the reason, where chromium, Playwright or Voila is missing."""
    reason = _missing()
    if reason is None or os.environ.get("ANALYTICS_NB_REQUIRE_BROWSER") == "1":
        return  # CI sets ANALYTICS_NB_REQUIRE_BROWSER=1: then a missing browser fails instead of skipping
    for item in items:
        if "browser" in item.keywords:
            item.add_marker(pytest.mark.skip(reason=reason))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def sandbox_env(sb: Any) -> dict[str, str]:
    """The environment a notebook kernel needs to reach the sandbox (read there, never printed)."""
    return {
        "ANALYTICS_NB_SANDBOX_URL": sb.url,
        "POSTHOG_HOST": sb.url,
        "POSTHOG_PERSONAL_API_KEY": sb.personal_api_key,
        "POSTHOG_PROJECT_API_KEY": sb.project_api_key,
        "POSTHOG_PROJECT_ID": str(sb.project_id),
        "TQDM_DISABLE": "1",
    }


@contextlib.contextmanager
def voila(notebook: str, env: dict[str, str], tmp: Path, timeout: float = 60.0) -> Iterator[str]:
    """Serve ``notebooks/<notebook>`` with Voila on a free 127.0.0.1 port; yield its URL; stop it by PID."""
    port = _free_port()
    exe = Path(sys.executable).parent / "voila"
    runtime = tmp / "jupyter-runtime"
    config = tmp / "jupyter-config"
    runtime.mkdir(exist_ok=True)
    config.mkdir(exist_ok=True)
    full_env = {
        **os.environ,
        **env,
        "JUPYTER_RUNTIME_DIR": str(runtime),
        "JUPYTER_CONFIG_DIR": str(config),
        "JUPYTER_PLATFORM_DIRS": "1",
    }
    log = (tmp / f"voila-{port}.log").open("w")
    proc = subprocess.Popen(
        [
            str(exe) if exe.exists() else "voila",
            notebook,
            "--no-browser",
            f"--port={port}",
            "--Voila.ip=127.0.0.1",
        ],
        cwd=NOTEBOOKS,
        env=full_env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"voila exited with {proc.returncode}; log: {log.name}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url + "api/status", timeout=1.0).status_code < 500:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"voila did not answer within {timeout} s; log: {log.name}")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        log.close()


@pytest.fixture
def page() -> Iterator[Any]:
    """A fresh chromium page (1280x1500); requests off 127.0.0.1 (Voila's CDN fonts) are aborted."""
    reason = _missing()
    if reason is not None:
        pytest.fail(f"browser tests required (ANALYTICS_NB_REQUIRE_BROWSER=1) but {reason}")
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=30_000)  # a kernel round trip on a busy 2-core machine can take seconds

    with sync_playwright() as p:
        browser = launch(p)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 1500})
            pg = context.new_page()
            pg.route("https://**/*", lambda route: route.abort())
            pg.set_default_timeout(30_000)
            yield pg
        finally:
            browser.close()


@pytest.fixture
def artifacts() -> Path:
    """The folder the screenshots go to (``test-artifacts/`` at the repository root)."""
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


@pytest.fixture
def serve_notebook(tmp_path: Path) -> Any:
    """``serve_notebook(name, sb)``: a context manager serving a test notebook against sandbox ``sb``."""

    def serve(notebook: str, sb: Any) -> contextlib.AbstractContextManager[str]:
        return voila(notebook, sandbox_env(sb), tmp_path)

    return serve
