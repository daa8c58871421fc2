"""Client configuration: region presets, hosts, keys and environment variables."""

from __future__ import annotations

import hmac
import os
import unicodedata
import weakref
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "CLOUD_HOSTS",
    "REGIONS",
    "ClientConfig",
    "HeldKey",
    "SecretKey",
    "check_key",
    "config_from_env",
    "hold_key",
    "host_problem",
    "key_problem",
    "live_secrets",
    "mask",
]

# Region presets: private /api calls go to the app host, decide/flags/capture to the ingestion host.
REGIONS: dict[str, tuple[str, str]] = {
    "us": ("https://us.posthog.com", "https://us.i.posthog.com"),
    "eu": ("https://eu.posthog.com", "https://eu.i.posthog.com"),
}

KEY_ARGUMENTS = frozenset({"personal_api_key", "project_api_key", "secret_api_key"})
"""The constructor arguments that carry a key (wrapped in a ``HeldKey`` on the way in)."""

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


class HeldKey:
    """A key exactly as given (not yet checked), wrapped the moment it enters the client so that no frame of
    the constructor holds it as text: ``pytest -l``, ``%xmode Verbose`` and rich tracebacks print a frame's
    locals, and a malformed key (a curly quote, a line break) fails its check inside those frames."""

    __slots__ = ("_text",)

    def __init__(self, text: object) -> None:
        self._text = text

    def reveal(self) -> object:
        """The value as given (for the check, and for the ``SecretKey`` made from it)."""
        return self._text

    def __repr__(self) -> str:
        return "<key hidden>"

    __str__ = __repr__

    def __reduce__(self) -> Any:
        raise TypeError("a key cannot be pickled; pass it again where it is needed.")


def hold_key(value: Any) -> Any:
    """``value`` wrapped in a ``HeldKey`` when it is a key given as text (anything else as it is)."""
    return HeldKey(value) if isinstance(value, str) else value


_QUOTES = frozenset("\"'`")


def key_problem(held: object, name: str) -> str | None:
    """Why ``held`` (a ``HeldKey``, text or anything given) cannot be a key, or None when it can. The
    sentence never repeats the key, only the position and kind of the bad character: a header cannot carry
    anything else, and an encoder error would quote the whole key. The caller raises (so the frame that
    raises holds only the wrapped key)."""
    value = held.reveal() if isinstance(held, HeldKey | SecretKey) else held
    if not isinstance(value, str):
        return f"{name} must be a string such as 'phx_...', not {type(value).__name__}."
    text = value.strip()
    if not text:
        return f"{name} must be a non-empty string or None."
    for position, char in enumerate(text):
        if char in _QUOTES or not "\x21" <= char <= "\x7e":
            what = unicodedata.name(char, f"U+{ord(char):04X}") if char != " " else "SPACE"
            return (
                f"{name} contains a character that cannot be part of a key (character {position + 1} of "
                f"{len(text)}: {what}), typically a quote, a space, a non-breaking space or a line break "
                "picked up while copying; copy the key again from PostHog (Settings > Personal API keys) "
                "as plain text, without quotes."
            )
    return None


def check_key(value: object, name: str) -> str:
    """A key as sent on the wire: surrounding whitespace (a pasted newline, a non-breaking space) stripped,
    then only visible ASCII without quotes allowed (``key_problem`` says why not)."""
    held = value if isinstance(value, HeldKey) else HeldKey(value)
    del value  # from here on only the wrapped key is a local of this frame
    problem = key_problem(held, name)
    if problem is not None:
        raise ValueError(problem)
    return str(held.reveal()).strip()


class SecretKey:
    """A personal API key held so that it never shows: ``repr``/``str`` give ``SecretKey('phx_***')``.

    ``reveal()`` returns the key for the one place that needs it (the Authorization header, built by the
    client's httpx ``Auth`` when a request is sent). It compares equal to the same key given as text.
    """

    __slots__ = ("__weakref__", "_value")

    def __init__(self, value: str | HeldKey, *, name: str = "personal_api_key") -> None:
        held = value if isinstance(value, HeldKey) else HeldKey(value)
        del value  # a malformed key fails below: no frame of the traceback may hold it as text
        self._value = check_key(held, name)
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
        if not hasattr(self, "_value"):  # half-built: its check failed (a traceback with locals shows it)
            return "SecretKey(<not set>)"
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


#: Host names of PostHog Cloud -> the region preset that serves them (app and ingestion hosts).
CLOUD_HOSTS: dict[str, str] = {
    "us.posthog.com": "us",
    "us.i.posthog.com": "us",
    "app.posthog.com": "us",
    "eu.posthog.com": "eu",
    "eu.i.posthog.com": "eu",
}


def _region_of(netloc: str) -> str | None:
    """The region preset of a PostHog Cloud host name (``eu.posthog.com`` -> ``"eu"``), else None."""
    name = netloc.lower().rsplit("@", 1)[-1].split(":", 1)[0]
    if name in CLOUD_HOSTS:
        return CLOUD_HOSTS[name]
    if name.endswith(".posthog.com"):  # another Cloud name (e.g. us-assets.i.posthog.com): by its first label
        label = name.split(".", 1)[0].split("-", 1)[0]
        return label if label in REGIONS else "us"
    return None


