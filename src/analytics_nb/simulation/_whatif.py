"""What-if: re-run local evaluation with edited definitions and show who moves from which value to which.

The `FrameEvaluator` caches each (flag, row) hash, so rollout and variant-weight edits re-run in milliseconds.
"""

from __future__ import annotations

import copy
import dataclasses
import html
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from analytics_nb.client import AsyncApiClient
from analytics_nb.flags import MissingReferences
from analytics_nb.simulation._definitions import (
    Definitions,
    fill,
    flag_references,
    live_flags,
    load_definitions,
    missing_in,
    warn_found,
)
from analytics_nb.simulation._errors import SimulationInputError
from analytics_nb.simulation._inputs import (
    PropertySets,
    check_flag_keys,
    normalise_property_sets,
    output_choice,
    read_table,
)
from analytics_nb.simulation._local import (
    MissingColumns,
    check_missing_columns,
    conform,
    make_evaluator,
    warn_missing_properties,
)
from analytics_nb.simulation._output import flag_columns
from analytics_nb.tables import Output, default_output, family_of, from_pandas
from analytics_nb.wire.cells import is_missing

__all__ = [
    "WhatIf",
    "WhatIfResult",
    "whatif",
    "with_condition",
    "with_rollout",
    "with_variant_weights",
    "without_condition",
]


# ----------------------------------------------------------------------------------------------------
# Editing helpers: each returns edited copies in the kind of definitions it was given.


def _flag(defs: Definitions, key: str) -> dict[str, Any]:
    for f in defs.flags:
        if f["key"] == key:
            f.setdefault("filters", {})
            return f
    raise SimulationInputError(
        f"no flag {key!r} in the definitions; known flags: {', '.join(map(repr, defs.keys)) or '(none)'}.",
        key=key,
    )


def _groups(flag: dict[str, Any]) -> list[dict[str, Any]]:
    filters = flag["filters"]
    groups = filters.get("groups")
    if groups is None:
        groups = filters["groups"] = []
    result: list[dict[str, Any]] = groups
    return result


def _check_index(flag: dict[str, Any], condition: int) -> None:
    groups = _groups(flag)
    if not isinstance(condition, int) or not -len(groups) <= condition < len(groups):
        raise SimulationInputError(
            f"flag {flag['key']!r} has {len(groups)} condition set(s) (0 to {len(groups) - 1}); condition="
            f"{condition!r} does not exist.",
            key=flag["key"],
        )


def _check_pct(pct: Any, what: str, key: str) -> float | int:
    if (
        isinstance(pct, bool)
        or not isinstance(pct, int | float | np.integer | np.floating)
        or not 0 <= pct <= 100
    ):
        raise SimulationInputError(
            f"{what} of flag {key!r} must be a number from 0 to 100, not {pct!r}.", key=key
        )
    return pct.item() if isinstance(pct, np.generic) else pct


def with_rollout(definitions: Any, key: str, pct: float | None, condition: int = 0) -> Any:
    """Definitions with condition set ``condition`` of flag ``key`` at ``pct`` percent (None = all).

    Args:
        definitions: The definitions to edit (not modified: a copy is returned).
        key: The flag key.
        pct: The new rollout percentage, 0 to 100; None means everyone who matches.
        condition: The 0-based index of the condition set to change.

    Returns:
        A copy of the definitions with the new rollout.
    """
    defs = load_definitions(definitions)
    flag = _flag(defs, key)
    _check_index(flag, condition)
    value = None if pct is None else _check_pct(pct, "rollout percentage", key)
    _groups(flag)[condition]["rollout_percentage"] = value
    return defs.export()


