"""``FlagSimulator``: try feature-flag scenarios across property sets with clicks, get a DataFrame back.

Property sets come from a CSV-like text box, a grid of value lists (``analytics_nb.simulation.grid``) or
``load(df)``; the run goes through ``analytics_nb.simulation.simulate`` (remote decide, the local engine or
both); what-if sliders edit rollout percentages and variant weights of the current definitions for the local
engine (``with_rollout`` / ``with_variant_weights``) and the moves against the current definitions are shown.
"""

from __future__ import annotations

import csv
import html
import io
import re
import time
from pathlib import Path
from typing import Any

import ipywidgets as w
import pandas as pd

from analytics_nb.client import ApiClient, AsyncApiClient
from analytics_nb.widgets._base import Panel, frame_html, require_sync_client
from analytics_nb.widgets._errors import FormError

__all__ = ["FlagSimulator", "parse_grid_text", "parse_property_text", "property_text"]

_INT = re.compile(r"^-?(0|[1-9]\d*)$")
_FLOAT = re.compile(r"^-?(0|[1-9]\d*)\.\d+$")
_COLORS = ["#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#ff9da6", "#9d755d"]
_ENGINES = ("remote", "local", "both")


def _cell_value(text: str) -> Any:
    """A typed cell value from text: empty is missing, true/false are booleans, plain numbers are numbers.

    Numbers with leading zeros (``007``) stay text, so nothing typed is changed silently.
    """
    value = text.strip()
    if value == "":
        return None
    lowered = value.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if _INT.match(value):
        return int(value)
    if _FLOAT.match(value):
        return float(value)
    return value


def _cell_text(value: Any) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and value != value):
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def parse_property_text(text: str) -> pd.DataFrame:
    """Parse the property-set text (a CSV header with ``distinct_id`` then one row per set) into a DataFrame.

    Raises FormError naming the line to fix when a row has the wrong number of cells or a bad header.
    """
    lines = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    if not lines:
        raise FormError(
            "The property sets are empty: write a header line such as 'distinct_id,country,plan' and one "
            "line per property set, build a grid, or call load(df)."
        )
    rows = list(csv.reader(io.StringIO("\n".join(lines)), skipinitialspace=True))
    header = [h.strip() for h in rows[0]]
    if "distinct_id" not in header:
        raise FormError(
            f"The first line must be a header that names a 'distinct_id' column, got {', '.join(header)!r}; "
            "for example 'distinct_id,country'."
        )
    empty = [i + 1 for i, h in enumerate(header) if not h]
    if empty:
        raise FormError(f"Header column {empty[0]} has no name; name every column in the first line.")
    duplicated = sorted({h for h in header if header.count(h) > 1})
    if duplicated:
        raise FormError(f"The header names {duplicated[0]!r} twice; each column needs its own name.")
    records: list[dict[str, Any]] = []
    for number, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            raise FormError(
                f"Property-set line {number} has {len(row)} cells but the header has {len(header)} "
                f"({', '.join(header)}); add or remove commas on that line (quote text that contains commas)."
            )
        record = {name: _cell_value(cell) for name, cell in zip(header, row, strict=True)}
        if record["distinct_id"] is None:
            raise FormError(f"Property-set line {number} has an empty distinct_id; give every row an id.")
        record["distinct_id"] = str(row[header.index("distinct_id")]).strip()
        records.append(record)
    if not records:
        raise FormError("There is a header but no property sets: add one line per property set below it.")
    columns: dict[str, Any] = {}
    for name in header:
        values = [r[name] for r in records]
        kinds = {type(v) for v in values if v is not None}
        columns[name] = pd.Series(values, dtype=object) if len(kinds) != 1 or None in values else values
    frame = pd.DataFrame(columns)
    frame["distinct_id"] = frame["distinct_id"].astype(str)
    return frame


