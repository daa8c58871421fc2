"""The ``TransformationsBrowser`` panel and its views: the transformation list and the source editor."""

from __future__ import annotations

from analytics_nb.widgets.transformations._panel import TransformationsBrowser

__all__ = ["TransformationsBrowser"]
