"""Issue 29 #1: a property the property sets have no column for is unknown, not "not set".

Before, `simulate(ids_only, engine="local")` answered every flag that reads `country` as if nobody had a
country (all False), while the service reads each person's stored `country`. Now an answer that depends on
such a property is NA (reason `missing_property`) with one `MissingPropertyWarning` naming the flags, the
properties and the row counts; answers that do not depend on it keep their value; `missing_columns="not_set"`
restores the old reading on request.
"""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

from _flags import condition, flag, prop
from analytics_nb import Client
from analytics_nb.capture import attribute
from analytics_nb.capture._attribution import UnknownOutcomeWarning
from analytics_nb.flags import FrameEvaluator, evaluate_flags, evaluate_frame
from analytics_nb.simulation import MissingPropertyWarning, SimulationInputError, WhatIf, simulate

DE = prop("country", ["DE"])
PRO = prop("plan", ["pro"])
COUNTRY_THEN_30 = flag("nc", condition(DE), condition(rollout=30))
PLAN_THEN_COUNTRY = flag("plan-first", condition(PRO), condition(DE))
INACTIVE = flag("off", condition(DE), active=False)
DEPENDENT = flag("dep", condition(prop("nc", True, "flag_evaluates_to", type="flag")))
COUNTRY_AND_PLAN = flag("and-plan", condition(PRO, DE))
FLAGS = [COUNTRY_THEN_30, PLAN_THEN_COUNTRY, INACTIVE, DEPENDENT, COUNTRY_AND_PLAN]


