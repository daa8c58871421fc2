"""Widened differential fuzz (issue 28): the flag cases of test_flags_differential.py with property values
replaced, at random, by cells as analysts hold them (numpy scalars from `df.iloc[i]`, `pd.NA`, `NaT`, bytes,
sets, Decimal, tuples, arbitrary objects...), fed to posthog 7.91.1's client path unconverted and to the
engine in sdk mode. Shared by tests/flags/test_flags_differential_cells.py (a bounded run, every time) and
bench/flags_differential.py (a bigger run that prints the agreement figure)."""

from __future__ import annotations

import copy
import datetime as dt
import decimal
import json
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from posthog import Posthog
from test_flags_differential import GROUP_TYPE_MAPPING, make_case

from analytics_nb.flags import evaluate_flags

_CLIENT = Posthog("phc_raw_cell_fuzz", send=False, sync_mode=True)
INCONCLUSIVE = "<inconclusive>"


class _Thing:
    """An arbitrary object with a readable repr (the SDK's text of it is never its JSON)."""

    def __repr__(self) -> str:
        return "<thing>"


def raw_cell(rng: random.Random) -> Any:
    """A cell as pandas hands it over: numpy scalars of each kind, missing markers, and non-JSON values."""
    pick = rng.randrange(20)
    if pick == 0:
        return np.int64(rng.choice([0, 1, 5, 30, -3, 370]))
    if pick == 1:
        return np.int32(rng.choice([0, 5, 30]))
    if pick == 2:
        return np.uint8(rng.choice([0, 30, 255]))
    if pick == 3:
        return np.float64(rng.choice([0.0, 1.5, 30.0, -2.25, 1e16]))
    if pick == 4:
        return np.float32(rng.choice([1.5, 30.0, 0.1]))
    if pick == 5:
        return np.bool_(rng.random() < 0.5)
    if pick == 6:
        return np.str_(rng.choice(["pro", "DE", "1.2.3", "2024-01-01", "true"]))
    if pick == 7:
        return pd.NA
    if pick == 8:
        return pd.NaT
    if pick == 9:
        return rng.choice([b"pro", b"DE", b""])
    if pick == 10:
        return rng.choice([{"pro"}, {1, 2}, set(), frozenset({"a"})])
    if pick == 11:
        return decimal.Decimal(rng.choice(["2.5", "30", "-1", "1E+2", "NaN"]))
    if pick == 12:  # tuples, and lists / dicts of numpy scalars (issue 34: the SDK prints np.float64 items)
        f = np.float64
        return rng.choice(
            [
                ("pro",),
                (1, 2),
                (),
                [f(1.5)],
                ["pro", f(30.0)],
                {"a": f(-2.25)},
                [np.int64(5), f(1.5)],
                [f(1e16)],
            ]
        )
    if pick == 13:
        return _Thing()
    if pick == 14:
        return np.datetime64(rng.choice(["2024-01-01", "2031-06-01T12:00"]))
    if pick == 15:
        return pd.Timestamp(rng.choice(["2024-01-01", "2023-06-01 12:00"]))
    if pick == 16:
        return rng.choice([dt.timedelta(days=1), 1j])
    if pick == 17:
        return pd.DataFrame({"x": [rng.choice([30, 5, 0])]}).iloc[0]["x"]  # what df.iloc[i] gives
    if pick == 18:
        return np.nan
    return np.array([1, 2]) if rng.random() < 0.3 else np.float64("nan")


def rawify(rng: random.Random, props: dict[str, Any], share: float) -> dict[str, Any]:
    """`props` with about `share` of its values replaced by raw cells (and sometimes one more key)."""
    out = {k: (raw_cell(rng) if rng.random() < share else v) for k, v in props.items()}
    if rng.random() < share:
        out[rng.choice(["plan", "age", "email", "version", "signup", "beta"])] = raw_cell(rng)
    return out


