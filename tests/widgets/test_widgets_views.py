"""Each small view on its own: built without a panel or a client, driven from code, state read back as
plain attributes and DataFrames."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import pandas as pd
import pytest

from _flags import condition, flag
from analytics_nb.frames import read_csv
from analytics_nb.models import Playlist
from analytics_nb.simulation import load_definitions
from analytics_nb.widgets import FormError
from analytics_nb.widgets.playlists._create import CreateForm, RestoreView
from analytics_nb.widgets.playlists._filter_bar import FilterBar
from analytics_nb.widgets.playlists._form import PlaylistForm
from analytics_nb.widgets.playlists._recordings import RecordingsView
from analytics_nb.widgets.playlists._table import PlaylistTable
from analytics_nb.widgets.simulator._export import ExportView
from analytics_nb.widgets.simulator._flag_picker import FlagPicker
from analytics_nb.widgets.simulator._property_sets import PropertySetsView
from analytics_nb.widgets.simulator._results import ResultsView
from analytics_nb.widgets.simulator._run_bar import RunBar
from analytics_nb.widgets.simulator._whatif import WhatIfView
from analytics_nb.widgets.transformations._source import SourceEditor
from analytics_nb.widgets.views import ConfirmRow, JsonEditor, StatusBar

FLAGS: list[dict[str, Any]] = [
    {"key": "gone", "deleted": True, "filters": {"groups": []}},
    flag("off", active=False),
    flag("half", condition(rollout=50)),
    flag("exp", variants={"control": 50, "test": 50}),
]


def _playlist(short_id: str, name: str = "", **kw: Any) -> Playlist:
    return Playlist(short_id=short_id, name=name, type=kw.pop("type", "collection"), **kw)


class Calls:
    """Records the callbacks a view calls."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, tuple[Any, ...]]] = []

    def __call__(self, name: str) -> Any:
        return lambda *args: self.seen.append((name, args))

    @property
    def names(self) -> list[str]:
        return [name for name, _args in self.seen]


# ---- shared views ------------------------------------------------------------------------------------


def test_status_bar_keeps_text_kind_and_error() -> None:
    bar = StatusBar()
    bar.error(FormError("Bad <field>"))
    assert bar.kind == "error" and bar.error_text == "Bad <field>" and "&lt;field&gt;" in bar.line.value
    bar.ok("fine")
    assert bar.last_error is None and bar.error_text is None and "anb-ok" in bar.line.value
    bar.message("line")
    assert bar.log.outputs[-1]["text"] == "line\n"


def test_confirm_row_asks_hides_and_calls_back() -> None:
    calls = Calls()
    confirm = ConfirmRow("confirm", "Yes, archive", on_yes=calls("yes"), on_cancel=calls("cancel"))
    assert not confirm.visible
    confirm.ask("Archive <b>x</b>?")
    assert confirm.visible and confirm.question.value == "Archive <b>x</b>?"
    confirm.yes.click()
    confirm.cancel.click()
    assert calls.names == ["yes", "cancel"]
    confirm.hide()
    assert not confirm.visible
    assert "anb-confirm-yes" in confirm.yes._dom_classes and "anb-confirm" in confirm.root._dom_classes


def test_json_editor_parses_and_names_line_and_column() -> None:
    editor = JsonEditor("Filters", "filters", css="x", height="80px", placeholder="")
    editor.set({"b": 1, "a": [1]})
    assert json.loads(editor.text) == {"a": [1], "b": 1}
    assert editor.parse() == {"a": [1], "b": 1}
    editor.text = '{"a":\n  [1,'
    with pytest.raises(FormError, match=r"filters field is not valid JSON .* line 2"):
        editor.parse()
    editor.text = "[]"
    with pytest.raises(FormError, match="must be a JSON object"):
        editor.parse()
    editor.text = "  "
    assert editor.parse() == {}


# ---- playlist views ----------------------------------------------------------------------------------


def test_filter_bar_builds_the_query_and_reports_changes() -> None:
    calls = Calls()
    bar = FilterBar(on_change=calls("change"), on_refresh=calls("refresh"))
    assert bar.query() == {}
    bar.search.value = " alpha "
    bar.type.value = "filters"
    bar.pinned.value = True
    assert bar.query() == {"search": "alpha", "type": "filters", "pinned": True}
    assert calls.names == ["change", "change", "change"]
    bar.set("", type="", pinned=False)  # from code: no reload per control
    assert bar.query() == {} and calls.names == ["change"] * 3
    bar.refresh.click()
    assert calls.names[-1] == "refresh"