def with_variant_weights(definitions: Any, key: str, weights: Mapping[str, float]) -> Any:
    """Definitions with flag ``key``'s variant percentages set from ``weights`` (must sum to 100).

    Variants not named get 0; a new name adds a variant.

    Args:
        definitions: The definitions to edit (not modified: a copy is returned).
        key: The multivariate flag's key.
        weights: ``{variant key: percentage}``, summing to 100.

    Returns:
        A copy of the definitions with the new weights.
    """
    defs = load_definitions(definitions)
    flag = _flag(defs, key)
    if not isinstance(weights, Mapping) or not weights:
        raise SimulationInputError(
            f"weights for flag {key!r} must be a dict of variant -> percentage, "
            "e.g. {'control': 50, 'test': 50}.",
            key=key,
        )
    checked = {str(k): _check_pct(v, f"variant {k!r} weight", key) for k, v in weights.items()}
    total = sum(checked.values())
    if abs(total - 100) > 1e-9:
        raise SimulationInputError(
            f"variant weights for flag {key!r} sum to {total:g}, not 100; adjust them so they add up to 100.",
            key=key,
        )
    mv = flag["filters"].get("multivariate") or {}
    variants = [dict(v) for v in (mv.get("variants") or [])]
    if not variants:
        raise SimulationInputError(
            f"flag {key!r} is a boolean flag (no variants); use with_rollout to change who gets it.", key=key
        )
    names = [v.get("key") for v in variants]
    for v in variants:
        v["rollout_percentage"] = checked.get(str(v.get("key")), 0)
    for name, pct in checked.items():
        if name not in names:
            variants.append({"key": name, "name": name, "rollout_percentage": pct})
    flag["filters"]["multivariate"] = {**mv, "variants": variants}
    return defs.export()


def _property_filters(properties: Any, key: str) -> list[dict[str, Any]]:
    if properties is None:
        return []
    if isinstance(properties, Mapping):  # shorthand: {"country": "US", "plan": ["pro", "team"]}
        return [
            {
                "key": str(k),
                "value": v if not isinstance(v, tuple | set) else list(v),
                "operator": "exact",
                "type": "person",
            }
            for k, v in properties.items()
        ]
    if isinstance(properties, Sequence) and not isinstance(properties, str):
        out: list[dict[str, Any]] = []
        for p in properties:
            if hasattr(p, "model_dump"):
                p = p.model_dump(by_alias=True, mode="json", exclude_unset=True)
            if not isinstance(p, Mapping) or "key" not in p:
                raise SimulationInputError(
                    f"condition properties for flag {key!r} must be dicts like {{'key': 'country', 'value': "
                    "'US', 'operator': 'exact', 'type': 'person'}.",
                    key=key,
                )
            out.append({"type": "person", "operator": "exact", **dict(p)})
        return out
    raise SimulationInputError(
        f"condition properties for flag {key!r} must be a dict shorthand {{'country': 'US'}} or a list of "
        "property filter dicts.",
        key=key,
    )


def with_condition(
    definitions: Any,
    key: str,
    properties: Any = None,
    rollout_percentage: float | None = 100,
    *,
    variant: str | None = None,
    index: int | None = None,
) -> Any:
    """Definitions with a condition set added to flag ``key`` (appended, or inserted at ``index``).

    ``properties`` is a shorthand dict ``{"country": "US"}`` (exact matches on person properties, a list value
    means "any of") or a list of property filter dicts.

    Args:
        definitions: The definitions to edit (not modified: a copy is returned).
        key: The flag key.
        properties: The condition's filters: a shorthand dict or a list of property filter dicts. None:
            everyone.
        rollout_percentage: The condition's rollout, 0 to 100. None: 100.
        variant: A variant override for the condition. None: the flag's weights.
        index: Where to insert the condition set. None: appended.

    Returns:
        A copy of the definitions with the condition set added.
    """
    defs = load_definitions(definitions)
    flag = _flag(defs, key)
    group: dict[str, Any] = {"properties": _property_filters(properties, key)}
    group["rollout_percentage"] = (
        None if rollout_percentage is None else _check_pct(rollout_percentage, "rollout percentage", key)
    )
    if variant is not None:
        group["variant"] = variant
    groups = _groups(flag)
    if index is None:
        groups.append(group)
    else:
        groups.insert(index, group)
    return defs.export()


