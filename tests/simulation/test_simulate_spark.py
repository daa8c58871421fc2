"""Spark through ``mapInPandas``: the batch function gives the pandas answers in the Spark schema (always
tested); the PySpark run itself needs pyspark (the spark and test extras) and Java 17 (`scripts/test`
installs Debian's openjdk-17-jre-headless), and skips only where they are missing."""

from __future__ import annotations

import os
import sys
from typing import Any

import pandas as pd
import pytest
from test_simulate_families import family_flags, person_frame

from analytics_nb.simulation import IncompleteDefinitionsWarning, load_definitions, simulate, simulate_spark
from analytics_nb.simulation._definitions import live_flags
from analytics_nb.simulation._spark import spark_batches, spark_columns


def _text(v: Any) -> Any:
    # missing is pd.NA in a flag column, NaN in a category (payload) column: pd.isna covers both
    if not isinstance(v, str | bool) and pd.isna(v):
        return None
    return "true" if v is True else "false" if v is False else v


def test_the_batch_function_gives_the_pandas_answers_in_the_spark_schema() -> None:
    frame = person_frame(300)
    defs = live_flags(load_definitions(family_flags()))
    batches = [frame.iloc[:100], frame.iloc[100:250], frame.iloc[250:]]
    out = pd.concat(list(spark_batches(iter(batches), defs)), ignore_index=True)
    want = simulate(frame, engine="local", definitions=family_flags()).frame
    columns = spark_columns(defs, None, payloads=True)
    assert list(out.columns) == [name for name, _ in columns]
    for name, kind in columns:
        if name == "error":
            assert out[name].isna().all()
        elif kind == "boolean":
            assert out[name].astype(object).tolist() == want[name].astype(object).tolist()
        else:
            assert out[name].tolist() == [_text(v) for v in want[name].astype(object).tolist()]


def test_simulate_spark_refuses_other_frames() -> None:
    with pytest.raises(ValueError, match="PySpark DataFrame"):
        simulate_spark(person_frame(3), definitions=family_flags())


def test_pyspark_map_in_pandas_gives_the_pandas_answers() -> None:
    pyspark_sql = pytest.importorskip(
        "pyspark.sql", reason="pyspark is not installed (optional; too big for the test image)"
    )
    # the Python workers must run this interpreter (the one with analytics_nb), not the first python3 on PATH
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        pyspark_sql.SparkSession.builder.master("local[2]")
        .config("spark.pyspark.python", sys.executable)
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    frame = person_frame(200)
    sdf = spark.createDataFrame(frame.astype(object).where(frame.notna(), None))
    got = simulate_spark(sdf, definitions=family_flags()).toPandas()
    want = simulate(frame, engine="local", definitions=family_flags()).frame
    got = got.set_index("distinct_id").loc[want["distinct_id"]]
    assert got["rollout"].astype(object).tolist() == want["rollout"].astype(object).tolist()
    assert got["exp"].tolist() == [_text(v) for v in want["exp"].astype(object).tolist()]
    # a flags list carries no cohorts: the cohort flag is NA, and one warning says so before Spark runs
    cohort_flag = {
        "key": "in-cohort",
        "active": True,
        "filters": {
            "groups": [{"properties": [{"key": "id", "type": "cohort", "value": 3, "operator": "in"}]}]
        },
    }
    with pytest.warns(IncompleteDefinitionsWarning, match=r"1 flag uses cohorts.*'in-cohort': cohort 3"):
        lazy = simulate_spark(sdf, definitions=[*family_flags(), cohort_flag])
    assert lazy.toPandas()["in-cohort"].isna().all()
