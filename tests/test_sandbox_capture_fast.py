"""The sandbox's capture hot path (issue 15) gives the answers of the reference path, over real HTTP.

The reference path is the one the sandbox takes without orjson: `json` parses the body and `check_json`
checks every value, every event is measured, columns are encoded by `json`, one statement per event. The
fast path parses with orjson, skips measuring events in bodies too small to hold one over the limit, keeps
canonical uuids and timestamps as sent, and writes plain events with one `executemany` per chunk. Each test
sends the same bodies through both (two projects of one sandbox; the reference with orjson switched off)
and compares the answers and the stored events, or pins one rule of the fast path that a broken version
would get wrong (integers beyond 64 bits, a float's growth past the size limit, the depth limit, person
updates of retried events).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analytics_nb.sandbox import Sandbox, start
from analytics_nb.sandbox._resources import capture as capture_mod
from analytics_nb.sandbox._resources import events as events_mod
from analytics_nb.sandbox._resources import persons
from analytics_nb.sandbox._resources.capture import EVENT_LIMIT, SIZE_GROWTH, WRITE_CHUNK

pytest.importorskip("orjson")

#: Everything stored for an event except the time it was received.
COMPARED = (
    "uuid",
    "event",
    "distinct_id",
    "timestamp",
    "properties",
    "sent_at",
    "token",
    "extra",
    "endpoint",
)


@pytest.fixture(scope="module")
def sb() -> Iterator[Sandbox]:
    with start(seed="empty") as sandbox:
        yield sandbox


@contextmanager
def reference_path() -> Iterator[None]:
    """Switch orjson off in the capture module: the sandbox answers by the reference path meanwhile."""
    saved = capture_mod._ORJSON_LOADS, capture_mod._ORJSON_DUMPS
    capture_mod._ORJSON_LOADS, capture_mod._ORJSON_DUMPS = None, None
    try:
        yield
    finally:
        capture_mod._ORJSON_LOADS, capture_mod._ORJSON_DUMPS = saved


def stored(sb: Sandbox, project_id: int) -> list[dict[str, Any]]:
    """The project's stored events (capture order), without the time each was received."""
    rows = events_mod.event_records(sb.ctx.store, project_id=project_id)
    return [{k: r[k] for k in COMPARED} for r in rows]


def post(sb: Sandbox, body: bytes, path: str = "/batch/") -> tuple[int, str]:
    resp = httpx.post(sb.url + path, content=body, headers={"Content-Type": "application/json"}, timeout=30)
    return resp.status_code, resp.text


def raw_batch(token: str, properties_json: str, distinct_id: str = "d") -> bytes:
    """A /batch body of one event whose properties are given as JSON text (spelt exactly so)."""
    head = json.dumps({"api_key": token, "batch": [{"event": "e", "distinct_id": distinct_id}]})
    return (head[: -len("}]}")] + ', "properties": ' + properties_json + "}]}").encode()


def both(sb: Sandbox, make_body: Any, path: str = "/batch/") -> tuple[tuple[int, str], tuple[int, str], Any]:
    """Send `make_body(token)` to a new project by the reference path and to another by the fast path;
    returns both answers and a function giving (reference rows, fast rows)."""
    ref = sb.add_project("reference")
    fast = sb.add_project("fast")
    with reference_path():
        ref_answer = post(sb, make_body(ref.api_token), path)
    fast_answer = post(sb, make_body(fast.api_token), path)

    def rows() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        ref_rows, fast_rows = stored(sb, ref.id), stored(sb, fast.id)
        assert {r.pop("token") for r in ref_rows} <= {ref.api_token}
        assert {r.pop("token") for r in fast_rows} <= {fast.api_token}
        return ref_rows, fast_rows

    return ref_answer, fast_answer, rows


