"""``FlagSimulator``: try feature-flag scenarios across property sets with clicks, get a DataFrame back.

The panel composes small views: ``sets_view`` (property sets as text, a grid builder or ``load(df)``),
``flag_picker``, ``run_bar`` (engine, Run, Reload flags, progress), ``whatif_view`` (rollout and variant
weight sliders for the local engine), ``results_view``, ``export_view`` and ``status``. The run goes
through ``analytics_nb.simulation.simulate`` (remote decide, the local engine or both); what-if edits apply
to a copy of the definitions and the moves against the current ones are shown.
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from analytics_nb.client import ApiClient as Client
from analytics_nb.client import AsyncApiClient as AsyncClient
from analytics_nb.simulation import (
    Definitions,
    SimulationResult,
    UnknownShareWarning,
    concat_frames,
    grid,
    load_definitions,
    simulate,
    whatif,
)
from analytics_nb.widgets._errors import FormError
from analytics_nb.widgets._panel import Panel, require_sync_client
from analytics_nb.widgets.simulator._export import ExportView
from analytics_nb.widgets.simulator._flag_picker import FlagPicker
from analytics_nb.widgets.simulator._property_sets import PropertySetsView
from analytics_nb.widgets.simulator._results import ResultsView
from analytics_nb.widgets.simulator._run_bar import ENGINES, RunBar
from analytics_nb.widgets.simulator._whatif import WhatIfView, describe_edits
from analytics_nb.widgets.views import column, columns

__all__ = ["MAX_PROPERTY_SETS", "FlagSimulator"]

#: The most property sets the panel takes by default (``FlagSimulator(max_sets=...)``): a larger frame is
#: refused with the fix (``load(df, sample=n)`` for a random sample, or ``simulate(df, ...)`` in code).
MAX_PROPERTY_SETS = 100_000


class FlagSimulator(Panel):
    """A panel over ``analytics_nb.simulation``: property sets, flag picker, engine, what-if sliders, results.

    Give it a ``Client`` (remote, local and both engines; definitions are fetched with the personal key) or
    flag definitions (local engine only). ``.result`` is the last run's DataFrame, ``.simulation`` the full
    ``SimulationResult``, ``.moves`` the what-if moves of the last local run with edits. Assigning
    ``.property_sets``, ``.flags``, ``.engine`` or ``.definitions`` from code updates the panel's controls.

    Args:
        source: A sync ``Client`` (every engine) or flag definitions in any shape `flags.read_definitions`
            reads (local engine only).
        property_sets: The property sets to start with. None: type or build them in the panel.
        max_rows: Rows of the results shown in the panel (the full result stays in ``.result``).
        max_sets: The most property sets the panel accepts (100,000), so a run stays interactive.

    Raises:
        TypeError: ``source`` is an ``AsyncClient``.
    """

    title = "Flag simulator"
    css_class = "anb-flag-simulator"

    def __init__(
        self,
        source: Any,
        *,
        property_sets: pd.DataFrame | None = None,
        max_rows: int = 30,
        max_sets: int = MAX_PROPERTY_SETS,
    ) -> None:
        if isinstance(source, AsyncClient):
            require_sync_client(source, "FlagSimulator")  # raises, naming the sync Client
        client = source if isinstance(source, Client) else None
        super().__init__(client)
        self.max_rows = max_rows
        self.max_sets = max_sets  # the most property sets load() takes (a larger frame: sample= or code)
        self.chunk_size = 50  # remote rows per simulate() call, so that the progress bar moves
        #: what a property the sets have no column for means in local runs (``simulate``'s
        #: ``missing_columns``): "unknown" (NA where the answer depends on it) or "not_set"
        self.missing_columns: Literal["unknown", "not_set"] = "unknown"
        self._definitions: Definitions | None = None  # the current, unedited definitions
        self.simulation: SimulationResult | None = None
        self.result: pd.DataFrame | None = None
        self.moves: pd.DataFrame | None = None
        self._sets_view = PropertySetsView(on_build=self.build_grid)
        self._flag_picker = FlagPicker(on_change=self._picked)
        self._run_bar = RunBar(
            on_engine=self._engine_changed, on_run=self.run, on_reload=self.load_definitions
        )
        self._whatif_view = WhatIfView(on_reset=self.reset_whatif)
        self._results_view = ResultsView()
        self._export_view = ExportView(on_export=self.export_csv)
        self._register(
            *self._sets_view.controls,
            *self._flag_picker.controls,
            *self._run_bar.controls,
            *self._whatif_view.controls,
            *self._export_view.controls,
        )
        self.children = [
            self._heading(),
            columns(
                self._sets_view.root,
                column(self._flag_picker.root, self._run_bar.root, css_class="anb-controls"),
            ),
            self._whatif_view.root,
            self._status.line,
            self._results_view.root,
            self._export_view.root,
            self._status.log,
        ]
        if client is None:
            self._definitions = load_definitions(source)
            self._definitions_loaded()
        else:
            self.load_definitions()
        if property_sets is not None:
            self.load(property_sets)

    def _client_changed(self) -> None:
        self._run_bar.engine.disabled = False
        self._run_bar.note.value = ""
        self.load_definitions()

    # ---- definitions, flags and engine ----------------------------------------------------------
    @property
    def definitions(self) -> Definitions | None:
        """The current (unedited) flag definitions; assigning new ones updates the picker and sliders."""
        return self._definitions

    @definitions.setter
    def definitions(self, value: Any) -> None:
        self._definitions = None if value is None else load_definitions(value)
        self._definitions_loaded()

    def load_definitions(self) -> bool:
        """(Re)fetch the flag definitions through the client (needs a personal API key); True on success."""
        if self.client is None:
            self._definitions_loaded()
            return True
        ok, fetched = self._attempt(
            "Loading flag definitions…", lambda: self._live_client().feature_flags.local_evaluation()
        )
        if ok and fetched is not None:
            self._definitions = load_definitions(fetched)
            self._definitions_loaded()
            self._status.ok(f"{len(self._definitions.keys)} flag definitions loaded.")
            return True
        if self._definitions is None:
            self._definitions_loaded()
            self._status.show(
                f"{self.status_text} Without definitions only the remote engine runs, over all flags.",
                "error",
            )
        return False

    def _definitions_loaded(self) -> None:
        defs = self._definitions
        self._flag_picker.offer(list(defs.flags) if defs is not None else [])
        if self.client is None:
            self._run_bar.engine.value = "local"
            self._run_bar.engine.disabled = True
            self._run_bar.note.value = "<i>Definitions only: remote and both need a client.</i>"
        elif defs is None:
            self._run_bar.engine.value = "remote"
            self._run_bar.note.value = "<i>No definitions: local and both need a personal API key.</i>"
        self._picked()
        self._engine_changed()

    @property
    def flag_keys(self) -> list[str]:
        """The keys offered in the flag picker (deleted flags are left out)."""
        return self._flag_picker.keys

    @property
    def flags(self) -> list[str] | None:
        """The picked flag keys (None: all flags); assigning a list picks those flags."""
        return self._flag_picker.picked or None

    @flags.setter
    def flags(self, keys: list[str] | None) -> None:
        self.pick(*(keys or []))

    def pick(self, *keys: str) -> None:
        """Pick the flags to simulate (none: all flags).

        Args:
            *keys: Flag keys; none picks every flag.
        """
        self._flag_picker.pick(*keys)

    def _picked(self) -> None:
        keys = self._flag_picker.picked if self._definitions is not None else []
        self._whatif_view.build(self._definitions, keys)

    @property
    def engine(self) -> str:
        """The engine the next run uses: "remote", "local" or "both"."""
        return str(self._run_bar.engine.value)

    @engine.setter
    def engine(self, value: str) -> None:
        if value not in ENGINES:
            raise FormError(f"engine={value!r}: use 'remote', 'local' or 'both'.")
        if value != "local" and self.client is None:
            raise FormError(
                f"engine={value!r} sends decide requests and needs a client; this panel has definitions only."
            )
        if value != "remote" and self._definitions is None:
            raise FormError(
                f"engine={value!r} needs flag definitions, which could not be loaded (a personal API key)."
            )
        self._run_bar.engine.value = value

    def _engine_literal(self) -> Literal["remote", "local", "both"]:
        value = self.engine
        if value == "local":
            return "local"
        return "both" if value == "both" else "remote"

    def _engine_changed(self) -> None:
        if self.engine != "remote" and self._definitions is None and self.client is not None:
            self._run_bar.engine.value = "remote"  # comes back here with "remote"
            self._status.error(
                FormError(
                    "The local and both engines need flag definitions, which this client cannot read "
                    "(it needs a personal API key); Reload flags after connecting with one."
                )
            )
            return
        self._whatif_view.visible = self.engine == "local" and self._definitions is not None

    # ---- what-if --------------------------------------------------------------------------------
    def set_rollout(self, key: str, pct: float, condition: int = 0) -> None:
        """Set the what-if rollout (0-100) of condition set ``condition`` of the picked flag ``key``.

        Args:
            key: A picked flag's key.
            pct: The rollout percentage, 0 to 100.
            condition: The 0-based condition set.
        """
        self._whatif_view.set_rollout(key, pct, condition)

    def set_weights(self, key: str, weights: dict[str, int]) -> None:
        """Set the what-if variant weights of the picked multivariate flag ``key`` (adding up to 100).

        Args:
            key: A picked multivariate flag's key.
            weights: ``{variant key: percentage}``, adding up to 100.
        """
        self._whatif_view.set_weights(key, weights)

    def reset_whatif(self) -> None:
        """Put every what-if slider back to the current definitions."""
        self._whatif_view.reset_sliders()
        self._status.ok("What-if sliders reset to the current definitions.")

    def whatif_edits(self) -> dict[str, dict[str, Any]]:
        """What-if edits against the definitions: ``{flag: {"rollout": {cond: pct}, "weights": {...}}}``."""
        return self._whatif_view.edits()

    def edited_definitions(self) -> Definitions | None:
        """The definitions with the what-if edits applied (FormError when weights do not add up to 100)."""
        return self._whatif_view.edited()

    # ---- property sets --------------------------------------------------------------------------
    @property
    def property_sets(self) -> pd.DataFrame | None:
        """The loaded property sets (None: none yet); assigning a DataFrame loads it into the text box."""
        return self._sets_view.frame

    @property_sets.setter
    def property_sets(self, frame: pd.DataFrame | None) -> None:
        if frame is None:
            self._sets_view.clear()
        else:
            self.load(frame)

    def load(self, frame: pd.DataFrame, *, sample: int | None = None) -> None:
        """Use a DataFrame of property sets (``distinct_id`` plus property columns) for the next runs.

        A frame of more than ``max_sets`` rows (default ``MAX_PROPERTY_SETS``, 100,000) is refused with a
        FormError naming the fix; ``sample=n`` uses a random sample of ``n`` rows instead (seed 0, input
        order kept), and the status line says so. The text box shows at most ``TEXT_ROWS`` rows.

        Args:
            frame: The property sets.
            sample: Use a random sample of this many rows (for a frame over ``max_sets``). None: every row.

        Raises:
            FormError: The frame is too large or malformed (the message names the fix).
        """
        if sample is not None:
            if not isinstance(frame, pd.DataFrame):
                raise FormError(
                    f"load() takes a pandas DataFrame of property sets, not {type(frame).__name__}."
                )
            if not 0 < sample <= self.max_sets:
                raise FormError(
                    f"sample={sample!r}: give a number of rows from 1 to max_sets={self.max_sets:,}."
                )
            if sample < len(frame):
                total = len(frame)
                frame = frame.sample(n=sample, random_state=0).sort_index()
                self._sets_view.load(frame)
                self._status.ok(
                    f"Sampled {sample:,} of {total:,} property sets at random (seed 0); the results describe "
                    "the sample, not every row."
                )
                return
        elif isinstance(frame, pd.DataFrame) and len(frame) > self.max_sets:
            raise FormError(
                f"The DataFrame has {len(frame):,} property sets, more than this panel takes "
                f"(max_sets={self.max_sets:,}): load(df, sample={self.max_sets:,}) simulates a random "
                "sample, simulate(df, ...) in code runs every row (with a progress bar), or raise "
                "FlagSimulator(..., max_sets=...)."
            )
        self._sets_view.load(frame)

    def current_property_sets(self) -> pd.DataFrame:
        """The property sets of the next run: the loaded DataFrame, or the text box parsed when edited."""
        return self._sets_view.current()

    def build_grid(self, values: dict[str, list[Any]] | None = None, ids_per_cell: int | None = None) -> bool:
        """Fill the property sets with ``simulate.grid(values, ids_per_cell=...)`` (default: the Grid box).

        Args:
            values: ``{property: values}``. None: the Grid box.
            ids_per_cell: Distinct persons per cell. None: the ids/cell box.

        Returns:
            True on success.
        """
        try:
            spec = self._sets_view.grid_spec() if values is None else values
            per_cell = int(self._sets_view.ids_per_cell.value) if ids_per_cell is None else ids_per_cell
            frame = grid(spec, ids_per_cell=per_cell)
            self.load(frame)
        except Exception as exc:
            self._sets_view.grid_failed()
            self._status.error(exc)
            return False
        self._status.ok(f"Grid built: {len(frame)} property sets.")
        return True

    # ---- run and results ------------------------------------------------------------------------
    def _open_client(self) -> Client | None:
        """The client when there is one and it is open (a local run does not need it), else None."""
        client = self.client
        return client if isinstance(client, Client) and not client.closed else None

    def _forget_results(self) -> None:
        """A failed run: the previous results no longer answer the question on screen."""
        self.simulation = None
        self.result = None
        self.moves = None
        self._results_view.clear()
        self._export_view.clear()

    def run(self) -> pd.DataFrame | None:
        """Run the simulation with the panel's settings; returns ``.result`` (or None, see ``.error``)."""
        try:
            frame = self.current_property_sets()
            engine = self._engine_literal()
            edits = self.whatif_edits() if engine == "local" else {}
            edited = self.edited_definitions() if edits else None
        except Exception as exc:
            self._forget_results()
            self._run_bar.finish(False)
            self._status.error(exc)
            return None
        flags = self.flags
        current = self._definitions
        definitions = edited if edited is not None else current
        self._run_bar.start(len(frame))

        def go() -> tuple[SimulationResult, pd.DataFrame | None]:
            # a local run with an open client fills cohorts / group type names the definitions lack (a flags
            # frame assigned to .definitions); without one an IncompleteDefinitionsWarning reaches the status
            client = self._live_client() if engine != "local" else self._open_client()
            if engine == "remote":
                sim = self._remote_in_chunks(frame, flags)
            else:
                sim = simulate(
                    frame,
                    flags,
                    engine,
                    client=client,
                    definitions=definitions,
                    progress=False,
                    missing_columns=self.missing_columns,
                )
            moves = None
            if edited is not None:
                changed = whatif(
                    frame, current, edited, flags=flags, missing_columns=self.missing_columns, client=client
                )
                moves = changed.moves
            return sim, moves

        ok, value = self._attempt_noting(
            f"Running {len(frame)} property sets ({engine})…", go, needs_client=engine != "local"
        )
        if not ok or value is None:
            self._forget_results()
            self._run_bar.finish(False)
            return None
        self.simulation, self.moves = value
        self.result = self.simulation.frame
        self._run_bar.finish(True)
        self._export_view.clear()  # a link to the previous result would export the wrong rows
        with warnings.catch_warnings():  # the note goes to the status line with the run's other news
            warnings.simplefilter("ignore", UnknownShareWarning)
            summary = self.simulation.summary()
        self._results_view.show(
            summary,
            self.display_frame(),
            moves=self.moves,
            edits_text=describe_edits(edits),
            agreement=self.simulation.agreement,
            max_rows=self.max_rows,
        )
        errors = len(self.simulation.errors)
        extra = ""
        if errors:
            first = str(self.simulation.errors["error"].iloc[0])
            first = first if len(first) <= 140 else first[:137] + "..."
            extra = f", {errors} row(s) with errors (see the error column; first: {first})"
        note = f" Note: {summary.attrs['note']}" if summary.attrs.get("note") else ""
        self._done(
            f"Done: {len(self.result)} property sets, {len(self.simulation.flags)} flags ({engine}){extra}."
            + note
        )
        return self.result

    def _remote_in_chunks(self, frame: pd.DataFrame, flags: list[str] | None) -> SimulationResult:
        """Remote decide in chunks so that the progress bar moves; the chunks' results are put together."""
        client = self._live_client()
        size = max(self.chunk_size, -(-len(frame) // 20))
        parts = []
        started = time.perf_counter()
        for start in range(0, max(len(frame), 1), size):
            chunk = frame.iloc[start : start + size]
            part = simulate(
                chunk, flags, "remote", client=client, definitions=self._definitions, progress=False
            )
            parts.append(part)
            self._run_bar.advance(start + len(chunk))
        if len(parts) == 1:
            return parts[0]
        result = concat_frames([p.outputs for p in parts])
        inputs = pd.concat([p.inputs for p in parts])
        return SimulationResult(
            result,
            "remote",
            inputs,
            parts[0].mode,
            parts[0].variants,
            remote=result,
            elapsed=time.perf_counter() - started,
        )

    @property
    def agreement(self) -> pd.DataFrame | None:
        """The local-vs-remote agreement table of the last ``both`` run (None otherwise)."""
        return None if self.simulation is None else self.simulation.agreement

    def summary(self) -> pd.DataFrame | None:
        """Value shares per flag of the last run (``SimulationResult.summary()``)."""
        return None if self.simulation is None else self.simulation.summary()

    def display_frame(self) -> pd.DataFrame:
        """The results as shown: distinct_id, the input properties, the flags, and errors if any."""
        if self.simulation is None:
            raise FormError("Run a simulation first; there are no results yet.")
        sim = self.simulation
        shown = sim.frame[["distinct_id", *sim.input_columns, *sim.flags]]
        if "error" in sim.frame.columns and sim.frame["error"].notna().any():
            shown = shown.assign(error=sim.frame["error"])
        return shown

    @property
    def exported(self) -> Path | None:
        """The server file the last export wrote (None: none, or a download only)."""
        return self._export_view.written

    @property
    def export_inputs(self) -> bool:
        """Whether exports carry the input property columns (``country``, ``plan``) beside the flags: the
        "with inputs" box, True by default; assign False to export the outputs only."""
        return bool(self._export_view.inputs.value)

    @export_inputs.setter
    def export_inputs(self, value: bool) -> None:
        self._export_view.inputs.value = bool(value)

    def export_csv(self, path: str | Path | None = None, *, inputs: bool | None = None) -> bool:
        """Offer the last result as a browser download ("Download <file name>" link, rebuilt each time);
        also write it on the server at ``path`` (default: the Server path box) when one is given.

        The CSV is ``SimulationResult.to_csv``'s: the input property columns beside the flags unless
        ``inputs=False`` (default: the "with inputs" box, ``export_inputs``). True on success; on failure
        the status line says why (``.error``).

        Args:
            path: Also write the CSV on the server here. None: the Server path box (empty: no file).
            inputs: Include the input property columns. None: the "with inputs" box.

        Returns:
            True on success.
        """
        if self.simulation is None or self.result is None:
            self._status.error(FormError("Run a simulation first; there is nothing to export yet."))
            return False
        if inputs is not None:
            self.export_inputs = inputs
        result = self.simulation.frame if self.export_inputs else self.simulation.outputs
        try:
            target = self._export_view.target(path)
            text = self._export_view.offer(result)
        except FormError as exc:
            self._status.error(exc)
            return False
        if target is None:
            self._status.ok(
                f"CSV of {len(result)} rows ready: click 'Download {self._export_view.filename.value}' "
                "to save it in your browser (type a server path to also write it on the server)."
            )
            return True

        def write() -> Path:
            with target.open("w", encoding="utf-8", newline="") as fh:
                fh.write(text)
            return target.resolve()

        ok, written = self._attempt(f"Writing {target}…", write, needs_client=False)
        if not ok or written is None:
            return False
        self._export_view.wrote(written)
        self._status.ok(f"Exported {len(result)} rows to {written} (and as a download link).")
        return True
