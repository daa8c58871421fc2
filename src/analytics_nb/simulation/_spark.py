"""The local flag engine over a PySpark DataFrame (Databricks, a Spark cluster) through ``mapInPandas``.

``simulate_spark(sdf, definitions=...)`` returns a lazy Spark DataFrame: each Arrow batch of each partition
becomes a pandas frame, goes through the engine (`normalise_property_sets` + `FrameEvaluator`), and comes
back in a fixed schema: ``distinct_id`` string, a boolean column per on/off flag, a string column per
multivariate flag (the variant key, ``"false"`` where none matched, null where unknown - as in Arrow and
Polars results), ``<key>:payload`` strings and ``error``. The definitions travel to the executors once, as a
Spark broadcast variable. Summaries are ordinary Spark aggregations (``groupBy(key).count()``).

PySpark is not a dependency of this package (Databricks runtimes bring their own); it is imported only here,
when a Spark DataFrame is given.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Literal

import pandas as pd

from analytics_nb.flags._evaluate import compile_flags
from analytics_nb.simulation._definitions import (
    Definitions,
    fill,
    has_group_columns,
    live_flags,
    load_definitions,
    warn_unfilled,
)
from analytics_nb.simulation._errors import SimulationInputError
from analytics_nb.simulation._inputs import check_flag_keys, normalise_property_sets
from analytics_nb.simulation._local import conform, make_evaluator
from analytics_nb.tables import text_column

__all__ = ["simulate_spark", "spark_batches", "spark_columns"]

Mode = Literal["server", "sdk"]


def spark_columns(defs: Definitions, keys: Sequence[str] | None, *, payloads: bool) -> list[tuple[str, str]]:
    """The result's (column, Spark SQL type) pairs, in result order."""
    chosen = list(keys) if keys is not None else list(defs.keys)
    # a string column where the engine can answer a string: variants, or a holdout value ("holdout-3")
    # on an on/off flag (`CompiledFlag.multivariate`; the variants alone left those boolean, and a batch
    # holding "holdout-3" failed its cast)
    multivariate = {f.key for f in compile_flags(defs.flags).flags if f.multivariate}
    cols = [("distinct_id", "string")]
    cols += [(k, "string" if k in multivariate else "boolean") for k in chosen]
    if payloads:
        cols += [(f"{k}:payload", "string") for k in chosen]
    return [*cols, ("error", "string")]


def spark_batches(
    batches: Iterator[pd.DataFrame],
    defs: Definitions,
    *,
    mode: Mode = "server",
    keys: Sequence[str] | None = None,
    payloads: bool = True,
) -> Iterator[pd.DataFrame]:
    """The ``mapInPandas`` function's body: each batch through the engine, in the `spark_columns` schema."""
    columns = spark_columns(defs, keys, payloads=payloads)
    for batch in batches:
        sets = normalise_property_sets(batch)
        out = conform(
            make_evaluator(sets, defs, mode=mode).run(None, payloads=payloads),
            sets,
            keys,
            payloads=payloads,
            reasons=False,
        )
        data: dict[str, Any] = {}
        for name, kind in columns:
            col = out[name] if name in out.columns else pd.Series(pd.NA, index=out.index, dtype=object)
            if kind == "boolean":
                data[name] = col.astype("boolean")
            else:
                data[name] = pd.Series(text_column(col), index=out.index, dtype=object)
        yield pd.DataFrame(data).reset_index(drop=True)


def simulate_spark(
    sdf: Any,
    flags: Sequence[str] | str | None = None,
    *,
    definitions: Any,
    mode: Mode = "server",
    payloads: bool = True,
    group_type_mapping: dict[str, str] | None = None,
    client: Any = None,
) -> Any:
    """The local engine over a PySpark DataFrame through ``mapInPandas``: a lazy Spark DataFrame of results
    (see the module docstring for its schema).

    Args:
        sdf: A PySpark DataFrame of property sets.
        flags: Flag keys to evaluate. None: every flag of the definitions.
        definitions: The flag definitions (broadcast to the executors).
        mode: ``"server"`` or ``"sdk"``.
        payloads: Add ``<key>:payload`` columns.
        group_type_mapping: ``{group type index: name}``. None: the definitions'.
        client: A sync ``Client`` that fills the cohorts and group type names the definitions lack (a
            flags DataFrame carries neither) from its project, before anything is sent to the cluster. None:
            they stay missing (those answers are NA) and an `IncompleteDefinitionsWarning` says so.

    Returns:
        A lazy Spark DataFrame of results.
    """
    if type(sdf).__module__.split(".", 1)[0] != "pyspark":
        raise SimulationInputError(f"simulate_spark needs a PySpark DataFrame, got {type(sdf).__name__}.")
    defs = live_flags(load_definitions(definitions))
    if group_type_mapping:
        defs.group_type_mapping.update({str(k): str(v) for k, v in group_type_mapping.items()})
    defs = fill(defs, client)
    keys = check_flag_keys(flags, defs.keys)
    warn_unfilled(defs, keys, groups_matter=mode == "sdk" or has_group_columns(sdf.columns))
    shared = sdf.sparkSession.sparkContext.broadcast(defs)  # sent to each executor once
    schema = ", ".join(f"`{name}` {kind}" for name, kind in spark_columns(defs, keys, payloads=payloads))

    def run(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        yield from spark_batches(batches, shared.value, mode=mode, keys=keys, payloads=payloads)

    return sdf.mapInPandas(run, schema=schema)
