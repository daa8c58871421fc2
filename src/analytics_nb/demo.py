"""The one-command demo (`analytics-nb demo --out DIR`): the main workflows against the embedded sandbox.

It starts a local sandbox with the demo seed (no network, no account), then exports playlists and
transformations to CSV, simulates flags remotely and locally with a what-if rollout change and a PNG chart,
attributes flags to events, captures them and reads them back, and prints what it did and where it wrote.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

if TYPE_CHECKING:
    from analytics_nb.session import Client

__all__ = ["DEFAULT_OUT", "DemoSummary", "main", "run"]

DEFAULT_OUT = "demo-output"

#: Flags the demo simulates; all exist in the sandbox's demo seed.
SIMULATED_FLAGS = ["new-checkout", "beta-feature", "gradual-rollout", "paid-upsell", "eu-cohort-promo"]
#: The what-if: this flag's first condition goes from its seeded rollout to ``WHATIF_PERCENT``.
WHATIF_FLAG = "gradual-rollout"
WHATIF_PERCENT = 60
#: the flag whose audience the demo reads from the project's own persons (`client.audience`)
AUDIENCE_FLAG = "new-checkout"
#: the longest first clause a warning line keeps (the whole warning can run to 1,400 characters)
WARNING_HEAD = 110


@dataclass
class DemoSummary:
    """What one demo run did (one line per workflow) and the files it wrote, in order."""

    out: Path
    lines: list[tuple[str, str]] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def add(self, label: str, text: str) -> None:
        """Record one workflow's result line."""
        self.lines.append((label, text))

    def render(self) -> str:
        """The summary as printed by ``main``: results, then every path written, then notes."""
        width = max((len(label) for label, _ in self.lines), default=0) + 2
        out = ["analytics-nb demo: embedded sandbox with the demo seed (local, offline)"]
        out += [f"  {label + ':':<{width}}{text}" for label, text in self.lines]
        n = len(self.files)
        out.append(f"Wrote {n} file{'' if n == 1 else 's'} to {self.out}:")
        out += [f"  {path}" for path in self.files]
        out += [f"Note: {note}" for note in self.notes]
        out += [f"Warning: {text}" for text in self.warnings]
        return "\n".join(out)


def short_warning(message: warnings.WarningMessage) -> str:
    """One short line for a warning: its class, the first clause of its text (the count; the details
    that follow can run to 1,400 characters) and where to read more: ``help()`` on the public class, whose
    docstring says what it means and the fix (installed users have no docs folder)."""
    cls = message.category
    text = " ".join(str(message.message).split())
    head = re.split(r"(?<=[.;:])\s", text, maxsplit=1)[0].rstrip(".;:")
    if len(head) > WARNING_HEAD:
        head = head[: WARNING_HEAD - 3].rstrip() + "..."
    public = ".".join(cls.__module__.split(".")[:2])
    return f"{cls.__name__}: {head} (more: help({public}.{cls.__name__}))"


def _write_csv(summary: DemoSummary, df: pd.DataFrame, name: str) -> Path:
    from analytics_nb.frames import to_csv

    path = summary.out / name
    to_csv(df, path)
    summary.files.append(path)
    return path


def _playlists(client: Client, summary: DemoSummary) -> None:
    playlists = client.playlists.frame()
    _write_csv(summary, playlists, "playlists.csv")
    collections = playlists[playlists["type"] == "collection"]
    counts = collections["recordings_counts"].map(
        lambda c: ((c or {}).get("collection") or {}).get("count") or 0
    )
    biggest = collections.iloc[int(counts.to_numpy().argmax())] if len(collections) else None
    text = f"{len(playlists)} playlists ({len(collections)} collections)"
    if biggest is not None:
        recordings = client.playlists.recordings_frame(biggest["short_id"])
        _write_csv(summary, recordings, "recordings.csv")
        text += f"; {len(recordings)} recordings in {biggest['name']!r}"
    summary.add("playlists", text)


