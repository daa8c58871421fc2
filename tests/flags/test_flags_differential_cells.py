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
