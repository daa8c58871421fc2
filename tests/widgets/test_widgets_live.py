"""The panels as analysts meet them in JupyterLab (issue 14 item 7 and the panel side of items 5 and 8,
issue 13 items 4 and 7): they fit the cell, clear stale state after an error, show values set from code,
share colours with ``result.plot()``, export CSV as a browser download, say plainly when their client was
closed (and take a new one), and match errors by type."""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ipywidgets as w
import pandas as pd
import pytest

from _clients import client_for
from _flags import condition, flag
from analytics_nb import Client, errors
from analytics_nb._palette import FALSE_COLOUR, TRUE_COLOUR, value_colours
from analytics_nb.frames import read_csv
from analytics_nb.widgets import (
    ClientClosedError,
    FlagSimulator,
    PlaylistEditor,
    TransformationsBrowser,
    describe_error,
)
from analytics_nb.widgets._panel import Panel

DEFINITIONS: list[dict[str, Any]] = [
    flag("half", condition(rollout=50)),
    flag("exp", variants={"control": 34, "test": 33, "other": 33}),
]
SETS = pd.DataFrame({"distinct_id": [f"id-{i}" for i in range(300)], "country": ["US", "DE", "FR"] * 100})


@pytest.fixture
def client(empty_sandbox: Any) -> Iterator[Client]:
    c = client_for(empty_sandbox, ids=True, max_retries=0)
    yield c
    c.close()


def _walk(widget: w.Widget) -> Iterator[w.Widget]:
    yield widget
    for child in getattr(widget, "children", ()) or ():
        yield from _walk(child)


def _px(value: str | None) -> float | None:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)px", value or "")
    return float(match.group(1)) if match else None


def _assert_fits(panel: Panel) -> None:
    """No fixed width wider than a notebook cell leaves (~900 px at a 1280-px window), every row wraps."""
    root = panel
    assert root.layout.width == "100%" and root.layout.max_width == "100%"
    for widget in _walk(root):
        layout = widget.layout
        if isinstance(widget, w.VBox):  # a px flex basis in a column would squeeze a child's height
            for child in widget.children:
                assert "px" not in (child.layout.flex or ""), f"{child} is squeezed in a column"
        if isinstance(widget, w.HBox):
            assert "wrap" in (layout.flex_flow or ""), f"a row that cannot wrap: {widget}"
        width, cap = _px(layout.width), _px(layout.max_width)
        assert width is None or width <= 560, f"{type(widget).__name__} is {layout.width} wide"
        assert cap is None or cap <= 560
        if layout.width == "100%" and not isinstance(widget, w.Box | w.HTML | w.Output):
            assert layout.max_width, f"{type(widget).__name__} grows without a cap"
        if isinstance(widget, w.HTML):
            assert not re.search(r"(?<!max-)width:\s*[5-9]\d\dpx", widget.value)


# ---- fits a 1280-px JupyterLab window --------------------------------------------------------------------


def test_simulator_fits_the_cell_sets_and_grid_shrink() -> None:
    sim = FlagSimulator(DEFINITIONS, property_sets=SETS)
    sim.pick("half", "exp")
    sim.run()
    _assert_fits(sim)
    for area in (sim._sets_view.text, sim._sets_view.grid):
        assert area.layout.width == "100%" and area.layout.min_width == "0"
    sets_and_controls = sim.children[1]
    assert sets_and_controls.layout.flex_flow == "row wrap"
    assert all(child.layout.min_width == "0" for child in sets_and_controls.children)


def test_editor_fits_the_cell_with_the_archive_confirmation_shown(empty_sandbox: Any, client: Client) -> None:
    made = client.playlists.create("collection", "a rather long playlist name " * 3)
    editor = PlaylistEditor(client)
    editor.select(made.short_id)
    editor.ask_archive()
    assert editor._confirm.visible
    _assert_fits(editor)
    # the confirmation wraps inside the form's column; the form and the recordings ("+ Add") wrap too
    assert editor._confirm.root.layout.flex_flow == "row wrap"
    assert editor._confirm.question.layout.min_width == "0"
    form_and_recordings = editor.children[4]
    assert form_and_recordings.layout.flex_flow == "row wrap"
    assert editor._recordings_view.add in list(_walk(form_and_recordings))


def test_transformations_browser_fits_the_cell(sandbox: Any) -> None:
    with client_for(sandbox, ids=True, max_retries=0) as c:
        browser = TransformationsBrowser(c)
        browser.select(browser.transformations[0].id)
        _assert_fits(browser)


