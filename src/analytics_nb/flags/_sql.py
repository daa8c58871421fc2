"""Flags as SQL: one SELECT that gives, per person row, each flag's value, reason and condition index.

Pure: definitions in, SQL text out (no connection, no I/O). The query is built as a SQLGlot expression tree
and printed for the dialect asked for (`sqlglot` is imported only here, when a query is compiled).

Exactness first. Every answer the query gives is the answer of `evaluate_frame(..., mode=...)` on the same
rows, or it says it has none:

* a flag the compiler cannot express exactly in SQL (regex, dates, semver, cohorts, group flags, device-id
  bucketing, early access, a column type without exact text) is answered `NULL` with reason
  ``needs_local_engine`` on every row, and `SqlQuery.local_flags` names it with the reason;
* a row whose value the SQL cannot decide exactly (a non-ASCII text compared case-insensitively with the
  Kelvin sign or a non-ASCII target, whose lower-casing differs between Python and SQL engines) is answered
  ``NULL`` / ``needs_local_engine`` for that flag only; `simulation.simulate_sql` re-evaluates those rows
  with the Python engine.

Bucketing: PostHog's SHA-1 of ``"{flag_key}.{distinct_id}{salt}"``; the first 15 hex digits are a 60-bit
integer ``h``, and the Python engine (like the Rust service, rust/feature-flags/src/flags/
flag_matching_utils.rs `calculate_hash`) compares ``float(h) / float(0xFFFFFFFFFFFFFFF)`` with the rollout
share. That fraction is monotone in ``h``, so the compiler turns every rollout and variant boundary into the
exact integer bound on ``h`` (found by bisection with the same float arithmetic) and the SQL compares
integers: no float literal or float division in any dialect can round differently at a boundary.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import struct
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from analytics_nb.flags._definitions import CompiledFlag, ConditionSpec, FilterSpec
from analytics_nb.flags._evaluate import INITIAL_PROPERTIES, CompiledFlags, _now, check_mode, compile_flags
from analytics_nb.flags._hashing import LONG_SCALE
from analytics_nb.flags._operators import EQUALITY, INCONCLUSIVE, MULTI, NUMERIC, PRESENCE, TEXT
from analytics_nb.flags._values import ascii_lower, is_boolish, service_text, to_text, truthy
from analytics_nb.tables._extras import require

if TYPE_CHECKING:
    from sqlglot import exp

#: Dialects the query is printed for. Run here: duckdb (embedded default), clickhouse (chDB), spark
#: (PySpark). Printed and parse-checked only: bigquery, snowflake, postgres (pgcrypto's `digest`).
DIALECTS = ("duckdb", "clickhouse", "spark", "bigquery", "snowflake", "postgres")
#: the reason of a flag (or one row of it) that only the local Python engine answers exactly
NEEDS_LOCAL = "needs_local_engine"
#: column kinds the compiler reads exactly; other column types make their flags need the local engine
KINDS = ("string", "integer", "float", "boolean")

#: ClickHouse's default `max_query_size` in bytes (the parser refuses a longer query text)
CLICKHOUSE_MAX_QUERY_SIZE = 262_144

_FALSE, _TRUE, _INCONCLUSIVE, _LOCAL = 0, 1, 2, 9
_MAX_H = 2**60 - 1
_INITIAL_SOURCE = {initial: name for name, initial in INITIAL_PROPERTIES.items()}
_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_KELVIN = "\u212a"  # the one non-ASCII character whose Python lower case is ASCII ("k")
_ID_ERROR = "distinct_id is missing or not a string/number"


class NeedsLocal(Exception):
    """Raised while compiling a flag the SQL cannot answer exactly; the message is the reason."""


@dataclass(frozen=True)
class Outcome:
    """One possible answer of a flag: value kind ("false", "true", "variant", "unknown", "local"), the
    variant key, the reason code and the condition index."""

    kind: str
    variant: str | None
    reason: str | None
    index: int | None

    def value(self) -> bool | str | None:
        """The flag value this outcome stands for (None when unknown or left to the local engine)."""
        if self.kind == "variant":
            return self.variant
        return {"false": False, "true": True}.get(self.kind)


@dataclass
class SqlFlag:
    """What the query answers for one flag: its outcomes (by the integer the query computes), whether it
    is multivariate, and why the local engine must answer it instead (None when the SQL does)."""

    key: str
    multivariate: bool
    outcomes: list[Outcome] = field(default_factory=list)
    needs_local: str | None = None
    payloads: Mapping[str, str] = field(default_factory=dict)

    def outcome_id(self, outcome: Outcome) -> int:
        try:
            return self.outcomes.index(outcome)
        except ValueError:
            self.outcomes.append(outcome)
            return len(self.outcomes) - 1


@dataclass
class SqlQuery:
    """A compiled query: `sql` (formatted text), the `dialect` and `mode`, one `SqlFlag` per flag in the
    definitions' order, and `local_flags` ({flag key: why only the local engine answers it})."""

    sql: str
    dialect: str
    mode: str
    flags: list[SqlFlag]
    table: str
    carry: list[str] = field(default_factory=list)
    #: whether the SELECT writes `<flag>:reason` and `<flag>:condition_index`
    reasons: bool = True
    #: without reasons: the boolean column saying a row needs the local engine (None when no row can)
    local_column: str | None = None
    #: with `compile_sql(bucket_function=)`: {function name: (prefix, suffix)}, the bucket fraction of
    #: ``prefix + distinct_id + suffix`` each function must return (the caller registers them)
    buckets: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: with `compile_sql(bucket_function=)`: {function name: ((prefix, suffix, guard), ...)} for the
    #: rollout and variant buckets of one dependency level, computed in one call per row vector: the
    #: function takes the id and one boolean guard argument per distinct guard, and returns a STRUCT
    #: whose field ``b<i>`` is the bucket fraction of the i-th (prefix, suffix) where its guard (an index
    #: into the guard arguments) is true, NULL elsewhere (the caller registers them)
    bucket_sets: dict[str, tuple[tuple[str, str, int], ...]] = field(default_factory=dict)
    #: the flags as compiled for this query (`flags.compile_flags`): the local engine answers the rows and
    #: flags SQL leaves to it from these, so the definitions are compiled once per run, not per batch
    compiled: CompiledFlags | None = field(default=None, repr=False, compare=False)

    @property
    def local_flags(self) -> dict[str, str]:
        """{flag key: reason} for the flags the query leaves to the local engine."""
        return {f.key: f.needs_local for f in self.flags if f.needs_local is not None}


# ------------------------------------------------------------------------------------------ schema


def column_kind(type_name: str) -> str | None:
    """The kind of a column from its SQL / Arrow type name ("VARCHAR", "BIGINT", "double", "bool"), None
    for a type the compiler does not read exactly (dates, decimals, lists, structs)."""
    t = type_name.strip().lower()
    if t.startswith("nullable(") and t.endswith(")"):
        t = t[9:-1]
    if t in ("varchar", "string", "text", "large_string", "utf8", "large_utf8") or t.startswith("varchar"):
        return "string"
    if t in (
        "bigint", "integer", "int", "smallint", "tinyint", "int8", "int16", "int32", "int64", "hugeint",
        "ubigint", "uinteger", "usmallint", "utinyint", "uint8", "uint16", "uint32", "uint64", "long",
        "short", "byte",
    ):  # fmt: skip
        return "integer"
    if t in ("double", "float", "float64", "float32", "real", "float8", "float4", "double precision"):
        return "float"
    if t in ("boolean", "bool"):
        return "boolean"
    return None


def _schema(schema: Mapping[str, str] | None) -> dict[str, str | None] | None:
    if schema is None:
        return None
    out: dict[str, str | None] = {}
    for name, kind in schema.items():
        out[str(name)] = kind if kind in KINDS else column_kind(str(kind))
    return out


# ------------------------------------------------------------------------------------------ exact bounds


