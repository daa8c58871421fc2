"""Progress bars for multi-page and bulk work: ``tqdm.auto`` (a widget in Jupyter, text in a terminal)."""

from __future__ import annotations

import os
from typing import Any

__all__ = ["NullBar", "progress_bar", "progress_enabled"]


class NullBar:
    """A do-nothing stand-in for a tqdm bar."""

    def update(self, n: int = 1) -> None:
        """Ignore progress."""

    def close(self) -> None:
        """Nothing to close."""


def progress_enabled(setting: bool | None) -> bool:
    """False when ``progress=False`` or ``TQDM_DISABLE`` is set to a true value; True otherwise."""
    if setting is False:
        return False
    flag = os.environ.get("TQDM_DISABLE", "").strip().lower()
    return flag in ("", "0", "false", "no")


def progress_bar(setting: bool | None, *, total: int | None, desc: str, unit: str = "rec") -> Any:
    """A ``tqdm.auto`` bar when progress is enabled, else a ``NullBar``."""
    if not progress_enabled(setting):
        return NullBar()
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - tqdm is a dependency
        return NullBar()
    return tqdm(total=total, desc=desc, unit=unit, leave=False)
