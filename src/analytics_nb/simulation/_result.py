"""`SimulationResult`: the one result of every engine (issue 34): the answers, summaries, crosstabs, plots,
files and (both-mode) the comparison.

The result asks its `AnswerSource` (`simulation._answers`) for counts, tables and rows: the answers in memory
(local, remote, both) or where a lazy engine keeps them (Dask: counted on the cluster, collected only by
``to(...)``); ``summary()`` is built from the source's counts in one place for every engine."""

from __future__ import annotations

import html
import numbers
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import pandas as pd

from analytics_nb.flags._door import MissingReport, warn_missing_properties
from analytics_nb.simulation._answers import BATCH_ROWS, AnswerSource, Backend, FrameSource, property_values
from analytics_nb.simulation._compare import agreement_headline
from analytics_nb.simulation._errors import SimulationInputError
from analytics_nb.simulation._inputs import output_choice
from analytics_nb.simulation._output import INPUT_COLUMNS_ATTR
from analytics_nb.simulation._summary import Z95, format_share, summary_from_counts, warn_unknown
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
    position when both have the same length; None when they cannot be matched. The same rows in the same
    order are the inputs themselves (copy-on-write: no copy; a take would copy every input column, ~1 GB
    at 10M rows)."""
    if index.equals(inputs.index):
        return inputs
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
    sql, dask): the row count, the per-flag summary (the same `SUMMARY_COLUMNS`), a crosstab, the answers as
    pandas (``frame``; over Dask the lazy Dask frame) or another family (``to``), and files (``to_csv``,
    ``to_parquet``). `SimulationResult` satisfies it for every engine; the engines themselves implement the
    smaller `AnswerSource` the result reads."""

    def __len__(self) -> int: ...

    @property
    def frame(self) -> pd.DataFrame: ...

    def summary(self, flags: Sequence[str] | None = None) -> pd.DataFrame: ...

    def crosstab(self, flag: str, by: str) -> pd.DataFrame: ...

    def to(self, output: Output, *, inputs: bool = True) -> Any: ...

    def batches(self, rows: int = BATCH_ROWS, *, inputs: bool = True) -> Iterator[pd.DataFrame]: ...

    def to_csv(self, path: str | Path, *, inputs: bool = True) -> Path: ...

    def to_parquet(self, path: str | Path, *, inputs: bool = True) -> Path: ...


