"""The audit of recorded flag calls against the sandbox over HTTP: planted mismatches are named exactly, each
with its cause, whichever table (`events` or `flag_evaluations`) the project's calls are read from."""

from __future__ import annotations

import datetime as dt
import time
import warnings
from collections.abc import Callable
from typing import Any

import httpx
import pandas as pd
import pytest

from _flags import condition, flag, prop
from analytics_nb import Client
from analytics_nb.client import DefinitionsHistoryWarning
from analytics_nb.sandbox import Sandbox
from analytics_nb.simulation import FlagAudit, flag_audit

PLANS = {"a-free": "free", "b-team": "team", "c-team": "team", "d-pro": "pro", "e-free": "free"}
PLANS |= {f"ok-{i}": ("pro", "team", "free")[i % 3] for i in range(12)}


def _moment() -> dt.datetime:
    time.sleep(0.02)
    moment = dt.datetime.now(dt.UTC)
    time.sleep(0.02)
    return moment


def _iso(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _call(key: str, distinct_id: str, response: Any, at: dt.datetime, **extra: Any) -> dict[str, Any]:
    props = {"$feature_flag": key, "$feature_flag_response": response, "locally_evaluated": False, **extra}
    return {
        "event": "$feature_flag_called",
        "distinct_id": distinct_id,
        "properties": props,
        "timestamp": _iso(at),
    }


def _send(sb: Sandbox, events: list[dict[str, Any]]) -> None:
    r = httpx.post(f"{sb.url}/batch/", json={"api_key": sb.project_api_key, "batch": events})
    assert r.status_code == 200, r.text


def _planted(sb: Sandbox, client: Client) -> tuple[dt.datetime, dt.datetime]:
    """Persons, the flag `audited` (plan pro, then pro or team after an edit inside the window), the flags
    `sticky` (ensure_experience_continuity, 0%) and `plain` (0%, no properties), and their recorded calls:
    right for every `ok-*` person, planted wrong for a-free .. e-free."""
    _send(
        sb,
        [{"event": "view", "distinct_id": d, "properties": {"$set": {"plan": p}}} for d, p in PLANS.items()],
    )
    audited = client.feature_flags.create(
        "audited", filters=flag("audited", condition(prop("plan", ["pro"]), rollout=100))["filters"]
    )
    client.feature_flags.create(
        "sticky", filters=flag("sticky", condition(rollout=0))["filters"], ensure_experience_continuity=True
    )
    client.feature_flags.create("plain", filters=flag("plain", condition(rollout=0))["filters"])
    before_window = _moment()
    start = _moment()
    first = _moment()
    events = [_call("audited", d, p == "pro", first) for d, p in PLANS.items() if d.startswith("ok-")]
    events += [
        _call("audited", "a-free", True, first),  # plan free today: the properties may have changed
        _call("audited", "nobody", True, first),  # not a person: not compared
        _call("audited", "a-free", True, before_window),  # outside the window
        _call("other", "a-free", "x", first),  # another flag
    ]
    _send(sb, events)
    time.sleep(0.05)
    client.feature_flags.update(
        audited.id, filters=flag("audited", condition(prop("plan", ["pro", "team"]), rollout=100))["filters"]
    )
    after = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=2)
    _send(
        sb,
        [
            *(
                _call("audited", d, p in ("pro", "team"), after)
                for d, p in PLANS.items()
                if d.startswith("ok-")
            ),
            _call("audited", "b-team", False, after),  # the answer of the version before the edit
            _call("audited", "c-team", False, after, locally_evaluated=True, **{"$feature_flag_version": 1}),
            _call("audited", "d-pro", True, after),  # right
            _call("sticky", "e-free", True, after),
            _call("plain", "d-pro", True, after),
            _call("plain", "e-free", None, after),  # a null response: not compared
        ],
    )
    return start, after + dt.timedelta(minutes=1)


@pytest.fixture
def planted(empty_sandbox: Sandbox, make_client: Callable[..., Client]) -> tuple[Sandbox, Client, Any, Any]:
    client = make_client(empty_sandbox, ids=True)
    start, end = _planted(empty_sandbox, client)
    return empty_sandbox, client, start, end


def _audit(client: Client, key: str, start: Any, end: Any, **kwargs: Any) -> FlagAudit:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DefinitionsHistoryWarning)  # cohorts read as today: none here
        return flag_audit(key, start, end, client=client, **kwargs)


def _named(audit: FlagAudit) -> set[tuple[str, str]]:
    return set(zip(audit.mismatches["distinct_id"], audit.mismatches["cause"], strict=True))


