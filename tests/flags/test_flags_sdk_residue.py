"""sdk mode against posthog 7.91.1 on the cases issue 34 left: a NaN inside a list or dict, `[\\b]`, and the
date / version edges (`-9999y`, the text "NaN", `semver_wildcard "*.*"`).

Each case runs through the SDK's own client path (`get_feature_flag(..., only_evaluate_locally=True)`;
None means it would ask the server) and through `mode="sdk"`; the answers must be equal, inconclusive
included. SDK facts (posthog/feature_flags.py 7.91.1): `_json_value_to_string` prints lists and dicts item
by item and `_format_json_float` raises `InconclusiveMatchError` for a non-finite float, so `[nan]` is
inconclusive for every operator that reads the value as text; `_RegexTranslator` leaves `[\\b]` to
Python's `re` (a backspace); `relative_date_parse_for_feature_flag_matching` and `_semver_bounds` /
`parse_semver` make the date and version cases inconclusive.
"""

from __future__ import annotations

import copy
import logging
import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from posthog import Posthog

from _flags import condition, flag, prop
from analytics_nb.flags import evaluate_flag, evaluate_frame

_CLIENT = Posthog("phc_residue_test", send=False, sync_mode=True)
logging.getLogger("posthog").setLevel(logging.CRITICAL)
pytestmark = pytest.mark.filterwarnings("ignore:`get_feature_flag` is deprecated:DeprecationWarning")


def official(definition: dict[str, Any], person: dict[str, Any]) -> Any:
    """posthog 7.91.1's local answer for one flag (None: it would ask the server)."""
    _CLIENT._update_flag_state(
        {"flags": [copy.deepcopy(definition)], "group_type_mapping": {}, "cohorts": {}}
    )
    return _CLIENT.get_feature_flag(
        definition["key"],
        "u1",
        person_properties=copy.deepcopy(person),
        only_evaluate_locally=True,
        send_feature_flag_events=False,
    )


NAN_CELLS = [[math.nan], [1, math.nan], ["x", math.nan], [[math.nan]], {"a": math.nan}]
TEXT_FILTERS = [
    ("exact", "x"),
    ("exact", ["x", "[NaN]"]),
    ("is_not", "x"),
    ("icontains", "nan"),
    ("not_icontains", "x"),
    ("starts_with", "["),
    ("regex", "N"),
    ("not_regex", "x"),
    ("is_set", "is_set"),
    ("gt", 1),
]


@pytest.mark.parametrize("cell", NAN_CELLS, ids=repr)
@pytest.mark.parametrize(("operator", "value"), TEXT_FILTERS)
def test_nan_inside_a_container_as_the_sdk(cell: Any, operator: str, value: Any) -> None:
    """Before issue 34 the engine read the NaN as null and answered (`is_not "x"` on `[nan]`: True); the
    SDK cannot print it and asks the server."""
    definition = flag("f", condition(prop("p", value, operator)))
    assert evaluate_flag(definition, "u1", person_properties={"p": cell}, mode="sdk").value == official(
        definition, {"p": cell}
    )


def test_nan_in_a_list_cell_of_a_frame_as_the_sdk() -> None:
    definition = flag("f", condition(prop("p", "x", "is_not")))
    cells = [[math.nan], np.array([1.0, np.nan]), ["x"], ["y"]]
    frame = pd.DataFrame({"distinct_id": ["u1"] * len(cells), "p": cells})
    got = evaluate_frame(frame, [definition], mode="sdk")["f"].tolist()
    want = [official(definition, {"p": list(c)}) for c in cells]
    assert [None if pd.isna(g) else g for g in got] == want == [None, None, True, True]


def test_nan_inside_a_container_keeps_the_server_answer() -> None:
    """Server mode is unchanged: serde_json prints a non-finite float as null (`ryu_float_text`)."""
    definition = flag("f", condition(prop("p", "[null]", "exact")))
    assert evaluate_flag(definition, "u1", person_properties={"p": [math.nan]}).value is True


@pytest.mark.parametrize(
    ("pattern", "text"),
    [(r"[\b]", "a\b"), (r"[\b]", "abc"), (r"x[\b]y", "x\by"), (r"[^\b]", "\b"), (r"[a\b]+$", "a\ba")],
)
@pytest.mark.parametrize("operator", ["regex", "not_regex"])
def test_backspace_class_as_the_sdk(pattern: str, text: str, operator: str) -> None:
    """`[\\b]` is a backspace to the SDK's `re` and to fancy_regex's parser (src/parse.rs `parse_class`);
    before issue 34 the engine found it invalid and answered inconclusive."""
    definition = flag("f", condition(prop("p", pattern, operator)))
    got = evaluate_flag(definition, "u1", person_properties={"p": text}, mode="sdk").value
    want = official(definition, {"p": text})
    assert want is not None
    assert got == want


@pytest.mark.parametrize(
    ("operator", "value", "cell"),
    [
        ("is_date_after", "-9999y", "2020-01-01"),
        ("is_date_before", "-9999y", "2020-01-01"),
        ("is_date_after", "NaN", "2020-01-01"),
        ("is_date_before", "2020-01-01", "NaN"),
        ("is_date_after", "1960-01-01", "NaN"),
        ("semver_wildcard", "*.*", "1.2.3"),
        ("semver_wildcard", "*.*.*", "1.2.3"),
    ],
)
def test_date_and_version_edges_as_the_sdk(operator: str, value: Any, cell: Any) -> None:
    definition = flag("f", condition(prop("p", value, operator)))
    got = evaluate_flag(definition, "u1", person_properties={"p": cell}, mode="sdk").value
    assert got == official(definition, {"p": cell})


NESTED_CELLS = [
    [pd.NA],
    [pd.NaT],
    [np.int64(3)],
    [np.bool_(True)],
    {"a": pd.NA},
    [1, [pd.NA]],
    ["x", math.inf],
]
NESTED_FILTERS = [
    *TEXT_FILTERS,
    ("is_not_set", "is_not_set"),
    ("lt", 5),
    ("semver_gt", "1.0.0"),
    ("semver_tilde", "1.2"),
    ("is_date_before", "2030-01-01"),
    ("exact", []),
    ("exact", "true"),
    ("is_not", ["true"]),
]


@pytest.mark.parametrize("cell", NESTED_CELLS, ids=repr)
@pytest.mark.parametrize(("operator", "value"), NESTED_FILTERS)
def test_values_outside_json_inside_a_container_as_the_sdk(cell: Any, operator: str, value: Any) -> None:
    """`pd.NA`, `NaT` or a numpy scalar inside a list or dict: the SDK's `_json_scalar_to_string` raises at
    it, so every text, exact and regex filter is inconclusive (before: the engine read them as null or as
    plain numbers and answered; 66 of these 126 answers differed)."""
    definition = flag("f", condition(prop("p", value, operator)))
    got = evaluate_flag(definition, "u1", person_properties={"p": cell}, mode="sdk").value
    assert got == official(definition, {"p": cell})


def test_numpy_float_inside_a_container_answers_as_the_sdk() -> None:
    """The SDK prints `[np.float64(1.5)]` as its repr text ("[np.float64(1.5)]") and answers; the engine
    answers the same (issue 34; before, it said unknown)."""
    definition = flag("f", condition(prop("p", "np.float64", "icontains")))
    assert official(definition, {"p": [np.float64(1.5)]}) is True
    person = {"p": [np.float64(1.5)]}
    assert evaluate_flag(definition, "u1", person_properties=person, mode="sdk").value is True