def _people(n: int = 200) -> pd.DataFrame:
    return pd.DataFrame(
        {"distinct_id": [f"user-{i:05d}" for i in range(n)], "plan": ["pro", "free"] * (n // 2)}
    )


def _truth(people: pd.DataFrame, countries: list[str]) -> pd.DataFrame:
    """What the service answers, the stored country known: the engine with the column."""
    return evaluate_frame(people.assign(country=countries), definitions=FLAGS)


def test_engine_marks_only_the_answers_that_depend_on_the_absent_column() -> None:
    people = _people()
    ev = FrameEvaluator(people, definitions=FLAGS, missing_columns="unknown")
    out = ev.run(reasons=True)
    # whatever each person's stored country, a known answer never changes: check two extremes
    for countries in (["DE"] * len(people), ["FR"] * len(people)):
        truth = _truth(people, countries)
        for key in ("nc", "plan-first", "off", "dep", "and-plan"):
            known = out[key].notna()
            assert (out.loc[known, key] == truth.loc[known, key]).all(), key
    # earlier condition decides: every "pro" row of plan-first is known True
    pro = people["plan"] == "pro"
    assert out.loc[pro, "plan-first"].tolist() == [True] * int(pro.sum())
    assert out.loc[~pro, "plan-first"].isna().all()
    assert (out.loc[~pro, "plan-first:reason"] == "missing_property").all()
    # another filter of the same condition is False: the absent one does not matter
    assert (out.loc[~pro, "and-plan"] == False).all()  # noqa: E712
    assert out.loc[pro, "and-plan"].isna().all()
    # an inactive flag stays off
    assert (out["off"] == False).all()  # noqa: E712
    # in the 30% of the second condition: True whatever the country; the others are unknown
    in_rollout = out["nc"] == True  # noqa: E712
    assert 0 < int(in_rollout.sum()) < len(people)
    assert out.loc[~in_rollout.fillna(False).astype(bool), "nc"].isna().all()
    # a flag depending on an unknown one is unknown where it depends on it, known elsewhere
    assert out["dep"].isna().equals(out["nc"].isna())
    labels, rows = ev.missing_report["plan-first"]
    assert labels == ("the person's stored `country`",) and rows == int((~pro).sum())
    assert "off" not in ev.missing_report


def test_every_door_defaults_to_unknown_and_not_set_must_be_asked() -> None:
    """Issue 34: evaluate_frame and FrameEvaluator defaulted to "not_set" (False where simulate said NA)."""
    people = _people(20)
    with pytest.warns(MissingPropertyWarning, match=r"'plan-first' needs"):
        default = evaluate_frame(people, definitions=FLAGS)
    with pytest.warns(MissingPropertyWarning):
        explicit = FrameEvaluator(people, definitions=FLAGS, missing_columns="unknown").run()
    assert default.equals(explicit)
    assert default["plan-first"].isna().any()  # was: every row answered (False for a missing `plan`)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # asked for: no warning
        not_set = FrameEvaluator(people, definitions=FLAGS, missing_columns="not_set").run()
    assert not_set["plan-first"].notna().all()
    with pytest.raises(ValueError, match="missing_columns must be 'unknown'"):
        FrameEvaluator(people, definitions=FLAGS, missing_columns="absent")  # type: ignore[arg-type]


def test_unknown_value_in_a_dependency_is_unknown_in_the_scalar_engine_too() -> None:
    """Server mode: a condition whose dependency has no known value is neither True nor False (it used to
    be False); frames and the scalar engine agree."""
    needs = {"key": "v2", "active": True, "filters": {"version": 2, "groups": []}}
    dep = flag("d", condition(prop("v2", True, "flag_evaluates_to", type="flag")), condition())
    scalar = evaluate_flags([needs, dep], "u1")["d"]
    assert scalar.value is True  # the second condition matches whatever the dependency is
    dep["filters"]["groups"] = dep["filters"]["groups"][:1]  # type: ignore[index]
    scalar = evaluate_flags([needs, dep], "u1")["d"]
    assert scalar.value is None and scalar.reason == "inconclusive"
    frame = evaluate_frame(pd.DataFrame({"distinct_id": ["u1"]}), definitions=[needs, dep], reasons=True)
    assert pd.isna(frame.loc[0, "d"]) and frame.loc[0, "d:reason"] == "inconclusive"


def test_multivariate_flag_is_unknown_when_the_unknown_condition_has_its_own_variant() -> None:
    mv = flag("mv", condition(DE, variant="b"), condition(), variants={"a": 50, "b": 50})
    people = _people(100)
    out = FrameEvaluator(people, definitions=[mv], missing_columns="unknown").run()
    de = evaluate_frame(people.assign(country="DE"), definitions=[mv])["mv"]
    fr = evaluate_frame(people.assign(country="FR"), definitions=[mv])["mv"]
    same = (de == fr).astype(bool)
    assert not same.all() and out.loc[~same, "mv"].isna().all()
    known = out["mv"].notna()
    assert out.loc[known, "mv"].tolist() == de[known].tolist()
    # without the override the unknown condition gives the same variant as the next one: all known
    mv["filters"]["groups"][0].pop("variant")
    out = FrameEvaluator(people, definitions=[mv], missing_columns="unknown").run()
    assert out["mv"].notna().all()


def test_group_property_without_a_column_is_unknown() -> None:
    tech = prop("industry", ["tech"], type="group", group_type_index=0)
    group = flag("g", {"properties": [tech]}, aggregation_group_type_index=0)
    frame = pd.DataFrame({"distinct_id": ["a", "b"], "group:company": ["acme", None]})
    ev = FrameEvaluator(
        frame, definitions=[group], group_type_mapping={"0": "company"}, missing_columns="unknown"
    )
    out = ev.run(reasons=True)
    assert pd.isna(out.loc[0, "g"]) and out.loc[0, "g:reason"] == "missing_property"
    assert out.loc[1, "g"] == False and out.loc[1, "g:reason"] == "no_group_type"  # noqa: E712
    assert ev.missing_report == {"g": (("the stored `industry` of group 'company'",), 1)}


def test_simulate_local_answers_na_and_warns_once_with_counts() -> None:
    people = _people()
    with pytest.warns(MissingPropertyWarning) as record:
        result = simulate(people, engine="local", definitions=FLAGS, reasons=True)
    assert len(record) == 1
    text = str(record[0].message)
    assert "'plan-first' needs the person's stored `country` (100 rows)" in text
    assert "engine='remote'" in text and "missing_columns='not_set'" in text
    assert "4 flags" in text  # nc, plan-first, dep, and-plan (not the inactive one)
    frame = result.frame
    assert frame["plan-first"].isna().sum() == 100
    assert (frame.loc[frame["plan-first"].isna(), "plan-first:reason"] == "missing_property").all()
    with warnings.catch_warnings():
        warnings.simplefilter("error", MissingPropertyWarning)
        old = simulate(people, engine="local", definitions=FLAGS, missing_columns="not_set")
    assert old.frame["plan-first"].notna().all()
    with pytest.raises(SimulationInputError, match="missing_columns="):
        simulate(people, engine="local", definitions=FLAGS, missing_columns="absent")  # type: ignore[arg-type]


def test_simulate_with_the_column_gives_no_warning_and_no_na() -> None:
    people = _people(50).assign(country="DE")
    with warnings.catch_warnings():
        warnings.simplefilter("error", MissingPropertyWarning)
        result = simulate(people, engine="local", definitions=FLAGS)
    assert result.frame[["nc", "plan-first", "dep", "and-plan"]].notna().all().all()


def test_chunked_local_run_adds_up_the_counts() -> None:
    from analytics_nb.simulation import load_definitions, normalise_property_sets
    from analytics_nb.simulation._local import ChunkedEvaluator, run_local

    sets = normalise_property_sets(_people(200))
    ev = ChunkedEvaluator(sets, load_definitions(FLAGS), chunk_rows=60)
    with pytest.warns(
        MissingPropertyWarning, match=r"'plan-first' needs the person's stored `country` \(100 rows\)"
    ):
        run_local(ev, sets, None, progress=False)


def test_whatif_answers_na_for_the_absent_column() -> None:
    people = _people(100)
    with pytest.warns(MissingPropertyWarning):
        session = WhatIf(people, FLAGS)
    assert session.base["plan-first"].isna().sum() == 50
    edited = [dict(f) for f in FLAGS]
    edited[0] = flag("nc", condition(DE), condition(rollout=60))  # COUNTRY_THEN_30 at 60%
    with pytest.warns(MissingPropertyWarning, match="'nc' needs"):
        change = session.run(edited)
    assert change.edited["nc"].isna().sum() < session.base["nc"].isna().sum()
    with warnings.catch_warnings():
        warnings.simplefilter("error", MissingPropertyWarning)
        quiet = WhatIf(people, FLAGS, missing_columns="not_set")
    assert quiet.base["plan-first"].notna().all()


def test_local_answers_never_contradict_the_service_on_stored_properties(client: Client) -> None:
    """The issue's case: ids only, the service reads each demo person's stored country. Every answer the
    local engine gives agrees with the service; before, 68 of 200 did not (all False)."""
    people = pd.DataFrame({"distinct_id": [f"user-{i:05d}" for i in range(200)]})
    with pytest.warns(MissingPropertyWarning, match="'new-checkout' needs the person's stored `country`"):
        both = client.simulate(people, engine="both")
    assert both.local is not None and both.remote is not None
    assert both.local["new-checkout"].isna().all()  # its one condition reads country
    compared = 0
    for key in [c for c in both.local.columns if c in both.remote.columns and ":" not in c]:
        if key in ("distinct_id", "error"):
            continue
        local, remote = both.local[key], both.remote[key]
        known = local.notna() & remote.notna()
        assert (local[known].astype(object) == remote[known].astype(object)).all(), key
        compared += int(known.sum())
    assert compared > 200  # flags that read no absent property (rollouts, ...) are still answered


def test_attribute_leaves_unknown_outcomes_out_and_warns(client: Client) -> None:
    people = pd.DataFrame({"distinct_id": [f"user-{i:05d}" for i in range(20)]})
    with pytest.warns(MissingPropertyWarning):
        sim = client.simulate(people, ["new-checkout"], engine="local")
    events = pd.DataFrame({"event": ["purchase"] * 20, "distinct_id": people["distinct_id"]})
    with pytest.warns(UnknownOutcomeWarning, match="'new-checkout' \\(20\\)"):
        out = attribute(events, sim)
    # before: every purchase got $feature/new-checkout = False
    assert out["$feature/new-checkout"].isna().all()