def _transformations(client: Client, summary: DemoSummary) -> None:
    from analytics_nb.frames import transformations_frame

    plugins = client.transformations.frame()
    sources = client.transformations.sources_frame()
    _write_csv(summary, sources, "transformation_sources.csv")
    checked = transformations_frame([client.transformations.check_for_updates(int(i)) for i in plugins["id"]])
    outdated = checked[checked["latest_tag"].notna() & (checked["tag"] != checked["latest_tag"])]
    upgrades = []
    for ident, name, tag in zip(outdated["id"], outdated["name"], outdated["tag"], strict=True):
        upgraded = client.transformations.upgrade(int(ident))
        upgrades.append(f"{name} {tag} -> {upgraded.tag}")
    _write_csv(summary, client.transformations.frame(), "transformations.csv")
    text = f"{len(plugins)} plugins, {len(sources)} source files; "
    text += f"upgraded {len(upgrades)}: {', '.join(upgrades)}" if upgrades else "all up to date"
    summary.add("transformations", text)


def _chart(result: Any, summary: DemoSummary) -> None:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        from analytics_nb.simulation import PLOT_HINT

        summary.notes.append(f"the chart was skipped: {PLOT_HINT}")
        return
    # A bare Figure (no pyplot): no GUI backend is touched, so this works headless and inside Jupyter.
    figure = Figure(figsize=(8, 3.2))
    result.plot(SIMULATED_FLAGS, ax=figure.subplots())
    figure.tight_layout()
    path = summary.out / "flag_shares.png"
    figure.savefig(path, dpi=100)
    summary.files.append(path)


def _flags(client: Client, summary: DemoSummary) -> Any:
    from analytics_nb.simulation import WhatIf, agreement_headline, grid, with_rollout

    sets = grid({"country": ["US", "DE", "FR"], "plan": ["free", "pro"]}, ids_per_cell=50, seed=0)
    # the grid's ids are synthetic (no stored person in the project): a property without a column is
    # indeed not set for them, as the service sees it
    result = client.simulate(sets, SIMULATED_FLAGS, engine="both", progress=False, missing_columns="not_set")
    result.to_csv(summary.out / "simulation.csv")
    summary.files.append(summary.out / "simulation.csv")
    _write_csv(summary, result.summary(), "simulation_summary.csv")
    agreement = result.agreement
    assert agreement is not None  # engine="both" compares the engines
    _write_csv(summary, agreement, "simulation_agreement.csv")
    summary.add(
        "flag simulation",
        f"{len(sets)} property sets x {len(SIMULATED_FLAGS)} flags; remote decide vs the local engine: "
        f"{agreement_headline(agreement)}",
    )

    definitions = client.feature_flags.local_evaluation()
    before = next(f for f in definitions.flags if f.key == WHATIF_FLAG).filters.groups[0].rollout_percentage
    change = WhatIf(sets, definitions).run(with_rollout(definitions, WHATIF_FLAG, WHATIF_PERCENT))
    assert change.changes is not None  # an in-memory what-if lists every moved row
    _write_csv(summary, change.changes, "whatif_changes.csv")
    moved = ", ".join(
        f"{count} property sets {old} -> {new}"
        for _flag, old, new, count in change.moves.itertuples(index=False, name=None)
    )
    summary.add(
        "what-if",
        f"{WHATIF_FLAG} {before:g}% -> {WHATIF_PERCENT}%: {moved or 'nobody moves'}",
    )
    _chart(result, summary)
    return sets


def _audience(client: Client, summary: DemoSummary) -> None:
    """Who exactly gets a flag among the project's own persons: `client.audience` reads them through the
    query API (one row per distinct id) and runs the local engine over them (the /flags answer per id)."""
    who = client.audience(AUDIENCE_FLAG)
    who.to_csv(summary.out / "audience.csv", inputs=False)
    summary.files.append(summary.out / "audience.csv")
    counts = who.outputs[AUDIENCE_FLAG].astype(object).value_counts(dropna=False)
    shown = ", ".join(f"{value}: {count:,}" for value, count in counts.items())
    summary.add("audience", f"{AUDIENCE_FLAG} over the project's {len(who):,} distinct ids: {shown}")


