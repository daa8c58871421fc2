"""Issue 27 finding 9, the last conformance failures: what the sandbox answers where it differed from PostHog
(regressions, each fails on the old code), what the OpenAPI document now states that it did not (the
parameters' and bodies' real formats), the state rules it lists as `x-refusals`, and the conformance run's
hook that accepts exactly those refusals (`tests/sandbox/schemathesis/hooks.py`)."""

from __future__ import annotations

import importlib.util
import re
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from _sandbox_helpers import api, playlists_path
from analytics_nb.sandbox import Sandbox, start

SCHEMATHESIS_DIR = Path(__file__).parent / "schemathesis"


@pytest.fixture(scope="module")
def sb() -> Iterator[Sandbox]:
    with start(seed="demo", profile="spec") as sandbox:
        yield sandbox


@pytest.fixture(scope="module")
def document(sb: Sandbox) -> dict[str, Any]:
    return httpx.get(f"{sb.url}/api/schema/").json()


def _operation(document: dict[str, Any], operation_id: str) -> dict[str, Any]:
    for methods in document["paths"].values():
        for op in methods.values():
            if op["operationId"] == operation_id:
                return dict(op)
    raise AssertionError(operation_id)


def _query(document: dict[str, Any], operation_id: str, name: str) -> dict[str, Any]:
    params = _operation(document, operation_id)["parameters"]
    return dict(next(p for p in params if p["name"] == name))