def without_condition(definitions: Any, key: str, condition: int) -> Any:
    """Definitions with condition set ``condition`` (0-based) removed from flag ``key``.

    Args:
        definitions: The definitions to edit (not modified: a copy is returned).
        key: The flag key.
        condition: The 0-based index of the condition set to remove.

    Returns:
        A copy of the definitions without that condition set.
    """
    defs = load_definitions(definitions)
    flag = _flag(defs, key)
    _check_index(flag, condition)
    del _groups(flag)[condition]
    return defs.export()


# ----------------------------------------------------------------------------------------------------
# Running what-ifs.


def _na(value: Any) -> Any:
    if is_missing(value):  # None, pd.NA or NaN: whichever the column's dtype uses
        return pd.NA
    return value.item() if isinstance(value, np.generic) else value


@dataclass(repr=False)
class WhatIfResult:
    """Changes from the current to the edited definitions, from `WhatIf` (in memory) or from a Dask
    result's ``whatif`` (one class for both).

    ``moves``: flag, from, to, count (over Dask counted on the cluster). In memory ``base`` / ``edited`` are
    the two result frames and ``changes`` has a line per moved row and flag (row, distinct_id, flag, from,
    to); over Dask ``base`` / ``edited`` are the lazy `SimulationResult` objects and ``changes`` is None (the
    rows are not brought back: ``edited.frame`` holds them).
    """

    base: Any  # pandas frame; over Dask the lazy base SimulationResult
    edited: Any  # pandas frame; over Dask the lazy edited SimulationResult
    moves: pd.DataFrame
    changes: pd.DataFrame | None
    elapsed: float
    output: Output = "pandas"  # the family of ``base_data`` / ``edited_data`` (the property sets' family)

    @property
    def lazy(self) -> bool:
        """Over Dask: ``base`` and ``edited`` are lazy results, ``changes`` is None."""
        return not isinstance(self.base, pd.DataFrame)

    @property
    def base_data(self) -> Any:
        """``base`` in the property sets' family (Polars in, Polars out; Arrow in, Arrow out; over Dask
        collected)."""
        return self.base.to(self.output) if self.lazy else from_pandas(self.base, self.output)

    @property
    def edited_data(self) -> Any:
        """``edited`` in the property sets' family (over Dask collected)."""
        return self.edited.to(self.output) if self.lazy else from_pandas(self.edited, self.output)

    def __repr__(self) -> str:
        moved = int(self.moves["count"].sum()) if len(self.moves) else 0
        if self.changes is None:
            return (
                f"WhatIfResult(engine='dask', moves={len(self.moves)}, moved={moved}, "
                f"elapsed={self.elapsed:.3f}s)"
            )
        rows = self.changes["row"].nunique() if len(self.changes) else 0
        return (
            f"WhatIfResult(rows={len(self.base)}, moved_rows={rows}, moves={len(self.moves)}, "
            f"elapsed={self.elapsed:.3f}s)"
        )

    def _repr_html_(self) -> str:
        return f"<div><p><b>{html.escape(repr(self))}</b></p>{self.moves.to_html(index=False)}</div>"


_BOOL_VALUES = np.array([False, True, pd.NA], dtype=object)


