"""attribute(), feature_properties() and capture_event(flags=...) against the demo sandbox."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from analytics_nb import Client
from analytics_nb.capture import attribute, capture_event, feature_properties
from analytics_nb.models import DecideResponse


def simulation_frame() -> pd.DataFrame:
    """Outcomes in the flags output conventions: boolean flag, multivariate flag, group flag per company."""
    return pd.DataFrame(
        {
            "distinct_id": ["u1", "u2", "u3", "u3"],
            "group:company": ["acme", "acme", "globex", "initech"],
            "beta": pd.array([True, False, pd.NA, True], dtype="boolean"),
            "checkout": pd.Series(["test", "control", False, False], dtype=object),
            "company-dashboard": pd.array([True, True, False, True], dtype="boolean"),
            "checkout:payload": pd.Series(['{"a": 1}', pd.NA, pd.NA, pd.NA], dtype=object),
            "error": pd.Series([pd.NA] * 4, dtype=object),
        }
    )


def events_frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "event": ["view", "buy", "view", "view", "view", "view"],
            "distinct_id": ["u1", "u1", "u2", "u3", "u3", "stranger"],
            "group:company": ["acme", "acme", "acme", "globex", "initech", None],
            "$feature/checkout": [None, "control", None, None, None, None],
        },
        index=[10, 11, 12, 13, 14, 15],
    )


def test_attribute_multivariate_boolean_and_group_flags() -> None:
    out = attribute(events_frame(), simulation_frame())
    assert list(out.index) == [10, 11, 12, 13, 14, 15]
    assert out.loc[10, "$feature/beta"] is True
    assert out.loc[10, "$feature/checkout"] == "test"
    assert out.loc[12, "$feature/beta"] is False and out.loc[12, "$feature/checkout"] == "control"
    # group flag: the same person gets the value of the company the event belongs to
    assert out.loc[13, "$feature/company-dashboard"] is False
    assert out.loc[14, "$feature/company-dashboard"] is True
    assert out.loc[14, "$feature/beta"] is True
    assert out.loc[13, "$feature/beta"] is pd.NA  # unknown (NA) outcome: nothing attributed
    assert out.loc[10, "$active_feature_flags"] == ["beta", "checkout", "company-dashboard"]
    assert out.loc[12, "$active_feature_flags"] == ["checkout", "company-dashboard"]
    assert out.loc[13, "$active_feature_flags"] is pd.NA  # every known flag is off
    # the payload/extra columns are not flags
    assert "$feature/checkout:payload" not in out.columns and "$feature/error" not in out.columns


def test_attribute_keeps_existing_properties_and_leaves_unknown_people() -> None:
    events = events_frame()
    out = attribute(events, simulation_frame())
    assert out.loc[11, "$feature/checkout"] == "control"  # the event's own value is kept
    assert out.loc[11, "$active_feature_flags"] == ["beta", "checkout", "company-dashboard"]
    assert out.loc[15, ["$feature/beta", "$feature/checkout"]].isna().all()
    assert out.loc[15, "$active_feature_flags"] is pd.NA
    assert "$feature/beta" not in events.columns  # the input is untouched


def test_attribute_without_group_context_uses_values_all_rows_agree_on() -> None:
    events = pd.DataFrame({"event": ["view"], "distinct_id": ["u3"]})
    out = attribute(events, simulation_frame())
    # u3 has two companies: company-dashboard differs between them, checkout does not
    assert out.loc[0, "$feature/checkout"] is False
    assert pd.isna(out.loc[0, "$feature/company-dashboard"])


def test_attribute_properties_dict_column_and_flags_subset() -> None:
    events = pd.DataFrame(
        {
            "event": ["view", "view"],
            "distinct_id": ["u1", "u2"],
            "properties": [{"$feature/beta": False, "$groups": {"company": "acme"}}, None],
        }
    )
    out = attribute(events, simulation_frame(), flags=["beta", "checkout"])
    first, second = out["properties"].tolist()
    assert first["$feature/beta"] is False  # kept
    assert first["$feature/checkout"] == "test"
    assert first["$active_feature_flags"] == ["checkout"]
    assert second == {
        "$feature/beta": False,
        "$feature/checkout": "control",
        "$active_feature_flags": ["checkout"],
    }
    assert "$feature/company-dashboard" not in first
    assert events.loc[0, "properties"] == {"$feature/beta": False, "$groups": {"company": "acme"}}
    with pytest.raises(KeyError, match="nope"):
        attribute(events, simulation_frame(), flags=["nope"])


def test_attribute_from_decide_results() -> None:
    decide = DecideResponse.model_validate(
        {"featureFlags": {"beta": True, "checkout": "test", "off": False}, "errorsWhileComputingFlags": False}
    )
    one = pd.DataFrame({"event": ["a", "b"], "distinct_id": ["u1", "u1"]})
    out = attribute(one, decide)
    assert out["$feature/checkout"].tolist() == ["test", "test"]
    assert out["$feature/off"].tolist() == [False, False]
    assert out.loc[0, "$active_feature_flags"] == ["beta", "checkout"]
    many = pd.DataFrame({"event": ["a", "b"], "distinct_id": ["u1", "u2"]})
    with pytest.raises(ValueError, match="one person"):
        attribute(many, decide)
    out = attribute(many, {"u1": decide})
    assert out.loc[0, "$feature/beta"] is True and pd.isna(out.loc[1, "$feature/beta"])


def test_feature_properties_from_a_simulation_row() -> None:
    row = simulation_frame().iloc[1]
    assert feature_properties(row) == {
        "$feature/beta": False,
        "$feature/checkout": "control",
        "$feature/company-dashboard": True,
        "$active_feature_flags": ["checkout", "company-dashboard"],
    }


def stored_events(sb: Any) -> pd.DataFrame:
    """The sandbox's captured events."""
    return sb.events()


