"""analytics_nb: PostHog-style analytics from Jupyter notebooks.

Playlists, pipeline transformations and feature-flag decisions as pandas DataFrames, flag simulation,
attribution capture, widget panels, and a local sandbox server that speaks the same API.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# Public names, imported on first use so that `import analytics_nb` stays cheap.
_LAZY: dict[str, str] = {
    "Client": "analytics_nb.client",
    "AsyncClient": "analytics_nb.client",
    "simulate": "analytics_nb.simulate",
    "attribute": "analytics_nb.capture",
    "read_csv": "analytics_nb.frames",
    "to_csv": "analytics_nb.frames",
    "errors": "analytics_nb.errors",
    "models": "analytics_nb.models",
    "flags": "analytics_nb.flags",
    "sandbox": "analytics_nb.sandbox",
    "frames": "analytics_nb.frames",
    "widgets": "analytics_nb.widgets",
}

if TYPE_CHECKING:
    from analytics_nb import errors, flags, frames, models, sandbox, widgets
    from analytics_nb.capture import attribute
    from analytics_nb.client import AsyncClient, Client
    from analytics_nb.frames import read_csv, to_csv
    from analytics_nb.simulate import simulate

__all__ = [
    "AsyncClient",
    "Client",
    "__version__",
    "attribute",
    "errors",
    "flags",
    "frames",
    "models",
    "read_csv",
    "sandbox",
    "simulate",
    "to_csv",
    "widgets",
]


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'analytics_nb' has no attribute {name!r}")
    module = import_module(module_name)
    value = module if module_name.endswith("." + name) else getattr(module, name)
    globals()[name] = value
    return value
