"""Headless tests of TransformationsBrowser against a demo sandbox over HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from _clients import client_for
from analytics_nb import Client
from analytics_nb.widgets import TransformationsBrowser


@pytest.fixture(scope="module")
def client(sandbox: Any) -> Iterator[Client]:
    c = client_for(sandbox, keys="personal", organization_id=sandbox.organization_id, max_retries=0)
    yield c
    c.close()


def test_lists_transformations_and_opens_their_source(sandbox: Any, client: Client) -> None:
    browser = TransformationsBrowser(client)
    frame = browser.frame
    assert len(frame) == len(browser.transformations) > 0
    first = browser.transformations[0]
    assert str(first.name) in browser._list_view.table.value
    browser._list_view.picker.value = first.id
    assert browser.selected.id == first.id
    assert (
        browser._source_view.file_picker.options
        and browser._source_view.file_picker.value == sorted(browser.sources)[0]
    )
    assert browser._source_view.editor.value == (
        browser.sources[browser._source_view.file_picker.value] or ""
    )
    sources = browser.sources_frame
    assert (
        set(sources["filename"]) == set(browser.sources) and (sources["transformation_id"] == first.id).all()
    )


def test_save_sends_only_the_edited_file(sandbox: Any, client: Client) -> None:
    browser = TransformationsBrowser(client)
    target = browser.transformations[1]
    browser.select(target.id)
    name = browser._source_view.file_picker.value
    browser._source_view.editor.value = browser._source_view.editor.value + "\n// edited in the panel\n"
    assert browser.is_dirty
    sandbox.clear_requests()
    browser._source_view.save.click()
    sent = sandbox.requests()
    sent = sent[sent["method"] == "PATCH"]
    assert len(sent) == 1 and sent["path"].iloc[0].endswith(
        f"/pipeline_transformations/{target.id}/update_source/"
    )
    assert list(json.loads(sent["body"].iloc[0])) == [name]
    assert not browser.is_dirty and "Saved" in browser.status_text
    assert client.transformations.source(target.id)[name].endswith("// edited in the panel\n")


def test_missing_write_scope_keeps_the_edit(sandbox: Any) -> None:
    key = sandbox.create_personal_key(scopes=["plugin:read"])
    with client_for(
        sandbox, key, keys="personal", organization_id=sandbox.organization_id, max_retries=0
    ) as reader:
        browser = TransformationsBrowser(reader)
        browser.select(browser.transformations[0].id)
        assert browser.last_error is None, browser.status_text  # reading the source needs plugin:read only
        browser._source_view.editor.value = "changed"
        assert browser.save_file() is False
        assert "plugin:write" in browser.status_text
        assert browser._source_view.editor.value == "changed" and browser.is_dirty


def test_check_for_updates_reports_tags(sandbox: Any, client: Client) -> None:
    browser = TransformationsBrowser(client)
    assert browser.check_for_updates() is None and "Select a transformation" in browser.status_text
    browser.select(browser.transformations[0].id)
    updated = browser.check_for_updates()
    assert updated is not None and "installed" in browser.status_text and "latest" in browser.status_text
