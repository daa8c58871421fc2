"""A faithful local PostHog server: real HTTP (Starlette on uvicorn), real SQLite storage, personal API keys
with scopes, the real response shapes and error bodies. Start it with `start()`, `analytics-nb sandbox`,
or the pytest fixtures in `analytics_nb.sandbox.testing`."""

from __future__ import annotations

from ._app import SandboxApp, create_app
from ._context import SandboxContext
from ._faults import Faults
from ._server import ProcessSandbox, Sandbox, launch, launch_process, start

__all__ = [
    "Faults",
    "ProcessSandbox",
    "Sandbox",
    "SandboxApp",
    "SandboxContext",
    "create_app",
    "launch",
    "launch_process",
    "start",
]
