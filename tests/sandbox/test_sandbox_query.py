"""Contract tests of the sandbox's persons (ids, merges) and its HogQL query endpoint.

Each assertion names the PostHog source it ports: `posthog/api/test/test_query.py` (response shape, 400s),
`posthog/api/query.py` (HogQL errors as `ValidationError`), `posthog/hogql/constants.py` (row cap),
`plugin-server/src/worker/ingestion/persons/person-merge-service.ts` (merges) and
`plugin-server/src/worker/ingestion/person-uuid.ts` (person ids).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from analytics_nb.sandbox import Sandbox, start

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


@pytest.fixture(scope="module")
def sb() -> Iterator[Sandbox]:
    with start(seed="empty", profile="spec") as sandbox:
        yield sandbox


def _query(sb: Sandbox, text: str, *, key: str | None = None, body: Any = None) -> httpx.Response:
    payload = body if body is not None else {"query": {"kind": "HogQLQuery", "query": text}}
    return httpx.post(
        f"{sb.url}/api/projects/@current/query/",
        json=payload,
        headers={"Authorization": f"Bearer {key or sb.personal_api_key}"},
    )


def _capture(sb: Sandbox, events: list[dict[str, Any]]) -> None:
    r = httpx.post(f"{sb.url}/batch/", json={"api_key": sb.project_api_key, "batch": events})
    assert r.status_code == 200, r.text


def _ids_of(sb: Sandbox, *distinct_ids: str) -> dict[str, tuple[str, dict[str, Any], bool]]:
    quoted = ", ".join(f"'{d}'" for d in distinct_ids)
    r = _query(
        sb,
        "SELECT pdi.distinct_id, p.id, p.properties, p.is_identified FROM person_distinct_ids pdi "
        f"JOIN persons p ON pdi.person_id = p.id WHERE pdi.distinct_id IN ({quoted})",
    )
    assert r.status_code == 200, r.text
    import json

    return {row[0]: (row[1], json.loads(row[2]), row[3]) for row in r.json()["results"]}


def _tag() -> str:
    return uuid.uuid4().hex[:8]


# -- persons: ids and merges --------------------------------------------------------------------------------
def test_a_new_person_gets_posthogs_deterministic_uuid(sb: Sandbox) -> None:
    # person-uuid.ts `uuidFromDistinctId`: UUIDv5("<team id>:<distinct id>") in namespace 932979b4-...
    d = f"solo-{_tag()}"
    _capture(sb, [{"event": "e", "distinct_id": d, "properties": {"$set": {"a": 1}}}])
    expected = uuid.uuid5(uuid.UUID("932979b4-65c3-4424-8467-0b66ec27bc22"), f"{sb.project_id}:{d}")
    assert _ids_of(sb, d)[d] == (str(expected), {"a": 1}, False)


def test_identify_joins_the_anonymous_id_to_the_identified_person(sb: Sandbox) -> None:
    # person-merge-service.ts `mergeDistinctIds`: only one id has a person -> the other id is added to it,
    # and the person is marked identified.
    t = _tag()
    anon, user = f"anon-{t}", f"user-{t}"
    _capture(sb, [{"event": "view", "distinct_id": anon, "properties": {"$set": {"plan": "free"}}}])
    _capture(sb, [{"event": "$identify", "distinct_id": user, "properties": {"$anon_distinct_id": anon}}])
    ids = _ids_of(sb, anon, user)
    assert ids[anon][0] == ids[user][0]
    assert ids[user][1] == {"plan": "free"} and ids[user][2] is True


def test_neither_id_known_makes_one_identified_person_from_the_event_id(sb: Sandbox) -> None:
    # `mergeDistinctIds` "Neither Distinct ID points at an existing Person": createPerson(.., true, ..)
    # with [mergeIntoDistinctId, otherPersonDistinctId]: the uuid is the event's distinct id's.
    t = _tag()
    _capture(
        sb, [{"event": "$create_alias", "distinct_id": f"main-{t}", "properties": {"alias": f"alt-{t}"}}]
    )
    ids = _ids_of(sb, f"main-{t}", f"alt-{t}")
    expected = uuid.uuid5(uuid.UUID("932979b4-65c3-4424-8467-0b66ec27bc22"), f"{sb.project_id}:main-{t}")
    assert ids[f"main-{t}"][0] == ids[f"alt-{t}"][0] == str(expected)
    assert ids[f"alt-{t}"][2] is True


def test_merging_two_persons_keeps_the_targets_properties_on_conflict(sb: Sandbox) -> None:
    # `mergePeople`: properties {...otherPerson, ...mergeInto}; the target (event's distinct id) person stays.
    t = _tag()
    a, b = f"a-{t}", f"b-{t}"
    _capture(
        sb,
        [
            {"event": "x", "distinct_id": a, "properties": {"$set": {"plan": "free", "only_a": 1}}},
            {"event": "x", "distinct_id": b, "properties": {"$set": {"plan": "pro", "only_b": 2}}},
        ],
    )
    before = _ids_of(sb, b)[b][0]
    _capture(sb, [{"event": "$identify", "distinct_id": b, "properties": {"$anon_distinct_id": a}}])
    ids = _ids_of(sb, a, b)
    assert ids[a][0] == ids[b][0] == before
    assert ids[b][1] == {"plan": "pro", "only_a": 1, "only_b": 2}


def test_an_identified_person_is_not_merged_away_except_dangerously(sb: Sandbox) -> None:
    # `isMergeAllowed`: $identify / $create_alias never merge an identified person; $merge_dangerously does.
    t = _tag()
    a, b, c = f"ia-{t}", f"ib-{t}", f"ic-{t}"
    _capture(sb, [{"event": "$create_alias", "distinct_id": a, "properties": {"alias": c}}])  # a+c identified
    _capture(sb, [{"event": "x", "distinct_id": b, "properties": {"$set": {"k": 1}}}])
    _capture(sb, [{"event": "$identify", "distinct_id": b, "properties": {"$anon_distinct_id": a}}])
    ids = _ids_of(sb, a, b)
    assert ids[a][0] != ids[b][0]
    _capture(sb, [{"event": "$merge_dangerously", "distinct_id": b, "properties": {"alias": a}}])
    ids = _ids_of(sb, a, b, c)
    assert ids[a][0] == ids[b][0] == ids[c][0]


@pytest.mark.parametrize("illegal", ["anonymous", "null", "0", "undefined", '"guest"', " "])
def test_illegal_ids_are_never_merged(sb: Sandbox, illegal: str) -> None:
    # `isDistinctIdIllegal` (BARE_CASE_*_ILLEGAL_IDS, quoted forms, blank)
    t = _tag()
    _capture(sb, [{"event": "x", "distinct_id": f"ok-{t}", "properties": {"$set": {"k": 1}}}])
    _capture(
        sb, [{"event": "$identify", "distinct_id": f"ok-{t}", "properties": {"$anon_distinct_id": illegal}}]
    )
    assert set(_ids_of(sb, f"ok-{t}", illegal)) == {f"ok-{t}"}


# -- the query endpoint ------------------------------------------------------------------------------------
def test_answer_has_the_services_shape_and_types(sb: Sandbox) -> None:
    # test_query.py `test_select_hogql_expressions`: results as lists, columns, ClickHouse types
    # (`Nullable(String)` for a property), hasMore.
    sb.add_persons([([f"shape-{_tag()}"], {"email": "x@y.z"}, False)])
    r = _query(sb, "SELECT id, properties.email, is_identified FROM persons WHERE properties.email = 'x@y.z'")
    assert r.status_code == 200
    body = r.json()
    assert body["columns"] == ["id", "email", "is_identified"]
    assert body["types"] == ["UUID", "Nullable(String)", "Bool"]
    assert body["hasMore"] is False and body["limit"] == 100 and body["offset"] == 0
    assert [row[1:] for row in body["results"]] == [["x@y.z", False]]


def test_default_and_max_rows_follow_hogql_constants(sb: Sandbox) -> None:
    # constants.py DEFAULT_RETURNED_ROWS (no LIMIT) and MAX_SELECT_RETURNED_ROWS (a LIMIT is capped);
    # test_query.py `test_full_hogql_query_limit` patches them to 10 / 15 the same way. hogql_query_runner.py
    # `_calculate`: only a query without LIMIT goes through HogQLHasMorePaginator (hasMore / limit / offset);
    # one with a LIMIT answers them as null, even when the cap cut it.
    sb.add_persons([([f"cap-{i:03d}"], {"cap": "yes"}, False) for i in range(20)])
    sb.set_query_row_limits(max_rows=15, default_rows=10)
    try:
        plain = _query(
            sb, "SELECT distinct_id FROM person_distinct_ids WHERE distinct_id LIKE 'cap-%'"
        ).json()
        capped = _query(
            sb, "SELECT distinct_id FROM person_distinct_ids WHERE distinct_id LIKE 'cap-%' LIMIT 1000"
        ).json()
    finally:
        sb.set_query_row_limits()
    assert (len(plain["results"]), plain["hasMore"], plain["limit"]) == (10, True, 10)
    assert (len(capped["results"]), capped["hasMore"], capped["limit"], capped["offset"]) == (
        15,
        None,
        None,
        None,
    )


def test_keyset_paging_reads_each_row_once(sb: Sandbox) -> None:
    # the paging user_query_validator.py's message advises: WHERE key > last ORDER BY key LIMIT N
    rows: list[str] = []
    last = ""
    while True:
        body = _query(
            sb,
            "SELECT distinct_id FROM person_distinct_ids WHERE distinct_id LIKE 'cap-%' "
            f"AND distinct_id > '{last}' ORDER BY distinct_id LIMIT 7",
        ).json()
        rows += [r[0] for r in body["results"]]
        if len(body["results"]) < 7:
            break
        last = rows[-1]
    assert rows == [f"cap-{i:03d}" for i in range(20)]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("selec 1", "Syntax error"),
        ("SELECT nope FROM persons", "nope"),
        ("SELECT id FROM nowhere", "nowhere"),
        ("SELECT id FROM persons GROUP BY id", "GROUP BY"),
        ("SELECT id FROM persons WHERE properties.age > 3", "text with a number"),
    ],
)
def test_a_bad_or_unsupported_query_is_a_400_validation_error(sb: Sandbox, text: str, needle: str) -> None:
    # posthog/api/query.py: an ExposedHogQLError becomes DRF's ValidationError -> 400 validation_error
    r = _query(sb, text)
    assert r.status_code == 400
    body = r.json()
    assert (body["type"], body["code"], body["attr"]) == ("validation_error", "invalid_input", None)
    assert needle in body["detail"]


@pytest.mark.parametrize(
    "text",
    [
        "SELECT id FROM persons LIMIT 10 OFFSET 10",
        "SELECT * FROM (SELECT id FROM persons LIMIT 5 OFFSET 5)",
    ],
)
def test_offset_is_refused_for_api_keys(sb: Sandbox, text: str) -> None:
    # posthog/hogql/user_query_validator.py `_OffsetDetectingVisitor`: OFFSET anywhere -> QueryError (400),
    # OFFSET_NOT_ALLOWED_MESSAGE, for queries made with a personal API key
    r = _query(sb, text)
    assert r.status_code == 400
    assert r.json()["detail"].startswith("OFFSET is not supported on queries made with a personal API key.")


def test_missing_query_and_other_kinds_are_400(sb: Sandbox) -> None:
    # test_query.py `test_missing_query`, `test_missing_body`, `test_query_not_supported`
    assert _query(sb, "", body={"query": {}}).status_code == 400
    assert _query(sb, "", body={}).status_code == 400
    r = _query(sb, "", body={"query": {"kind": "SavedInsightNode", "shortId": "1"}})
    assert r.status_code == 400 and r.json()["detail"] == "Unsupported query kind: SavedInsightNode"


def test_scope_and_secret_key(sb: Sandbox) -> None:
    # scope query:read for personal keys; a project secret key with query:read works (docs queries.mdx)
    no_scope = sb.create_personal_key(scopes=["feature_flag:read"])
    assert _query(sb, "SELECT 1 FROM persons LIMIT 1", key=no_scope).status_code == 403
    secret = sb.create_secret_key(scopes=["query:read"])
    assert _query(sb, "SELECT id FROM persons LIMIT 1", key=secret).status_code == 200
    flags_only = sb.create_secret_key(scopes=["feature_flag:read"])
    assert _query(sb, "SELECT id FROM persons LIMIT 1", key=flags_only).status_code == 401


def test_timeout_fault_answers_clickhouse_query_timeout(sb: Sandbox) -> None:
    # posthog/exceptions.py ClickHouseQueryTimeOut: status 504 and its detail
    fault = sb.faults.add(path="/api/projects/*/query*", kind="query_timeout")
    try:
        r = _query(sb, "SELECT id FROM persons")
    finally:
        sb.faults.remove(fault)
    assert r.status_code == 504 and "max execution time" in r.json()["detail"]


def test_flags_see_the_merged_persons_properties_from_every_id(sb: Sandbox) -> None:
    # after a merge every distinct id reads the one person's properties (the service keys a person's
    # properties by person, not by distinct id): a $set sent under the identified id reaches the anon id
    t = _tag()
    anon, user = f"fa-{t}", f"fu-{t}"
    _capture(sb, [{"event": "view", "distinct_id": anon, "properties": {"$set": {"plan": "free"}}}])
    _capture(sb, [{"event": "$identify", "distinct_id": user, "properties": {"$anon_distinct_id": anon}}])
    _capture(
        sb, [{"event": "x", "distinct_id": user, "properties": {"$set": {"plan": "pro", "email": "a@b.c"}}}]
    )
    ids = _ids_of(sb, anon, user)
    assert ids[anon][1] == ids[user][1] == {"plan": "pro", "email": "a@b.c"}
    from analytics_nb.sandbox._resources.persons import person_properties

    assert person_properties(sb.ctx.store, sb.project_id, anon) == {"plan": "pro", "email": "a@b.c"}


def test_rows_of_an_older_build_get_their_person_id(sb: Sandbox) -> None:
    # a database written before person ids: rows without one read with PostHog's deterministic id
    d = f"old-{_tag()}"
    sb.ctx.store.execute(
        "INSERT INTO persons(project_id, distinct_id, properties) VALUES (?,?,?)",
        (sb.project_id, d, '{"k": 1}'),
    )
    expected = uuid.uuid5(uuid.UUID("932979b4-65c3-4424-8467-0b66ec27bc22"), f"{sb.project_id}:{d}")
    assert _ids_of(sb, d)[d] == (str(expected), {"k": 1}, False)


def test_a_database_file_of_an_older_build_opens_with_person_ids(tmp_path: Any) -> None:
    # persons written before person ids (no person_id / created_at / is_identified columns, no index)
    import sqlite3

    db = str(tmp_path / "old.sqlite")
    with start(seed="empty", db=db) as first:
        project = first.project_id
    conn = sqlite3.connect(db)
    conn.executescript(
        "DROP INDEX IF EXISTS persons_person_ids; DROP TABLE persons; "
        "CREATE TABLE persons (project_id INTEGER NOT NULL, distinct_id TEXT NOT NULL, "
        "properties TEXT NOT NULL DEFAULT '{}', PRIMARY KEY (project_id, distinct_id));"
    )
    conn.execute("INSERT INTO persons VALUES (?, 'legacy-1', '{\"plan\": \"pro\"}')", (project,))
    conn.commit()
    conn.close()
    with start(seed="empty", db=db) as again:
        ids = _ids_of(again, "legacy-1")
    expected = uuid.uuid5(uuid.UUID("932979b4-65c3-4424-8467-0b66ec27bc22"), f"{project}:legacy-1")
    assert ids["legacy-1"] == (str(expected), {"plan": "pro"}, False)


def test_a_subquerys_aliased_columns_are_read_by_the_outer_query(sb: Sandbox) -> None:
    """`SELECT * FROM (SELECT properties.x AS y ...)` reads y's values (the client's keyset paging wraps
    every query so); the old translation answered the column's name as text for a computed column."""
    tag = _tag()
    _capture(sb, [{"event": "view", "distinct_id": tag, "properties": {"$set": {"plan": "pro"}}}])
    r = _query(
        sb,
        "SELECT * FROM (SELECT pdi.distinct_id AS d, p.properties.plan AS plan FROM person_distinct_ids pdi "
        f"JOIN persons p ON pdi.person_id = p.id) WHERE d = '{tag}' ORDER BY d LIMIT 5",
    )
    assert r.status_code == 200, r.text
    assert r.json()["results"] == [[tag, "pro"]]