def widened_case(rng: random.Random, share: float = 0.5) -> dict[str, Any]:
    case = make_case(rng)
    for subject in case["subjects"]:
        subject["person"] = rawify(rng, subject["person"], share)
        subject["group_props"] = {k: rawify(rng, v, share) for k, v in subject["group_props"].items()}
    return case


def _official(case: dict[str, Any], subject: dict[str, Any]) -> Any:
    flags = case["flags"]
    _CLIENT._update_flag_state(
        {
            "flags": copy.deepcopy(flags),
            "group_type_mapping": GROUP_TYPE_MAPPING,
            "cohorts": copy.deepcopy(case["cohorts"]),
            "property_matching_version": 1,
        }
    )
    value = _CLIENT.get_feature_flag(
        flags[-1]["key"],
        subject["distinct_id"],
        groups=subject["groups"],
        person_properties=copy.deepcopy(subject["person"]),
        group_properties=copy.deepcopy(subject["group_props"]),
        only_evaluate_locally=True,
        send_feature_flag_events=False,
    )
    return INCONCLUSIVE if value is None else value


def _ours(case: dict[str, Any], subject: dict[str, Any]) -> Any:
    got = evaluate_flags(
        case["flags"],
        subject["distinct_id"],
        person_properties=subject["person"],
        groups=subject["groups"],
        group_properties=subject["group_props"],
        group_type_mapping=GROUP_TYPE_MAPPING,
        cohorts=case["cohorts"],
        mode="sdk",
    )[case["flags"][-1]["key"]]
    return INCONCLUSIVE if got.value is None else got.value


@dataclass
class Agreement:
    """Counts of a run: answers compared, answers that agree, the outcome mix, the disagreements."""

    total: int = 0
    agreed: int = 0
    raw_subjects: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    disagreements: list[str] = field(default_factory=list)

    @property
    def share(self) -> float:
        return self.agreed / self.total if self.total else 1.0


def canonical(value: Any) -> tuple[str, Any]:
    """An answer as the analyst reads it. The SDK's feature-enrollment shortcut returns the comparison it
    made on the cell (`enrollment is True or enrollment == "true"`): `np.False_` for a numpy cell, `pd.NA`
    for `pd.NA`, an array for an array. A numpy bool is the same answer as a bool; `pd.NA` or an array is no
    answer, as inconclusive is (both documented in docs/explanation/engine.md)."""
    if isinstance(value, (bool, np.bool_)):
        return ("bool", bool(value))
    if isinstance(value, str) and value != INCONCLUSIVE:
        return ("str", value)
    return ("unknown", None)  # inconclusive, or a value that is no flag answer (pd.NA, an array)


def outcome(value: Any) -> str:
    kind, plain = canonical(value)
    if kind == "str":
        return "variant"
    return str(plain) if kind == "bool" else kind


def _has_raw(props: dict[str, Any]) -> bool:
    return any(
        not isinstance(v, (str, bool, int, float, list, dict, type(None)))
        or type(v) not in (str, bool, int, float, list, dict, type(None))
        for v in props.values()
    )


def run(cases: int, seed: int, share: float = 0.5) -> Agreement:
    """Compare `cases` widened cases (3 subjects each) in sdk mode with posthog 7.91.1."""
    rng = random.Random(seed)
    result = Agreement()
    for _ in range(cases):
        case = widened_case(rng, share)
        for subject in case["subjects"]:
            expected = _official(case, subject)
            got = _ours(case, subject)
            result.total += 1
            if _has_raw(subject["person"]) or any(_has_raw(p) for p in subject["group_props"].values()):
                result.raw_subjects += 1
            same = canonical(got) == canonical(expected)
            result.outcomes[outcome(expected)] += 1
            if same:
                result.agreed += 1
            else:
                result.disagreements.append(
                    f"ours={got!r} official={expected!r} person={subject['person']!r} "
                    f"group_props={subject['group_props']!r} flags={json.dumps(case['flags'], default=str)}"
                )
    return result
