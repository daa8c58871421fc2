"""The flag engine: PostHog flag matching (hash, rollout, variants, operators, cohorts, dependencies) for one
subject (`evaluate_flag`, `evaluate_flags`) or a whole table (`evaluate_frame`, `FrameEvaluator`: pandas,
Polars, Arrow, DuckDB or a parquet path, read and answered through `analytics_nb.tables`).

Pure and I/O-free (a parquet path is read by `analytics_nb.tables`, at the edge, before the engine runs).
Two modes: "server" answers what today's Rust flags service answers (the sandbox's
/decide uses it), "sdk" what posthog 7.91.1's local evaluation answers through its client (inconclusive when
it would ask the server). A definition that cannot be evaluated affects only its own flag (reason "error";
`strict=True` raises `FlagDefinitionError` instead). Regex filters run in the service's dialect with bounded
time. `to_sql` compiles the definitions to one SQL query (DuckDB, ClickHouse, Spark, BigQuery, Snowflake,
Postgres) with the same answers, or "needs the local engine" where SQL cannot be exact.
"""

from __future__ import annotations

from typing import Any

from analytics_nb.flags._definitions import CompiledFlag
from analytics_nb.flags._door import MissingPropertyWarning
from analytics_nb.flags._errors import FlagDefinitionError
from analytics_nb.flags._evaluate import (
    CompiledFlags,
    FlagResult,
    compile_flags,
    evaluate_flag,
    evaluate_flags,
)
from analytics_nb.flags._frame import (
    REASON_CODES,
    FrameEvaluator,
    evaluate_frame,
    is_group_key_column,
    reason_dtype,
)
from analytics_nb.flags._hashing import hash_fraction
from analytics_nb.flags._incomplete import (
    IncompleteDefinitionsWarning,
    MissingReferences,
    missing_references,
    warn_incomplete,
    warn_missing,
)
from analytics_nb.flags._operators import PROPERTY_OPERATORS
from analytics_nb.flags._reader import Definitions, DefinitionsError, read_definitions
from analytics_nb.flags._sql import SqlQuery, compile_sql, to_sql

__all__ = [
    "PROPERTY_OPERATORS",
    "REASON_CODES",
    "REASON_DTYPE",
    "CompiledFlag",
    "CompiledFlags",
    "Definitions",
    "DefinitionsError",
    "FlagDefinitionError",
    "FlagResult",
    "FrameEvaluator",
    "IncompleteDefinitionsWarning",
    "MissingPropertyWarning",
    "MissingReferences",
    "SqlQuery",
    "compile_flags",
    "compile_sql",
    "evaluate_flag",
    "evaluate_flags",
    "evaluate_frame",
    "hash_fraction",
    "is_group_key_column",
    "missing_references",
    "read_definitions",
    "to_sql",
    "warn_incomplete",
    "warn_missing",
]


def __getattr__(name: str) -> Any:
    """``REASON_DTYPE``, the categories of every `<key>:reason` column, built on first use (see
    `reason_dtype`)."""
    if name == "REASON_DTYPE":
        return reason_dtype()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
