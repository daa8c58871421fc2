"""Cells as analysts hold them (issue 28 "cells", issue 27 #10): numpy scalars from `df.iloc[i]`, `pd.NA`,
`NaT`, bytes, sets, Decimal, tuples and objects in a property dict.

Before, one bytes / set / object value anywhere in the properties made the whole `evaluate_flags` call raise
`ValueError`, even when no filter read it; numpy integers and booleans compared as Python numbers where the
SDK does not (`lte 370` on `np.uint8(30)` is False in posthog 7.91.1). The SDK is fed the cells unconverted.
"""

from __future__ import annotations

import copy
import datetime as dt
import decimal
import logging
from typing import Any

import numpy as np
import pandas as pd
import pytest

from _flags import condition, definitions, flag, prop
from analytics_nb.flags import evaluate_flags

posthog = pytest.importorskip("posthog")
from posthog import Posthog  # noqa: E402

_CLIENT = Posthog("phc_cells_test", send=False, sync_mode=True)
logging.getLogger("posthog").setLevel(logging.CRITICAL)
pytestmark = pytest.mark.filterwarnings("ignore:`get_feature_flag` is deprecated:DeprecationWarning")

CELLS: dict[str, Any] = {
    "uint8": np.uint8(30),
    "int32": np.int32(5),
    "int64": np.int64(-3),
    "float32": np.float32(2.5),
    "float64": np.float64(2.5),
    "bool_true": np.True_,
    "bool_false": np.False_,
    "str_": np.str_("DE"),
    "na": pd.NA,
    "nat": pd.NaT,
    "bytes": b"DE",
    "set": {"DE"},
    "decimal": decimal.Decimal("2.5"),
    "tuple": ("DE",),
    "object": object(),
    "datetime64": np.datetime64("2024-01-01"),
    "timestamp": pd.Timestamp("2024-01-01"),
    "timedelta": dt.timedelta(days=1),
    "complex": 1j,
    "iloc_int": pd.DataFrame({"x": [30]}).iloc[0]["x"],
    "iloc_bool": pd.DataFrame({"x": [True]}).iloc[0]["x"],
}
FILTERS: list[tuple[str, Any]] = [
    ("exact", ["30"]),
    ("exact", ["true"]),
    ("exact", "DE"),
    ("is_not", ["5"]),
    ("icontains", "d"),
    ("not_icontains", "d"),
    ("starts_with", "3"),
    ("starts_with", "2.5"),  # an np.float64's text is its repr(), "np.float64(2.5)", to the SDK
    ("icontains", "float"),
    ("regex", "^3"),
    ("not_regex", "^3"),
    ("gt", 3),
    ("gte", "2"),
    ("lt", 3),
    ("lte", 370),
    ("lte", "abc"),
    ("is_date_before", "2025-01-01"),
    ("is_date_after", "2020-01-01"),
    ("semver_gt", "1.0.0"),
    ("semver_eq", "30.0.0"),
    ("semver_tilde", "2.5.0"),
    ("is_set", None),
    ("is_not_set", None),
    ("is_date_exact", "2024-01-01"),
]
INCONCLUSIVE = object()


def _sdk(flag: dict[str, Any], person: dict[str, Any]) -> Any:
    _CLIENT._update_flag_state(definitions(copy.deepcopy(flag)))
    value = _CLIENT.get_feature_flag(
        flag["key"],
        "user-1",
        person_properties=dict(person),
        only_evaluate_locally=True,
        send_feature_flag_events=False,
    )
    return INCONCLUSIVE if value is None else value


@pytest.mark.parametrize("name", list(CELLS))
def test_sdk_mode_compares_cells_as_the_sdk_does(name: str) -> None:
    cell = CELLS[name]
    for operator, value in FILTERS:
        definition = flag("f", condition(prop("p", value, operator)), id=1)
        want = _sdk(definition, {"p": cell})
        got = evaluate_flags([definition], "user-1", person_properties={"p": cell}, mode="sdk")["f"]
        assert (INCONCLUSIVE if got.value is None else got.value) == want, (name, operator, value)


@pytest.mark.parametrize("name", ["bytes", "set", "object", "complex", "timedelta", "tuple"])
@pytest.mark.parametrize("mode", ["server", "sdk"])
def test_a_value_no_filter_reads_never_matters(name: str, mode: str) -> None:
    flags = [
        flag("plan-flag", condition(prop("plan", ["pro"])), id=1),
        flag("reads-it", condition(prop("p", "x", "icontains")), id=1),
    ]
    person = {"plan": "pro", "p": CELLS[name]}
    results = evaluate_flags(flags, "user-1", person_properties=person, mode=mode)  # type: ignore[arg-type]
    assert results["plan-flag"].value is True
    reads = results["reads-it"]
    if mode == "sdk":
        assert reads.value is None and reads.reason == "inconclusive"
        assert reads.value is None or reads.value == _sdk(flags[1], person)
    elif name in ("set", "tuple"):
        assert reads.value is False  # sent as a JSON list, which has no "x"
    else:
        # the client cannot send it as JSON: unknown, with the reason, never an exception for the call
        assert reads.value is None and reads.reason == "inconclusive"
        assert "cannot be sent to the service as JSON" in (reads.inconclusive_cause or "")


def test_server_mode_reads_cells_as_their_json() -> None:
    """What the service compares is the JSON the client sends (`wire.cells.json_default`): numpy scalars as
    numbers, NA / NaT as null (present), sets as lists."""
    cases = [
        (np.uint8(30), ("lte", 370), True),
        (np.int32(5), ("exact", ["5"]), True),
        (np.True_, ("exact", ["true"]), True),
        (pd.NA, ("is_set", None), True),
        (pd.NA, ("exact", ["null"]), True),
        (pd.NaT, ("is_not_set", None), False),
        ({"a"}, ("icontains", "a"), True),
    ]
    for cell, (operator, value), want in cases:
        got = evaluate_flags(
            [flag("f", condition(prop("p", value, operator)), id=1)], "user-1", person_properties={"p": cell}
        )["f"]
        assert got.value is want, (cell, operator, value)