# ---- stale state is cleared after an error -----------------------------------------------------------


def test_failed_run_clears_the_previous_results_and_the_loaded_count() -> None:
    sim = FlagSimulator(DEFINITIONS, property_sets=SETS)
    assert "300 property sets loaded" in sim._sets_view.info.value
    assert sim.run() is not None
    assert sim.export_csv()
    assert not sim._results_view.empty and sim._export_view.link.value
    sim._sets_view.text.value = "distinct_id,country\nu1,US,extra"
    assert "300" not in sim._sets_view.info.value  # edited: the count no longer describes the text
    assert sim.run() is None
    assert "line 2 has 3 cells" in sim.status_text
    assert sim.result is None and sim.simulation is None and sim.moves is None
    assert sim._results_view.empty and sim._export_view.link.value == ""
    assert sim._run_bar.progress.bar_style == "danger" and sim._run_bar.progress.value == 0
    assert "300" not in sim._sets_view.info.value and "Not read" in sim._sets_view.info.value
    assert sim.export_csv() is False and "Run a simulation first" in sim.status_text


def test_failed_grid_build_says_the_sets_are_the_previous_ones() -> None:
    sim = FlagSimulator(DEFINITIONS, property_sets=SETS)
    sim._sets_view.grid.value = "country US"
    assert sim.build_grid() is False
    assert "Grid not built" in sim._sets_view.info.value and "loaded" not in sim._sets_view.info.value


def test_a_new_run_drops_the_download_link_of_the_previous_one() -> None:
    sim = FlagSimulator(DEFINITIONS, property_sets=SETS)
    sim.run()
    sim.export_csv()
    old = sim._export_view.link.value
    sim.load(SETS.head(5))
    sim.run()
    assert sim._export_view.link.value == "" and old


# ---- values set from code show in the form -------------------------------------------------------------


def test_selected_set_from_code_fills_the_form(empty_sandbox: Any, client: Client) -> None:
    first = client.playlists.create("collection", "first", description="one")
    second = client.playlists.create("collection", "second", description="two")
    editor = PlaylistEditor(client)
    editor.selected = first.short_id
    assert editor._form.name.value == "first" and editor._table_view.picker.value == first.short_id
    editor.selected = second  # a Playlist works too
    assert editor._form.description.value == "two" and editor.selected.short_id == second.short_id
    assert "background:#e8f0fe" in editor._table_view.table.value
    editor.selected = None
    assert editor._form.name.value == "" and editor._form.name.disabled
    editor.page = 5  # clamped: one page
    assert editor.page == 0 and "page 1 of 1" in editor._table_view.page_label.value


def test_simulator_state_set_from_code_shows_in_the_controls() -> None:
    sim = FlagSimulator(DEFINITIONS)
    sim.property_sets = SETS.head(3)
    assert sim._sets_view.text.value.splitlines() == ["distinct_id,country", "id-0,US", "id-1,DE", "id-2,FR"]
    assert "3 property sets loaded" in sim._sets_view.info.value
    sim.flags = ["exp"]
    assert sim._flag_picker.select.value == ("exp",) and set(sim._whatif_view.weights) == {"exp"}
    sim.definitions = DEFINITIONS[:1]
    assert sim._flag_picker.keys == ["half"] and sim.flags is None
    sim.property_sets = None
    assert sim._sets_view.text.value == "distinct_id\n" and sim._sets_view.info.value == ""


def test_transformation_selected_from_code_loads_its_source(sandbox: Any) -> None:
    with client_for(sandbox, ids=True, max_retries=0) as c:
        browser = TransformationsBrowser(c)
        target = browser.transformations[-1]
        browser.selected = target.id
        assert browser._list_view.picker.value == target.id
        assert browser._source_view.editor.value == (
            browser.sources[browser._source_view.filename or ""] or ""
        )


# ---- colours shared with result.plot() -------------------------------------------------------------------


def test_share_bars_use_the_plot_colours() -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.colors import to_hex

    sim = FlagSimulator(DEFINITIONS, property_sets=SETS)
    sim.run()
    assert sim.simulation is not None
    ax = sim.simulation.plot()
    handles, labels = ax.get_legend_handles_labels()
    plotted = {
        label: to_hex(handle.patches[0].get_facecolor())
        for handle, label in zip(handles, labels, strict=True)
    }
    bars = dict(
        re.findall(r'data-value="([^"]+)"[^>]*data-colour="(#[0-9a-f]{6})"', sim._results_view.bars.value)
    )
    shown = {{"true": "True", "false": "False"}.get(k, k): v for k, v in bars.items()}
    assert shown == plotted
    assert shown["True"] == TRUE_COLOUR and shown["False"] == FALSE_COLOUR
    assert value_colours(["control"])["control"] == shown["control"]


