"""Simulation input validation, property-set builders, summaries and definition edits (no server needed)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from _flags import condition, flag
from analytics_nb.models import FeatureFlag, LocalEvaluationResponse
from analytics_nb.simulation import (
    SimulationInputError,
    SimulationResult,
    grid,
    load_definitions,
    normalise_property_sets,
    random_property_sets,
    sample_persons,
    simulate,
    wilson_interval,
    with_condition,
    with_rollout,
    with_variant_weights,
    without_condition,
)
from analytics_nb.simulation._output import build_frame
from analytics_nb.simulation._remote import PARTIAL_ERROR, parse_response
from analytics_nb.simulation._whatif import diff_frames

FLAGS = [
    flag("beta", condition(rollout=50), id=1),
    flag(
        "exp",
        condition({"key": "plan", "value": "pro", "type": "person"}),
        id=2,
        variants={"control": 50, "test": 50},
    ),
]


# -- bad input -------------------------------------------------------------------------------------
def test_missing_distinct_id_column_names_the_column_and_fix() -> None:
    with pytest.raises(SimulationInputError) as err:
        normalise_property_sets(pd.DataFrame({"user_id": ["a"], "plan": ["pro"]}))
    assert err.value.column == "distinct_id"
    assert "'user_id'" in str(err.value) and "rename" in str(err.value)
    assert isinstance(err.value, ValueError)


def test_duplicated_ids_name_the_rows() -> None:
    with pytest.raises(SimulationInputError) as err:
        normalise_property_sets([{"distinct_id": "a"}, {"distinct_id": "b"}, {"distinct_id": "a"}])
    assert "'a'" in str(err.value) and "rows 0, 2" in str(err.value)
    assert err.value.row == 0


def test_numeric_and_text_ids_that_collide_are_duplicates() -> None:
    with pytest.raises(SimulationInputError, match="appears more than once"):
        normalise_property_sets(pd.DataFrame({"distinct_id": pd.Series([1, "1"], dtype=object)}))


def test_missing_id_cell_is_rejected() -> None:
    with pytest.raises(SimulationInputError) as err:
        normalise_property_sets(pd.DataFrame({"distinct_id": ["a", None, "c"]}, index=[10, 11, 12]))
    assert err.value.row == 11 and "dropna" in str(err.value)


@pytest.mark.parametrize("cell", [["a", "b"], {"x": 1}, {1, 2}, np.array([1, 2])])
def test_nested_cells_name_column_and_row(cell: object) -> None:
    df = pd.DataFrame({"distinct_id": ["a", "b"], "tags": pd.Series(["ok", cell], dtype=object)})
    with pytest.raises(SimulationInputError) as err:
        normalise_property_sets(df)
    assert err.value.column == "tags" and err.value.row == 1
    assert "nested" in str(err.value) and "Flatten" in str(err.value)


def test_unsupported_object_cell_is_rejected() -> None:
    df = pd.DataFrame({"distinct_id": ["a"], "obj": pd.Series([object()], dtype=object)})
    with pytest.raises(SimulationInputError, match="'obj'"):
        normalise_property_sets(df)


def test_nested_value_inside_person_properties_dict() -> None:
    rows = [{"distinct_id": "a", "person_properties": {"plan": "pro", "tags": ["x"]}}]
    with pytest.raises(SimulationInputError) as err:
        normalise_property_sets(rows)
    assert err.value.column == "person_properties" and "'tags'" in str(err.value)


def test_not_a_list_of_dicts() -> None:
    with pytest.raises(SimulationInputError, match="one dict"):
        normalise_property_sets({"distinct_id": "a"})
    with pytest.raises(SimulationInputError, match="property set 1"):
        normalise_property_sets([{"distinct_id": "a"}, "b"])


def test_unknown_flag_key_with_definitions_suggests_the_near_key() -> None:
    with pytest.raises(SimulationInputError) as err:
        simulate([{"distinct_id": "a"}], flags=["betta"], engine="local", definitions=FLAGS)
    assert err.value.key == "betta" and "'beta'" in str(err.value)


def test_engine_and_mode_and_concurrency_are_checked() -> None:
    with pytest.raises(SimulationInputError, match="engine="):
        simulate([{"distinct_id": "a"}], engine="cloud", definitions=FLAGS)  # type: ignore[arg-type]
    with pytest.raises(SimulationInputError, match="mode="):
        simulate([{"distinct_id": "a"}], engine="local", definitions=FLAGS, mode="fast")  # type: ignore[arg-type]
    with pytest.raises(SimulationInputError, match="client="):
        simulate([{"distinct_id": "a"}], engine="remote")


# -- normalisation ---------------------------------------------------------------------------------
def test_requests_from_columns_and_dicts() -> None:
    df = pd.DataFrame(
        {
            "distinct_id": [1, 2],
            "age": np.array([30, 40], dtype="int64"),
            "plan": ["pro", None],
            "group:company": ["acme", None],
            "group:company:size": [10.0, np.nan],
            "seen": pd.to_datetime(["2024-01-01", None]),
            "ip": ["8.8.8.8", None],
        }
    )
    sets = normalise_property_sets(df)
    reqs = sets.requests()
    assert reqs[0] == {
        "distinct_id": "1",
        "person_properties": {"age": 30, "plan": "pro", "seen": "2024-01-01T00:00:00"},
        "groups": {"company": "acme"},
        "group_properties": {"company": {"size": 10.0}},
        "ip": "8.8.8.8",
    }
    assert reqs[1] == {
        "distinct_id": "2",
        "person_properties": {"age": 40},
        "groups": {},
        "group_properties": {},
        "ip": None,
    }
    assert type(reqs[0]["person_properties"]["age"]) is int
    json.dumps(reqs)  # JSON-ready


def test_groups_dict_column_becomes_group_columns() -> None:
    sets = normalise_property_sets(
        [
            {
                "distinct_id": "a",
                "groups": {"company": "acme"},
                "group_properties": {"company": {"plan": "pro"}},
            }
        ]
    )
    assert "group:company" in sets.frame.columns and "groups" not in sets.frame.columns
    assert sets.requests()[0]["groups"] == {"company": "acme"}
    assert sets.requests()[0]["group_properties"] == {"company": {"plan": "pro"}}


def test_person_properties_dicts_merge_into_columns() -> None:
    rows = [
        {"distinct_id": "a", "plan": "pro"},
        {"distinct_id": "b", "person_properties": {"plan": "team", "country": "US"}},
        {"distinct_id": "c", "plan": "free", "person_properties": {"plan": "ignored", "age": 3}},
    ]
    sets = normalise_property_sets(rows)
    assert "person_properties" not in sets.frame.columns
    assert sets.frame["plan"].tolist() == ["pro", "team", "free"]  # a column value wins over the dict
    reqs = sets.requests()
    assert reqs[1]["person_properties"] == {"plan": "team", "country": "US"}
    assert reqs[2]["person_properties"] == {"plan": "free", "age": 3}
    with pytest.raises(SimulationInputError, match="'ip'"):
        normalise_property_sets([{"distinct_id": "a", "person_properties": {"ip": "1.2.3.4"}}])


# -- builders --------------------------------------------------------------------------------------
def test_grid_is_a_deterministic_cartesian_product() -> None:
    g = grid({"country": ["US", "DE"], "plan": ["free", "pro"]}, ids_per_cell=50, seed=0)
    assert len(g) == 200 and g["distinct_id"].is_unique
    assert g.groupby(["country", "plan"]).size().eq(50).all()
    pd.testing.assert_frame_equal(g, grid({"country": ["US", "DE"], "plan": ["free", "pro"]}, 50, seed=0))
    assert set(grid({"country": ["US"]}, 5, seed=1)["distinct_id"]).isdisjoint(set(g["distinct_id"]))


def test_grid_bad_arguments() -> None:
    with pytest.raises(SimulationInputError, match="ids_per_cell"):
        grid({"a": [1]}, ids_per_cell=0)
    with pytest.raises(SimulationInputError, match="'country'"):
        grid({"country": "US"})


def test_sample_persons_is_reproducible() -> None:
    persons = pd.DataFrame({"distinct_id": [f"p{i}" for i in range(100)], "age": range(100)})
    a = sample_persons(persons, 10, seed=3)
    assert len(a) == 10 and a["distinct_id"].is_unique
    pd.testing.assert_frame_equal(a, sample_persons(persons, 10, seed=3))
    assert not a.equals(sample_persons(persons, 10, seed=4))
    b = sample_persons(persons.head(3), 9, seed=0, replace=True)
    assert b["distinct_id"].is_unique and len(b) == 9
    with pytest.raises(SimulationInputError, match="replace=True"):
        sample_persons(persons, 101)


def test_random_property_sets_follow_the_schema() -> None:
    schema = {
        "plan": ["free", "pro"],
        "age": (18, 65),
        "score": (0.0, 1.0),
        "n": lambda rng, n: rng.poisson(3, n),
    }
    a = random_property_sets(1000, schema, seed=7)
    pd.testing.assert_frame_equal(a, random_property_sets(1000, schema, seed=7))
    assert set(a["plan"]) == {"free", "pro"}
    assert a["age"].between(18, 65).all() and a["age"].dtype.kind == "i"
    assert a["score"].between(0, 1).all() and a["distinct_id"].is_unique
    with pytest.raises(SimulationInputError, match="'bad'"):
        random_property_sets(3, {"bad": 5})


# -- summaries -------------------------------------------------------------------------------------
def test_wilson_interval_known_values() -> None:
    low, high = wilson_interval(30, 100)
    assert low == pytest.approx(0.21888, abs=1e-4) and high == pytest.approx(0.39587, abs=1e-4)
    low, high = wilson_interval(0, 10)
    assert low == 0.0 and high == pytest.approx(0.27753, abs=1e-4)
    low, high = wilson_interval(10, 10)
    assert low == pytest.approx(0.72247, abs=1e-4) and high == pytest.approx(1.0)
    low, high = wilson_interval(0, 0)
    assert math.isnan(low) and math.isnan(high)


def _result(values: list[object], variants: list[object]) -> SimulationResult:
    n = len(values)
    idx = pd.RangeIndex(n)
    frame = build_frame(
        idx,
        [f"u{i}" for i in range(n)],
        ["beta", "exp"],
        {"beta": values, "exp": variants},
        multivariate={"exp"},
        payloads=None,
        errors=[None] * n,
    )
    inputs = pd.DataFrame({"distinct_id": [f"u{i}" for i in range(n)], "country": ["US", "DE"] * (n // 2)})
    return SimulationResult(frame, "local", inputs, variants={"exp": ["control", "test"]})


def test_summary_counts_shares_and_cis_on_known_counts() -> None:
    result = _result([True] * 30 + [False] * 70 + [None] * 2, ["test"] * 51 + ["control"] * 51)
    s = result.summary()
    beta = s[s["flag"] == "beta"].set_index("value")
    assert beta.loc[True, "count"] == 30 and beta.loc[False, "count"] == 70
    assert beta.loc[True, "n"] == 100 and beta.loc[True, "unknown"] == 2
    assert beta.loc[True, "share"] == pytest.approx(0.3)
    assert beta.loc[True, "ci_low"] == pytest.approx(0.21888, abs=1e-4)
    assert beta.loc[True, "ci_high"] == pytest.approx(0.39587, abs=1e-4)
    exp = s[s["flag"] == "exp"]
    assert exp["value"].tolist() == ["control", "test"]  # definition order
    assert exp["share"].tolist() == [0.5, 0.5]


def test_crosstab_against_a_property() -> None:
    result = _result([True, False] * 50, ["test", "control"] * 50)
    table = result.crosstab("beta", by="country")
    assert table.loc["US", True] == 50 and table.loc["DE", False] == 50
    with pytest.raises(SimulationInputError, match="'country'"):
        result.crosstab("beta", by="nope")
    assert "share [95% CI]" in result._repr_html_()


def test_plot_draws_one_bar_per_flag() -> None:
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    ax = _result([True, False] * 5, ["test", "control"] * 5).plot()
    assert [t.get_text() for t in ax.get_yticklabels()] == ["beta", "exp"]
    assert len(ax.patches) == 4


# -- decide parsing --------------------------------------------------------------------------------
def test_partial_errors_keep_computed_flags() -> None:
    row = parse_response(
        {
            "featureFlags": {"a": True, "b": "test"},
            "errorsWhileComputingFlags": True,
            "featureFlagPayloads": {"b": {"x": 1}},
        },
        detailed=False,
    )
    assert row.values == {"a": True, "b": "test"} and row.partial and row.error == PARTIAL_ERROR
    assert row.payloads == {"b": '{"x": 1}'}
    detailed = parse_response(
        {
            "flags": {
                "a": {
                    "key": "a",
                    "enabled": True,
                    "reason": {"code": "condition_match", "condition_index": 0},
                },
                "b": {"key": "b", "enabled": False, "failed": True},
            },
            "errorsWhileComputingFlags": True,
        },
        detailed=True,
    )
    assert (
        detailed.values == {"a": True}
        and detailed.failed == {"b": "no reason given"}  # failed flags carry their reason (NA, never False)
        and detailed.reasons == {"a": "condition_match"}
    )


# -- definitions and edits -------------------------------------------------------------------------
def test_definitions_in_every_form() -> None:
    forms = [
        FLAGS,
        json.dumps(FLAGS),
        {"flags": FLAGS, "group_type_mapping": {"0": "company"}, "cohorts": {}},
        [FeatureFlag.model_validate(f) for f in FLAGS],
        LocalEvaluationResponse.model_validate({"flags": FLAGS}),
        pd.DataFrame([{**f, "filters": f["filters"]} for f in FLAGS]),
    ]
    for form in forms:
        defs = load_definitions(form)
        assert defs.keys == ["beta", "exp"], type(form)
        assert defs.variants() == {"exp": ["control", "test"]}
    with pytest.raises(SimulationInputError, match="twice"):
        load_definitions([FLAGS[0], FLAGS[0]])
    with pytest.raises(SimulationInputError, match="not valid JSON"):
        load_definitions("{nope")


def test_edit_helpers_return_edited_copies_of_the_same_kind() -> None:
    edited = with_rollout(FLAGS, "beta", 80)
    assert edited[0]["filters"]["groups"][0]["rollout_percentage"] == 80
    assert FLAGS[0]["filters"]["groups"][0]["rollout_percentage"] == 50  # caller's definitions untouched
    models = with_variant_weights(
        [FeatureFlag.model_validate(f) for f in FLAGS], "exp", {"control": 20, "test": 80}
    )
    assert isinstance(models[1], FeatureFlag)
    assert [v.rollout_percentage for v in models[1].filters.multivariate.variants] == [20, 80]
    resp = with_condition(
        LocalEvaluationResponse.model_validate({"flags": FLAGS}), "beta", {"country": "US"}, 100
    )
    assert isinstance(resp, LocalEvaluationResponse)
    assert resp.flags[0].filters.groups[1].properties[0].key == "country"
    removed = without_condition(FLAGS, "exp", 0)
    assert removed[1]["filters"]["groups"] == []
    with pytest.raises(SimulationInputError, match="sum to 90"):
        with_variant_weights(FLAGS, "exp", {"control": 40, "test": 50})
    with pytest.raises(SimulationInputError, match="condition=3"):
        with_rollout(FLAGS, "beta", 10, condition=3)
    with pytest.raises(SimulationInputError, match="'nope'"):
        with_rollout(FLAGS, "nope", 10)
    with pytest.raises(SimulationInputError, match="0 to 100"):
        with_rollout(FLAGS, "beta", 120)


def test_diff_frames_counts_moves() -> None:
    idx = pd.RangeIndex(4)
    ids = ["a", "b", "c", "d"]
    base = build_frame(
        idx,
        ids,
        ["f", "v"],
        {"f": [True, False, False, None], "v": ["x", "y", False, "x"]},
        multivariate={"v"},
        errors=[None] * 4,
    )
    new = build_frame(
        idx,
        ids,
        ["f", "v"],
        {"f": [True, True, True, None], "v": ["y", "y", False, "x"]},
        multivariate={"v"},
        errors=[None] * 4,
    )
    moves, changes = diff_frames(base, new, ["f", "v"])
    assert moves.to_dict("records") == [
        {"flag": "f", "from": False, "to": True, "count": 2},
        {"flag": "v", "from": "x", "to": "y", "count": 1},
    ]
    assert changes["distinct_id"].tolist() == ["b", "c", "a"]


def test_plot_without_matplotlib_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes `import matplotlib` fail
    with pytest.raises(ImportError, match=r"pip install analytics-nb\[plot\]"):
        _result([True, False], ["test", "control"]).plot()


def test_to_csv_round_trips_through_frames(tmp_path: Path) -> None:
    from analytics_nb.frames import read_csv

    result = _result([True, None, False, True], ["test", "control", None, False])
    path = result.to_csv(tmp_path / "sim.csv")
    back = read_csv(path)
    assert back["distinct_id"].tolist() == result.frame["distinct_id"].tolist()
    assert back["beta"].astype(object).tolist() == [True, pd.NA, False, True]
    assert back["exp"].astype(object).tolist()[:2] == ["test", "control"]
