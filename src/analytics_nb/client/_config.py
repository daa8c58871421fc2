"""Client configuration: region presets, hosts, keys and environment variables."""

from __future__ import annotations

import hmac
import os
import unicodedata
import weakref
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

__all__ = ["REGIONS", "ClientConfig", "SecretKey", "check_key", "config_from_env", "live_secrets", "mask"]

# Region presets: private /api calls go to the app host, decide/flags/capture to the ingestion host.
REGIONS: dict[str, tuple[str, str]] = {
    "us": ("https://us.posthog.com", "https://us.i.posthog.com"),
    "eu": ("https://eu.posthog.com", "https://eu.i.posthog.com"),
}

ENV_VARS = (
    "POSTHOG_HOST",
    "POSTHOG_PERSONAL_API_KEY",
    "POSTHOG_SECRET_API_KEY",
    "POSTHOG_PROJECT_API_KEY",
    "POSTHOG_PROJECT_ID",
    "POSTHOG_ORGANIZATION_ID",
)


def mask(secret: object) -> str | None:
    """How a key is shown in reprs: ``None`` or ``'***'`` (never any part of the key)."""
    return None if not secret else "***"


_LIVE: weakref.WeakSet[SecretKey] = weakref.WeakSet()


def live_secrets() -> tuple[str, ...]:
    """The values of every ``SecretKey`` alive in this process (the log filter scrubs them all)."""
    return tuple(k.reveal() for k in list(_LIVE))


def check_key(value: object, name: str) -> str:
    """A key as sent on the wire: surrounding whitespace (a pasted newline, a non-breaking space) stripped,
    then only visible ASCII allowed. The error never repeats the key, only the position and kind of the bad
    character: a header cannot carry anything else, and an encoder error would quote the whole key."""
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a string such as 'phx_...', not {type(value).__name__}.")
    text = value.strip()
    if not text:
        raise ValueError(f"{name} must be a non-empty string or None.")
    for position, char in enumerate(text):
        if not "\x21" <= char <= "\x7e":
            what = unicodedata.name(char, f"U+{ord(char):04X}") if char != " " else "SPACE"
            raise ValueError(
                f"{name} contains a character that cannot be part of a key (character {position + 1} of "
                f"{len(text)}: {what}), typically a non-breaking space, a curly quote or a line break picked "
                "up while copying; copy the key again from PostHog (Settings > Personal API keys) as plain "
                "text."
            )
    return text


class SecretKey:
    """A personal API key held so that it never shows: ``repr``/``str`` give ``SecretKey('phx_***')``.

    ``reveal()`` returns the key for the one place that needs it (the Authorization header, built by the
    client's httpx ``Auth`` when a request is sent). It compares equal to the same key given as text.
    """

    __slots__ = ("__weakref__", "_value")

    def __init__(self, value: str, *, name: str = "personal_api_key") -> None:
        self._value = check_key(value, name)
        _LIVE.add(self)

    def reveal(self) -> str:
        """The key itself (keep it out of variables that tracebacks and debuggers show)."""
        return self._value

    def bearer(self) -> str:
        """The value of the ``Authorization`` header."""
        return "Bearer " + self._value

    @property
    def prefix(self) -> str:
        """The public kind prefix (``phx_``), or ``''``."""
        head, sep, _rest = self._value.partition("_")
        return head + sep if sep and len(head) <= 4 else ""

    def __repr__(self) -> str:
        return f"SecretKey('{self.prefix}***')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SecretKey):
            other = other._value
        if not isinstance(other, str):
            return NotImplemented
        return hmac.compare_digest(self._value.encode(), other.strip().encode("utf-8", "replace"))

    def __hash__(self) -> int:
        return hash((SecretKey, self._value))

    def __bool__(self) -> bool:
        return True

    def __copy__(self) -> SecretKey:
        return self  # immutable: copies (dataclasses.asdict, copy.deepcopy of a config) share it

    def __deepcopy__(self, memo: dict[int, Any]) -> SecretKey:
        return self

    def __reduce__(self) -> Any:
        raise TypeError("a SecretKey cannot be pickled; pass the key again where it is needed.")


def resolve_hosts(host: str) -> tuple[str, str]:
    """Return ``(app_url, ingest_url)`` for a region preset ("us"/"eu") or one self-hosted base URL."""
    if not isinstance(host, str) or not host.strip():
        raise ValueError("host must be 'us', 'eu' or a base URL such as 'https://posthog.example.com'.")
    key = host.strip().lower()
    if key in REGIONS:
        return REGIONS[key]
    url = host.strip().rstrip("/")
    if "://" not in url:
        raise ValueError(
            f"host={host!r} is neither a region preset ('us', 'eu') nor a URL; "
            "pass e.g. host='https://posthog.example.com'."
        )
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"host={host!r} must be an http(s) URL such as 'https://posthog.example.com'.")
    # The cloud hosts given by URL get the matching split too.
    for app, ingest in REGIONS.values():
        if url in (app, ingest):
            return app, ingest
    if parts.netloc == "app.posthog.com":
        return REGIONS["us"]
    return url, url


