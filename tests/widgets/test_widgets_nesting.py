"""The panels are widgets (issue 24): each is a ``VBox``, so it nests in ``HBox``, ``Tab``, ``Accordion`` and
``AppLayout`` like ipyfilechooser's chooser does; its views are private, ``.root`` is a deprecated alias that
returns the panel itself."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import ipywidgets as w
import pytest

from _flags import condition, flag
from analytics_nb import Client
from analytics_nb.widgets import FlagSimulator, PlaylistEditor, TransformationsBrowser

DEFINITIONS: list[dict[str, Any]] = [flag("half", condition(rollout=50))]


@pytest.fixture(scope="module")
def client(sandbox: Any) -> Iterator[Client]:
    c = Client(
        sandbox.url,
        personal_api_key=sandbox.personal_api_key,
        project_api_key=sandbox.project_api_key,
        project_id=sandbox.project_id,
        organization_id=sandbox.organization_id,
        max_retries=0,
        timeout=10.0,
    )
    yield c
    c.close()


@pytest.fixture(scope="module")
def panels(client: Client) -> list[w.VBox]:
    return [PlaylistEditor(client), FlagSimulator(DEFINITIONS), TransformationsBrowser(client)]


def test_each_panel_is_a_vbox_that_nests_in_layouts(panels: list[w.VBox]) -> None:
    """``HBox([PlaylistEditor(...)])`` raised TraitError ("expected a Widget"): you had to know ``.root``."""
    for panel in panels:
        assert isinstance(panel, w.VBox) and isinstance(panel, w.DOMWidget)
        assert "anb-panel" in panel._dom_classes and panel.layout.width == "100%"
        assert panel.children  # the heading, the views, the status
        box = w.HBox([panel])
        assert box.children == (panel,)
    tab = w.Tab(children=panels, titles=("Playlists", "Flags", "Transformations"))
    assert tab.children[1] is panels[1]
    accordion = w.Accordion(children=[panels[0]])
    app = w.AppLayout(center=panels[1], right_sidebar=w.HTML("notes"))
    assert accordion.children[0] is panels[0] and app.center is panels[1]
    # the rich display is the widget itself (a widget-view bundle naming the panel's model)
    bundle = panels[1]._repr_mimebundle_()
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == panels[1].model_id
    assert bundle["text/plain"].startswith("<FlagSimulator status=")


def test_the_views_are_private_and_state_is_public(panels: list[w.VBox]) -> None:
    editor, sim, browser = panels
    for name in (
        "sets_view",
        "flag_picker",
        "run_bar",
        "whatif_view",
        "results_view",
        "export_view",
        "status",
    ):
        assert not hasattr(sim, name), name
        assert hasattr(sim, f"_{name}")
    for name in ("filter_bar", "table_view", "form", "confirm", "recordings_view", "create_form", "extras"):
        assert not hasattr(editor, name), name
    for name in ("list_view", "source_view", "hog_view"):
        assert not hasattr(browser, name), name
    # the state reads as attributes, properties and DataFrames
    assert editor.frame is not None and editor.selected is None and isinstance(editor.status_text, str)
    assert sim.flag_keys == ["half"] and sim.result is None and sim.engine == "local"
    assert browser.frame is not None and browser.selected is None


def test_root_is_a_deprecated_alias_for_the_panel(panels: list[w.VBox]) -> None:
    for panel in panels:
        with pytest.warns(DeprecationWarning, match=r"\.root is deprecated: the panel is a VBox itself"):
            assert panel.root is panel  # type: ignore[attr-defined]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        w.HBox(panels)  # no warning for the new way
