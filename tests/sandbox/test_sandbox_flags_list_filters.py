"""Contract: the list filters of `GET /api/projects/:id/feature_flags/` answer as PostHog's do.

The filters are PostHog's `FeatureFlagViewSet._apply_filters` (products/feature_flags/backend/api/
feature_flag.py; `_filter_request` in posthog/api/feature_flag.py before the move), STALE is
`filter_flags_by_active_param` (products/feature_flags/backend/flag_status.py). The assertions are ported from
PostHog's API tests, `posthog/api/test/test_feature_flag.py` (each test names its source):

* `TestFeatureFlag.test_get_flags_with_active_and_created_by_id_filters`
* `TestFeatureFlag.test_get_flags_with_type_filters`,
  `TestFeatureFlagMatchingIds.test_matching_ids_respects_type_filter`
* `TestFeatureFlag.test_get_flags_with_search`
* `TestFeatureFlag.test_get_flags_with_stale_filter`, `..._stale_filter_multivariate`,
  `..._stale_filter_multivariate_condition_variant_override`, `..._stale_filter_explicit_multivariate_null`
* `TestFeatureFlagStatus.test_get_flags_with_stale_filter_usage_and_config_based`
* `TestFeatureFlag.test_get_flags_with_evaluation_runtime_filter`

PostHog's tests create rows with the ORM (`created_at` under `freeze_time`, `last_called_at`, linked
`Experiment` rows, another `User`); here the flags are created over HTTP and those stored fields the API
cannot set are written into the sandbox's store (`set_flag_fields`), the sandbox's equivalent of the ORM call.
`excluded_properties`, `key`, `tags`, `excluded_tags`, `order` and the refusals have no PostHog test read
here: they follow `_apply_filters` and `safely_get_queryset` directly.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from _sandbox_helpers import api, days_ago, error, set_flag_fields
from analytics_nb.sandbox import Sandbox

FULL = {"groups": [{"rollout_percentage": 100, "properties": []}]}
HALF = {"groups": [{"rollout_percentage": 50, "properties": []}]}
PERSON_PROP = {"key": "email", "value": "test@example.com", "operator": "exact", "type": "person"}


def _path(sb: Sandbox) -> str:
    return f"/api/projects/{sb.project_id}/feature_flags/"


def _create(sb: Sandbox, key: str, filters: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    body = {"key": key, "filters": filters if filters is not None else HALF, **fields}
    with api(sb) as http:
        resp = http.post(_path(sb), json=body)
    assert resp.status_code == 201, resp.text
    created: dict[str, Any] = resp.json()
    return created


def _keys(sb: Sandbox, query: str) -> list[str]:
    with api(sb) as http:
        resp = http.get(_path(sb) + query)
    assert resp.status_code == 200, resp.text
    page = resp.json()
    assert page["count"] == len(page["results"])
    return [flag["key"] for flag in page["results"]]


def _results(sb: Sandbox, query: str) -> list[dict[str, Any]]:
    with api(sb) as http:
        resp = http.get(_path(sb) + query)
    assert resp.status_code == 200, resp.text
    results: list[dict[str, Any]] = resp.json()["results"]
    return results


def test_active_and_created_by_id(empty_sandbox: Sandbox) -> None:
    """test_get_flags_with_active_and_created_by_id_filters: created_by_id and active=false together."""
    sb = empty_sandbox
    me = _create(sb, "red_button")["created_by"]["id"]
    _create(sb, "blue_button")
    _create(sb, "orange_button", active=False)
    set_flag_fields(sb, "orange_button", created_by={"id": me + 1000, "email": "foo@bar.com"})
    _create(sb, "green_button", active=False)
    assert _keys(sb, f"?created_by_id={me}&active=false") == ["green_button"]
    # today's parse_created_by_ids: several ids, comma-separated or as a JSON list
    assert set(_keys(sb, f"?created_by_id={me},{me + 1000}&active=false")) == {
        "orange_button",
        "green_button",
    }
    assert _keys(sb, f"?created_by_id=[{me + 1000}]") == ["orange_button"]
    assert len(_keys(sb, "?created_by_id=nobody")) == 4  # no id at all: no filter
    # `active` other than "true"/"STALE" means inactive (`value == "true"`), as the service reads it
    assert set(_keys(sb, "?active=yes")) == {"orange_button", "green_button"}
    assert set(_keys(sb, "?active=true")) == {"red_button", "blue_button"}


def test_type(empty_sandbox: Sandbox) -> None:
    """test_get_flags_with_type_filters and test_matching_ids_respects_type_filter: boolean, multivariant,
    experiment (any linked experiment), remote_config; an unknown type is ignored."""
    sb = empty_sandbox
    _create(sb, "red_button")
    set_flag_fields(sb, "red_button", experiment_set=[{"id": 1, "name": "Experiment 1", "deleted": False}])
    variants = {"variants": [{"key": "a", "rollout_percentage": 50}, {"key": "b", "rollout_percentage": 50}]}
    _create(sb, "purple_button", {**HALF, "multivariate": variants})
    _create(sb, "remote", FULL, is_remote_configuration=True)
    assert set(_keys(sb, "?type=boolean")) == {"red_button", "remote"}
    assert _keys(sb, "?type=multivariant") == ["purple_button"]
    assert _keys(sb, "?type=experiment") == ["red_button"]
    assert _keys(sb, "?type=remote_config") == ["remote"]
    assert len(_keys(sb, "?type=other")) == 3


def test_search(empty_sandbox: Sandbox) -> None:
    """test_get_flags_with_search: key or name, case-insensitive, with active; live experiments' names too;
    today's search also lets a space match `-` and `_`."""
    sb = empty_sandbox
    _create(sb, "blue_search_term_button")
    _create(sb, "green_search_term_button", active=False)
    assert _keys(sb, "?active=true&search=search_term") == ["blue_search_term_button"]
    assert _keys(sb, "?active=true&search=SEARCH term") == ["blue_search_term_button"]
    _create(sb, "experiment_flag")
    set_flag_fields(
        sb, "experiment_flag", experiment_set=[{"id": 7, "name": "unique_experiment_name", "deleted": False}]
    )
    assert _keys(sb, "?search=unique_experiment_name") == ["experiment_flag"]
    _create(sb, "deleted_experiment_flag")
    set_flag_fields(
        sb,
        "deleted_experiment_flag",
        experiment_set=[{"id": 8, "name": "deleted_unique_experiment", "deleted": True}],
    )
    assert _keys(sb, "?search=deleted_unique_experiment") == []
    _create(sb, "named", name="Checkout Redesign")
    assert _keys(sb, "?search=redesign") == ["named"]
    assert _keys(sb, "?search=checkout.redesign") == []  # the text is escaped, not a pattern


