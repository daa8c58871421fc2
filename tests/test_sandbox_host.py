"""Issue 27 finding 9: the sandbox checks the Host header (DNS rebinding).

A web page on another site can make its own name resolve to 127.0.0.1 and then call the sandbox from the
user's browser with that name in the Host header; the sandbox now answers only to 127.0.0.1, localhost,
::1 and the name it was bound to, and refuses any other Host with 400.
"""

from __future__ import annotations

import httpx

from analytics_nb.sandbox import start


def test_other_host_names_are_refused_with_400() -> None:
    with start(seed="empty") as sb:
        port = sb.url.rsplit(":", 1)[1]
        headers = {"Authorization": f"Bearer {sb.personal_api_key}"}
        with httpx.Client(base_url=sb.url, headers=headers, timeout=10) as http:
            for host in ("evil.example", f"evil.example:{port}", "127.0.0.1.evil.example", "10.0.0.1"):
                resp = http.get("/api/projects/", headers={"Host": host})
                assert resp.status_code == 400, host
                assert resp.json()["code"] == "invalid_host" and "DNS rebinding" in resp.json()["detail"]
            body = {"api_key": sb.project_api_key, "event": "e", "distinct_id": "d"}
            assert http.post("/capture/", json=body, headers={"Host": "evil.example"}).status_code == 400
            assert sb.events().empty  # nothing stored through a refused host
            for host in (f"127.0.0.1:{port}", f"localhost:{port}", "LOCALHOST", f"[::1]:{port}"):
                assert http.get("/api/projects/", headers={"Host": host}).status_code == 200, host
            assert http.post("/capture/", json=body).status_code == 200


def test_the_bound_name_is_served_and_more_can_be_added() -> None:
    with start(seed="empty", host="127.0.0.2") as sb:
        headers = {"Authorization": f"Bearer {sb.personal_api_key}"}
        assert httpx.get(f"{sb.url}/api/projects/", headers=headers).status_code == 200  # Host: 127.0.0.2
        named = {**headers, "Host": "sandbox.internal"}
        assert httpx.get(f"{sb.url}/api/projects/", headers=named).status_code == 400
        sb.app.allowed_hosts.add("sandbox.internal")
        assert httpx.get(f"{sb.url}/api/projects/", headers=named).status_code == 200