def _flag_calls(sb: Sandbox, tag: str) -> None:
    calls = [("on", True), ("off", False), ("variant", "test"), ("null", None)]
    _capture(
        sb,
        [
            {
                "event": "$feature_flag_called",
                "distinct_id": f"{tag}-{name}",
                "timestamp": f"2026-03-0{i + 1}T10:00:00Z",
                "properties": {"$feature_flag": tag, "$feature_flag_response": response},
            }
            for i, (name, response) in enumerate(calls)
        ],
    )


def test_to_datetime_compares_with_the_event_timestamp(sb: Sandbox) -> None:
    """`toDateTime('<text>')` is HogQL's `parseDateTime64BestEffortOrNull` (posthog/hogql/functions/
    mapping.py): ISO text with or without a zone, compared with `timestamp`."""
    tag = _tag()
    _flag_calls(sb, tag)
    r = _query(
        sb,
        "SELECT distinct_id FROM events WHERE properties.$feature_flag = "
        f"'{tag}' AND timestamp >= toDateTime('2026-03-02T10:00:00Z') "
        "AND timestamp < toDateTime('2026-03-04 10:00:00') ORDER BY timestamp",
    )
    assert r.status_code == 200, r.text
    assert r.json()["results"] == [[f"{tag}-off"], [f"{tag}-variant"]]
    assert _query(sb, "SELECT toDateTime(event) FROM events LIMIT 1").status_code == 400