def test_search_over_200_characters_is_refused(empty_sandbox: Sandbox) -> None:
    """`_apply_filters`: "Search term cannot exceed 200 characters" (a 400, never a 5xx)."""
    with api(empty_sandbox) as http:
        resp = http.get(_path(empty_sandbox), params={"search": "x" * 201})
    assert resp.status_code == 400
    assert error(resp)["detail"] == "Search term cannot exceed 200 characters"


def test_stale_boolean(empty_sandbox: Sandbox) -> None:
    """test_get_flags_with_stale_filter: only the old 100% flag without properties that was never called;
    its `status` is STALE."""
    sb = empty_sandbox
    _create(sb, "stale_flag", FULL)
    set_flag_fields(sb, "stale_flag", created_at=days_ago(400))
    _create(sb, "recent_flag", FULL)
    set_flag_fields(sb, "recent_flag", last_called_at=days_ago(1))
    _create(sb, "partial_flag", HALF)
    set_flag_fields(sb, "partial_flag", created_at=days_ago(400), last_called_at=days_ago(1))
    _create(sb, "filtered_flag", {"groups": [{"rollout_percentage": 100, "properties": [PERSON_PROP]}]})
    set_flag_fields(sb, "filtered_flag", created_at=days_ago(400), last_called_at=days_ago(1))
    browser = {"key": "$browser_version", "value": ["136"], "operator": "exact", "type": "person"}
    groups = [
        {"rollout_percentage": 100, "properties": [PERSON_PROP]},
        {"properties": [browser], "rollout_percentage": 50},
    ]
    _create(sb, "filtered_flag_with_multiple_groups", {"groups": groups})
    set_flag_fields(
        sb, "filtered_flag_with_multiple_groups", created_at=days_ago(400), last_called_at=days_ago(1)
    )
    results = _results(sb, "?active=STALE")
    assert [r["key"] for r in results] == ["stale_flag"]
    assert results[0]["status"] == "STALE"


def test_stale_multivariate(empty_sandbox: Sandbox) -> None:
    """test_get_flags_with_stale_filter_multivariate: a variant at 100% plus a 100% condition is stale."""
    sb = empty_sandbox
    mv = {"variants": [{"key": "test", "rollout_percentage": 100}]}
    _create(sb, "stale_multivariate", {**FULL, "multivariate": mv})
    set_flag_fields(sb, "stale_multivariate", created_at=days_ago(700))
    mv2 = {
        "variants": [{"key": "test", "rollout_percentage": 30}, {"key": "test2", "rollout_percentage": 70}]
    }
    _create(sb, "active_multivariate", {**HALF, "multivariate": mv2})
    set_flag_fields(sb, "active_multivariate", created_at=days_ago(400), last_called_at=days_ago(1))
    results = _results(sb, "?active=STALE")
    assert [r["key"] for r in results] == ["stale_multivariate"]
    assert results[0]["status"] == "STALE"


