"""``frame_html``: a DataFrame as a small escaped HTML table (what the panels' table views show)."""

from __future__ import annotations

import html
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["frame_html"]


def _cell(value: Any, bools: str = "check") -> str:
    if value is None or (not isinstance(value, list | dict | tuple) and _isna(value)):
        return '<span style="color:#999">–</span>'
    if isinstance(value, pd.Timestamp):
        return html.escape(value.strftime("%Y-%m-%d %H:%M"))
    if isinstance(value, bool | np.bool_):
        if bools == "text":
            return "true" if value else '<span style="color:#888">false</span>'
        return "✓" if value else ""
    text = str(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return html.escape(text)


def _isna(value: Any) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def frame_html(
    df: pd.DataFrame,
    columns: list[str] | None = None,
    *,
    max_rows: int = 50,
    highlight: Any = None,
    key: str | None = None,
    css_class: str = "anb-table",
    bools: str = "check",
) -> str:
    """Render ``df`` (or some columns) as a small escaped HTML table; ``highlight`` marks one row by key."""
    cols = [c for c in (columns or list(df.columns)) if c in df.columns]
    head = "".join(
        f'<th style="text-align:left;padding:2px 8px;border-bottom:1px solid #ccc">{html.escape(str(c))}</th>'
        for c in cols
    )
    rows = []
    for _, row in df.head(max_rows).iterrows():
        marked = key is not None and highlight is not None and row.get(key) == highlight
        style = ' style="background:#e8f0fe"' if marked else ""
        cells = "".join(f'<td style="padding:2px 8px">{_cell(row[c], bools)}</td>' for c in cols)
        rows.append(f"<tr{style}>{cells}</tr>")
    more = ""
    if len(df) > max_rows:
        more = f'<div style="color:#666">… {len(df) - max_rows} more rows (see the DataFrame)</div>'
    if not rows:
        return f'<div class="{css_class} anb-empty" style="color:#666">(nothing to show)</div>'
    return (
        '<div class="anb-scroll" style="max-width:100%;overflow-x:auto">'
        f'<table class="{css_class}" style="border-collapse:collapse;font-size:12px">'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>{more}"
    )