@dataclass(repr=False)
class SimulationResult:
    """What `simulate` returns, for every engine (local, remote, both, sql) and what `simulate_dask` returns:
    ``len()``, ``summary()``, ``crosstab()``, ``to("pandas" | "polars" | "arrow")``, ``batches()``,
    ``to_csv`` / ``to_parquet``, computed by the engine's `AnswerSource` where the answers lie.

    ``.frame`` (distinct_id, the input property columns, one column per flag, ``<key>:payload``, ``error``;
    ``distinct_id`` is pandas 3's ``str`` when the input ids are text, ``object`` for integer ids) keeps the
    property sets' columns (``country``, ``plan``, group keys, ...) beside the outputs, so the frame,
    ``to_csv`` and the panel's export say what produced each row; ``.outputs`` is the frame without them,
    and ``to_csv(path, inputs=False)`` / ``to(output, inputs=False)`` leave them out.

    Over Dask (``engine == "dask"``) the answers stay lazy: ``.frame`` is the lazy Dask DataFrame of outputs
    (``.frame.persist()``, ``.frame.to_parquet(...)``), ``summary()`` and ``crosstab()`` count on the
    cluster, ``to_parquet`` writes one file per partition from the workers, ``to("pandas")`` collects, and
    ``whatif(edited)`` re-runs only the edited flags there.

    In both-mode ``.frame`` is the remote result, ``.local`` / ``.remote`` both frames, ``.agreement`` the
    per-flag agreement table and ``.differences`` the differing rows with their likely cause.

    A remote (or both) run stopped by Ctrl-C returns the rows answered so far: ``.partial`` is True,
    ``.rows_done`` of ``.rows_total`` rows are in ``.frame`` (in input order), and ``.remaining`` holds the
    property sets not evaluated (pass them to ``simulate`` again to finish).
    """

    frame: Any  # pandas; the lazy Dask DataFrame of outputs over Dask
    engine: str
    inputs: Any  # the property sets: pandas; the Dask DataFrame over Dask
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
    outputs: Any = field(init=False, repr=False)
    client: Any = field(default=None, repr=False)  # the client the run used (``verify`` asks it)
    #: the local engine's report of answers absent columns made NA (None: none was kept)
    missing: MissingReport | None = field(default=None, repr=False)
    #: a lazy engine's settings (Dask): it makes the `AnswerSource` over ``frame``; None: in memory
    backend: Backend | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.backend is not None:  # a lazy engine's frame holds the outputs only
            self.outputs = self.frame
            return
        self.outputs = _outputs_only(self.frame)
        self.frame = with_inputs(self.outputs, self.inputs)

    @property
    def source(self) -> AnswerSource:
        """The engine's answers behind this result (made over the current ``frame`` each time it is read)."""
        if self.backend is not None:
            return self.backend.source(self.frame, self.inputs)
        return FrameSource(self.outputs, self.frame, self.inputs, self.missing)

    @property
    def lazy(self) -> bool:
        """The answers are computed only when asked (Dask): the repr and notebook view count nothing."""
        return self.source.lazy

    @property
    def input_columns(self) -> list[str]:
        """The input property columns ``.frame`` carries beside the outputs."""
        return list(getattr(self.frame, "attrs", {}).get(INPUT_COLUMNS_ATTR, []))

    @property
    def data(self) -> Any:
        """``.frame`` in the caller's family: Polars in, Polars out; Arrow in, Arrow out; else pandas."""
        return self.to(self.output)

    def to(self, output: Output, *, inputs: bool = True) -> Any:
        """The answers as "pandas", "polars" or "arrow" (flag columns as described in the README), collected
        from the engine (a lazy one computes them here); ``inputs=False`` leaves the input property columns
        out.

        Args:
            output: ``"pandas"``, ``"polars"`` or ``"arrow"``.
            inputs: Keep the input property columns beside the flags.

        Returns:
            The result in that family.
        """
        return from_pandas(self.source.collect(inputs=inputs), output_choice(output) or "pandas")

    def batches(self, rows: int = BATCH_ROWS, *, inputs: bool = True) -> Iterator[pd.DataFrame]:
        """The answers ``rows`` at a time, in input order, as pandas frames: each one exactly the matching
        slice of ``.frame`` (``inputs=False``: of ``.outputs``): the same columns, dtypes, index labels and
        values. Only one batch is in memory at a time, so answers larger than memory can be walked or
        written: over ``engine="sql"`` each batch is a range of rows read from DuckDB's answers file (and the
        input columns of those rows), over Dask one partition computed at a time (in slices of ``rows``);
        in memory they are slices of ``.frame``. A result without rows yields one empty frame (its columns).
        ``to_parquet`` and (unless the answers are in memory already) ``to_csv`` write through it.

        Named like pyarrow's ``Dataset.to_batches`` / DuckDB's ``fetch_record_batch``, but the batches are
        pandas frames in the result's shape, not Arrow record batches.

        Args:
            rows: The most rows in one batch (the last one may have fewer).
            inputs: Keep the input property columns beside the flags (as ``.frame``); False: as
                ``.outputs``.

        Returns:
            An iterator of DataFrames (each call starts again from the first row).

        Raises:
            SimulationInputError: ``rows`` is not a positive whole number.

        Example:
            ```python
            for batch in result.batches(1_000_000):
                upload(batch)  # 1M rows in memory at a time
            ```
        """
        if isinstance(rows, bool) or not isinstance(rows, numbers.Integral) or rows < 1:
            raise SimulationInputError(f"batches(rows={rows!r}): rows must be a whole number of at least 1.")
        return self.source.batches(int(rows), inputs=inputs)

    # -- basics ----------------------------------------------------------------------------------------------
    @property
    def flags(self) -> list[str]:
        """The flag keys in the result, in column order."""
        return self.source.keys

    @property
    def flag_keys(self) -> list[str]:
        """The flag keys (``flags``; the name `simulate_dask`'s result had)."""
        return self.flags

    @property
    def errors(self) -> pd.DataFrame:
        """The rows with an error (distinct_id and error text)."""
        return self.source.errors()

    @property
    def rows_done(self) -> int:
        """The rows evaluated (all of them unless the run was interrupted)."""
        return len(self)

    @property
    def rows_total(self) -> int:
        """The rows asked for."""
        return self.total if self.total is not None else len(self)

    def __len__(self) -> int:
        return len(self.source)

    def _partial_note(self) -> str:
        return (
            f"partial: {self.rows_done:,} of {self.rows_total:,} rows (interrupted; "
            f".remaining holds the {self.rows_total - self.rows_done:,} property sets not evaluated)"
        )

    def __repr__(self) -> str:
        if self.lazy:  # counts nothing: rows and errors are known only once computed
            parts = getattr(self.frame, "npartitions", "?")
            return (
                f"SimulationResult(engine={self.engine!r}, partitions={parts}, flags={len(self.flags)}, "
                "lazy=True)"
            )
        lines = [
            f"SimulationResult(engine={self.engine!r}, rows={len(self)}, flags={len(self.flags)}, "
            f"errors={len(self.errors)}{', partial=True' if self.partial else ''})"
        ]
        if self.partial:
            lines.append("  " + self._partial_note())
        if self.agreement is not None and len(self.agreement):
            lines.append(f"  local vs remote: {agreement_headline(self.agreement)}")
        return "\n".join(line for line in lines if line)

    # -- summaries -------------------------------------------------------------------------------------------
    def summary(self, flags: Sequence[str] | None = None, *, z: float = Z95) -> pd.DataFrame:
        """Per flag and value: count, rows, share_of_rows (over every row), n (rows with a known value), share
        (over those), its Wilson interval (``ci_low``, ``ci_high``; 95% unless ``z`` says), unknown rows; one
        `UnknownShareWarning` (and ``attrs["note"]``) when a flag is unknown for 10% of its rows or more.
        Counted by the engine where the answers lie (in SQL for ``engine="sql"``; over Dask per partition on
        the cluster: only the counts come back).

        Args:
            flags: Only these flags. None: every flag.
            z: The normal quantile of the intervals (the default gives 95%; 2.576 gives 99%).

        Returns:
            One row per (flag, value).
        """
        keys = self._keys(flags)
        return warn_unknown(summary_from_counts(self.source.counts(keys), keys, self.variants, z=z))

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
        return property_values(self.inputs, name)

    def crosstab(
        self,
        flag: str,
        by: str,
        *,
        normalize: bool | Literal["all", "index", "columns"] = False,
        margins: bool = False,
    ) -> pd.DataFrame:
        """Counts (or shares, ``normalize="index"``) of ``flag``'s values per value of property ``by``
        (over Dask: counted per partition on the cluster, ``by`` a column of the inputs).

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
        return self.source.crosstab(key, by, normalize=normalize, margins=margins)

    @property
    def missing_report(self) -> MissingReport | None:
        """{flag: (the properties no column holds that it reads, answers they made NA)}: what the
        `MissingPropertyWarning` said (over Dask counted on the cluster when read). None: the result was
        built without the engine's report."""
        return self.source.missing_report()

    def warn_missing(self) -> None:
        """Show the `MissingPropertyWarning` of ``missing_report`` again (nothing when no answer is NA for
        a missing column); the one warning every engine builds from its report."""
        report = self.missing_report
        if report:
            warn_missing_properties(report, len(self))

    def whatif(self, edited: Any) -> Any:
        """Who moves from which value to which when the definitions become ``edited``, over a lazy (Dask)
        result: only the flags ``edited`` changes (and those they depend on) are re-evaluated, per partition,
        and the moves counted on the cluster. Persist ``.frame`` first (``result.frame =
        result.frame.persist()``) so the base answers are not computed again. In memory use
        ``WhatIf(property_sets, definitions).run(edited)``.

        Args:
            edited: The edited definitions.

        Returns:
            A `WhatIfResult` (``.moves``; ``.edited`` the lazy edited result).

        Raises:
            SimulationInputError: The result is not over Dask.
        """
        rerun = getattr(self.backend, "whatif", None)
        if rerun is None:
            raise SimulationInputError(
                f"whatif on a result needs the definitions it ran with (a simulate_dask result); this one is "
                f"engine={self.engine!r}: use WhatIf(property_sets, definitions).run(edited)."
            )
        return rerun(self, edited)

    # -- a lazy engine's settings (simulate_dask) ----------------------------------------------------------
    @property
    def definitions(self) -> Any:
        """The definitions a lazy (Dask) run evaluates; None in memory."""
        return getattr(self.backend, "definitions", None)

    @property
    def now(self) -> Any:
        """The instant a Dask run reads relative dates ("-7d") against: the `simulate_dask` call's; None in
        memory."""
        return getattr(self.backend, "now", None)

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
        """Write the answers to CSV (through ``analytics_nb.frames.to_csv``'s conventions, so
        ``frames.read_csv`` reads it back with the same dtypes); ``inputs=False`` writes the outputs only
        (no input property columns). Answers not in memory (``engine="sql"``, Dask) are written batch by
        batch (``batches()``, `frames.to_csv_batches`): one batch in memory at a time, never every row.

        Args:
            path: The file to write.
            inputs: Write the input property columns too.

        Returns:
            The path written.
        """
        from analytics_nb.frames import to_csv, to_csv_batches

        path = Path(path)
        source = self.source
        if isinstance(source, FrameSource):  # in memory already: one frame, as it always was
            to_csv(source.collect(inputs=inputs), path)
        else:
            to_csv_batches(lambda: source.batches(BATCH_ROWS, inputs=inputs), path)
        return path

    def to_parquet(self, path: str | Path, *, inputs: bool = True) -> Path:
        """Write the answers to parquet (through Arrow: the flag columns typed as in ``to("arrow")``):
        one file (over ``engine="sql"`` written batch by batch, ``batches()``: nothing is collected); over
        Dask a folder of one file per partition, written by the workers (nothing is collected).
        ``inputs=False`` writes the outputs only. Needs pyarrow (``pip install "analytics-nb[arrow]"``).

        Args:
            path: The file to write (over Dask: the folder).
            inputs: Write the input property columns too.

        Returns:
            The path written.
        """
        return self.source.to_parquet(path, inputs=inputs)

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
        if self.lazy:  # the notebook view of a lazy result computes nothing
            return (
                f"<div><p><b>{head}</b></p><p><i>lazy: summary(), crosstab() and len() count where the "
                'answers lie; to("pandas") collects them.</i></p></div>'
            )
        parts = [f"<div><p><b>{head}</b></p>"]
        if self.partial:
            parts.append(f"<p><b>{html.escape(self._partial_note())}</b></p>")
        keys = self.flags
        summary = summary_from_counts(self.source.counts(keys), keys, self.variants)  # the note is shown
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
        parts.append(self.source.head(10).to_html(max_cols=20))
        parts.append("</div>")
        return "".join(parts)
