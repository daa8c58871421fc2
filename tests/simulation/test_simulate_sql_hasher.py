"""The SQL path's bucketing (issue 35): the project's compiled SHA-1 column hasher as a DuckDB vectorised
function gives bit-identical buckets to `hash_fraction` and to the query's own ``sha1`` (non-ASCII, empty,
long and NULL ids included); its fraction bounds select exactly the rows the integer bounds select; and a
bucket is hashed only on the rows a condition matched."""

from __future__ import annotations

import random
from typing import Any

import pandas as pd
import pytest

from analytics_nb.flags import compile_sql, hash_fraction
from analytics_nb.flags._hashing import raw_hash
from analytics_nb.flags._sql import _fraction, _variant_range, rollout_bound
from analytics_nb.simulation import simulate, simulate_sql
from analytics_nb.simulation._sql import column_buckets, register_buckets

duckdb = pytest.importorskip("duckdb", reason="the 'sql' extra is not installed")
pa = pytest.importorskip("pyarrow")

IDS = ["", "a", "é", "日本語", "\u212aelvin", "\U0001f600", "x" * 55, "y" * 56, "z" * 64, "w" * 200, "user-1"]
IDS += [f"user-{i}" for i in range(3000)] + [
    "".join(random.Random(i).choices("aé日\U0001f600 ", k=i % 70)) for i in range(500)
]


def test_column_buckets_equal_hash_fraction_on_every_id() -> None:
    ids = pa.chunked_array([pa.array([None, *IDS]).slice(1)])  # a slice: the offsets start past zero
    for prefix, suffix in (("flag.", ""), ("flag.", "variant"), ("holdout-", ""), ("ключ.", "")):
        got = column_buckets(prefix, suffix)(ids).to_pylist()
        assert got == [raw_hash(prefix + i + suffix) for i in IDS]
    assert column_buckets("k.", "")(pa.array(["é"])).to_pylist() == [hash_fraction("k", "é")]
    nulls = column_buckets("k.", "")(pa.array(["a", None, ""])).to_pylist()
    assert nulls == [hash_fraction("k", "a"), None, hash_fraction("k", "")]
    wide = column_buckets("k.", "")(pa.array(["é"], pa.large_string())).to_pylist()
    assert wide == [hash_fraction("k", "é")]
    assert column_buckets("k.", "")(pa.array([], pa.string())).to_pylist() == []


def test_the_duckdb_function_equals_duckdbs_own_sha1_bit_for_bit() -> None:
    con = duckdb.connect()
    register_buckets(con, {"b": ("flag.", "variant")})
    con.register("ids", pa.table({"id": pa.array([*IDS, None])}))
    differ = con.execute(
        "SELECT count(*), count(*) FILTER (WHERE b(id) IS DISTINCT FROM "
        "CAST(CAST(('0x' || substr(sha1('flag.' || id || 'variant'), 1, 15)) AS UBIGINT) AS DOUBLE) "
        "/ CAST(1152921504606846975 AS DOUBLE)) FROM ids"
    ).fetchall()
    assert differ == [(len(IDS) + 1, 0)]


@pytest.mark.parametrize("share", [0.0, 1e-18, 0.1, 0.333, 0.5, 0.75, 0.8, 0.999999, 1.0])
def test_fraction_bounds_select_the_rows_the_integer_bounds_select(share: float) -> None:
    """``f(h) <= f(B)`` exactly when ``h <= B`` (and for variant ranges), around every bound."""
    bound = rollout_bound(share)
    first, last = _variant_range(share / 2, share)
    for b in (bound, first, last):
        for h in range(max(0, b - 600), min(2**60 - 1, b + 600) + 1):
            if bound >= 0:
                assert (h <= bound) == (_fraction(h) <= _fraction(bound))
            if first <= last:
                assert (first <= h <= last) == (_fraction(first) <= _fraction(h) <= _fraction(last))


def _definitions() -> list[dict[str, Any]]:
    prop = {"key": "plan", "operator": "exact", "value": ["pro"], "type": "person"}
    ab = {"variants": [{"key": "a", "rollout_percentage": 33}, {"key": "b", "rollout_percentage": 67}]}
    return [
        {"key": "r", "filters": {"groups": [{"properties": [prop], "rollout_percentage": 40}]}},
        {
            "key": "exp",
            "filters": {"groups": [{"properties": [], "rollout_percentage": 70}], "multivariate": ab},
        },
        {
            "key": "held",
            "filters": {
                "groups": [{"properties": [prop]}],
                "multivariate": ab,
                "holdout": {"id": 7, "exclusion_percentage": 20},
            },
        },
    ]


def _frame(n: int = 3000) -> pd.DataFrame:
    ids = [f"user-{i}" if i % 7 else f"ü-{i}" for i in range(n)]
    return pd.DataFrame({"distinct_id": ids, "plan": ["pro" if i % 5 == 0 else "free" for i in range(n)]})


@pytest.mark.parametrize("reasons", [False, True])
def test_native_and_sql_hashers_give_the_local_engines_answers(reasons: bool) -> None:
    frame = _frame()
    local = simulate(frame, engine="local", definitions=_definitions(), reasons=reasons)
    with simulate(frame, engine="sql", definitions=_definitions(), reasons=reasons, progress=False) as sql:
        assert "_anb_bucket_set0(" in sql.sql.lower()  # the compiled hasher ran (it is built here)
        pd.testing.assert_frame_equal(sql.outputs, local.outputs)
    with (
        simulate_sql(frame, _definitions(), hasher="sql", progress=False, reasons=reasons) as a,
        simulate_sql(frame, _definitions(), hasher="native", progress=False, reasons=reasons) as b,
    ):
        assert "SHA1(" in a.query.sql and "SHA1(" not in b.query.sql
        pd.testing.assert_frame_equal(a.relation.order("_anb_row").df(), b.relation.order("_anb_row").df())


