"""``client.feature_flags`` history against the sandbox over HTTP: ``versions`` / ``version`` / ``activity``
and ``definitions(as_of=)`` (each flag at the version in force then; what the history cannot give named)."""

from __future__ import annotations

import asyncio
import datetime as dt
import time
import warnings
from collections.abc import Callable
from typing import Any

import pytest

from _flags import condition, flag, prop
from _sandbox_helpers import drop_version_entry
from analytics_nb import AsyncClient, Client
from analytics_nb.client import DefinitionsHistoryWarning
from analytics_nb.sandbox import Sandbox
from analytics_nb.sandbox._resources.feature_flags import create_cohort

NO_VERSIONS = "/api/projects/*/feature_flags/*/versions/*"


def _moment() -> dt.datetime:
    """Now, with a little room either side (the sandbox stamps its writes to the microsecond)."""
    time.sleep(0.01)
    moment = dt.datetime.now(dt.UTC)
    time.sleep(0.01)
    return moment


def _filters(*conditions: dict[str, Any]) -> dict[str, Any]:
    filters: dict[str, Any] = flag("x", *conditions)["filters"]
    return filters


def _rollouts(defs: Any) -> dict[str, Any]:
    return {f.key: f.filters.groups[0].rollout_percentage for f in defs.flags}


@pytest.fixture
def history(
    empty_sandbox: Sandbox, make_client: Callable[..., Client]
) -> tuple[Sandbox, Client, dict[str, Any]]:
    """Flag ``edited`` (10% -> 50% -> 30%), ``steady`` (never edited) and ``late`` (created after ``t1``),
    with the moments between the writes."""
    sb = empty_sandbox
    client = make_client(sb, ids=True)
    t0 = _moment()
    edited = client.feature_flags.create(
        "edited", filters=_filters(condition(prop("plan", ["pro"]), rollout=10))
    )
    steady = client.feature_flags.create("steady", filters=_filters(condition(rollout=100)))
    t1 = _moment()
    client.feature_flags.update(edited.id, filters=_filters(condition(prop("plan", ["pro"]), rollout=50)))
    client.feature_flags.create("late", filters=_filters(condition(rollout=20)))
    t2 = _moment()
    client.feature_flags.update(edited.id, filters=_filters(condition(rollout=30)), name="Edited")
    t3 = _moment()
    return sb, client, {"t0": t0, "t1": t1, "t2": t2, "t3": t3, "edited": edited.id, "steady": steady.id}


def test_versions_version_and_activity(history: tuple[Sandbox, Client, dict[str, Any]]) -> None:
    _, client, at = history
    versions = client.feature_flags.versions("edited")
    assert [v.version for v in versions] == [1, 2, 3]
    assert [v.filters["groups"][0]["rollout_percentage"] for v in versions] == [10, 50, 30]
    assert [v.is_historical for v in versions] == [True, True, False]
    assert not any(v.rebuilt_locally for v in versions)
    assert at["t1"] < versions[1].version_timestamp < at["t2"] < versions[2].version_timestamp  # type: ignore[operator]
    assert client.feature_flags.version(at["edited"], 2).filters == versions[1].filters
    entries = client.feature_flags.activity(at["edited"])
    assert [e.activity for e in entries] == ["updated", "updated", "created"]
    assert entries[0].user is not None and entries[0].user.email == "owner@sandbox.example"
    assert {c["field"] for c in entries[0].detail["changes"]} == {"filters", "name", "version"}
    assert len(client.feature_flags.activity()) == 5  # every flag's: 3 creations, 2 updates


def test_versions_are_rebuilt_from_the_activity_log_where_not_served(
    history: tuple[Sandbox, Client, dict[str, Any]],
) -> None:
    sb, client, _ = history
    served = client.feature_flags.versions("edited")
    sb.faults.add(NO_VERSIONS, kind="no_flag_versions")
    rebuilt = client.feature_flags.versions("edited")
    assert [v.filters for v in rebuilt] == [v.filters for v in served]
    assert [v.name for v in rebuilt] == ["", "", "Edited"]
    assert all(v.rebuilt_locally for v in rebuilt)


@pytest.mark.parametrize("served", [True, False], ids=["versions-served", "activity-log-fallback"])
def test_definitions_as_of_a_moment_between_edits(
    history: tuple[Sandbox, Client, dict[str, Any]], served: bool
) -> None:
    """Each flag at the version in force then; a flag created later is absent; the same whether the
    instance serves ``versions/:n`` or the client rebuilds from the activity log."""
    sb, client, at = history
    if not served:
        sb.faults.add(NO_VERSIONS, kind="no_flag_versions")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DefinitionsHistoryWarning)  # nothing is missing: no warning
        assert _rollouts(client.feature_flags.definitions(as_of=at["t1"])) == {"edited": 10, "steady": 100}
        assert _rollouts(client.feature_flags.definitions(as_of=at["t2"])) == {
            "edited": 50,
            "steady": 100,
            "late": 20,
        }
        now = client.feature_flags.definitions(as_of=at["t3"])
        assert _rollouts(now) == {"edited": 30, "steady": 100, "late": 20}
        assert client.feature_flags.definitions(as_of=at["t0"]).flags == []
    at_t1 = client.feature_flags.definitions(as_of=at["t1"].isoformat())
    edited = next(f for f in at_t1.flags if f.key == "edited")
    assert edited.version == 1 and edited.filters.groups[0].properties[0].value == ["pro"]
    assert at_t1.model_extra is not None and at_t1.model_extra["history_gaps"] == []
    assert at_t1.model_extra["as_of"] == at["t1"].isoformat()
    today = client.feature_flags.definitions()
    assert {f.key: f.filters for f in now.flags} == {f.key: f.filters for f in today.flags}


