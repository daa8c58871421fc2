"""Issue 12 finding 15: the OpenAPI document at /api/schema/ is built from the same table as the routes and
the server conforms to it -- schemathesis with its conformance checks (bounded examples), 405 with `Allow`,
list-returning endpoints documented as lists."""

from __future__ import annotations

import collections
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from analytics_nb.sandbox import Sandbox, start

schemathesis = pytest.importorskip("schemathesis")

_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


@pytest.fixture(scope="module")
def sb() -> Iterator[Sandbox]:
    with start(seed="demo") as sandbox:
        yield sandbox


@pytest.fixture(scope="module")
def document(sb: Sandbox) -> dict[str, Any]:
    return httpx.get(f"{sb.url}/api/schema/").json()


def test_schemathesis_conformance_checks_pass(sb: Sandbox) -> None:
    from hypothesis import HealthCheck, Phase, given, settings
    from schemathesis import checks

    conformance = [
        checks.not_a_server_error,
        checks.status_code_conformance,
        checks.content_type_conformance,
        checks.response_schema_conformance,
        checks.response_headers_conformance,
        checks.unsupported_method,
    ]
    schema = schemathesis.openapi.from_url(f"{sb.url}/api/schema/")
    headers = {"Authorization": f"Bearer {sb.personal_api_key}"}
    failures: list[str] = []
    operations = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1
        real_500 = (
            operation.path.endswith("/recordings/{session_recording_id}/") and operation.method == "delete"
        )
        # documented: the real service answers 500 when removing a recording that is not in the playlist
        chosen = conformance[1:] if real_500 else conformance

        @given(case=operation.as_strategy())
        @settings(
            max_examples=8,
            deadline=None,
            database=None,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        def run(case: Any) -> None:
            try:
                case.call_and_validate(base_url=sb.url, headers=headers, checks=chosen)  # noqa: B023
            except (AssertionError, BaseExceptionGroup) as exc:
                failures.append(f"{case.method} {case.path}: {str(exc).strip().splitlines()[:6]}")

        run()  # called at once, inside this iteration: the loop variables it reads are current
    assert operations >= 40
    assert failures == []


def test_undocumented_methods_are_405_with_allow(sb: Sandbox, document: dict[str, Any]) -> None:
    headers = {"Authorization": f"Bearer {sb.personal_api_key}"}
    with httpx.Client(base_url=sb.url, headers=headers, timeout=10) as http:
        for template, item in document["paths"].items():
            known = {"project_id": sb.project_id, "organization_id": sb.organization_id, "id": 1}
            known["flag_id"] = 1
            path = template.format_map(collections.defaultdict(lambda: "x", known))
            documented = {m.upper() for m in item}
            for method in set(_METHODS) - documented:
                resp = http.request(method, path)
                assert resp.status_code == 405, (method, path, resp.status_code)
                allowed = {m.strip() for m in resp.headers["Allow"].split(",")}
                assert documented <= allowed, (method, path, allowed)


def test_list_endpoints_are_documented_as_lists(sb: Sandbox, document: dict[str, Any]) -> None:
    org = "/api/organizations/{organization_id}/pipeline_transformations/"
    for path in (org + "repository/", org + "unused/", org + "exports_unsubscribe_configs/"):
        schema = document["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
        assert schema["type"] == "array", path
    for path in ("/api/projects/", "/api/projects/{project_id}/feature_flags/"):
        page = document["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
        assert page["properties"]["results"]["type"] == "array"


def test_every_documented_operation_is_served(sb: Sandbox, document: dict[str, Any]) -> None:
    routes = {str(getattr(r, "path", "")).replace(":int}", "}") for r in sb.app.starlette.routes}
    for template in document["paths"]:
        assert template.rstrip("/") in routes, template
