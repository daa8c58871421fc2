"""`SimulationResult`: the result frame plus summaries, crosstabs, plots and (both-mode) the comparison."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import pandas as pd

from analytics_nb.simulation._compare import agreement_headline
from analytics_nb.simulation._errors import SimulationInputError
from analytics_nb.simulation._inputs import output_choice
from analytics_nb.simulation._output import INPUT_COLUMNS_ATTR, flag_columns
from analytics_nb.simulation._summary import crosstab, format_share, summarize, warn_unknown
from analytics_nb.tables import Output, from_pandas

__all__ = ["INPUT_COLUMNS_ATTR", "Answers", "SimulationResult", "with_inputs"]


def _outputs_only(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` without the input columns a previous ``with_inputs`` put in (named in its attrs)."""
    carried = [c for c in frame.attrs.get(INPUT_COLUMNS_ATTR, ()) if c in frame.columns]
    if not carried:
        return frame
    out = frame.drop(columns=carried)
    out.attrs = {k: v for k, v in frame.attrs.items() if k != INPUT_COLUMNS_ATTR}
    return out


def _aligned(inputs: pd.DataFrame, index: pd.Index) -> pd.DataFrame | None:
    """The inputs' rows for the result rows: by index label (partial results hold a subset), else by
    position when both have the same length; None when they cannot be matched."""
    if inputs.index.is_unique and index.isin(inputs.index).all():
        return inputs.loc[index]
    if len(inputs) == len(index):
        return inputs.set_axis(index, axis=0)
    return None


def with_inputs(outputs: pd.DataFrame, inputs: pd.DataFrame) -> pd.DataFrame:
    """The result frame with the input property columns right after ``distinct_id`` (``country``, ``plan``,
    ``group:<type>``, ...), so a frame or CSV shows what produced each row; an input column named like an
    output column (a flag key) is left out. ``frame.attrs[INPUT_COLUMNS_ATTR]`` lists the columns added."""
    outputs = _outputs_only(outputs)
    names = [c for c in inputs.columns if c != "distinct_id" and c not in outputs.columns]
    rows = _aligned(inputs[names], outputs.index) if names else None
    if rows is None:
        return outputs
    at = list(outputs.columns).index("distinct_id") + 1 if "distinct_id" in outputs.columns else 0
    frame = pd.concat([outputs.iloc[:, :at], rows, outputs.iloc[:, at:]], axis=1)
    frame.attrs = {**outputs.attrs, INPUT_COLUMNS_ATTR: [str(c) for c in names]}
    return frame


@runtime_checkable
class Answers(Protocol):
    """What every result of the simulation door offers, whichever engine computed it (local, remote, both,
    sql): the row count, the per-flag summary (the same `SUMMARY_COLUMNS`), a crosstab, the answers as
    pandas (``frame``) or another family (``to``), and files (``to_csv``, ``to_parquet``). The SQL engine's
    result keeps its answers in parquet and computes ``len``, ``summary`` and ``crosstab`` in SQL; ``frame``
    collects them."""

    def __len__(self) -> int: ...

    @property
    def frame(self) -> pd.DataFrame: ...

    def summary(self, flags: Sequence[str] | None = None) -> pd.DataFrame: ...

    def crosstab(self, flag: str, by: str) -> pd.DataFrame: ...

    def to(self, output: Output, *, inputs: bool = True) -> Any: ...

    def to_csv(self, path: str | Path, *, inputs: bool = True) -> Path: ...

    def to_parquet(self, path: str | Path, *, inputs: bool = True) -> Path: ...