def test_flag_evaluations_is_served_where_the_project_reads_flag_calls_there(sb: Sandbox) -> None:
    """`flag_evaluations` (posthog/hogql/database/schema/flag_evaluations.py): hidden in mode EVENTS (the
    default, `FlagEvaluationsMode`), served beside `events` when the table is on, and with the calls left
    out of `events` in FLAG_EVALUATIONS_ONLY; `response` is 'true' / 'false' / the variant / 'null'."""
    tag = _tag()
    _flag_calls(sb, tag)
    text = (
        "SELECT distinct_id, flag_key, response FROM flag_evaluations "
        f"WHERE flag_key = '{tag}' ORDER BY timestamp"
    )
    counted = (
        "SELECT count() FROM events WHERE event = '$feature_flag_called' "
        f"AND properties.$feature_flag = '{tag}'"
    )
    refused = _query(sb, text)
    assert refused.status_code == 400 and "Unknown table `flag_evaluations`" in refused.json()["detail"]
    try:
        for switch, in_events in (("flag_evaluations_table", 4), ("flag_evaluations_only", 0)):
            sb.set_switch(switch)
            r = _query(sb, text)
            assert r.status_code == 200, r.text
            body = r.json()
            assert body["types"] == ["String", "String", "String"]
            assert body["results"] == [
                [f"{tag}-on", tag, "true"],
                [f"{tag}-off", tag, "false"],
                [f"{tag}-variant", tag, "test"],
                [f"{tag}-null", tag, "null"],
            ]
            assert _query(sb, counted).json()["results"] == [[in_events]]
            sb.set_switch(switch, False)
    finally:
        sb.set_switch("flag_evaluations_table", False)
        sb.set_switch("flag_evaluations_only", False)


