"""The data-access client: ``Client`` (sync, notebook-safe) and ``AsyncClient`` for a PostHog-style service.

Playlists, pipeline transformations, feature flags, projects/organizations and decide, with concurrent
pagination, retries with jittered backoff, an optional rate limiter and
typed errors (``analytics_nb.errors``).
"""

from __future__ import annotations

from analytics_nb.client._client import AsyncClient, Client
from analytics_nb.client._config import REGIONS, ClientConfig
from analytics_nb.client._pagination import MAX_PAGE_SIZE

__all__ = ["MAX_PAGE_SIZE", "REGIONS", "AsyncClient", "Client", "ClientConfig"]
