"""`SimulationResult` keeps the input property columns beside the outputs (issue 29 #3): the frame, the CSV
export (round trip through `frames.read_csv`), `.to(...)`; `.outputs` / `inputs=False` leave them out, and
nothing that reads a result frame (summaries, attribution, flag_called) takes an input column for a flag."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from _flags import condition, flag, prop
from analytics_nb.capture import attribute, feature_properties
from analytics_nb.frames import read_csv
from analytics_nb.simulation import SimulationInputError, grid, simulate
from analytics_nb.simulation._output import flag_columns

FLAGS: list[dict[str, Any]] = [
    flag("us-only", condition(prop("country", "US")), id=1, payloads={"true": '{"banner": "us"}'}),
    flag("exp", condition(prop("plan", ["pro", "team"])), id=2, variants={"control": 50, "test": 50}),
]


@pytest.fixture(scope="module")
def sets() -> pd.DataFrame:
    frame = grid({"country": ["US", "DE"], "plan": ["free", "pro"]}, ids_per_cell=5, seed=1)
    frame["seats"] = range(len(frame))  # an integer input too
    return frame.set_axis(range(100, 100 + len(frame)), axis=0)  # an index that is not 0..n-1


def test_the_frame_keeps_the_input_columns_beside_the_outputs(sets: pd.DataFrame) -> None:
    result = simulate(sets, engine="local", definitions=FLAGS)
    frame = result.frame
    assert list(frame.columns[:4]) == ["distinct_id", "country", "plan", "seats"]
    assert result.input_columns == ["country", "plan", "seats"]
    assert frame.index.equals(sets.index)
    pd.testing.assert_frame_equal(frame[["country", "plan", "seats"]], sets[["country", "plan", "seats"]])
    # the outputs are unchanged, and the flags are the flags
    assert list(result.outputs.columns) == [
        "distinct_id",
        "us-only",
        "exp",
        "us-only:payload",
        "exp:payload",
        "error",
    ]
    assert result.flags == ["us-only", "exp"] == flag_columns(frame)
    assert set(result.summary()["flag"]) == {"us-only", "exp"}
    assert frame.loc[frame["country"] == "US", "us-only"].all()
    assert not frame.loc[frame["country"] == "DE", "us-only"].any()
    assert result.crosstab("us-only", "country").loc["US", True] == (sets["country"] == "US").sum()
    with pytest.raises(SimulationInputError, match="flag 'country' is not in this result"):
        result.crosstab("country", "plan")
    # `to` carries them too, unless asked not to
    assert "country" in result.to("pandas").columns
    assert "country" not in result.to("pandas", inputs=False).columns


def test_to_csv_round_trips_with_the_inputs_and_can_leave_them_out(
    sets: pd.DataFrame, tmp_path: Path
) -> None:
    result = simulate(sets, engine="local", definitions=FLAGS)
    back = read_csv(result.to_csv(tmp_path / "with.csv"))
    assert list(back.columns[:4]) == ["distinct_id", "country", "plan", "seats"]
    pd.testing.assert_frame_equal(back, result.frame, check_flags=False)  # same values and dtypes
    bare = read_csv(result.to_csv(tmp_path / "bare.csv", inputs=False))
    assert "country" not in bare.columns and "plan" not in bare.columns
    pd.testing.assert_frame_equal(bare, result.outputs)


def test_an_input_named_like_a_flag_is_left_out_not_doubled(sets: pd.DataFrame) -> None:
    clash = sets.assign(exp="typed by hand")
    result = simulate(clash, engine="local", definitions=FLAGS)
    assert list(result.frame.columns).count("exp") == 1
    assert set(result.frame["exp"].dropna()) <= {"control", "test", False}  # the flag, not the input
    assert "exp" not in result.input_columns


def test_attribution_and_rows_never_take_an_input_column_for_a_flag(sets: pd.DataFrame) -> None:
    result = simulate(sets, engine="local", definitions=FLAGS, payloads=False)
    events = pd.DataFrame({"event": ["buy", "buy"], "distinct_id": sets["distinct_id"].iloc[:2].tolist()})
    out = attribute(events, result)
    assert {"$feature/us-only", "$feature/exp"} <= set(out.columns)
    assert not [c for c in out.columns if c in ("$feature/country", "$feature/plan", "$feature/seats")]
    out_frame = attribute(events, result.frame)  # the frame alone too
    assert "$feature/country" not in out_frame.columns and "$feature/us-only" in out_frame.columns
    row = result.frame.iloc[0]
    props = feature_properties(row)
    assert "$feature/country" not in props and "$feature/us-only" in props


def test_a_result_rebuilt_from_its_frame_does_not_double_the_inputs(sets: pd.DataFrame) -> None:
    import dataclasses

    result = simulate(sets, engine="local", definitions=FLAGS)
    again = dataclasses.replace(result, frame=result.frame)
    assert list(again.frame.columns) == list(result.frame.columns)
    pd.testing.assert_frame_equal(again.outputs, result.outputs)