# -- differential: random batches ---------------------------------------------------------------------------
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from([2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63) - 1, 10**30, 123456789012345678]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([1e-05, 1e16, 1e15, -0.0, 5e-324, 1.7976931348623157e308, 0.00012345678901234567]),
    st.text(max_size=12),
    st.sampled_from(["é😀", "\u2028", "a\x01b", '[{"}]', "\\u0000"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)
#: Explicit timestamps only (an event without one is stamped with the time it arrives, which differs
#: between the two requests): the stored form, the SDK's `+00:00`, other zones, and texts that only look
#: like the fast path's shape.
stamps = st.sampled_from(
    [
        "2024-01-02T03:04:05.123456Z",
        "2024-01-02T03:04:05.123456+00:00",
        "2024-01-02T03:04:05Z",
        "2024-01-02T03:04:05.123456+02:00",
        "2024-02-30T03:04:05.123456Z",
        "2024-01-02T24:00:00.000000Z",
        "0000-01-02T03:04:05.123456Z",
        " 2024-01-02T03:04:05.123456Z",
        "2024-01-02t03:04:05.123456z",
        "2024-01-02T03:04:05.123456",
        "2024-01-02T03:04:05.123456-00:00",
        "not a time",
    ]
)
#: Explicit uuids only (a missing one is generated): canonical, upper case, hex, braces, invalid.
uuids = st.one_of(
    st.uuids().map(str),
    st.uuids().map(lambda u: str(u).upper()),
    st.uuids().map(lambda u: u.hex),
    st.sampled_from(
        ["not-a-uuid", "{12345678-1234-5678-1234-567812345678}", "12345678-1234-5678-1234-56781234567g"]
    ),
)


@st.composite
def events(draw: Any) -> dict[str, Any]:
    event: dict[str, Any] = {
        "event": draw(st.sampled_from(["view", "click", "$identify", "$groupidentify", "buy", ""])),
        "distinct_id": draw(st.one_of(st.sampled_from(["u1", "u2", ""]), st.integers())),
        "properties": draw(st.dictionaries(st.text(max_size=6), values, max_size=5)),
        "uuid": draw(uuids),
        "timestamp": draw(stamps),
    }
    if draw(st.booleans()):
        event["$set"] = draw(st.dictionaries(st.text(max_size=3), scalars, max_size=2))
    return event


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(events(), min_size=1, max_size=6), path=st.sampled_from(["/batch/", "/e/"]))
def test_random_batches_get_the_same_answer_and_store_the_same_events(
    sb: Sandbox, batch: list[dict[str, Any]], path: str
) -> None:
    ref_answer, fast_answer, rows = both(
        sb, lambda token: json.dumps({"api_key": token, "batch": batch}).encode(), path
    )
    assert fast_answer == ref_answer
    ref_rows, fast_rows = rows()
    assert fast_rows == ref_rows
    assert len(fast_rows) == (0 if ref_answer[0] != 200 else len(fast_rows))


# -- rules of the fast path, each of which a broken version gets wrong ------------------------------------
def test_integers_beyond_64_bits_are_stored_exactly(sb: Sandbox) -> None:
    big = {
        "u64_max": 2**64 - 1,
        "past_u64": 2**64,
        "below_i64": -(2**63) - 1,
        "huge": 10**40,
        "neg": -(10**25),
    }
    body = lambda token: json.dumps(  # noqa: E731
        {
            "api_key": token,
            "batch": [{"event": "e", "distinct_id": "d", "properties": big, "uuid": str(uuid.uuid4())}],
        }
    ).encode()
    ref_answer, fast_answer, rows = both(sb, body)
    assert ref_answer[0] == fast_answer[0] == 200
    ref_rows, fast_rows = rows()
    assert fast_rows[0]["properties"] == big and all(
        type(v) is int for v in fast_rows[0]["properties"].values()
    )
    assert ref_rows[0]["properties"] == big


