"""Headless tests of the Hog part of TransformationsBrowser against a sandbox over HTTP: Hog transformations
in execution order first, legacy plugins after, the line saying which API the instance serves, and the
buttons (pick, reorder, enable/disable, create from a template) checked in the sandbox itself."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from _clients import client_for
from analytics_nb.sandbox import Sandbox
from analytics_nb.widgets import TransformationsBrowser


@pytest.fixture
def fresh() -> Iterator[Sandbox]:
    from analytics_nb.sandbox import start

    with start(seed="demo") as sb:
        yield sb


def _server_order(sb: Sandbox) -> list[tuple[str, int, bool]]:
    """The transformations as the sandbox stores them (asked over HTTP with the owner's key)."""
    with client_for(sb, keys="personal", organization_id=sb.organization_id, max_retries=0) as c:
        return [
            (f.name or "", f.execution_order or 0, bool(f.enabled)) for f in c.hog_functions.transformations()
        ]


def _walk(widget: Any) -> Iterator[Any]:
    yield widget
    for child in getattr(widget, "children", ()):
        yield from _walk(child)


def test_hog_first_in_order_then_legacy_with_the_served_line(fresh: Sandbox) -> None:
    with client_for(fresh, keys="personal", organization_id=fresh.organization_id, max_retries=0) as c:
        browser = TransformationsBrowser(c)
        names = [f.name for f in browser.hog_transformations]
        assert names == ["GeoIP", "Drop internal traffic", "Plan tier", "PostHog Anonymization"]
        assert list(browser.hog_frame["execution_order"]) == [1, 2, 3, 4]
        assert len(browser.transformations) > 0  # the legacy plugins are listed too
        assert (
            "serves both" in browser.served
            and f"{len(browser.transformations)} legacy plugin(s)" in browser.served
        )
        assert (
            browser.served in browser._hog_view.served.value
            or "serves both" in browser._hog_view.served.value
        )
        # Hog section before the legacy list in the panel
        children = list(browser.children)
        assert children.index(browser._hog_view.root) < children.index(browser._list_view.root)
        assert "GeoIP" in browser._hog_view.table.value
        assert browser._hog_view.template_picker.options  # transformation templates loaded
        assert browser.last_error is None


def test_reorder_enable_disable_and_create_from_the_buttons(fresh: Sandbox) -> None:
    with client_for(fresh, keys="personal", organization_id=fresh.organization_id, max_retries=0) as c:
        browser = TransformationsBrowser(c)
        plan = next(f for f in browser.hog_transformations if f.name == "Plan tier")
        browser._hog_view.picker.value = plan.id  # what a click in the picker does
        assert browser.selected_hog is not None and browser.selected_hog.id == plan.id
        assert browser._hog_view.toggle.description == "Disable"
        browser._hog_view.up.click()
        assert [n for n, _o, _e in _server_order(fresh)][:3] == [
            "GeoIP",
            "Plan tier",
            "Drop internal traffic",
        ]
        assert [f.name for f in browser.hog_transformations][1] == "Plan tier"
        browser._hog_view.toggle.click()  # disable
        assert ("Plan tier", 2, False) in _server_order(fresh)
        assert browser._hog_view.toggle.description == "Enable"
        browser._hog_view.toggle.click()  # enable again: the service puts it last
        assert _server_order(fresh)[-1] == ("Plan tier", 5, True)
        assert browser.hog_transformations[-1].name == "Plan tier"
        browser._hog_view.template_picker.value = "template-downsample"
        browser._hog_view.create.click()
        assert browser.last_error is None, browser.status_text
        made = browser.selected_hog
        assert made is not None and made.name == "Downsample" and made.enabled is False
        assert _server_order(fresh)[-1] == ("Downsample", 6, False)


def test_reorder_from_code_and_first_cannot_move_up(fresh: Sandbox) -> None:
    with client_for(fresh, keys="personal", organization_id=fresh.organization_id, max_retries=0) as c:
        browser = TransformationsBrowser(c)
        ids = [f.id for f in browser.hog_transformations]
        assert browser.reorder(list(reversed(ids)))
        assert [f.id for f in browser.hog_transformations] == list(reversed(ids))
        assert [o for _n, o, _e in _server_order(fresh)] == [1, 2, 3, 4]
        browser.select_hog(browser.hog_transformations[0].id)
        fresh.clear_requests()
        assert browser.move_selected(-1) and "already first" in browser.status_text
        assert not any(r == "PATCH" for r in fresh.requests()["method"])  # nothing sent
        assert browser.move_selected(1) is True  # the first one can move down


def test_nothing_picked_is_a_form_error(fresh: Sandbox) -> None:
    with client_for(fresh, keys="personal", organization_id=fresh.organization_id, max_retries=0) as c:
        browser = TransformationsBrowser(c)
        assert browser.move_selected(1) is False and "Pick a Hog transformation" in browser.status_text
        assert browser.toggle_selected() is None
        assert browser.create_from_template("template-nope") is None
        assert browser.last_error is not None and "template_id" in browser.status_text


def test_key_without_hog_scope_lists_legacy_and_says_so(fresh: Sandbox) -> None:
    key = fresh.create_personal_key(scopes=["plugin:read", "organization:read", "project:read"])
    with client_for(fresh, key, keys="personal", organization_id=fresh.organization_id, max_retries=0) as c:
        browser = TransformationsBrowser(c)
        assert browser.hog_transformations == [] and len(browser.transformations) > 0
        assert "serves legacy plugins only" in browser.served and "HTTP 403" in browser.served


def test_hog_controls_fit_the_cell(fresh: Sandbox) -> None:
    with client_for(fresh, keys="personal", organization_id=fresh.organization_id, max_retries=0) as c:
        browser = TransformationsBrowser(c)
        for widget in _walk(browser._hog_view.root):
            layout = getattr(widget, "layout", None)
            if layout is not None and getattr(widget, "description", None) and hasattr(widget, "options"):
                assert layout.max_width and layout.min_width == "0"
