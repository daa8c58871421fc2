"""Variant shares per flag as horizontal stacked bars (matplotlib is an optional extra)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from analytics_nb._palette import value_colours
from analytics_nb.wire.cells import is_missing

__all__ = ["plot_shares", "require_matplotlib"]

PLOT_HINT = "plot() needs matplotlib, an optional extra: pip install analytics-nb[plot]"


def require_matplotlib() -> Any:
    """Import ``matplotlib.pyplot`` or raise ImportError naming the extra to install."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(PLOT_HINT) from exc
    return plt


def plot_shares(summary: pd.DataFrame, *, ax: Any = None) -> Any:
    """One bar per flag, split by value share, with the share printed in segments wide enough to read."""
    plt = require_matplotlib()
    flags = list(dict.fromkeys(summary["flag"].tolist()))
    if ax is None:
        _fig, ax = plt.subplots(figsize=(8, 0.5 + 0.45 * max(1, len(flags))))
    shown = summary[summary["share"].notna() & summary["value"].notna()]
    colours = value_colours(str(v) for v in shown["value"])  # the FlagSimulator's bars use the same
    labelled: set[str] = set()
    for y, key in enumerate(flags):
        rows = summary[summary["flag"] == key]
        left = 0.0
        for r in rows.itertuples(index=False):
            if is_missing(r.value) or pd.isna(r.share):
                continue
            label = str(r.value)
            ax.barh(
                y,
                r.share,
                left=left,
                color=colours[label],
                edgecolor="white",
                label=None if label in labelled else label,
            )
            labelled.add(label)
            if r.share >= 0.08:
                ax.text(left + r.share / 2, y, f"{r.share:.0%}", ha="center", va="center", fontsize=8)
            left += float(r.share)
    ax.set_yticks(range(len(flags)))
    ax.set_yticklabels(flags)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of property sets")
    ax.set_title("Flag values across property sets")
    if labelled:
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
    return ax