def test_definitions_at_many_moments_read_the_log_once(
    history: tuple[Sandbox, Client, dict[str, Any]],
) -> None:
    sb, client, at = history
    sb.clear_requests()
    answers = client.feature_flags.definitions_at([at["t1"], at["t2"], at["t3"]])
    assert [_rollouts(a)["edited"] for a in answers] == [10, 50, 30]
    paths = list(sb.requests()["path"])
    assert sum(p.endswith("/feature_flags/activity/") for p in paths) == 1
    assert sum("/versions/" in p for p in paths) == 2  # versions 1 and 2 of `edited`, once each


@pytest.mark.parametrize(
    ("dropped", "reason"),
    [
        (2, "the activity log is incomplete around this moment"),  # the entries before and after disagree
        (3, "version 1 cannot be rebuilt"),  # the walk back from today breaks
    ],
)
def test_an_incomplete_history_leaves_the_flag_out_and_names_it(
    history: tuple[Sandbox, Client, dict[str, Any]], dropped: int, reason: str
) -> None:
    sb, client, at = history
    drop_version_entry(sb, at["edited"], dropped)
    for fault in (False, True):  # the service's 422, then the client's own rebuild: neither guesses
        if fault:
            sb.faults.add(NO_VERSIONS, kind="no_flag_versions")
        with pytest.warns(DefinitionsHistoryWarning, match=rf"left out.*\(edited\): edited: {reason}"):
            defs = client.feature_flags.definitions(as_of=at["t1"])
        assert _rollouts(defs) == {"steady": 100}
        assert defs.model_extra is not None
        assert [g["flag"] for g in defs.model_extra["history_gaps"]] == ["edited"]


def test_a_flag_deleted_since_is_named(history: tuple[Sandbox, Client, dict[str, Any]]) -> None:
    _, client, at = history
    client.feature_flags.update(at["steady"], deleted=True)
    with pytest.warns(DefinitionsHistoryWarning, match=r"steady: deleted since"):
        defs = client.feature_flags.definitions(as_of=at["t1"])
    assert _rollouts(defs) == {"edited": 10}
    later = client.feature_flags.definitions(as_of=dt.datetime.now(dt.UTC))  # deleted then: absent, no gap
    assert "steady" not in _rollouts(later)


def test_cohorts_are_marked_as_read_today(empty_sandbox: Sandbox, make_client: Callable[..., Client]) -> None:
    sb = empty_sandbox
    client = make_client(sb, ids=True)
    cohort = create_cohort(
        sb.ctx.store, sb.project_id, "EU", {"type": "OR", "values": [prop("country", "DE")]}
    )
    client.feature_flags.create("eu", filters=_filters(condition(prop("id", cohort, type="cohort"))))
    with pytest.warns(
        DefinitionsHistoryWarning, match=rf"eu \(cohort {cohort}\): uses a cohort read as it is today"
    ):
        defs = client.feature_flags.definitions(as_of=_moment())
    assert str(cohort) in defs.cohorts and [f.key for f in defs.flags] == ["eu"]


@pytest.mark.parametrize(
    ("as_of", "match"),
    [
        (dt.datetime(2026, 1, 1), "no timezone"),
        (dt.date(2026, 1, 1), "is a date"),
        ("yesterday", "not an ISO"),
    ],
)
def test_as_of_must_be_an_aware_moment(
    empty_sandbox: Sandbox, make_client: Callable[..., Client], as_of: Any, match: str
) -> None:
    client = make_client(empty_sandbox, ids=True)
    with pytest.raises(ValueError, match=match):
        client.feature_flags.definitions(as_of=as_of)


def test_the_async_client_answers_the_same(history: tuple[Sandbox, Client, dict[str, Any]]) -> None:
    sb, client, at = history

    async def read() -> Any:
        async with AsyncClient(
            sb.url,
            personal_api_key=sb.personal_api_key,
            project_api_key=sb.project_api_key,
            project_id=sb.project_id,
        ) as aclient:
            return await aclient.feature_flags.definitions(as_of=at["t2"])

    assert _rollouts(asyncio.run(read())) == _rollouts(client.feature_flags.definitions(as_of=at["t2"]))
