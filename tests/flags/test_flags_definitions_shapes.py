"""One `Definitions` reader for every shape an analyst holds, used by every entry point (issue 24).

The regression: `evaluate_frame(props, client.feature_flags.frame())` returned no flag columns, no error and
no warning (the engine iterated the frame's column names and skipped each as "not a flag"), while
`simulate(definitions=<the same frame>)` returned every flag.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from _flags import condition, flag, prop
from analytics_nb import Client, frames
from analytics_nb.capture import attribute
from analytics_nb.flags import (
    Definitions,
    DefinitionsError,
    FrameEvaluator,
    IncompleteDefinitionsWarning,
    compile_flags,
    evaluate_flag,
    evaluate_flags,
    evaluate_frame,
    read_definitions,
)
from analytics_nb.models import FeatureFlag, LocalEvaluationResponse
from analytics_nb.simulation import SimulationInputError, WhatIf, load_definitions, simulate

FLAGS: list[dict[str, Any]] = [
    flag("beta", condition(rollout=50), id=1),
    flag(
        "pro-only",
        condition({"key": "plan", "value": ["pro"], "operator": "exact"}),
        id=2,
        payloads={"true": '{"tier": 1}'},
    ),
    {
        "id": 3,
        "key": "exp",
        "active": True,
        "version": 4,
        "filters": {
            "groups": [condition()],
            "multivariate": {
                "variants": [
                    {"key": "control", "rollout_percentage": 50},
                    {"key": "test", "rollout_percentage": 50},
                ]
            },
        },
    },
    flag("depends", condition(prop("beta", True, "flag_evaluates_to", type="flag")), id=4),
    flag("off", id=5, active=False),
]
KEYS = [f["key"] for f in FLAGS]
PAYLOAD = {"flags": FLAGS, "group_type_mapping": {"0": "company"}, "cohorts": {}}

PROPS = pd.DataFrame({"distinct_id": [f"user-{i}" for i in range(40)], "plan": ["pro", "free"] * 20})


def _csv_frame() -> pd.DataFrame:
    return frames.read_csv(frames.to_csv(frames.feature_flags_frame(FLAGS)))


def _json_file(tmp: Path) -> Path:
    path = tmp / "definitions.json"
    path.write_text(json.dumps(PAYLOAD))
    return path


#: every shape of the same five flags: name -> builder (given a temporary directory)
SHAPES: dict[str, Callable[[Path], Any]] = {
    "response model": lambda _: LocalEvaluationResponse.model_validate(PAYLOAD),
    "payload dict": lambda _: PAYLOAD,
    "payload JSON text": lambda _: json.dumps(PAYLOAD),
    "payload JSON bytes": lambda _: json.dumps(PAYLOAD).encode(),
    "flags frame": lambda _: frames.feature_flags_frame(FLAGS),
    "flags frame from CSV": lambda _: _csv_frame(),
    "list of dicts": lambda _: FLAGS,
    "tuple of dicts": lambda _: tuple(FLAGS),
    "list of models": lambda _: [FeatureFlag.model_validate(f) for f in FLAGS],
    "list page": lambda _: {"count": len(FLAGS), "next": None, "results": FLAGS},
    "path": _json_file,
    "path as text": lambda tmp: str(_json_file(tmp)),
    "Definitions": lambda _: read_definitions(PAYLOAD),
}


def _flag_columns(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[KEYS].astype(object).reset_index(drop=True)


def _from_records(results: list[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame([{k: r[k].value for k in KEYS} for r in results]).astype(object)


#: every entry point that takes definitions, answering the flag columns for PROPS
ENTRY_POINTS: dict[str, Callable[[Any], pd.DataFrame]] = {
    "evaluate_frame": lambda d: evaluate_frame(PROPS, definitions=d),
    "FrameEvaluator": lambda d: FrameEvaluator(PROPS, definitions=d).run(),
    "FrameEvaluator.run(definitions=)": lambda d: FrameEvaluator(PROPS, definitions=FLAGS[:1]).run(
        definitions=d
    ),
    "compile_flags": lambda d: evaluate_frame(PROPS, definitions=compile_flags(d)),
    "evaluate_flags": lambda d: _from_records(
        [
            evaluate_flags(d, row.distinct_id, person_properties={"plan": row.plan})
            for row in PROPS.itertuples()
        ]
    ),
    "simulate": lambda d: simulate(PROPS, engine="local", definitions=d, payloads=False).frame,
    "simulate engine=sql": lambda d: (
        simulate(PROPS, engine="sql", definitions=d, payloads=False, progress=False).frame
    ),
    "WhatIf": lambda d: WhatIf(PROPS, d).base,
    "WhatIf.run": lambda d: WhatIf(PROPS, FLAGS).run(d).edited,
}


def _expected() -> pd.DataFrame:
    return _flag_columns(evaluate_frame(PROPS, definitions=FLAGS))


@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
@pytest.mark.parametrize("shape", list(SHAPES))
def test_every_shape_gives_every_entry_point_the_same_flags(shape: str, entry: str, tmp_path: Path) -> None:
    out = ENTRY_POINTS[entry](SHAPES[shape](tmp_path))
    got = _flag_columns(out)
    expected = _expected()
    if entry == "WhatIf.run":  # the edited side holds every flag too
        expected = expected[list(got.columns)]
    pd.testing.assert_frame_equal(got, expected, check_dtype=False)
    # the expectation is not empty: the flags decide differently across the rows
    assert expected["beta"].nunique() == 2 and set(expected["exp"]) == {"control", "test"}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_every_shape_reads_to_the_same_definitions(shape: str, tmp_path: Path) -> None:
    defs = read_definitions(SHAPES[shape](tmp_path))
    assert defs.keys == KEYS
    assert [f["filters"] for f in defs.flags] == [f["filters"] for f in FLAGS]
    assert [f.get("active", True) for f in defs.flags] == [f["active"] for f in FLAGS]
    assert [f.get("id") for f in defs.flags] == [f["id"] for f in FLAGS]
    assert load_definitions(SHAPES[shape](tmp_path)).keys == KEYS


@pytest.mark.parametrize("shape", ["payload dict", "flags frame", "list of models", "Definitions"])
def test_capture_reads_every_shape(shape: str, tmp_path: Path) -> None:
    outcomes = evaluate_frame(PROPS.head(4), definitions=FLAGS)
    events = pd.DataFrame({"distinct_id": ["user-0", "user-1"], "event": ["x", "x"]})
    out = attribute(events, outcomes, flags=SHAPES[shape](tmp_path))
    assert {f"$feature/{k}" for k in KEYS} <= set(out.columns)
    pd.testing.assert_frame_equal(out, attribute(events, outcomes, flags=KEYS))


@pytest.mark.parametrize(
    "shape", ["flags frame", "payload dict", "list of models", "path", "Definitions", "response model"]
)
def test_evaluate_flag_takes_a_one_flag_shape(shape: str, tmp_path: Path) -> None:
    one = [FLAGS[1]]
    source = {
        "flags frame": frames.feature_flags_frame(one),
        "payload dict": {"flags": one},
        "list of models": [FeatureFlag.model_validate(FLAGS[1])],
        "path": _write(tmp_path, {"flags": one}),
        "Definitions": read_definitions(one),
        "response model": LocalEvaluationResponse.model_validate({"flags": one}),
    }[shape]
    result = evaluate_flag(source, "u", person_properties={"plan": "pro"})
    assert (result.key, result.value, result.payload) == ("pro-only", True, '{"tier": 1}')
    with pytest.raises(ValueError, match="takes one flag; these definitions hold 5"):
        evaluate_flag(FLAGS, "u")


def _write(tmp: Path, data: Any) -> Path:
    path = tmp / "one.json"
    path.write_text(json.dumps(data))
    return path


# -- shapes it cannot read: a short error naming the shape and the fix -----------------------------------
@pytest.mark.parametrize(
    ("source", "match"),
    [
        (
            pd.DataFrame({"distinct_id": ["u"], "plan": ["pro"]}),
            r"no 'key' or 'filters' column.*client\.feature_flags\.frame",
        ),
        (pd.DataFrame({"key": ["a"], "value": [True]}), r"no 'filters' column"),
        (["beta", "exp"], r"item 0 is the text 'beta', not a flag definition.*flags="),
        ({"beta": True}, r"neither a local-evaluation payload.*'beta'"),
        (42, r"cannot read a int; pass client\.feature_flags\.local_evaluation\(\)"),
        ("not json", r"neither JSON nor a path to a \.json file"),
        ("missing.json", r"no file 'missing\.json'"),
        ("{nope", r"not valid JSON"),
        ([{"filters": {}}], r"item 0 has no 'key'"),
        ({"flags": "x"}, r"'flags' is a str; it must be the list"),
    ],
)
def test_unreadable_shapes_raise_naming_the_shape_and_the_fix(source: Any, match: str) -> None:
    with pytest.raises(DefinitionsError, match=match) as err:
        read_definitions(source)
    assert len(str(err.value)) < 400
    # every entry point raises it (never an empty result), as a TypeError and a ValueError alike
    with pytest.raises(TypeError, match=match):
        evaluate_frame(PROPS, definitions=source)
    with pytest.raises(ValueError, match=match):
        evaluate_flags(source, "u")
    with pytest.raises(SimulationInputError, match=match):
        simulate(PROPS, engine="local", definitions=source)


def test_a_frame_without_cohorts_takes_them_and_the_group_mapping_by_keyword() -> None:
    frame = frames.feature_flags_frame(FLAGS)
    defs = read_definitions(
        frame, cohorts={"7": {"type": "AND", "values": []}}, group_type_mapping={0: "company"}
    )
    assert defs.cohorts == {"7": {"type": "AND", "values": []}} and defs.group_type_mapping == {
        "0": "company"
    }
    assert Definitions.read(defs) is defs and defs.copy() == defs and defs.copy().flags is not defs.flags
    # the frame's derived columns (rollout summary, payloads, ...) are not read back: filters are the flag's
    assert set(defs.flags[1]) <= {"id", "key", "name", "active", "deleted", "filters", "version", "team_id"}


# -- a cohort flag: a shape without cohorts is NA with one warning, never silent ----------------------------
COHORT = {
    "type": "OR",
    "values": [{"type": "AND", "values": [{"key": "plan", "value": ["pro"], "operator": "exact"}]}],
}
COHORT_FLAG = {
    "id": 6,
    "key": "pro-cohort",
    "active": True,
    "filters": {
        "groups": [
            {
                "properties": [{"key": "id", "type": "cohort", "value": 7, "operator": "in"}],
                "rollout_percentage": 100,
            }
        ]
    },
}
COHORT_PAYLOAD = {"flags": [*FLAGS, COHORT_FLAG], "group_type_mapping": {}, "cohorts": {"7": COHORT}}

#: every shape of the six flags; True where the shape carries the cohorts (the local-evaluation payload)
COHORT_SHAPES: dict[str, tuple[Callable[[Path], Any], bool]] = {
    "response model": (lambda _: LocalEvaluationResponse.model_validate(COHORT_PAYLOAD), True),
    "payload dict": (lambda _: COHORT_PAYLOAD, True),
    "payload JSON text": (lambda _: json.dumps(COHORT_PAYLOAD), True),
    "path": (lambda tmp: _write(tmp, COHORT_PAYLOAD), True),
    "Definitions": (lambda _: read_definitions(COHORT_PAYLOAD), True),
    "flags frame": (lambda _: frames.feature_flags_frame(COHORT_PAYLOAD["flags"]), False),
    "flags frame from CSV": (
        lambda _: frames.read_csv(frames.to_csv(frames.feature_flags_frame(COHORT_PAYLOAD["flags"]))),
        False,
    ),
    "list of dicts": (lambda _: COHORT_PAYLOAD["flags"], False),
    "list of models": (lambda _: [FeatureFlag.model_validate(f) for f in COHORT_PAYLOAD["flags"]], False),
    "list page": (lambda _: {"results": COHORT_PAYLOAD["flags"]}, False),
}

#: the entry points an analyst calls with definitions, answering the flag columns for PROPS
WARNING_ENTRY_POINTS: dict[str, Callable[[Any], pd.DataFrame]] = {
    "evaluate_frame": lambda d: evaluate_frame(PROPS, definitions=d),
    "simulate": lambda d: simulate(PROPS, engine="local", definitions=d, payloads=False).frame,
    "simulate engine=sql": lambda d: (
        simulate(PROPS, engine="sql", definitions=d, payloads=False, progress=False).frame
    ),
    "WhatIf": lambda d: WhatIf(PROPS, d).base,
}


@pytest.mark.parametrize("entry", list(WARNING_ENTRY_POINTS))
@pytest.mark.parametrize("shape", list(COHORT_SHAPES))
def test_a_shape_without_cohorts_warns_once_and_answers_na(shape: str, entry: str, tmp_path: Path) -> None:
    build, carries = COHORT_SHAPES[shape]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = WARNING_ENTRY_POINTS[entry](build(tmp_path))
    named = [w for w in caught if issubclass(w.category, IncompleteDefinitionsWarning)]
    cohort = out["pro-cohort"].astype(object).reset_index(drop=True)
    if carries:
        assert named == []
        assert cohort.tolist() == (PROPS["plan"] == "pro").tolist()  # decided: True for pro, False else
    else:
        assert len(named) == 1  # once per run, whatever the engine does inside
        text = str(named[0].message)
        assert "1 flag uses cohorts the definitions do not carry ('pro-cohort': cohort 7)" in text
        assert "client.feature_flags.definitions()" in text and "client=" in text
        assert cohort.isna().all()  # never False: nothing is known
    # the other flags answer as ever
    pd.testing.assert_frame_equal(_flag_columns(out), _expected(), check_dtype=False)


def test_whatif_run_warns_only_about_what_an_edit_adds() -> None:
    session = WhatIf(PROPS, COHORT_PAYLOAD)  # carries the cohort: nothing to say
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = session.run(COHORT_PAYLOAD["flags"])  # a list of flags: the current cohorts serve
        other = {**COHORT_FLAG, "key": "other-cohort", "id": 8}
        other["filters"] = {
            "groups": [
                {
                    "properties": [{"key": "id", "type": "cohort", "value": 9, "operator": "in"}],
                    "rollout_percentage": 100,
                }
            ]
        }
        session.run([*COHORT_PAYLOAD["flags"], other])
    named = [str(w.message) for w in caught if issubclass(w.category, IncompleteDefinitionsWarning)]
    assert result.moves.empty
    assert len(named) == 1 and "('other-cohort': cohort 9)" in named[0] and "pro-cohort" not in named[0]


# -- the regression, against the sandbox: a client's flags frame --------------------------------------------
def test_evaluate_frame_of_a_client_flags_frame_gives_every_flag(sandbox: Any) -> None:
    with Client(
        sandbox.url, personal_api_key=sandbox.personal_api_key, project_api_key=sandbox.project_api_key
    ) as client:
        flags_frame = client.feature_flags.frame()
        payload = client.feature_flags.local_evaluation()
    live = [k for k, deleted in zip(flags_frame["key"], flags_frame["deleted"], strict=True) if not deleted]
    assert len(live) >= 10
    props = pd.DataFrame(
        {"distinct_id": [f"p{i}" for i in range(30)], "email": ["a@posthog.com", "b@x.io"] * 15}
    )
    # the frame carries no cohorts: the cohort flag is NA, and both say so (was: silent)
    with pytest.warns(IncompleteDefinitionsWarning, match=r"1 flag uses cohorts.*'eu-cohort-promo': cohort"):
        out = evaluate_frame(props, definitions=flags_frame, group_type_mapping=payload.group_type_mapping)
    assert [c for c in out.columns if c not in ("distinct_id", "error")] == live  # was: no flag column at all
    assert out["eu-cohort-promo"].isna().all()
    with pytest.warns(IncompleteDefinitionsWarning, match=r"'eu-cohort-promo': cohort"):
        sim = simulate(  # one door: evaluate_frame and simulate read a missing column alike (issue 34)
            props,
            engine="local",
            definitions=flags_frame,
            group_type_mapping=payload.group_type_mapping,
        ).frame
    pd.testing.assert_frame_equal(
        out[live].astype(object).reset_index(drop=True),
        sim[live].astype(object).reset_index(drop=True),
        check_dtype=False,
    )
    # flags that use no cohort answer as from the payload itself (the frame carries no cohorts)
    cohort_free = [
        f.key
        for f in payload.flags
        if f.key in live and not any(p.type == "cohort" for g in f.filters.groups for p in g.properties)
    ]
    assert cohort_free
    with warnings.catch_warnings():
        warnings.simplefilter("error", IncompleteDefinitionsWarning)  # the payload carries its cohorts
        full = evaluate_frame(props, definitions=payload)
    pd.testing.assert_frame_equal(
        out[cohort_free].astype(object), full[cohort_free].astype(object), check_dtype=False
    )


@pytest.mark.parametrize("shape", ["flags frame", "response model", "payload JSON text", "list of models"])
def test_flag_called_frame_reads_ids_and_versions_from_every_shape(
    shape: str, empty_sandbox: Any, tmp_path: Path
) -> None:
    from analytics_nb.capture import flag_called_frame

    outcomes = evaluate_frame(PROPS.head(2), definitions=FLAGS)
    with Client(empty_sandbox.url, project_api_key=empty_sandbox.project_api_key) as client:
        report = flag_called_frame(client, outcomes, SHAPES[shape](tmp_path), progress=False)
    assert set(report["key"]) == set(KEYS)
    sent = empty_sandbox.events().set_index("uuid")["properties"]
    exp = [sent[u] for u, k in zip(report["uuid"], report["key"], strict=True) if k == "exp"]
    assert exp and all(p["$feature_flag_id"] == 3 and p["$feature_flag_version"] == 4 for p in exp)
