"""Capture endpoints of the sandbox over real HTTP: shapes, encodings, limits, plain-text errors,
de-duplication by uuid, read-back through `sb.events()` and the events list endpoint."""

from __future__ import annotations

import base64
import gzip
import json
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analytics_nb.sandbox import Sandbox, start
from analytics_nb.sandbox._resources import persons
from analytics_nb.sandbox._resources.capture import BATCH_LIMIT, EVENT_LIMIT


def ev(name: str = "page_viewed", distinct_id: str = "cap-user", **extra: Any) -> dict[str, Any]:
    return {"event": name, "distinct_id": distinct_id, "properties": {"path": "/home"}, **extra}


def events_of(sb: Sandbox, distinct_id: str) -> pd.DataFrame:
    frame = sb.events()
    return frame[frame["distinct_id"] == distinct_id]


def test_single_array_and_batch_shapes_on_every_path(empty_sandbox: Sandbox) -> None:
    sb = empty_sandbox
    token = sb.project_api_key
    with httpx.Client(base_url=sb.url, timeout=10) as http:
        for i, path in enumerate(["/capture/", "/capture", "/e/", "/i/v0/e/", "/batch/", "/batch"]):
            single = http.post(path, json={"api_key": token, **ev(distinct_id=f"s{i}")})
            assert single.status_code == 200, single.text
            assert single.json() == {"status": "Ok"}
            array = http.post(
                path,
                json=[
                    {"token": token, **ev(distinct_id=f"a{i}")},
                    {"token": token, **ev(distinct_id=f"a{i}")},
                ],
            )
            assert array.status_code == 200, array.text
            batch = http.post(path, json={"api_key": token, "batch": [ev(distinct_id=f"b{i}")] * 3})
            assert batch.status_code == 200, batch.text
    frame = sb.events()
    assert len(frame) == 6 * (1 + 2 + 3)
    assert set(frame["endpoint"]) == {"/capture", "/e", "/i/v0/e", "/batch"}
    assert frame["uuid"].is_unique


def test_events_frame_columns_and_dtypes(empty_sandbox: Sandbox) -> None:
    sb = empty_sandbox
    uid = str(uuid.uuid4())
    r = httpx.post(
        f"{sb.url}/batch/",
        json={
            "api_key": sb.project_api_key,
            "historical_migration": True,
            "sent_at": "2024-05-01T10:00:01Z",
            "batch": [
                ev(
                    "signed_up",
                    distinct_id=42,
                    uuid=uid,
                    timestamp="2024-05-01T12:00:00+02:00",
                    properties={"plan": "pro", "$set": {"plan": "pro"}},
                )
            ],
        },
    )
    assert r.status_code == 200, r.text
    frame = sb.events()
    assert list(frame.columns[:8]) == [
        "uuid",
        "event",
        "distinct_id",
        "timestamp",
        "properties",
        "received_at",
        "sent_at",
        "token",
    ]
    row = frame.iloc[0]
    assert row["uuid"] == uid and row["distinct_id"] == "42" and row["event"] == "signed_up"
    assert str(frame["timestamp"].dtype) == "datetime64[us, UTC]"
    assert row["timestamp"] == pd.Timestamp("2024-05-01T10:00:00Z")
    assert row["sent_at"] == pd.Timestamp("2024-05-01T10:00:01Z")
    assert row["properties"] == {"plan": "pro", "$set": {"plan": "pro"}}
    assert bool(row["historical_migration"]) is True
    assert row["token"] == sb.project_api_key
    # $set updated the stored person, which decide now reads
    assert persons.person_properties(sb.ctx.store, sb.project_id, "42") == {"plan": "pro"}


def test_retried_batches_never_double_events(empty_sandbox: Sandbox) -> None:
    sb = empty_sandbox
    batch = {
        "api_key": sb.project_api_key,
        "batch": [ev(distinct_id="retry", uuid=str(uuid.uuid4())) for _ in range(5)],
    }
    for _ in range(3):
        assert httpx.post(f"{sb.url}/batch/", json=batch).status_code == 200
    gz = gzip.compress(json.dumps(batch).encode())
    assert httpx.post(f"{sb.url}/batch/", content=gz, headers={"Content-Encoding": "gzip"}).status_code == 200
    assert len(events_of(sb, "retry")) == 5
    # events without a uuid get a fresh UUIDv7 each time (they cannot be recognised as retries)
    no_uuid = {"api_key": sb.project_api_key, "batch": [ev(distinct_id="fresh")]}
    httpx.post(f"{sb.url}/batch/", json=no_uuid)
    httpx.post(f"{sb.url}/batch/", json=no_uuid)
    fresh = events_of(sb, "fresh")
    assert len(fresh) == 2 and all(uuid.UUID(u).version == 7 for u in fresh["uuid"])


