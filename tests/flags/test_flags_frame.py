"""The vectorised frame evaluator agrees with the scalar evaluator row by row, and handles pandas values."""

from __future__ import annotations

import datetime as dt
import random
from collections import Counter
from typing import Any

import numpy as np
import pandas as pd
import pytest

from _flag_strategies import DATETIMES, STRINGS, cohorts, flag_definition, property_value
from _flags import condition, flag, prop
from analytics_nb.flags import FrameEvaluator, evaluate_flag, evaluate_flags, evaluate_frame

MAPPING = {"0": "company", "1": "team"}
ROUNDS = 12


def random_frame(rng: random.Random, n: int) -> pd.DataFrame:
    companies = ["acme", "globex", None, "initech"]
    frame = pd.DataFrame(
        {
            "distinct_id": [f"user-{rng.randrange(10_000)}" for _ in range(n)],
            # pandas 3 str dtype with missing values
            "plan": pd.array(
                [rng.choice(["pro", "Pro", "free", None, "true", "1.2.3"]) for _ in range(n)], dtype="str"
            ),
            # nullable integers
            "age": pd.array([rng.choice([None, 5, 17, 30, 42, 200]) for _ in range(n)], dtype="Int64"),
            # an object column of anything JSON-like (bools next to ints: 1 and True must stay apart)
            "email": pd.Series([rng.choice([None, property_value(rng)]) for _ in range(n)], dtype=object),
            "version": pd.Series([rng.choice([None, *STRINGS[16:23]]) for _ in range(n)], dtype=object),
            "signup": pd.Series([rng.choice([None, *DATETIMES[:4]]) for _ in range(n)], dtype=object),
            "beta": pd.array([rng.choice([True, False, None]) for _ in range(n)], dtype="boolean"),
            **{
                f"$feature_enrollment/flag-{j}": [rng.choice([True, False, "true", None]) for _ in range(n)]
                for j in range(5)
            },
            "group:company": [rng.choice(companies) for _ in range(n)],
            "group:company:plan": [rng.choice(["pro", "free", None, 5, True]) for _ in range(n)],
            "group:company:age": [rng.choice([1.5, None, 30.25]) for _ in range(n)],
        }
    )
    return frame


def row_inputs(frame: pd.DataFrame, i: int) -> dict[str, Any]:
    row = frame.iloc[i]
    keys = [
        "plan",
        "age",
        "email",
        "version",
        "signup",
        "beta",
        *(f"$feature_enrollment/flag-{j}" for j in range(5)),
    ]
    # a missing cell means "lacks the property" in a frame (the default); in a dict, None would be null
    # typed cells as the frame engine reads them: Python values (the dict API in sdk mode compares numpy
    # scalars as the SDK does, tests/flags/test_flags_cells.py)
    person = {k: _native(row[k]) for k in keys if not _missing(row[k])}
    groups = {"company": row["group:company"]} if row["group:company"] is not None else {}
    group_props = {
        "company": {
            k: _native(row[f"group:company:{k}"])
            for k in ("plan", "age")
            if not _missing(row[f"group:company:{k}"])
        }
    }
    return {"person_properties": person, "groups": groups, "group_properties": group_props}


def _native(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) and not isinstance(value, np.datetime64) else value


def _missing(value: Any) -> bool:
    return value is None or value is pd.NA or value is pd.NaT or (isinstance(value, float) and value != value)


def same(got: Any, want: Any) -> bool:
    if got is pd.NA or want is pd.NA:
        return got is pd.NA and want is pd.NA
    if isinstance(got, (bool, np.bool_)):
        return isinstance(want, bool) and bool(got) == want
    return isinstance(got, str) and got == want


def scalar_value(result: Any) -> Any:
    return pd.NA if result.value is None else result.value


