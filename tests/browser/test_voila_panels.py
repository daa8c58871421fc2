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