# -- async queries: posthog/api/query.py (create / retrieve), posthog/clickhouse/client/execute_async.py ---


def _status(sb: Sandbox, query_id: str, params: str = "") -> httpx.Response:
    return httpx.get(
        f"{sb.url}/api/projects/@current/query/{query_id}/{params}",
        headers={"Authorization": f"Bearer {sb.personal_api_key}"},
    )


def _async(sb: Sandbox, text: str) -> httpx.Response:
    return _query(sb, "", body={"query": {"kind": "HogQLQuery", "query": text}, "refresh": "force_async"})


def test_force_async_answers_202_with_the_query_status(sb: Sandbox) -> None:
    # posthog/api/test/test_query.py test_full_hogql_query_async: 202 and exactly {"query_status": {...}}
    r = _async(sb, "SELECT count() FROM persons")
    assert r.status_code == 202
    status = r.json()["query_status"]
    assert set(r.json()) == {"query_status"}
    assert set(status) == {
        "complete", "pickup_time", "end_time", "error", "error_message", "expiration_time", "id",
        "query_async", "results", "start_time", "task_id", "team_id", "insight_id", "dashboard_id",
        "query_progress", "labels",
    }  # fmt: skip
    assert status["complete"] is False and status["query_async"] is True and status["results"] is None
    assert status["error"] is False and status["error_message"] is None and status["start_time"]