def property_text(frame: pd.DataFrame) -> str:
    """The CSV-like text shown for a DataFrame of property sets (nested cells are written as their text)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([str(c) for c in frame.columns])
    for row in frame.itertuples(index=False, name=None):
        writer.writerow([_cell_text(v) for v in row])
    return out.getvalue()


def parse_grid_text(text: str) -> dict[str, list[Any]]:
    """Parse grid lines ``property: value, value, ...`` (or ``=``) into the dict ``simulate.grid`` takes."""
    values: dict[str, list[Any]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = re.match(r"^\s*([^:=]+?)\s*[:=]\s*(.*)$", line)
        if not match:
            raise FormError(
                f"Grid line {number} ({line.strip()!r}) needs the form 'property: value, value'; "
                "e.g. 'country: US, DE'."
            )
        name, rest = match.group(1), match.group(2)
        cells = next(csv.reader(io.StringIO(rest), skipinitialspace=True), [])
        parsed = [_cell_value(c) for c in cells if c.strip()]
        if not parsed:
            raise FormError(
                f"Grid line {number} lists no values for {name!r}; give at least one after the colon."
            )
        if name in values:
            raise FormError(f"Grid line {number} repeats the property {name!r}; list its values on one line.")
        values[name] = parsed
    if not values:
        raise FormError("The grid is empty: write one line per property, e.g. 'country: US, DE'.")
    return values


def _condition_text(group: dict[str, Any]) -> str:
    props = group.get("properties") or []
    if not props:
        return "everyone"
    return " and ".join(
        f"{p.get('key')} {p.get('operator') or 'exact'} {p.get('value')!r}"
        for p in props
        if isinstance(p, dict)
    )


def _describe_edits(edits: dict[str, dict[str, Any]]) -> str:
    parts = []
    for key, edit in edits.items():
        bits = [f"condition {i + 1} at {pct:g}%" for i, pct in edit.get("rollout", {}).items()]
        if "weights" in edit:
            bits.append(" / ".join(f"{name} {pct}%" for name, pct in edit["weights"].items()))
        parts.append(f"{key}: {', '.join(bits)}")
    return "; ".join(parts)


def _is_client(source: Any) -> bool:
    return isinstance(source, ApiClient | AsyncApiClient)


def _html_table(df: pd.DataFrame | None, *, max_rows: int = 30, css_class: str = "anb-table") -> str:
    if df is None:
        return ""
    return frame_html(df, list(df.columns), max_rows=max_rows, css_class=css_class, bools="text")


def share_bars_html(summary: pd.DataFrame) -> str:
    """An HTML bar chart of value shares per flag (one stacked bar per flag, with a legend of shares)."""
    if summary is None or not len(summary):
        return '<div class="anb-bars anb-empty" style="color:#666">(no flag values to chart)</div>'
    parts = ['<div class="anb-bars" style="font-size:12px">']
    for flag, rows in summary.groupby("flag", sort=False):
        segments = []
        legend = []
        known = rows[rows["count"] > 0]
        for position, row in enumerate(known.itertuples(index=False)):
            share = float(row.share) if row.share == row.share else 0.0
            color = "#c7c7c7" if row.value is False else _COLORS[position % len(_COLORS)]
            label = html.escape(_cell_text(row.value) or "unknown")
            segments.append(
                f'<div class="anb-bar" data-flag="{html.escape(str(flag))}" data-value="{label}" '
                f'data-share="{share:.4f}" title="{label}: {share:.1%} ({row.count})" '
                f'style="width:{share * 100:.2f}%;background:{color};height:16px"></div>'
            )
            legend.append(
                f'<span style="display:inline-block;width:10px;height:10px;background:{color}"></span> '
                f"{label} {share:.1%} ({row.count})"
            )
        unknown = int(rows["unknown"].iloc[0]) if "unknown" in rows.columns and len(rows) else 0
        note = f" · {unknown} unknown" if unknown else ""
        parts.append(
            f'<div style="margin:4px 0"><b>{html.escape(str(flag))}</b>{note}'
            f'<div style="display:flex;width:420px;border:1px solid #ccc">{"".join(segments)}</div>'
            f"<div>{' &nbsp; '.join(legend)}</div></div>"
        )
    parts.append("</div>")
    return "".join(parts)


class FlagSimulator(Panel):
    """A panel over ``analytics_nb.simulate``: property sets, flag picker, engine, what-if sliders, results.

    Give it a ``Client`` (remote, local and both engines; definitions are fetched with the personal key) or
    flag definitions (local engine only). ``.result`` is the last run's DataFrame, ``.simulation`` the full
    ``SimulationResult``, ``.moves`` the what-if moves of the last local run with edits.
    """

    title = "Flag simulator"

    def __init__(self, source: Any, *, property_sets: pd.DataFrame | None = None, max_rows: int = 30) -> None:
        super().__init__()
        from analytics_nb.simulation import load_definitions

        if _is_client(source):
            require_sync_client(source, "FlagSimulator")
        self.client: Any = source if _is_client(source) else None
        self.max_rows = max_rows
        self.chunk_size = 50  # remote rows per simulate() call, so that the progress bar moves
        self.definitions: Any = None  # analytics_nb.simulation.Definitions (the current, unedited ones)
        self.property_sets: pd.DataFrame | None = None
        self.simulation: Any = None
        self.result: pd.DataFrame | None = None
        self.moves: pd.DataFrame | None = None
        self.exported: Path | None = None
        self._synced_text: str | None = None
        self._rollout_sliders: dict[str, list[w.FloatSlider]] = {}
        self._variant_sliders: dict[str, dict[str, w.IntSlider]] = {}
        self._build()
        if self.client is None:
            self.definitions = load_definitions(source)
            self._definitions_loaded()
        else:
            self.load_definitions()
        if property_sets is not None:
            self.load(property_sets)

    # ---- layout ---------------------------------------------------------------------------------
    def _build(self) -> None:
        self.sets_box = w.Textarea(
            value="distinct_id\n",
            placeholder="distinct_id,country,plan\nu1,US,pro\nu2,DE,free",
            description="Sets",
            layout=w.Layout(width="520px", height="140px"),
        )
        self.sets_info = w.HTML(value="")
        self.grid_box = w.Textarea(
            placeholder="country: US, DE, FR\nplan: free, pro",
            description="Grid",
            layout=w.Layout(width="520px", height="70px"),
        )
        self.ids_per_cell = w.BoundedIntText(
            value=10, min=1, max=100_000, description="ids/cell", layout=w.Layout(width="160px")
        )
        self.grid_button = w.Button(description="Build grid", icon="th")
        self.grid_button.on_click(lambda _b: self.build_grid())
        sets = w.VBox(
            [self.sets_box, self.sets_info, self.grid_box, w.HBox([self.ids_per_cell, self.grid_button])]
        )

        self.flag_picker = w.SelectMultiple(
            options=[], rows=6, description="Flags", layout=w.Layout(width="320px")
        )
        self.flag_picker.observe(lambda _c: self._build_whatif(), names="value")
        self.engine_toggle = w.ToggleButtons(options=list(_ENGINES), value="remote", description="Engine")
        self.engine_toggle.observe(lambda _c: self._engine_changed(), names="value")
        self.engine_note = w.HTML(value="")
        self.run_button = w.Button(description="Run", button_style="primary", icon="play")
        self.run_button.on_click(lambda _b: self.run())
        self.reload_button = w.Button(description="Reload flags", icon="refresh")
        self.reload_button.on_click(lambda _b: self.load_definitions())
        self.progress = w.IntProgress(value=0, min=0, max=1, description="", layout=w.Layout(width="320px"))
        self.reset_whatif_button = w.Button(description="Reset what-if", icon="undo")
        self.reset_whatif_button.on_click(lambda _b: self.reset_whatif())
        self.whatif_box = w.VBox([])
        whatif = w.VBox(
            [
                w.HTML(value="<b>What-if</b> (local engine): edit the current definitions before the run"),
                self.whatif_box,
                self.reset_whatif_button,
            ]
        )
        self.whatif_panel = whatif
        controls = w.VBox(
            [
                self.flag_picker,
                self.engine_toggle,
                self.engine_note,
                w.HBox([self.run_button, self.reload_button, self.progress]),
            ]
        )

        self.moves_html = w.HTML(value="")
        self.bars_html = w.HTML(value="")
        self.agreement_html = w.HTML(value="")
        self.table_html = w.HTML(value="")
        self.table_html.add_class("anb-result-table")
        self.export_name = w.Text(
            value="simulation.csv", description="CSV file", layout=w.Layout(width="320px")
        )
        self.export_button = w.Button(description="Export CSV", icon="download")
        self.export_button.on_click(lambda _b: self.export_csv())
        self.export_label = w.HTML(value="")
        results = w.VBox(
            [
                self.bars_html,
                self.moves_html,
                self.agreement_html,
                self.table_html,
                w.HBox([self.export_name, self.export_button, self.export_label]),
            ]
        )
        self._register(
            self.grid_button,
            self.flag_picker,
            self.engine_toggle,
            self.run_button,
            self.reload_button,
            self.reset_whatif_button,
            self.export_button,
        )
        self.root.children = [
            w.HTML(value=f"<h3 style='margin:4px 0'>{self.title}</h3>"),
            w.HBox([sets, controls]),
            whatif,
            self.status,
            results,
            self.messages,
        ]

    # ---- definitions, flags and engine ----------------------------------------------------------
    def load_definitions(self) -> bool:
        """(Re)fetch the flag definitions through the client (needs a personal API key); True on success."""
        if self.client is None:
            self._definitions_loaded()
            return True
        from analytics_nb.simulation import load_definitions

        ok, fetched = self._attempt("Loading flag definitions…", self.client.feature_flags.local_evaluation)
        if ok and fetched is not None:
            self.definitions = load_definitions(fetched)
            self._definitions_loaded()
            self._ok(f"{len(self.definitions.keys)} flag definitions loaded.")
            return True
        if self.definitions is None:
            self._definitions_loaded()
            self._set_status(
                f"{self.status_text} Without definitions only the remote engine runs, over all flags.",
                "error",
            )
        return False

    def _definitions_loaded(self) -> None:
        flags = [f for f in self.definitions.flags if not f.get("deleted")] if self.definitions else []
        options = [
            (str(f["key"]) + ("" if f.get("active", True) else " (inactive)"), str(f["key"])) for f in flags
        ]
        keys = [key for _label, key in options]
        selected = tuple(k for k in self.flag_picker.value if k in keys)
        self.flag_picker.options = options
        self.flag_picker.value = selected
        if self.client is None:
            self.engine_toggle.value = "local"
            self.engine_toggle.disabled = True
            self.engine_note.value = "<i>Definitions only: remote and both need a client.</i>"
        elif self.definitions is None:
            self.engine_toggle.value = "remote"
            self.engine_note.value = "<i>No definitions: local and both need a personal API key.</i>"
        self._build_whatif()
        self._engine_changed()

    @property
    def flag_keys(self) -> list[str]:
        """The keys offered in the flag picker (deleted flags are left out)."""
        return [key for _label, key in self.flag_picker.options]

    @property
    def flags(self) -> list[str] | None:
        """The picked flag keys (None: all flags)."""
        picked = list(self.flag_picker.value)
        return picked or None

    def pick(self, *keys: str) -> None:
        """Pick the flags to simulate (none: all flags)."""
        options = self.flag_keys
        unknown = [k for k in keys if k not in options]
        if unknown:
            raise FormError(f"No flag {unknown[0]!r} in the definitions; known flags: {', '.join(options)}.")
        self.flag_picker.value = tuple(keys)

    @property
    def engine(self) -> str:
        """The engine the next run uses: "remote", "local" or "both"."""
        return str(self.engine_toggle.value)

    @engine.setter
    def engine(self, value: str) -> None:
        if value not in _ENGINES:
            raise FormError(f"engine={value!r}: use 'remote', 'local' or 'both'.")
        if value != "local" and self.client is None:
            raise FormError(
                f"engine={value!r} sends decide requests and needs a client; this panel has definitions only."
            )
        if value != "remote" and self.definitions is None:
            raise FormError(
                f"engine={value!r} needs flag definitions, which could not be loaded (a personal API key)."
            )
        self.engine_toggle.value = value

    def _engine_changed(self) -> None:
        if self.engine != "remote" and self.definitions is None and self.client is not None:
            self.engine_toggle.value = "remote"  # comes back here with "remote"
            self._error(
                FormError(
                    "The local and both engines need flag definitions, which this client cannot read "
                    "(it needs a personal API key); Reload flags after connecting with one."
                )
            )
            return
        on = self.engine == "local" and self.definitions is not None
        self.whatif_panel.layout.display = "flex" if on else "none"

    # ---- what-if ------------------------------------------------------------------------------------------
    def _whatif_keys(self) -> list[str]:
        if self.definitions is None:
            return []
        return self.flags or []

    def _build_whatif(self) -> None:
        if self.definitions is None:
            self.whatif_box.children = []
            return
        flags = self.definitions.by_key()
        rows: list[w.Widget] = []
        rollout: dict[str, list[w.FloatSlider]] = {}
        variants: dict[str, dict[str, w.IntSlider]] = {}
        for key in self._whatif_keys():
            filters = flags[key].get("filters") or {}
            groups = filters.get("groups") or []
            parts: list[w.Widget] = [
                w.HTML(value=f"<code>{html.escape(key)}</code>", layout=w.Layout(width="170px"))
            ]
            old_sliders = self._rollout_sliders.get(key, [])
            rollout[key] = []
            for index, group in enumerate(groups):
                current = group.get("rollout_percentage")
                value = 100.0 if current is None else float(current)
                if index < len(old_sliders):
                    value = old_sliders[index].value
                slider = w.FloatSlider(
                    value=value,
                    min=0,
                    max=100,
                    step=1,
                    description=f"cond {index + 1} %",
                    tooltip=_condition_text(group),
                    readout_format=".0f",
                    continuous_update=False,
                    layout=w.Layout(width="300px"),
                )
                rollout[key].append(slider)
                parts.append(slider)
            mv = (filters.get("multivariate") or {}).get("variants") or []
            if mv:
                variants[key] = {}
                for variant in mv:
                    name = str(variant.get("key"))
                    old_v = self._variant_sliders.get(key, {}).get(name)
                    pct = variant.get("rollout_percentage") or 0
                    slider_v = w.IntSlider(
                        value=old_v.value if old_v is not None else round(pct),
                        min=0,
                        max=100,
                        description=name[:12],
                        tooltip=f"weight of variant {name} (all weights must add up to 100)",
                        continuous_update=False,
                        layout=w.Layout(width="260px"),
                    )
                    variants[key][name] = slider_v
                    parts.append(slider_v)
            rows.append(w.HBox(parts, layout=w.Layout(flex_flow="row wrap")))
        self._rollout_sliders = rollout
        self._variant_sliders = variants
        hint = "<i>Pick flags above to get rollout and variant-weight sliders for them.</i>"
        self.whatif_box.children = rows or [w.HTML(value=hint)]

    def set_rollout(self, key: str, pct: float, condition: int = 0) -> None:
        """Set the what-if rollout (0-100) of condition set ``condition`` of the picked flag ``key``."""
        sliders = self._rollout_sliders.get(key)
        if not sliders:
            raise FormError(f"No rollout slider for {key!r}: pick the flag first (it needs condition sets).")
        if not 0 <= condition < len(sliders):
            raise FormError(f"Flag {key!r} has condition sets 0 to {len(sliders) - 1}, not {condition}.")
        if not 0 <= pct <= 100:
            raise FormError(f"The rollout of {key!r} must be from 0 to 100, got {pct!r}.")
        sliders[condition].value = float(pct)

    def set_weights(self, key: str, weights: dict[str, int]) -> None:
        """Set the what-if variant weights of the picked multivariate flag ``key`` (adding up to 100)."""
        sliders = self._variant_sliders.get(key)
        if not sliders:
            raise FormError(f"{key!r} has no variant sliders: pick it first (it must be multivariate).")
        unknown = [v for v in weights if v not in sliders]
        if unknown:
            raise FormError(
                f"Flag {key!r} has no variant {unknown[0]!r}; its variants: {', '.join(sliders)}."
            )
        for name, slider in sliders.items():
            slider.value = int(weights.get(name, 0))

    def reset_whatif(self) -> None:
        """Put every what-if slider back to the current definitions."""
        self._rollout_sliders = {}
        self._variant_sliders = {}
        self._build_whatif()
        self._ok("What-if sliders reset to the current definitions.")

    def whatif_edits(self) -> dict[str, dict[str, Any]]:
        """What-if edits against the definitions: ``{flag: {"rollout": {cond: pct}, "weights": {...}}}``."""
        if self.definitions is None:
            return {}
        flags = self.definitions.by_key()
        edits: dict[str, dict[str, Any]] = {}
        for key, sliders in self._rollout_sliders.items():
            groups = (flags[key].get("filters") or {}).get("groups") or []
            for index, (slider, group) in enumerate(zip(sliders, groups, strict=False)):
                current = group.get("rollout_percentage")
                if abs(slider.value - (100.0 if current is None else float(current))) > 1e-9:
                    edits.setdefault(key, {}).setdefault("rollout", {})[index] = slider.value
        for key, variant_sliders in self._variant_sliders.items():
            mv = (flags[key].get("filters") or {}).get("multivariate") or {}
            current_w = {
                str(v.get("key")): v.get("rollout_percentage") or 0 for v in mv.get("variants") or []
            }
            weights = {name: s.value for name, s in variant_sliders.items()}
            if any(abs(weights[n] - current_w.get(n, 0)) > 1e-9 for n in weights):
                edits.setdefault(key, {})["weights"] = weights
        return edits

    def edited_definitions(self) -> Any:
        """The definitions with the what-if edits applied (FormError when weights do not add up to 100)."""
        from analytics_nb.simulation import with_rollout, with_variant_weights

        defs: Any = self.definitions
        for key, edit in self.whatif_edits().items():
            for index, pct in edit.get("rollout", {}).items():
                defs = with_rollout(defs, key, pct, condition=index)
            if "weights" in edit:
                total = sum(edit["weights"].values())
                if total != 100:
                    raise FormError(
                        f"The variant weights of {key!r} add up to {total}, not 100; move the sliders so "
                        "they add up to 100 (or Reset what-if). Nothing was run."
                    )
                defs = with_variant_weights(defs, key, edit["weights"])
        return defs

    # ---- property sets --------------------------------------------------------------------------
    def load(self, frame: pd.DataFrame) -> None:
        """Use a DataFrame of property sets (``distinct_id`` plus property columns) for the next runs."""
        if not isinstance(frame, pd.DataFrame):
            raise FormError(f"load() takes a pandas DataFrame of property sets, not {type(frame).__name__}.")
        if "distinct_id" not in frame.columns:
            raise FormError("The DataFrame needs a 'distinct_id' column (one id per property set).")
        self.property_sets = frame.copy()
        text = property_text(frame)
        self._synced_text = text
        self.sets_box.value = text
        nested = [c for c in frame.columns if frame[c].map(lambda v: isinstance(v, dict | list)).any()]
        note = (
            f" Columns {', '.join(map(str, nested))} hold dicts/lists: edit them in code, the text "
            "shows them for reading."
            if nested
            else ""
        )
        self.sets_info.value = f"<i>{len(frame)} property sets loaded.{html.escape(note)}</i>"

    def current_property_sets(self) -> pd.DataFrame:
        """The property sets of the next run: the loaded DataFrame, or the text box parsed when edited."""
        if self.property_sets is not None and self.sets_box.value == self._synced_text:
            return self.property_sets
        frame = parse_property_text(self.sets_box.value)
        self.property_sets = frame
        self._synced_text = self.sets_box.value
        return frame

    def build_grid(self, values: dict[str, list[Any]] | None = None, ids_per_cell: int | None = None) -> bool:
        """Fill the property sets with ``simulate.grid(values, ids_per_cell=...)`` (default: the Grid box)."""
        from analytics_nb.simulation import grid

        try:
            spec = parse_grid_text(self.grid_box.value) if values is None else values
            per_cell = self.ids_per_cell.value if ids_per_cell is None else ids_per_cell
            frame = grid(spec, ids_per_cell=per_cell)
        except Exception as exc:
            self._error(exc)
            return False
        self.load(frame)
        self._ok(f"Grid built: {len(frame)} property sets.")
        return True

    # ---- run and results ------------------------------------------------------------------------
    def run(self) -> pd.DataFrame | None:
        """Run the simulation with the panel's settings; returns ``.result`` (or None, see ``.error``)."""
        from analytics_nb.simulation import simulate, whatif

        try:
            frame = self.current_property_sets()
            engine = self.engine
            edited = self.edited_definitions() if engine == "local" else None
            edits = self.whatif_edits() if engine == "local" else {}
        except Exception as exc:
            self._error(exc)
            return None
        flags = self.flags
        definitions = edited if edits else self.definitions
        # remote runs go in chunks and the bar follows them; local and both runs are one step (local is fast)
        self.progress.max = max(len(frame), 1)
        self.progress.value = 0
        self.progress.bar_style = "info"
        self.progress.description = "running"

        def go() -> tuple[Any, Any]:
            if engine == "remote":
                sim = self._remote_in_chunks(frame, flags)
            else:
                sim = simulate(
                    frame,
                    flags,
                    engine,
                    client=self.client if engine != "local" else None,
                    definitions=definitions,
                    progress=False,
                )
            moves = None
            if edits:
                moves = whatif(frame, self.definitions, edited, flags=flags).moves
            return sim, moves

        ok, value = self._attempt(f"Running {len(frame)} property sets ({engine})…", go)
        if not ok or value is None:
            self.progress.bar_style = "danger"
            self.progress.description = "failed"
            return None
        self.simulation, self.moves = value
        self.result = self.simulation.frame
        self.progress.value = self.progress.max
        self.progress.bar_style = "success"
        self.progress.description = "done"
        self._render_results()
        errors = len(self.simulation.errors)
        extra = ""
        if errors:
            first = str(self.simulation.errors["error"].iloc[0])
            first = first if len(first) <= 140 else first[:137] + "..."
            extra = f", {errors} row(s) with errors (see the error column; first: {first})"
        self._ok(
            f"Done: {len(self.result)} property sets, {len(self.simulation.flags)} flags ({engine}){extra}."
        )
        return self.result

    def _remote_in_chunks(self, frame: pd.DataFrame, flags: list[str] | None) -> Any:
        """Remote decide in chunks so that the progress bar moves; the chunks' results are put together."""
        from analytics_nb.simulation import SimulationResult, simulate

        size = max(self.chunk_size, -(-len(frame) // 20))
        parts = []
        started = time.perf_counter()
        for start in range(0, max(len(frame), 1), size):
            chunk = frame.iloc[start : start + size]
            part = simulate(
                chunk, flags, "remote", client=self.client, definitions=self.definitions, progress=False
            )
            parts.append(part)
            self.progress.value = min(start + len(chunk), self.progress.max)
        if len(parts) == 1:
            return parts[0]
        result = pd.concat([p.frame for p in parts])
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

    def _render_results(self) -> None:
        sim = self.simulation
        self.bars_html.value = "<b>Variant shares</b>" + share_bars_html(sim.summary())
        if self.moves is not None:
            described = _describe_edits(self.whatif_edits())
            body = (
                _html_table(self.moves, css_class="anb-table anb-moves")
                if len(self.moves)
                else "<i>nobody moves</i>"
            )
            self.moves_html.value = (
                f"<b>What-if moves against the current definitions</b> ({html.escape(described)})" + body
            )
        else:
            self.moves_html.value = ""
        if sim.agreement is not None:
            self.agreement_html.value = "<b>Agreement local vs remote</b>" + _html_table(
                sim.agreement, css_class="anb-table anb-agreement"
            )
        else:
            self.agreement_html.value = ""
        self.table_html.value = "<b>Results</b> (input properties, then one column per flag)" + frame_html(
            self.display_frame(), max_rows=self.max_rows, css_class="anb-table anb-results", bools="text"
        )

    def display_frame(self) -> pd.DataFrame:
        """The results as shown: distinct_id, the input properties, the flags, and errors if any."""
        sim = self.simulation
        frame = sim.frame
        flags = [c for c in frame.columns if c != "distinct_id" and c != "error" and ":" not in str(c)]
        inputs = sim.inputs
        props = [c for c in inputs.columns if c != "distinct_id" and c not in frame.columns]
        shown = pd.concat([frame[["distinct_id"]], inputs[props], frame[flags]], axis=1)
        if "error" in frame.columns and frame["error"].notna().any():
            shown = shown.assign(error=frame["error"])
        return shown

    def export_csv(self, path: str | Path | None = None) -> Path | None:
        """Write the last result to CSV (default: the file name box); returns the path written or None."""
        if self.simulation is None:
            self._error(FormError("Run a simulation first; there is nothing to export yet."))
            return None
        target = Path(path if path is not None else self.export_name.value.strip() or "simulation.csv")
        if target.suffix.lower() != ".csv":
            self._error(
                FormError(f"The file name {str(target)!r} should end in .csv, e.g. 'simulation.csv'.")
            )
            return None
        ok, written = self._attempt(f"Writing {target}…", lambda: self.simulation.to_csv(target))
        if not ok or written is None:
            return None
        self.exported = Path(written).resolve()
        self.export_label.value = f"written: <code>{html.escape(str(self.exported))}</code>"
        self._ok(f"Exported {len(self.result) if self.result is not None else 0} rows to {self.exported}.")
        return self.exported
