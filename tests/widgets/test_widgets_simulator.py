"""Headless tests of FlagSimulator: controls driven from Python; local runs on definitions, remote runs on a
real sandbox over HTTP."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from _flags import condition, flag, prop
from analytics_nb import Client
from analytics_nb.widgets import FlagSimulator, FormError
from analytics_nb.widgets.simulator import parse_grid_text, parse_property_text, property_text

DEFINITIONS: list[dict[str, Any]] = [
    {"key": "gone", "deleted": True, "filters": {"groups": []}},
    flag("off", active=False),
    flag("half", condition(rollout=50)),
    flag("exp", condition(prop("country", ["US"])), variants={"control": 50, "test": 50}),
]


def _shares(bars_html: str) -> dict[str, float]:
    """Sum of the data-share attributes of the HTML bars, per flag."""
    out: dict[str, float] = {}
    for key, share in re.findall(r'data-flag="([^"]+)"[^>]*data-share="([0-9.]+)"', bars_html):
        out[key] = out.get(key, 0.0) + float(share)
    return out


# ---- pure helpers ------------------------------------------------------------------------------------


def test_property_text_is_typed_without_changing_what_was_typed() -> None:
    frame = parse_property_text(
        "distinct_id, country, age, vip, code, score\nu1, US, 31, true, 007, 1.5\nu2,DE,,false,x,"
    )
    assert list(frame.columns) == ["distinct_id", "country", "age", "vip", "code", "score"]
    assert frame["distinct_id"].tolist() == ["u1", "u2"]
    first = frame.iloc[0]
    assert first["age"] == 31 and bool(first["vip"]) is True
    assert first["code"] == "007" and first["score"] == 1.5
    assert pd.isna(frame.iloc[1]["age"]) and not frame.iloc[1]["vip"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("country\nUS", "distinct_id"),
        ("distinct_id,country\nu1,US,extra", "line 2 has 3 cells"),
        ("distinct_id,country\n,US", "empty distinct_id"),
        ("distinct_id,country,country\nu1,US,DE", "twice"),
        ("distinct_id,country", "no property sets"),
    ],
)
def test_property_text_errors_name_the_fix(text: str, message: str) -> None:
    with pytest.raises(FormError, match=message):
        parse_property_text(text)


def test_property_text_round_trips_a_frame() -> None:
    frame = pd.DataFrame({"distinct_id": ["a", "b"], "plan": ["pro", None], "n": [1, 2]})
    back = parse_property_text(property_text(frame))
    assert back["distinct_id"].tolist() == ["a", "b"]
    assert back["plan"].iloc[0] == "pro" and pd.isna(back["plan"].iloc[1])
    assert back["n"].tolist() == [1, 2]


def test_grid_text_parses_lines_and_reports_bad_ones() -> None:
    assert parse_grid_text("country: US, DE\nplan = free, pro\n# comment\nseats: 1, 10") == {
        "country": ["US", "DE"],
        "plan": ["free", "pro"],
        "seats": [1, 10],
    }
    with pytest.raises(FormError, match="line 1"):
        parse_grid_text("just words")
    with pytest.raises(FormError, match="no values"):
        parse_grid_text("country:")


# ---- definitions only: the local engine ----------------------------------------------------------------


def test_definitions_only_means_local_engine_only() -> None:
    sim = FlagSimulator(DEFINITIONS)
    assert sim.engine == "local" and sim._run_bar.engine.disabled
    assert "remote and both need a client" in sim._run_bar.note.value
    assert sim.flag_keys == ["off", "half", "exp"]  # deleted flags are not offered
    assert sim._flag_picker.select.options[0] == ("off (inactive)", "off")
    with pytest.raises(FormError, match="needs a client"):
        sim.engine = "both"


def test_local_run_from_typed_rows_fills_result_table_and_bars() -> None:
    sim = FlagSimulator(DEFINITIONS)
    sim._sets_view.text.value = "distinct_id,country\n" + "\n".join(
        f"u{i},{'US' if i % 2 else 'DE'}" for i in range(40)
    )
    sim._run_bar.run.click()
    assert sim.last_error is None, sim.status_text
    result = sim.result
    assert isinstance(result, pd.DataFrame) and len(result) == 40
    assert {"distinct_id", "off", "half", "exp"} <= set(result.columns) and "gone" not in result.columns
    assert (result["off"] == False).all()  # noqa: E712  (an inactive flag is off for everyone)
    de_rows = result[sim.property_sets["country"] == "DE"]
    assert (de_rows["exp"] == False).all()  # noqa: E712  (the flag's value is False outside the condition)
    assert "u0" in sim._results_view.table.value and "anb-results" in sim._results_view.table.value
    shares = _shares(sim._results_view.bars.value)
    assert shares.keys() == {"off", "half", "exp"}
    assert all(abs(total - 1.0) < 1e-3 for total in shares.values())
    assert (
        sim._run_bar.progress.value == sim._run_bar.progress.max == 40
        and sim._run_bar.progress.bar_style == "success"
    )
    assert "Done: 40 property sets" in sim.status_text


def test_grid_builder_fills_the_property_sets() -> None:
    sim = FlagSimulator(DEFINITIONS)
    sim._sets_view.grid.value = "country: US, DE\nplan: free, pro"
    sim._sets_view.ids_per_cell.value = 5
    sim._sets_view.build.click()
    assert sim.property_sets is not None and len(sim.property_sets) == 20
    assert sim._sets_view.text.value.splitlines()[0] == "distinct_id,country,plan"
    assert "20 property sets loaded" in sim._sets_view.info.value
    sim.run()
    assert len(sim.result) == 20


def test_load_keeps_the_frame_until_the_text_is_edited() -> None:
    sim = FlagSimulator(DEFINITIONS)
    frame = pd.DataFrame({"distinct_id": ["a", "b"], "country": ["US", "US"], "age": [30, 40]})
    sim.load(frame)
    assert sim.current_property_sets() is sim.property_sets
    sim._sets_view.text.value = sim._sets_view.text.value + "c,DE,50\n"
    edited = sim.current_property_sets()
    assert edited["distinct_id"].tolist() == ["a", "b", "c"] and edited["age"].tolist() == [30, 40, 50]
    with pytest.raises(FormError, match="distinct_id"):
        sim.load(pd.DataFrame({"id": [1]}))


def test_bad_rows_show_an_inline_error_and_nothing_runs() -> None:
    sim = FlagSimulator(DEFINITIONS)
    typed = "distinct_id,country\nu1,US\nu2,DE,oops"
    sim._sets_view.text.value = typed
    sim._run_bar.run.click()
    assert sim.result is None
    assert "line 3 has 3 cells" in sim.status_text and "anb-error" in sim._status.line.value
    assert sim._sets_view.text.value == typed


def test_whatif_rollout_and_weights_show_the_moves() -> None:
    sim = FlagSimulator(
        DEFINITIONS,
        property_sets=pd.DataFrame(
            {
                "distinct_id": [f"id-{i}" for i in range(200)],
                "country": ["US"] * 200,
            }
        ),
    )
    sim._flag_picker.select.value = ("half", "exp")
    assert set(sim._whatif_view.rollout) == {"half", "exp"} and set(sim._whatif_view.weights["exp"]) == {
        "control",
        "test",
    }
    sim.run()
    base_off = int((sim.result["half"] == False).sum())  # noqa: E712
    assert sim.moves is None and sim._results_view.moves.value == ""

    sim.set_rollout("half", 100)
    sim.set_weights("exp", {"control": 0, "test": 100})
    assert sim.whatif_edits() == {
        "half": {"rollout": {0: 100.0}},
        "exp": {"weights": {"control": 0, "test": 100}},
    }
    sim._run_bar.run.click()
    assert sim.last_error is None, sim.status_text
    assert (sim.result["half"] == True).all() and (sim.result["exp"] == "test").all()  # noqa: E712
    moves = sim.moves.set_index(["flag", "from", "to"])["count"]
    assert moves[("half", False, True)] == base_off
    assert moves[("exp", "control", "test")] > 0
    assert (
        "What-if moves" in sim._results_view.moves.value
        and "half: condition 1 at 100%" in sim._results_view.moves.value
    )
    # the current definitions are untouched: resetting gives the original outcome again
    sim._whatif_view.reset_button.click()
    assert sim.whatif_edits() == {}
    sim.run()
    assert int((sim.result["half"] == False).sum()) == base_off  # noqa: E712


def test_weights_that_do_not_add_up_are_refused_before_running() -> None:
    sim = FlagSimulator(DEFINITIONS, property_sets=pd.DataFrame({"distinct_id": ["a"], "country": ["US"]}))
    sim.pick("exp")
    sim._whatif_view.weights["exp"]["test"].value = 70
    sim._run_bar.run.click()
    assert sim.result is None
    assert "add up to 120, not 100" in sim.status_text


def test_export_writes_a_server_file_only_when_a_path_is_given(tmp_path: Path) -> None:
    sim = FlagSimulator(
        DEFINITIONS, property_sets=pd.DataFrame({"distinct_id": ["a", "b"], "country": ["US", "DE"]})
    )
    sim._export_view.export.click()
    assert "Run a simulation first" in sim.status_text
    sim.run()
    sim._export_view.server_path.value = str(tmp_path / "out.csv")
    sim._export_view.export.click()
    assert sim.exported == (tmp_path / "out.csv").resolve() and sim.exported.exists()
    assert str(sim.exported) in sim._export_view.label.value
    from analytics_nb.frames import read_csv

    back = read_csv(sim.exported)
    assert back["distinct_id"].tolist() == ["a", "b"]
    sim._export_view.server_path.value = str(tmp_path / "out.txt")
    assert sim.export_csv() is False and ".csv" in sim.status_text
    assert not (tmp_path / "out.txt").exists()


def test_the_export_carries_the_input_columns_unless_unticked(tmp_path: Path) -> None:
    """Issue 29 #3: the panel's table showed country/plan but its CSV held only the flags."""
    from analytics_nb.frames import read_csv

    sets = pd.DataFrame({"distinct_id": ["a", "b"], "country": ["US", "DE"], "plan": ["pro", "free"]})
    sim = FlagSimulator(DEFINITIONS, property_sets=sets)
    sim.run()
    assert list(sim.result.columns[:3]) == ["distinct_id", "country", "plan"]
    assert sim.export_inputs is True and sim._export_view.inputs.value is True
    assert sim.export_csv(tmp_path / "with.csv")
    back = read_csv(tmp_path / "with.csv")
    assert back[["country", "plan"]].to_dict("list") == {"country": ["US", "DE"], "plan": ["pro", "free"]}
    assert "exp" in back.columns and back.equals(read_csv(sim._export_view.csv_text))
    sim._export_view.inputs.value = False  # the "with inputs" box
    assert sim.export_csv(tmp_path / "bare.csv")
    bare = read_csv(tmp_path / "bare.csv")
    assert "country" not in bare.columns and "plan" not in bare.columns and "exp" in bare.columns
    assert sim.export_csv(tmp_path / "again.csv", inputs=True) and "country" in read_csv(
        tmp_path / "again.csv"
    )


