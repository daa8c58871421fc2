"""Every Python block of the Get-started and How-to pages runs, in page order, against the embedded sandbox.

A page's blocks share one namespace (as cells of a notebook do). A block that cannot run here (PostHog Cloud
keys, a warehouse) is preceded by an HTML comment ``<!-- not run: why -->`` and is only compiled, so a typo
in it still fails. Cloud connections are shown in such blocks; the runnable blocks start from
``Client.sandbox()``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGES = sorted([*DOCS.glob("get-started/*.md"), *DOCS.glob("how-to/*.md")])
FENCE = re.compile(r"(?P<skip><!-- not run: [^>]*-->\s*\n)?```python\n(?P<code>.*?)\n```", re.S)


def blocks(page: Path) -> list[tuple[bool, str]]:
    """The page's Python blocks as (runs, source)."""
    return [(m["skip"] is None, m["code"]) for m in FENCE.finditer(page.read_text(encoding="utf-8"))]


def test_pages_exist() -> None:
    assert len(PAGES) >= 8, PAGES
    assert all(blocks(p) for p in PAGES), [p.name for p in PAGES if not blocks(p)]


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_page_runs(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TQDM_DISABLE", "1")
    keys = ("POSTHOG_HOST", "POSTHOG_PERSONAL_API_KEY", "POSTHOG_PROJECT_API_KEY", "POSTHOG_SECRET_API_KEY")
    for name in keys:
        monkeypatch.delenv(name, raising=False)
    namespace: dict[str, Any] = {"__name__": f"docs_{page.stem}"}
    try:
        for number, (runs, code) in enumerate(blocks(page), 1):
            compiled = compile(code, f"{page.name}[block {number}]", "exec")
            if runs:
                exec(compiled, namespace)
    finally:
        client = namespace.get("client")
        if client is not None and hasattr(client, "close"):
            client.close()
    assert os.environ.get("TQDM_DISABLE") == "1"