@pytest.mark.parametrize("mode", ["server", "sdk"])
def test_frame_agrees_with_scalar_engine(mode: str) -> None:
    rng = random.Random(7 if mode == "sdk" else 8)
    checked = 0
    reasons: Counter[str] = Counter()
    for round_ in range(ROUNDS):
        cohort_defs = cohorts(rng)
        flags = [flag_definition(rng, f"flag-{j}", [*cohort_defs, "99"], group=j == 3) for j in range(5)]
        flags[4]["filters"]["groups"].append(
            {
                "properties": [
                    {
                        "key": "flag-0",
                        "type": "flag",
                        "operator": "flag_evaluates_to",
                        "value": rng.choice([True, False]),
                    }
                ],
                "rollout_percentage": None,
            }
        )
        frame = random_frame(rng, 120)
        frame.index = pd.RangeIndex(1000 + round_ * 200, 1000 + round_ * 200 + 120)
        now = dt.datetime.now(dt.UTC)
        out = evaluate_frame(
            frame,
            definitions=flags,
            mode=mode,
            cohorts=cohort_defs,
            group_type_mapping=MAPPING,
            payloads=True,
            reasons=True,
        )
        assert list(out.index) == list(frame.index)
        for i in range(len(frame)):
            expected = evaluate_flags(
                flags,
                frame["distinct_id"].iloc[i],
                mode=mode,
                cohorts=cohort_defs,
                group_type_mapping=MAPPING,
                now=now,
                **row_inputs(frame, i),
            )
            for key, res in expected.items():
                got = out[key].iloc[i]
                want = scalar_value(res)
                assert same(got, want), (key, i, got, res, row_inputs(frame, i))
                reason = out[f"{key}:reason"].iloc[i]
                assert reason == res.reason, (key, i, reason, res)
                reasons[reason] += 1
                cond = out[f"{key}:condition_index"].iloc[i]
                assert (cond is pd.NA and res.condition_index is None) or cond == res.condition_index
                pay = out[f"{key}:payload"].iloc[i]
                assert (pd.isna(pay) and res.payload is None) or pay == res.payload
                checked += 1
    assert checked == ROUNDS * 120 * 5
    # every reason code must have been compared, or the agreement proves little
    expected_reasons = {
        "condition_match",
        "no_condition_match",
        "out_of_rollout_bound",
        "no_group_type",
        "super_condition_value",
        "holdout_condition_value",
        "flag_disabled",
        "inconclusive",
    }
    if mode == "server":
        expected_reasons.add("error")  # the strategies include an operator neither side knows
    assert set(reasons) - {"error"} == expected_reasons - {"error"}, reasons
    assert expected_reasons <= set(reasons), reasons


def test_output_dtypes_and_columns() -> None:
    flags = [
        flag("bool-flag", condition(rollout=50)),
        flag("mv", {"rollout_percentage": 100}, variants={"a": 50, "b": 50}),
    ]
    frame = pd.DataFrame({"distinct_id": ["a", "b", "c"], "plan": ["x", None, "y"]}, index=[10, 20, 30])
    out = evaluate_frame(frame, definitions=flags)
    assert list(out.columns) == ["distinct_id", "bool-flag", "mv", "error"]
    assert str(out["bool-flag"].dtype) == "boolean"
    assert out["mv"].dtype == object and set(out["mv"]) <= {"a", "b"}
    assert list(out.index) == [10, 20, 30]
    assert out["error"].isna().all()


def test_int_column_compares_as_number_and_missing_cells_are_absent() -> None:
    over_9 = flag("f", condition(prop("age", "9", "gt")))
    frame = pd.DataFrame(
        {"distinct_id": ["a", "b", "c", "d"], "age": pd.array([10, 2, None, 100], dtype="Int64")}
    )
    assert list(evaluate_frame(frame, definitions=[over_9])["f"].astype(object)) == [True, False, False, True]
    sdk = evaluate_frame(frame, definitions=[over_9], mode="sdk")["f"]
    assert (sdk.iloc[2] is pd.NA and sdk.iloc[0] is True) or bool(sdk.iloc[0])
    # numpy int64 too
    frame["age"] = np.array([10, 2, 3, 100], dtype=np.int64)
    assert list(evaluate_frame(frame, definitions=[over_9])["f"].astype(object)) == [True, False, False, True]


def test_float_cells_compare_as_floats_like_the_scalar_engine() -> None:
    """A float64 cell 5.0 is the JSON number 5.0, whose text is "5.0" for the service and the SDK alike
    (the scalar engine agrees); keep integer columns with gaps as Int64 to compare them as integers."""
    five_seats = flag("f", {"properties": [prop("seats", "5")]})
    frame = pd.DataFrame({"distinct_id": ["a", "b", "c"], "seats": [5.0, np.nan, 6.0]})
    out = evaluate_frame(frame, definitions=[five_seats], mode="sdk")["f"]
    assert bool(out.iloc[0]) is False and out.iloc[1] is pd.NA and bool(out.iloc[2]) is False
    assert evaluate_flag(five_seats, "a", person_properties={"seats": 5.0}, mode="sdk").value is False
    frame["seats"] = frame["seats"].astype("Int64")
    out = evaluate_frame(frame, definitions=[five_seats], mode="sdk")["f"]
    assert bool(out.iloc[0]) is True and out.iloc[1] is pd.NA and bool(out.iloc[2]) is False


