"""The decide progress bar: ``tqdm.auto`` (a widget in Jupyter, text in a terminal), off on request."""

from __future__ import annotations

import os
from typing import Any

__all__ = ["NullBar", "progress_bar"]


class NullBar:
    """A do-nothing stand-in for a tqdm bar."""

    def update(self, n: int = 1) -> None:
        """Ignore progress."""

    def close(self) -> None:
        """Nothing to close."""


def progress_enabled(setting: bool | None) -> bool:
    """False with ``progress=False`` or a true ``TQDM_DISABLE`` environment variable."""
    if setting is False:
        return False
    return os.environ.get("TQDM_DISABLE", "").strip().lower() in ("", "0", "false", "no")


def progress_bar(setting: bool | None, *, total: int, desc: str, unit: str = "row") -> Any:
    """A ``tqdm.auto`` bar, or a `NullBar` when progress is off."""
    if not progress_enabled(setting):
        return NullBar()
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit=unit, leave=False)