def test_stale_multivariate_condition_variant_override(empty_sandbox: Sandbox) -> None:
    """test_get_flags_with_stale_filter_multivariate_condition_variant_override: a 100% condition without
    properties that overrides the variant is stale; at 90%, or with properties, it is not."""
    sb = empty_sandbox
    mv = {"variants": [{"key": "test", "rollout_percentage": 50}, {"key": "test2", "rollout_percentage": 50}]}
    _create(
        sb,
        "stale_multivariate",
        {"groups": [{"rollout_percentage": 100, "properties": [], "variant": "test"}], "multivariate": mv},
    )
    set_flag_fields(sb, "stale_multivariate", created_at=days_ago(700))
    _create(
        sb,
        "low_rollout",
        {"groups": [{"rollout_percentage": 90, "properties": [], "variant": "test"}], "multivariate": mv},
    )
    set_flag_fields(sb, "low_rollout", created_at=days_ago(700), last_called_at=days_ago(1))
    chrome = {"key": "$browser", "value": ["Chrome"], "operator": "exact", "type": "person"}
    groups = [{"rollout_percentage": 100, "properties": [chrome], "variant": "test"}]
    _create(sb, "with_properties", {"groups": groups, "multivariate": mv})
    set_flag_fields(sb, "with_properties", created_at=days_ago(700), last_called_at=days_ago(1))
    results = _results(sb, "?active=STALE")
    assert [r["key"] for r in results] == ["stale_multivariate"]
    assert results[0]["status"] == "STALE"


def test_stale_explicit_multivariate_null(empty_sandbox: Sandbox) -> None:
    """test_get_flags_with_stale_filter_explicit_multivariate_null: `multivariate: null` (what the app sends)
    counts as no variants."""
    sb = empty_sandbox
    _create(sb, "stale_with_explicit_null", {**FULL, "multivariate": None, "payloads": {}})
    set_flag_fields(sb, "stale_with_explicit_null", created_at=days_ago(400))
    _create(sb, "recent_with_explicit_null", {**FULL, "multivariate": None, "payloads": {}})
    set_flag_fields(sb, "recent_with_explicit_null", last_called_at=days_ago(1))
    results = _results(sb, "?active=STALE")
    assert [r["key"] for r in results] == ["stale_with_explicit_null"]
    assert results[0]["status"] == "STALE"


def test_stale_usage_and_config_based(empty_sandbox: Sandbox) -> None:
    """TestFeatureFlagStatus.test_get_flags_with_stale_filter_usage_and_config_based: not called for 30 days,
    or never called, old and fully rolled out; not a recently called, a partial or a new flag."""
    sb = empty_sandbox
    for key, filters, called in (
        ("stale_by_usage_flag", HALF, days_ago(35)),
        ("stale_by_config_flag", FULL, None),
        ("active_flag", HALF, days_ago(1 / 24)),
        ("no_data_partial_rollout_flag", HALF, None),
    ):
        _create(sb, key, filters)
        set_flag_fields(sb, key, created_at=days_ago(60), last_called_at=called)
    _create(sb, "new_uncalled_flag", HALF)
    set_flag_fields(sb, "new_uncalled_flag", created_at=days_ago(5))
    results = _results(sb, "?active=STALE")
    assert {r["key"] for r in results} == {"stale_by_usage_flag", "stale_by_config_flag"}
    assert all(r["status"] == "STALE" for r in results)
    # a disabled flag is never stale (the filter asks active=True)
    _create(sb, "off_old", FULL, active=False)
    set_flag_fields(sb, "off_old", created_at=days_ago(60))
    assert "off_old" not in _keys(sb, "?active=STALE")


def test_evaluation_runtime(empty_sandbox: Sandbox) -> None:
    """test_get_flags_with_evaluation_runtime_filter: an exact match on the stored runtime (PostHog's test
    stores "both", a value the model's choices lack; the filter matches it all the same)."""
    sb = empty_sandbox
    for runtime in ("server", "client", "both"):
        _create(sb, f"{runtime}_flag", evaluation_runtime=runtime)
    _create(sb, "default_flag")
    assert _keys(sb, "?evaluation_runtime=server") == ["server_flag"]
    assert _keys(sb, "?evaluation_runtime=client") == ["client_flag"]
    assert _keys(sb, "?evaluation_runtime=both") == ["both_flag"]
    assert _keys(sb, "?evaluation_runtime=all") == ["default_flag"]