def test_audit_names_exactly_the_planted_mismatches_with_their_causes(planted: Any, tmp_path: Any) -> None:
    """The done-when of issue 39: the planted persons, each with its cause, and no one else."""
    _, client, start, end = planted
    audit = _audit(client, "audited", start, end)
    assert audit.source == "events" and "flag_evaluations refused" in audit.source_note
    assert _named(audit) == {
        ("a-free", "person_properties_changed"),
        ("b-team", "definitions_changed"),
        ("c-team", "stale_local_definitions"),
    }
    calls = audit.calls
    assert len(calls) == 2 * 12 + 5  # the window and the flag only
    assert calls["match"].isna().sum() == 1 and set(calls.loc[calls["match"].isna(), "distinct_id"]) == {
        "nobody"
    }
    assert list(calls.loc[calls["distinct_id"] == "b-team", "version_at_call"]) == [2]
    assert audit.properties_from.startswith("client.persons")
    assert "3 mismatches" in audit.summary and "stale_local_definitions 1" in audit.summary
    path = tmp_path / "calls.csv"
    audit.calls.to_csv(path, index=False)
    assert len(pd.read_csv(path)) == len(calls)

    sticky, plain = _audit(client, "sticky", start, end), _audit(client, "plain", start, end)
    assert _named(sticky) == {("e-free", "experience_continuity")}
    assert _named(plain) == {("d-pro", "unknown")}
    assert plain.calls["match"].isna().sum() == 1  # the null response


def test_audit_takes_the_persons_given(planted: Any) -> None:
    """persons= with a-free's plan as it was at the call (pro): that call matches."""
    _, client, start, end = planted
    persons = pd.DataFrame({"distinct_id": list(PLANS), "plan": list(PLANS.values())})
    persons.loc[persons["distinct_id"] == "a-free", "plan"] = "pro"
    audit = _audit(client, "audited", start, end, persons=persons)
    assert _named(audit) == {("b-team", "definitions_changed"), ("c-team", "stale_local_definitions")}
    assert audit.properties_from == "persons="


@pytest.mark.parametrize("switch", ["flag_evaluations_table", "flag_evaluations_only"])
def test_audit_reads_flag_evaluations_where_the_project_keeps_them(planted: Any, switch: str) -> None:
    sb, client, start, end = planted
    sb.set_switch(switch)
    audit = _audit(client, "audited", start, end)
    assert audit.source == "flag_evaluations"
    assert _named(audit) == {
        ("a-free", "person_properties_changed"),
        ("b-team", "definitions_changed"),
        ("c-team", "stale_local_definitions"),
    }
    if switch == "flag_evaluations_only":  # HogQL's events no longer holds the calls
        assert client.query("SELECT count() FROM events WHERE event = '$feature_flag_called'").iloc[0, 0] == 0


def test_audit_input_is_checked(planted: Any) -> None:
    _, client, start, end = planted
    with pytest.raises(ValueError, match=r"end .* must be after start"):
        flag_audit("audited", end, start, client=client)
    with pytest.raises(ValueError, match="no live flag"):
        flag_audit("missing", start, end, client=client)
    with pytest.raises(ValueError, match="distinct_id appears twice"):
        _audit(
            client, "audited", start, end, persons=pd.DataFrame({"distinct_id": ["a-free"] * 2, "plan": "x"})
        )


def test_a_window_older_than_flag_evaluations_retention_warns(planted: Any) -> None:
    """flag_evaluations keeps calls 90 days (posthog/hogql/database/schema/flag_evaluations.py): a window
    that starts earlier says that the older calls are gone, never a quietly partial audit."""
    sb, client, _, end = planted
    sb.set_switch("flag_evaluations_only")
    start = end - dt.timedelta(days=100)
    with pytest.warns(UserWarning, match="flag_evaluations keeps calls 90 days"):
        audit = _audit(client, "audited", start, end)
    assert audit.source == "flag_evaluations" and "90-day retention" in audit.source_note
    assert {"b-team", "c-team"} <= set(audit.mismatches["distinct_id"])


def test_a_window_without_calls_is_an_empty_audit(planted: Any) -> None:
    _, client, start, _ = planted
    audit = _audit(client, "audited", start - dt.timedelta(hours=2), start - dt.timedelta(hours=1))
    assert audit.calls.empty and audit.mismatches.empty
    assert audit.summary.startswith("audited: 0 calls from events, 0 compared, 0 mismatches")
