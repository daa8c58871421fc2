"""describe_error turns each typed client error into one plain sentence; the Panel base shows it inline."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from analytics_nb import errors
from analytics_nb.widgets import FormError, describe_error
from analytics_nb.widgets._panel import Panel
from analytics_nb.widgets.views import frame_html

URL = "http://127.0.0.1:9/api/projects/1/session_recording_playlists/abc/"


def test_missing_scope_names_the_scope() -> None:
    exc = errors.PermissionDeniedError(
        "denied",
        status=403,
        detail="API key missing required scope 'session_recording_playlist:write'",
        missing_scope="session_recording_playlist:write",
        method="PATCH",
        url=URL,
    )
    text = describe_error(exc)
    assert "missing the scope 'session_recording_playlist:write'" in text
    assert "Personal API keys" in text and "edits are kept" in text


def test_scope_is_found_in_the_detail_when_not_parsed() -> None:
    exc = errors.PermissionDeniedError("x", status=403, detail="API key missing required scope 'plugin:read'")
    assert "'plugin:read'" in describe_error(exc)


def test_cloud_refusal_of_personal_keys_is_explained() -> None:
    exc = errors.PermissionDeniedError(
        "x",
        status=403,
        detail="This action does not support personal API key access",
        method="POST",
        url=URL + "recordings/r1/",
    )
    text = describe_error(exc)
    assert "does not accept personal API keys" in text and "web app" in text
    assert "POST /api/projects/1/session_recording_playlists/abc/recordings/r1/" in text


def test_405_on_a_playlist_points_to_archive() -> None:
    exc = errors.MethodNotAllowedError("x", status=405, method="DELETE", url=URL)
    text = describe_error(exc)
    assert "(405)" in text and "Archive" in text and "Restore" in text
    other = errors.MethodNotAllowedError("x", status=405, method="PUT", url="http://h/api/other/")
    assert "PUT" in describe_error(other) and "Archive" not in describe_error(other)


def test_network_fault_says_edits_are_kept() -> None:
    text = describe_error(errors.NetworkError("reset", method="PATCH", url=URL))
    assert text.startswith("Could not reach the service") and "edits are kept" in text
    assert describe_error(httpx.ConnectError("refused")).startswith("Could not reach the service")


@pytest.mark.parametrize(
    ("exc", "needle"),
    [
        (errors.AuthenticationError("x", status=401), "(401)"),
        (errors.NotFoundError("x", status=404, url=URL), "(404)"),
        (errors.ValidationError("x", status=400, detail="Bad name", attr="name"), "field 'name': Bad name"),
        (errors.RateLimitedError("x", status=429, retry_after=12), "about 12 s"),
        (errors.ServerError("x", status=500, detail="A server error occurred."), "(500)"),
        (FormError("The filters field is not valid JSON"), "The filters field is not valid JSON"),
        (ValueError("bad input\nsecond line"), "ValueError: bad input"),
    ],
)
def test_other_errors_get_one_plain_sentence(exc: BaseException, needle: str) -> None:
    text = describe_error(exc)
    assert needle in text
    assert "\n" not in text and "Traceback" not in text


def test_no_key_from_the_url_reaches_the_message() -> None:
    exc = errors.NotFoundError("x", status=404, method="GET", url=URL + "?personal_api_key=phx_secret")
    assert "phx_secret" not in describe_error(exc)


def test_panel_shows_errors_inline_and_logs_messages() -> None:
    panel = Panel()
    ok, value = panel._attempt("working", lambda: 1 / 0, needs_client=False)
    assert (ok, value) == (False, None)
    assert isinstance(panel.last_error, ZeroDivisionError)
    assert "anb-error" in panel._status.line.value and "ZeroDivisionError" in (panel.error or "")
    assert not panel.busy
    ok, value = panel._attempt("working", lambda: 42, needs_client=False)
    assert (ok, value) == (True, 42) and panel.last_error is None
    panel.message("hello")
    assert panel._status.log.outputs[-1]["text"] == "hello\n"
    bundle = panel._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle


def test_frame_html_escapes_cells() -> None:
    import pandas as pd

    html = frame_html(pd.DataFrame({"name": ["<script>x</script>", None]}))
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_panels_refuse_an_async_client_with_a_clear_message() -> None:
    from analytics_nb import AsyncClient
    from analytics_nb.widgets import PlaylistEditor

    client = AsyncClient("http://127.0.0.1:9", personal_api_key="phx_" + "x" * 20, project_id=1)
    try:
        with pytest.raises(TypeError, match=r"needs an analytics_nb\.Client"):
            PlaylistEditor(client)
    finally:
        asyncio.run(client.close())
    with pytest.raises(TypeError, match=r"needs an analytics_nb\.Client"):
        PlaylistEditor(None)
