"""Widget panels (ipywidgets 8) for notebooks: edit playlists, simulate flags, browse transformations.

Each panel composes small views (one module each, in ``playlists/``, ``simulator/``, ``transformations/``
and the shared ``views/``) that own their widgets and keep their state in plain attributes; the panel wires
their buttons to its own methods, so what a click does code can do too. Show a panel by making it a cell's
value.
"""

from __future__ import annotations

from analytics_nb.widgets._errors import ClientClosedError, FormError, describe_error
from analytics_nb.widgets.playlists import PlaylistEditor
from analytics_nb.widgets.simulator import FlagSimulator
from analytics_nb.widgets.transformations import TransformationsBrowser

__all__ = [
    "ClientClosedError",
    "FlagSimulator",
    "FormError",
    "PlaylistEditor",
    "TransformationsBrowser",
    "describe_error",
]
