"""`POST /api/projects/:id/query/` for `HogQLQuery`: PostHog's query endpoint over the sandbox's persons,
distinct ids and events.

The query text is parsed by PostHog's own parser (`hogql-parser`, `parse_select_json`; the `hog` extra) and
the small subset below is translated to SQLite over the sandbox's tables (`persons` one row per distinct
id, see `persons.py`):

* tables `persons` (`id`, `properties`, `created_at`, `is_identified`), `person_distinct_ids`
  (`distinct_id`, `person_id`), `groups` (`index`, `key`, `properties`) and `events` (`uuid`, `event`,
  `distinct_id`, `timestamp`, `properties`, `person_id`), as `posthog/hogql/database/schema/persons.py`,
  `person_distinct_ids.py`, `groups.py`, `events.py` name them; one `JOIN` / `INNER JOIN` / `LEFT JOIN
  ... ON a = b`, table aliases;
* columns, `properties.x`, `properties['x']` (a property reads as text: `Nullable(String)`, numbers and
  booleans as their JSON text, as HogQL's property access does), `AS` aliases, constants;
* `flag_evaluations` (`uuid`, `event`, `distinct_id`, `timestamp`, `properties`, `person_id`, `flag_key`,
  `response`: `posthog/hogql/database/schema/flag_evaluations.py`) when a switch says the project reads flag
  calls there (`tables_for`); the sandbox keeps the calls in `events` and serves the table as a view of them;
* `toDateTime('<ISO text>')` of a constant (to compare with `timestamp`);
* `WHERE` with `=`, `!=`, `<`, `<=`, `>`, `>=`, `IN` / `NOT IN` (a tuple), `LIKE` / `ILIKE`, `IS NULL` /
  `IS NOT NULL`, `AND`, `OR`, `NOT`; `ORDER BY`; `LIMIT` / `OFFSET`; `count()` without `GROUP BY`.

Anything else is a 400 `validation_error` naming what is not supported (never a 5xx). The answer has the
service's shape (`HogQLQueryResponse`, `posthog/schema.py`): `results` (rows as lists), `columns`, `types`
(ClickHouse type names, as `posthog/api/test/test_query.py` `test_select_hogql_expressions` shows them),
`hasMore`, `limit`, `offset`, `hogql`, `query_status: null`, ...

**Row cap** (`posthog/hogql/constants.py`; `posthog/hogql_queries/hogql_query_runner.py`, `_calculate`): a
query without `LIMIT` goes through `HogQLHasMorePaginator`: 100 rows (`DEFAULT_RETURNED_ROWS`), one more is
read to set `hasMore`, and the answer carries `hasMore`, `limit` and `offset`. A query with a `LIMIT` runs as
written, its `LIMIT` capped at 50,000 (`MAX_SELECT_RETURNED_ROWS`), and `hasMore` / `limit` / `offset` are
null: a capped answer does not say it was cut. `sb.set_query_row_limits(...)` lowers both for tests.

**No OFFSET with an API key** (`posthog/hogql/user_query_validator.py`, `validate_user_query`, applied to
queries of the query service): any `OFFSET` is a 400 with PostHog's message pointing at keyset pagination
(the organisation allow-list flag that exempts a few customers is not emulated; every sandbox request is
made with a key).

**Errors** (`posthog/api/query.py`): a parse error or an unsupported query is an `ExposedHogQLError` there,
raised as DRF's `ValidationError`: 400 `{"type": "validation_error", "code": "invalid_input", ...}`; a body
without `query` or with another `kind` is a 400 too (`test_missing_query`, `test_query_not_supported`).
`sb.faults.add(path="/api/projects/*/query*", kind="query_timeout")` answers `ClickHouseQueryTimeOut`
(`posthog/exceptions.py`: 504, its detail); `kind="rate_limit_warning"` adds the
`X-PostHog-Rate-Limit-Warning: true` header the service's warn tier sends before it throttles. Scope
`query:read` (personal key) or a `phs_` project secret key with `query:read`; throttle `query` (240/min,
2,400/h: `posthog/rate_limit.py`, `APIQueriesBurstThrottle` / `APIQueriesSustainedThrottle`).

**Async queries** (`posthog/api/query.py`, `create` / `retrieve`;
`posthog/clickhouse/client/execute_async.py`;
`QueryStatus` in `posthog/schema.py`): a body with `"refresh": "force_async"` (or `"async"` / `"lazy_async"`,
which compute asynchronously on a cache miss, and the sandbox has no cache; or the legacy `"async": true`)
answers 202 with `{"query_status": {...}}`, `complete: false` and the query's `id` (as
`posthog/api/test/test_query.py` `test_full_hogql_query_async` shows it). `GET .../query/:id/` answers that
status: 202 while it runs, 200 with `complete: true` and `results` holding the whole query answer
(`results`, `columns`, `types`, `hasMore`, ...), 400 with `error: true` and `error_message` for a query
error, 404 for an unknown or expired id (`TestQueryRetrieve`; the status lives 600 s, `STATUS_TTL_SECONDS`).
With `?show_progress=true` a running query carries `query_progress` (`rows_read`, `estimated_rows_total`,
...). A query runs at once here; `sb.faults.add(path="/api/projects/*/query*", kind="slow_query")` makes a
query slow: a sync request answers the 504 timeout, an async one stays running for `SLOW_POLLS` polls.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from .._auth import hash_key
from .._context import SandboxContext, context_of
from .._endpoints import Endpoint, Query, Refusal
from .._errors import APIError, throttled, validation_error
from .._http import SafeJSONResponse, parse_json_body, read_body
from .._store import Store, loads
from . import hog_syntax, persons

__all__ = [
    "DEFAULT_RETURNED_ROWS",
    "ENDPOINTS",
    "MAX_SELECT_RETURNED_ROWS",
    "SCHEMA",
    "run_hogql",
    "seed",
    "tables_for",
]

SCHEMA = ""
#: `posthog/hogql/constants.py`.
DEFAULT_RETURNED_ROWS = 100
MAX_SELECT_RETURNED_ROWS = 50_000
#: `OFFSET_NOT_ALLOWED_MESSAGE`, posthog/hogql/user_query_validator.py.
OFFSET_NOT_ALLOWED_MESSAGE = (
    "OFFSET is not supported on queries made with a personal API key. For pagination, use keyset pagination "
    "on the `timestamp` column, e.g. `WHERE timestamp > :last_seen_timestamp ORDER BY timestamp LIMIT N`. "
    "For bulk data extraction, use batch exports: https://posthog.com/docs/cdp/batch-exports"
)
#: `ClickHouseQueryTimeOut.default_detail`, `posthog/exceptions.py`.
TIMEOUT_DETAIL = (
    "Query has hit the max execution time before completing. See our docs for how to improve your query "
    "performance. You may need to materialize."
)

_PROPS = "Nullable(String)"
#: `refresh` values that compute asynchronously on a cache miss (`execution_mode_from_refresh`,
#: `posthog/hogql_queries/query_runner.py`): "async", "lazy_async", "force_async".
ASYNC_REFRESH = frozenset({"async", "lazy_async", "force_async"})
#: `QueryStatusManager.STATUS_TTL_SECONDS`: an async query's status is kept this long.
STATUS_TTL_SECONDS = 600
#: Polls a `slow_query` async query answers "running" before it completes.
SLOW_POLLS = 2


@dataclass(frozen=True)
class _Table:
    """A HogQL table: the SQLite subquery over one project, its columns `{name: (sql, ClickHouse type)}`."""

    sql: str
    columns: dict[str, tuple[str, str]]


_TABLES: dict[str, _Table] = {
    "persons": _Table(
        # one row per person (its smallest distinct id's row: every row of a person holds the same
        # properties, see persons.py), chosen by NOT EXISTS rather than GROUP BY so that SQLite can flatten
        # it into a join and read only the rows a keyset page needs (no whole-table pass per page)
        "SELECT a.person_id AS id, a.properties AS properties, a.created_at AS created_at, "
        "a.is_identified AS is_identified FROM persons a WHERE a.project_id=:project AND NOT EXISTS "
        "(SELECT 1 FROM persons b WHERE b.project_id=a.project_id AND b.person_id=a.person_id "
        "AND b.distinct_id < a.distinct_id)",
        {
            "id": ("id", "UUID"),
            "properties": ("properties", "String"),
            "created_at": ("created_at", "DateTime64(3, 'UTC')"),
            "is_identified": ("is_identified", "Bool"),
        },
    ),
    "person_distinct_ids": _Table(
        "SELECT distinct_id, person_id FROM persons WHERE project_id=:project",
        {"distinct_id": ("distinct_id", "String"), "person_id": ("person_id", "UUID")},
    ),
    # `posthog/hogql/database/schema/groups.py` GROUPS_TABLE_FIELDS: `index` (group_type_index), `key`
    # (group_key), `properties`; the sandbox keeps no `created_at` / `updated_at` for a group, so those
    # fields are not offered (a query naming them is a 400, never an invented time)
    "groups": _Table(
        'SELECT group_type_index AS "index", group_key AS "key", properties AS properties FROM groups '
        "WHERE project_id=:project",
        {"index": ('"index"', "Int64"), "key": ('"key"', "String"), "properties": ("properties", "String")},
    ),
    "events": _Table(
        "SELECT e.uuid AS uuid, e.event AS event, e.distinct_id AS distinct_id, e.timestamp AS timestamp, "
        "e.properties AS properties, COALESCE(p.person_id, NULL) AS person_id FROM events e "
        "LEFT JOIN persons p ON p.project_id=e.project_id AND p.distinct_id=e.distinct_id "
        "WHERE e.project_id=:project",
        {
            "uuid": ("uuid", "UUID"),
            "event": ("event", "String"),
            "distinct_id": ("distinct_id", "String"),
            "timestamp": ("timestamp", "DateTime64(6, 'UTC')"),
            "properties": ("properties", "String"),
            "person_id": ("person_id", "UUID"),
        },
    ),
}

#: `flag_evaluations`, its columns as `posthog/hogql/database/schema/flag_evaluations.py`
#: (`FlagEvaluationsTable`) names them: one row per `$feature_flag_called`; `flag_key` the typed copy of
#: `properties.$feature_flag`; `response` 'true', 'false', a variant key or 'null' (a JSON null; a missing
#: response reads 'null' too, inferred). The sandbox stores flag calls in `events` only and serves this
#: table as a view of them (see `tables_for`).
_FLAG_PROP = "'$.\"$feature_flag\"'"
_RESPONSE_PROP = "'$.\"$feature_flag_response\"'"
_FLAG_EVALUATIONS = _Table(
    "SELECT e.uuid AS uuid, e.event AS event, e.distinct_id AS distinct_id, e.timestamp AS timestamp, "
    "e.properties AS properties, p.person_id AS person_id, "
    f"COALESCE(CAST(json_extract(e.properties, {_FLAG_PROP}) AS TEXT), '') AS flag_key, "
    f"(CASE json_type(e.properties, {_RESPONSE_PROP}) WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' "
    f"WHEN 'null' THEN 'null' WHEN 'text' THEN json_extract(e.properties, {_RESPONSE_PROP}) "
    f"WHEN 'integer' THEN CAST(json_extract(e.properties, {_RESPONSE_PROP}) AS TEXT) "
    f"WHEN 'real' THEN CAST(json_extract(e.properties, {_RESPONSE_PROP}) AS TEXT) ELSE 'null' END) "
    "AS response FROM events e LEFT JOIN persons p ON p.project_id=e.project_id "
    "AND p.distinct_id=e.distinct_id WHERE e.project_id=:project AND e.event='$feature_flag_called'",
    {
        "uuid": ("uuid", "UUID"),
        "event": ("event", "String"),
        "distinct_id": ("distinct_id", "String"),
        "timestamp": ("timestamp", "DateTime64(6, 'UTC')"),
        "properties": ("properties", "String"),
        "person_id": ("person_id", "UUID"),
        "flag_key": ("flag_key", "String"),
        "response": ("response", "String"),
    },
)


def tables_for(switches: set[str] | frozenset[str]) -> dict[str, _Table]:
    """The HogQL tables a project sees, by where it keeps `$feature_flag_called` (PostHog's
    `FlagEvaluationsMode`, `products/feature_flags/backend/models/team_feature_flags_config.py`): by default
    (mode 0, EVENTS) the `flag_evaluations` table is hidden and flag calls are in `events`; the switch
    `flag_evaluations_table` shows the table beside `events` (ingestion's dual write); `flag_evaluations_only`
    shows it and leaves the calls out of `events` (FLAG_EVALUATIONS_ONLY stops the events writes)."""
    tables = dict(_TABLES)
    if "flag_evaluations_only" in switches:
        events = _TABLES["events"]
        tables["events"] = _Table(events.sql + " AND e.event != '$feature_flag_called'", events.columns)
    if switches & {"flag_evaluations_table", "flag_evaluations_only"}:
        tables["flag_evaluations"] = _FLAG_EVALUATIONS
    return tables


_COMPARE = {"==": "=", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_LIKE = {"like": "LIKE", "not like": "NOT LIKE", "ilike": "LIKE", "not ilike": "NOT LIKE"}


class Unsupported(Exception):
    """A query the sandbox cannot run: the message names the part and what is supported."""


@dataclass
class _Translation:
    """The SQL being built: parameters, the tables in scope (alias -> table name) and output columns."""

    params: dict[str, Any] = field(default_factory=dict)
    scope: dict[str, _Table] = field(default_factory=dict)
    tables: dict[str, _Table] = field(default_factory=lambda: dict(_TABLES))
    order: list[str] = field(default_factory=list)

    def param(self, value: Any) -> str:
        name = f"p{len(self.params)}"
        self.params[name] = value
        return f":{name}"


def _unsupported(what: str) -> Unsupported:
    return Unsupported(
        f"{what} is not supported by the sandbox's HogQL (it runs SELECT columns, properties.x, WHERE with "
        "comparisons / AND / OR / IN / IS NULL / LIKE, ORDER BY, LIMIT / OFFSET and one JOIN over persons, "
        "person_distinct_ids and events)"
    )


def _property_sql(column: str, key: str, tr: _Translation) -> str:
    """HogQL's property read as text: a JSON string unquoted, numbers and booleans as their JSON text, null
    and missing as NULL (HogQL: `replaceRegexpAll(nullIf(nullIf(JSONExtractRaw(...), ''), 'null'), ...)`)."""
    path = tr.param("$." + json.dumps(key))
    return (
        f"(CASE json_type({column}, {path}) WHEN 'null' THEN NULL WHEN 'true' THEN 'true' "
        f"WHEN 'false' THEN 'false' WHEN 'text' THEN json_extract({column}, {path}) "
        f"ELSE CAST(json_extract({column}, {path}) AS TEXT) END)"
    )


def _column(chain: list[Any], tr: _Translation) -> tuple[str, str, str]:
    """`(sql, type, name)` of a field chain: `col`, `alias.col`, `properties.x`, `alias.properties.x`."""
    names = [str(c) for c in chain]
    alias: str | None = None
    if names[0] in tr.scope and len(names) > 1:
        alias, names = names[0], names[1:]
    if alias is None:
        owners = [a for a, t in tr.scope.items() if names[0] in t.columns]
        if not owners:
            raise Unsupported(f"Unable to resolve field: {names[0]}")
        if len(owners) > 1:
            raise Unsupported(f"Field {names[0]!r} is ambiguous: prefix it with a table alias")
        alias = owners[0]
    table = tr.scope[alias]
    if names[0] not in table.columns:
        raise Unsupported(f"Unable to resolve field: {'.'.join(names)}")
    sql, kind = table.columns[names[0]]
    sql = f'"{alias}".{sql}'
    if len(names) == 1:
        return sql, kind, names[0]
    if names[0] != "properties" or len(names) != 2:
        raise _unsupported(f"The field {'.'.join(names)!r}")
    return _property_sql(sql, names[1], tr), _PROPS, names[1]


def _constant(value: Any, tr: _Translation) -> tuple[str, str]:
    if value is None:
        return "NULL", "Nullable(Nothing)"
    if isinstance(value, bool):
        return ("1" if value else "0"), "Bool"
    if isinstance(value, int):
        return tr.param(value), "Int64"
    if isinstance(value, float):
        return tr.param(value), "Float64"
    if isinstance(value, str):
        return tr.param(value), "String"
    raise _unsupported(f"The constant {value!r}")


def _expr(node: Any, tr: _Translation) -> tuple[str, str]:
    """`(sql, type)` of an expression node of the parser's JSON AST."""
    if not isinstance(node, dict):
        raise _unsupported("This expression")
    kind = node.get("node")
    if kind == "Field":
        sql, typ, _ = _column(node["chain"], tr)
        return sql, typ
    if kind == "ArrayAccess":
        return _array_access(node, tr)
    if kind == "Constant":
        return _constant(node.get("value"), tr)
    if kind == "Alias":
        return _expr(node["expr"], tr)
    if kind in ("And", "Or"):
        parts = [_expr(e, tr)[0] for e in node["exprs"]]
        return "(" + f" {kind.upper()} ".join(parts) + ")", "UInt8"
    if kind == "Not":
        return f"(NOT {_expr(node['expr'], tr)[0]})", "UInt8"
    if kind == "CompareOperation":
        return _compare(node, tr), "UInt8"
    if kind == "Call":
        return _call(node, tr)
    raise _unsupported(f"A {kind} expression")


def _array_access(node: dict[str, Any], tr: _Translation) -> tuple[str, str]:
    array, prop = node.get("array") or {}, node.get("property") or {}
    if (
        array.get("node") != "Field"
        or prop.get("node") != "Constant"
        or not isinstance(prop.get("value"), str)
    ):
        raise _unsupported("This [...] access")
    sql, typ, name = _column(array["chain"], tr)
    if name != "properties" or typ != "String":
        raise _unsupported(f"[...] on {name!r}")
    return _property_sql(sql, prop["value"], tr), _PROPS


def _call(node: dict[str, Any], tr: _Translation) -> tuple[str, str]:
    name, args = str(node.get("name")), node.get("args") or []
    if name == "not" and len(args) == 1:
        return f"(NOT {_expr(args[0], tr)[0]})", "UInt8"
    if name == "count" and not args and not node.get("distinct"):
        return "COUNT(*)", "UInt64"
    if name == "toDateTime" and len(args) == 1:
        return _to_datetime(args[0], tr)
    raise _unsupported(f"The function {name}()")


def _to_datetime(arg: Any, tr: _Translation) -> tuple[str, str]:
    """`toDateTime('<text>')` of a constant: HogQL runs it as `parseDateTime64BestEffortOrNull(text, 6, tz)`
    (`posthog/hogql/functions/mapping.py`); the sandbox parses ISO text (a naive time is UTC, the project's
    timezone here) into the stored form of `events.timestamp` (`2026-01-02T03:04:05.000000Z`), so it
    compares with `timestamp`. Text it cannot parse is NULL, as the OrNull function's."""
    if not isinstance(arg, dict) or arg.get("node") != "Constant" or not isinstance(arg.get("value"), str):
        raise _unsupported("toDateTime() of anything but a text constant")
    try:
        moment = dt.datetime.fromisoformat(arg["value"].strip().replace("Z", "+00:00"))
    except ValueError:
        return "NULL", "Nullable(DateTime64(6, 'UTC'))"
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    text = moment.astimezone(dt.UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"
    return tr.param(text), "DateTime64(6, 'UTC')"


def _compare(node: dict[str, Any], tr: _Translation) -> str:
    op = str(node.get("op"))
    left, ltype = _expr(node["left"], tr)
    right_node = node["right"]
    if op in ("in", "not in"):
        items = right_node.get("exprs") if right_node.get("node") in ("Tuple", "Array") else [right_node]
        values = [_expr(i, tr) for i in items]
        _check_types(ltype, [t for _, t in values], node)
        return f"({left} {op.upper()} ({', '.join(v for v, _ in values)}))"
    right, rtype = _expr(right_node, tr)
    if right == "NULL" and op in ("==", "!="):
        return f"({left} IS {'NOT ' if op == '!=' else ''}NULL)"
    _check_types(ltype, [rtype], node)
    if op in _COMPARE:
        return f"({left} {_COMPARE[op]} {right})"
    if op in _LIKE:
        if op in ("like", "not like"):  # case-sensitive LIKE, as ClickHouse's
            return f"({'NOT ' if op == 'not like' else ''}{_glob_like(left, right)})"
        return f"({left} {_LIKE[op]} {right})"
    raise _unsupported(f"The operator {op!r}")


def _glob_like(left: str, right: str) -> str:
    """A case-sensitive `LIKE` (SQLite's is case-insensitive for ASCII): a per-expression pragma is not
    possible, so `%` / `_` become `*` / `?` of `GLOB`, with GLOB's own specials escaped."""
    pattern = (
        f"replace(replace(replace(replace(replace({right}, '[', '[[]'), '*', '[*]'), '?', '[?]'), "
        "'%', '*'), '_', '?')"
    )
    return f"({left} GLOB {pattern})"


def _check_types(left: str, rights: list[str], node: dict[str, Any]) -> None:
    """A text property compared with a number is refused, as ClickHouse has no common type for them."""
    numbers = {"Int64", "Float64", "UInt64", "UInt8"}
    text = {"String", _PROPS}
    for right in rights:
        if (left in text and right in numbers) or (left in numbers and right in text):
            raise Unsupported(
                "Comparing text with a number: HogQL properties are text; compare with a string ('42') "
                "or convert the property (toFloat(properties.x) is not run by the sandbox)"
            )


def _from(node: Any, tr: _Translation) -> str:
    """The FROM clause: one table, or one JOIN of two, each a subquery over the project."""
    if not isinstance(node, dict) or node.get("node") != "JoinExpr":
        raise _unsupported("A query without FROM")
    first = _table_ref(node, tr)
    join = node.get("next_join")
    if join is None:
        return first
    if join.get("next_join") is not None:
        raise _unsupported("More than one JOIN")
    join_type = str(join.get("join_type") or "JOIN").upper()
    if join_type not in ("JOIN", "INNER JOIN", "LEFT JOIN", "LEFT OUTER JOIN"):
        raise _unsupported(f"{join_type}")
    second = _table_ref(join, tr)
    constraint = join.get("constraint") or {}
    if constraint.get("constraint_type") != "ON":
        raise _unsupported("A JOIN without ON")
    on = _expr(constraint["expr"], tr)[0]
    sql_join = "LEFT JOIN" if join_type.startswith("LEFT") else "JOIN"
    return f"{first} {sql_join} {second} ON {on}"


def _table_ref(node: dict[str, Any], tr: _Translation) -> str:
    table = node.get("table") or {}
    if table.get("node") == "SelectQuery":  # a subquery: its answer's columns are the table's
        inner = _Translation(params=tr.params, tables=tr.tables)
        sql, columns, types = _select_sql(table, inner, limit=None)
        alias = str(node.get("alias") or "_subquery")
        names = [f'"{c}"' for c in columns]
        sql = f"SELECT {', '.join(f'{n} AS {n}' for n in names)} FROM ({sql})"
        found = _Table(sql, {c: (f'"{c}"', t) for c, t in zip(columns, types, strict=True)})
    elif table.get("node") == "Field" and len(table.get("chain") or []) == 1:
        name = str(table["chain"][0])
        if name not in tr.tables:
            raise Unsupported(f"Unknown table `{name}`. The sandbox has {', '.join(tr.tables)}")
        alias, found = str(node.get("alias") or name), tr.tables[name]
    else:
        raise _unsupported("A table function in FROM")
    if alias in tr.scope:
        raise Unsupported(f"The table alias {alias!r} is used twice")
    tr.scope[alias] = found
    return f'({found.sql}) AS "{alias}"'


def _select_items(items: list[Any], tr: _Translation) -> tuple[list[str], list[str], list[str]]:
    sqls: list[str] = []
    columns: list[str] = []
    types: list[str] = []
    for item in items:
        if isinstance(item, dict) and item.get("node") == "Field" and item.get("chain") == ["*"]:
            if len(tr.scope) != 1:
                raise _unsupported("SELECT * over a JOIN")
            alias, table = next(iter(tr.scope.items()))
            for name, (sql, typ) in table.columns.items():
                sqls.append(f'"{alias}".{sql}')
                columns.append(name)
                types.append(typ)
            continue
        sql, typ = _expr(item, tr)
        sqls.append(sql)
        types.append(typ)
        columns.append(_column_name(item))
    return sqls, columns, types


def _column_name(item: dict[str, Any]) -> str:
    """The answer's column name: the alias, a field's last name (HogQL names `properties.email` `email`),
    else the expression's text."""
    kind = item.get("node")
    if kind == "Alias":
        return str(item["alias"])
    if kind == "Field":
        return str(item["chain"][-1])
    if kind == "ArrayAccess":
        return str((item.get("property") or {}).get("value"))
    if kind == "Call":
        return f"{item.get('name')}()"
    if kind == "Constant":
        return json.dumps(item.get("value"))
    return str(kind)


_REFUSED_CLAUSES = {
    "ctes": "WITH",
    "distinct": "DISTINCT",
    "group_by": "GROUP BY",
    "having": "HAVING",
    "prewhere": "PREWHERE",
    "qualify": "QUALIFY",
    "window_exprs": "WINDOW",
    "array_join_list": "ARRAY JOIN",
    "limit_by": "LIMIT BY",
    "settings": "SETTINGS",
}


def _limit_value(node: Any, what: str) -> int | None:
    if node is None:
        return None
    if not isinstance(node, dict) or node.get("node") != "Constant" or not isinstance(node.get("value"), int):
        raise _unsupported(f"A {what} that is not a whole number")
    value = int(node["value"])
    if value < 0:
        raise Unsupported(f"{what} must not be negative")
    return value


@dataclass
class Compiled:
    """A translated query: SQL (reads `limit + 1` rows when `paginated`), parameters, the answer's columns
    and types."""

    sql: str
    params: dict[str, Any]
    columns: list[str]
    types: list[str]
    limit: int
    paginated: bool


def compile_hogql(
    text: str,
    project_id: int,
    *,
    default_rows: int,
    max_rows: int,
    tables: dict[str, _Table] | None = None,
) -> Compiled:
    """Parse `text` with PostHog's parser and translate it (`Unsupported` for a syntax error or anything
    outside the subset of the module docstring)."""
    parser = hog_syntax._parser()
    if parser is None:
        raise Unsupported("The sandbox needs hogql-parser to run HogQL: pip install 'analytics-nb[hog]'")
    try:
        ast = json.loads(parser.parse_select_json(text, is_internal=True))
    except Exception as exc:  # the parser's own exception classes (stand-ins)
        raise Unsupported(str(exc) or "Syntax error") from None
    if not isinstance(ast, dict) or ast.get("error"):
        raise Unsupported(f"Syntax error: {ast.get('message') if isinstance(ast, dict) else ast}")
    if ast.get("node") != "SelectQuery":
        raise _unsupported("UNION / a set of SELECTs")
    tr = _Translation(tables=dict(tables) if tables is not None else dict(_TABLES))
    tr.params["project"] = project_id
    _refuse_offset(ast)
    asked = _limit_value(ast.get("limit"), "LIMIT")
    limit = min(asked if asked is not None else default_rows, max_rows)
    paginated = asked is None  # HogQLQueryRunner: the paginator only for a query without LIMIT
    sql, columns, types = _select_sql(ast, tr, limit=limit + 1 if paginated else limit)
    return Compiled(sql, tr.params, columns, types, limit, paginated)


def _refuse_offset(node: Any) -> None:
    """`_OffsetDetectingVisitor`: an OFFSET anywhere (subqueries too) is refused."""
    if isinstance(node, dict):
        if node.get("node") == "SelectQuery" and node.get("offset") is not None:
            raise Unsupported(OFFSET_NOT_ALLOWED_MESSAGE)
        for value in node.values():
            _refuse_offset(value)
    elif isinstance(node, list):
        for value in node:
            _refuse_offset(value)


def _select_sql(
    ast: dict[str, Any], tr: _Translation, *, limit: int | None
) -> tuple[str, list[str], list[str]]:
    """One SELECT as SQL (`limit` rows read: the outer query's cap plus one; a subquery keeps its own
    LIMIT, if any), its column names and types."""
    for key, clause in _REFUSED_CLAUSES.items():
        if ast.get(key):
            raise _unsupported(clause)
    source = _from(ast.get("select_from"), tr)
    sqls, columns, types = _select_items(ast.get("select") or [], tr)
    if "COUNT(*)" in sqls and len(sqls) > 1:
        raise _unsupported("count() next to other columns (GROUP BY)")
    where = f" WHERE {_expr(ast['where'], tr)[0]}" if ast.get("where") else ""
    order = ""
    if ast.get("order_by"):
        parts = [
            f"{_expr(o['expr'], tr)[0]} {'DESC' if o.get('order') == 'DESC' else 'ASC'}"
            for o in ast["order_by"]
        ]
        order = " ORDER BY " + ", ".join(parts)
    if limit is None:
        limit = _limit_value(ast.get("limit"), "LIMIT")
    tail = ""
    if limit is not None:
        tail = f" LIMIT {limit} OFFSET {_limit_value(ast.get('offset'), 'OFFSET') or 0}"
    # each item named as the answer's column, so that a query over this one (a subquery) reads its
    # aliases (SQLite would otherwise read an unknown "name" as the text 'name')
    named = [f"{sql} AS {_quote(name)}" for sql, name in zip(sqls, columns, strict=True)]
    return f"SELECT {', '.join(named)} FROM {source}{where}{order}{tail}", columns, types


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _cell(value: Any, typ: str) -> Any:
    if typ == "Bool" and value is not None:
        return bool(value)
    return value


def run_hogql(
    store: Store,
    project_id: int,
    text: str,
    *,
    default_rows: int,
    max_rows: int,
    tables: dict[str, _Table] | None = None,
) -> dict[str, Any]:
    """Run one HogQL query and answer the service's `HogQLQueryResponse` body (`tables`: `tables_for`)."""
    persons.ensure_person_ids(store)
    compiled = compile_hogql(text, project_id, default_rows=default_rows, max_rows=max_rows, tables=tables)
    try:
        rows = store.query(compiled.sql, compiled.params)
    except sqlite3.Error as exc:  # a translation the engine refuses is still the caller's query
        raise Unsupported(f"The sandbox could not run this query ({exc})") from None
    has_more = len(rows) > compiled.limit if compiled.paginated else None
    results = [
        [_cell(v, t) for v, t in zip(tuple(r), compiled.types, strict=True)] for r in rows[: compiled.limit]
    ]
    return {
        "cache_key": None,
        "clickhouse": None,
        "columns": compiled.columns,
        "error": None,
        "explain": None,
        "hasMore": has_more,
        "hogql": text,
        "is_cached": False,
        "limit": compiled.limit if compiled.paginated else None,
        "metadata": None,
        "modifiers": {},
        "offset": 0 if compiled.paginated else None,
        "query": text,
        "query_status": None,
        "results": results,
        "timings": [],
        "types": compiled.types,
    }


def _secret_key_project(ctx: SandboxContext, key: str) -> int:
    """The project of a `phs_` key with `query:read` (null scopes: every scope), else 401."""
    row = ctx.store.query_one(
        "SELECT project_id, scopes FROM project_secret_api_keys WHERE secure_value=?", (hash_key(key),)
    )
    scopes = loads(row["scopes"]) if row is not None else []
    if row is None or (scopes is not None and not {"query:read", "*"} & set(scopes)):
        raise APIError(401, "authentication_error", "authentication_failed", "Secret API token is invalid.")
    return int(row["project_id"])


def _authorize(ctx: SandboxContext, request: Request) -> int:
    kind, _, token = request.headers.get("authorization", "").partition(" ")
    token = token.strip()
    if kind.lower() == "bearer" and token.startswith("phs_"):
        project = _secret_key_project(ctx, token)
        raw = str(request.path_params.get("project_id"))
        if raw not in ("@current", str(project)):
            raise APIError(
                403,
                "authentication_error",
                "permission_denied",
                f"API key does not have access to the requested project: ID {raw}.",
            )
        if ctx.limiter is not None:
            wait = ctx.limiter.check("secret:" + hash_key(token)[:16], "query")
            if wait > 0:
                raise throttled(wait)
        return project
    ctx.authenticate_personal(request, "query:read", throttle="query")
    return ctx.project_id_of(request)


def _query_text(body: Any) -> str:
    if not isinstance(body, dict) or not isinstance(body.get("query"), dict):
        raise validation_error("This field is required.", attr="query", code="required")
    query = body["query"]
    kind = query.get("kind")
    if kind != "HogQLQuery":
        raise validation_error(f"Unsupported query kind: {kind}", attr=None)
    text = query.get("query")
    if not isinstance(text, str) or not text.strip():
        raise validation_error("This field is required.", attr="query__query", code="required")
    return text


async def query_create(request: Request) -> Response:
    """`POST /api/projects/:id/query/` with `{"query": {"kind": "HogQLQuery", "query": "..."}}`; with
    `"refresh": "force_async"` (see the module docstring) a 202 and the query's status instead."""
    ctx = context_of(request)
    project_id = _authorize(ctx, request)
    if ctx.faults.active("query_timeout", request.method, request.url.path):
        raise APIError(504, "server_error", "error", TIMEOUT_DETAIL)
    body = parse_json_body(request, await read_body(request))
    text = _query_text(body)
    slow = ctx.faults.active("slow_query", request.method, request.url.path)
    if _is_async(body):
        job = _start_job(ctx, project_id, text, slow=slow)
        return SafeJSONResponse({"query_status": _status(job, progress=False, running=True)}, status_code=202)
    if slow:  # past the execution limit of a sync query
        raise APIError(504, "server_error", "error", TIMEOUT_DETAIL)
    try:
        answer = _answer(ctx, project_id, text)
    except Unsupported as exc:
        raise validation_error(str(exc)) from None
    headers = {}
    if ctx.faults.active("rate_limit_warning", request.method, request.url.path):
        headers["X-PostHog-Rate-Limit-Warning"] = "true"  # the warn tier's header (flags_rate_limiter.rs)
    return SafeJSONResponse(answer, headers=headers)


def _answer(ctx: SandboxContext, project_id: int, text: str) -> dict[str, Any]:
    return run_hogql(
        ctx.store,
        project_id,
        text,
        default_rows=min(ctx.query_default_rows, ctx.query_max_rows),
        max_rows=ctx.query_max_rows,
        tables=tables_for(ctx.switches),
    )


def _is_async(body: dict[str, Any]) -> bool:
    """`refresh` in `ASYNC_REFRESH`, or the legacy `"async": true` (`_process_query_request`)."""
    refresh = body.get("refresh")
    if refresh is not None and not isinstance(refresh, str | bool):
        raise validation_error("refresh must be a string such as 'blocking' or 'force_async'", attr="refresh")
    return refresh in ASYNC_REFRESH or body.get("async") is True


@dataclass
class QueryJob:
    """One async query: its answer (or error) is computed at once and shown after `polls_left` polls."""

    id: str
    team_id: int
    start_time: str
    answer: dict[str, Any] | None
    error_message: str | None
    polls_left: int
    created: float = field(default_factory=time.monotonic)
    end_time: str | None = None


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat().replace("+00:00", "Z")


def _start_job(ctx: SandboxContext, project_id: int, text: str, *, slow: bool) -> QueryJob:
    """`enqueue_process_query_task`: the status stored first, the query run (here, at once)."""
    now = time.monotonic()
    for key in [k for k, j in ctx.query_jobs.items() if now - j.created > STATUS_TTL_SECONDS]:
        del ctx.query_jobs[key]
    answer, error = None, None
    try:
        answer = _answer(ctx, project_id, text)
    except Unsupported as exc:  # an ExposedHogQLError: its message is the status's error_message
        error = str(exc)
    job = QueryJob(uuid.uuid4().hex, project_id, _now(), answer, error, SLOW_POLLS if slow else 0)
    ctx.query_jobs[job.id] = job
    return job


def _status(job: QueryJob, *, progress: bool, running: bool) -> dict[str, Any]:
    """The job as PostHog's `QueryStatus` (`posthog/schema.py`), its fields in that model's order."""
    done = not running
    rows = len(job.answer["results"]) if job.answer is not None else 0
    running_progress = {
        "bytes_read": 0,
        "rows_read": rows // (job.polls_left + 2),
        "estimated_rows_total": rows,
        "time_elapsed": 0,
        "active_cpu_time": 0,
    }
    return {
        "complete": done,
        "dashboard_id": None,
        "end_time": job.end_time if done else None,
        "error": done and job.error_message is not None,
        "error_message": job.error_message if done else None,
        "expiration_time": None,
        "id": job.id,
        "insight_id": None,
        "labels": None,
        "pickup_time": job.start_time if done else None,
        "query_async": True,
        "query_progress": running_progress if progress and not done else None,
        "results": job.answer if done else None,
        "start_time": job.start_time,
        "task_id": job.id,
        "team_id": job.team_id,
    }


async def query_retrieve(request: Request) -> Response:
    """`GET /api/projects/:id/query/:query_id/`: the async query's status (202 running, 200 complete, 400
    failed with a message, 404 unknown or expired), as `QueryViewSet.retrieve` answers it."""
    ctx = context_of(request)
    project_id = _authorize(ctx, request)
    query_id = str(request.path_params.get("query_id"))
    job = ctx.query_jobs.get(query_id)
    if job is None or job.team_id != project_id or time.monotonic() - job.created > STATUS_TTL_SECONDS:
        raise APIError(
            404, "invalid_request", "not_found", f"Query {query_id} not found for team {project_id}"
        )
    show = (
        request.query_params.get("show_progress") == "true"
        or request.query_params.get("showProgress") == "true"
    )
    if job.polls_left > 0:
        job.polls_left -= 1
        status = _status(job, progress=show, running=True)
        return SafeJSONResponse({"query_status": status}, status_code=202)
    if job.end_time is None:
        job.end_time = _now()
    status = _status(job, progress=show, running=False)
    code = 400 if status["error"] else 200
    return SafeJSONResponse({"query_status": status}, status_code=code)


ENDPOINTS = [
    Endpoint(
        "POST",
        "/api/projects/{project_id}/query/",
        query_create,
        "query_create",
        "Run a HogQL query (the sandbox's subset) over persons, person_distinct_ids and events",
        body_schema={
            "type": "object",
            "required": ["query"],
            "properties": {
                "query": {
                    "type": "object",
                    "required": ["kind", "query"],
                    "properties": {
                        "kind": {"type": "string", "enum": ["HogQLQuery"]},
                        "query": {"type": "string", "minLength": 1, "pattern": "\\S"},
                    },
                },
                "refresh": {"type": "string"},
                "async": {"type": "boolean"},
            },
        },
        # Any text is a schema-valid query; one that is not HogQL (or not the sandbox's subset) is refused
        refusals=(
            Refusal(
                400,
                "invalid_input",
                None,
                "posthog/api/query.py (an ExposedHogQLError raised as ValidationError); "
                "posthog/hogql/user_query_validator.py (OFFSET)",
            ),
        ),
        errors=(400, 401, 403, 404, 429, 504),
        aliases=("/api/environments/{project_id}/query/",),
        extra_responses={"202": {"description": "An async query started (refresh: force_async): its status"}},
    ),
    Endpoint(
        "GET",
        "/api/projects/{project_id}/query/{query_id}/",
        query_retrieve,
        "query_retrieve",
        "The status of an async query (202 running, 200 complete with its answer, 400 failed)",
        query=(Query("show_progress", enum=("true", "false")),),
        errors=(400, 401, 403, 404, 429),
        aliases=("/api/environments/{project_id}/query/{query_id}/",),
        extra_responses={"202": {"description": "The query is still running"}},
    ),
]


def seed(store: Store, ctx: SandboxContext) -> None:
    """Nothing to seed: queries read the persons and events the other resources store."""