def test_encodings(empty_sandbox: Sandbox) -> None:
    sb = empty_sandbox
    raw = json.dumps({"api_key": sb.project_api_key, "batch": [ev(distinct_id="enc")]}).encode()
    b64 = base64.b64encode(raw).decode()
    cases = [
        httpx.post(f"{sb.url}/batch/", content=gzip.compress(raw)),  # magic bytes, no hint
        httpx.post(f"{sb.url}/batch/?compression=gzip", content=gzip.compress(raw)),
        httpx.post(f"{sb.url}/batch/", content=gzip.compress(raw), headers={"Content-Encoding": "gzip"}),
        httpx.post(f"{sb.url}/e/", data={"data": b64}),
        httpx.post(f"{sb.url}/e/", data={"data": base64.b64encode(gzip.compress(raw)).decode()}),
        httpx.post(f"{sb.url}/batch/", content=b64.encode()),
        httpx.get(f"{sb.url}/e/", params={"data": b64}),
    ]
    for i, response in enumerate(cases):
        assert response.status_code == 200, (i, response.text)
    assert len(events_of(sb, "enc")) == len(cases)
    lz = httpx.post(f"{sb.url}/e/", data={"data": "xyz", "compression": "lz64"})
    assert lz.status_code == 400 and lz.text.startswith("failed to decode request")


def test_plain_text_errors(empty_sandbox: Sandbox) -> None:
    sb = empty_sandbox
    token = sb.project_api_key
    cases: list[tuple[Any, int, str]] = [
        (ev(), 401, "event submitted without an api_key"),
        ({"api_key": "", **ev()}, 401, "API key is not valid: empty"),
        ({"api_key": "phc_" + "x" * 70, **ev()}, 401, "API key is not valid: too_long"),
        ({"api_key": "phx_secretpersonalkey", **ev()}, 401, "API key is not valid: personal_api_key"),
        (
            {"api_key": token, "event": "", "distinct_id": "x"},
            400,
            "event submitted with an empty event name",
        ),
        ({"api_key": token, "event": "e"}, 400, "event submitted without a distinct_id"),
        ({"api_key": token, "event": "e", "distinct_id": ""}, 400, "event submitted without a distinct_id"),
        ({"api_key": token, "batch": []}, 400, "request holds no event"),
        (
            [{"token": token, **ev()}, {"token": "phc_other", **ev()}],
            401,
            "batch submitted with inconsistent api_key values",
        ),
    ]
    for payload, status, text in cases:
        r = httpx.post(f"{sb.url}/capture/", json=payload)
        assert r.status_code == status, (payload, r.text)
        assert r.text == text
        assert r.headers["content-type"].startswith("text/plain")
        assert "phx_secretpersonalkey" not in r.text
    bad_uuid = httpx.post(f"{sb.url}/capture/", json={"api_key": token, **ev(uuid="not-a-uuid")})
    assert bad_uuid.status_code == 400 and bad_uuid.text.startswith("failed to parse request")
    malformed = httpx.post(f"{sb.url}/capture/", content=b"{oops")
    assert malformed.status_code == 400 and malformed.text.startswith("failed to")
    nan = json.dumps({"api_key": token, **ev(properties={"x": float("nan")})}).encode()
    not_json = httpx.post(f"{sb.url}/capture/", content=nan)  # NaN is not JSON: refused, never stored
    assert not_json.status_code == 400 and not_json.text.startswith("failed to parse request")
    unknown = httpx.post(f"{sb.url}/capture/", json={"api_key": "phc_unknown_token", **ev()})
    assert unknown.status_code == 401 and "project API key" in unknown.text
    assert sb.events().empty  # nothing half-written
    assert httpx.options(f"{sb.url}/batch/").status_code == 200


