"""Widened differential fuzz (issue 28), bounded: the flag cases of test_flags_differential.py with about half
of the property values replaced by cells as analysts hold them (numpy scalars, `pd.NA`, `NaT`, bytes, sets,
Decimal, tuples, objects, `np.datetime64`, `pd.Timestamp`...), fed unconverted to posthog 7.91.1's client path
and to the engine in sdk mode. sdk mode must agree on >= 99.9% of the answers; the only differences allowed
are the documented ones (docs/explanation/engine.md, "Differences"). The bigger run is
`bench/flags_differential.py`, which prints the agreement figure."""

from __future__ import annotations

import logging
import os

import pytest

pytest.importorskip("posthog")
from _raw_cell_fuzz import run

pytestmark = pytest.mark.filterwarnings("ignore:`get_feature_flag` is deprecated:DeprecationWarning")
CASES = int(os.environ.get("FLAGS_DIFF_CELL_CASES", "1000"))


def test_sdk_mode_agrees_with_the_sdk_on_raw_cells() -> None:
    logging.getLogger("posthog").setLevel(logging.CRITICAL)
    result = run(CASES, seed=20261126)
    assert result.total == 3 * CASES
    # most subjects hold a raw cell, and every kind of answer occurs, or the agreement proves little
    assert result.raw_subjects > 0.8 * result.total, result.raw_subjects
    kinds = ("True", "False", "variant", "unknown")
    assert min(result.outcomes[k] for k in kinds) > CASES // 20, result.outcomes
    assert result.share >= 0.999, "\n\n".join(result.disagreements[:5])


def test_an_exponent_float64_ends_the_flag_as_the_sdk_does() -> None:
    """posthog 7.91.1's `_format_json_float` splits repr(np.float64(1e16)) = "np.float64(1e+16)" at "e" and
    `int("+16)")` raises ValueError; the client reads that as "ask the server" for the whole flag, even when
    a later condition matches (the engine answered True from the later condition)."""
    import numpy as np

    from analytics_nb.flags import evaluate_flags

    flag = {
        "key": "f",
        "active": True,
        "filters": {
            "groups": [
                {"properties": [{"key": "email", "operator": "icontains", "value": "x", "type": "person"}]},
                {"properties": [], "rollout_percentage": 100},
            ]
        },
    }
    got = evaluate_flags([flag], "u", person_properties={"email": np.float64(1e16)}, mode="sdk")["f"]
    assert got.value is None and got.reason == "inconclusive"
    plain = evaluate_flags([flag], "u", person_properties={"email": np.float64(1.5)}, mode="sdk")["f"]
    assert plain.value is True


def test_a_pd_na_enrollment_is_no_answer() -> None:
    """The SDK's `enrollment is True or enrollment == "true"` on `pd.NA` is `pd.NA`, handed back as the
    flag's value; the engine answers inconclusive (it answered False)."""
    import pandas as pd

    from analytics_nb.flags import evaluate_flags

    flag = {"key": "f", "active": True, "filters": {"groups": [], "feature_enrollment": True}}
    person = {"$feature_enrollment/f": pd.NA}
    got = evaluate_flags([flag], "u", person_properties=person, mode="sdk")["f"]
    assert got.value is None and got.reason == "inconclusive"


@pytest.mark.parametrize(
    ("person", "expected"),
    [
        # the raising filter comes first: the SDK aborts the flag although a later filter is False
        ({"email": "np.float64(1e16)", "age": 1.5}, None),
        # a False filter before it: the condition is ruled out before the raise, the next one matches
        ({"age": 1.5, "email": "np.float64(1e16)"}, True),
        # an undecided filter (absent property) before it: the condition is undecided, the next one matches
        ({"email": "np.float64(1e16)"}, True),
    ],
)
def test_the_sdk_exception_is_read_in_filter_order(person: dict[str, object], expected: object) -> None:
    """posthog 7.91.1 `_match_condition_properties`: an unexpected exception ends the flag ("ask the server")
    when no earlier filter of the condition was undecided, else ends the condition as undecided; a later
    False filter is never reached. Checked against the SDK's client path itself."""
    import numpy as np
    from _raw_cell_fuzz import _official, canonical

    from analytics_nb.flags import evaluate_flags

    cells = {k: (np.float64(1e16) if v == "np.float64(1e16)" else v) for k, v in person.items()}
    filters = [
        {"key": k, "operator": "icontains" if k == "email" else "lte", "value": "x" if k == "email" else -0.5}
        for k in ([*person] if "age" in person else ["age", "email"])
    ]
    flag = {
        "key": "main-flag",
        "active": True,
        "filters": {
            "groups": [
                {"properties": [{**f, "type": "person"} for f in filters]},
                {"properties": [], "rollout_percentage": 100},
            ]
        },
    }
    case = {"flags": [flag], "cohorts": {}}
    subject = {"distinct_id": "u", "person": cells, "groups": {}, "group_props": {}}
    got = evaluate_flags([flag], "u", person_properties=cells, mode="sdk")["main-flag"].value
    assert got is expected
    assert canonical(_official(case, subject)) == canonical(
        "<inconclusive>" if expected is None else expected
    )


