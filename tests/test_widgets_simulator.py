"""Headless tests of FlagSimulator: controls driven from Python; local runs on definitions, remote runs on a
real sandbox over HTTP."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from analytics_nb import Client
from analytics_nb.widgets import FlagSimulator, FormError
from analytics_nb.widgets.simulator import parse_grid_text, parse_property_text, property_text

DEFINITIONS: list[dict[str, Any]] = [
    {"key": "gone", "deleted": True, "filters": {"groups": []}},
    {"key": "off", "active": False, "filters": {"groups": [{"properties": [], "rollout_percentage": 100}]}},
    {
        "key": "half",
        "active": True,
        "filters": {"groups": [{"properties": [], "rollout_percentage": 50}]},
    },
    {
        "key": "exp",
        "active": True,
        "filters": {
            "groups": [
                {
                    "properties": [
                        {"key": "country", "value": ["US"], "operator": "exact", "type": "person"}
                    ],
                    "rollout_percentage": 100,
                }
            ],
            "multivariate": {
                "variants": [
                    {"key": "control", "rollout_percentage": 50},
                    {"key": "test", "rollout_percentage": 50},
                ]
            },
        },
    },
]


def _shares(bars_html: str) -> dict[str, float]:
    """Sum of the data-share attributes of the HTML bars, per flag."""
    out: dict[str, float] = {}
    for flag, share in re.findall(r'data-flag="([^"]+)"[^>]*data-share="([0-9.]+)"', bars_html):
        out[flag] = out.get(flag, 0.0) + float(share)
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
    assert sim.engine == "local" and sim.run_bar.engine.disabled
    assert "remote and both need a client" in sim.run_bar.note.value
    assert sim.flag_keys == ["off", "half", "exp"]  # deleted flags are not offered
    assert sim.flag_picker.select.options[0] == ("off (inactive)", "off")
    with pytest.raises(FormError, match="needs a client"):
        sim.engine = "both"


def test_local_run_from_typed_rows_fills_result_table_and_bars() -> None:
    sim = FlagSimulator(DEFINITIONS)
    sim.sets_view.text.value = "distinct_id,country\n" + "\n".join(
        f"u{i},{'US' if i % 2 else 'DE'}" for i in range(40)
    )
    sim.run_bar.run.click()
    assert sim.last_error is None, sim.status_text
    result = sim.result
    assert isinstance(result, pd.DataFrame) and len(result) == 40
    assert {"distinct_id", "off", "half", "exp"} <= set(result.columns) and "gone" not in result.columns
    assert (result["off"] == False).all()  # noqa: E712  (an inactive flag is off for everyone)
    de_rows = result[sim.property_sets["country"] == "DE"]
    assert (de_rows["exp"] == False).all()  # noqa: E712  (the flag's value is False outside the condition)
    assert "u0" in sim.results_view.table.value and "anb-results" in sim.results_view.table.value
    shares = _shares(sim.results_view.bars.value)
    assert shares.keys() == {"off", "half", "exp"}
    assert all(abs(total - 1.0) < 1e-3 for total in shares.values())
    assert (
        sim.run_bar.progress.value == sim.run_bar.progress.max == 40
        and sim.run_bar.progress.bar_style == "success"
    )
    assert "Done: 40 property sets" in sim.status_text


def test_grid_builder_fills_the_property_sets() -> None:
    sim = FlagSimulator(DEFINITIONS)
    sim.sets_view.grid.value = "country: US, DE\nplan: free, pro"
    sim.sets_view.ids_per_cell.value = 5
    sim.sets_view.build.click()
    assert sim.property_sets is not None and len(sim.property_sets) == 20
    assert sim.sets_view.text.value.splitlines()[0] == "distinct_id,country,plan"
    assert "20 property sets loaded" in sim.sets_view.info.value
    sim.run()
    assert len(sim.result) == 20


def test_load_keeps_the_frame_until_the_text_is_edited() -> None:
    sim = FlagSimulator(DEFINITIONS)
    frame = pd.DataFrame({"distinct_id": ["a", "b"], "country": ["US", "US"], "age": [30, 40]})
    sim.load(frame)
    assert sim.current_property_sets() is sim.property_sets
    sim.sets_view.text.value = sim.sets_view.text.value + "c,DE,50\n"
    edited = sim.current_property_sets()
    assert edited["distinct_id"].tolist() == ["a", "b", "c"] and edited["age"].tolist() == [30, 40, 50]
    with pytest.raises(FormError, match="distinct_id"):
        sim.load(pd.DataFrame({"id": [1]}))


def test_bad_rows_show_an_inline_error_and_nothing_runs() -> None:
    sim = FlagSimulator(DEFINITIONS)
    typed = "distinct_id,country\nu1,US\nu2,DE,oops"
    sim.sets_view.text.value = typed
    sim.run_bar.run.click()
    assert sim.result is None
    assert "line 3 has 3 cells" in sim.status_text and "anb-error" in sim.status.line.value
    assert sim.sets_view.text.value == typed


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
    sim.flag_picker.select.value = ("half", "exp")
    assert set(sim.whatif_view.rollout) == {"half", "exp"} and set(sim.whatif_view.weights["exp"]) == {
        "control",
        "test",
    }
    sim.run()
    base_off = int((sim.result["half"] == False).sum())  # noqa: E712
    assert sim.moves is None and sim.results_view.moves.value == ""

    sim.set_rollout("half", 100)
    sim.set_weights("exp", {"control": 0, "test": 100})
    assert sim.whatif_edits() == {
        "half": {"rollout": {0: 100.0}},
        "exp": {"weights": {"control": 0, "test": 100}},
    }
    sim.run_bar.run.click()
    assert sim.last_error is None, sim.status_text
    assert (sim.result["half"] == True).all() and (sim.result["exp"] == "test").all()  # noqa: E712
    moves = sim.moves.set_index(["flag", "from", "to"])["count"]
    assert moves[("half", False, True)] == base_off
    assert moves[("exp", "control", "test")] > 0
    assert (
        "What-if moves" in sim.results_view.moves.value
        and "half: condition 1 at 100%" in sim.results_view.moves.value
    )
    # the current definitions are untouched: resetting gives the original outcome again
    sim.whatif_view.reset_button.click()
    assert sim.whatif_edits() == {}
    sim.run()
    assert int((sim.result["half"] == False).sum()) == base_off  # noqa: E712


def test_weights_that_do_not_add_up_are_refused_before_running() -> None:
    sim = FlagSimulator(DEFINITIONS, property_sets=pd.DataFrame({"distinct_id": ["a"], "country": ["US"]}))
    sim.pick("exp")
    sim.whatif_view.weights["exp"]["test"].value = 70
    sim.run_bar.run.click()
    assert sim.result is None
    assert "add up to 120, not 100" in sim.status_text


def test_export_writes_a_server_file_only_when_a_path_is_given(tmp_path: Path) -> None:
    sim = FlagSimulator(
        DEFINITIONS, property_sets=pd.DataFrame({"distinct_id": ["a", "b"], "country": ["US", "DE"]})
    )
    sim.export_view.export.click()
    assert "Run a simulation first" in sim.status_text
    sim.run()
    sim.export_view.server_path.value = str(tmp_path / "out.csv")
    sim.export_view.export.click()
    assert sim.exported == (tmp_path / "out.csv").resolve() and sim.exported.exists()
    assert str(sim.exported) in sim.export_view.label.value
    from analytics_nb.frames import read_csv

    back = read_csv(sim.exported)
    assert back["distinct_id"].tolist() == ["a", "b"]
    sim.export_view.server_path.value = str(tmp_path / "out.txt")
    assert sim.export_csv() is False and ".csv" in sim.status_text
    assert not (tmp_path / "out.txt").exists()


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
    sim.sets_view.grid.value = "country: US, DE\nplan: free, pro"
    sim.sets_view.ids_per_cell.value = 3
    assert sim.build_grid()
    sim.pick("new-checkout", "gradual-rollout")
    return sim


def test_client_loads_definitions_and_runs_remote_decide(sandbox: Any, client: Client) -> None:
    sim = _grid_sim(client)
    assert sim.definitions is not None and "new-checkout" in sim.flag_keys
    assert not sim.run_bar.engine.disabled and sim.engine == "remote"
    sandbox.clear_requests()
    sim.run_bar.run.click()
    assert sim.last_error is None, sim.status_text
    decide = sandbox.requests()
    decide = decide[decide["path"].str.contains("decide|flags", regex=True) & (decide["method"] == "POST")]
    assert len(decide) == 12 and (decide["status"] == 200).all()
    assert len(sim.result) == 12 and {"new-checkout", "gradual-rollout"} <= set(sim.result.columns)
    assert sim.agreement is None and sim.results_view.agreement.value == ""
    assert not sim.whatif_view.visible  # what-if is for the local engine


def test_remote_run_feeds_the_progress_bar_chunk_by_chunk(sandbox: Any, client: Client) -> None:
    sim = _grid_sim(client)
    sim.chunk_size = 5
    seen: list[int] = []
    sim.run_bar.progress.observe(lambda c: seen.append(c["new"]), names="value")
    whole = FlagSimulator(client, property_sets=sim.property_sets)
    whole.pick("new-checkout", "gradual-rollout")
    expected = whole.run()
    result = sim.run()
    assert seen == [5, 10, 12] and sim.run_bar.progress.max == 12
    assert result is not None and list(result.index) == list(sim.property_sets.index)
    pd.testing.assert_frame_equal(result, expected)
    assert len(sim.simulation.inputs) == 12 and len(sim.summary()) > 0


def test_both_mode_shows_the_agreement_table(sandbox: Any, client: Client) -> None:
    sim = _grid_sim(client)
    sim.run_bar.engine.value = "both"
    sim.run()
    assert sim.last_error is None, sim.status_text
    agreement = sim.agreement
    assert isinstance(agreement, pd.DataFrame) and len(agreement) == 2
    assert "Agreement local vs remote" in sim.results_view.agreement.value
    assert "anb-agreement" in sim.results_view.agreement.value


def test_network_fault_on_decide_is_reported_not_raised(sandbox: Any, client: Client) -> None:
    sim = _grid_sim(client)
    sandbox.faults.add(path="/decide*", reset=True)
    sandbox.faults.add(path="/flags*", reset=True)
    try:
        sim.run_bar.run.click()
    finally:
        sandbox.faults.clear()
    assert sim.last_error is None  # a failed row does not fail the run: the rows say what went wrong
    assert "Traceback" not in sim.status.line.value
    assert "12 row(s) with errors" in sim.status_text and "failed" in sim.status_text
    assert sim.result["error"].notna().all()


def test_project_key_only_client_runs_remote_without_definitions(sandbox: Any) -> None:
    with Client(sandbox.url, project_api_key=sandbox.project_api_key, max_retries=0, timeout=10.0) as public:
        sim = FlagSimulator(public, property_sets=pd.DataFrame({"distinct_id": ["x1", "x2"]}))
        assert sim.definitions is None and sim.engine == "remote"
        assert "only the remote engine" in sim.status_text
        with pytest.raises(FormError, match="needs flag definitions"):
            sim.engine = "local"
        sim.run_bar.engine.value = "both"  # a click: put back, with the reason inline
        assert sim.engine == "remote" and "need flag definitions" in sim.status_text
        sim.run()
        assert sim.last_error is None, sim.status_text
        assert len(sim.result) == 2
