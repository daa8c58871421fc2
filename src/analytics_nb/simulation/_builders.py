"""Property-set builders: a cartesian grid, a sample of real persons, and a seeded random generator."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from analytics_nb.simulation._errors import SimulationInputError

__all__ = ["grid", "random_property_sets", "sample_persons"]


def _check_values(name: str, values: Any) -> list[Any]:
    if isinstance(values, str | bytes) or not isinstance(
        values, Sequence | np.ndarray | pd.Series | pd.Index
    ):
        raise SimulationInputError(
            f"grid: values of {name!r} must be a list (e.g. {{{name!r}: ['a', 'b']}}), not "
            f"{type(values).__name__}.",
            column=name,
        )
    out = list(values)
    if not out:
        raise SimulationInputError(f"grid: {name!r} has no values; give at least one.", column=name)
    return out


def grid(
    properties: Mapping[str, Sequence[Any]],
    ids_per_cell: int = 1,
    seed: int = 0,
    *,
    id_prefix: str = "sim",
) -> pd.DataFrame:
    """Cartesian product of property values with ``ids_per_cell`` distinct ids per cell.

    Ids are deterministic for a ``seed`` (``sim-<seed>-<cell>-<n>``), so re-running a grid hashes the same
    persons into the same buckets; change the seed to draw a fresh set of persons.

    Args:
        properties: ``{property: values}``; every combination is a cell.
        ids_per_cell: How many distinct persons per cell (more gives smoother rollout shares).
        seed: Picks the set of ids; the same seed gives the same persons.
        id_prefix: The ids' prefix.

    Returns:
        A frame with ``distinct_id`` and one column per property.
    """
    if not isinstance(properties, Mapping) or not properties:
        raise SimulationInputError(
            "grid: give a dict of property -> list of values, e.g. {'country': ['US']}."
        )
    if not isinstance(ids_per_cell, int | np.integer) or ids_per_cell < 1:
        raise SimulationInputError(f"grid: ids_per_cell must be a positive integer, not {ids_per_cell!r}.")
    if "distinct_id" in properties:
        raise SimulationInputError(
            "grid: 'distinct_id' is generated; do not list it as a property.", column="distinct_id"
        )
    names = [str(k) for k in properties]
    columns = [_check_values(k, v) for k, v in zip(names, properties.values(), strict=True)]
    cells = list(itertools.product(*columns))
    n_cells = len(cells)
    k = int(ids_per_cell)
    data: dict[str, Any] = {
        "distinct_id": [f"{id_prefix}-{seed}-{c}-{j}" for c in range(n_cells) for j in range(k)]
    }
    for pos, name in enumerate(names):
        values = [cell[pos] for cell in cells for _ in range(k)]
        data[name] = values
    frame = pd.DataFrame(data)
    for pos, name in enumerate(names):
        # keep the caller's value types (ints stay ints); mixed types stay as objects
        kinds = {type(v) for v in columns[pos]}
        if len(kinds) > 1:
            frame[name] = pd.Series(data[name], dtype=object)
    return frame


def sample_persons(
    persons: pd.DataFrame,
    n: int,
    seed: int | None = 0,
    *,
    replace: bool = False,
    id_column: str = "distinct_id",
    properties: Sequence[str] | None = None,
) -> pd.DataFrame:
    """A reproducible random sample of ``n`` rows from a DataFrame of real persons (one per distinct id).

    ``properties`` limits the property columns kept; with ``replace=True`` repeated persons get a ``-<k>``
    suffix so every property set keeps its own id.

    Args:
        persons: The persons: one row per distinct id.
        n: The sample size.
        seed: The sampling seed. None: a fresh random sample every call.
        replace: Sample with replacement (allows ``n`` above the number of persons).
        id_column: The column holding the distinct ids (renamed ``distinct_id``).
        properties: The property columns to keep. None: all.

    Returns:
        A frame with ``distinct_id`` and the property columns.
    """
    if not isinstance(persons, pd.DataFrame):
        raise SimulationInputError(
            f"sample_persons: persons must be a DataFrame, not {type(persons).__name__}."
        )
    if id_column not in persons.columns:
        raise SimulationInputError(
            f"sample_persons: no {id_column!r} column; pass id_column= naming the persons' id column.",
            column=id_column,
        )
    if not isinstance(n, int | np.integer) or n < 0:
        raise SimulationInputError(f"sample_persons: n must be a non-negative integer, not {n!r}.")
    pool = persons.drop_duplicates(subset=[id_column])
    if not replace and n > len(pool):
        raise SimulationInputError(
            f"sample_persons: asked for {n} persons but there are only {len(pool)} distinct ones; lower n or "
            "pass replace=True."
        )
    cols = (
        list(pool.columns) if properties is None else [id_column, *[c for c in properties if c != id_column]]
    )
    missing = [c for c in cols if c not in pool.columns]
    if missing:
        raise SimulationInputError(
            f"sample_persons: no column {missing[0]!r}; properties= must name columns of persons.",
            column=missing[0],
        )
    out = pool[cols].sample(n=int(n), replace=replace, random_state=seed)
    out = out.rename(columns={id_column: "distinct_id"})
    if replace:
        ids = out["distinct_id"].astype(str)
        rep = ids.groupby(ids).cumcount()
        out["distinct_id"] = ids.where(rep == 0, ids + "-" + rep.astype(str))
    return out.reset_index(drop=True)


def random_property_sets(
    n: int,
    schema: Mapping[str, Any],
    seed: int | None = 0,
    *,
    id_prefix: str = "rnd",
) -> pd.DataFrame:
    """``n`` random property sets drawn from ``schema`` with a seeded generator.

    ``schema`` maps a property to a list of values (drawn uniformly), a ``(low, high)`` tuple (ints give
    integers in [low, high], floats a uniform float in [low, high)), or a callable ``f(rng, n) -> n values``.

    Args:
        n: How many property sets.
        schema: ``{property: values | (low, high) | f(rng, n)}``.
        seed: The generator's seed. None: a fresh random draw every call.
        id_prefix: The ids' prefix.

    Returns:
        A frame with ``distinct_id`` and one column per property.
    """
    if not isinstance(n, int | np.integer) or n < 0:
        raise SimulationInputError(f"random_property_sets: n must be a non-negative integer, not {n!r}.")
    if not isinstance(schema, Mapping):
        raise SimulationInputError(
            "random_property_sets: schema must be a dict of property -> values/range/callable."
        )
    rng = np.random.default_rng(seed)
    n = int(n)
    data: dict[str, Any] = {"distinct_id": [f"{id_prefix}-{seed}-{i}" for i in range(n)]}
    for name, spec in schema.items():
        name = str(name)
        if name == "distinct_id":
            raise SimulationInputError(
                "random_property_sets: 'distinct_id' is generated; drop it from schema.", column=name
            )
        if callable(spec):
            fn: Callable[..., Any] = spec
            values = list(fn(rng, n))
            if len(values) != n:
                raise SimulationInputError(
                    f"random_property_sets: the callable for {name!r} returned {len(values)} values, "
                    f"not {n}; "
                    "it is called as f(rng, n) and must return n values.",
                    column=name,
                )
            data[name] = values
        elif (
            isinstance(spec, tuple)
            and len(spec) == 2
            and all(
                isinstance(x, int | float | np.integer | np.floating) and not isinstance(x, bool)
                for x in spec
            )
        ):
            low, high = spec
            if high < low:
                raise SimulationInputError(
                    f"random_property_sets: range for {name!r} has high < low ({spec!r}).", column=name
                )
            if isinstance(low, int | np.integer) and isinstance(high, int | np.integer):
                data[name] = rng.integers(int(low), int(high), size=n, endpoint=True)
            else:
                data[name] = rng.uniform(float(low), float(high), size=n)
        elif isinstance(spec, Sequence | np.ndarray | pd.Series) and not isinstance(spec, str | bytes):
            choices = list(spec)
            if not choices:
                raise SimulationInputError(f"random_property_sets: {name!r} has no values.", column=name)
            idx = rng.integers(0, len(choices), size=n)
            data[name] = [choices[i] for i in idx]
            if len({type(v) for v in choices}) > 1:
                data[name] = pd.Series(data[name], dtype=object)
        else:
            raise SimulationInputError(
                f"random_property_sets: schema entry {name!r} must be a list of values, a (low, high) tuple "
                f"or a callable f(rng, n); got {type(spec).__name__}.",
                column=name,
            )
    return pd.DataFrame(data)