def test_a_frame_past_max_sets_is_refused_with_the_fix_or_sampled() -> None:
    """Issue 29 #6: a 1M-row frame became a 20 MB text box. Past ``max_sets`` the panel refuses (naming
    ``sample=`` and ``simulate``), ``sample=n`` takes a random sample, and the text box shows at most
    ``TEXT_ROWS`` rows, read-only, while the run uses the whole frame."""
    from analytics_nb.widgets.simulator import MAX_PROPERTY_SETS, TEXT_ROWS

    assert (MAX_PROPERTY_SETS, TEXT_ROWS) == (100_000, 1_000)  # documented in the README
    big = pd.DataFrame({"distinct_id": [f"u{i}" for i in range(5_000)], "country": ["US", "DE"] * 2_500})
    sim = FlagSimulator(DEFINITIONS, max_sets=4_000)
    with pytest.raises(
        FormError, match=r"5,000 property sets, more than this panel takes \(max_sets=4,000\)"
    ):
        sim.load(big)
    assert sim.property_sets is None
    with pytest.raises(FormError, match="sample=4,000"):
        FlagSimulator(DEFINITIONS, property_sets=big, max_sets=4_000)
    sim.load(big, sample=3_000)
    assert len(sim.property_sets) == 3_000 and sim.property_sets.index.is_monotonic_increasing
    assert "Sampled 3,000 of 5,000 property sets" in sim.status_text
    text = sim._sets_view.text
    assert text.disabled and len(text.value) < 40_000
    assert text.value.count("\n") == TEXT_ROWS + 2  # header, TEXT_ROWS rows, the note
    assert "2,000 more rows" in text.value and "read-only" in sim._sets_view.info.value
    sim.run()
    assert sim.result is not None and len(sim.result) == 3_000  # every loaded row, not the text's
    with pytest.raises(FormError, match="from 1 to max_sets=4,000"):
        sim.load(big, sample=0)
    small = big.iloc[:3]
    sim.load(small)
    assert not text.disabled and "u2" in text.value and "#" not in text.value


