"""Honest totals (issue 34): `summary()` shows the share of every row beside the share of decided rows and
says when many answers are unknown; both-mode agreement never counts an unknown side as a disagreement."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

from _flags import condition, flag, prop
from analytics_nb import Client
from analytics_nb.simulation import (
    AGREEMENT_COLUMNS,
    SUMMARY_COLUMNS,
    MissingPropertyWarning,
    UnknownShareWarning,
    agreement_headline,
    simulate,
)

BETA = flag("beta", condition(prop("plan", ["pro"])))


def test_summary_shows_the_share_of_every_row_and_notes_many_unknowns() -> None:
    known = pd.DataFrame({"distinct_id": [f"k{i}" for i in range(2_500)], "plan": "pro"})
    unknown = pd.DataFrame({"distinct_id": [f"u{i}" for i in range(7_500)]})
    with pytest.warns(MissingPropertyWarning):
        a = simulate(known, "beta", engine="local", definitions=[BETA])
        b = simulate(unknown, "beta", engine="local", definitions=[BETA])
    frame = pd.concat([a.outputs, b.outputs], ignore_index=True)
    result = type(a)(frame, "local", frame[["distinct_id"]], local=frame)
    with pytest.warns(UnknownShareWarning, match=r"'beta' 7,500 of 10,000 \(75%\).*share_of_rows"):
        summary = result.summary()
    assert list(summary.columns) == SUMMARY_COLUMNS
    row = summary.iloc[0]
    assert (row["value"], row["count"], row["rows"], row["n"], row["unknown"]) == (
        True,
        2_500,
        10_000,
        2_500,
        7_500,
    )
    assert row["share_of_rows"] == pytest.approx(0.25)  # was: only share 1.0000, read as "100% True"
    assert row["share"] == pytest.approx(1.0)
    assert "7,500 of 10,000" in summary.attrs["note"]
    assert "7,500 of 10,000" in result._repr_html_()  # shown in the notebook, not warned on display


def test_summary_has_no_note_when_answers_are_known() -> None:
    sets = pd.DataFrame({"distinct_id": ["a", "b", "c"], "plan": ["pro", "free", "pro"]})
    result = simulate(sets, engine="local", definitions=[BETA])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        summary = result.summary()
    assert "note" not in summary.attrs
    assert summary.set_index("value")["share_of_rows"].to_dict() == pytest.approx({True: 2 / 3, False: 1 / 3})


def test_both_mode_counts_an_unknown_side_as_unknown_not_as_a_disagreement(client: Client) -> None:
    """Fresh ids with an email column only: the service answers every flag (the ids have no stored
    person), the local engine is NA where a flag reads a property the frame lacks. Before: agreement 0.000
    on flags with no two different values."""
    sets = pd.DataFrame(
        {"distinct_id": [f"totals-{i}" for i in range(60)], "email": ["a@posthog.com", "b@x.io"] * 30}
    )
    with pytest.warns(MissingPropertyWarning):
        result = simulate(sets, engine="both", client=client)
    agreement = result.agreement
    assert agreement is not None and list(agreement.columns) == AGREEMENT_COLUMNS
    one_sided = agreement[(agreement["unknown_local"] > 0) & (agreement["unknown_remote"] == 0)]
    assert len(one_sided) >= 3, agreement.to_string()
    assert (one_sided["disagree"] == 0).all(), agreement.to_string()
    assert (agreement["compared"] + agreement["unknown_local"] == agreement["rows"]).all()
    assert int(agreement["disagree"].sum()) == 0, result.differences.head().to_string()
    decided = agreement[agreement["compared"] > 0]
    assert decided["share"].eq(1.0).all()  # share is over compared rows
    assert agreement.loc[agreement["compared"] == 0, "share"].isna().all()  # nothing compared: no share
    assert result.differences is not None and set(result.differences["kind"]) == {"unknown"}
    headline = agreement_headline(agreement)
    unknown = int((agreement["rows"] - agreement["compared"]).sum())
    compared = int(agreement["compared"].sum())
    assert (
        headline
        == f"0 disagreements over {compared:,} compared; {unknown:,} unknown (local {unknown:,}, remote 0)"
    )
    assert headline in repr(result)
