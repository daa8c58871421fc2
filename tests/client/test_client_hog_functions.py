"""Hog functions and templates: the sandbox's endpoints over HTTP (shapes, scopes, soft delete, paging, bad
input) and ``client.hog_functions`` / ``client.hog_function_templates`` against it, with the frames' CSV
round trip."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from _clients import client_for
from _sandbox_helpers import api, error
from analytics_nb import Client
from analytics_nb.errors import NotFoundError, PermissionDeniedError, ValidationError
from analytics_nb.frames import hog_function_templates_frame, hog_functions_frame, read_csv, to_csv
from analytics_nb.models import HogFunction, HogFunctionTemplate
from analytics_nb.sandbox import Sandbox

LIST_FIELDS = {
    "id",
    "type",
    "name",
    "description",
    "created_at",
    "created_by",
    "updated_at",
    "enabled",
    "hog",
    "filters",
    "icon_url",
    "template",
    "status",
    "execution_order",
}
FULL_FIELDS = LIST_FIELDS | {
    "bytecode",
    "transpiled",
    "inputs_schema",
    "inputs",
    "masking",
    "mappings",
    "batch_export_id",
}
#: List rows also say how they matched `search` (null when the list is not searched).
LIST_ROW_FIELDS = LIST_FIELDS | {"search_match_type"}


def path(sb: Sandbox, suffix: str = "") -> str:
    return f"/api/projects/{sb.project_id}/hog_functions/{suffix}"


def templates_path(sb: Sandbox, suffix: str = "") -> str:
    return f"/api/projects/{sb.project_id}/hog_function_templates/{suffix}"


@pytest.fixture
def client(empty_sandbox: Sandbox) -> Iterator[Client]:
    with client_for(empty_sandbox, keys="personal") as c:
        yield c


@pytest.fixture(scope="module")
def demo(sandbox: Sandbox) -> Iterator[Client]:
    with client_for(sandbox, keys="personal") as c:
        yield c


# -- the sandbox over HTTP -----
def test_list_shape_order_and_type_filter(sandbox: Sandbox) -> None:
    with api(sandbox) as http:
        body = http.get(path(sandbox), params={"type": "transformation"}).json()
        assert set(body) == {"count", "next", "previous", "results"}
        names = [(f["name"], f["execution_order"]) for f in body["results"]]
        assert names == [
            ("GeoIP", 1),
            ("Drop internal traffic", 2),
            ("Plan tier", 3),
            ("PostHog Anonymization", 4),
        ]
        assert all(set(f) == LIST_ROW_FIELDS for f in body["results"])
        geoip = body["results"][0]
        assert geoip["template"]["id"] == "plugin-posthog-plugin-geoip" and geoip["status"]["state"] == 1
        both = http.get(path(sandbox), params={"type": "destination,site_app"}).json()["results"]
        assert {f["type"] for f in both} == {"destination", "site_app"}
        assert len(both) == 3  # the soft-deleted destination is not listed
        everything = http.get(path(sandbox)).json()
        assert everything["count"] == 7
        # nulls last: transformations (ordered) first, then the rest
        assert [f["execution_order"] for f in everything["results"]][:4] == [1, 2, 3, 4]
        full = http.get(path(sandbox), params={"type": "transformation", "full": "true"}).json()["results"]
        assert all(set(f) == FULL_FIELDS | {"search_match_type"} for f in full)
        enabled = http.get(path(sandbox), params={"type": "transformation", "enabled": "false"}).json()
        assert [f["name"] for f in enabled["results"]] == ["PostHog Anonymization"]
        found = http.get(path(sandbox), params={"search": "PLAN"}).json()["results"]
        assert [f["name"] for f in found] == ["Plan tier"]


def test_paging_limit_offset(sandbox: Sandbox) -> None:
    with api(sandbox) as http:
        first = http.get(path(sandbox), params={"limit": 3}).json()
        assert first["count"] == 7 and len(first["results"]) == 3
        assert "offset=3" in first["next"] and first["previous"] is None
        second = http.get(first["next"]).json()
        third = http.get(second["next"]).json()
        assert third["next"] is None and len(third["results"]) == 1
        ids = [f["id"] for page in (first, second, third) for f in page["results"]]
        assert len(set(ids)) == 7


def test_detail_masks_secret_inputs(sandbox: Sandbox) -> None:
    with api(sandbox) as http:
        listed = http.get(path(sandbox), params={"type": "transformation"}).json()["results"]
        anon = next(f for f in listed if f["name"] == "PostHog Anonymization")
        body = http.get(path(sandbox, f"{anon['id']}/")).json()
        assert set(body) == FULL_FIELDS
        assert body["inputs"]["salt"] == {"secret": True}  # stored, never sent back
        assert body["inputs"]["privateFields"]["value"] == "email,name"
        assert "sandbox-demo-salt" not in http.get(path(sandbox, f"{anon['id']}/")).text


def test_scopes(sandbox: Sandbox) -> None:
    reader = sandbox.create_personal_key(scopes=["hog_function:read"])
    other = sandbox.create_personal_key(scopes=["plugin:read"])
    with api(sandbox, other) as http:
        for resp in (http.get(path(sandbox)), http.get(templates_path(sandbox))):
            assert resp.status_code == 403
            assert error(resp)["detail"] == "API key missing required scope 'hog_function:read'"
    with api(sandbox, reader) as http:
        assert http.get(path(sandbox)).status_code == 200
        assert http.get(templates_path(sandbox)).status_code == 200
        resp = http.post(path(sandbox), json={"type": "transformation", "template_id": "template-geoip"})
        assert resp.status_code == 403
        assert error(resp)["detail"] == "API key missing required scope 'hog_function:write'"
        some = http.get(path(sandbox)).json()["results"][0]["id"]
        assert http.patch(path(sandbox, f"{some}/"), json={"name": "x"}).status_code == 403
        assert http.patch(path(sandbox, "rearrange/"), json={"orders": {some: 1}}).status_code == 403
    with api(sandbox, "") as http:
        assert http.get(path(sandbox)).status_code == 401
        public = http.get("/api/public_hog_function_templates/")  # the public catalog needs no key
        assert public.status_code == 200
        assert "template-posthog-capture" not in [t["id"] for t in public.json()["results"]]


def test_soft_delete_restore_and_hard_delete_405(empty_sandbox: Sandbox) -> None:
    sb = empty_sandbox
    with api(sb) as http:
        made = [
            http.post(path(sb), json={"type": "transformation", "hog": f"return event // {n}"}).json()
            for n in range(3)
        ]
        assert [m["execution_order"] for m in made] == [1, 2, 3]
        first = made[0]["id"]
        resp = http.delete(path(sb, f"{first}/"))
        assert resp.status_code == 405 and resp.content == b""
        assert http.get(path(sb, f"{first}/")).status_code == 200  # nothing was deleted
        assert http.patch(path(sb, f"{first}/"), json={"deleted": True}).status_code == 200
        assert error(http.get(path(sb, f"{first}/")))["code"] == "not_found"
        assert first not in [f["id"] for f in http.get(path(sb)).json()["results"]]
        # a deleted function is found only by the update that restores it
        assert http.patch(path(sb, f"{first}/"), json={"name": "x"}).status_code == 404
        restored = http.patch(path(sb, f"{first}/"), json={"deleted": False})
        assert restored.status_code == 200 and restored.json()["execution_order"] == 4  # placed last


def test_bad_input_names_the_field(empty_sandbox: Sandbox) -> None:
    sb = empty_sandbox
    cases: list[tuple[dict[str, Any], str, str]] = [
        ({"type": "transformation"}, "hog", "Required."),
        ({"type": "nope", "hog": "return event"}, "type", '"nope" is not a valid choice.'),
        ({"type": "transformation", "template_id": "template-nope"}, "template_id", "No template found"),
        ({"type": "destination", "template_id": "template-posthog-capture"}, "template_id", "is internal"),
        ({"type": "transformation", "hog": "if (x { return event }"}, "hog", "Hog code has errors."),
        # PostHog accepts fetch() in a transformation (test_hog_function.py); a parse error is refused
        ({"type": "transformation", "hog": "let x := {"}, "hog", "Hog code has errors."),
        ({"type": "destination", "template_id": "template-webhook"}, "inputs__url", "required"),
        (
            {
                "type": "transformation",
                "template_id": "template-downsample",
                "inputs": {"percentage": {"value": "x"}},
            },
            "inputs__percentage",
            "Value must be a number.",
        ),
        (
            {"type": "transformation", "hog": "return event", "filters": []},
            "filters",
            "Expected a dictionary",
        ),
        (
            {"type": "transformation", "hog": "return event", "mappings": [{"name": "m"}]},
            "mappings",
            "Mappings are only allowed for destinations.",
        ),
        (
            {"type": "destination", "hog": "return 1", "masking": {"ttl": 10, "hash": "{person.id}"}},
            "masking__ttl",
            "greater than or equal to 60",
        ),
        ({"type": "transformation", "hog": "1", "execution_order": -1}, "execution_order", "or equal to 0"),
        ({"type": "transformation", "hog": "x" * (100 * 1024 + 1)}, "hog", "exceeds maximum size of 100KB"),
        ({"type": "transformation", "hog": "return event", "name": "n" * 401}, "name", "no more than 400"),
        (
            {
                "type": "transformation",
                "hog": "return event",
                "inputs_schema": [{"key": "k", "type": "bogus"}],
            },
            "inputs_schema__0__type",
            "not a valid choice",
        ),
        ({"type": "warehouse_source_webhook", "hog": "return event"}, "type", "Cannot create or modify"),
    ]
    with api(sb) as http:
        for body, attr, detail in cases:
            resp = http.post(path(sb), json=body)
            assert resp.status_code == 400, (body, resp.text)
            err = error(resp)
            assert err["type"] == "validation_error" and err["attr"] == attr, (body, err)
            assert detail in err["detail"], (body, err)
        assert http.get(path(sb)).json()["count"] == 0  # nothing half-written
        made = http.post(path(sb), json={"type": "transformation", "hog": "return event"}).json()
        resp = http.patch(path(sb, f"{made['id']}/"), json={"type": "destination"})
        assert error(resp)["attr"] == "type" and "Cannot modify the type" in error(resp)["detail"]
        resp = http.patch(path(sb, "rearrange/"), json={"orders": {}})
        assert resp.status_code == 400 and error(resp)["detail"] == "No orders provided"
        resp = http.patch(
            path(sb, "rearrange/"), json={"orders": {"00000000-0000-0000-0000-000000000000": 1}}
        )
        assert "does not exist" in error(resp)["detail"]
        assert http.get(path(sb), params={"enabled": "maybe"}).status_code == 400


def test_enabled_transformation_cap(empty_sandbox: Sandbox) -> None:
    sb = empty_sandbox
    with api(sb) as http:
        for n in range(20):
            body = {"type": "transformation", "hog": "return event", "enabled": True, "name": f"t{n}"}
            assert http.post(path(sb), json=body).status_code == 201
        resp = http.post(path(sb), json={"type": "transformation", "hog": "return event", "enabled": True})
        assert resp.status_code == 400 and error(resp)["attr"] == "type"
        assert "Maximum of 20 enabled transformation functions" in error(resp)["detail"]
        off = http.post(path(sb), json={"type": "transformation", "hog": "return event"})
        assert off.status_code == 201  # disabled ones are not capped
        assert http.patch(path(sb, f"{off.json()['id']}/"), json={"enabled": True}).status_code == 400


def test_templates_endpoint(sandbox: Sandbox) -> None:
    with api(sandbox) as http:
        default = http.get(templates_path(sandbox)).json()
        assert {t["type"] for t in default["results"]} == {"destination"}  # the service's default type
        transformations = http.get(templates_path(sandbox), params={"type": "transformation"}).json()[
            "results"
        ]
        ids = [t["id"] for t in transformations]
        assert "plugin-posthog-app-unduplicator" not in ids  # deprecated: left out of lists
        assert ids[0] == "plugin-posthog-plugin-geoip"  # used by an enabled function: sorted first
        both = http.get(templates_path(sandbox), params={"types": "transformation,destination"}).json()
        assert {t["type"] for t in both["results"]} == {"transformation", "destination"}
        one = http.get(templates_path(sandbox, "plugin-posthog-app-unduplicator/")).json()
        assert one["status"] == "deprecated" and set(one) >= {
            "id",
            "code",
            "inputs_schema",
            "mapping_templates",
        }
        assert http.get(templates_path(sandbox, "template-nope/")).status_code == 404
        paged = http.get(templates_path(sandbox), params={"type": "transformation", "limit": 2}).json()
        assert paged["count"] == 4 and len(paged["results"]) == 2 and paged["next"]


# -- the client -----
def test_client_list_get_and_frame(demo: Client) -> None:
    transformations = demo.hog_functions.list(type="transformation")
    assert all(isinstance(f, HogFunction) for f in transformations)
    assert [f.execution_order for f in transformations] == [1, 2, 3, 4]
    assert [f.id for f in demo.hog_functions.list(type="transformation", page_size=1)] == [
        f.id for f in transformations
    ]
    assert len(demo.hog_functions.list()) == 7
    assert {f.type for f in demo.hog_functions.list(type=["destination", "site_app"])} == {
        "destination",
        "site_app",
    }
    geoip = demo.hog_functions.get(transformations[0].id)
    assert geoip.is_legacy_plugin and geoip.template is not None and geoip.template.id.startswith("plugin-")
    ordered = demo.hog_functions.transformations()
    assert [f.name for f in ordered] == [
        "GeoIP",
        "Drop internal traffic",
        "Plan tier",
        "PostHog Anonymization",
    ]
    frame = demo.hog_functions.frame()
    assert list(frame["type"][:4]) == ["transformation"] * 4
    assert list(frame["execution_order"][:4]) == [1, 2, 3, 4]
    assert frame["legacy_plugin"].tolist()[:4] == [True, False, False, True]
    assert isinstance(frame["inputs"][3], dict) and frame["inputs"][3]["salt"] == {"secret": True}
    assert isinstance(frame["filters"][0], dict)
    with pytest.raises(ValueError, match="not allowed"):
        demo.hog_functions.list(type="plugin")
    with pytest.raises(NotFoundError, match="soft-deleted"):
        demo.hog_functions.get("00000000-0000-0000-0000-000000000000")


def test_client_create_update_reorder_delete_restore(client: Client) -> None:
    geo = client.hog_functions.create(template_id="template-geoip", enabled=True)
    sample = client.hog_functions.create(
        template_id="template-downsample", inputs={"percentage": 50}, name="Half", enabled=True
    )
    custom = client.hog_functions.create(hog="return event", name="Custom", description="mine")
    assert (geo.name, geo.execution_order, geo.enabled) == ("GeoIP", 1, True)
    assert sample.inputs == {"percentage": {"value": 50, "order": 0}} and sample.execution_order == 2
    assert custom.template is None and custom.execution_order == 3 and custom.enabled is False
    # update sends only the fields given: the description and inputs stay
    renamed = client.hog_functions.update(sample.id, name="Third")
    assert (
        renamed.name == "Third"
        and renamed.inputs == sample.inputs
        and renamed.description == sample.description
    )
    updated = client.hog_functions.update(sample.id, inputs={"percentage": 25}, filters={"events": []})
    assert updated.inputs is not None and updated.inputs["percentage"]["value"] == 25
    with pytest.raises(ValueError, match="at least one field"):
        client.hog_functions.update(sample.id)
    with pytest.raises(ValueError, match="template_id"):
        client.hog_functions.create("transformation")
    with pytest.raises(ValidationError) as err:
        client.hog_functions.update(sample.id, inputs={"percentage": "lots"})
    assert err.value.attr == "inputs__percentage"
    # reorder: one rearrange request
    order = client.hog_functions.reorder([custom.id, geo.id, sample.id])
    assert [(f.id, f.execution_order) for f in order] == [(custom.id, 1), (geo.id, 2), (sample.id, 3)]
    assert [f.id for f in client.hog_functions.transformations()] == [custom.id, geo.id, sample.id]
    with pytest.raises(ValueError, match="same id twice"):
        client.hog_functions.reorder([geo.id, geo.id])
    # disable / enable: re-enabling puts it last (the service's rule)
    assert client.hog_functions.disable(custom.id).enabled is False
    assert client.hog_functions.enable(custom.id).execution_order == 4
    # soft delete and restore
    gone = client.hog_functions.delete(geo.id)
    assert gone.id == geo.id
    assert geo.id not in [f.id for f in client.hog_functions.list()]
    with pytest.raises(NotFoundError):
        client.hog_functions.get(geo.id)
    back = client.hog_functions.restore(geo.id)
    assert back.id == geo.id and back.execution_order == 5
    assert client.hog_functions.get(geo.id).name == "GeoIP"


def test_client_secret_input_kept_when_sent_back_masked(client: Client) -> None:
    made = client.hog_functions.create(
        template_id="plugin-posthog-anonymization", inputs={"salt": "pepper", "privateFields": "email"}
    )
    assert made.inputs is not None and made.inputs["salt"] == {"secret": True}
    again = client.hog_functions.update(made.id, inputs={"salt": {"secret": True}, "privateFields": "name"})
    assert again.inputs is not None and again.inputs["salt"] == {"secret": True}
    assert again.inputs["privateFields"]["value"] == "name"


def test_client_scopes(empty_sandbox: Sandbox) -> None:
    key = empty_sandbox.create_personal_key(scopes=["hog_function:read"])
    with client_for(empty_sandbox, key, keys="personal") as c:
        assert c.hog_functions.list() == []
        with pytest.raises(PermissionDeniedError) as err:
            c.hog_functions.create(hog="return event")
        assert err.value.missing_scope == "hog_function:write" or "hog_function:write" in str(err.value)


def test_client_templates(demo: Client) -> None:
    destinations = demo.hog_function_templates.list()
    assert destinations and all(isinstance(t, HogFunctionTemplate) for t in destinations)
    assert {t.type for t in destinations} == {"destination"}
    transformations = demo.hog_function_templates.list(type="transformation")
    assert any(t.is_legacy_plugin for t in transformations)
    assert demo.hog_function_templates.get("template-geoip").name == "GeoIP"
    assert len(demo.hog_function_templates.list(type=["transformation", "destination"])) == 7
    frame = demo.hog_function_templates.frame(type="transformation")
    assert list(frame.columns[:4]) == ["id", "type", "name", "status"]
    assert frame["legacy_plugin"].dtype == "boolean"


# -- frames -----
def test_frames_csv_round_trip(demo: Client, tmp_path: Path) -> None:
    for name, frame in (
        ("functions.csv", demo.hog_functions.frame()),
        ("templates.csv", demo.hog_function_templates.frame(type=["transformation", "destination"])),
    ):
        target = tmp_path / name
        to_csv(frame, target)
        pd.testing.assert_frame_equal(read_csv(target), frame)
        # without the dtype header line the known column names still type it
        lines = target.read_text(encoding="utf-8").splitlines(keepends=True)
        bare = tmp_path / f"bare-{name}"
        bare.write_text("".join(lines[1:]), encoding="utf-8")
        back = read_csv(bare)
        assert back["enabled" if "enabled" in frame else "legacy_plugin"].dtype == "boolean"
        assert isinstance(back["inputs_schema"].dropna().iloc[0], list)


def test_frame_orders_transformations_by_execution_order() -> None:
    records = [
        {"id": "d", "type": "destination", "name": "D", "execution_order": None},
        {
            "id": "b",
            "type": "transformation",
            "name": "B",
            "execution_order": 2,
            "template": {"id": "plugin-x"},
        },
        {"id": "n", "type": "transformation", "name": "N", "execution_order": None},
        {"id": "a", "type": "transformation", "name": "A", "execution_order": 1, "status": {"state": 2}},
    ]
    frame = hog_functions_frame(records)
    assert list(frame["id"]) == ["a", "b", "n", "d"]
    assert frame["legacy_plugin"].tolist() == [False, True, False, False]
    assert frame["status_state"].tolist()[0] == 2 and frame["template_id"][1] == "plugin-x"
    assert hog_functions_frame([]).empty and hog_function_templates_frame([]).empty


def test_openapi_document_lists_the_endpoints(sandbox: Sandbox) -> None:
    with api(sandbox) as http:
        doc = http.get("/api/schema/").json()
    paths = doc["paths"]
    base = "/api/projects/{project_id}/hog_functions/"
    assert set(paths[base]) == {"get", "post"}
    assert set(paths[base + "{hog_function_id}/"]) == {"get", "patch", "put", "delete"}
    assert "patch" in paths[base + "rearrange/"]
    assert set(paths["/api/projects/{project_id}/hog_function_templates/{template_id}/"]) == {"get"}
    item = paths[base + "{hog_function_id}/"]["get"]["parameters"]
    assert {"name": "hog_function_id", "in": "path", "required": True} in [
        {k: p[k] for k in ("name", "in", "required")} for p in item
    ]
    assert "HogFunctionWrite" in doc["components"]["schemas"]


@pytest.mark.parametrize(
    "body",
    [
        [],
        "text",
        {"type": ["transformation"], "hog": "return event"},
        {"type": "transformation", "hog": ["return event"]},
        {"type": "transformation", "hog": "return event", "inputs": []},
        {"type": "transformation", "hog": "return event", "inputs_schema": {"key": "k"}},
        {"type": "transformation", "hog": "return event", "inputs_schema": [5]},
        {"type": "transformation", "hog": "return event", "inputs_schema": [{"type": "string", "key": ""}]},
        {
            "type": "transformation",
            "hog": "1",
            "inputs_schema": [{"type": "choice", "key": "k", "choices": "x"}],
        },
        {"type": "destination", "hog": "return event", "mappings": {"a": 1}},
        {"type": "destination", "hog": "return event", "masking": {"ttl": True, "hash": "x"}},
        {"type": "destination", "hog": "return event", "masking": []},
        {"type": "transformation", "hog": "return event", "execution_order": 1.5},
        {"type": "transformation", "hog": "return event", "execution_order": "abc"},
        {"type": "transformation", "hog": "return event", "enabled": "maybe"},
        {"type": "transformation", "hog": "return event", "name": {"a": 1}},
        {"type": "transformation", "template_id": 12},
        {"type": "transformation", "hog": "'unterminated"},
        {"type": "transformation", "hog": "/* open comment"},
    ],
)
def test_bad_bodies_are_400_never_500(empty_sandbox: Sandbox, body: Any) -> None:
    with api(empty_sandbox) as http:
        resp = http.post(path(empty_sandbox), json=body)
        assert resp.status_code == 400, resp.text
        assert error(resp)["type"] in ("validation_error", "invalid_request")
        made = http.post(path(empty_sandbox), json={"type": "transformation", "hog": "return event"}).json()
        if isinstance(body, dict):
            patch = {k: v for k, v in body.items() if k not in ("type", "template_id")}
            if patch:
                resp = http.patch(path(empty_sandbox, f"{made['id']}/"), json=patch)
                assert resp.status_code in (200, 400), resp.text
        resp = http.patch(path(empty_sandbox, "rearrange/"), json={"orders": {made["id"]: "1"}})
        assert resp.status_code == 400
        assert http.get(path(empty_sandbox)).json()["count"] == 1
