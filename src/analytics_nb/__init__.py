"""analytics_nb: PostHog-style analytics from Jupyter notebooks.

Playlists, pipeline transformations and feature-flag decisions as pandas DataFrames, flag simulation,
attribution capture, widget panels, and a local sandbox server that speaks the same API.
"""

from importlib import import_module as _import_module
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

from analytics_nb._version import __version__

# Public names, imported on first use so that `import analytics_nb` stays cheap.
_LAZY: dict[str, str] = {
    "Client": "analytics_nb.session",
    "AsyncClient": "analytics_nb.session",
    "simulate": "analytics_nb.simulation",
    "simulation": "analytics_nb.simulation",
    "capture": "analytics_nb.capture",
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

if _TYPE_CHECKING:
    from analytics_nb import capture, errors, flags, frames, models, sandbox, simulation, widgets
    from analytics_nb.capture import attribute
    from analytics_nb.frames import read_csv, to_csv
    from analytics_nb.session import AsyncClient, Client
    from analytics_nb.simulation import simulate

__all__ = [
    "AsyncClient",
    "Client",
    "__version__",
    "attribute",
    "capture",
    "errors",
    "flags",
    "frames",
    "models",
    "read_csv",
    "sandbox",
    "simulate",
    "simulation",
    "to_csv",
    "widgets",
]


def __getattr__(name: str) -> _Any:
    """Import a public name on first use (``analytics_nb.Client``, ``analytics_nb.simulate``, ...)."""
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'analytics_nb' has no attribute {name!r}")
    module = _import_module(module_name)
    value = module if module_name.endswith("." + name) else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names (what ``dir(analytics_nb)`` and tab completion show)."""
    return sorted(__all__)