def test_nat_and_timestamps() -> None:
    before_2024 = flag("f", {"properties": [prop("signup", "2024-01-01", "is_date_before")]})
    frame = pd.DataFrame(
        {
            "distinct_id": ["a", "b", "c"],
            "signup": pd.to_datetime(["2023-05-01", None, "2025-01-01"], utc=True),
        }
    )
    out = evaluate_frame(frame, definitions=[before_2024], mode="sdk")["f"]
    assert bool(out.iloc[0]) is True and out.iloc[1] is pd.NA and bool(out.iloc[2]) is False


def test_bad_cell_is_answered_by_the_filter_that_reads_it() -> None:
    """A set cell is no longer a row error (issue 28): server mode reads the JSON the client sends (a list,
    which is not "pro"); a missing distinct_id is still its row's error."""
    pro = flag("f", {"properties": [prop("plan", "pro")]})
    frame = pd.DataFrame(
        {
            "distinct_id": ["a", "b", None, "d"],
            "plan": pd.Series(["pro", {1, 2}, "pro", "free"], dtype=object),
        }
    )
    out = evaluate_frame(frame, definitions=[pro])
    assert out["f"].tolist()[:2] == [True, False] and out["f"].iloc[2] is pd.NA and not out["f"].iloc[3]
    assert "distinct_id" in out["error"].iloc[2]
    assert out["error"].iloc[[0, 1, 3]].isna().all()
    sdk = evaluate_frame(frame, definitions=[pro], mode="sdk", reasons=True)
    assert sdk["f"].iloc[1] is pd.NA and sdk["f:reason"].iloc[1] == "inconclusive"
    assert sdk["error"].iloc[[0, 1, 3]].isna().all()


def test_person_properties_dict_column_and_group_properties_column() -> None:
    pro = flag("f", {"properties": [prop("plan", "pro")]})
    big = prop("size", 10, "gte", type="group", group_type_index=0)
    gflag = flag("g", {"properties": [big]}, aggregation_group_type_index=0)
    frame = pd.DataFrame(
        {
            "distinct_id": ["a", "b", "c"],
            "person_properties": [{"plan": "pro"}, {"plan": "free"}, {}],
            "group:company": ["acme", "globex", None],
            "group_properties": [{"company": {"size": 50}}, {"company": {"size": 2}}, None],
        }
    )
    out = evaluate_frame(frame, definitions=[pro, gflag], group_type_mapping={"0": "company"}, reasons=True)
    assert list(out["f"].astype(object)) == [True, False, False]
    assert list(out["g"].astype(object)) == [True, False, False]
    assert out["g:reason"].iloc[2] == "no_group_type"


def test_what_if_rerun_matches_fresh_evaluation() -> None:
    rng = random.Random(3)
    flags = [flag_definition(rng, f"flag-{j}", [], extras=False) for j in range(4)]
    frame = random_frame(rng, 400)
    ev = FrameEvaluator(frame, definitions=flags, group_type_mapping=MAPPING)
    first = ev.run(reasons=True)
    edited = [dict(f, filters=dict(f["filters"])) for f in flags]
    for f in edited:
        f["filters"]["groups"] = [dict(g, rollout_percentage=37) for g in f["filters"]["groups"]] or [
            {"properties": [], "rollout_percentage": 37}
        ]
    rerun = ev.run(definitions=edited, reasons=True)
    fresh = evaluate_frame(frame, definitions=edited, group_type_mapping=MAPPING, reasons=True)
    pd.testing.assert_frame_equal(rerun, fresh)
    assert not first.equals(rerun)


def test_now_fixes_the_instant_relative_dates_are_read_against() -> None:
    """`now=` pins "-7d" (evaluators over parts of one population pass one instant)."""
    import datetime as dt

    recent = flag("recent", condition(prop("joined", "-7d", "is_date_after")))
    frame = pd.DataFrame({"distinct_id": ["a"], "joined": ["2026-01-15"]})
    early = evaluate_frame(frame, definitions=[recent], now=dt.datetime(2026, 1, 20, tzinfo=dt.UTC))
    late = evaluate_frame(frame, definitions=[recent], now=dt.datetime(2026, 1, 30, tzinfo=dt.UTC))
    assert bool(early["recent"].iloc[0]) is True and bool(late["recent"].iloc[0]) is False
