"""Client configuration: region presets, hosts, keys and environment variables."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from urllib.parse import urlsplit

__all__ = ["REGIONS", "ClientConfig", "config_from_env", "mask"]

# Region presets: private /api calls go to the app host, decide/flags/capture to the ingestion host.
REGIONS: dict[str, tuple[str, str]] = {
    "us": ("https://us.posthog.com", "https://us.i.posthog.com"),
    "eu": ("https://eu.posthog.com", "https://eu.i.posthog.com"),
}

ENV_VARS = (
    "POSTHOG_HOST",
    "POSTHOG_PERSONAL_API_KEY",
    "POSTHOG_PROJECT_API_KEY",
    "POSTHOG_PROJECT_ID",
    "POSTHOG_ORGANIZATION_ID",
)


def mask(secret: str | None) -> str | None:
    """How a key is shown in reprs: ``None`` or ``'***'`` (never any part of the key)."""
    return None if not secret else "***"


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
    personal_api_key: str | None = field(default=None, repr=False)
    project_api_key: str | None = field(default=None, repr=False)
    project_id: str = "@current"
    organization_id: str | None = None
    timeout: float = 30.0
    max_retries: int = 4
    retry_backoff: float = 0.5
    max_retry_wait: float = 60.0
    rate_limit: bool = False
    max_concurrency: int = 8
    progress: bool | None = None

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError(f"max_retries={self.max_retries} must be 0 or more.")
        if self.max_concurrency < 1:
            raise ValueError(f"max_concurrency={self.max_concurrency} must be at least 1.")
        if self.timeout is not None and self.timeout <= 0:
            raise ValueError(f"timeout={self.timeout} must be a positive number of seconds.")
        for name in ("personal_api_key", "project_api_key"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise ValueError(f"{name} must be a non-empty string or None.")
        pak = self.personal_api_key
        if pak is not None and pak.startswith("phc_"):
            raise ValueError(
                "personal_api_key looks like a project API key (phc_...); pass it as project_api_key= and "
                "use a personal API key (phx_...) for personal_api_key."
            )
        prk = self.project_api_key
        if prk is not None and prk.startswith("phx_"):
            raise ValueError(
                "project_api_key looks like a personal API key (phx_...); pass it as personal_api_key= and "
                "use the project API key (phc_...) for project_api_key."
            )

    @property
    def secrets(self) -> tuple[str, ...]:
        """The keys to scrub from any text the client produces."""
        return tuple(k for k in (self.personal_api_key, self.project_api_key) if k)

    def __repr__(self) -> str:
        return (
            f"ClientConfig(app_url={self.app_url!r}, ingest_url={self.ingest_url!r}, "
            f"personal_api_key={mask(self.personal_api_key)!r}, "
            f"project_api_key={mask(self.project_api_key)!r}, "
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
        ("POSTHOG_PROJECT_ID", "project_id"),
        ("POSTHOG_ORGANIZATION_ID", "organization_id"),
    ):
        value = env.get(var)
        if value:
            kwargs[name] = value.strip()
    kwargs.update({k: v for k, v in overrides.items()})
    return kwargs
