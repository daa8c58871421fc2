"""Contract tests: facts of PostHog's Hog function API (`products/cdp/backend/api/hog_function.py`) and of
its own tests (`products/cdp/backend/api/test/test_hog_function.py`, "H" below), run against the sandbox;
plus the plugin API's removal (PostHog PR #97440) as `client.transformations` reports it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from _sandbox_helpers import api
from analytics_nb import Client
from analytics_nb.errors import NotFoundError
from analytics_nb.sandbox import Sandbox, start
from analytics_nb.sandbox._resources import hog_syntax


@pytest.fixture
def sb() -> Iterator[Sandbox]:
    with start(seed="empty", profile="spec") as sandbox:
        yield sandbox


def _path(sb: Sandbox, suffix: str = "") -> str:
    return f"/api/projects/{sb.project_id}/hog_functions/{suffix}"


def test_parser_is_postHogs_own() -> None:
    """The sandbox checks Hog with PostHog's parser package (the `hog` extra, installed by the test extra)."""
    assert hog_syntax.available()
    assert hog_syntax.syntax_error("let a := fetch('https://x.example');\nreturn event") is None
    assert hog_syntax.syntax_error("let x := {") is not None


def test_transformation_calling_fetch_is_created(sb: Sandbox) -> None:
    """H (the issue's run of PostHog's own tests): a transformation whose Hog calls `fetch()` is created with
    201; `compile_hog` records a function the type does not support without failing. A parse error is the
    400 `{"attr": "hog", "detail": "Hog code has errors."}`. Regression: the sandbox answered 400."""
    with api(sb) as http:
        made = http.post(_path(sb), json={"type": "transformation", "hog": "fetch('https://example.com');"})
        broken = http.post(_path(sb), json={"type": "transformation", "hog": "return {'a': "})
    assert made.status_code == 201, made.text
    assert broken.status_code == 400
    assert broken.json() == {
        "type": "validation_error",
        "code": "invalid_input",
        "detail": "Hog code has errors.",
        "attr": "hog",
    }


def test_inputs_required(sb: Sandbox) -> None:
    """H::test_inputs_required: exact body, `attr` `inputs__url` (the sandbox said `inputs__url__input`)."""
    payload = {
        "name": "Fetch URL",
        "hog": "fetch(inputs.url);",
        "inputs_schema": [{"key": "url", "type": "string", "label": "Webhook URL", "required": True}],
    }
    with api(sb) as http:
        res = http.post(_path(sb), json=payload)
    assert res.status_code == 400
    assert res.json() == {
        "type": "validation_error",
        "code": "invalid_input",
        "detail": "This field is required.",
        "attr": "inputs__url",
    }


def test_secret_inputs_marked_only_when_set(sb: Sandbox) -> None:
    """H::test_secret_inputs_not_returned and H::test_secret_inputs_not_updated_if_not_changed: a secret
    with a value is shown `{"secret": true}`; an optional secret never set is not shown at all (the sandbox
    marked it); sending the marker back keeps the stored value, and a new value is marked too."""
    payload: dict[str, Any] = {
        "name": "Fetch URL",
        "hog": "fetch(inputs.url);",
        "inputs_schema": [
            {"key": "secret1", "type": "string", "label": "Secret 1", "secret": True, "required": True},
            {"key": "secret2", "type": "string", "label": "Secret 2", "secret": True, "required": False},
        ],
        "inputs": {"secret1": {"value": "I AM SECRET"}},
    }
    with api(sb) as http:
        made = http.post(_path(sb), json=payload).json()
        assert made["inputs"] == {"secret1": {"secret": True}}
        assert http.get(_path(sb, made["id"] + "/")).json()["inputs"] == {"secret1": {"secret": True}}
        patched = http.patch(
            _path(sb, made["id"] + "/"),
            json={"inputs": {"secret1": {"secret": True}, "secret2": {"value": "I AM ALSO SECRET"}}},
        ).json()
        assert patched["inputs"] == {"secret1": {"secret": True}, "secret2": {"secret": True}}
        assert "I AM" not in http.get(_path(sb, made["id"] + "/")).text
    row = sb.ctx.store.query_one("SELECT encrypted_inputs FROM hog_functions WHERE id=?", (made["id"],))
    assert row is not None and "I AM SECRET" in row[0] and "I AM ALSO SECRET" in row[0]


def test_filters_come_back_compiled(sb: Sandbox) -> None:
    """H::test_generates_filters_bytecode (filters returned with `bytecode` added; the sandbox's bytecode is a
    stand-in, see the README) and H::test_internal_destinations_can_be_managed_without_addon (`source` is
    "internal-events" for an internal destination)."""
    filters = {
        "events": [{"id": "$pageview", "name": "$pageview", "type": "events", "order": 0}],
        "filter_test_accounts": True,
    }
    with api(sb) as http:
        made = http.post(
            _path(sb), json={"type": "destination", "hog": "return event", "filters": filters}
        ).json()
        internal = http.post(
            _path(sb),
            json={
                "type": "internal_destination",
                "hog": "fetch('https://example.com');",
                "filters": {"events": [{"id": "$activity_log_entry_created", "type": "events"}]},
            },
        ).json()
    assert {k: v for k, v in made["filters"].items() if k not in ("bytecode", "source")} == filters
    assert made["filters"]["source"] == "events"
    assert made["filters"]["bytecode"][:2] == ["_H", 1]
    assert internal["filters"]["source"] == "internal-events"


