"""Client configuration, hosts, env, reprs and the sync facade's shape (no server needed)."""

from __future__ import annotations

import inspect

import pytest

from analytics_nb import AsyncClient, Client
from analytics_nb.client._config import resolve_hosts
from analytics_nb.errors import AuthenticationError

KEY = "phx_SECRETsecret1234567890abcd"
PKEY = "phc_PROJECTproject1234567890"


def test_region_presets_split_app_and_ingestion_hosts() -> None:
    assert resolve_hosts("us") == ("https://us.posthog.com", "https://us.i.posthog.com")
    assert resolve_hosts("EU") == ("https://eu.posthog.com", "https://eu.i.posthog.com")
    assert resolve_hosts("https://eu.i.posthog.com/") == (
        "https://eu.posthog.com",
        "https://eu.i.posthog.com",
    )


def test_self_hosted_uses_one_host_for_everything() -> None:
    assert resolve_hosts("https://posthog.example.com/") == (
        "https://posthog.example.com",
        "https://posthog.example.com",
    )


@pytest.mark.parametrize("bad", ["", "mars", "ftp://x.example.com", "https://"])
def test_bad_host_names_the_field_and_the_fix(bad: str) -> None:
    with pytest.raises(ValueError, match="host"):
        resolve_hosts(bad)


def test_keys_given_in_the_wrong_slot_are_refused() -> None:
    with pytest.raises(ValueError, match="project_api_key="):
        Client("us", personal_api_key=PKEY)
    with pytest.raises(ValueError, match="personal_api_key="):
        Client("us", project_api_key=KEY)


def test_from_env_reads_every_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POSTHOG_HOST", "eu")
    monkeypatch.setenv("POSTHOG_PERSONAL_API_KEY", KEY)
    monkeypatch.setenv("POSTHOG_PROJECT_API_KEY", PKEY)
    monkeypatch.setenv("POSTHOG_PROJECT_ID", "4242")
    monkeypatch.setenv("POSTHOG_ORGANIZATION_ID", "0190-org")
    with Client.from_env(max_retries=1) as client:
        cfg = client.config
        assert (cfg.app_url, cfg.ingest_url) == ("https://eu.posthog.com", "https://eu.i.posthog.com")
        assert cfg.personal_api_key == KEY and cfg.project_api_key == PKEY
        assert (cfg.project_id, cfg.organization_id, cfg.max_retries) == ("4242", "0190-org", 1)


def test_defaults_to_current_project(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("POSTHOG_HOST", "POSTHOG_PROJECT_ID", "POSTHOG_PERSONAL_API_KEY", "POSTHOG_PROJECT_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    client = AsyncClient.from_env()
    assert client.project_id == "@current"
    assert client.config.app_url == "https://us.posthog.com"


def test_keys_never_appear_in_reprs() -> None:
    with Client("us", personal_api_key=KEY, project_api_key=PKEY) as client:
        texts = [repr(client), str(client), repr(client.config), repr(client._core), repr(client.playlists)]
        for text in texts:
            assert KEY not in text and PKEY not in text
            assert "SECRET" not in text and "PROJECT" not in text
        assert "personal_api_key='***'" in repr(client)


def test_sync_facade_keeps_signatures_docs_and_sync_return_types() -> None:
    with Client("us", personal_api_key=KEY) as client:
        sig = inspect.signature(client.decide)
        assert list(sig.parameters)[:2] == ["distinct_id", "groups"]
        assert sig.return_annotation == "DecideResponse"
        assert "X-Forwarded-For" in (client.decide.__doc__ or "")
        iter_sig = inspect.signature(client.playlists.iter)
        assert iter_sig.return_annotation == "Iterator[Playlist]"
        assert not inspect.iscoroutinefunction(client.playlists.list)
        assert inspect.iscoroutinefunction(AsyncClient("us").playlists.list)


def test_api_call_without_personal_key_says_what_to_set() -> None:
    with Client("http://127.0.0.1:9", max_retries=0) as client, pytest.raises(AuthenticationError) as info:
        client.playlists.list()
    assert "POSTHOG_PERSONAL_API_KEY" in str(info.value)


def test_closed_client_refuses_calls_and_close_is_idempotent() -> None:
    client = Client("us", personal_api_key=KEY)
    client.close()
    client.close()
    assert client.closed
    with pytest.raises(RuntimeError, match="closed"):
        client.playlists.list()


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"page_size": 501}, "page_size"),
        ({"order": "id"}, "order"),
        ({"type": "static"}, "type"),
        ({"user": False}, "user"),
        ({"collection_type": "mine"}, "collection_type"),
        ({"created_by": "bob"}, "created_by"),
        ({"creator": 1}, "unknown playlist filter"),
        ({"date_from": 5}, "date_from"),
        ({"max_items": -1}, "max_items"),
    ],
)
def test_bad_list_filters_are_refused_before_any_request(kwargs: dict[str, object], field: str) -> None:
    with (
        Client("http://127.0.0.1:9", personal_api_key=KEY, max_retries=0) as client,
        pytest.raises(ValueError, match=field),
    ):
        client.playlists.list(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("host", "fix"),
    [
        ("eu.posthog.com", "host='eu'"),
        ("us.i.posthog.com/", "host='us'"),
        ("app.posthog.com", "host='us'"),
        ("http://eu.posthog.com", "host='eu' (https://eu.posthog.com)"),
        ("http://us.i.posthog.com", "host='us'"),
        ("https://eu.posthog.com/project/12345/replay", "host='eu'"),
        ("posthog.example.com", "host='https://posthog.example.com'"),
        ("localhost:8000", "host='https://localhost:8000'"),
        ("europe", "'us' or 'eu'"),
    ],
)
def test_bad_hosts_name_the_fix(host: str, fix: str) -> None:
    """Issue 29 #4: a host without a scheme, plain http for PostHog Cloud and an app page's address are
    refused with the value to pass instead (a Cloud host name suggests its region preset)."""
    with pytest.raises(ValueError) as info:
        resolve_hosts(host)
    assert fix in str(info.value)


def test_cloud_hosts_given_as_https_urls_get_their_region() -> None:
    assert resolve_hosts("https://EU.posthog.com") == resolve_hosts("eu")
    assert resolve_hosts("https://app.posthog.com/") == resolve_hosts("us")
    assert resolve_hosts("https://eu.posthog.com:443") == resolve_hosts("eu")
    assert resolve_hosts("http://localhost:8000/") == ("http://localhost:8000", "http://localhost:8000")


def test_the_sync_client_takes_the_async_clients_parameters_written_once() -> None:
    """Issue 24: the constructor's parameter list is written once (``AsyncApiClient.__init__``); the sync
    client shows the same signature and passes everything on, so a new option cannot be missed on one."""
    import ast
    from pathlib import Path

    from analytics_nb.client import ApiClient, AsyncApiClient

    assert inspect.signature(ApiClient) == inspect.signature(AsyncApiClient)
    assert inspect.signature(Client) == inspect.signature(AsyncClient)
    source = Path(inspect.getfile(ApiClient)).read_text(encoding="utf-8")
    inits = [
        len(node.args.kwonlyargs)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef) and node.name == "__init__"
    ]
    assert inits == [15]  # ApiClient's is generated from it (client/_sync_api.py)
    generated = Path(inspect.getfile(ApiClient.__init__)).read_text(encoding="utf-8")
    assert generated.startswith("# Generated by scripts/generate_sync.py")
    with pytest.raises(TypeError, match="max_retry"):
        Client("http://127.0.0.1:9", max_retry=3)