def _fraction(h: int) -> float:
    """The Python engine's bucket fraction of a 60-bit hash integer (`_hashing.raw_hash`)."""
    return h / LONG_SCALE


def _last_true(test: Callable[[int], bool], lo: int, hi: int) -> int:
    """The largest n in [lo, hi] with test(n), for a test true up to some point then false; lo - 1 if
    none is."""
    if not test(lo):
        return lo - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if test(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def rollout_bound(share: float) -> int:
    """The largest 60-bit hash integer whose fraction is <= share (-1 when none)."""
    return _last_true(lambda h: _fraction(h) <= share, 0, _MAX_H)


def _variant_range(low: float, high: float) -> tuple[int, int]:
    """The hash integers whose fraction f has low <= f < high, as an inclusive range (empty: a > b)."""
    first = _last_true(lambda h: _fraction(h) < low, 0, _MAX_H) + 1
    last = _last_true(lambda h: _fraction(h) < high, 0, _MAX_H)
    return first, last


def _ordered(x: float) -> int:
    """A float as an integer in the same order (for bisecting over doubles)."""
    bits = struct.unpack("<q", struct.pack("<d", x))[0]
    return bits if bits >= 0 else -(bits & 0x7FFFFFFFFFFFFFFF) - 1


def _from_ordered(n: int) -> float:
    bits = n if n >= 0 else (-(n + 1)) | -0x8000000000000000
    return float(struct.unpack("<d", struct.pack("<q", bits))[0])


# ------------------------------------------------------------------------------------------ compiler


class _Compiler:
    def __init__(
        self,
        compiled: CompiledFlags,
        dialect: str,
        server: bool,
        schema: dict[str, str | None] | None,
        now: dt.datetime,
        table: str,
    ) -> None:
        from sqlglot import exp

        self.exp = exp
        self.c = compiled
        self.dialect = dialect
        self.server = server
        self.schema = schema
        self.now = now
        self.table = table
        self.flags: dict[str, SqlFlag] = {}
        #: (flag key) -> the SQL column name of its outcome integer
        self.outcome_col: dict[str, str] = {}
        self.version = compiled.property_matching_version
        #: a property the table has no column for is unknown (the local engine answers: NA where the
        #: answer depends on it) rather than "not set"
        self.unknown_absent = False
        #: None: the engine's own SHA-1 (`h60`); else the stem of DuckDB functions ``<stem>_<n>(id)`` giving
        #: the bucket fraction of one (prefix, suffix) each (`SqlQuery.buckets`; `simulation._sql`
        #: registers the project's column hasher under those names)
        self.bucket_function: str | None = None
        #: (prefix, suffix) -> the name of its bucket function (`bucket_function` + a number)
        self.buckets: dict[tuple[str, str], str] = {}
        #: the functions of `SqlQuery.bucket_sets`, one per dependency level with buckets
        self.bucket_sets: dict[str, tuple[tuple[str, str, int], ...]] = {}
        #: the names of `buckets` computed in a set, not registered on their own
        self.in_sets: set[str] = set()

    # -------------------------------------------------------------- small builders

    def lit(self, value: Any) -> exp.Expression:
        exp = self.exp
        if value is None:
            return exp.Null()
        if isinstance(value, bool):
            return exp.Boolean(this=value)
        if isinstance(value, int):
            # built directly: sqlglot's Literal.number parses its own text back (to_py) to find a sign,
            # 30 us a literal, a third of compiling 100 flags
            literal = exp.Literal(this=str(abs(value)), is_string=False)
            return literal if value >= 0 else exp.Neg(this=literal)
        return exp.Literal.string(str(value))

    def col(self, name: str) -> exp.Expression:
        return self.exp.column(name, quoted=True)

    def fn(self, name: str, *args: exp.Expression) -> exp.Expression:
        if self.dialect == "clickhouse" and name in ("TRANSLATE", "CONCAT"):
            name = name.lower()  # ClickHouse function names are case-sensitive
        return self.exp.Anonymous(this=name, expressions=list(args))

    def case(self, whens: Sequence[tuple[Any, Any]], default: Any) -> Any:
        exp = self.exp
        if not whens:
            return default
        return exp.Case(ifs=[exp.If(this=c, true=t) for c, t in whens], default=default)

    def text(self, e: exp.Expression) -> exp.Expression:
        return self.exp.cast(e, "text")

    def ascii_lower(self, e: exp.Expression) -> exp.Expression:
        """Lower-case A-Z only (the service's icontains / starts_with / ends_with). ClickHouse's `lower` is
        ASCII-only; elsewhere `LOWER` of an all-ASCII text is the same, and a text with other characters
        goes through TRANSLATE of A-Z (slow in DuckDB, so only for those rows)."""
        if self.dialect == "clickhouse":
            return self.fn("lower", e)
        translated = self.fn("TRANSLATE", e.copy(), self.lit(_UPPER), self.lit(_UPPER.lower()))
        return self.case([(self.is_ascii(e.copy()), self.exp.Lower(this=e.copy()))], translated)

    def is_ascii(self, e: exp.Expression) -> exp.Expression:
        """Whether a text is all ASCII: its length in characters equals its length in bytes."""
        exp = self.exp
        d = self.dialect
        if d == "duckdb":
            chars, octets = self.fn("LENGTH", e), self.fn("STRLEN", e)
        elif d == "clickhouse":
            chars, octets = self.fn("lengthUTF8", e), self.fn("length", e)
        elif d == "bigquery":
            chars, octets = self.fn("LENGTH", e), self.fn("BYTE_LENGTH", e)
        elif d == "postgres":
            chars, octets = self.fn("CHAR_LENGTH", e), self.fn("OCTET_LENGTH", e)
        else:  # spark, snowflake
            chars, octets = self.fn("LENGTH", e), self.fn("OCTET_LENGTH", e)
        return exp.EQ(this=chars, expression=octets)

    def contains(self, hay: exp.Expression, needle: str) -> exp.Expression:
        exp = self.exp
        if needle == "":
            return exp.true()
        return exp.GT(
            this=exp.StrPosition(this=hay, substr=self.lit(needle)), expression=exp.Literal.number(0)
        )

    def starts(self, hay: exp.Expression, needle: str, end: bool) -> exp.Expression:
        exp = self.exp
        if needle == "":
            return exp.true()
        d = self.dialect
        names = {
            "duckdb": ("STARTS_WITH", "ENDS_WITH"),
            "clickhouse": ("startsWith", "endsWith"),
            "spark": ("STARTSWITH", "ENDSWITH"),
            "bigquery": ("STARTS_WITH", "ENDS_WITH"),
            "snowflake": ("STARTSWITH", "ENDSWITH"),
        }
        if d in names:
            return self.fn(names[d][end], hay, self.lit(needle))
        # postgres: no ends_with; LEFT / RIGHT count characters on both sides
        side = "RIGHT" if end else "LEFT"
        return exp.EQ(this=self.fn(side, hay, exp.Literal.number(len(needle))), expression=self.lit(needle))

    def h60(self, text: exp.Expression) -> exp.Expression:
        """The first 15 hex digits of SHA-1(text) as an integer, with the engine's own SHA-1 and hex
        parsing."""
        exp = self.exp
        d = self.dialect
        one, fifteen = exp.Literal.number(1), exp.Literal.number(15)
        if d == "duckdb":
            hexed = exp.DPipe(
                this=self.lit("0x"), expression=self.fn("SUBSTR", self.fn("SHA1", text), one, fifteen)
            )
            return exp.cast(exp.Paren(this=hexed), "UBIGINT", dialect="duckdb")
        if d == "clickhouse":
            first8 = self.fn("substring", self.fn("SHA1", text), one, exp.Literal.number(8))
            big_endian = self.fn("reinterpretAsUInt64", self.fn("reverse", first8))
            return self.fn("bitShiftRight", big_endian, exp.Literal.number(4))
        if d == "spark":
            conv = self.fn(
                "CONV",
                self.fn("SUBSTRING", self.fn("SHA1", text), one, fifteen),
                exp.Literal.number(16),
                exp.Literal.number(10),
            )
            return exp.cast(conv, "BIGINT")
        if d == "bigquery":
            hexed = self.fn(
                "CONCAT",
                self.lit("0x"),
                self.fn("SUBSTR", self.fn("TO_HEX", self.fn("SHA1", text)), one, fifteen),
            )
            return exp.cast(hexed, "BIGINT")
        if d == "snowflake":
            return self.fn(
                "TO_NUMBER", self.fn("SUBSTR", self.fn("SHA1", text), one, fifteen), self.lit("X" * 15)
            )
        # postgres (pgcrypto): 'x' || hex as BIT(60), then BIGINT
        hexed = exp.DPipe(
            this=self.lit("x"),
            expression=self.fn(
                "SUBSTR",
                self.fn("ENCODE", self.fn("DIGEST", text, self.lit("sha1")), self.lit("hex")),
                one,
                fifteen,
            ),
        )
        return exp.cast(exp.cast(exp.Paren(this=hexed), "BIT(60)", dialect="postgres"), "BIGINT")

    def bucket(self, prefix: str, suffix: str = "") -> exp.Expression:
        """The bucket of ``prefix + distinct_id + suffix``: the 60-bit integer of `h60`, or (with a
        `bucket_function`) its fraction `h / LONG_SCALE` computed by that function; `bound` prints a bound
        for either."""
        if self.bucket_function is not None:
            name = self.buckets.setdefault((prefix, suffix), f"{self.bucket_function}_{len(self.buckets)}")
            return self.fn(name, self.col("_anb_id"))
        parts = [self.lit(prefix), self.col("_anb_id")] + ([self.lit(suffix)] if suffix else [])
        return self.h60(self.concat(*parts))

    def bound(self, h: int) -> exp.Expression:
        """An integer bound on the 60-bit hash as the bucket column reads it: the integer itself, or with a
        `bucket_function` its fraction. The fraction is monotone in the integer, and every bound here is
        the last (or first) integer on one side of a share, so ``f(h) <= f(B)`` exactly when ``h <= B``
        (and ``f(h) >= f(A)`` exactly when ``h >= A``): the same rows either way."""
        if self.bucket_function is None:
            return self.exp.Literal.number(h)
        return self.exp.cast(self.lit(repr(_fraction(h))), "double")

    def concat(self, *parts: exp.Expression) -> exp.Expression:
        exp = self.exp
        if self.dialect in ("clickhouse", "spark", "bigquery"):
            return self.fn("CONCAT", *parts)
        out = parts[0]
        for p in parts[1:]:
            out = exp.DPipe(this=out, expression=p)
        return out

    # -------------------------------------------------------------- properties

    def column_of(self, key: str) -> tuple[exp.Expression, str] | None:
        """The SQL expression and kind of a person property, None when the table lacks it."""
        if key == "distinct_id":
            return self.col("_anb_id"), "string"
        if key in ("person_properties", "group_properties", "ip", "error") or key.startswith("group:"):
            return None
        if "\x00" in key:  # DuckDB cuts a column name at a NUL; no engine here names it exactly
            raise NeedsLocal(f"reads {key!r}, a property name with a NUL character, which SQL cannot name")
        kind = self._kind(key)
        if kind is False and self.unknown_absent:
            raise NeedsLocal(f"reads {key!r}, which the table has no column for (missing_columns='unknown')")
        if kind is False:
            return None
        if self.server and key in _INITIAL_SOURCE:
            base_kind = self._kind(_INITIAL_SOURCE[key])
            if base_kind is not False:
                if kind is False:
                    return self._typed(_INITIAL_SOURCE[key], base_kind)
                if base_kind != kind:
                    raise NeedsLocal(f"columns {key!r} and {_INITIAL_SOURCE[key]!r} have different types")
                expr, k = self._typed(key, kind)
                base, _ = self._typed(_INITIAL_SOURCE[key], base_kind)
                return self.exp.Coalesce(this=expr, expressions=[base]), k
        return self._typed(key, kind)

    def _kind(self, key: str) -> Any:
        if self.schema is None:
            return "string"
        if key not in self.schema:
            return False
        return self.schema[key]

    def _typed(self, key: str, kind: Any) -> tuple[exp.Expression, str]:
        if kind is None:
            raise NeedsLocal(f"column {key!r} has a type the SQL does not compare exactly")
        return self.col(key), str(kind)

    def missing(self, expr: exp.Expression, kind: str) -> exp.Expression:
        exp = self.exp
        null = exp.Is(this=expr, expression=exp.Null())
        if kind == "float":  # a NaN cell is a missing property in a frame
            return exp.or_(null, exp.IsNan(this=expr))
        return null

    # -------------------------------------------------------------- filters

    def filter_code(self, spec: FilterSpec) -> exp.Expression:
        """The code (0 false, 1 true, 2 inconclusive, 9 local) of one filter as a SQL expression."""
        if spec.kind == "cohort":
            raise NeedsLocal(f"{spec.label}: cohorts are evaluated by the local engine")
        if spec.kind == "flag":
            return self.dependency_code(spec)
        m = spec.matcher
        assert m is not None
        if self.server and spec.route != "person":
            raise NeedsLocal(f"{spec.label}: group properties are evaluated by the local engine")
        if not self.server and not m.sdk_supported:
            return self.lit(_INCONCLUSIVE)
        missing_code = m.missing(self.server)
        found = self.column_of(spec.key)
        if found is None:
            return self.lit(missing_code)
        expr, kind = found
        present = self.present_code(spec, expr, kind)
        return self.case([(self.missing(expr, kind), self.lit(missing_code))], present)

    def present_code(self, spec: FilterSpec, expr: exp.Expression, kind: str) -> exp.Expression:
        m = spec.matcher
        assert m is not None
        server, now = self.server, self.now

        def code(v: Any) -> int:
            c = m.match(v, server, now)
            return _FALSE if (server and c == INCONCLUSIVE) else c

        op = m.operator
        if op in PRESENCE:
            return self.lit(code("x"))
        if kind == "boolean":
            return self.case([(expr, self.lit(code(True)))], self.lit(code(False)))
        if op in NUMERIC and kind in ("integer", "float"):
            return self.numeric_code(expr, kind, code)
        if op in EQUALITY and kind in ("string", "integer"):
            return self.exact_code(spec, expr if kind == "string" else self.text(expr), kind == "integer")
        if (op in TEXT or (op in MULTI and server)) and kind in ("string", "integer"):
            return self.text_code(spec, expr if kind == "string" else self.text(expr))
        raise NeedsLocal(
            f"{spec.label}: operator {op!r} on a {kind} column is evaluated by the local engine "
            "(its rules are not expressed exactly in SQL)"
        )

    def numeric_code(self, expr: exp.Expression, kind: str, code: Callable[[Any], int]) -> exp.Expression:
        """gt / gte / lt / lte on numbers: the matcher's answer is a step in the value; its exact step is
        found by bisection with the matcher itself, and the SQL compares with that bound."""
        exp = self.exp
        if kind == "integer":
            lo, hi = -(2**63), 2**64 - 1
            at_lo, at_hi = code(lo), code(hi)
            if at_lo == at_hi:
                return self.lit(at_lo)
            first_hi = _last_true(lambda v: code(v) == at_lo, lo, hi) + 1
            bound: Any = exp.Literal.number(first_hi)
        else:
            return self.float_code(expr, code)
        return self.case([(exp.GTE(this=expr, expression=bound), self.lit(at_hi))], self.lit(at_lo))

    def float_code(self, expr: exp.Expression, code: Callable[[Any], int]) -> exp.Expression:
        """gt / gte / lt / lte on a float column: one step over the finite doubles (found by bisection with
        the matcher), and the infinities answered on their own. The SDK reads only finite numbers
        (posthog 7.91.1 posthog/feature_flags.py `_parse_numeric_value`; here `_sdk_rules.parse_number`),
        so in sdk mode +inf and -inf answer False on both sides of the step; bisecting over [-inf, inf]
        saw False at both ends and answered False for every row."""
        exp = self.exp
        top = sys.float_info.max
        at_lo, at_hi = code(-top), code(top)
        if at_lo == at_hi:
            body: Any = self.lit(at_lo)
        else:
            lo_f, hi_f = _ordered(-top), _ordered(top)
            step = _from_ordered(_last_true(lambda n: code(_from_ordered(n)) == at_lo, lo_f, hi_f) + 1)
            # -0.0 and 0.0 compare equal; the first value past the step is +0.0's side
            bound = exp.cast(self.lit("0.0" if step == 0.0 else repr(step)), "double")
            body = self.case([(exp.GTE(this=expr, expression=bound), self.lit(at_hi))], self.lit(at_lo))
        largest = exp.cast(self.lit(repr(top)), "double")
        whens = []
        if code(math.inf) != at_hi:
            whens.append((exp.GT(this=expr.copy(), expression=largest), self.lit(code(math.inf))))
        if code(-math.inf) != at_lo:
            whens.append(
                (exp.LT(this=expr.copy(), expression=exp.Neg(this=largest.copy())), self.lit(code(-math.inf)))
            )
        return self.case(whens, body)

    def _raw_value(self, spec: FilterSpec) -> Any:
        return json.loads(spec.signature).get("value")

    def exact_code(self, spec: FilterSpec, text: exp.Expression, ascii_only: bool) -> exp.Expression:
        """exact / is_not on text: the engine's targets, computed here with its own functions; the row's
        lower case is exact in SQL for ASCII text (TRANSLATE of A-Z), decided for non-ASCII text without
        the Kelvin sign when every target is ASCII, and left to the local engine otherwise."""
        exp = self.exp
        m = spec.matcher
        assert m is not None
        value = self._raw_value(spec)
        negate = m.operator == "is_not"
        if isinstance(value, list) and any(isinstance(v, (list, dict)) for v in value):
            raise NeedsLocal(f"{spec.label}: nested filter values are evaluated by the local engine")
        items = value if isinstance(value, list) else [value]
        if self.server and value is None:
            return self.lit(_FALSE)
        if not self.server and any(to_text(i) is None for i in items):
            return self.lit(_INCONCLUSIVE)
        targets_of = self._server_exact_targets if self.server else self._sdk_exact_targets
        truthiness, target, targets = targets_of(value, items)
        yes, no = self.lit(_FALSE if negate else _TRUE), self.lit(_TRUE if negate else _FALSE)
        if truthiness:
            # truthy(text): its lower case is "true"; no non-ASCII character lowers to t, r, u or e
            is_true = exp.EQ(this=self.ascii_lower(text), expression=self.lit("true"))
            hit = is_true if target else exp.not_(is_true)
            return self.case([(hit, yes)], no)
        assert targets is not None
        return self._exact_listed(text, targets, yes, no, ascii_only)

    def _server_exact_targets(self, value: Any, items: list[Any]) -> tuple[bool, bool, set[str] | None]:
        """The service's reading of an exact value: (compare truthiness?, the truthiness wanted, the
        lower-case targets otherwise)."""
        truthiness = is_boolish(value) and (self.version != 2 or value == [])
        targets = None if truthiness else {service_text(i).lower() for i in items}
        return truthiness, truthy(value), targets

    def _sdk_exact_targets(self, value: Any, items: list[Any]) -> tuple[bool, bool, set[str] | None]:
        """The SDK's reading of an exact value, as `_server_exact_targets`; an empty list tests the
        value's own truthiness (`_match_exact_property`)."""
        if value == []:
            return True, True, None
        truthiness = self.version != 2 and is_boolish(value)
        targets = None if truthiness else {str(to_text(i)).lower() for i in items}
        return truthiness, truthy(value), targets

    def _exact_listed(
        self,
        text: exp.Expression,
        targets: set[str],
        yes: exp.Expression,
        no: exp.Expression,
        ascii_only: bool,
    ) -> exp.Expression:
        """The row's lower case among the targets: exact for ASCII text; for other text, exact unless it holds
        the Kelvin sign when every target is ASCII, and left to the local engine otherwise."""
        exp = self.exp
        listed = exp.In(this=self.ascii_lower(text), expressions=[self.lit(t) for t in sorted(targets)])
        if ascii_only:
            return self.case([(listed, yes)], no)
        whens = [(self.is_ascii(text), self.case([(listed, yes)], no))]
        if all(t.isascii() for t in targets):
            kelvin = exp.GT(
                this=exp.StrPosition(this=text, substr=self.lit(_KELVIN)), expression=exp.Literal.number(0)
            )
            whens.append((kelvin, self.lit(_LOCAL)))
            return self.case(whens, no)
        return self.case(whens, self.lit(_LOCAL))

    def text_code(self, spec: FilterSpec, text: exp.Expression) -> exp.Expression:
        """icontains / starts_with / ends_with (and not_, and icontains_multi in server mode): ASCII-only
        lower case on both sides, as the service and the SDK do; exact in SQL for any text."""
        exp = self.exp
        m = spec.matcher
        assert m is not None
        op = m.operator
        value = self._raw_value(spec)
        negate = op.startswith("not_")
        base = op.removeprefix("not_")
        if base == "icontains_multi":
            if value is None:
                return self.lit(_FALSE)
            needles = [ascii_lower(service_text(v)) for v in (value if isinstance(value, list) else [value])]
        elif self.server:
            if value is None:
                return self.lit(_FALSE)
            needles = [ascii_lower(service_text(value))]
        else:
            k_text = to_text(value)
            if k_text is None:
                return self.lit(_INCONCLUSIVE)
            needles = [ascii_lower(k_text)]
        lowered = self.ascii_lower(text)
        tests = []
        for needle in needles:
            if base in ("icontains", "icontains_multi"):
                tests.append(self.contains(lowered, needle))
            else:
                tests.append(self.starts(lowered, needle, base == "ends_with"))
        # an empty icontains_multi list matches nothing (not_icontains_multi: every present value), as in
        # the engine; `tests[0]` of no test raised IndexError and failed the whole query
        hit = exp.or_(*tests) if len(tests) > 1 else tests[0] if tests else exp.false()
        yes, no = self.lit(_FALSE if negate else _TRUE), self.lit(_TRUE if negate else _FALSE)
        return self.case([(hit, yes)], no)

    def dependency_code(self, spec: FilterSpec) -> exp.Expression:
        """flag_evaluates_to: the dependency's outcome integer read back through its outcome table."""
        target = self.c.alias.get(spec.key, spec.key)
        dep = self.flags.get(target)
        if target not in self.c.by_key:
            return self.lit(_INCONCLUSIVE)
        if dep is None or dep.needs_local is not None:
            raise NeedsLocal(f"{spec.label}: depends on flag {target!r}, which the local engine evaluates")
        from analytics_nb.flags._evaluate import dependency_code

        by_code: dict[int, list[int]] = {}
        for i, o in enumerate(dep.outcomes):
            if o.kind == "local":
                c = _LOCAL
            elif o.kind == "unknown":
                c = _INCONCLUSIVE
            else:
                c = dependency_code(spec.expected, o.value())
            by_code.setdefault(c, []).append(i)
        column = self.col(self.outcome_col[target])
        whens = [
            (self.exp.In(this=column, expressions=[self.lit(i) for i in ids]), self.lit(c))
            for c, ids in sorted(by_code.items())
        ]
        # an error row (NULL outcome) is unknown: inconclusive for the dependent flag
        return self.case(whens, self.lit(_INCONCLUSIVE))

    # -------------------------------------------------------------- one flag

    def screen(self, flag: CompiledFlag) -> None:
        """Raise NeedsLocal for the parts of a definition the SQL does not express."""
        if flag.aggregation is not None or any(c.has_own_aggregation for c in flag.conditions):
            raise NeedsLocal("group flags (aggregation by a group type) are evaluated by the local engine")
        if flag.device_bucketing:
            raise NeedsLocal("device-id bucketing is evaluated by the local engine")
        if flag.feature_enrollment:
            raise NeedsLocal("early access (feature enrollment) is evaluated by the local engine")
        if self.server and flag.super_condition is not None and flag.super_condition.filters:
            raise NeedsLocal("early access (super conditions) is evaluated by the local engine")

    def const_outcome(self, flag: CompiledFlag) -> Outcome | None:
        """The one outcome of every (valid) row, when the flag's answer does not depend on the row."""
        if not flag.active:
            return Outcome("false", None, "flag_disabled", None)
        if flag.error is not None and self.server:
            return Outcome("false", None, "error", None)
        if flag.needs_server is not None:
            return Outcome("unknown", None, "needs_server", None)
        if not self.server and flag.continuity:
            return Outcome("unknown", None, "inconclusive", None)
        self.screen(flag)
        if not self.server and flag.error is not None and not flag.sdk_evaluates:
            return Outcome("unknown", None, "error", None)
        if flag.holdout is not None and flag.holdout[1] >= 100.0:
            return Outcome("variant", flag.holdout[0], "holdout_condition_value", None)
        return None


@dataclass
class _FlagParts:
    """The columns one flag adds at each layer: filter codes and hashes, condition codes, the outcome."""

    inputs: list[tuple[str, Any]] = field(default_factory=list)
    conditions: list[tuple[str, Any]] = field(default_factory=list)
    #: the rollout and variant buckets, computed after the conditions (`_FlagCompiler.guard_hashes`)
    hashes: list[tuple[str, Any]] = field(default_factory=list)
    #: the condition under which the hashes are read (None: every row), set by `guard_hashes`
    guard: Any = None
    outcome: Any = None


class _FlagCompiler:
    """Builds the outcome CASE of one flag (the frame engine's control flow, row by row)."""

    def __init__(self, owner: _Compiler, flag: CompiledFlag, number: int, sql_flag: SqlFlag) -> None:
        self.o = owner
        self.flag = flag
        self.n = number
        self.sf = sql_flag
        self.parts = _FlagParts()

    def oid(self, kind: str, variant: str | None, reason: str | None, index: int | None) -> Any:
        return self.o.lit(self.sf.outcome_id(Outcome(kind, variant, reason, index)))

    def build(self) -> _FlagParts:
        o, flag = self.o, self.flag
        exp = o.exp
        bad = exp.or_(
            exp.Is(this=o.col("_anb_id"), expression=exp.Null()),
            exp.EQ(this=o.col("_anb_id"), expression=o.lit("")),
        )
        const = o.const_outcome(flag)
        if const is not None:
            self.parts.outcome = o.case([(bad, exp.Null())], o.lit(self.sf.outcome_id(const)))
            return self.parts
        whens: list[tuple[Any, Any]] = [(bad, exp.Null())]
        if flag.holdout is not None:
            hv, pct = flag.holdout
            name = f"_anb_{self.n}_hold"
            self.parts.inputs.append((name, o.bucket("holdout-")))
            bound = rollout_bound(pct / 100)
            if bound >= 0:
                test = exp.LTE(this=o.col(name), expression=o.bound(bound))
                whens.append((test, self.oid("variant", hv, "holdout_condition_value", None)))
        rollout_col = f"_anb_{self.n}_h"
        uses_rollout = False
        codes: list[Any] = []
        for cond in flag.conditions:
            kcol = self.condition(cond)
            codes.append(kcol)
            whens.append(
                (exp.EQ(this=kcol, expression=o.lit(_LOCAL)), self.oid("local", None, NEEDS_LOCAL, None))
            )
            is_true = exp.EQ(this=kcol, expression=o.lit(_TRUE))
            in_rollout = self.rollout_test(cond, rollout_col)
            if in_rollout is not None:
                uses_rollout = True
            matched = is_true if in_rollout is None else exp.and_(is_true, in_rollout)
            whens.append((matched, self.match(cond)))
            if flag.early_exit and in_rollout is not None:
                # early_exit stops at a condition whose properties match outside its rollout, in both modes
                # (PostHog PR #57321; the engine's `_evaluate_server` / `_evaluate_sdk`). In server mode no
                # earlier condition is open here: an undecided one sent the row to the local engine above.
                earlier_open = [exp.EQ(this=k, expression=o.lit(_INCONCLUSIVE)) for k in codes[:-1]]
                stop = self.oid("false", None, "out_of_rollout_bound", cond.index)
                if earlier_open and not o.server:
                    stop = o.case(
                        [(exp.or_(*earlier_open), self.oid("unknown", None, "inconclusive", None))], stop
                    )
                whens.append((is_true, stop))
        if uses_rollout:
            self.parts.hashes.insert(0, (rollout_col, o.bucket(f"{flag.key}.")))
        self.guard_hashes(codes)
        default = self.fallthrough(codes, whens)
        self.parts.outcome = o.case(whens, default)
        return self.parts

    def guard_hashes(self, codes: list[Any]) -> None:
        """Hash only the rows that read a rollout or variant bucket: both are read only where a
        condition's code is TRUE (`matched`, `match`), so each is ``CASE WHEN k0 = 1 OR ... THEN bucket
        END``, NULL (never read) elsewhere. SHA-1 was most of the query's time; rows no condition matches
        are no longer hashed."""
        o = self.o
        exp = o.exp
        if not self.parts.hashes or not codes:
            return
        matched = exp.or_(*[exp.EQ(this=k.copy(), expression=o.lit(_TRUE)) for k in codes])
        self.parts.guard = matched
        self.parts.hashes = [
            (name, o.case([(matched.copy(), e)], exp.Null())) for name, e in self.parts.hashes
        ]

    def condition(self, cond: ConditionSpec) -> Any:
        """Adds the condition's filter-code columns and its code column; returns the code column."""
        o = self.o
        exp = o.exp
        names = []
        for j, spec in enumerate(cond.filters):
            name = f"_anb_{self.n}_c{cond.index}_f{j}"
            self.parts.inputs.append((name, o.filter_code(spec)))
            names.append(o.col(name))
        kname = f"_anb_{self.n}_k{cond.index}"
        if not names:
            self.parts.conditions.append((kname, o.lit(_TRUE)))
            return o.col(kname)

        def any_is(*codes: int) -> Any:
            return exp.or_(*[exp.In(this=c.copy(), expressions=[o.lit(x) for x in codes]) for c in names])

        # Server mode: an undecided filter (e.g. an unknown dependency) no longer counts as no match; the
        # engine then answers only when every outcome of the unknown gives the same answer (its `_Pending`),
        # which SQL does not express, so such a row goes to the local engine (code _LOCAL).
        local_codes = (_LOCAL, _INCONCLUSIVE) if o.server else (_LOCAL,)
        code = o.case(
            [(any_is(_FALSE), o.lit(_FALSE)), (any_is(*local_codes), o.lit(_LOCAL))]
            + ([] if o.server else [(any_is(_INCONCLUSIVE), o.lit(_INCONCLUSIVE))]),
            o.lit(_TRUE),
        )
        self.parts.conditions.append((kname, code))
        return o.col(kname)

    def rollout_test(self, cond: ConditionSpec, column: str) -> Any:
        """None when every matching row is in the rollout, else `h <= bound` (FALSE when none is)."""
        o = self.o
        if cond.rollout is None or cond.rollout >= 100.0:
            return None
        bound = rollout_bound(cond.rollout / 100)
        if bound >= _MAX_H:
            return None
        if bound < 0:
            return o.exp.false()
        return o.exp.LTE(this=o.col(column), expression=o.bound(bound))

    def match(self, cond: ConditionSpec) -> Any:
        o, flag = self.o, self.flag
        exp = o.exp
        if cond.variant is not None:
            return self.oid("variant", cond.variant, "condition_match", cond.index)
        if not flag.variants:
            return self.oid("true", None, "condition_match", cond.index)
        vcol = f"_anb_{self.n}_v"
        if not any(name == vcol for name, _ in self.parts.hashes):
            self.parts.hashes.append((vcol, o.bucket(f"{flag.key}.", "variant")))
        whens = []
        for vkey, low, high in flag.variants:
            first, last = _variant_range(low, high)
            if first > last:
                continue
            test = exp.Between(this=o.col(vcol), low=o.bound(first), high=o.bound(last))
            whens.append((test, self.oid("variant", vkey, "condition_match", cond.index)))
        return o.case(whens, self.oid("true", None, "condition_match", cond.index))

    def fallthrough(self, codes: list[Any], whens: list[tuple[Any, Any]]) -> Any:
        """No condition matched: the service ranks the reasons (out of rollout over no match, the later
        condition on a tie); the SDK answers inconclusive when a condition was, else its first
        out-of-rollout condition, else no match."""
        o, flag = self.o, self.flag
        exp = o.exp
        conds = flag.conditions
        oor = [
            (
                exp.EQ(this=k.copy(), expression=o.lit(_TRUE)),
                self.oid("false", None, "out_of_rollout_bound", c.index),
            )
            for k, c in zip(codes, conds, strict=True)
            if self.rollout_test(c, "_") is not None
        ]
        if o.server:
            whens.extend(reversed(oor))
            if not conds:
                return self.oid("false", None, "no_group_type", None)
            return self.oid("false", None, "no_condition_match", conds[-1].index)
        if codes:
            open_any = exp.or_(*[exp.EQ(this=k.copy(), expression=o.lit(_INCONCLUSIVE)) for k in codes])
            whens.append((open_any, self.oid("unknown", None, "inconclusive", None)))
        whens.extend(oor)
        return self.oid("false", None, "no_condition_match", None)


# ------------------------------------------------------------------------------------------ assembly


def _levels(compiled: CompiledFlags) -> list[list[CompiledFlag]]:
    """Flags grouped by dependency depth (each level reads only the outcomes of earlier levels)."""
    depth: dict[str, int] = {}
    for flag in compiled.order:
        deps = [compiled.alias.get(d) for d in flag.dependencies]
        depth[flag.key] = 1 + max((depth[d] for d in deps if d in depth), default=-1)
    levels: list[list[CompiledFlag]] = [[] for _ in range(max(depth.values(), default=-1) + 1)]
    for flag in compiled.order:
        levels[depth[flag.key]].append(flag)
    return levels


def narrow_definitions(definitions: Any, keys: Sequence[str]) -> Any:
    """The definitions with only the flags `keys` and the flags they depend on (transitively, by key or
    id, as `dependency_order` resolves them), in their order; cohorts and group types kept. A key the
    definitions lack is a ValueError naming it."""
    import dataclasses

    from analytics_nb.flags._reader import read_definitions

    defs = read_definitions(definitions)
    compiled = compile_flags(defs)
    unknown = [k for k in keys if k not in compiled.by_key]
    if unknown:
        raise ValueError(
            f"no flag {unknown[0]!r} in the definitions; the flags are {sorted(compiled.by_key)[:10]}"
        )
    wanted: set[str] = set()
    stack = list(keys)
    while stack:
        key = stack.pop()
        if key in wanted or key not in compiled.by_key:
            continue
        wanted.add(key)
        for dep in compiled.by_key[key].dependencies:
            target = compiled.alias.get(dep)
            if target is not None:
                stack.append(target)
    return dataclasses.replace(defs, flags=[f for f in defs.flags if str(f.get("key")) in wanted])


def compile_sql(
    definitions: Any,
    *,
    dialect: str = "duckdb",
    mode: str = "server",
    table: str = "persons",
    schema: Mapping[str, str] | None = None,
    payloads: bool = False,
    now: dt.datetime | None = None,
    cohorts: Mapping[str, Any] | None = None,
    property_matching_version: int | None = None,
    timezone: str | None = None,
    pretty: bool = True,
    missing_columns: str = "unknown",
    carry: Sequence[str] = (),
    flags: Sequence[str] | None = None,
    reasons: bool = True,
    bucket_function: str | None = None,
) -> SqlQuery:
    """Compile flag definitions to one SELECT over `table` (see `to_sql`); returns the `SqlQuery` with the
    text and what each flag's outcome integers mean (used to read the answers back).

    `missing_columns="unknown"` (the default, with a `schema`) leaves a flag that reads a property the
    table has no column for to the local engine (which answers NA where the answer depends on it, as
    `simulate` does); "not_set" reads it as not set. `carry` names input columns the SELECT passes through
    after `distinct_id` (a row key, say). `flags` compiles only those flags and the flags they depend on,
    and writes only theirs; `reasons=False` leaves out the reason and condition-index columns (a row the
    local engine must answer is then marked by the boolean column `SqlQuery.local_column`).

    Args:
        definitions: The flag definitions (any shape `read_definitions` reads).
        dialect: The SQL dialect, as in `to_sql`.
        mode: ``"server"`` or ``"sdk"``.
        table: The table (or view) of persons the SELECT reads.
        schema: ``{column: type}`` of the table. None: every property is a text column.
        payloads: Add ``<flag>:payload`` columns.
        now: The instant relative dates are compiled against. None: now.
        cohorts: ``{cohort id: cohort filters}``. None: the definitions'.
        property_matching_version: 1 or 2. None: the definitions', else 1.
        timezone: The project's IANA time zone. None: the definitions', else UTC.
        pretty: Format the SQL for reading (False: one compact statement).
        missing_columns: A property the table has no column for (with a `schema`): ``"unknown"``
            leaves the flag to the local engine; ``"not_set"`` reads it as not set.
        carry: Input columns the SELECT passes through after ``distinct_id`` (a row key, say).
        flags: Only these flag keys (and, compiled but not written, what they depend on). None: all.
        reasons: Write ``<flag>:reason`` and ``<flag>:condition_index``.
        bucket_function: DuckDB only: the stem of functions ``<stem>_<n>(id) -> DOUBLE``, each the bucket
            fraction of ``prefix + id + suffix`` for one (prefix, suffix), listed in `SqlQuery.buckets`
            (`simulation.simulate_sql` registers the project's SHA-NI column hasher, `flags._hashing`,
            under them); the rollout and variant buckets of each dependency level are computed by one
            function ``<stem>_set<level>`` per row vector instead, listed in `SqlQuery.bucket_sets`. The
            bounds are then the fractions of the exact integer bounds. None: the engine's own SHA-1.

    Returns:
        The `SqlQuery`.
    """
    _check_options(missing_columns, dialect)
    server = check_mode(mode)
    require("sqlglot", "flags.to_sql / compile_sql")
    from sqlglot import exp

    if flags is not None:
        definitions = narrow_definitions(definitions, list(flags))
    compiled = compile_flags(
        definitions,
        cohorts=cohorts,
        property_matching_version=property_matching_version,
        timezone=timezone,
    )
    kinds = _schema(schema)
    _check_table(kinds, compiled)
    c = _Compiler(compiled, dialect, server, kinds, _now(now, server, compiled.timezone), table)
    c.unknown_absent = missing_columns == "unknown" and kinds is not None
    if bucket_function is not None and dialect != "duckdb":
        raise ValueError("bucket_function= is a DuckDB function; other dialects hash with their own SHA-1")
    c.bucket_function = bucket_function
    _check_columns(kinds, carry)

    base = exp.select(exp.Star(), exp.alias_(c.text(c.col("distinct_id")), "_anb_id", quoted=True)).from_(
        exp.to_table(table)
    )
    ctes: list[tuple[str, Any]] = [("_anb_base", base)]
    number = 0
    for level_no, level in enumerate(_levels(compiled)):
        parts_by_flag, number = _compile_level(c, level, number)
        ctes.extend(_level_ctes(c, parts_by_flag, level_no, prev=ctes[-1][0]))

    wanted = set(flags) if flags is not None else None
    sql_flags = [c.flags[f.key] for f in compiled.flags if wanted is None or f.key in wanted]
    selected: list[Any] = _final_columns(c, sql_flags, payloads, reasons)
    local_column = None
    if not reasons:
        marker = _local_marker(c, sql_flags)
        if marker is not None:
            local_column = "_anb_local"
            selected.insert(-1, exp.alias_(marker, local_column, quoted=True))
    selected[1:1] = [c.col(name) for name in carry]
    final = exp.select(*selected).from_(ctes[-1][0])
    for name, select in ctes:
        final = final.with_(name, as_=select, copy=False)  # copy=True re-copied the whole tree per CTE
    # the header is a comment printed by sqlglot (which neutralises "*/" and "/*" in it), on the WITH
    # clause so that it comes first: a flag key or a reason never ends it, in any dialect
    final.args["with_"].add_comments(_header(c, sql_flags))
    text = final.sql(dialect=dialect, pretty=pretty, identify=False)
    if dialect == "clickhouse" and len(text.encode()) > CLICKHOUSE_MAX_QUERY_SIZE:
        text = _clickhouse_sized(final, text, pretty)
    buckets = {name: pair for pair, name in c.buckets.items() if name not in c.in_sets}
    return SqlQuery(
        text,
        dialect,
        mode,
        sql_flags,
        table,
        list(carry),
        reasons,
        local_column,
        buckets,
        dict(c.bucket_sets),
        compiled,
    )


def _check_options(missing_columns: str, dialect: str) -> None:
    """`missing_columns` and `dialect` are ones compile_sql knows."""
    if missing_columns not in ("not_set", "unknown"):
        raise ValueError(f"missing_columns must be 'not_set' or 'unknown', got {missing_columns!r}")
    if dialect not in DIALECTS:
        raise ValueError(f"dialect must be one of {', '.join(DIALECTS)}, got {dialect!r}")


def _check_table(kinds: dict[str, str | None] | None, compiled: CompiledFlags) -> None:
    """The table has a text or integer `distinct_id`, and no flag key is an output column's name."""
    if kinds is not None and "distinct_id" not in kinds:
        raise ValueError(f"the table needs a 'distinct_id' column; its columns are {sorted(kinds)[:10]}")
    if kinds is not None and kinds["distinct_id"] not in ("string", "integer"):
        raise ValueError(
            "the 'distinct_id' column must be text or an integer (a float id hashes as '3.0'); cast it first"
        )
    clash = {f.key for f in compiled.flags} & {"distinct_id", "error"}
    if clash:
        raise ValueError(
            f"flag key {sorted(clash)[0]!r} would collide with an output column; rename the flag"
        )


def _check_columns(kinds: dict[str, str | None] | None, carry: Sequence[str]) -> None:
    """Every carried column is in the table, and no column holds property dicts (one column per property)."""
    absent = [name for name in carry if kinds is not None and name not in kinds]
    if absent:
        raise ValueError(f"carry={list(carry)!r}: the table has no column {absent[0]!r}")
    for key in ("person_properties", "group_properties"):
        if kinds is not None and key in kinds:
            raise ValueError(
                f"a {key!r} column of dicts is read by the local engine only; give one column per property"
            )


def _compile_level(
    c: _Compiler, level: Sequence[CompiledFlag], number: int
) -> tuple[list[tuple[CompiledFlag, _FlagParts]], int]:
    """Each flag of one dependency level as SQL parts (a flag SQL cannot answer is marked needs_local);
    returns the parts and the next flag number."""
    parts_by_flag: list[tuple[CompiledFlag, _FlagParts]] = []
    for flag in level:
        sf = SqlFlag(flag.key, flag.multivariate, payloads=flag.payloads)
        c.flags[flag.key] = sf
        fc = _FlagCompiler(c, flag, number, sf)
        number += 1
        try:
            parts = fc.build()
        except NeedsLocal as why:
            sf.needs_local = str(why)
            sf.outcomes = []
            continue
        c.outcome_col[flag.key] = f"_anb_{fc.n}_o"
        parts_by_flag.append((flag, parts))
    return parts_by_flag, number


def _level_ctes(
    c: _Compiler, parts_by_flag: list[tuple[CompiledFlag, _FlagParts]], level_no: int, *, prev: str
) -> list[tuple[str, Any]]:
    """One level's CTEs, each over the one before: inputs, conditions, outcomes (empty ones left out)."""
    from sqlglot import exp

    inputs = {name: e for _, p in parts_by_flag for name, e in p.inputs}
    conditions = [(name, e) for _, p in parts_by_flag for name, e in p.conditions]
    hashes = [(name, e) for _, p in parts_by_flag for name, e in p.hashes]
    outcomes = [(c.outcome_col[f.key], p.outcome) for f, p in parts_by_flag]
    ctes: list[tuple[str, Any]] = []
    levels: list[tuple[str, list[tuple[str, Any]]]] = [("in", list(inputs.items())), ("cond", conditions)]
    if c.bucket_function is not None and hashes:
        levels += _bucket_set_columns(c, parts_by_flag, level_no)
    else:
        levels.append(("hash", hashes))
    levels.append(("out", outcomes))
    for suffix, columns in levels:
        if not columns:
            continue
        name = f"_anb_{suffix}{level_no}"
        select = exp.select(
            exp.Star(), *[exp.alias_(e, n, quoted=True, copy=False) for n, e in columns]
        ).from_(prev)
        ctes.append((name, select))
        prev = name
    return ctes


def _bucket_set_columns(
    c: _Compiler, parts_by_flag: list[tuple[CompiledFlag, _FlagParts]], level_no: int
) -> list[tuple[str, list[tuple[str, Any]]]]:
    """A level's rollout and variant buckets as one DuckDB function call per row vector (`SqlQuery.
    bucket_sets`) rather than one per (prefix, suffix): the layer ``_anb_hv<level>`` computes the STRUCT of
    every bucket of the level (each hashed only where its flag's guard holds, NULL elsewhere), the layer
    ``_anb_hash<level>`` names its fields as the per-flag hash columns the outcomes read.

    Measured (1M persons x 8 flags, 2 cores): a Python vectorised function costs DuckDB ~0.1 ms per call
    (the vector handed over as Arrow, the GIL taken), so six bucket functions over 2,048-row vectors were
    0.33 s of a 0.70 s query; one call per vector for all six makes the query 0.53 s."""
    exp = c.exp
    pair_of = {name: pair for pair, name in c.buckets.items()}
    guards: dict[str, tuple[int, Any]] = {}
    fields: list[tuple[str, str, int]] = []
    names: list[str] = []
    for _, parts in parts_by_flag:
        if not parts.hashes:
            continue
        guard = parts.guard if parts.guard is not None else exp.true()
        index, _ = guards.setdefault(guard.sql(dialect="duckdb"), (len(guards), guard))
        for name, e in parts.hashes:
            call = e.find(exp.Anonymous)
            fn = call.name if call is not None else ""
            c.in_sets.add(fn)  # computed in the set, not by a function of its own
            fields.append((*pair_of[fn], index))
            names.append(name)
    set_name = f"{c.bucket_function}_set{level_no}"
    c.bucket_sets[set_name] = tuple(fields)
    value = f"_anb_hv{level_no}"
    ordered = [g for _, g in sorted(guards.values(), key=lambda item: item[0])]
    call = c.fn(set_name, c.col("_anb_id"), *[exp.Paren(this=g.copy()) for g in ordered])
    extract = [(n, c.fn("STRUCT_EXTRACT", c.col(value), c.lit(f"b{i}"))) for i, n in enumerate(names)]
    return [("hv", [(value, call)]), ("hash", extract)]


def _clickhouse_sized(final: Any, text: str, pretty: bool) -> str:
    """A ClickHouse query over the default `max_query_size` (262,144 bytes; ~300 flags) with a
    ``SETTINGS max_query_size = n`` clause raising the parser's limit for this query alone (to the next
    power of two over its size): ClickHouse applies a query's own SETTINGS clause before the parser's size
    check (measured with chDB 4.4: refused without the clause, run with it). A server whose profile makes
    the setting read-only refuses it: split the flags then (`to_sql(..., flags=[...])`)."""
    from sqlglot import exp

    size = 1 << (len(text.encode()) + 4096).bit_length()
    final.set("settings", [exp.EQ(this=exp.var("max_query_size"), expression=exp.Literal.number(size))])
    sized: str = final.sql(dialect="clickhouse", pretty=pretty, identify=False)
    return sized


def _typed_null(c: _Compiler, type_name: str) -> Any:
    return c.exp.cast(c.exp.Null(), type_name)


def _lookup(c: _Compiler, column: Any, pairs: list[tuple[int, Any]], type_name: str) -> Any:
    """CASE outcome WHEN id THEN value ... (NULL for an error row or an id without a value)."""
    exp = c.exp
    by_value: dict[Any, list[int]] = {}
    for i, v in pairs:
        if v is not None:
            by_value.setdefault(v, []).append(i)
    whens = [
        (exp.In(this=_fresh(c, column), expressions=[c.lit(i) for i in ids]), c.lit(v))
        for v, ids in by_value.items()
    ]
    return c.case(whens, _typed_null(c, type_name)) if whens else _typed_null(c, type_name)


def _fresh(c: _Compiler, column: Any) -> Any:
    """A copy of a column reference, built anew (sqlglot's deep copy was half of `_lookup`'s time)."""
    if isinstance(column, c.exp.Column) and not column.table:
        return c.col(column.name)
    return column.copy()


def _local_marker(c: _Compiler, flags: list[SqlFlag]) -> Any:
    """Whether a row's answer of some flag is left to the local engine (None when no row's can be)."""
    exp = c.exp
    tests = []
    for sf in flags:
        ids = [i for i, o in enumerate(sf.outcomes) if o.kind == "local"]
        if sf.needs_local is None and ids:
            column = c.col(c.outcome_col[sf.key])
            tests.append(exp.In(this=column, expressions=[c.lit(i) for i in ids]))
    if not tests:
        return None
    return exp.Coalesce(this=exp.or_(*tests), expressions=[exp.false()])


def _final_columns(c: _Compiler, flags: list[SqlFlag], payloads: bool, reasons: bool = True) -> list[Any]:
    exp = c.exp
    bad = exp.or_(
        exp.Is(this=c.col("_anb_id"), expression=exp.Null()),
        exp.EQ(this=c.col("_anb_id"), expression=c.lit("")),
    )
    out: list[Any] = [c.col("distinct_id")]
    for sf in flags:
        value_type = "text" if sf.multivariate else "boolean"
        if sf.needs_local is not None:
            value = _typed_null(c, value_type)
            reason = c.case([(bad, _typed_null(c, "text"))], c.lit(NEEDS_LOCAL))
            index = _typed_null(c, "int")
            payload = _typed_null(c, "text")
            value = value.add_comments([f" needs the local engine: {sf.needs_local} "]) or value
        else:
            column = c.col(c.outcome_col[sf.key])
            ids = list(enumerate(sf.outcomes))
            if sf.multivariate:
                texts = {"true": "true", "false": "false"}
                value = _lookup(
                    c,
                    column,
                    [(i, o.variant if o.kind == "variant" else texts.get(o.kind)) for i, o in ids],
                    "text",
                )
            else:
                value = _lookup(
                    c, column, [(i, {"true": True, "false": False}.get(o.kind)) for i, o in ids], "boolean"
                )
            reason = _lookup(c, column, [(i, o.reason) for i, o in ids], "text")
            index = _lookup(c, column, [(i, o.index) for i, o in ids], "int")
            payload = _lookup(c, column, [(i, _payload(sf, o)) for i, o in ids], "text")
        out.append(exp.alias_(value, sf.key, quoted=True, copy=False))
        if reasons:
            out.append(exp.alias_(reason, f"{sf.key}:reason", quoted=True, copy=False))
            out.append(exp.alias_(index, f"{sf.key}:condition_index", quoted=True, copy=False))
        if payloads:
            out.append(exp.alias_(payload, f"{sf.key}:payload", quoted=True, copy=False))
    out.append(
        exp.alias_(
            c.case([(bad, c.lit(_ID_ERROR))], _typed_null(c, "text")), "error", quoted=True, copy=False
        )
    )
    return out


def _payload(sf: SqlFlag, o: Outcome) -> str | None:
    if o.kind == "variant":
        return sf.payloads.get(o.variant or "")
    if o.kind == "true":
        return sf.payloads.get("true")
    return None


def _header(c: _Compiler, flags: list[SqlFlag]) -> list[str]:
    """The header comment's lines (keys and reasons as data: sqlglot prints them inside one comment)."""
    lines = [
        f" analytics_nb flags as SQL ({c.dialect}, mode={'server' if c.server else 'sdk'}): one row per "
        "person; <flag>, <flag>:reason, <flag>:condition_index",
    ]
    for f in flags:
        if f.needs_local:
            lines.append(f" {f.key!r}: needs the local engine ({f.needs_local})")
    lines.append(f" a row answered {NEEDS_LOCAL!r} must be evaluated by analytics_nb's local engine ")
    return ["\n".join(lines)]


def to_sql(
    definitions: Any,
    *,
    dialect: str = "duckdb",
    mode: str = "server",
    table: str = "persons",
    schema: Mapping[str, str] | None = None,
    payloads: bool = False,
    now: dt.datetime | None = None,
    cohorts: Mapping[str, Any] | None = None,
    property_matching_version: int | None = None,
    timezone: str | None = None,
    missing_columns: str = "unknown",
    flags: Sequence[str] | None = None,
) -> str:
    """Flag definitions as one readable SELECT for `dialect` ("duckdb", "clickhouse", "spark",
    "bigquery", "snowflake", "postgres") over `table`: per person row, `distinct_id`, each flag's value
    (boolean; text for a multivariate flag: the variant, "true" or "false"), `<flag>:reason`,
    `<flag>:condition_index` (and `<flag>:payload` with `payloads=True`) and `error`, with the answers of
    `evaluate_frame(..., mode=mode)`.

    `schema` maps column names to their types ("string", "integer", "float", "boolean", or SQL type
    names); without it every property is read as a text column that exists. A flag the SQL cannot
    answer exactly is `NULL` with reason ``needs_local_engine`` (named in the header comment), never a
    different answer; so is a row whose text the SQL cannot lower-case exactly.

    Args:
        definitions: The flag definitions (any shape `read_definitions` reads).
        dialect: ``"duckdb"``, ``"clickhouse"``, ``"spark"``, ``"bigquery"``, ``"snowflake"`` or
            ``"postgres"``.
        mode: ``"server"`` or ``"sdk"``, as in `evaluate_frame`.
        table: The table (or view) of persons the SELECT reads.
        schema: ``{column: type}`` of the table. None: every property is a text column.
        payloads: Add ``<flag>:payload`` columns.
        now: The instant relative dates are compiled against. None: now.
        cohorts: ``{cohort id: cohort filters}``. None: the definitions'.
        property_matching_version: 1 or 2. None: the definitions', else 1.
        timezone: The project's IANA time zone. None: the definitions', else UTC.
        missing_columns: A property the `schema` has no column for: ``"unknown"`` (the flag is left to
            the local engine: ``NULL`` / ``needs_local_engine``) or ``"not_set"`` (read as not set).
        flags: Only these flag keys (and, compiled but not written, the flags they depend on). None: all.

    Returns:
        The SQL text.
    """
    return compile_sql(
        definitions,
        dialect=dialect,
        mode=mode,
        table=table,
        schema=schema,
        payloads=payloads,
        now=now,
        cohorts=cohorts,
        property_matching_version=property_matching_version,
        timezone=timezone,
        missing_columns=missing_columns,
        flags=flags,
    ).sql
