"""The error raised when a table cannot be read or written in the family asked for."""

from __future__ import annotations

__all__ = ["TableInputError"]


class TableInputError(ValueError):
    """An unsupported object, a missing parquet path, an unknown ``output=`` or a missing optional library;
    the message names the object and the fix (the extra to install, the family to pass)."""
