"""The optional engines (DuckDB, chDB, PySpark, Dask, Polars, PyArrow, SQLGlot), imported only when used: a
missing one is one line naming the extra that installs it, not a bare ``No module named 'duckdb'``."""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["EXTRA_OF", "MissingExtraError", "require", "require_extra"]

#: the top-level module -> the extra of ``pyproject.toml`` that installs it
EXTRA_OF = {
    "duckdb": "sql",
    "sqlglot": "sql",
    "pyarrow": "arrow",
    "polars": "polars",
    "dask": "dask",
    "distributed": "dask",
    "chdb": "chdb",
    "pyspark": "spark",
}
#: an extra -> the modules it must make importable (checked before a run starts)
MODULES_OF = {
    "sql": ("duckdb", "pyarrow", "sqlglot"),
    "chdb": ("chdb", "pyarrow", "sqlglot"),
    "spark": ("pyspark", "pyarrow", "sqlglot"),
    "dask": ("dask", "distributed", "pyarrow"),
}


class MissingExtraError(ImportError):
    """An optional engine is not installed; the message names the extra that installs it (an ImportError,
    so ``except ImportError`` still catches it)."""


def require(module: str, purpose: str, extra: str | None = None) -> ModuleType:
    """``module`` imported, or `MissingExtraError`: ``<purpose> needs <module>, which is not installed: pip
    install "analytics-nb[<extra>]"`` (the extra from `EXTRA_OF` unless given)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        top = module.split(".", 1)[0]
        name = extra or EXTRA_OF.get(top, top)
        raise MissingExtraError(
            f'{purpose} needs {top}, which is not installed: pip install "analytics-nb[{name}]"', name=top
        ) from None


def require_extra(extra: str, purpose: str) -> None:
    """Every module of ``extra`` importable, checked before a run starts (`MissingExtraError` otherwise)."""
    for module in MODULES_OF[extra]:
        require(module, purpose, extra)
