"""The error raised for bad simulation input, before any request is sent."""

from __future__ import annotations

from typing import Any

__all__ = ["SimulationInputError"]


class SimulationInputError(ValueError):
    """Bad property sets, definitions or flag keys; the message names the column/row/key and the fix.

    ``column``, ``row`` (the input index label) and ``key`` (a flag key) say where the problem is, when known.
    """

    def __init__(
        self, message: str, *, column: str | None = None, row: Any = None, key: str | None = None
    ) -> None:
        super().__init__(message)
        self.column = column
        self.row = row
        self.key = key