def test_the_flag_picker_searches_and_keeps_hidden_picks() -> None:
    """Issue 29 #7: the picker showed 6 of 16 flags with no search."""
    many = [
        {"key": f"flag-{i:02d}", "name": f"Flag number {i}", "active": True, "filters": {"groups": []}}
        for i in range(16)
    ]
    many.append({"key": "checkout-v2", "name": "New checkout", "active": True, "filters": {"groups": []}})
    sim = FlagSimulator(many)
    picker = sim._flag_picker
    assert len(picker.keys) == 17 and "17 flags" in picker.count.value
    assert picker.filter("CHECK") == ["checkout-v2"]  # case-insensitive, keys
    assert "1 of 17 flags shown" in picker.count.value
    picker.select.value = ("checkout-v2",)  # a click in the filtered list
    assert sim.flags == ["checkout-v2"]
    assert picker.filter("number 1") == ["flag-01", *[f"flag-{i}" for i in range(10, 16)]]  # names too
    picker.select.value = ("flag-12",)
    assert sim.flags == [k for k in picker.keys if k in {"flag-12", "checkout-v2"}]  # offered order
    assert "2 picked (1 hidden by the search)" in picker.count.value
    picker.filter("")
    assert set(picker.select.value) == {"flag-12", "checkout-v2"}
    sim.pick("flag-03")
    assert sim.flags == ["flag-03"] and picker.select.value == ("flag-03",)
    sim.load(pd.DataFrame({"distinct_id": ["a"]}))
    sim.run()
    assert sim.simulation is not None and sim.simulation.flags == ["flag-03"]