def test_a_bucket_is_hashed_only_on_rows_a_condition_matched() -> None:
    """Flag ``r`` reads its rollout bucket only where plan is "pro" (1 row in 5): only those rows are
    hashed (before, every row was hashed for every flag)."""
    frame = _frame(1000)
    hashed: list[int] = []

    query = compile_sql(
        _definitions()[:1], schema={"distinct_id": "VARCHAR", "plan": "VARCHAR"}, bucket_function="counted"
    )
    assert query.buckets == {}
    ((_name, fields),) = query.bucket_sets.items()
    assert fields == (("r.", "", 0),)

    def counting(rows: Any) -> None:
        hashed.append(len(rows))

    con = duckdb.connect()
    with _counting_hasher(counting):
        register_buckets(con, query.buckets, query.bucket_sets)
        con.register("persons", pa.Table.from_pandas(frame))
        got = con.execute(query.sql).df()
    assert sum(hashed) == 200 and got["r"].sum() > 0


class _counting_hasher:
    """Within the block, `fractions_into` as the bucket functions call it reports the rows it hashes."""

    def __init__(self, report: Any) -> None:
        self.report = report

    def __enter__(self) -> None:
        import analytics_nb.flags._hashing as hashing

        self.real = real = hashing.fractions_into

        def counted(prefix: bytes, ids: Any, suffix: bytes, out: Any, rows: Any = None) -> None:
            self.report(rows if rows is not None else range(len(ids)))
            real(prefix, ids, suffix, out, rows)

        hashing.fractions_into = counted

    def __exit__(self, *exc: object) -> None:
        import analytics_nb.flags._hashing as hashing

        hashing.fractions_into = self.real


def test_one_bucket_set_call_per_vector_hashes_every_bucket_of_a_level() -> None:
    """Every rollout and variant bucket of a level is computed by one function call per row vector
    (DuckDB's cost per call of a Python function is paid once, not once per bucket); its answers equal
    the per-bucket functions' and `hash_fraction` (NULL where the guard is false or the id is NULL)."""
    from analytics_nb.simulation._sql import bucket_set

    fields = (("r.", "", 0), ("exp.", "", 1), ("exp.", "variant", 1))
    ids = pa.array(["a", None, "é", "user-3"])
    guards = (pa.array([True, True, False, None]), pa.array([True, True, True, True]))
    got = bucket_set(fields)(ids, *guards).to_pylist()
    assert got == [
        {"b0": raw_hash("r.a"), "b1": raw_hash("exp.a"), "b2": raw_hash("exp.avariant")},
        {"b0": None, "b1": None, "b2": None},
        {"b0": None, "b1": raw_hash("exp.é"), "b2": raw_hash("exp.évariant")},
        {"b0": None, "b1": raw_hash("exp.user-3"), "b2": raw_hash("exp.user-3variant")},
    ]
    query = compile_sql(
        _definitions(), schema={"distinct_id": "VARCHAR", "plan": "VARCHAR"}, bucket_function="f"
    )
    assert list(query.bucket_sets) == ["f_set0"] and len(query.bucket_sets["f_set0"]) == 4
    assert list(query.buckets.values()) == [("holdout-", "")]  # read on every row, before the conditions


def test_a_large_bucket_set_hashed_on_two_threads_equals_each_bucket_alone() -> None:
    """Past ~64k hashes a call, half of a set's buckets are hashed on a worker thread (the hasher runs
    without the GIL): every field still equals its own bucket function, guards and NULL ids included."""
    from analytics_nb.simulation._sql import _SPLIT_WORK, bucket_set

    fields = tuple((f"flag-{i}.", "variant" if i % 3 == 0 else "", i % 4) for i in range(40))
    ids = pa.array([None if i % 97 == 0 else f"user-{i}-é" for i in range(3000)])
    assert len(fields) * len(ids) >= _SPLIT_WORK
    guards = [pa.array([(i + g) % 5 != 0 for i in range(len(ids))]) for g in range(4)]
    got = bucket_set(fields)(ids, *guards)
    for i, (prefix, suffix, g) in enumerate(fields):
        want = column_buckets(prefix, suffix)(ids).to_pylist()
        held = guards[g].to_pylist()
        assert got.field(i).to_pylist() == [w if h else None for w, h in zip(want, held, strict=True)]


def test_local_answers_become_sql_columns_once_per_distinct_value() -> None:
    """The local engine's object columns in the SQL answers' shape: a variant as is, True / False as
    "true" / "false", NA as NULL; a boolean flag's non-bool as NULL; an unhashable payload row by row."""
    from analytics_nb.simulation._sql import _bool_or_none, _by_uniques, _none_if_missing, _variant_text

    cells = pd.Series(["a", True, False, pd.NA, None, "a", float("nan")], dtype=object)
    assert _by_uniques(cells, _variant_text, pa.string()).to_pylist() == [
        "a", "true", "false", None, None, "a", None,
    ]  # fmt: skip
    assert _by_uniques(cells, _bool_or_none, pa.bool_()).to_pylist() == [
        None, True, False, None, None, None, None,
    ]  # fmt: skip
    payloads = pd.Series([{"a": 1}, None, {"a": 1}], dtype=object)
    assert _by_uniques(payloads, _none_if_missing, None).to_pylist() == [{"a": 1}, None, {"a": 1}]
