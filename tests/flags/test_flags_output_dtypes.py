"""The output columns' dtypes (issue 15, "categorical output columns"), one rule for missing values, and what
an analyst does with a result: value_counts, groupby, comparing with decide, CSV, Arrow/Polars, chunks.

Columns: boolean flags ``boolean``; multivariate flags ``object`` (variant key / False / pd.NA);
``<key>:payload`` and ``<key>:reason`` ``category`` (missing: NaN); ``<key>:condition_index`` ``Int64``;
``error`` ``string``. ``pd.isna`` / ``.isna()`` finds the missing cells of every column.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pandas as pd
import pytest

from _flags import condition, flag
from analytics_nb import Client
from analytics_nb import frames as F
from analytics_nb.flags import REASON_CODES, REASON_DTYPE, FrameEvaluator, evaluate_frame
from analytics_nb.simulation import concat_frames, simulate
from analytics_nb.simulation._local import ChunkedEvaluator
from analytics_nb.tables import from_pandas

PRO = {"key": "plan", "operator": "exact", "value": "pro", "type": "person"}


MV_PAYLOADS = {"a": '{"x": 1}', "b": {"x": 2}, "unused": "never"}
FLAGS = [
    flag("mv", condition(PRO, rollout=70), variants={"a": 40, "b": 60}, payloads=MV_PAYLOADS),
    flag("on", condition(rollout=50), payloads={"true": "yes"}),
    flag("off", {"properties": []}, active=False),
]
"""Copied (``copy.deepcopy``) by each test that uses them: a test may edit its copy."""


def _frame(n: int = 400, bad: bool = True) -> pd.DataFrame:
    plan: list[Any] = ["pro", "free", "pro", None] * (n // 4)
    ids: list[Any] = [f"u{i}" for i in range(n)]
    if bad:
        ids[5] = None  # a row without a distinct_id: row 5 is an error row
    return pd.DataFrame({"distinct_id": pd.Series(ids, dtype=object), "plan": pd.Series(plan, dtype=object)})


@pytest.fixture(scope="module")
def out() -> pd.DataFrame:
    return evaluate_frame(_frame(), definitions=copy.deepcopy(FLAGS), payloads=True, reasons=True)


def test_each_output_column_has_its_dtype(out: pd.DataFrame) -> None:
    dtypes = {c: str(t) for c, t in out.dtypes.items()}
    assert dtypes["mv"] == "object" and dtypes["on"] == "boolean" and dtypes["off"] == "boolean"
    for key in ("mv", "on", "off"):
        assert dtypes[f"{key}:payload"] == "category"
        assert out[f"{key}:reason"].dtype == REASON_DTYPE
        assert dtypes[f"{key}:condition_index"] == "Int64"
    assert dtypes["error"] == "string"
    # payload categories: the flag's payload texts in definition order (JSON encoded when not text)
    assert out["mv:payload"].cat.categories.tolist() == ['{"x": 1}', '{"x": 2}', "never"]
    assert out["off:payload"].cat.categories.tolist() == []
    assert list(REASON_DTYPE.categories) == list(REASON_CODES) and "missing_dependency" in REASON_CODES
    # one byte a row for a handful of categories
    assert out["mv:reason"].array.codes.dtype == np.int8 and out["mv:payload"].array.codes.dtype == np.int8


def test_missing_values_one_rule_pd_isna(out: pd.DataFrame) -> None:
    err = out["error"].notna()
    assert err.tolist() == [i == 5 for i in range(len(out))]
    # an error row is missing in every flag column, whatever the column's missing marker
    for col in ("mv", "on", "mv:payload", "mv:reason", "on:reason", "mv:condition_index"):
        assert pd.isna(out.loc[5, col]), col
        assert out[col].isna().iloc[5], col
    assert out.loc[5, "mv"] is pd.NA and out.loc[5, "on"] is pd.NA  # flag values keep pd.NA
    assert isinstance(out.loc[5, "mv:reason"], float)  # category columns: NaN, like pandas 3's str dtype
    # a row without a payload is missing too, and isna says so
    no_variant = out["mv"].eq(False).fillna(False).to_numpy(dtype=bool)
    assert no_variant.any() and out.loc[no_variant, "mv:payload"].isna().all()
    assert out.loc[out["mv"].eq("a").fillna(False).to_numpy(dtype=bool), "mv:payload"].eq('{"x": 1}').all()


def test_value_counts_and_groupby_on_the_results(out: pd.DataFrame) -> None:
    counts = out["mv:reason"].value_counts()
    # every reason code is listed (zero rows included), the rows with a reason add up
    assert set(counts.index) == set(REASON_CODES)
    assert counts.sum() == len(out) - 1 and counts["flag_disabled"] == 0
    assert out["off:reason"].value_counts()["flag_disabled"] == len(out) - 1
    # groupby (pandas 3: observed=True by default) shows only the reasons that occur
    by_reason = out.groupby("mv:reason").size()
    assert set(by_reason.index) == {"condition_match", "no_condition_match", "out_of_rollout_bound"}
    assert by_reason.sum() == len(out) - 1
    # a multivariate column counts its variants and False; the payload column its texts
    values = out["mv"].value_counts()
    assert set(values.index) == {"a", "b", False}
    payloads = out["mv:payload"].value_counts()
    assert payloads['{"x": 1}'] == values["a"] and payloads['{"x": 2}'] == values["b"]
    assert payloads["never"] == 0
    # variant shares by reason: a crosstab of two result columns
    table = pd.crosstab(out["mv:reason"], out["mv"])
    assert table.loc["condition_match"].sum() == (out["mv:reason"] == "condition_match").sum()


def test_comparisons_with_text_and_between_runs(out: pd.DataFrame) -> None:
    assert (out["mv:reason"] == "condition_match").sum() > 0
    assert not (out["mv:reason"] == "not-a-reason").any()  # an unknown text compares unequal, no error
    again = FrameEvaluator(_frame(), definitions=copy.deepcopy(FLAGS)).run(payloads=True, reasons=True)
    # the same dtype in every run, so two runs' reason and payload columns compare element-wise
    assert (again["mv:reason"] == out["mv:reason"]).sum() == len(out) - 1
    assert (again["mv:payload"] == out["mv:payload"]).sum() == out["mv:payload"].notna().sum()


def test_what_if_rebuilds_changed_category_columns_and_reuses_the_others() -> None:
    ev = FrameEvaluator(_frame(), definitions=copy.deepcopy(FLAGS))
    first = ev.run(payloads=True, reasons=True)
    edited = copy.deepcopy(FLAGS)
    edited[0]["filters"]["groups"][0]["rollout_percentage"] = 100
    second = ev.run(definitions=edited, payloads=True, reasons=True)
    # the edited flag's reason and payload columns are new; the other flags' are handed back
    assert not np.shares_memory(first["mv:reason"].array.codes, second["mv:reason"].array.codes)
    assert (second["mv:reason"] == "out_of_rollout_bound").sum() == 0
    assert (first["mv:reason"] == "out_of_rollout_bound").sum() > 0
    for name in ("on:reason", "on:payload", "off:reason"):
        assert np.shares_memory(first[name].array.codes, second[name].array.codes), name
    # a new payload text in the edited definitions becomes a category of the re-run only
    edited[1]["filters"]["payloads"] = {"true": "new text"}
    third = ev.run(definitions=edited, payloads=True)
    assert third["on:payload"].cat.categories.tolist() == ["new text"]
    assert first["on:payload"].cat.categories.tolist() == ["yes"]


def test_csv_round_trip_keeps_categories_and_missing(out: pd.DataFrame, tmp_path: Any) -> None:
    path = tmp_path / "result.csv"
    F.to_csv(out, path)
    back = F.read_csv(path)
    pd.testing.assert_frame_equal(back, out)
    # unused categories travel too (value_counts and comparisons behave as before the export)
    assert back["mv:payload"].cat.categories.tolist() == ['{"x": 1}', '{"x": 2}', "never"]
    assert back["mv:reason"].dtype == REASON_DTYPE and pd.isna(back.loc[5, "mv:reason"])


def test_arrow_and_polars_outputs_are_dictionary_columns(out: pd.DataFrame) -> None:
    pa = pytest.importorskip("pyarrow")
    table = from_pandas(out, "arrow")
    for name in ("mv:payload", "mv:reason"):
        assert pa.types.is_dictionary(table.schema.field(name).type), name
    assert table.column("mv:reason").to_pylist() == [None if pd.isna(v) else v for v in out["mv:reason"]]
    assert table.column("mv").to_pylist()[5] is None
    pl = pytest.importorskip("polars")
    frame = from_pandas(out, "polars")
    assert frame.schema["mv:reason"] == pl.Categorical
    assert frame["mv:payload"].to_list() == [None if pd.isna(v) else v for v in out["mv:payload"]]


def test_chunked_results_keep_category_columns() -> None:
    from analytics_nb.simulation import load_definitions, normalise_property_sets

    sets = normalise_property_sets(_frame(400, bad=False))
    chunked = ChunkedEvaluator(sets, load_definitions(copy.deepcopy(FLAGS)), chunk_rows=150)
    whole = FrameEvaluator(sets.frame, definitions=copy.deepcopy(FLAGS)).run(payloads=True, reasons=True)
    got = chunked.run(payloads=True, reasons=True)
    assert got["mv:payload"].dtype == "category" and got["mv:reason"].dtype == REASON_DTYPE
    pd.testing.assert_frame_equal(got.reset_index(drop=True), whole.reset_index(drop=True))


def test_concat_frames_unions_categories_pandas_would_drop() -> None:
    a = pd.DataFrame({"p": pd.Categorical(["x", None]), "v": [1, 2]})
    b = pd.DataFrame({"p": pd.Categorical(["y", "x"]), "v": [3, 4]})
    assert pd.concat([a, b])["p"].dtype != "category"  # what pandas alone does
    got = concat_frames([a, b], ignore_index=True)
    assert got["p"].dtype == "category" and got["p"].cat.categories.tolist() == ["x", "y"]
    assert got["p"].tolist()[0] == "x" and pd.isna(got["p"].iloc[1]) and got["p"].tolist()[2:] == ["y", "x"]


def test_remote_and_local_columns_share_dtypes_and_compare(client: Client) -> None:
    """Both engines give the same dtypes, so an analyst compares local with decide column by column."""
    sets = pd.DataFrame(
        {"distinct_id": [f"cmp-{i}" for i in range(40)], "plan": ["pro", "free", "enterprise", None] * 10}
    )
    # these ids have no stored person in the sandbox: a column the sets lack is indeed "not set" for them
    result = simulate(
        sets, engine="both", client=client, payloads=True, reasons=True, missing_columns="not_set"
    )
    assert result.local is not None and result.remote is not None
    local, remote = result.local, result.remote
    for key in result.flags:
        assert local[f"{key}:reason"].dtype == REASON_DTYPE == remote[f"{key}:reason"].dtype, key
        assert remote[f"{key}:payload"].dtype == "category", key
        # the remote payload categories start with the definitions' texts, like the local engine's
        cats = local[f"{key}:payload"].cat.categories.tolist()
        assert remote[f"{key}:payload"].cat.categories.tolist()[: len(cats)] == cats, key
        agree = (local[f"{key}:reason"] == remote[f"{key}:reason"]).mean()
        assert agree > 0.9, (key, agree)
        assert str(local[key].dtype) == str(remote[key].dtype), key
    both = result.agreement
    assert both is not None and (both["share"] > 0.9).all()


def test_simulation_result_to_csv_reads_back_with_its_categories(tmp_path: Any) -> None:
    result = simulate(_frame(40, bad=False), engine="local", definitions=copy.deepcopy(FLAGS), reasons=True)
    path = result.to_csv(tmp_path / "sim.csv")
    back = F.read_csv(path)
    pd.testing.assert_frame_equal(back, result.frame.reset_index(drop=True))
    assert back["mv:reason"].dtype == REASON_DTYPE and back["on:payload"].cat.categories.tolist() == ["yes"]