# ---- Export CSV is a browser download ----------------------------------------------------------------


def test_export_csv_offers_a_download_link_with_the_data_and_writes_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    sim = FlagSimulator(DEFINITIONS, property_sets=SETS.head(4))
    sim.run()
    sim._export_view.export.click()
    assert sim.last_error is None and "Download simulation.csv" in sim.status_text
    assert list(tmp_path.iterdir()) == []  # nothing on the server unless a path is asked for
    link = sim._export_view.link.value
    found = re.search(r'download="simulation.csv" href="data:text/csv;charset=utf-8;base64,([^"]+)"', link)
    assert found is not None
    (tmp_path / "back.csv").write_bytes(base64.b64decode(found.group(1)))
    back = read_csv(tmp_path / "back.csv")
    assert back["distinct_id"].tolist() == ["id-0", "id-1", "id-2", "id-3"]
    assert back["half"].tolist() == sim.result["half"].tolist()
    sim._export_view.filename.value = "renamed.csv"
    sim.export_csv()
    assert 'download="renamed.csv"' in sim._export_view.link.value  # regenerated on each export
    assert sim.export_csv(tmp_path / "server.csv") and (tmp_path / "server.csv").exists()
    assert sim.exported == (tmp_path / "server.csv").resolve()


# ---- a closed client is named with its fix --------------------------------------------------------------


def test_closed_client_is_reported_with_the_fix_and_a_new_client_revives_the_panel(
    empty_sandbox: Any,
) -> None:
    old = client_for(empty_sandbox, ids=True, max_retries=0)
    old.playlists.create("collection", "kept")
    editor = PlaylistEditor(old)
    old.close()  # what a notebook's last cell used to do
    empty_sandbox.clear_requests()
    assert editor.refresh() is False
    assert isinstance(editor.last_error, ClientClosedError)
    assert (
        "client is closed" in editor.status_text and "panel.client = Client.from_env()" in editor.status_text
    )
    assert len(editor.playlists) == 1 and not editor._filter_bar.refresh.disabled
    with client_for(empty_sandbox, ids=True, max_retries=0) as fresh:
        editor.client = fresh
        assert editor.last_error is None and "1 playlist found" in editor.status_text
        assert editor.refresh()


def test_closed_client_on_the_simulator_local_still_runs(empty_sandbox: Any) -> None:
    c = client_for(empty_sandbox, ids=True, max_retries=0)
    sim = FlagSimulator(c, property_sets=SETS.head(3))
    sim.definitions = DEFINITIONS
    c.close()
    assert sim.run() is None and "client is closed" in sim.status_text  # remote needs the client
    sim.engine = "local"
    assert sim.run() is not None and sim.last_error is None


def test_panels_refuse_objects_that_only_look_like_a_client() -> None:
    class LooksLikeOne:
        _run = None
        feature_flags = decide = playlists = None

    with pytest.raises(TypeError, match=r"needs an analytics_nb\.Client"):
        PlaylistEditor(LooksLikeOne())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"needs an analytics_nb\.Client"):
        TransformationsBrowser(LooksLikeOne())  # type: ignore[arg-type]


# ---- errors matched by type, in plain words -----------------------------------------------------------


def test_a_missing_project_is_named_not_soft_deleted_playlists(empty_sandbox: Any) -> None:
    with client_for(empty_sandbox, project_id=987654, ids=True, max_retries=0) as wrong:
        editor = PlaylistEditor(wrong)
    assert isinstance(editor.last_error, errors.NotFoundError)
    assert "Project 987654 was not found" in editor.status_text and "project_id" in editor.status_text
    assert "archived" not in editor.status_text and "soft-deleted" not in editor.status_text


def test_errors_are_matched_by_type_not_by_name() -> None:
    class Gone(errors.NotFoundError):
        """A subclass whose name says nothing."""

    assert "(404)" in describe_error(Gone("x", status=404, url="http://h/api/projects/1/things/9/"))

    class NotFoundError(Exception):  # same name, unrelated type, no status
        pass

    assert describe_error(NotFoundError("plain")) == "NotFoundError: plain"

    class NetworkError(ValueError):
        pass

    assert not describe_error(NetworkError("bad value")).startswith("Could not reach")