def host_problem(host: object) -> str | None:
    """Why ``host`` cannot be used, naming the fix (a region preset for a Cloud host name), or None."""
    if not isinstance(host, str) or not host.strip():
        return (
            "host must be 'us' or 'eu' (PostHog Cloud) or a base URL such as 'https://posthog.example.com'."
        )
    url = host.strip().rstrip("/")
    if url.lower() in REGIONS:
        return None
    if "://" not in url:
        region = _region_of(url.split("/", 1)[0])
        if region is not None:
            return f"host={host!r} is a PostHog Cloud address without https://; pass host={region!r}."
        if "." in url or ":" in url:
            return f"host={host!r} has no scheme; pass host='https://{url}' (or 'us'/'eu' for PostHog Cloud)."
        return f"host={host!r} is not a region; pass 'us' or 'eu' (PostHog Cloud) or a URL such as 'https://...'."
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return f"host={host!r} must be an http(s) URL such as 'https://posthog.example.com', or 'us'/'eu'."
    region = _region_of(parts.netloc)
    if region is not None and parts.scheme == "http":
        return (
            f"host={host!r} is PostHog Cloud over plain http, which would send your key unencrypted; pass "
            f"host={region!r} (https://{region}.posthog.com)."
        )
    if region is not None and parts.path not in ("", "/"):
        return (
            f"host={host!r} is a page of the PostHog app, not the API's base address; pass host={region!r} "
            "(and project_id= the number after /project/ in that address)."
        )
    return None


def resolve_hosts(host: str) -> tuple[str, str]:
    """Return ``(app_url, ingest_url)`` for a region preset ("us"/"eu") or one self-hosted base URL; a Cloud
    address given as a URL gets its region's split too. A host that cannot be used is a ``ValueError``
    naming the fix (``host_problem``)."""
    problem = host_problem(host)
    if problem is not None:
        raise ValueError(problem)
    url = host.strip().rstrip("/")
    if url.lower() in REGIONS:
        return REGIONS[url.lower()]
    region = _region_of(urlsplit(url).netloc)
    if region is not None:
        return REGIONS[region]
    return url, url


#: The default cap on one answer's body (``max_answer_bytes``): 100 MiB, far above any page or flag set a
#: PostHog project answers, far below what would exhaust a notebook's memory.
DEFAULT_MAX_ANSWER_BYTES = 100 * 2**20


@dataclass(frozen=True)
class ClientConfig:
    """Everything a client needs; keys are hidden from ``repr``."""

    app_url: str
    ingest_url: str
    personal_api_key: SecretKey | None = field(default=None, repr=False)
    project_api_key: str | None = field(default=None, repr=False)
    """The project key (``phc_...``), checked like the personal key (given as text or as a ``HeldKey``)."""
    secret_api_key: SecretKey | None = field(default=None, repr=False)
    """A Project Secret API Key (``phs_...``, scope ``feature_flag:read``; PostHog #63111, #66174): what
    today's PostHog wants for flag definitions (``/flags/definitions``) instead of a personal key."""
    project_id: str = "@current"
    organization_id: str | None = None
    timeout: float = 30.0
    """Seconds one attempt may take as a whole: connecting, sending, and reading the whole answer (a server
    trickling bytes is cut off at this deadline, not only one that goes silent)."""
    max_retries: int = 4
    retry_backoff: float = 0.5
    max_retry_wait: float = 60.0
    rate_limit: bool = False
    max_concurrency: int = 8
    progress: bool | None = None
    max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES
    """The largest answer body read, in bytes (after decompression); a larger one is refused with an error
    naming its size, so one answer never holds more memory than this."""
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
        if isinstance(self.max_answer_bytes, bool) or not isinstance(self.max_answer_bytes, int):
            raise ValueError(f"max_answer_bytes={self.max_answer_bytes!r} must be a whole number of bytes.")
        if self.max_answer_bytes < 1024:
            raise ValueError(f"max_answer_bytes={self.max_answer_bytes} must be at least 1024 bytes.")
        if self.timeout is not None and self.timeout <= 0:
            raise ValueError(f"timeout={self.timeout} must be a positive number of seconds.")
        # The keys are read from self, never bound to a local before their check (see ``HeldKey``).
        if self.personal_api_key is not None and not isinstance(self.personal_api_key, SecretKey):
            # whitespace stripped, non-ASCII and quotes refused without echoing the key
            object.__setattr__(self, "personal_api_key", SecretKey(self.personal_api_key))
        if self.secret_api_key is not None and not isinstance(self.secret_api_key, SecretKey):
            object.__setattr__(self, "secret_api_key", SecretKey(self.secret_api_key, name="secret_api_key"))
        if self.secret_api_key is not None and self.secret_api_key.prefix == "phc_":
            raise ValueError(
                "secret_api_key looks like a project API key (phc_...); use the project's secret API key "
                "(phs_..., Project settings > Secret API keys, scope feature_flag:read)."
            )
        if self.project_api_key is not None:
            object.__setattr__(self, "project_api_key", check_key(self.project_api_key, "project_api_key"))
        pak, prk = self.personal_api_key, self.project_api_key
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
            kwargs[name] = hold_key(value.strip()) if name in KEY_ARGUMENTS else value.strip()
    kwargs.update({k: hold_key(v) if k in KEY_ARGUMENTS else v for k, v in overrides.items()})
    return kwargs