def test_playlist_table_pages_and_picks() -> None:
    calls = Calls()
    table = PlaylistTable(3, on_pick=calls("pick"))
    table.items = [_playlist(f"s{i}", f"name {i}") for i in range(7)]
    table.render()
    assert table.pages == 3 and list(table.frame["short_id"]) == ["s0", "s1", "s2"]
    assert table.prev.disabled and not table.next.disabled
    table.next.click()
    table.next.click()
    assert table.page == 2 and list(table.frame["short_id"]) == ["s6"] and table.next.disabled
    assert "page 3 of 3" in table.page_label.value
    table.picker.value = "s6"
    assert calls.seen == [("pick", ("s6",))]
    table.selected_key = "s6"
    table.render()
    assert "background:#e8f0fe" in table.table.value and table.page_of("s4") == 1
    table.stale = True
    table.render()
    assert "last refresh failed" in table.page_label.value


def test_playlist_form_tracks_changes_and_follows_fresh_copies() -> None:
    calls = Calls()
    form = PlaylistForm(on_save=calls("save"), on_revert=calls("revert"), on_archive=calls("archive"))
    assert form.playlist is None and form.name.disabled and form.save.disabled
    stored = _playlist("abc", "old", description="d", type="filters", filters={"events": [1]})
    form.load(stored)
    assert form.values()["name"] == "old" and not form.is_dirty and not form.save.disabled
    form.edit(name="new", pinned=True)
    assert form.is_dirty and "unsaved" in form.dirty.value
    assert form.changes() == {"name": "new", "pinned": True}
    form.follow(
        _playlist("abc", "old", description="changed elsewhere", type="filters", filters={"events": [1]})
    )
    assert form.name.value == "new" and form.description.value == "changed elsewhere"
    form.edit(filters={})
    with pytest.raises(FormError, match="needs non-empty filters"):
        form.changes()
    with pytest.raises(FormError, match="Unknown form field"):
        form.edit(colour="red")
    form.save.click()
    form.revert.click()
    form.archive.click()
    assert calls.names == ["save", "revert", "archive"]
    form.load(_playlist("syn", "built in", is_synthetic=True))
    assert "read only" in form.title.value and form.name.disabled and form.save.disabled


def test_recordings_view_shows_a_frame_and_offers_its_ids() -> None:
    calls = Calls()
    view = RecordingsView(on_add=calls("add"), on_remove=calls("remove"))
    view.show(pd.DataFrame({"id": ["r1", "r2"], "distinct_id": ["u1", "u2"]}))
    assert view.picker.options == ("r1", "r2") and view.picked == "r1" and "r2" in view.table.value
    view.recording_id.value = "  r9 "
    assert view.typed_id == "r9"
    view.add.click()
    view.remove.click()
    assert calls.names == ["add", "remove"]
    view.clear()
    assert len(view.frame) == 0 and view.picked is None


def test_create_form_validates_before_anything_is_sent() -> None:
    form = CreateForm(on_create=lambda: None)
    form.name.value = "fresh"
    assert form.fields() == {"type": "collection", "name": "fresh"}
    form.type.value = "filters"
    with pytest.raises(FormError, match="needs filters"):
        form.fields()
    form.filters.text = '{"events": [{"id": "$pageview"}]}'
    assert form.fields()["filters"] == {"events": [{"id": "$pageview"}]}
    with pytest.raises(FormError, match="cannot have filters"):
        form.fields(type="collection")
    form.clear()
    assert form.name.value == "" and form.filters.text == ""
    restore = RestoreView(on_restore=lambda: None)
    assert "anb-restore-restore" in restore.restore._dom_classes


# ---- simulator views ---------------------------------------------------------------------------------


def test_property_sets_view_info_always_describes_the_text() -> None:
    view = PropertySetsView(on_build=lambda: None)
    view.load(pd.DataFrame({"distinct_id": [f"u{i}" for i in range(300)]}))
    assert "300 property sets loaded" in view.info.value and not view.edited
    view.text.value = "distinct_id\nonly-one\n"
    assert "300" not in view.info.value and "read at the next run" in view.info.value
    assert view.current()["distinct_id"].tolist() == ["only-one"]
    assert "1 property sets read" in view.info.value
    view.text.value = "distinct_id,x\nu1"
    with pytest.raises(FormError, match="line 2"):
        view.current()
    assert view.frame is None and "Not read" in view.info.value
    view.grid.value = "country: US, DE"
    assert view.grid_spec() == {"country": ["US", "DE"]}