@dataclass(frozen=True)
class ClientConfig:
    """Everything a client needs; keys are hidden from ``repr``."""

    app_url: str
    ingest_url: str
    personal_api_key: SecretKey | None = field(default=None, repr=False)
    project_api_key: str | None = field(default=None, repr=False)
    secret_api_key: SecretKey | None = field(default=None, repr=False)
    """A Project Secret API Key (``phs_...``, scope ``feature_flag:read``; PostHog #63111, #66174): what
    today's PostHog wants for flag definitions (``/flags/definitions``) instead of a personal key."""
    project_id: str = "@current"
    organization_id: str | None = None
    timeout: float = 30.0
    max_retries: int = 4
    retry_backoff: float = 0.5
    max_retry_wait: float = 60.0
    rate_limit: bool = False
    max_concurrency: int = 8
    progress: bool | None = None
    http_transport: str = "auto"
    """``"auto"`` (aiohttp's connector when the ``fast`` extra is installed, else httpx's), ``"aiohttp"`` or
    ``"httpx"``: the connection layer under httpx (see ``client/_transport.py``)."""

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError(f"max_retries={self.max_retries} must be 0 or more.")
        if self.max_concurrency < 1:
            raise ValueError(f"max_concurrency={self.max_concurrency} must be at least 1.")
        if self.http_transport not in ("auto", "aiohttp", "httpx"):
            raise ValueError(
                f"http_transport={self.http_transport!r} must be 'auto', 'aiohttp' (the 'fast' extra) "
                "or 'httpx'."
            )
        if self.timeout is not None and self.timeout <= 0:
            raise ValueError(f"timeout={self.timeout} must be a positive number of seconds.")
        pak = self.personal_api_key
        if pak is not None and not isinstance(pak, SecretKey):
            pak = SecretKey(pak)  # whitespace stripped, non-ASCII refused without echoing the key
            object.__setattr__(self, "personal_api_key", pak)
        sak = self.secret_api_key
        if sak is not None and not isinstance(sak, SecretKey):
            sak = SecretKey(sak, name="secret_api_key")
            object.__setattr__(self, "secret_api_key", sak)
        if sak is not None and sak.prefix == "phc_":
            raise ValueError(
                "secret_api_key looks like a project API key (phc_...); use the project's secret API key "
                "(phs_..., Project settings > Secret API keys, scope feature_flag:read)."
            )
        prk = self.project_api_key
        if prk is not None:
            prk = check_key(prk, "project_api_key")
            object.__setattr__(self, "project_api_key", prk)
        if pak is not None and pak.prefix == "phc_":
            raise ValueError(
                "personal_api_key looks like a project API key (phc_...); pass it as project_api_key= and "
                "use a personal API key (phx_...) for personal_api_key."
            )
        if prk is not None and prk.startswith("phx_"):
            raise ValueError(
                "project_api_key looks like a personal API key (phx_...); pass it as personal_api_key= and "
                "use the project API key (phc_...) for project_api_key."
            )

    @property
    def secrets(self) -> tuple[SecretKey | str, ...]:
        """The keys to scrub from any text the client produces (``errors.redact`` reads both forms)."""
        return tuple(k for k in (self.personal_api_key, self.secret_api_key, self.project_api_key) if k)

    def __repr__(self) -> str:
        return (
            f"ClientConfig(app_url={self.app_url!r}, ingest_url={self.ingest_url!r}, "
            f"personal_api_key={mask(self.personal_api_key)!r}, "
            f"project_api_key={mask(self.project_api_key)!r}, "
            f"secret_api_key={mask(self.secret_api_key)!r}, "
            f"project_id={self.project_id!r}, organization_id={self.organization_id!r})"
        )


def config_from_env(environ: dict[str, str] | None = None, **overrides: object) -> dict[str, object]:
    """Read the ``POSTHOG_*`` variables into Client keyword arguments (explicit overrides win)."""
    env = os.environ if environ is None else environ
    kwargs: dict[str, object] = {}
    host = env.get("POSTHOG_HOST")
    if host:
        kwargs["host"] = host
    for var, name in (
        ("POSTHOG_PERSONAL_API_KEY", "personal_api_key"),
        ("POSTHOG_PROJECT_API_KEY", "project_api_key"),
        ("POSTHOG_SECRET_API_KEY", "secret_api_key"),
        ("POSTHOG_PROJECT_ID", "project_id"),
        ("POSTHOG_ORGANIZATION_ID", "organization_id"),
    ):
        value = env.get(var)
        if value and value.strip():
            kwargs[name] = value.strip()
    kwargs.update({k: v for k, v in overrides.items()})
    return kwargs
