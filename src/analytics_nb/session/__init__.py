"""The analyst's clients: ``Client`` and ``AsyncClient`` = the data-access API plus capture, simulation and
the embedded sandbox.

``analytics_nb.client`` (``ApiClient`` / ``AsyncApiClient``) talks HTTP; ``capture`` and ``simulation`` use
it; this part sits above all three (and above ``embedded``), so ``client.simulate(...)``,
``client.capture_frame(...)``, ``client.flag_called(...)`` and ``Client.sandbox()`` are ordinary methods
and no import runs backwards.
"""

from __future__ import annotations

from analytics_nb.session._async_client import AsyncClient
from analytics_nb.session._client import Client

__all__ = ["AsyncClient", "Client"]
