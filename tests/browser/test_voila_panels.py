"""The widget panels in a real browser: Voila renders a test notebook, chromium (Playwright) clicks, and the
sandbox's store shows the change. The panels are also checked to fit a 900-px wide page (what a notebook
cell has in a 1280-px JupyterLab window) and "Export CSV" to give a real browser download. Screenshots go
to ``test-artifacts/``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from analytics_nb import Client
from analytics_nb.sandbox import start

pytestmark = pytest.mark.browser


@pytest.fixture
def demo_sandbox() -> Iterator[Any]:
    """A demo sandbox served from this process on 127.0.0.1 (the Voila kernel connects over HTTP)."""
    with start(seed="demo", profile="spec") as sb:
        yield sb


def _button(page: Any, text: str) -> Any:
    """The widget button whose label is ``text`` (an icon glyph may precede it)."""
    return page.locator("button.jupyter-button").filter(has_text=re.compile(rf"^\W*{re.escape(text)}\s*$"))


#: What a notebook cell leaves for output in a 1280-px JupyterLab window (file browser open).
CELL_WIDTH = 900

_OUTSIDE = """(selector) => {
  const root = document.querySelector(selector);
  const box = root.getBoundingClientRect();
  const out = [];
  for (const el of root.querySelectorAll('.jupyter-widgets, button, textarea, input, select, a')) {
    const b = el.getBoundingClientRect();
    if (b.width === 0 || b.height === 0) continue;
    if (b.right > box.right + 1 || b.left < box.left - 1) out.push(el.className + ' @' + Math.round(b.right));
  }
  return {right: box.right, viewport: window.innerWidth, outside: out};
}"""


def _assert_inside(page: Any, selector: str) -> None:
    """Every control of the panel lies inside the panel, and the panel inside the page."""
    found = page.evaluate(_OUTSIDE, selector)
    assert found["outside"] == [], found
    assert found["right"] <= found["viewport"], found


def _deleted(sb: Any, short_id: str) -> int:
    row = sb.ctx.store.query_one("SELECT deleted FROM playlists WHERE short_id=?", (short_id,))
    assert row is not None
    return int(row["deleted"])


def test_playlist_editor_archives_a_playlist_in_the_browser(
    demo_sandbox: Any, page: Any, serve_notebook: Any, artifacts: Path
) -> None:
    from playwright.sync_api import expect

    with Client(demo_sandbox.url, personal_api_key=demo_sandbox.personal_api_key) as client:
        first = client.playlists.list()[0]  # the panel lists in the same order: the first row
    label = f"{first.name or first.derived_name or '(unnamed)'} · {first.short_id}"

    page.set_viewport_size({"width": CELL_WIDTH, "height": 1500})
    with serve_notebook("playlist_editor.ipynb", demo_sandbox) as url:
        page.goto(url, timeout=60_000)
        table = page.locator(".anb-playlists")
        table.wait_for(timeout=60_000)
        expect(table).to_contain_text(first.short_id)
        status = page.locator(".anb-status")
        expect(status).to_contain_text("playlists found")

        page.locator(".anb-table-picker select").select_option(label=label)
        expect(status).to_contain_text(f"Selected {label}")
        _button(page, "Archive").click()
        confirm = _button(page, "Yes, archive")
        confirm.wait_for()
        expect(page.locator(".anb-recordings-add")).to_be_visible()  # "+ Add" stays on the page
        _assert_inside(page, ".anb-playlist-editor")
        page.screenshot(path=str(artifacts / "playlist_editor_confirm.png"), full_page=True)
        confirm.click()
        expect(status).to_contain_text(f"Archived {first.short_id}")
        expect(table).not_to_contain_text(first.short_id)
        assert demo_sandbox.personal_api_key not in page.content()
        page.screenshot(path=str(artifacts / "playlist_editor.png"), full_page=True)

    assert _deleted(demo_sandbox, first.short_id) == 1
    assert (artifacts / "playlist_editor.png").stat().st_size > 10_000


def test_flag_simulator_runs_a_local_simulation_in_the_browser(
    demo_sandbox: Any, page: Any, serve_notebook: Any, artifacts: Path, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    page.set_viewport_size({"width": CELL_WIDTH, "height": 1500})
    with serve_notebook("flag_simulator.ipynb", demo_sandbox) as url:
        page.goto(url, timeout=60_000)
        build = _button(page, "Build grid")
        build.wait_for(timeout=60_000)
        status = page.locator(".anb-status")
        build.click()
        expect(status).to_contain_text("Grid built: 120 property sets")
        _button(page, "local").click()
        expect(page.locator(".widget-slider").first).to_be_visible()  # what-if sliders for the local engine
        _button(page, "Run").click()
        results = page.locator(".anb-results")
        results.wait_for(timeout=20_000)
        expect(status).to_contain_text("Done: 120 property sets")
        expect(results).to_contain_text("sim-0-0-0")
        expect(page.locator(".anb-bar").first).to_be_visible()

        # what-if: type 60 into the gradual-rollout slider's readout, run again, the moves appear
        row = page.locator(".anb-whatif-row", has=page.locator("code", has_text="gradual-rollout"))
        readout = row.locator(".widget-readout").first
        readout.click()
        page.keyboard.press("Control+A")
        page.keyboard.type("60")
        page.keyboard.press("Enter")
        _button(page, "Run").click()
        moves = page.locator(".anb-moves")
        moves.wait_for()
        expect(page.get_by_text("gradual-rollout: condition 1 at 60%")).to_be_visible()
        _assert_inside(page, ".anb-flag-simulator")

        # Export CSV: a download link appears; clicking it is a browser download (no server file)
        _button(page, "Export CSV").click()
        link = page.locator("a.anb-download")
        expect(link).to_contain_text("Download simulation.csv")
        with page.expect_download() as download_info:
            link.click()
        download = download_info.value
        assert download.suggested_filename == "simulation.csv"
        saved = tmp_path / "downloaded.csv"
        download.save_as(saved)
        text = saved.read_text(encoding="utf-8")
        assert "sim-0-0-0" in text and "gradual-rollout" in text
        assert demo_sandbox.personal_api_key not in page.content()
        page.screenshot(path=str(artifacts / "flag_simulator.png"), full_page=True)

    assert (artifacts / "flag_simulator.png").stat().st_size > 10_000


def test_panels_nest_in_a_tab_reload_after_code_search_flags_and_keep_big_frames_small(
    demo_sandbox: Any, page: Any, serve_notebook: Any, artifacts: Path, tmp_path: Path
) -> None:
    """Issue 24 (panels are widgets: a ``Tab`` of two panels), issue 29 #6 (a 150,000-row frame loaded as a
    sample, the text box small and read-only), #7 (the editor reloads after an archive made in code; the
    flag picker searches; the estimate line is stdout, not stderr) and #3 (the CSV carries the inputs)."""
    from playwright.sync_api import expect

    with Client(demo_sandbox.url, personal_api_key=demo_sandbox.personal_api_key) as client:
        first = client.playlists.list()[0]  # the notebook archives this one in code
        flags = [f.key for f in client.feature_flags.list() if not f.deleted]

    page.set_viewport_size({"width": CELL_WIDTH, "height": 1500})
    with serve_notebook("panels_nested.ipynb", demo_sandbox) as url:
        page.goto(url, timeout=60_000)
        tab = page.locator(".jupyter-widgets.widget-tab")
        tab.wait_for(timeout=60_000)
        editor = page.locator(".anb-playlist-editor")
        expect(editor).to_be_visible()
        expect(editor.locator(".anb-status")).to_contain_text("Reloaded after changes made in code")
        expect(editor.locator(".anb-playlists")).not_to_contain_text(first.short_id)
        assert _deleted(demo_sandbox, first.short_id) == 1

        # the estimate is a stdout line (nbconvert's lab template: text/plain); stderr would be shown as an
        # error in JupyterLab, and Voila drops it unless show_tracebacks
        stdout = page.locator(".jp-OutputArea-output[data-mime-type='text/plain']")
        expect(stdout.filter(has_text="decide: 30 rows at ~")).to_have_count(1)
        expect(page.locator("[data-mime-type='application/vnd.jupyter.stderr']")).to_have_count(0)

        page.get_by_role("tab", name="Flags").click()
        sim = page.locator(".anb-flag-simulator")
        expect(sim).to_be_visible()
        text = sim.locator(".anb-sets-text textarea")
        expect(text).to_be_disabled()
        assert len(text.input_value()) < 60_000  # 1,000 rows at most, not 150,000
        expect(sim.locator(".anb-sets-info")).to_contain_text("2,000 property sets loaded")

        options = sim.locator(".anb-flags-picker select option")
        expect(options).to_have_count(len(flags))
        search = sim.locator(".anb-flags-search input")
        search.fill("check")
        wanted = [k for k in flags if "check" in k]
        expect(options).to_have_count(len(wanted))
        expect(sim.locator(".anb-flags-count")).to_contain_text(f"{len(wanted)} of {len(flags)} flags shown")
        sim.locator(".anb-flags-picker select").select_option(wanted[0])
        search.fill("")
        expect(options).to_have_count(len(flags))

        _button(page, "Run").click()
        expect(sim.locator(".anb-status")).to_contain_text("Done: 2000 property sets, 1 flags (local)")
        _button(page, "Export CSV").click()
        with page.expect_download() as download_info:
            sim.locator("a.anb-download").click()
        saved = tmp_path / "nested.csv"
        download_info.value.save_as(saved)
        header = saved.read_text(encoding="utf-8").splitlines()[1]
        cols = header.split(",")  # the sample's index labels come first (frames.to_csv keeps the index)
        at = cols.index("distinct_id")
        assert cols[at : at + 3] == ["distinct_id", "country", "plan"] and wanted[0] in cols
        assert demo_sandbox.personal_api_key not in page.content()
        page.screenshot(path=str(artifacts / "panels_nested.png"), full_page=True)
