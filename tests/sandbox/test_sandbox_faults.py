"""Fault injection (status, 429 + Retry-After, delay, TCP reset) and rate limiting in the cloud profile."""

from __future__ import annotations

import time

import httpx
import pytest

from _sandbox_helpers import api, error, playlists_path
from analytics_nb.sandbox import Sandbox, start


@pytest.fixture(autouse=True)
def _clear_faults(sandbox: Sandbox):
    sandbox.faults.clear()
    yield
    sandbox.faults.clear()


@pytest.mark.parametrize("status", [500, 502, 503])
def test_status_faults(sandbox: Sandbox, status: int) -> None:
    sandbox.faults.add(path="/api/projects/*/session_recording_playlists*", status=status)
    with api(sandbox) as http:
        assert http.get(playlists_path(sandbox)).status_code == status
        assert http.get("/api/projects/@current/").status_code == 200  # other paths unaffected
    body = error(httpx.get(f"{sandbox.url}{playlists_path(sandbox)}"))
    assert body["type"] == "server_error"


def test_429_fault_has_retry_after(sandbox: Sandbox) -> None:
    sandbox.faults.add(path="/api/*", status=429, retry_after=7)
    with api(sandbox) as http:
        resp = http.get(playlists_path(sandbox))
    assert resp.status_code == 429 and resp.headers["Retry-After"] == "7"
    assert error(resp)["type"] == "throttled_error"


def test_rate_is_a_deterministic_fraction(sandbox: Sandbox) -> None:
    def run() -> list[int]:
        sandbox.faults.reseed(5)
        with api(sandbox) as http:
            return [http.get("/api/projects/").status_code for _ in range(60)]

    sandbox.faults.add(path="/api/projects", status=503, rate=0.3, methods=["GET"])
    first = run()
    assert 5 <= first.count(503) <= 35 and first.count(200) == 60 - first.count(503)
    assert run() == first


def test_delay_fault(sandbox: Sandbox) -> None:
    sandbox.faults.add(path="/api/projects*", delay=0.3)
    with api(sandbox) as http:
        started = time.monotonic()
        resp = http.get("/api/projects/")
        assert resp.status_code == 200 and time.monotonic() - started >= 0.3
        with pytest.raises(httpx.ReadTimeout):
            http.get("/api/projects/", timeout=0.1)


def test_reset_fault_cuts_the_connection(sandbox: Sandbox) -> None:
    fid = sandbox.faults.add(path="/api/projects*", reset=True)
    with api(sandbox) as http, pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
        http.get("/api/projects/")
    assert sandbox.faults.remove(fid)
    with api(sandbox) as http:
        assert http.get("/api/projects/").status_code == 200  # the server keeps serving


def test_fault_arguments_are_checked(sandbox: Sandbox) -> None:
    with pytest.raises(ValueError, match="rate"):
        sandbox.faults.add(path="/x", status=500, rate=2)
    with pytest.raises(ValueError, match="status"):
        sandbox.faults.add(path="/x", status=418)
    with pytest.raises(ValueError, match="needs"):
        sandbox.faults.add(path="/x")


def test_admin_endpoint_off_by_default_and_on_when_asked(sandbox: Sandbox) -> None:
    assert httpx.get(f"{sandbox.url}/_sandbox/faults").status_code == 404
    with start(seed="empty", admin=True) as sb:
        owner = {"Authorization": f"Bearer {sb.personal_api_key}"}
        added = httpx.post(
            f"{sb.url}/_sandbox/faults", json={"path": "/api/projects*", "status": 502}, headers=owner
        )
        assert added.status_code == 201
        assert httpx.get(f"{sb.url}/api/projects/").status_code == 502
        assert httpx.get(f"{sb.url}/_sandbox/faults", headers=owner).json()["results"][0]["status"] == 502
        assert httpx.post(f"{sb.url}/_sandbox/faults", json={"status": 777}, headers=owner).status_code == 400
        assert httpx.delete(f"{sb.url}/_sandbox/faults", headers=owner).status_code == 204
        assert httpx.get(f"{sb.url}/api/projects/", headers=owner).status_code == 200


def test_rate_limit_in_cloud_profile() -> None:
    with start(seed="empty", profile="cloud", rate_limits={"playlists": 5, "default": 8}) as sb:
        with api(sb) as http:
            statuses = [http.get(playlists_path(sb)).status_code for _ in range(6)]
            assert statuses == [200] * 5 + [429]
            limited = http.get(playlists_path(sb))
            assert int(limited.headers["Retry-After"]) >= 1
            assert error(limited)["code"] == "throttled"
            assert error(limited)["detail"].startswith("Request was throttled. Expected available in")
            assert http.get("/api/projects/").status_code == 200  # separate bucket
        with api(sb, sb.create_personal_key(["*"])) as other:
            assert other.get(playlists_path(sb)).status_code == 200  # buckets are per key


def test_spec_profile_is_not_rate_limited(sandbox: Sandbox) -> None:
    with api(sandbox) as http:
        assert {http.get("/api/projects/").status_code for _ in range(30)} == {200}
    assert sandbox.ctx.limiter is None