def _container_cells() -> list[object]:
    import numpy as np

    f = np.float64
    return [
        [f(1.5)],
        ["x", f(2.0)],
        [[f(1.5)], "y"],
        {"a": f(1.5), "b": "pro"},
        [{"k": f(-2.25)}],
        [f(1e16)],
        [f(1e-5)],
        [np.int64(3), f(1e16)],  # the int64 item raises first: inconclusive, not the abort
        [np.int64(3)],
        [np.bool_(True)],
        [np.str_("pro"), f(30.0)],
        [np.float32(1.5)],
        [f("nan")],
        {1: f(1.5)},
        (f(1.5),),
    ]


_CONTAINER_FILTERS = [
    ("exact", "[np.float64(1.5)]"),
    ("exact", ["[np.float64(1.5)]", "x"]),
    ("exact", "true"),
    ("exact", []),
    ("is_not", '["x",np.float64(2.0)]'),
    ("icontains", "FLOAT64"),
    ("not_icontains", "1.5"),
    ("starts_with", "[{"),
    ("ends_with", ")]"),
    ("regex", r"^\[np\.float64\(1\.5\)\]$"),
    ("regex", r'"pro"'),
    ("not_regex", "zzz"),
    ("gt", "1"),
    ("is_date_before", "2024-01-01"),
    ("semver_eq", "1.0.0"),
]


@pytest.mark.parametrize(("operator", "value"), _CONTAINER_FILTERS)
def test_containers_of_numpy_scalars_answer_as_the_sdk(operator: str, value: object) -> None:
    """A list or dict cell holding numpy scalars, fed raw to posthog 7.91.1's client path and to the engine
    in sdk mode: the SDK prints an `np.float64` item with `repr()` ("[np.float64(1.5)]") and compares that
    text, so exact / text / regex filters answer (issue 34: the engine answered unknown for every
    container holding a numpy float); `np.int64` / `np.bool_` / `np.float32` items and tuples stay
    unknown, an exponent float64 item ends the flag, as there."""
    import copy

    from _raw_cell_fuzz import _CLIENT, INCONCLUSIVE, canonical

    from analytics_nb.flags import evaluate_flags

    logging.getLogger("posthog").setLevel(logging.CRITICAL)
    flag = {
        "id": 1,
        "key": "f",
        "active": True,
        "filters": {
            "groups": [
                {
                    "properties": [{"key": "p", "type": "person", "operator": operator, "value": value}],
                    "rollout_percentage": 100,
                }
            ]
        },
    }
    _CLIENT._update_flag_state(
        {
            "flags": [copy.deepcopy(flag)],
            "group_type_mapping": {},
            "cohorts": {},
            "property_matching_version": 1,
        }
    )
    answered = 0
    for cell in _container_cells():
        official = _CLIENT.get_feature_flag(
            "f",
            "u",
            person_properties={"p": cell},
            only_evaluate_locally=True,
            send_feature_flag_events=False,
        )
        ours = evaluate_flags([flag], "u", person_properties={"p": cell}, mode="sdk")["f"].value
        expected = canonical(INCONCLUSIVE if official is None else official)
        assert canonical(INCONCLUSIVE if ours is None else ours) == expected, (cell, official, ours)
        answered += expected[0] == "bool"
    assert answered >= 5 or operator in ("gt", "is_date_before", "semver_eq"), answered


@pytest.mark.parametrize(("operator", "value"), _CONTAINER_FILTERS)
def test_frames_read_containers_of_numpy_scalars_as_the_dict_api(operator: str, value: object) -> None:
    """sdk mode over a frame whose object column holds list / dict cells of numpy scalars (a parquet list
    column, `df.to_dict("records")`): every cell answers as the dict API answers it (which the test above
    holds to posthog 7.91.1). Before, the frame path turned the items into plain numbers, so
    `[np.float64(1.5)]` with `icontains "FLOAT64"` was False where the SDK says True."""
    import pandas as pd

    from analytics_nb.flags import evaluate_flags, evaluate_frame

    flag = {
        "id": 1,
        "key": "f",
        "active": True,
        "filters": {
            "groups": [
                {
                    "properties": [{"key": "p", "type": "person", "operator": operator, "value": value}],
                    "rollout_percentage": 100,
                }
            ]
        },
    }
    cells = _container_cells()
    frame = pd.DataFrame(
        {"distinct_id": [f"u{i}" for i in range(len(cells))], "p": pd.Series(cells, dtype=object)}
    )
    got = evaluate_frame(frame, definitions=[flag], mode="sdk")
    for i, cell in enumerate(cells):
        expected = evaluate_flags([flag], f"u{i}", person_properties={"p": cell}, mode="sdk")["f"].value
        ours = got["f"].iloc[i]
        assert (None if pd.isna(ours) else bool(ours)) == expected, (cell, ours, expected)