def test_newer_fields_and_types(sb: Sandbox) -> None:
    """Today's serializer: `batch_export_id` (a UUID or null), `search_match_type` on searched list rows, and
    the `legacy_destination` type (PostHog #97648)."""
    with api(sb) as http:
        legacy = http.post(
            _path(sb), json={"type": "legacy_destination", "hog": "return event", "name": "Old"}
        )
        assert legacy.status_code == 201, legacy.text
        assert legacy.json()["batch_export_id"] is None
        bad = http.patch(_path(sb, legacy.json()["id"] + "/"), json={"batch_export_id": "nope"})
        assert bad.status_code == 400 and bad.json()["attr"] == "batch_export_id"
        export_id = "0190a0a0-0000-7000-8000-000000000001"
        ok = http.patch(_path(sb, legacy.json()["id"] + "/"), json={"batch_export_id": export_id})
        assert ok.json()["batch_export_id"] == export_id
        searched = http.get(_path(sb), params={"search": "old"}).json()["results"]
        plain = http.get(_path(sb)).json()["results"]
    assert [r["search_match_type"] for r in searched] == ["exact"]
    assert [r["search_match_type"] for r in plain] == [None]


def test_transformations_say_the_plugin_api_is_gone() -> None:
    """PostHog PR #97440 removes the plugin API and the `pipeline_*` routes: every call then answers 404.
    `client.transformations` says so and points to `client.hog_functions`; a missing plugin on an instance
    that still serves the API stays a plain NotFoundError."""
    with (
        start(seed="demo", profile="spec") as sandbox,
        Client(sandbox.url, personal_api_key=sandbox.personal_api_key, progress=False) as client,
    ):
        existing = client.transformations.list()
        assert existing
        with pytest.raises(NotFoundError) as plain:
            client.transformations.get(987654)
        assert "hog_functions" not in str(plain.value)
        sandbox.set_switch("no_plugin_api")
        for call in (
            lambda: client.transformations.list(),
            lambda: client.transformations.frame(),
            lambda: client.transformations.get(existing[0].id),
            lambda: client.transformations.source(existing[0].id),
        ):
            with pytest.raises(NotFoundError, match="#97440") as gone:
                call()
            assert "client.hog_functions" in str(gone.value)
        assert client.hog_functions.list(type="transformation")  # the replacement still answers


def test_create_hog_function_compiles_empty_filters_to_true(sb: Sandbox) -> None:
    """PostHog's `posthog/api/test/test_hog_function.py::test_create_hog_function` (commit 7661ca5): a
    function created without filters returns ``{"source": "events", "bytecode": ["_H",
    HOGQL_BYTECODE_VERSION, 29]}`` (29: the constant ``true``; HOGQL_BYTECODE_VERSION is 1). The sandbox
    said ``["_H", 1]``, a program that leaves nothing on the stack."""
    with api(sb) as http:
        made = http.post(
            _path(sb),
            json={
                "type": "destination",
                "name": "Fetch URL",
                "description": "Test description",
                "hog": "fetch(inputs.url);",
                "inputs": {},
            },
        )
        empty = http.post(_path(sb), json={"type": "destination", "hog": "return event", "filters": {}})
    assert made.status_code == 201, made.text
    assert made.json()["filters"] == {"source": "events", "bytecode": ["_H", 1, 29]}
    assert made.json()["inputs_schema"] == [] and made.json()["inputs"] == {}
    assert empty.json()["filters"] == {"source": "events", "bytecode": ["_H", 1, 29]}


def test_creates_with_template_values_if_not_provided(sb: Sandbox) -> None:
    """PostHog's `posthog/api/test/test_hog_function.py::test_creates_with_template_values_if_not_provided`
    (commit 7661ca5): without ``inputs`` the required ``url`` is a 400 at ``inputs__url``; with it, the
    function takes the template's code, name, description, icon and ``inputs_schema`` as the template
    endpoint shows them. The sandbox added ``"hidden": false`` to each schema item the template showed
    without one (PostHog's templates carry ``secret``, ``hidden`` and ``required`` on every item:
    `posthog/api/test/__data__/hog_function_templates.json`, ``template-webhook``)."""
    payload: dict[str, Any] = {"template_id": "template-webhook", "type": "destination"}
    with api(sb) as http:
        missing = http.post(_path(sb), json=payload)
        made = http.post(_path(sb), json={**payload, "inputs": {"url": {"value": "https://example.com"}}})
        tpl = http.get(f"/api/projects/{sb.project_id}/hog_function_templates/template-webhook/").json()
    assert missing.status_code == 400
    assert missing.json() == {
        "attr": "inputs__url",
        "code": "invalid_input",
        "detail": "This field is required.",
        "type": "validation_error",
    }
    assert made.status_code == 201, made.text
    body = made.json()
    assert body["hog"] == tpl["code"].strip()
    assert body["inputs_schema"] == tpl["inputs_schema"]
    assert body["name"] == tpl["name"]
    assert body["description"] == tpl["description"]
    assert body["icon_url"] == tpl["icon_url"]
    assert all("hidden" in item for item in tpl["inputs_schema"])