def test_flag_picker_offers_live_flags_and_refuses_unknown_ones() -> None:
    calls = Calls()
    picker = FlagPicker(on_change=calls("change"))
    picker.offer(FLAGS)
    assert picker.keys == ["off", "half", "exp"] and picker.select.options[0] == ("off (inactive)", "off")
    picker.pick("half", "exp")
    assert picker.picked == ["half", "exp"] and calls.names == ["change"]
    with pytest.raises(FormError, match="known flags: off, half, exp"):
        picker.pick("nope")
    picker.offer(FLAGS[2:3])
    assert picker.picked == ["half"]


def test_run_bar_follows_a_run() -> None:
    bar = RunBar(on_engine=lambda: None, on_run=lambda: None, on_reload=lambda: None)
    bar.start(10)
    bar.advance(4)
    assert (bar.progress.value, bar.progress.max, bar.progress.description) == (4, 10, "running")
    bar.finish(False)
    assert bar.progress.value == 0 and bar.progress.bar_style == "danger"
    bar.finish(True)
    assert bar.progress.value == 10 and bar.progress.bar_style == "success"


def test_whatif_view_lists_only_what_moved() -> None:
    view = WhatIfView(on_reset=lambda: None)
    defs = load_definitions(FLAGS)
    view.build(defs, ["half", "exp"])
    assert len(view.rollout["half"]) == 1 and set(view.weights["exp"]) == {"control", "test"}
    assert view.edits() == {}
    view.set_rollout("half", 80)
    view.build(defs, ["half", "exp"])  # rebuilding keeps the slider values
    assert view.edits() == {"half": {"rollout": {0: 80.0}}}
    view.set_weights("exp", {"control": 10, "test": 80})
    with pytest.raises(FormError, match="add up to 90, not 100"):
        view.edited()
    view.reset_sliders()
    assert view.edits() == {} and view.edited() is not None


def test_results_view_clears_every_part() -> None:
    view = ResultsView()
    summary = pd.DataFrame(
        {
            "flag": ["f", "f"],
            "value": [True, False],
            "count": [3, 1],
            "share": [0.75, 0.25],
            "unknown": [0, 0],
        }
    )
    view.show(
        summary,
        pd.DataFrame({"distinct_id": ["a"], "f": [True]}),
        moves=pd.DataFrame({"flag": [], "from": [], "to": [], "count": []}),
        edits_text="f: condition 1 at 10%",
        agreement=None,
        max_rows=5,
    )
    assert not view.empty and "nobody moves" in view.moves.value and "anb-results" in view.table.value
    view.clear()
    assert view.empty


def test_export_view_link_carries_the_csv() -> None:
    view = ExportView(on_export=lambda: None)
    frame = pd.DataFrame({"distinct_id": ["a", "b"], "flag": [True, False]})
    view.filename.value = "mine.csv"
    text = view.offer(frame)
    match = re.search(
        r'<a class="anb-download" download="mine.csv" href="data:text/csv;charset=utf-8;base64,([^"]+)"',
        view.link.value,
    )
    assert match is not None
    assert base64.b64decode(match.group(1)).decode("utf-8") == text == view.csv_text
    view.filename.value = "mine.txt"
    with pytest.raises(FormError, match=r"should end in \.csv"):
        view.offer(frame)
    assert view.target(None) is None  # no server path: download only
    view.clear()
    assert view.link.value == "" and view.csv_text is None


def test_export_view_csv_reads_back(tmp_path: Any) -> None:
    view = ExportView(on_export=lambda: None)
    frame = pd.DataFrame({"distinct_id": ["a", "b"], "n": [1, 2]})
    path = tmp_path / "x.csv"
    path.write_text(view.offer(frame), encoding="utf-8")
    pd.testing.assert_frame_equal(read_csv(path), frame, check_dtype=False)


# ---- transformation views ----------------------------------------------------------------------------


def test_source_editor_opens_files_and_tracks_edits() -> None:
    editor = SourceEditor(on_save=lambda: None)
    editor.show({"b.ts": "B", "a.ts": "A"})
    assert editor.filename == "a.ts" and editor.editor.value == "A" and not editor.is_dirty
    editor.file_picker.value = "b.ts"
    assert editor.editor.value == "B"
    editor.editor.value = "B2"
    assert editor.is_dirty
    with pytest.raises(FormError, match="the files are"):
        editor.open("c.ts")
