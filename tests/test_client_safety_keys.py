"""Issue 12 finding 5: the personal key never appears in a log record of any logger, in an exception, or in
a local variable of the request path; it is validated (stripped, ASCII only) at construction."""

from __future__ import annotations

import asyncio
import logging
import pickle
import traceback
from collections.abc import Iterator
from typing import Any

import pytest

from _local_http import local_server
from analytics_nb import AsyncClient, Client
from analytics_nb.client._transport import aiohttp_available
from analytics_nb.errors import NetworkError, NotFoundError, PostHogError


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def text(self) -> str:
        formatter = logging.Formatter("%(name)s %(message)s")
        return "\n".join(formatter.format(r) + repr(r.args) for r in self.records)


@pytest.fixture
def debug_logs() -> Iterator[_Collect]:
    """A DEBUG handler on the root logger and one directly on ``httpcore.http11`` (a child logger)."""
    handler = _Collect()
    root = logging.getLogger()
    child = logging.getLogger("httpcore.http11")
    old_level, old_child = root.level, child.level
    root.setLevel(logging.DEBUG)
    child.setLevel(logging.DEBUG)
    root.addHandler(handler)
    child.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        child.removeHandler(handler)
        root.setLevel(old_level)
        child.setLevel(old_child)


def _all_text(exc: BaseException) -> str:
    parts = ["".join(traceback.format_exception(exc)), repr(exc), repr(exc.args), str(exc)]
    parts += [repr(v) for v in vars(exc).values()]
    for value in vars(exc).values():
        request = getattr(value, "request", None)
        if request is not None:
            parts.append(repr(dict(request.headers)))
    cause = exc.__cause__ or exc.__context__
    while cause is not None:
        parts.append(repr(cause) + repr(getattr(cause, "args", ())))
        request = getattr(cause, "_request", None) or getattr(cause, "request", None)
        if request is not None:
            parts.append(repr(dict(request.headers)))
        cause = cause.__cause__ or cause.__context__
    return "\n".join(parts)


TRANSPORTS = [
    "httpx",
    pytest.param("aiohttp", marks=pytest.mark.skipif(not aiohttp_available(), reason="fast")),
]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_key_pasted_with_a_newline_is_stripped_and_never_logged(
    empty_sandbox: Any, debug_logs: _Collect, transport: str
) -> None:
    key = empty_sandbox.personal_api_key
    for name in ("aiohttp", "aiohttp.client", "aiohttp.internal"):
        logging.getLogger(name).setLevel(logging.DEBUG)
    with Client(
        empty_sandbox.url,
        personal_api_key=key + "\n",
        max_retries=0,
        progress=False,
        http_transport=transport,
    ) as client:
        assert isinstance(client.playlists.list(), list)  # the stripped key works
        assert client.core.transport_name == transport
    # the HTTP libraries really logged (httpcore under httpx's transport, httpx itself over aiohttp's)
    logger = "httpcore" if transport == "httpx" else "httpx"
    assert any(r.name.startswith(logger) for r in debug_logs.records)
    assert key not in debug_logs.text()
    assert key[4:] not in debug_logs.text()


def test_every_http_logger_redacts_even_child_loggers(debug_logs: _Collect) -> None:
    with Client("us", personal_api_key="phx_" + "k" * 20 + "TAIL", project_api_key="phc_" + "p" * 24):
        # whatever a library logs on a child logger (a header value quoted in an exception, a URL with
        # token=...), a handler placed directly on that logger sees it scrubbed
        logging.getLogger("httpcore.http11").debug("failed: Bearer %s", "phx_" + "k" * 20 + "TAIL")
        logging.getLogger("httpcore.connection").debug("url ?token=%s", "phc_" + "p" * 24)
    text = debug_logs.text()
    assert "kkkkTAIL" not in text and "pppppp" not in text


@pytest.mark.parametrize(
    "bad",
    [
        "phx_abc\u00a0def123456789",  # non-breaking space inside
        "\u201cphx_abcdef123456789\u201d",  # curly quotes around
        "phx_abc def123456789",  # a space inside
        "phx_abc\ndef123456789",
    ],
)
def test_non_ascii_or_broken_key_is_refused_without_echoing_it(bad: str) -> None:
    with pytest.raises(ValueError) as info:
        Client("us", personal_api_key=bad)
    text = _all_text(info.value)
    assert "abcdef" not in text.replace("\u00a0", "").replace(" ", "").replace("\n", "")
    assert "def123" not in text
    assert "copy the key again" in str(info.value)


def test_secret_key_repr_is_masked_and_it_is_not_picklable() -> None:
    from analytics_nb.client._config import SecretKey

    key = SecretKey("  phx_secretVALUE1234567890\n")
    assert repr(key) == str(key) == "SecretKey('phx_***')"
    assert key == "phx_secretVALUE1234567890" and key.reveal() == "phx_secretVALUE1234567890"
    with pytest.raises(TypeError):
        pickle.dumps(key)
    with Client("us", personal_api_key=" phx_secretVALUE1234567890 ") as client:
        assert "secretVALUE" not in repr(client.config.personal_api_key)
        assert "secretVALUE" not in repr(vars(client._core))