def test_size_limits(empty_sandbox: Sandbox) -> None:
    sb = empty_sandbox
    big = "x" * (EVENT_LIMIT + 10)
    # today's service: one 20 MB wire cap on every path, so a big event on /capture is refused as an event
    # (400 EventTooBig), no longer 413 (rust/capture/tests/integration_wire_body_limits.rs)
    r = httpx.post(f"{sb.url}/capture/", json={"api_key": sb.project_api_key, **ev(properties={"blob": big})})
    assert r.status_code == 400 and r.text.startswith("maximum event size exceeded")
    # the same event through /batch (20 MB request limit) is refused per event
    r = httpx.post(
        f"{sb.url}/batch/", json={"api_key": sb.project_api_key, "batch": [ev(properties={"b": big})]}
    )
    assert r.status_code == 400 and r.text.startswith("maximum event size exceeded")
    huge = b"x" * (BATCH_LIMIT + 1)
    assert httpx.post(f"{sb.url}/batch/", content=huge).status_code == 413
    ok = httpx.post(f"{sb.url}/capture/", json={"api_key": sb.project_api_key, **ev(distinct_id="after")})
    assert ok.status_code == 200 and len(sb.events()) == 1  # still serving


@pytest.fixture
def filled(empty_sandbox: Sandbox) -> Sandbox:
    sb = empty_sandbox
    batch = [
        ev("a" if i % 2 else "b", distinct_id=f"p{i % 3}", timestamp=f"2024-01-01T00:00:{i:02d}Z")
        for i in range(12)
    ]
    assert (
        httpx.post(f"{sb.url}/batch/", json={"api_key": sb.project_api_key, "batch": batch}).status_code
        == 200
    )
    return sb


def test_events_list_endpoint(filled: Sandbox) -> None:
    sb = filled
    url = f"{sb.url}/api/projects/{sb.project_id}/events/"
    headers = {"Authorization": f"Bearer {sb.personal_api_key}"}
    page = httpx.get(url, params={"limit": 5}, headers=headers).json()
    assert page["count"] == 12 and len(page["results"]) == 5
    stamps = [e["timestamp"] for e in page["results"]]
    assert stamps == sorted(stamps, reverse=True)  # newest first
    rest = httpx.get(page["next"], headers=headers).json()
    assert {e["id"] for e in rest["results"]}.isdisjoint({e["id"] for e in page["results"]})
    only_a = httpx.get(url, params={"event": "a", "distinct_id": "p1"}, headers=headers).json()
    assert only_a["count"] > 0 and all(
        e["event"] == "a" and e["distinct_id"] == "p1" for e in only_a["results"]
    )
    beyond = httpx.get(url, params={"offset": 2**62}, headers=headers)
    assert beyond.status_code == 200 and beyond.json()["results"] == []
    past_sqlite = httpx.get(url, params={"offset": 10**30}, headers=headers)  # issue 12 finding 10
    assert past_sqlite.status_code == 400 and past_sqlite.json()["attr"] == "offset"
    assert httpx.get(url).status_code == 401
    no_scope = sb.create_personal_key(scopes=["feature_flag:read"])
    denied = httpx.get(url, headers={"Authorization": f"Bearer {no_scope}"})
    assert denied.status_code == 403 and "query:read" in denied.json()["detail"]


def test_retries_through_injected_faults_store_each_event_once(empty_sandbox: Sandbox) -> None:
    sb = empty_sandbox
    sb.faults.reseed(7)
    fault = sb.faults.add(path="/batch*", status=503, rate=0.5, retry_after=0)
    batches = [
        {
            "api_key": sb.project_api_key,
            "batch": [ev(distinct_id="flaky", uuid=str(uuid.uuid4())) for _ in range(4)],
        }
        for _ in range(5)
    ]
    statuses = []
    try:
        with httpx.Client(base_url=sb.url, timeout=10) as http:
            for batch in batches:
                for _attempt in range(
                    50
                ):  # a client's retry loop: resend the same batch until it is accepted
                    status = http.post("/batch/", json=batch).status_code
                    statuses.append(status)
                    if status == 200:
                        break
                # a retry of an already-accepted batch (e.g. the response was lost) must not double it
                assert http.post("/batch/", json=batch).status_code in (200, 503)
    finally:
        sb.faults.remove(fault)
    assert 503 in statuses  # the faults did fire
    assert len(events_of(sb, "flaky")) == 20