@dataclass(repr=False)
class SimulationResult:
    """What `simulate` returns: ``.frame`` (distinct_id, the input property columns, one column per flag,
    ``<key>:payload``, ``error``).

    ``.frame`` keeps the property sets' columns (``country``, ``plan``, group keys, ...) beside the outputs,
    so the frame, ``to_csv`` and the panel's export say what produced each row; ``.outputs`` is the frame
    without them, and ``to_csv(path, inputs=False)`` / ``to(output, inputs=False)`` leave them out.

    In both-mode ``.frame`` is the remote result, ``.local`` / ``.remote`` both frames, ``.agreement`` the
    per-flag agreement table and ``.differences`` the differing rows with their likely cause.

    A remote (or both) run stopped by Ctrl-C returns the rows answered so far: ``.partial`` is True,
    ``.rows_done`` of ``.rows_total`` rows are in ``.frame`` (in input order), and ``.remaining`` holds the
    property sets not evaluated (pass them to ``simulate`` again to finish).
    """

    frame: pd.DataFrame
    engine: str
    inputs: pd.DataFrame
    mode: str = "server"
    variants: dict[str, list[str]] = field(default_factory=dict)
    local: pd.DataFrame | None = None
    remote: pd.DataFrame | None = None
    agreement: pd.DataFrame | None = None
    differences: pd.DataFrame | None = None
    elapsed: float | None = None
    partial: bool = False
    total: int | None = None  # the rows asked for, when the run stopped early (``rows_total``)
    remaining: pd.DataFrame | None = None  # the property sets not evaluated (partial results)
    output: Output = "pandas"  # the family ``.data`` comes back in (the input's, or simulate's output=)
    outputs: pd.DataFrame = field(init=False, repr=False)
    client: Any = field(default=None, repr=False)  # the client the run used (``verify`` asks it)

    def __post_init__(self) -> None:
        self.outputs = _outputs_only(self.frame)
        self.frame = with_inputs(self.outputs, self.inputs)

    @property
    def input_columns(self) -> list[str]:
        """The input property columns ``.frame`` carries beside the outputs."""
        return list(self.frame.attrs.get(INPUT_COLUMNS_ATTR, []))

    @property
    def data(self) -> Any:
        """``.frame`` in the caller's family: Polars in, Polars out; Arrow in, Arrow out; else pandas."""
        return self.to(self.output)

    def to(self, output: Output, *, inputs: bool = True) -> Any:
        """``.frame`` as "pandas", "polars" or "arrow" (flag columns as described in the README);
        ``inputs=False`` leaves the input property columns out.

        Args:
            output: ``"pandas"``, ``"polars"`` or ``"arrow"``.
            inputs: Keep the input property columns beside the flags.

        Returns:
            The result in that family.
        """
        return from_pandas(self.frame if inputs else self.outputs, output_choice(output) or "pandas")

    # -- basics ----------------------------------------------------------------------------------------------
    @property
    def flags(self) -> list[str]:
        """The flag keys in the result, in column order."""
        return flag_columns(self.outputs)

    @property
    def errors(self) -> pd.DataFrame:
        """The rows with an error (distinct_id and error text)."""
        mask = self.frame["error"].notna()
        return self.frame.loc[mask.to_numpy(dtype=bool), ["distinct_id", "error"]]

    @property
    def rows_done(self) -> int:
        """The rows evaluated (all of them unless the run was interrupted)."""
        return len(self.frame)

    @property
    def rows_total(self) -> int:
        """The rows asked for."""
        return self.total if self.total is not None else len(self.frame)

    def __len__(self) -> int:
        return len(self.frame)

    def _partial_note(self) -> str:
        return (
            f"partial: {self.rows_done:,} of {self.rows_total:,} rows (interrupted; "
            f".remaining holds the {self.rows_total - self.rows_done:,} property sets not evaluated)"
        )

    def __repr__(self) -> str:
        lines = [
            f"SimulationResult(engine={self.engine!r}, rows={len(self.frame)}, flags={len(self.flags)}, "
            f"errors={len(self.errors)}{', partial=True' if self.partial else ''})"
        ]
        if self.partial:
            lines.append("  " + self._partial_note())
        if self.agreement is not None and len(self.agreement):
            lines.append(f"  local vs remote: {agreement_headline(self.agreement)}")
        return "\n".join(line for line in lines if line)

    # -- summaries -------------------------------------------------------------------------------------------
    def summary(self, flags: Sequence[str] | None = None) -> pd.DataFrame:
        """Per flag and value: count, rows, share_of_rows (over every row), n (rows with a known value), share
        (over those), 95% Wilson CI, unknown rows; one `UnknownShareWarning` (and ``attrs["note"]``) when a
        flag is unknown for 10% of its rows or more.

        Args:
            flags: Only these flags. None: every flag.

        Returns:
            One row per (flag, value).
        """
        keys = self._keys(flags)
        return warn_unknown(summarize(self.frame, keys, self.variants))

    def _keys(self, flags: Sequence[str] | str | None) -> list[str]:
        if flags is None:
            return self.flags
        if isinstance(flags, str):
            flags = [flags]
        for key in flags:
            if key not in self.flags:
                raise SimulationInputError(
                    f"flag {key!r} is not in this result; it has {', '.join(map(repr, self.flags))}.", key=key
                )
        return list(flags)

    def property_values(self, name: str) -> pd.Series:
        """A property's values per row, from a column or from the ``person_properties`` dicts.

        Args:
            name: The property's name.

        Returns:
            A Series aligned with ``.frame`` (NA where a row lacks it).

        Raises:
            SimulationInputError: The property sets have no such property (the message lists those they have).
        """
        inputs = self.inputs
        if name in inputs.columns:
            return inputs[name].rename(name)
        if "person_properties" in inputs.columns:
            values = [
                c.get(name) if isinstance(c, dict) else None for c in inputs["person_properties"].tolist()
            ]
            if any(v is not None for v in values):
                return pd.Series(values, index=inputs.index, dtype=object, name=name)
        cols = [
            c for c in inputs.columns if c not in ("distinct_id", "person_properties", "group_properties")
        ]
        raise SimulationInputError(
            f"no property {name!r} in the property sets; crosstab by one of {', '.join(map(repr, cols))}.",
            column=name,
        )

    def crosstab(
        self,
        flag: str,
        by: str,
        *,
        normalize: bool | Literal["all", "index", "columns"] = False,
        margins: bool = False,
    ) -> pd.DataFrame:
        """Counts (or shares, ``normalize="index"``) of ``flag``'s values per value of property ``by``.

        Args:
            flag: The flag key.
            by: The property to break it down by.
            normalize: Shares instead of counts, as ``pandas.crosstab`` takes it (``"index"``: per property
                value).
            margins: Add row and column totals.

        Returns:
            A table of property values by flag values.
        """
        (key,) = self._keys([flag])
        return crosstab(self.frame[key], self.property_values(by), normalize=normalize, margins=margins)

    def plot(self, flags: Sequence[str] | None = None, *, ax: Any = None) -> Any:
        """Stacked bars of value shares per flag (needs matplotlib: ``pip install analytics-nb[plot]``).

        Args:
            flags: Only these flags. None: every flag.
            ax: A matplotlib axes to draw on. None: a new figure.

        Returns:
            The matplotlib axes.
        """
        from analytics_nb.simulation._plot import plot_shares

        return plot_shares(self.summary(flags), ax=ax)

    def to_csv(self, path: str | Path, *, inputs: bool = True) -> Path:
        """Write ``.frame`` to CSV (through ``analytics_nb.frames.to_csv``, so ``frames.read_csv`` reads it
        back with the same dtypes); ``inputs=False`` writes the outputs only (no input property columns).

        Args:
            path: The file to write.
            inputs: Write the input property columns too.

        Returns:
            The path written.
        """
        from analytics_nb.frames import to_csv

        path = Path(path)
        to_csv(self.frame if inputs else self.outputs, path)
        return path

    def to_parquet(self, path: str | Path, *, inputs: bool = True) -> Path:
        """Write ``.frame`` to parquet (through Arrow: the flag columns typed as in ``to("arrow")``);
        ``inputs=False`` writes the outputs only. Needs pyarrow (``pip install "analytics-nb[arrow]"``).

        Args:
            path: The file to write.
            inputs: Write the input property columns too.

        Returns:
            The path written.
        """
        try:
            import pyarrow.parquet as pq
        except ImportError as exc:  # one line naming the extra, not a bare ModuleNotFoundError
            raise ImportError('to_parquet needs pyarrow: pip install "analytics-nb[arrow]"') from exc
        path = Path(path)
        pq.write_table(self.to("arrow", inputs=inputs), path)
        return path

    # -- checks against PostHog -----------------------------------------------------------------------------
    def verify(
        self, n: int = 50, client: Any = None, *, flags: Sequence[str] | None = None, seed: int = 0
    ) -> Any:
        """Check ``n`` sampled rows against PostHog's own answer and explanation (``test_evaluation``, one
        request per row and flag, a few in flight; it needs a personal API key with ``feature_flag:read``).

        PostHog evaluates the person it **stores** under each row's distinct id: rows that carry a real
        person's properties (a PostHog export, the project's persons) are checked exactly; a differing row
        whose properties are not the stored ones says so in ``cause``. A person PostHog does not have, and
        a cell this result left NA (unknown), are counted, not called mismatches.

        Args:
            n: How many rows (without an error) to check, sampled with ``seed``.
            client: A sync `Client`. None: the client the run used.
            flags: Only these flags. None: every flag of the result.
            seed: The sample's random seed.

        Returns:
            A `Verification`: ``mismatches`` (row, distinct_id, flag, simulated, posthog, reason,
            condition_index, cause, explanation), ``checks`` (every check with its status) and
            ``summary`` (one line, also its repr).

        Raises:
            SimulationInputError: No client, a bad ``n``, or a flag the project's flag list does not have.
        """
        from analytics_nb.client import ApiClient, AsyncApiClient
        from analytics_nb.simulation._verify import averify_result

        client = client if client is not None else self.client
        if isinstance(client, AsyncApiClient):
            raise TypeError("client= is an AsyncClient: use `await result.averify(client=aclient)`.")
        if not isinstance(client, ApiClient):
            raise SimulationInputError(
                "verify asks PostHog (test_evaluation) and needs client= (a Client with a personal API key)."
            )
        return client._loop.run(averify_result(self, client.core, n=n, flags=flags, seed=seed))

    async def averify(
        self, n: int = 50, client: Any = None, *, flags: Sequence[str] | None = None, seed: int = 0
    ) -> Any:
        """`verify` for async code with an `AsyncClient`.

        Args:
            n: How many rows (without an error) to check, sampled with ``seed``.
            client: An `AsyncClient`. None: the client the run used.
            flags: Only these flags. None: every flag of the result.
            seed: The sample's random seed.

        Returns:
            A `Verification` (see `verify`).
        """
        from analytics_nb.client import AsyncApiClient
        from analytics_nb.simulation._verify import averify_result

        client = client if client is not None else self.client
        if not isinstance(client, AsyncApiClient):
            raise SimulationInputError(
                "averify needs client= (an AsyncClient); with a sync Client use verify."
            )
        return await averify_result(self, client.core, n=n, flags=flags, seed=seed)

    # -- notebooks -------------------------------------------------------------------------------------------
    def _repr_html_(self) -> str:
        head = html.escape(repr(self).splitlines()[0])
        parts = [f"<div><p><b>{head}</b></p>"]
        if self.partial:
            parts.append(f"<p><b>{html.escape(self._partial_note())}</b></p>")
        summary = summarize(self.frame, self.flags, self.variants)  # the note is shown below, not warned
        if summary.attrs.get("note"):
            parts.append(f"<p><i>{html.escape(summary.attrs['note'])}</i></p>")
        if len(summary):
            rows = "".join(
                f"<tr><td>{html.escape(str(flag))}</td><td>{html.escape(str(value))}</td><td>{count}</td>"
                f"<td>{html.escape(format_share(share, low, high))}</td></tr>"
                for flag, value, count, share, low, high in zip(
                    summary["flag"],
                    summary["value"],
                    summary["count"],
                    summary["share"].astype(float),
                    summary["ci_low"].astype(float),
                    summary["ci_high"].astype(float),
                    strict=True,
                )
            )
            parts.append(
                "<table><thead><tr><th>flag</th><th>value</th><th>count</th>"
                "<th>share [95% CI]</th></tr></thead>"
                f"<tbody>{rows}</tbody></table>"
            )
        if self.agreement is not None:
            parts.append("<p><b>Agreement local vs remote</b></p>" + self.agreement.to_html(index=False))
        parts.append(self.frame.head(10).to_html(max_cols=20))
        parts.append("</div>")
        return "".join(parts)
