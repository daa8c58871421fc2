"""The reference pages show what an analyst uses, in the order they meet it, and no internals (issue 38).

Before, "Data access (resources)" opened with ``ApiClient``, ``AsyncApiClient``, ``ClientConfig``, ``Core``,
``LoopThread``, ``AdaptiveLimit`` and listed ``bind_arguments``, ``run_interruptible``, ``twin_matches`` and
``verb_form_matches``; ``Client``'s page did not show its resources. The site is built as CI builds it and
each reference page's rendered objects (mkdocstrings gives each an ``id``: its dotted path) are read.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MKDOCS = Path(sys.executable).with_name("mkdocs")

#: names that are the package's machinery, not what an analyst calls (the issue's list, and the generated
#: classes the clients are built from)
PRIVATE = {
    "ApiClient",
    "AsyncApiClient",
    "AnyApiClient",
    "ApiClientMethods",
    "ClientVerbs",
    "AsyncClientVerbs",
    "ClientConfig",
    "Core",
    "LoopThread",
    "AdaptiveLimit",
    "bind_arguments",
    "run_interruptible",
    "twin_matches",
    "verb_form_matches",
    "same_signature",
    "sync_method",
    "async_method",
    "loads_json",
    "decide_body",
    "cached_definitions",
    "DefinitionsCache",
    "progress_bar",
    "progress_enabled",
}
#: the clients' own machinery (``client.run(coro)``, the ``Core``, the config object)
PRIVATE_MEMBERS = {
    f"analytics_nb.{c}.{m}" for c in ("Client", "AsyncClient") for m in ("run", "core", "config")
}
OBJECT = re.compile(r'id="(analytics_nb\.[\w.]+)"')
BASES = re.compile(r"Bases:.*?</p>", re.S)
#: the reference pages in the order of the navigation (what an analyst calls first comes first)
FIRST_PAGES = [
    "reference/session.md",
    "reference/client.md",
    "reference/simulation.md",
    "reference/capture.md",
]


def private_objects(html: str) -> list[str]:
    """The rendered objects of a page whose dotted path has a private part (``_x``, or in `PRIVATE`), and
    private names in a ``Bases:`` line."""
    found = [
        path
        for path in OBJECT.findall(html)
        if {*path.split(".")} & PRIVATE or "._" in path or path in PRIVATE_MEMBERS
    ]
    for bases in BASES.findall(html):
        found += [name for name in PRIVATE if re.search(rf"\b{name}\b", bases)]
    return sorted(set(found))


def test_the_check_finds_a_private_object_and_base() -> None:
    html = '<h2 id="analytics_nb.client.Core">Core</h2><h2 id="analytics_nb.client.Playlists"></h2>'
    html += '<p>Bases: <code>ClientVerbs</code></p><h2 id="analytics_nb.Client.simulate"></h2>'
    assert private_objects(html) == ["ClientVerbs", "analytics_nb.client.Core"]


def test_the_reference_navigation_starts_with_the_client_and_its_resources() -> None:
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    section = text[text.index("  - Reference:") : text.index("  - Explanation:")]
    pages = re.findall(r"(reference/\w+\.md)", section)
    assert pages[: len(FIRST_PAGES)] == FIRST_PAGES


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not MKDOCS.exists() and shutil.which("mkdocs") is None:
        pytest.skip("mkdocs is not installed (the docs extra)")
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [str(MKDOCS if MKDOCS.exists() else "mkdocs"), "build", "--quiet", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return out


@pytest.mark.slow
def test_no_reference_page_renders_a_private_name(site: Path) -> None:
    pages = sorted((site / "reference").glob("*/index.html"))
    assert len(pages) >= 11
    found = {p.parent.name: private_objects(p.read_text(encoding="utf-8")) for p in pages}
    assert {page: names for page, names in found.items() if names} == {}


@pytest.mark.slow
def test_the_client_page_shows_its_resources_and_verbs(site: Path) -> None:
    html = (site / "reference" / "session" / "index.html").read_text(encoding="utf-8")
    objects = OBJECT.findall(html)
    for name in ("sandbox", "simulate", "capture_frame", "flag_called", "decide"):
        assert f"analytics_nb.Client.{name}" in objects, name
    for resource in ("Playlists", "HogFunctions", "FeatureFlags", "Projects"):
        assert f'href="../client/#analytics_nb.client.{resource}"' in html, resource
    # the verbs' parameters are shown (typed source), the simulate docstring once on this page
    assert html.count("missing_columns") >= 2 and html.count("Evaluate flags for every property set") == 1
    resources = OBJECT.findall((site / "reference" / "client" / "index.html").read_text(encoding="utf-8"))
    assert resources[0] == "analytics_nb.client.Playlists"