def _codes(a: pd.Series, b: pd.Series, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Comparable integer codes of two value columns, and the value of each code (NA last)."""
    if str(a.dtype) == "boolean" and str(b.dtype) == "boolean":  # fast path: 0 False, 1 True, 2 NA
        ca = a.to_numpy(dtype=np.int8, na_value=2)
        cb = b.to_numpy(dtype=np.int8, na_value=2)
        return ca, cb, _BOOL_VALUES
    both = pd.concat([a.reset_index(drop=True), b.reset_index(drop=True)], ignore_index=True)
    codes, uniques = pd.factorize(both, use_na_sentinel=True)
    # flag values are True / False / variant text / NA, so factorising never merges 1 with True
    values = np.array([*(_na(v) for v in uniques), pd.NA], dtype=object)  # code -1 -> the trailing NA
    k = len(values)
    return np.where(codes[:n] < 0, k - 1, codes[:n]), np.where(codes[n:] < 0, k - 1, codes[n:]), values


def diff_frames(
    base: pd.DataFrame, edited: pd.DataFrame, keys: Sequence[str]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(moves, changes)`` between two result frames over ``keys`` (vectorised: factorised value codes)."""
    n = len(base)
    labels = base.index.to_numpy(dtype=object)
    ids = base["distinct_id"].to_numpy(dtype=object)
    missing = pd.Series(pd.NA, index=base.index, dtype=object)
    move_parts: list[pd.DataFrame] = []
    change_parts: list[pd.DataFrame] = []
    for key in keys:
        a = base[key] if key in base.columns else missing
        b = edited[key] if key in edited.columns else missing
        ca, cb, values = _codes(a, b, n)
        k = len(values)
        changed = ca != cb
        if not changed.any():
            continue
        change_parts.append(
            pd.DataFrame(
                {
                    "row": labels[changed],
                    "distinct_id": ids[changed],
                    "flag": key,
                    "from": values[ca[changed]],
                    "to": values[cb[changed]],
                }
            )
        )
        pairs, counts = np.unique(ca[changed].astype(np.int64) * k + cb[changed], return_counts=True)
        order = np.argsort(-counts, kind="stable")
        move_parts.append(
            pd.DataFrame(
                {
                    "flag": key,
                    "from": values[pairs[order] // k],
                    "to": values[pairs[order] % k],
                    "count": counts[order].astype("int64"),
                }
            )
        )
    if move_parts:
        moves = pd.concat(move_parts, ignore_index=True)
        changes = pd.concat(change_parts, ignore_index=True)
    else:
        moves = pd.DataFrame(
            {
                "flag": pd.Series([], dtype=object),
                "from": pd.Series([], dtype=object),
                "to": pd.Series([], dtype=object),
                "count": pd.Series([], dtype="int64"),
            }
        )
        changes = pd.DataFrame(
            {c: pd.Series([], dtype=object) for c in ("row", "distinct_id", "flag", "from", "to")}
        )
    for frame in (moves, changes):
        for c in ("from", "to"):
            frame[c] = frame[c].astype(object)
    return moves[["flag", "from", "to", "count"]], changes


class WhatIf:
    """A reusable what-if session: property sets and current definitions evaluated once, then ``run(edited)``.

    Build it from property sets (pandas, Polars, Arrow, DuckDB, a parquet path, a list of dicts) or an
    existing `FrameEvaluator`; every ``run`` reuses the evaluator's cached hashes. ``output=`` picks the
    family of the result's ``base_data`` / ``edited_data`` (default: the property sets' family).
    ``missing_columns`` is as in `simulate`: a property the sets have no column for is unknown (answers that
    depend on it are NA, with one `MissingPropertyWarning`) unless ``"not_set"``.

    Args:
        property_sets: One row per person (any family `simulate` takes), or a `FrameEvaluator` already built
            on them.
        definitions: The current flag definitions, in any shape `flags.read_definitions` reads.
        flags: The flags to compare. None: every flag.
        mode: ``"server"`` (the flags service) or ``"sdk"`` (the SDKs' local evaluation).
        group_type_mapping: ``{index: group type}`` added to the definitions'.
        output: The family of ``base_data`` / ``edited_data``. None: the property sets' family.
        missing_columns: ``"unknown"`` (NA with a warning) or ``"not_set"`` for properties the sets lack.
        client: A sync ``Client``: definitions that lack the cohorts or group type names their flags use (a
            flags DataFrame carries neither) are filled from its project, as `simulate` does. None: an
            `IncompleteDefinitionsWarning` names what is missing, and those answers are NA.

    Warns:
        IncompleteDefinitionsWarning: Flags use cohorts or group type names the definitions lack and no
            client filled them (once when built, and once per ``run`` for what an edit adds).
    """

    def __init__(
        self,
        property_sets: Any,
        definitions: Any,
        *,
        flags: Sequence[str] | None = None,
        mode: Literal["server", "sdk"] = "server",
        group_type_mapping: dict[str, str] | None = None,
        output: Output | None = None,
        missing_columns: MissingColumns = "unknown",
        client: Any = None,
    ) -> None:
        if isinstance(client, AsyncApiClient):
            raise TypeError(
                "client= is an AsyncClient: WhatIf runs synchronously; pass definitions="
                "await client.feature_flags.definitions() (it carries the cohorts) instead."
            )
        self.missing_columns = check_missing_columns(missing_columns)
        self.definitions = live_flags(load_definitions(definitions))
        if group_type_mapping:
            self.definitions.group_type_mapping.update(
                {str(k): str(v) for k, v in group_type_mapping.items()}
            )
        self.definitions = fill(self.definitions, client)
        self.flags = check_flag_keys(flags, self.definitions.keys)
        self.mode = mode
        self.sets: PropertySets | None = None
        chosen = output_choice(output)
        self.output: Output = chosen or "pandas"
        if family_of(property_sets) == "records" and _is_evaluator(property_sets):
            self.evaluator = property_sets
            # an evaluator built over Polars / Arrow answers in that family: so does this session
            given: Output = getattr(property_sets, "output", "pandas")
            self.output = chosen or given
        else:
            raw, family = read_table(property_sets)  # Polars / Arrow / DuckDB / parquet at the edge
            self.output = chosen or default_output(family)
            self.sets = normalise_property_sets(raw)
            self.evaluator = make_evaluator(
                self.sets, self.definitions, mode=mode, missing_columns=self.missing_columns
            )
        #: the flags already named by an `IncompleteDefinitionsWarning` (a run warns about new ones only)
        self._warned: set[str] = set()
        self._warn_new(self.definitions)
        self.base = self._run(self.definitions.flags)

    def _run(self, flags: list[dict[str, Any]], warn: Sequence[str] | None = None) -> pd.DataFrame:
        """Evaluate ``flags``; warn about answers absent properties made NA (of the flags in ``warn``,
        default all)."""
        if self.sets is not None:
            out: pd.DataFrame = self.evaluator.run(definitions=flags, payloads=False, reasons=False)
            report = getattr(self.evaluator, "missing_report", {})
            if warn is not None:
                report = {k: v for k, v in report.items() if k in warn}
            warn_missing_properties(report, len(self.sets))
            return conform(out, self.sets, None, payloads=False, reasons=False)
        # the caller's own evaluator: pandas here whatever family it answers in (``output`` converts)
        mine: pd.DataFrame = self.evaluator.run(
            definitions=flags, payloads=False, reasons=False, output="pandas"
        )
        return mine

    def run(self, edited: Any) -> WhatIfResult:
        """Evaluate ``edited`` definitions and compare with the current ones.

        Only the flags whose definition changed, and the flags that depend on them, are re-evaluated (with
        their dependencies); the other columns are the current results.

        Args:
            edited: The edited definitions (e.g. from `with_rollout`, `with_variant_weights`), any shape
                `flags.read_definitions` reads.

        Returns:
            A `WhatIfResult`: ``moves`` (flag, from, to, count) and ``changes`` (one line per moved row).
        """
        start = time.perf_counter()
        edited_defs = live_flags(load_definitions(edited))
        edited_defs.group_type_mapping = {
            **self.definitions.group_type_mapping,
            **edited_defs.group_type_mapping,
        }
        self._warn_new(edited_defs)
        if edited_defs.cohorts and edited_defs.cohorts != self.definitions.cohorts:
            if self.sets is None:
                raise SimulationInputError(
                    "the edited definitions change cohorts, which a prebuilt evaluator cannot re-run; "
                    "build the WhatIf from the property sets instead."
                )
            evaluator = make_evaluator(
                self.sets, edited_defs, mode=self.mode, missing_columns=self.missing_columns
            )
            new = conform(evaluator.run(), self.sets, None, payloads=False, reasons=False)
            warn_missing_properties(evaluator.missing_report, len(self.sets))
            affected = set(edited_defs.keys) | set(self.definitions.keys)
        else:
            affected, needed = _affected(self.definitions, edited_defs)
            new = self.base
            if affected:
                subset = [f for f in edited_defs.flags if f["key"] in needed]
                part = self._run(subset, sorted(affected)) if subset else self.base.iloc[:, :0]
                updates = {k: part[k] for k in affected if k in part.columns}
                gone = [k for k in affected if k not in part.columns and k in new.columns]
                new = new.drop(columns=gone).assign(**updates)
        keys = (
            list(self.flags)
            if self.flags is not None
            else [k for k in dict.fromkeys([*flag_columns(self.base), *flag_columns(new)]) if k in affected]
        )
        moves, changes = diff_frames(self.base, new, [k for k in keys if k in affected])
        return WhatIfResult(self.base, new, moves, changes, time.perf_counter() - start, self.output)

    def _warn_new(self, defs: Definitions) -> None:
        """Warn about the flags of ``defs`` (the current or edited definitions) that use cohorts or group
        type names the run lacks and no warning has named yet: once when built, then what an edit adds."""
        missing = self._missing_references(defs).only(self.flags)
        new = [k for k in missing.flags if k not in self._warned]
        if new:
            self._warned |= set(warn_found(missing.only(new)).flags)

    def _missing_references(self, defs: Definitions) -> MissingReferences:
        """What ``defs``'s flags use but their run lacks. The caller's evaluator runs them with its own
        cohorts and mapping (it says what it lacks); edited definitions without cohorts run with the
        current ones."""
        if self.sets is None:
            check = getattr(self.evaluator, "missing_references", None)
            return check(defs.flags) if callable(check) else MissingReferences()
        effective = defs if defs.cohorts else dataclasses.replace(defs, cohorts=self.definitions.cohorts)
        groups_matter = self.mode == "sdk" or bool(self.sets.group_key_columns)
        return missing_in(effective, groups_matter=groups_matter)


def _affected(base: Definitions, edited: Definitions) -> tuple[set[str], set[str]]:
    """(flags whose value may change, flags to evaluate for them: those plus their dependencies)."""
    old, new = base.by_key(), edited.by_key()
    changed = {k for k in set(old) | set(new) if old.get(k) != new.get(k)}
    if not changed:
        return set(), set()
    id_to_key = {str(f.get("id")): f["key"] for f in edited.flags if f.get("id") is not None}
    deps = {k: {id_to_key.get(r, r) for r in flag_references(edited, k)["flags"]} for k in new}
    affected = set(changed) | {k for k, d in deps.items() if d & changed}
    needed = set()
    for k in affected:
        if k in new:
            needed.add(k)
            needed |= {d for d in deps[k] if d in new}
    return affected, needed


def _is_evaluator(obj: Any) -> bool:
    return not isinstance(obj, pd.DataFrame | list | tuple) and callable(getattr(obj, "run", None))


def whatif(
    property_sets_or_evaluator: Any,
    base_definitions: Any,
    edited_definitions: Any,
    *,
    flags: Sequence[str] | None = None,
    mode: Literal["server", "sdk"] = "server",
    group_type_mapping: dict[str, str] | None = None,
    output: Output | None = None,
    missing_columns: MissingColumns = "unknown",
    client: Any = None,
) -> WhatIfResult:
    """Who moves from which value to which when ``base_definitions`` become ``edited_definitions``.

    For repeated edits over the same rows build a `WhatIf` once and call ``.run(edited)``.

    Args:
        property_sets_or_evaluator: Property sets, or a `FrameEvaluator` built on them.
        base_definitions: The current definitions.
        edited_definitions: The edited definitions.
        flags: The flags to compare. None: every flag.
        mode: ``"server"`` or ``"sdk"``.
        group_type_mapping: ``{index: group type}`` added to the definitions'.
        output: The family of the result's data. None: the input's.
        missing_columns: ``"unknown"`` or ``"not_set"`` for properties the sets lack.
        client: A sync ``Client`` that fills cohorts and group type names the definitions lack (as
            `WhatIf`). None: they stay missing, with one `IncompleteDefinitionsWarning`.

    Returns:
        A `WhatIfResult`.
    """
    session = WhatIf(
        property_sets_or_evaluator,
        base_definitions,
        flags=flags,
        mode=mode,
        group_type_mapping=group_type_mapping,
        output=output,
        missing_columns=missing_columns,
        client=client,
    )
    return session.run(
        copy.deepcopy(edited_definitions)
        if isinstance(edited_definitions, list | dict)
        else edited_definitions
    )