# ---- with a client: remote and both ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def client(sandbox: Any) -> Iterator[Client]:
    c = Client(
        sandbox.url,
        personal_api_key=sandbox.personal_api_key,
        project_api_key=sandbox.project_api_key,
        project_id=sandbox.project_id,
        max_retries=0,
        timeout=10.0,
    )
    yield c
    c.close()


def _grid_sim(client: Client) -> FlagSimulator:
    sim = FlagSimulator(client)
    sim._sets_view.grid.value = "country: US, DE\nplan: free, pro"
    sim._sets_view.ids_per_cell.value = 3
    assert sim.build_grid()
    sim.pick("new-checkout", "gradual-rollout")
    return sim


def test_client_loads_definitions_and_runs_remote_decide(sandbox: Any, client: Client) -> None:
    sim = _grid_sim(client)
    assert sim.definitions is not None and "new-checkout" in sim.flag_keys
    assert not sim._run_bar.engine.disabled and sim.engine == "remote"
    sandbox.clear_requests()
    sim._run_bar.run.click()
    assert sim.last_error is None, sim.status_text
    decide = sandbox.requests()
    decide = decide[decide["path"].str.contains("decide|flags", regex=True) & (decide["method"] == "POST")]
    assert len(decide) == 12 and (decide["status"] == 200).all()
    assert len(sim.result) == 12 and {"new-checkout", "gradual-rollout"} <= set(sim.result.columns)
    assert sim.agreement is None and sim._results_view.agreement.value == ""
    assert not sim._whatif_view.visible  # what-if is for the local engine


def test_remote_run_feeds_the_progress_bar_chunk_by_chunk(sandbox: Any, client: Client) -> None:
    sim = _grid_sim(client)
    sim.chunk_size = 5
    seen: list[int] = []
    sim._run_bar.progress.observe(lambda c: seen.append(c["new"]), names="value")
    whole = FlagSimulator(client, property_sets=sim.property_sets)
    whole.pick("new-checkout", "gradual-rollout")
    expected = whole.run()
    result = sim.run()
    assert seen == [5, 10, 12] and sim._run_bar.progress.max == 12
    assert result is not None and list(result.index) == list(sim.property_sets.index)
    pd.testing.assert_frame_equal(result, expected)
    assert len(sim.simulation.inputs) == 12 and len(sim.summary()) > 0


def test_both_mode_shows_the_agreement_table(sandbox: Any, client: Client) -> None:
    sim = _grid_sim(client)
    sim._run_bar.engine.value = "both"
    sim.run()
    assert sim.last_error is None, sim.status_text
    agreement = sim.agreement
    assert isinstance(agreement, pd.DataFrame) and len(agreement) == 2
    assert "Agreement local vs remote" in sim._results_view.agreement.value
    assert "anb-agreement" in sim._results_view.agreement.value


def test_network_fault_on_decide_is_reported_not_raised(sandbox: Any, client: Client) -> None:
    sim = _grid_sim(client)
    sandbox.faults.add(path="/decide*", reset=True)
    sandbox.faults.add(path="/flags*", reset=True)
    try:
        sim._run_bar.run.click()
    finally:
        sandbox.faults.clear()
    assert sim.last_error is None  # a failed row does not fail the run: the rows say what went wrong
    assert "Traceback" not in sim._status.line.value
    assert "12 row(s) with errors" in sim.status_text and "failed" in sim.status_text
    assert sim.result["error"].notna().all()