def _body(document: dict[str, Any], operation_id: str) -> dict[str, Any]:
    ref = _operation(document, operation_id)["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    return dict(document["components"]["schemas"][ref.rsplit("/", 1)[-1]])


# -- the sandbox answered otherwise than PostHog -----------------------------------------------------------
def test_playlist_list_reads_any_date_as_relative_date_parse_does(sb: Sandbox) -> None:
    """`_filter_request` (posthog/session_recordings/session_recording_playlist_api.py) hands `date_from` /
    `date_to` to `relative_date_parse` (posthog/utils.py), which never refuses: a text that is no date is
    now, or now minus the first `<number><unit>` in it. Regression: `date_from=` was a 400."""
    with api(sb) as http:
        path = playlists_path(sb)
        empty = http.get(path, params={"date_from": ""})
        junk = http.get(path, params={"date_from": "no date here", "date_to": ""})
        embedded = http.get(path, params={"date_from": "x3650d"}).json()["count"]
        everything = http.get(path, params={"date_from": "-3650d"}).json()["count"]
    assert empty.status_code == 200, empty.text
    assert empty.json()["count"] == 0  # modified after now: none
    assert junk.status_code == 200 and junk.json()["count"] == 0
    assert embedded == everything > 0


def test_hog_function_create_reads_falsy_inputs_schema_and_mappings_as_none(sb: Sandbox) -> None:
    """`HogFunctionSerializer.to_internal_value` on create: `data.get("inputs_schema") or []` and
    `data.get("mappings") or None` (products/cdp/backend/api/hog_function.py), so `{}` / `[]` are accepted
    whatever the type. Regression: 400 `inputs_schema` not a list, 400 "Mappings are only allowed for
    destinations." for a transformation sent `mappings: []`."""
    path = f"/api/projects/{sb.project_id}/hog_functions/"
    with api(sb) as http:
        made = http.post(path, json={"type": "destination", "hog": "return event", "inputs_schema": {}})
        tr = http.post(path, json={"type": "transformation", "hog": "return event", "mappings": []})
        # an update keeps what it is sent: `[]` mappings on a transformation are refused there
        patched = http.patch(f"{path}{tr.json()['id']}/", json={"mappings": []})
    assert made.status_code == 201, made.text
    assert made.json()["inputs_schema"] == []
    assert tr.status_code == 201, tr.text
    assert tr.json()["mappings"] is None
    assert patched.status_code == 400 and patched.json()["attr"] == "mappings"


def test_playlist_filters_must_be_an_object(sb: Sandbox) -> None:
    """`filters: false` on a collection: PostHog's create runs `len(validated_data.get("filters", {}))`
    (a TypeError there: a 500); the sandbox refuses it with 400 naming the field, as the document says
    (an object). Regression: 201 with `"filters": false` stored."""
    with api(sb) as http:
        resp = http.post(playlists_path(sb), json={"type": "collection", "filters": False})
        listed = http.get(playlists_path(sb), params={"limit": 500}).json()["results"]
    assert resp.status_code == 400, resp.text
    assert resp.json()["attr"] == "filters"
    assert all(p["filters"] is not False for p in listed)


# -- the document states the real formats -----------------------------------------------------------------
def test_document_states_the_parameters_real_formats(document: dict[str, Any]) -> None:
    """`full` is any text (only "true" selects the full serializer: `get_serializer_class`), `session_ids`
    a JSON array (`query_as_params_to_dict`), the activity log's `limit` any size (Django's Paginator);
    each was documented otherwise (a boolean, any text, at most 2**63-1)."""
    assert _query(document, "hog_functions_list", "full")["schema"] == {"type": "string"}
    session_ids = _query(document, "session_recordings_list", "session_ids")
    assert session_ids["content"]["application/json"]["schema"]["type"] == "array"
    limit = _query(document, "transformations_activity", "limit")["schema"]["anyOf"][0]
    assert "maximum" not in limit
    # other paging numbers keep SQLite's bound (past it: 400)
    assert "maximum" in _query(document, "hog_functions_list", "limit")["schema"]["anyOf"][0]


def test_document_states_the_bodies_rules(document: dict[str, Any]) -> None:
    """Flag keys as `validate_key` checks them (not null); `masking` needs ttl and hash; `batch_export_id` is
    a UUID; a saved-filter playlist needs filters and a collection none; a plugin install needs a
    repository URL unless it is a source plugin (and may have no body)."""
    key = _body(document, "feature_flags_partial_update")["properties"]["key"]
    assert key["pattern"] == "^[a-zA-Z0-9_-]+$" and not key.get("nullable")
    hog = _body(document, "hog_functions_partial_update")["properties"]
    assert hog["masking"]["required"] == ["ttl", "hash"]
    assert hog["batch_export_id"]["format"] == "uuid"
    playlist = _body(document, "playlists_create")
    kinds = {b["properties"]["type"]["enum"][0]: b for b in playlist["anyOf"]}
    assert kinds["filters"]["properties"]["filters"]["minProperties"] == 1
    assert kinds["collection"]["properties"]["filters"]["maxProperties"] == 0
    plugin = _operation(document, "transformations_create")["requestBody"]
    assert plugin["required"] is False
    url_rule = _body(document, "transformations_create")["anyOf"][2]["properties"]["url"]
    assert re.match(url_rule["pattern"], "https://github.com/PostHog/posthog-plugin-geoip")
    assert not re.match(url_rule["pattern"], "0")


def test_refusals_are_documented_and_the_run_config_names_exactly_them(document: dict[str, Any]) -> None:
    """Every operation with `x-refusals` (state rules) is one the conformance config lets answer 400 (then
    narrowed by the hook), and no other operation is."""
    with_refusals = {
        op["operationId"]
        for methods in document["paths"].values()
        for op in methods.values()
        if op.get("x-refusals")
    }
    assert with_refusals == {
        "feature_flags_create",
        "feature_flags_partial_update",
        "feature_flags_test_evaluation_create",
        "feature_flags_update",
        "hog_functions_create",
        "hog_functions_rearrange_partial_update",
        "playlists_list",
        "query_create",
        "transformations_create",
        "transformations_update_source",
    }
    config = tomllib.loads((SCHEMATHESIS_DIR / "schemathesis.toml").read_text())
    state_entry = next(
        o
        for o in config["operations"]
        if re.match(o.get("include-operation-id-regex", "^$"), "feature_flags_create")
    )
    pattern = re.compile(state_entry["include-operation-id-regex"])
    all_ids = {op["operationId"] for methods in document["paths"].values() for op in methods.values()}
    assert {i for i in all_ids if pattern.match(i)} == with_refusals
    for ids in with_refusals:
        for refusal in _operation(document, ids)["x-refusals"]:
            assert refusal["status"] == 400 and refusal["code"] and refusal["source"]


def test_duplicate_key_is_the_documented_refusal(sb: Sandbox, document: dict[str, Any]) -> None:
    """The refusal the document lists for a flag create is what the sandbox answers to a taken key
    (posthog/api/test/test_feature_flag.py `test_cant_create_flag_with_duplicate_key`: 400, code
    `unique`, attr `key`)."""
    (refusal,) = _operation(document, "feature_flags_create")["x-refusals"]
    with api(sb) as http:
        path = f"/api/projects/{sb.project_id}/feature_flags/"
        assert http.post(path, json={"key": "dup-key-27"}).status_code == 201
        again = http.post(path, json={"key": "dup-key-27"})
    body = again.json()
    assert (again.status_code, body["code"], body["attr"]) == (
        refusal["status"],
        refusal["code"],
        refusal["attr"],
    )


# -- the run's hook -----------------------------------------------------------------------------------------
def _hooks() -> Any:
    pytest.importorskip("schemathesis")
    name = "_sandbox_conformance_hooks"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, SCHEMATHESIS_DIR / "hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


class _Response:
    def __init__(self, status: int, body: Any, url: str = "http://127.0.0.1/x") -> None:
        self.status_code = status
        self._body = body
        self.text = body if isinstance(body, str) else ""
        self.request = SimpleNamespace(url=url)

    def json(self) -> Any:
        if isinstance(self._body, str):
            raise ValueError("not JSON")
        return self._body


def _case(refusals: list[dict[str, Any]], *, method: str = "POST", path: str = "/api/x/") -> Any:
    mode = SimpleNamespace(is_positive=True)
    return SimpleNamespace(
        meta=SimpleNamespace(generation=SimpleNamespace(mode=mode)),
        method=method,
        operation=SimpleNamespace(path=path, definition=SimpleNamespace(raw={"x-refusals": refusals})),
    )


def test_hook_accepts_exactly_the_documented_refusals() -> None:
    """A 400 passes only with the listed status, code, attr and detail prefix; a long GET capture passes only
    with the HTTP parser's exact answer and a URL over the limit."""
    check = _hooks().positive_data_refused_only_as_documented
    refusal = {"status": 400, "code": "unique", "attr": "key", "source": "x"}
    case = _case([refusal])
    taken = {"type": "validation_error", "code": "unique", "detail": "taken", "attr": "key"}
    assert check(None, _Response(400, taken), case) is None
    blank = {**taken, "code": "blank"}
    with pytest.raises(AssertionError):
        check(None, _Response(400, blank), case)
    by_detail = _case([{**refusal, "attr": None, "code": "invalid_input", "detail": "HogFunction with id "}])
    missing = {"code": "invalid_input", "attr": None, "detail": "HogFunction with id x does not exist"}
    assert check(None, _Response(400, missing), by_detail) is None
    with pytest.raises(AssertionError):
        check(None, _Response(400, {**missing, "detail": "Cannot rearrange"}), by_detail)
    capture = _case([], method="GET", path="/batch/")
    parser = "Invalid HTTP request received."
    long_url = "http://127.0.0.1/batch/?data=" + "x" * 70_000
    assert check(None, _Response(400, parser, long_url), capture) is None
    with pytest.raises(AssertionError):
        check(None, _Response(400, parser), capture)  # a short URL the app refused: a failure
    # operations with no refusals are left to positive_data_acceptance
    assert check(None, _Response(400, blank), _case([])) is None


def test_issue_37_rearrange_orders_and_hog_syntax_are_stated(sb: Sandbox, document: dict[str, Any]) -> None:
    """Issue 37 #7 (schemathesis, more examples than the CI run): a rearrange order outside
    ``execution_order``'s range (0-32767) and Hog source that does not parse were refused while the document
    allowed them. The document now states the range, and lists the Hog refusal, which is what a bad source
    gets (posthog/cdp/validation.py ``compile_hog``)."""
    body = _operation(document, "hog_functions_rearrange_partial_update")["requestBody"]
    schema = body["content"]["application/json"]["schema"]
    orders = schema["properties"]["orders"]["additionalProperties"]
    assert (orders["minimum"], orders["maximum"]) == (0, 32767)
    refusals = _operation(document, "hog_functions_create")["x-refusals"]
    (hog,) = [r for r in refusals if r["attr"] == "hog"]
    with api(sb) as http:
        path = f"/api/projects/{sb.project_id}/hog_functions/"
        answer = http.post(path, json={"type": "destination", "hog": "\u0006q", "name": "bad"})
    assert answer.status_code == hog["status"] == 400
    got = answer.json()
    assert (got["code"], got["attr"]) == (hog["code"], hog["attr"])
    assert got["detail"].startswith(hog["detail"])


def test_issue_37_update_source_body_is_optional_and_bad_names_are_the_listed_refusal(
    sb: Sandbox, document: dict[str, Any]
) -> None:
    """Issue 37 (schemathesis, 200 examples of update_source): the document called the body required while
    no body is served as PostHog serves it (posthog/api/plugin.py `update_source` walks the body's items:
    nothing changes), and an empty or 201-character file name was a 400 no document entry listed."""
    op = _operation(document, "transformations_update_source")
    assert op["requestBody"]["required"] is False
    (refusal,) = op["x-refusals"]
    with api(sb) as http:
        listed = http.get(f"/api/organizations/{sb.organization_id}/pipeline_transformations/").json()
        ident = listed["results"][0]["id"]
        path = f"/api/organizations/{sb.organization_id}/pipeline_transformations/{ident}/update_source/"
        assert http.patch(path).status_code == 200
        for name in ("", "x" * 201, "a/b.ts"):
            answer = http.patch(path, json={name: "x"})
            assert answer.status_code == refusal["status"] == 400
            got = answer.json()
            assert (got["code"], got["attr"]) == (refusal["code"], refusal["attr"])
            assert got["detail"].startswith(refusal["detail"])
