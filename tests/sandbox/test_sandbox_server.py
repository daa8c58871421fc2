"""Starting and stopping the sandbox: twice in a row, inside a running asyncio loop, with a database file,
the request log and the command line."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pandas as pd
import pytest

from _sandbox_helpers import api, playlists_path
from analytics_nb import cli
from analytics_nb.sandbox import Sandbox, create_app, start
from analytics_nb.sandbox._resources import persons


def _port_is_closed(url: str) -> bool:
    host, port = url.removeprefix("http://").split(":")
    with socket.socket() as s:
        return s.connect_ex((host, int(port))) != 0


def test_start_stop_twice_in_a_row() -> None:
    threads_before = threading.active_count()
    urls = []
    for _ in range(2):
        with start(seed="empty") as sb:
            assert sb.url.startswith("http://127.0.0.1:")
            assert (
                httpx.get(
                    f"{sb.url}/api/projects/", headers={"Authorization": f"Bearer {sb.personal_api_key}"}
                ).status_code
                == 200
            )
            urls.append(sb.url)
        assert _port_is_closed(sb.url)
    assert threading.active_count() == threads_before
    sb.stop()  # stopping again is harmless


def test_start_inside_a_running_event_loop() -> None:
    async def notebook_cell() -> int:
        with start(seed="empty") as sb:  # a sync context manager inside a running loop, as in Jupyter
            async with httpx.AsyncClient(base_url=sb.url) as client:
                resp = await client.get(
                    "/api/projects/", headers={"Authorization": f"Bearer {sb.personal_api_key}"}
                )
                return resp.status_code

    assert asyncio.run(notebook_cell()) == 200


def test_database_file_keeps_data_across_restarts(tmp_path: Path) -> None:
    db = str(tmp_path / "sandbox.sqlite")
    with start(seed="demo", db=db) as sb, api(sb) as http:
        created = http.post(playlists_path(sb), json={"type": "collection", "name": "kept"}).json()
        count = http.get(playlists_path(sb)).json()["count"]
        token = sb.project_api_key
    with start(seed="demo", db=db) as sb, api(sb) as http:
        assert http.get(playlists_path(sb, created["short_id"])).json()["name"] == "kept"
        assert http.get(playlists_path(sb)).json()["count"] == count  # not seeded twice
        assert sb.project_api_key == token


def test_request_log_frame(sandbox: Sandbox) -> None:
    sandbox.clear_requests()
    with api(sandbox) as http:
        http.get(playlists_path(sandbox), params={"limit": 2})
        http.post(playlists_path(sandbox), json={"type": "collection", "name": "logged"})
        http.delete(playlists_path(sandbox, "abcdefgh"))
    log = sandbox.requests()
    assert list(log.columns) == ["method", "path", "query", "status", "body", "at"]
    assert log["method"].tolist() == ["GET", "POST", "DELETE"]
    assert log["status"].tolist() == [200, 201, 405]
    assert log["query"].iloc[0] == "limit=2"
    assert '"name": "logged"' in log["body"].iloc[1] or '"name":"logged"' in log["body"].iloc[1]
    assert str(log["status"].dtype) == "Int64"
    assert log["at"].dtype == pd.DatetimeTZDtype("us", "UTC")


def test_handle_surface(sandbox: Sandbox) -> None:
    assert sandbox.personal_api_key.startswith("phx_")
    assert sandbox.project_api_key.startswith("phc_")
    assert isinstance(sandbox.project_id, int) and len(sandbox.organization_id) == 36
    sandbox.set_person("person-1", {"plan": "pro"})
    sandbox.set_person("person-1", {"seats": 3})
    assert persons.person_properties(sandbox.ctx.store, sandbox.project_id, "person-1") == {
        "plan": "pro",
        "seats": 3,
    }
    sandbox.set_group("company", "acme", {"size": 10})
    assert persons.group_properties(sandbox.ctx.store, sandbox.project_id, "company", "acme") == {"size": 10}
    assert persons.group_type_mapping(sandbox.ctx.store, sandbox.project_id)["0"] == "company"
    assert sandbox.create_app() is sandbox.app


def test_create_app_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="profile"):
        create_app(profile="prod")
    with pytest.raises(ValueError, match="seed"):
        create_app(seed="lots")


def test_cli_prints_url_and_keys_then_stops() -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from analytics_nb.cli import main; sys.exit(main())",
            "sandbox",
            "--port",
            "0",
            "--seed",
            "empty",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lines = [proc.stdout.readline() for _ in range(3)] if proc.stdout else []
        url = lines[0].rsplit(" ", 1)[-1].strip()
        key = lines[2].split("=", 1)[1].strip()
        assert key.startswith("phx_")
        assert (
            httpx.get(f"{url}/api/projects/", headers={"Authorization": f"Bearer {key}"}).status_code == 200
        )
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0


def test_cli_help_and_unknown_demo(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([]) == 1
    assert "sandbox" in capsys.readouterr().out


def test_events_handle_reads_captured_events(empty_sandbox: Sandbox) -> None:
    resp = httpx.post(
        f"{empty_sandbox.url}/capture/",
        json={"api_key": empty_sandbox.project_api_key, "event": "signed_up", "distinct_id": "u1"},
    )
    assert resp.status_code == 200
    events = empty_sandbox.events()
    assert events["event"].tolist() == ["signed_up"] and events["distinct_id"].tolist() == ["u1"]


def test_process_mode() -> None:
    with start(seed="empty", mode="process") as sb:
        assert "pid=" in repr(sb) and sb.personal_api_key not in repr(sb)
        headers = {"Authorization": f"Bearer {sb.personal_api_key}"}
        assert httpx.get(f"{sb.url}/api/projects/@current/", headers=headers).json()["id"] == sb.project_id
        fid = sb.faults.add(path="/api/projects*", status=503)
        assert httpx.get(f"{sb.url}/api/projects/", headers=headers).status_code == 503
        assert sb.faults.remove(fid) and not sb.faults.remove(fid)
        assert httpx.get(f"{sb.url}/api/projects/", headers=headers).status_code == 200
        url = sb.url
    assert _port_is_closed(url)
    with pytest.raises(ValueError, match="mode"), start(seed="empty", mode="fork"):
        pass