def test_retrieve_a_complete_query_is_200_with_the_whole_answer(sb: Sandbox) -> None:
    # TestQueryRetrieve.test_completed_query: 200, complete; execute_async.py stores the whole
    # query response (results, columns, types, ...) in the status's `results`
    query_id = _async(sb, "SELECT count() FROM person_distinct_ids").json()["query_status"]["id"]
    direct = _query(sb, "SELECT count() FROM person_distinct_ids").json()
    r = _status(sb, query_id)
    assert r.status_code == 200
    status = r.json()["query_status"]
    assert status["complete"] is True and status["error"] is False and status["end_time"]
    assert status["results"]["results"] == direct["results"] and status["results"]["types"] == ["UInt64"]


def test_retrieve_a_running_query_is_202_with_progress(sb: Sandbox) -> None:
    # TestQueryRetrieve.test_running_query: 202 while complete is false; show_progress adds
    # query_progress (execute_async.py get_query_status: rows_read, estimated_rows_total, ...)
    fault = sb.faults.add(path="/api/projects/*/query*", kind="slow_query")
    try:
        slow_sync = _query(sb, "SELECT id FROM persons LIMIT 5")
        query_id = _async(sb, "SELECT id FROM persons LIMIT 5").json()["query_status"]["id"]
    finally:
        sb.faults.remove(fault)
    assert slow_sync.status_code == 504  # a slow query hits the sync execution limit
    first = _status(sb, query_id, "?show_progress=true")
    assert first.status_code == 202 and first.json()["query_status"]["complete"] is False
    progress = first.json()["query_status"]["query_progress"]
    assert set(progress) == {
        "bytes_read",
        "rows_read",
        "estimated_rows_total",
        "time_elapsed",
        "active_cpu_time",
    }
    codes = [_status(sb, query_id).status_code for _ in range(3)]
    assert codes[-1] == 200 and codes.count(202) <= 1


