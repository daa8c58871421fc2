"""``ResultsView``: what the last run gave: value-share bars, what-if moves, agreement and the rows.

The bars use the same colours as ``SimulationResult.plot()`` (``analytics_nb._palette``). ``clear()`` empties
every part, so a failed run never leaves the previous run's results on show.
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as w
import pandas as pd

from analytics_nb._palette import value_colours
from analytics_nb.widgets.simulator._text import cell_text
from analytics_nb.widgets.views import column, frame_html

__all__ = ["ResultsView", "share_bars_html"]


def share_bars_html(summary: pd.DataFrame | None) -> str:
    """An HTML bar chart of value shares per flag (one stacked bar per flag, with a legend of shares).

    Each segment carries ``data-flag``, ``data-value``, ``data-share`` and ``data-colour``.
    """
    if summary is None or not len(summary):
        return '<div class="anb-bars anb-empty" style="color:#666">(no flag values to chart)</div>'
    shown = summary[summary["share"].notna() & summary["value"].notna()]
    colours = value_colours(str(v) for v in shown["value"])  # the same as SimulationResult.plot()
    parts = ['<div class="anb-bars" style="font-size:12px;max-width:100%">']
    for flag, rows in summary.groupby("flag", sort=False):
        segments = []
        legend = []
        for row in rows[rows["count"] > 0].itertuples(index=False):
            raw: Any = row.share
            share = 0.0 if pd.isna(raw) else float(raw)
            colour = colours.get(str(row.value), "#bbbbbb")
            label = html.escape(cell_text(row.value) or "unknown")
            segments.append(
                f'<div class="anb-bar" data-flag="{html.escape(str(flag))}" data-value="{label}" '
                f'data-share="{share:.4f}" data-colour="{colour}" title="{label}: {share:.1%} ({row.count})" '
                f'style="width:{share * 100:.2f}%;background:{colour};height:16px"></div>'
            )
            legend.append(
                f'<span style="display:inline-block;width:10px;height:10px;background:{colour}"></span> '
                f"{label} {share:.1%} ({row.count})"
            )
        unknown = int(rows["unknown"].iloc[0]) if "unknown" in rows.columns and len(rows) else 0
        note = f" · {unknown} unknown" if unknown else ""
        parts.append(
            f'<div style="margin:4px 0"><b>{html.escape(str(flag))}</b>{note}'
            f'<div style="display:flex;width:100%;max-width:420px;border:1px solid #ccc">{"".join(segments)}'
            f"</div><div>{' &nbsp; '.join(legend)}</div></div>"
        )
    parts.append("</div>")
    return "".join(parts)


def _html_table(df: pd.DataFrame, css_class: str, max_rows: int = 30) -> str:
    return frame_html(df, list(df.columns), max_rows=max_rows, css_class=css_class, bools="text")


class ResultsView:
    """Four HTML parts: ``bars``, ``moves``, ``agreement``, ``table``; empty until a run succeeds.

    CSS: ``anb-results-bars``, ``anb-results-moves``, ``anb-results-agreement``, ``anb-result-table`` (the
    rows; the table inside is ``anb-results``).
    """

    def __init__(self) -> None:
        self.bars = w.HTML(value="")
        self.moves = w.HTML(value="")
        self.agreement = w.HTML(value="")
        self.table = w.HTML(value="", layout=w.Layout(max_width="100%", overflow="auto"))
        self.bars.add_class("anb-results-bars")
        self.moves.add_class("anb-results-moves")
        self.agreement.add_class("anb-results-agreement")
        self.table.add_class("anb-result-table")
        self.root = column(self.bars, self.moves, self.agreement, self.table, css_class="anb-results-view")

    @property
    def empty(self) -> bool:
        """True when no result is on show."""
        return not (self.bars.value or self.moves.value or self.agreement.value or self.table.value)

    def show(
        self,
        summary: pd.DataFrame,
        rows: pd.DataFrame,
        *,
        moves: pd.DataFrame | None,
        edits_text: str,
        agreement: pd.DataFrame | None,
        max_rows: int,
    ) -> None:
        """Show a run: the shares, the what-if moves (if any), the agreement (both engines) and the rows."""
        self.bars.value = "<b>Variant shares</b>" + share_bars_html(summary)
        if moves is not None:
            body = _html_table(moves, "anb-table anb-moves") if len(moves) else "<i>nobody moves</i>"
            self.moves.value = (
                f"<b>What-if moves against the current definitions</b> ({html.escape(edits_text)})" + body
            )
        else:
            self.moves.value = ""
        self.agreement.value = (
            "<b>Agreement local vs remote</b>" + _html_table(agreement, "anb-table anb-agreement")
            if agreement is not None
            else ""
        )
        self.table.value = "<b>Results</b> (input properties, then one column per flag)" + frame_html(
            rows, max_rows=max_rows, css_class="anb-table anb-results", bools="text"
        )

    def clear(self) -> None:
        """Show nothing (after a failed run: the previous results are no longer the answer)."""
        self.bars.value = self.moves.value = self.agreement.value = self.table.value = ""