def test_capture_event_with_decide_flags_lands_with_attribution(sandbox: Any, client: Client) -> None:
    decide = client.decide("user-0001")
    assert decide.feature_flags, "the demo sandbox should answer with flags"
    uid = capture_event(
        client, "checkout_started", "user-0001", {"cart": 3, "$feature/new-checkout": "mine"}, flags=decide
    )
    stored = stored_events(sandbox).set_index("uuid").loc[uid]
    props = stored["properties"]
    assert stored["event"] == "checkout_started" and props["cart"] == 3
    assert props["$feature/new-checkout"] == "mine"  # kept
    for key, value in decide.feature_flags.items():
        if key != "new-checkout":
            assert props[f"$feature/{key}"] == value
    assert set(props["$active_feature_flags"]) == {
        k for k, v in decide.feature_flags.items() if v is not False
    }


def test_capture_event_with_simulation_row_and_groups(sandbox: Any, client: Client) -> None:
    row = simulation_frame().iloc[0]
    uid = capture_event(
        client,
        "view",
        "u1",
        flags=row,
        groups={"company": "acme"},
        timestamp=pd.Timestamp("2024-05-01 12:00", tz="Europe/Paris"),
    )
    stored = stored_events(sandbox).set_index("uuid").loc[uid]
    assert stored["properties"]["$feature/checkout"] == "test"
    assert stored["properties"]["$groups"] == {"company": "acme"}
    assert stored["timestamp"] == pd.Timestamp("2024-05-01 10:00", tz="UTC")


def test_attribute_from_a_real_simulation_with_group_keys(sandbox: Any, client: Client) -> None:
    people = pd.DataFrame(
        {
            "distinct_id": ["user-0001", "user-0002", "user-0003"],
            "group:company": ["acme", "globex", None],
            "plan": ["pro", "free", "free"],
        }
    )
    sim = client.simulate(people, engine="local", progress=False)
    assert "group:company" not in sim.outputs.columns  # the group keys live in sim.inputs
    assert "group:company" in sim.frame.columns and "plan" in sim.frame.columns  # .frame shows the inputs
    events = pd.DataFrame(
        {
            "event": ["view", "view", "view", "view"],
            "distinct_id": ["user-0001", "user-0002", "user-0002", "user-0003"],
            "group:company": ["acme", "globex", "initech", None],
        }
    )
    out = attribute(events, sim)
    assert "$feature/plan" not in out.columns and "$feature/group:company" not in out.columns  # inputs
    frame = sim.frame

    def plain(v: Any) -> Any:
        return None if v is pd.NA or v is None else v if isinstance(v, str) else bool(v)

    for key in ("company-dashboard", "beta-feature", "pricing-page-experiment"):
        got = [plain(v) for v in out[f"$feature/{key}"].tolist()]
        # event 2 is in a company the simulation did not cover: nothing is guessed for it
        assert got == [plain(frame.loc[0, key]), plain(frame.loc[1, key]), None, plain(frame.loc[2, key])]
    definitions = client.feature_flags.list()
    with_defs = attribute(events, sim, flags=definitions)
    assert plain(with_defs.loc[2, "$feature/beta-feature"]) == plain(frame.loc[1, "beta-feature"])
    assert pd.isna(with_defs.loc[2, "$feature/company-dashboard"])  # a group flag: not carried over
