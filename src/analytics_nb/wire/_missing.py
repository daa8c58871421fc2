"""The one missing-value test: a missing cell means "absent" everywhere (capture, simulation, frames, CSV)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["is_missing"]


def is_missing(value: Any) -> bool:
    """True for None, pd.NA, NaT (pandas or numpy) and float/numpy NaN; not for empty text or containers."""
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    if isinstance(value, float | np.floating):
        return math.isnan(value)
    if isinstance(value, np.datetime64 | np.timedelta64):
        return bool(np.isnat(value))
    return False