def test_excluded_properties_key_and_order(empty_sandbox: Sandbox) -> None:
    """`_apply_filters`: excluded_properties (a JSON list of keys; invalid JSON ignored), key (exact,
    case-insensitive); `safely_get_queryset`: order (default -created_at)."""
    sb = empty_sandbox
    for key, name in (("alpha", "Zed"), ("beta", "Yak"), ("gamma", "Xen")):
        _create(sb, key, name=name)
    assert _keys(sb, "") == ["gamma", "beta", "alpha"]
    assert _keys(sb, "?" + httpx.QueryParams({"excluded_properties": '["alpha","gamma"]'}).__str__()) == [
        "beta"
    ]
    assert _keys(sb, "?excluded_properties=not-json") == ["gamma", "beta", "alpha"]
    assert _keys(sb, "?key=BETA") == ["beta"]
    assert _keys(sb, "?key=bet") == []
    assert _keys(sb, "?order=key") == ["alpha", "beta", "gamma"]
    assert _keys(sb, "?order=-key") == ["gamma", "beta", "alpha"]
    assert _keys(sb, "?order=name") == ["gamma", "beta", "alpha"]
    assert _keys(sb, "?order=created_at") == ["alpha", "beta", "gamma"]
    # paging applies after the filters: count is the filtered total
    with api(sb) as http:
        page = http.get(_path(sb), params={"order": "key", "limit": 1, "offset": 1}).json()
    assert page["count"] == 3 and [f["key"] for f in page["results"]] == ["beta"]


def test_tags_and_excluded_tags(empty_sandbox: Sandbox) -> None:
    """`_apply_filters` (today's service): `tags`, a JSON list, keeps flags with any of them; `excluded_tags`
    drops flags with any of them; text that is not a JSON list filters nothing."""
    sb = empty_sandbox
    _create(sb, "a", tags=["checkout", "web"])
    _create(sb, "b", tags=["web"])
    _create(sb, "c")

    def query(**params: str) -> str:
        return "?" + str(httpx.QueryParams(params))

    assert _keys(sb, query(tags='["checkout", "mobile"]')) == ["a"]
    assert _keys(sb, query(tags='["web"]')) == ["b", "a"]
    assert _keys(sb, query(excluded_tags='["checkout"]')) == ["c", "b"]
    assert _keys(sb, query(tags='["web"]', excluded_tags='["checkout"]')) == ["b"]
    assert _keys(sb, query(tags="web")) == ["c", "b", "a"]


@pytest.mark.parametrize("order", ["bogus", "filters", "-"])
def test_unknown_order_is_a_400_naming_order(empty_sandbox: Sandbox, order: str) -> None:
    """The real list passes `order` to `order_by` (a field the model lacks is a server error there); the
    sandbox never answers 5xx for bad input: a 400 naming `order`."""
    with api(empty_sandbox) as http:
        resp = http.get(_path(empty_sandbox), params={"order": order})
    assert resp.status_code == 400 and error(resp)["attr"] == "order"


def test_schema_lists_the_filters(empty_sandbox: Sandbox) -> None:
    """/api/schema/ documents every list filter of the operation. `active`, `type` and `evaluation_runtime`
    name their values in the description, not as an enum: the service (and the sandbox) reads any other value
    without a 400, so an enum would be a schema the server does not enforce (the conformance run's ST201,
    "schema-violating request accepted", found `type=AAA` answered 200)."""
    with api(empty_sandbox) as http:
        document = http.get("/api/schema/").json()
    op = document["paths"]["/api/projects/{project_id}/feature_flags/"]["get"]
    params = {p["name"]: p for p in op["parameters"] if p["in"] == "query"}
    assert {
        "active",
        "created_by_id",
        "search",
        "key",
        "type",
        "evaluation_runtime",
        "excluded_properties",
        "order",
    } <= set(params)
    for name, values in {
        "active": ("true", "false", "STALE"),
        "type": ("boolean", "multivariant", "experiment", "remote_config"),
        "evaluation_runtime": ("server", "client", "all"),
    }.items():
        assert "enum" not in params[name]["schema"], name
        assert all(v in params[name]["description"] for v in values), name
    with api(empty_sandbox) as http:
        assert http.get(_path(empty_sandbox), params={"type": "AAA"}).status_code == 200
    assert params["search"]["schema"]["maxLength"] == 200
