"""The error raised for bad simulation input (before any request is sent) and the simulation's warnings."""

from __future__ import annotations

from typing import Any

__all__ = ["LongRunWarning", "SimulationInputError"]


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


class LongRunWarning(UserWarning):
    """A remote simulation is expected to run longer than ``warn_minutes`` (measured on its first rows).

    The run goes on; Ctrl-C stops it and returns the rows done so far as a partial `SimulationResult`.
    Silence it with ``estimate=False`` or a larger ``warn_minutes``, or with ``warnings.filterwarnings``.
    """