def test_retrieve_a_failed_query_is_400_with_its_message(sb: Sandbox) -> None:
    # TestQueryRetrieve.test_failed_query_with_exposed_error: 400, error true, the message kept
    query_id = _async(sb, "SELEC id FROM persons").json()["query_status"]["id"]
    r = _status(sb, query_id)
    assert r.status_code == 400
    status = r.json()["query_status"]
    assert (
        status["error"] is True and status["complete"] is True and "Syntax error" in status["error_message"]
    )


def test_retrieve_an_unknown_query_is_404(sb: Sandbox) -> None:
    # TestQueryRetrieve.test_with_invalid_query_id (QueryNotFoundError is DRF's NotFound)
    r = _status(sb, "invalid-query-id")
    assert r.status_code == 404 and r.json()["type"] == "invalid_request"


def test_the_groups_table_has_hogqls_fields(sb: Sandbox) -> None:
    # posthog/hogql/database/schema/groups.py GROUPS_TABLE_FIELDS: index (group_type_index), key
    # (group_key), properties (group_properties, JSON read as text by property access)
    events = [
        {
            "event": "$groupidentify",
            "distinct_id": "g-admin",
            "properties": {
                "$group_type": "org",
                "$group_key": f"org-{i}",
                "$group_set": {"tier": ["a", "b"][i % 2]},
            },
        }
        for i in range(3)
    ]
    _capture(sb, events)
    r = _query(sb, "SELECT index, key, properties.tier FROM groups WHERE key LIKE 'org-%' ORDER BY key")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["columns"] == ["index", "key", "tier"] and body["types"] == [
        "Int64",
        "String",
        "Nullable(String)",
    ]
    index = body["results"][0][0]
    assert body["results"] == [[index, "org-0", "a"], [index, "org-1", "b"], [index, "org-2", "a"]]
    paged = _query(sb, f"SELECT key FROM groups WHERE index = {index} AND key > 'org-0' ORDER BY key LIMIT 1")
    assert paged.json()["results"] == [["org-1"]]
    # no created_at / updated_at kept by the sandbox: refused, never an invented time
    assert _query(sb, "SELECT created_at FROM groups").status_code == 400