def test_groupidentify_and_identify_update_what_decide_reads(empty_sandbox: Sandbox) -> None:
    sb = empty_sandbox
    token = sb.project_api_key
    batch = [
        {
            "event": "$groupidentify",
            "distinct_id": "u1",
            "properties": {
                "$group_type": "company",
                "$group_key": "c1",
                "$group_set": {"plan": "enterprise"},
            },
        },
        {
            "event": "$identify",
            "distinct_id": "u1",
            "$set": {"email": "u1@example.com"},
            "properties": {"$set_once": {"first_seen": "2024-01-01"}},
        },
        {
            "event": "$identify",
            "distinct_id": "u1",
            "properties": {"$set_once": {"first_seen": "2030-01-01"}},
        },
        {
            "event": "e",
            "distinct_id": "u1",
            "properties": {"$set": {"email": "no"}, "$process_person_profile": False},
        },
    ]
    assert httpx.post(f"{sb.url}/batch/", json={"api_key": token, "batch": batch}).status_code == 200
    store = sb.ctx.store
    assert persons.group_properties(store, sb.project_id, "company", "c1") == {"plan": "enterprise"}
    assert persons.person_properties(store, sb.project_id, "u1") == {
        "email": "u1@example.com",
        "first_seen": "2024-01-01",
    }
    assert persons.group_type_mapping(store, sb.project_id) == {"0": "company"}


def test_get_without_data_is_refused(empty_sandbox: Sandbox) -> None:
    r = httpx.get(f"{empty_sandbox.url}/capture/")
    assert r.status_code == 400 and r.text.startswith("failed to decode request")


_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=8,
)


@pytest.fixture(scope="module")
def fuzz_target() -> Iterator[tuple[Sandbox, httpx.Client]]:
    with start(seed="empty") as sb, httpx.Client(base_url=sb.url, timeout=10) as http:
        yield sb, http


@settings(max_examples=50, deadline=None)
@given(
    fields=st.dictionaries(
        st.sampled_from(
            [
                "event",
                "distinct_id",
                "properties",
                "uuid",
                "timestamp",
                "offset",
                "$set",
                "batch",
                "historical_migration",
                "sent_at",
                "token",
            ]
        ),
        _json_values,
        max_size=5,
    ),
    as_list=st.booleans(),
)
def test_any_json_event_gets_a_real_answer_never_a_5xx(
    fuzz_target: tuple[Sandbox, httpx.Client], fields: dict[str, Any], as_list: bool
) -> None:
    sb, http = fuzz_target
    event = {"api_key": sb.project_api_key, **fields}
    r = http.post("/batch/", json=[event] if as_list else event)
    assert r.status_code in (200, 400, 401), (event, r.text)
    if r.status_code == 200:
        assert r.json() == {"status": "Ok"}
    else:
        assert r.headers["content-type"].startswith("text/plain")
    listed = http.get(
        f"/api/projects/{sb.project_id}/events/", headers={"Authorization": f"Bearer {sb.personal_api_key}"}
    )
    assert listed.status_code == 200  # whatever was stored reads back as JSON


def test_extreme_times_are_kept_or_refused_never_a_5xx(empty_sandbox: Sandbox) -> None:
    sb = empty_sandbox
    token = sb.project_api_key
    for stamp in ("0002-01-01T00:00:00Z", "2500-06-01T00:00:00.123456Z"):
        r = httpx.post(f"{sb.url}/capture/", json={"api_key": token, **ev(distinct_id="t", timestamp=stamp)})
        assert r.status_code == 200, r.text
    for bad in ({"offset": 10**20}, {"timestamp": "0001-01-01T00:00:00+01:00"}, {"timestamp": 12}):
        r = httpx.post(f"{sb.url}/capture/", json={"api_key": token, **ev(distinct_id="t", **bad)})
        assert r.status_code == 400 and r.text.startswith("failed to parse request"), bad
    stamps = sorted(sb.events()["timestamp"])
    assert stamps == [pd.Timestamp("0002-01-01T00:00:00Z"), pd.Timestamp("2500-06-01T00:00:00.123456Z")]
