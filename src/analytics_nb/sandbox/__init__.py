"""A faithful local PostHog server: real HTTP (Starlette on uvicorn), real SQLite storage, personal API keys
with scopes, the real response shapes and error bodies. Start it with `start()`, `analytics-nb sandbox`,
or the pytest fixtures in `analytics_nb.sandbox.testing`.

Layout: `_resources/` holds one module per API resource (schema, storage, handlers, endpoint rows, seed);
`_endpoints` turns their endpoint table into routes and the OpenAPI document; `_app` is the ASGI app;
`_server` runs it and is the `Sandbox` handle.
"""

from __future__ import annotations

from ._app import SandboxApp, create_app
from ._context import SandboxContext
from ._faults import Faults
from ._resources.projects import SandboxProject
from ._server import ProcessSandbox, Sandbox, launch, launch_process, start

__all__ = [
    "Faults",
    "ProcessSandbox",
    "Sandbox",
    "SandboxApp",
    "SandboxContext",
    "SandboxProject",
    "create_app",
    "launch",
    "launch_process",
    "start",
]