def _attribution(client: Client, sets: pd.DataFrame, summary: DemoSummary) -> None:
    from analytics_nb.capture import attribute

    people = sets.iloc[::10].reset_index(drop=True)  # one person in ten of the grid
    outcomes = client.simulate(people, SIMULATED_FLAGS, engine="local", missing_columns="not_set")
    events = pd.DataFrame(
        {
            "event": ["checkout_started", "checkout_completed"] * len(people),
            "distinct_id": people["distinct_id"].repeat(2).to_numpy(),
            "timestamp": pd.Timestamp("2026-01-05T10:00:00Z")
            + pd.to_timedelta(range(2 * len(people)), unit="min"),
            "cart_value": [float(10 + i % 7 * 5) for i in range(2 * len(people))],
        }
    )
    attributed = attribute(events, outcomes)
    report = client.capture_frame(attributed, progress=False)
    _write_csv(summary, report, "capture_report.csv")

    stored = client.sandbox_server.events()
    stored = stored[stored["uuid"].isin(report["uuid"])]
    stored = stored.drop(columns=[c for c in ("token",) if c in stored.columns])  # the project key
    _write_csv(summary, stored.reset_index(drop=True), "events_read_back.csv")
    seen = stored["properties"].map(lambda p: (p or {}).get(f"$feature/{SIMULATED_FLAGS[0]}"))
    variants = seen.dropna().astype(str).value_counts().sort_index()
    counts = report["status"].value_counts().to_dict()
    summary.add(
        "attribution",
        f"{len(report)} events attributed and captured ({', '.join(f'{n} {s}' for s, n in counts.items())}); "
        f"{len(stored)} read back from the sandbox; $feature/{SIMULATED_FLAGS[0]}: "
        + ", ".join(f"{n} {value}" for value, n in variants.items()),
    )


def run(out: str | Path = DEFAULT_OUT, *, echo: Callable[[str], Any] | None = None) -> DemoSummary:
    """Run every demo workflow against a fresh embedded sandbox, writing into ``out`` (created if needed).

    ``echo`` receives a line as each step starts (progress for the command line). Raises on failure.
    """
    from analytics_nb.session import Client

    out_dir = Path(out)
    if out_dir.exists() and not out_dir.is_dir():
        raise NotADirectoryError(f"--out {out_dir} is a file; give a folder to write the demo's files into.")
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = DemoSummary(out=out_dir)
    say = echo or (lambda _text: None)
    say("starting the embedded sandbox ...")
    client = Client.sandbox(seed="demo", progress=False)
    # the workflows' warnings become one short line each in the summary, not a paragraph amid the output
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        try:
            say("playlists ...")
            _playlists(client, summary)
            say("pipeline transformations ...")
            _transformations(client, summary)
            say("flag simulation and what-if ...")
            sets = _flags(client, summary)
            say("the audience among the project's own persons ...")
            _audience(client, summary)
            say("attribution and capture ...")
            _attribution(client, sets, summary)
        finally:
            client.close()
    summary.warnings += dict.fromkeys(short_warning(w) for w in caught)
    return summary


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="analytics-nb demo",
        description=(
            "Start the embedded sandbox (offline) and run the main workflows: playlists and transformations "
            "to CSV, a flag simulation with a what-if and a PNG chart, flag attribution captured and read "
            "back."
        ),
    )
    parser.add_argument(
        "--out",
        default=DEFAULT_OUT,
        metavar="DIR",
        help=f"folder for the CSV files and the chart (created if needed; files are overwritten; "
        f"default {DEFAULT_OUT})",
    )
    parser.add_argument("--quiet", action="store_true", help="print only the final summary")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``analytics-nb demo``; returns the exit status (0 ok, 1 a step failed, 2 bad usage)."""
    try:
        args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:  # --help (0) or a usage error (2): argparse already printed why
        return int(exc.code or 0) if isinstance(exc.code, int | None) else 2
    started = time.perf_counter()
    echo = None if args.quiet else (lambda text: print(f"analytics-nb demo: {text}", flush=True))
    try:
        summary = run(args.out, echo=echo)
    except NotADirectoryError as exc:
        print(f"analytics-nb demo: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        print(f"analytics-nb demo: failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(summary.render())
    print(f"Done in {time.perf_counter() - started:.1f} s.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
