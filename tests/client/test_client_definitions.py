"""Flag definitions from today's ``/flags/definitions`` (ingestion host) with a ``phs_`` secret key or a
personal key, the ETag kept and sent back (a 304 reuses the definitions), the cold-cache 503 retried then
explained, 401 messages naming the key and scope, and the Django path only where the Rust one is missing.

Facts: ``rust/feature-flags/src/api/flag_definitions.rs`` (PostHog); posthog-python 7.91.1 ``client.py``
(``_request_flag_definitions``: ``/flags/definitions?token=...&send_cohorts``, ``If-None-Match``)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import pytest

from _clients import client_for
from analytics_nb import Client
from analytics_nb.client import LegacyEndpointWarning, cached_definitions
from analytics_nb.errors import AuthenticationError, ServerError
from analytics_nb.sandbox import Sandbox
from analytics_nb.simulation import simulate


@pytest.fixture(scope="module")
def secret(sandbox: Sandbox) -> str:
    return sandbox.create_secret_key()


@pytest.fixture
def client(sandbox: Sandbox, secret: str) -> Iterator[Client]:
    with client_for(
        sandbox,
        secret_api_key=secret,
        keys="project",
        project_id=sandbox.project_id,
        max_retry_wait=0.5,
        max_retries=2,
    ) as c:
        yield c


def _definition_requests(sb: Sandbox) -> list[str]:
    log = sb.requests()
    return [p for p in log["path"] if "definitions" in p or "local_evaluation" in p]


def test_a_secret_key_alone_reads_definitions_and_a_304_reuses_them(sandbox: Sandbox, client: Client) -> None:
    sandbox.clear_requests()
    first = client.feature_flags.definitions()
    assert "new-checkout" in {f.key for f in first.flags}
    second = client.feature_flags.local_evaluation()  # the old name reads the same cache
    assert second is first
    log = sandbox.requests()
    assert _definition_requests(sandbox) == ["/flags/definitions", "/flags/definitions"]
    assert log["status"].tolist()[-1] == 304
    cache = cached_definitions(client._core)
    assert cache is not None and cache.not_modified == 1 and cache.etag is not None
    assert cache.etag.startswith('W/"') and cache.source == "/flags/definitions"


def test_refresh_asks_without_the_etag(sandbox: Sandbox, client: Client) -> None:
    client.feature_flags.definitions()
    sandbox.clear_requests()
    client.feature_flags.definitions(refresh=True)
    assert sandbox.requests()["status"].tolist() == [200]


def test_a_personal_key_still_works(sandbox: Sandbox) -> None:
    with client_for(
        sandbox,
        personal_api_key=sandbox.personal_api_key,
        keys="project",
        project_id=sandbox.project_id,
        max_retry_wait=0.5,
        max_retries=2,
    ) as c:
        assert c.feature_flags.definitions().flags


def test_simulate_local_with_a_secret_key_only(sandbox: Sandbox, client: Client) -> None:
    sandbox.clear_requests()
    result = simulate([{"distinct_id": "u1", "country": "US", "plan": "pro"}], engine="local", client=client)
    assert "new-checkout" in result.frame.columns
    assert _definition_requests(sandbox) and set(_definition_requests(sandbox)) == {"/flags/definitions"}


def test_cold_cache_is_retried_then_explained(sandbox: Sandbox, secret: str) -> None:
    fault = sandbox.faults.add(path="/flags/definitions*", kind="cold_cache")
    sandbox.clear_requests()
    try:
        with (
            client_for(
                sandbox,
                secret_api_key=secret,
                keys="project",
                project_id=sandbox.project_id,
                max_retry_wait=0.5,
                max_retries=2,
            ) as c,
            pytest.raises(ServerError) as info,
        ):
            c.feature_flags.definitions()
    finally:
        sandbox.faults.remove(fault)
    assert len(_definition_requests(sandbox)) == 3  # first try + max_retries=2
    text = str(info.value)
    assert "503" in text and "cold cache" in text and "engine='remote'" in text
    assert secret not in text


def test_cold_cache_that_warms_up_is_answered(sandbox: Sandbox, secret: str) -> None:
    fault = sandbox.faults.add(path="/flags/definitions*", kind="cold_cache", rate=0.5)
    try:
        with client_for(
            sandbox,
            secret_api_key=secret,
            keys="project",
            project_id=sandbox.project_id,
            max_retry_wait=0.5,
            max_retries=2,
        ) as c:
            c._core.config  # noqa: B018 - the client is live
            answers = 0
            for _ in range(4):
                try:
                    c.feature_flags.definitions(refresh=True)
                    answers += 1
                except ServerError:
                    pass
            assert answers >= 3  # each call retried the 503s it met
    finally:
        sandbox.faults.remove(fault)


def test_wrong_secret_key_names_the_key_type_and_scope(sandbox: Sandbox) -> None:
    bad = "phs_" + "x" * 40
    with (
        client_for(
            sandbox,
            secret_api_key=bad,
            keys="project",
            project_id=sandbox.project_id,
            max_retry_wait=0.5,
            max_retries=2,
        ) as c,
        pytest.raises(AuthenticationError) as info,
    ):
        c.feature_flags.definitions()
    text = str(info.value)
    assert (
        "secret API key (phs_)" in text and "feature_flag:read" in text and "POSTHOG_SECRET_API_KEY" in text
    )
    assert bad not in text and bad not in repr(c)


def test_personal_key_without_scope_names_the_scope(sandbox: Sandbox) -> None:
    key = sandbox.create_personal_key(["insight:read"])
    with (
        client_for(
            sandbox,
            personal_api_key=key,
            keys="project",
            project_id=sandbox.project_id,
            max_retry_wait=0.5,
            max_retries=2,
        ) as c,
        pytest.raises(AuthenticationError) as info,
    ):
        c.feature_flags.definitions()
    assert "personal API key (phx_)" in str(info.value) and "feature_flag:read" in str(info.value)
    assert key not in str(info.value)


def test_older_self_hosted_falls_back_to_the_django_path_and_says_so(
    sandbox: Sandbox, client: Client
) -> None:
    fault = sandbox.faults.add(path="/flags/definitions*", kind="no_flags_definitions")
    sandbox.clear_requests()
    try:
        with pytest.warns(LegacyEndpointWarning, match="older self-hosted"):
            defs = client.feature_flags.definitions(refresh=True)
    finally:
        sandbox.faults.remove(fault)
    assert defs.flags
    assert _definition_requests(sandbox) == ["/flags/definitions", "/api/feature_flag/local_evaluation/"]
    cache = cached_definitions(client._core)
    assert cache is not None and cache.source == "/api/feature_flag/local_evaluation/"


def test_no_fallback_warning_when_today_s_path_answers(client: Client) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", LegacyEndpointWarning)
        client.feature_flags.definitions(refresh=True)


def test_the_secret_key_is_redacted_and_read_from_the_environment(
    sandbox: Sandbox, secret: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("POSTHOG_SECRET_API_KEY", raising=False)
    where = {
        "host": sandbox.url,
        "project_api_key": sandbox.project_api_key,
        "project_id": sandbox.project_id,
    }
    with Client.from_env(**where) as plain:
        assert plain.config.secret_api_key is None
    monkeypatch.setenv("POSTHOG_SECRET_API_KEY", secret)
    with Client.from_env(**where, progress=False) as c:
        assert c.config.secret_api_key == secret
        for text in (repr(c), repr(c.config), str(c.config.secret_api_key)):
            assert secret not in text
        assert "secret_api_key='***'" in repr(c)
        assert c.feature_flags.definitions().flags


def test_key_pattern_covers_phs() -> None:
    from analytics_nb.wire import redact

    assert redact("key phs_abcdefghijklmnop here") == "key phs_*** here"


def test_a_project_key_given_as_secret_key_is_refused(sandbox: Sandbox) -> None:
    with pytest.raises(ValueError, match="secret_api_key looks like a project API key"):
        client_for(
            sandbox,
            secret_api_key=sandbox.project_api_key,
            keys="project",
            project_id=sandbox.project_id,
            max_retry_wait=0.5,
            max_retries=2,
        )