def test_broken_gzip_answer_is_a_package_error_without_the_request_or_key() -> None:
    key = "phx_gzipSECRET1234567890abcdef"
    routes: dict[str, Any] = {
        "/api/projects/1/session_recording_playlists/": (
            200,
            {"Content-Type": "application/json", "Content-Encoding": "gzip"},
            b"this is not gzip at all",
        )
    }
    with (
        local_server(routes) as server,
        Client(server.url, personal_api_key=key, project_id=1, max_retries=0) as client,
        pytest.raises(PostHogError) as info,
    ):
        client.playlists.list()
    assert isinstance(info.value, NetworkError)
    assert "compressed" in str(info.value)
    text = _all_text(info.value)
    assert "gzipSECRET" not in text and "Bearer" not in text
    assert info.value.__cause__ is None and info.value.__context__ is None
    assert server.requests[0][2].get("Authorization") == f"Bearer {key}"  # it really was sent


def _frame_locals(exc: BaseException) -> list[str]:
    texts: list[str] = []
    tb = exc.__traceback__
    while tb is not None:
        if "analytics_nb" not in tb.tb_frame.f_code.co_filename:  # the package's frames, not the test's
            tb = tb.tb_next
            continue
        for name, value in tb.tb_frame.f_locals.items():
            texts.append(f"{tb.tb_frame.f_code.co_name}:{name}={value!r}")
        tb = tb.tb_next
    return texts


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_request_path_locals_never_hold_the_key(empty_sandbox: Any, transport: str) -> None:
    key = empty_sandbox.personal_api_key

    async def go() -> list[BaseException]:
        caught: list[BaseException] = []
        async with AsyncClient(
            empty_sandbox.url, personal_api_key=key, max_retries=0, progress=False, http_transport=transport
        ) as client:
            try:
                await client.playlists.get("nOtThErE")
            except NotFoundError as exc:
                caught.append(exc)
        async with AsyncClient(
            "http://127.0.0.1:9",
            personal_api_key=key,
            max_retries=0,
            progress=False,
            http_transport=transport,
        ) as client:
            try:
                await client.playlists.list()
            except NetworkError as exc:
                caught.append(exc)
        return caught

    errors = asyncio.run(go())
    assert len(errors) == 2
    for exc in errors:
        local_text = "\n".join(_frame_locals(exc))
        assert "request" in local_text  # the request path's frames were inspected
        assert key not in local_text and key[4:] not in local_text
        assert key not in _all_text(exc)


MALFORMED = [
    "\u201cphx_localsSECRET1234567890\u201d",  # curly quotes around
    "phx_localsSECRET12345\r\n67890",  # a line break inside
    "'phx_localsSECRET1234567890'",  # straight quotes around
]


def _every_frame_local(exc: BaseException) -> str:
    """The repr of every local of every frame of the traceback (what ``pytest -l`` and ``%xmode Verbose``
    print), the test's own frames left out."""
    texts: list[str] = []
    tb = exc.__traceback__
    while tb is not None:
        if "analytics_nb" in tb.tb_frame.f_code.co_filename:
            texts += [f"{name}={value!r}" for name, value in tb.tb_frame.f_locals.items()]
        tb = tb.tb_next
    return "\n".join(texts)


@pytest.mark.parametrize("bad", MALFORMED)
@pytest.mark.parametrize("where", ["personal_api_key", "project_api_key"])
def test_a_malformed_key_never_sits_in_a_frames_locals(bad: str, where: str, monkeypatch: Any) -> None:
    """Issue 27 #6: the key was a local of 7 frames (``Client.__init__``, ``_config``, ``SecretKey``,
    ``check_key``...), printed by ``pytest -l`` and ``%xmode Verbose``."""
    monkeypatch.delenv("ANALYTICS_NB_FULL_TRACEBACK", raising=False)
    calls = [
        lambda: Client("us", **{where: bad}),
        lambda: AsyncClient("us", **{where: bad}),
        lambda: Client.from_env(**{where: bad}),
    ]
    for call in calls:
        with pytest.raises(ValueError, match="copy the key again") as info:
            call()
        texts = _every_frame_local(info.value)
        assert "localsSECRET" not in texts
        summary = traceback.TracebackException.from_exception(info.value, capture_locals=True)
        assert "Traceback" in "".join(summary.format())  # formatting with locals works (half-built repr)
        ours = [frame for frame in summary.stack if "analytics_nb" in frame.filename]
        assert "localsSECRET" not in repr([frame.locals for frame in ours])


def test_a_malformed_key_never_sits_in_locals_even_with_full_tracebacks(monkeypatch: Any) -> None:
    monkeypatch.setenv("ANALYTICS_NB_FULL_TRACEBACK", "1")
    with pytest.raises(ValueError) as info:
        Client("us", personal_api_key=MALFORMED[0], project_api_key=MALFORMED[1].replace("phx", "phc"))
    assert "_config.py" in "".join(traceback.format_exception(info.value))  # every frame kept
    assert "localsSECRET" not in _every_frame_local(info.value)


def test_repr_of_a_half_built_client_is_safe() -> None:
    for cls in (Client, AsyncClient):
        half = cls.__new__(cls)
        assert repr(half) == f"<{cls.__name__}: not configured>"