def test_an_event_whose_floats_grow_past_the_limit_when_encoded_is_refused(sb: Sandbox) -> None:
    # `1e15` is 4 bytes in the body and 18 (`1000000000000000.0`) in the event's encoding, which the limit
    # applies to: a body under the limit can hold an event over it, and only bodies at most
    # EVENT_LIMIT // SIZE_GROWTH bytes skip measuring
    count = EVENT_LIMIT // 18 + 1000
    floats = "[" + ",".join(["1e15"] * count) + "]"
    token = sb.project_api_key
    body = raw_batch(token, '{"f":' + floats + "}")
    assert len(body) < EVENT_LIMIT // 3
    status, text = post(sb, body)
    assert status == 400 and text.startswith("maximum event size exceeded")
    with reference_path():
        status, text = post(sb, body)
        assert status == 400 and text.startswith("maximum event size exceeded")
    # the largest body that is not measured cannot hold an event over the limit, even all `1e15`
    fits = (EVENT_LIMIT // SIZE_GROWTH - 200) // 5
    small = "[" + ",".join(["1e15"] * fits) + "]"
    body = raw_batch(token, '{"f":' + small + "}", "small")
    assert len(body) <= EVENT_LIMIT // SIZE_GROWTH
    assert post(sb, body)[0] == 200


@pytest.mark.parametrize("levels", [122, 123, 124, 125, 126])
def test_the_depth_limit_is_where_the_reference_path_puts_it(sb: Sandbox, levels: int) -> None:
    # the batch envelope takes 4 levels (body, batch, event, properties): one of these is the first refused
    nested = "[" * levels + "]" * levels

    def body(token: str) -> bytes:
        return raw_batch(token, '{"x":' + nested + "}")

    ref_answer, fast_answer, _rows = both(sb, body)
    assert fast_answer == ref_answer
    assert ref_answer[0] == (200 if levels <= 124 else 400), ref_answer


def test_person_updates_apply_once_in_capture_order_across_chunks(sb: Sandbox) -> None:
    project = sb.add_project("people")
    token = project.api_token
    u1, u2 = str(uuid.uuid4()), str(uuid.uuid4())
    first = {
        "event": "$set",
        "distinct_id": "p",
        "uuid": u1,
        "timestamp": "2024-05-01T00:00:00.000000Z",
        "properties": {"$set": {"plan": "free"}},
    }
    second = {
        "event": "$set",
        "distinct_id": "p",
        "uuid": u2,
        "timestamp": "2024-05-01T00:00:01.000000Z",
        "properties": {"$set": {"plan": "pro"}},
    }
    plain = [
        {"event": "view", "distinct_id": "p", "uuid": str(uuid.uuid4()), "properties": {"i": i}}
        for i in range(WRITE_CHUNK + 500)
    ]
    # first in the first chunk, second in the second, then first again (a retry: a stored event)
    batch = [*plain[:10], first, *plain[10 : WRITE_CHUNK + 100], second, *plain[WRITE_CHUNK + 100 :], first]
    assert post(sb, json.dumps({"api_key": token, "batch": batch}).encode())[0] == 200
    assert persons.person_properties(sb.ctx.store, project.id, "p") == {"plan": "pro"}
    # a retry in a later request does not apply its update again either
    assert post(sb, json.dumps({"api_key": token, "batch": [first]}).encode())[0] == 200
    assert persons.person_properties(sb.ctx.store, project.id, "p") == {"plan": "pro"}
    rows = events_mod.event_records(sb.ctx.store, project_id=project.id)
    assert [r["uuid"] for r in rows] == [e["uuid"] for e in batch[:-1]]  # capture order, each once


def _reference_time(text: str) -> str | None:
    try:
        return capture_mod._iso(capture_mod._parse_time(text, "timestamp"))
    except capture_mod.BodyError:
        return None


def _reference_uuid(text: str) -> str | None:
    try:
        return str(uuid.UUID(text))
    except ValueError:
        return None


@pytest.mark.parametrize(
    "stamp",
    [
        "2024-01-02T03:04:05.123456Z",
        "2024-01-02T03:04:05.123456+00:00",
        "2024-02-29T23:59:59.999999Z",
        "2023-02-29T03:04:05.123456Z",  # the shape the text is kept in, but no such day
        "2024-13-02T03:04:05.123456Z",
        "2024-01-02T24:00:00.000000Z",
        "2024-01-02T23:59:60.000000+00:00",
        "0000-01-02T03:04:05.123456Z",
        "2024-01-02T03:04:05.123456-00:00",
        "2024-01-02T03:04:05.123456+01:00",
        "2024-01-02T03:04:05Z",
    ],
)
def test_a_timestamp_is_stored_as_the_reference_parse_gives_or_refused(sb: Sandbox, stamp: str) -> None:
    project = sb.add_project("times")
    event = {"event": "e", "distinct_id": "d", "uuid": str(uuid.uuid4()), "timestamp": stamp}
    status, text = post(sb, json.dumps({"api_key": project.api_token, "batch": [event]}).encode())
    expected = _reference_time(stamp)
    if expected is None:
        assert status == 400 and text.startswith("failed to parse request: invalid timestamp"), text
    else:
        assert status == 200, text
        assert [r["timestamp"] for r in stored(sb, project.id)] == [expected]


@pytest.mark.parametrize(
    "text",
    [
        "0fa3732a-9b7e-4a50-a80f-6778b19118c9",
        "0FA3732A-9B7E-4A50-A80F-6778B19118C9",
        "0FA3732A-9b7e-4a50-a80f-6778b19118c9",
        "0fa3732a-9b7e-4a50-a80f-6778b19118C9",
        "0fa3732a9b7e4a50a80f6778b19118c9",
        "urn:uuid:0fa3732a-9b7e-4a50-a80f-6778b19118c9",
        "0fa3732a-9b7e-4a50-a80f-6778b19118cg",
        "0fa3732a-9b7e-4a50-a80f-6778b19118c",
    ],
)
def test_a_uuid_is_stored_in_canonical_form_or_refused(sb: Sandbox, text: str) -> None:
    project = sb.add_project("uuids")
    event = {"event": "e", "distinct_id": "d", "uuid": text}
    status, answer = post(sb, json.dumps({"api_key": project.api_token, "batch": [event]}).encode())
    expected = _reference_uuid(text)
    if expected is None:
        assert status == 400 and answer.startswith("failed to parse request: invalid uuid"), answer
    else:
        assert status == 200, answer
        assert [r["uuid"] for r in stored(sb, project.id)] == [expected]
