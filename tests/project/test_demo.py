"""`analytics-nb demo`: runs offline into a folder, exits 0, writes CSVs that read back and a real PNG."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from analytics_nb import cli, demo
from analytics_nb.frames import read_csv

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
EXPECTED = [
    "playlists.csv",
    "recordings.csv",
    "transformation_sources.csv",
    "transformations.csv",
    "simulation.csv",
    "simulation_summary.csv",
    "simulation_agreement.csv",
    "whatif_changes.csv",
    "flag_shares.png",
    "audience.csv",
    "capture_report.csv",
    "events_read_back.csv",
]


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str, str, Path]:
    """One demo run through the `analytics-nb` entry point: (exit code, stdout, stderr, output folder)."""
    out = tmp_path_factory.mktemp("demo") / "nested" / "demo-output"
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = cli.main(["demo", "--out", str(out)])
    return code, stdout.getvalue(), stderr.getvalue(), out


def test_exit_code_and_summary_lists_every_file(demo_run: tuple[int, str, str, Path]) -> None:
    code, stdout, stderr, out = demo_run
    assert code == 0, stderr
    assert stderr == ""
    assert sorted(p.name for p in out.iterdir()) == sorted(EXPECTED)
    for name in EXPECTED:
        assert str(out / name) in stdout
    assert f"Wrote {len(EXPECTED)} files to {out}" in stdout
    assert "remote decide vs the local engine: 0 disagreements over 1,500 compared" in stdout
    assert "unknown" not in stdout.split("remote decide vs")[1].splitlines()[0]
    assert "gradual-rollout 25% -> 60%" in stdout
    # the project's own persons (issue 36): every distinct id of the demo project, one answer each
    assert re.search(
        r"new-checkout over the project's [\d,]+ distinct ids: False: [\d,]+, control", stdout
    ), stdout


def test_csv_files_read_back_typed(demo_run: tuple[int, str, str, Path]) -> None:
    out = demo_run[3]
    playlists = read_csv(out / "playlists.csv")
    assert len(playlists) == 60
    assert str(playlists["created_at"].dtype) == "datetime64[us, UTC]"
    assert str(playlists["pinned"].dtype) == "boolean"
    assert isinstance(playlists["filters"].iloc[0], dict)

    transformations = read_csv(out / "transformations.csv")
    upgraded = transformations.dropna(subset=["latest_tag"])
    assert len(upgraded) > 0 and (upgraded["tag"] == upgraded["latest_tag"]).all()
    assert len(read_csv(out / "transformation_sources.csv")) == 2 * len(transformations)

    simulation = read_csv(out / "simulation.csv")
    assert len(simulation) == 300
    assert set(demo.SIMULATED_FLAGS) <= set(simulation.columns)
    agreement = read_csv(out / "simulation_agreement.csv")
    assert list(agreement["flag"]) == demo.SIMULATED_FLAGS
    assert (agreement["agree"] == agreement["rows"]).all()

    changes = read_csv(out / "whatif_changes.csv")
    assert len(changes) > 0
    assert set(changes["flag"]) == {demo.WHATIF_FLAG}
    assert changes["from"].tolist() == [False] * len(changes)
    assert changes["to"].tolist() == [True] * len(changes)


def test_attributed_events_were_captured_and_read_back(demo_run: tuple[int, str, str, Path]) -> None:
    out = demo_run[3]
    report = read_csv(out / "capture_report.csv")
    assert len(report) == 60 and set(report["status"]) == {"sent"}
    events = read_csv(out / "events_read_back.csv")
    assert sorted(events["uuid"]) == sorted(report["uuid"])
    assert "token" not in events.columns
    seen = events["properties"].map(lambda p: p["$feature/new-checkout"])
    assert set(seen.astype(str)) <= {"control", "test", "False"}
    simulation = read_csv(out / "simulation.csv").set_index("distinct_id")["new-checkout"]
    for row in events.itertuples():
        assert row.properties["$feature/new-checkout"] == simulation[row.distinct_id]


def test_chart_is_a_png(demo_run: tuple[int, str, str, Path]) -> None:
    data = (demo_run[3] / "flag_shares.png").read_bytes()
    assert data.startswith(PNG_MAGIC)
    assert len(data) > 5_000


def test_no_key_in_output_or_files(demo_run: tuple[int, str, str, Path]) -> None:
    _code, stdout, stderr, out = demo_run
    for text in (stdout, stderr, *(p.read_bytes().decode("latin-1") for p in out.iterdir())):
        assert "phx_" not in text
        assert "phc_" not in text


def test_out_that_is_a_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "taken"
    target.write_text("keep me", encoding="utf-8")
    assert demo.main(["--out", str(target), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "is a file" in err and str(target) in err
    assert target.read_text(encoding="utf-8") == "keep me"


def test_help_and_bad_option(capsys: pytest.CaptureFixture[str]) -> None:
    assert demo.main(["--help"]) == 0
    assert "--out DIR" in capsys.readouterr().out
    assert demo.main(["--bogus"]) == 2
    assert "unrecognized arguments: --bogus" in capsys.readouterr().err


def test_summary_render_lists_files_and_notes(tmp_path: Path) -> None:
    summary = demo.DemoSummary(out=tmp_path)
    summary.add("playlists", "3 playlists")
    summary.files.append(tmp_path / "a.csv")
    summary.notes.append("the chart was skipped")
    text = summary.render()
    assert "  playlists: 3 playlists" in text
    assert f"Wrote 1 file to {tmp_path}:\n  {tmp_path / 'a.csv'}" in text
    assert text.endswith("Note: the chart was skipped")


def test_each_warning_is_one_short_line_with_where_to_read_more(demo_run: tuple[int, str, str, Path]) -> None:
    """Issue 38: the demo printed a 1,400-character `MissingPropertyWarning` in the middle of its output.
    Now each warning is one line of the summary: its class, its count, and ``help()`` on the class."""
    _, stdout, stderr, _ = demo_run
    lines = [line for line in stdout.splitlines() if line.startswith("Warning: ")]
    assert lines, stdout  # the demo's simulation does warn (properties the property sets lack)
    assert any("MissingPropertyWarning: 10 flags read properties" in line for line in lines)
    for line in lines:
        assert len(line) < 200 and "(more: help(analytics_nb." in line, line
    assert max(len(line) for line in (stdout + stderr).splitlines()) < 200
    assert "Warning" not in stderr


def test_short_warning_keeps_the_first_clause() -> None:
    import warnings

    from analytics_nb.simulation import MissingPropertyWarning

    message = warnings.WarningMessage(
        MissingPropertyWarning("3 flags read 2 properties: " + "x" * 1400), MissingPropertyWarning, "f.py", 1
    )
    assert demo.short_warning(message) == (
        "MissingPropertyWarning: 3 flags read 2 properties "
        "(more: help(analytics_nb.flags.MissingPropertyWarning))"  # the engine's warning, at every door
    )
