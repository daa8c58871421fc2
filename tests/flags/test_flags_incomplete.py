"""`missing_references` / `warn_incomplete`: which flags use cohorts or group type names the definitions do
not carry (directly, through a cohort inside a cohort, through a flag they depend on), and the one warning
that names the count, the flags, the ids and the fix. Pure: no I/O."""

from __future__ import annotations

import warnings
from typing import Any

import pandas as pd
import pytest

from analytics_nb.flags import (
    IncompleteDefinitionsWarning,
    evaluate_frame,
    missing_references,
    read_definitions,
    warn_incomplete,
)


def _cohort_flag(key: str, cohort: int, **extra: Any) -> dict[str, Any]:
    return {
        "key": key,
        "active": True,
        "filters": {
            "groups": [
                {
                    "properties": [{"key": "id", "type": "cohort", "value": cohort, "operator": "in"}],
                    "rollout_percentage": 100,
                }
            ]
        },
        **extra,
    }


DEPENDENT = {
    "key": "needs-a",
    "active": True,
    "filters": {
        "groups": [
            {
                "properties": [{"key": "10", "type": "flag", "value": True, "operator": "flag_evaluates_to"}],
                "rollout_percentage": 100,
            }
        ]
    },
}
GROUP_FILTER = {
    "key": "group-filter",
    "active": True,
    "filters": {
        "groups": [
            {
                "properties": [
                    {
                        "key": "plan",
                        "type": "group",
                        "group_type_index": 2,
                        "value": "pro",
                        "operator": "exact",
                    }
                ],
                "rollout_percentage": 100,
            }
        ]
    },
}
NESTED = {"type": "AND", "values": [{"key": "id", "type": "cohort", "value": 5, "operator": "in"}]}


def test_direct_nested_and_dependency_references() -> None:
    defs = read_definitions(
        {
            "flags": [
                _cohort_flag("a", 1, id=10),
                _cohort_flag("b", 4),
                DEPENDENT,
                GROUP_FILTER,
                _cohort_flag("gone", 9, deleted=True),
            ],
            "cohorts": {"4": NESTED},  # cohort 4 is there, but uses cohort 5, which is not
            "group_type_mapping": {"0": "company"},
        }
    )
    missing = missing_references(defs)
    # "needs-a" depends on flag id 10 ("a"), which lacks cohort 1; a deleted flag is never evaluated
    assert missing.cohorts == {"a": ("1",), "b": ("5",), "needs-a": ("1",)}
    assert missing.group_types == {"group-filter": ("2",)}
    assert missing.flags == ["a", "b", "needs-a", "group-filter"]
    assert not missing_references(
        defs, cohorts={"1": NESTED, "4": NESTED, "5": NESTED}, group_type_mapping={"2": "team"}
    )
    assert missing.only(["b"]).cohorts == {"b": ("5",)} and not missing.only(["b"]).group_types


def test_the_warning_names_the_count_the_first_flags_and_the_fix() -> None:
    defs = read_definitions([_cohort_flag(f"f{i}", i) for i in range(8)])
    with pytest.warns(IncompleteDefinitionsWarning) as caught:
        warn_incomplete(defs)
    assert len(caught) == 1
    text = str(caught[0].message)
    assert text.startswith("8 flags use cohorts the definitions do not carry ('f0': cohort 0; 'f1': cohort 1")
    assert "; and 3 more)" in text and "'f5'" not in text
    assert "client=" in text and "client.feature_flags.definitions()" in text and "cohorts=" in text
    assert "static cohort" not in text  # a list of flags: the cohorts were never there


def test_a_payload_that_lacks_a_cohort_points_at_the_service() -> None:
    # the local-evaluation payload carries the cohorts it can: one it lacks is a static cohort
    defs = read_definitions({"flags": [_cohort_flag("s", 3), _cohort_flag("d", 4)], "cohorts": {"4": NESTED}})
    with pytest.warns(IncompleteDefinitionsWarning, match=r"'s': cohort 3.*static cohort.*engine='remote'"):
        warn_incomplete(defs, ["s"])


def test_nothing_missing_warns_nothing() -> None:
    defs = read_definitions({"flags": [_cohort_flag("a", 1)], "cohorts": {"1": NESTED, "5": NESTED}})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not warn_incomplete(defs)
        # groups that cannot change an answer (server mode, no group column) are not named
        assert not warn_incomplete(read_definitions([GROUP_FILTER]), groups_matter=False)


def test_evaluate_frame_warns_for_group_flags_only_where_the_name_matters() -> None:
    flag = {**GROUP_FILTER, "filters": {**GROUP_FILTER["filters"], "aggregation_group_type_index": 2}}
    props = pd.DataFrame({"distinct_id": ["a", "b"]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # server mode, no group column: False, as the service answers
        assert evaluate_frame(props, definitions=[flag])["group-filter"].tolist() == [False, False]
    with pytest.warns(IncompleteDefinitionsWarning, match=r"'group-filter': group type index 2"):
        sdk = evaluate_frame(props, definitions=[flag], mode="sdk")
    assert sdk["group-filter"].isna().all()
    with pytest.warns(IncompleteDefinitionsWarning, match=r"group type index 2"):
        evaluate_frame(props.assign(**{"group:team": ["t1", "t2"]}), definitions=[flag])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        named = evaluate_frame(
            props.assign(**{"group:team": ["t1", "t2"]}),
            definitions=[flag],
            mode="sdk",
            group_type_mapping={"2": "team"},
            missing_columns="not_set",  # no MissingPropertyWarning: this test is about the other warning
        )
    assert named["group-filter"].isna().all()  # no group properties given: inconclusive, but known why