def test_project_key_only_client_runs_remote_without_definitions(sandbox: Any) -> None:
    with Client(sandbox.url, project_api_key=sandbox.project_api_key, max_retries=0, timeout=10.0) as public:
        sim = FlagSimulator(public, property_sets=pd.DataFrame({"distinct_id": ["x1", "x2"]}))
        assert sim.definitions is None and sim.engine == "remote"
        assert "only the remote engine" in sim.status_text
        with pytest.raises(FormError, match="needs flag definitions"):
            sim.engine = "local"
        sim._run_bar.engine.value = "both"  # a click: put back, with the reason inline
        assert sim.engine == "remote" and "need flag definitions" in sim.status_text
        sim.run()
        assert sim.last_error is None, sim.status_text
        assert len(sim.result) == 2


def test_missing_property_warning_goes_to_the_status_not_the_cell_output() -> None:
    """A local run whose rows lack a property a flag reads: `simulate` warns (`MissingPropertyWarning`,
    answers NA); the panel shows it in its status line (kind "warning") and message log, keeps it in
    ``.warnings``, and lets nothing through to the cell's output (previously printed there)."""
    import warnings

    from analytics_nb.simulation import MissingPropertyWarning

    sim = FlagSimulator(DEFINITIONS)
    sim._sets_view.text.value = "distinct_id,plan\nu1,pro\nu2,free"  # `exp` reads country
    with warnings.catch_warnings(record=True) as leaked:
        warnings.simplefilter("always")
        sim._run_bar.run.click()
    assert [w for w in leaked if issubclass(w.category, UserWarning)] == []
    assert sim.last_error is None and sim.status_kind == "warning"
    assert "Done: 2 property sets" in sim.status_text
    assert "MissingPropertyWarning" in sim.status_text and "country" in sim.status_text
    assert [w.category for w in sim.warnings] == [MissingPropertyWarning]
    assert sim.result is not None and sim.result["exp"].isna().all()
    logged = "".join(o.get("text", "") for o in sim._status.log.outputs)
    assert logged.count("MissingPropertyWarning") == 1 and "country" in logged
    # A clean run afterwards clears the note.
    sim._sets_view.text.value = "distinct_id,country\nu1,US"
    sim._run_bar.run.click()
    assert sim.status_kind == "ok" and sim.warnings == []


COHORT_FLAG: dict[str, Any] = {
    "key": "in-cohort",
    "active": True,
    "filters": {
        "groups": [
            {
                "properties": [{"key": "id", "type": "cohort", "value": 4, "operator": "in"}],
                "rollout_percentage": 100,
            }
        ]
    },
}


def test_definitions_without_cohorts_warn_in_the_status_once_per_run() -> None:
    """A flag targets a cohort the definitions (a list of flags, like a flags frame) do not carry: the run
    answers NA and the panel says why and how to fix it in its status line, message log and ``.warnings``
    (once, although the run simulates and compares a what-if edit), nothing in the cell's output."""
    import warnings

    from analytics_nb.flags import IncompleteDefinitionsWarning

    sim = FlagSimulator([*DEFINITIONS, COHORT_FLAG])
    sim._sets_view.text.value = "distinct_id,country\nu1,US\nu2,DE"
    sim._flag_picker.select.value = ("half", "in-cohort")
    sim.set_rollout("half", 100)  # a what-if edit: simulate and whatif both run
    with warnings.catch_warnings(record=True) as leaked:
        warnings.simplefilter("always")
        sim._run_bar.run.click()
    assert [w for w in leaked if issubclass(w.category, UserWarning)] == []
    assert sim.last_error is None and sim.status_kind == "warning"
    assert "IncompleteDefinitionsWarning" in sim.status_text and "'in-cohort': cohort 4" in sim.status_text
    assert [w.category for w in sim.warnings] == [IncompleteDefinitionsWarning]
    assert "client.feature_flags.definitions()" in str(sim.warnings[0].message)
    assert sim.result is not None and sim.result["in-cohort"].isna().all() and sim.moves is not None
    logged = "".join(o.get("text", "") for o in sim._status.log.outputs)
    assert logged.count("IncompleteDefinitionsWarning") == 1


def test_a_client_fills_the_cohorts_of_a_flags_frame_in_local_runs(client: Client) -> None:
    sim = FlagSimulator(client)
    sim.definitions = client.feature_flags.frame()  # no cohorts: the client fills them for the run
    sim.engine = "local"
    sim._sets_view.text.value = "distinct_id,country\nu1,DE\nu2,US"
    sim.pick("eu-cohort-promo")
    sim._run_bar.run.click()
    assert sim.last_error is None and sim.warnings == [], sim.status_text
    assert sim.result is not None and sim.result["eu-cohort-promo"].astype(object).tolist() == [True, False]
