"""The one way tests build an ``analytics_nb.Client``: on a sandbox (its keys and ids) or on a local fake
server's URL, with the test defaults (no progress bars, fast retries) and the options a test names.

``client_for(sb)`` gives the sandbox's personal and project keys; ``keys="personal"`` / ``"project"`` gives
one of them (the other is resolved or absent, as a test of that path needs); ``ids=True`` passes the sandbox's
project and organization ids (else ``@current`` and the organization are resolved from the service). A key
given as the second argument replaces the personal key (a test of another user or a bad key). Any other
keyword goes to ``Client`` and wins over the defaults. ``tests/conftest.py`` has the ``sandbox_client``
fixture, which closes what it made.
"""

from __future__ import annotations

from typing import Any, Literal

from analytics_nb import Client
from analytics_nb.sandbox import Sandbox

__all__ = ["TEST_DEFAULTS", "client_for"]

TEST_DEFAULTS: dict[str, Any] = {"progress": False, "retry_backoff": 0.01}
"""What every test client has unless the test says otherwise: no bars on stderr, retries 10 ms apart."""


def client_for(
    target: Sandbox | str,
    key: str | None = None,
    /,
    *,
    keys: Literal["both", "personal", "project"] = "both",
    ids: bool = False,
    **options: Any,
) -> Client:
    """A sync client on ``target`` (a sandbox, or the URL of a fake server: then give the keys yourself)."""
    settings: dict[str, Any] = dict(TEST_DEFAULTS)
    if isinstance(target, str):
        url = target
        if key is not None:
            settings["personal_api_key"] = key
    else:
        url = target.url
        if keys in ("both", "personal"):
            settings["personal_api_key"] = key or target.personal_api_key
        elif key is not None:
            settings["personal_api_key"] = key
        if keys in ("both", "project"):
            settings["project_api_key"] = target.project_api_key
        if ids:
            settings["project_id"] = target.project_id
            settings["organization_id"] = target.organization_id
    settings.update(options)
    return Client(url, **settings)
