"""Widget panels (ipywidgets 8) for notebooks: edit playlists, simulate flags, browse transformations.

Each panel is a small class that owns its widgets, keeps its state in plain attributes and exposes every
action as a method, so what a click does code can do too; show one by making it a cell's value.
"""

from __future__ import annotations

from analytics_nb.widgets._errors import FormError, describe_error
from analytics_nb.widgets._playlists import PlaylistEditor
from analytics_nb.widgets._simulator import FlagSimulator
from analytics_nb.widgets._transformations import TransformationsBrowser

__all__ = ["FlagSimulator", "FormError", "PlaylistEditor", "TransformationsBrowser", "describe_error"]
