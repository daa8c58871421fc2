"""pytest plugin with sandbox fixtures (enable with `pytest_plugins = ["analytics_nb.sandbox.testing"]`):

* `sandbox`: a fresh demo sandbox per test module (spec profile, in memory);
* `empty_sandbox`: a fresh empty sandbox per test;
* `cloud_sandbox`: a demo sandbox in the cloud profile (refusals, synthetic playlists, throttles) per
  module.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ._server import Sandbox, start


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    """A demo-seeded sandbox in the spec profile, shared by the tests of one module."""
    with start(seed="demo", profile="spec") as sb:
        yield sb


@pytest.fixture
def empty_sandbox() -> Iterator[Sandbox]:
    """An empty sandbox (organization, project and owner only), fresh for each test."""
    with start(seed="empty", profile="spec") as sb:
        yield sb


@pytest.fixture(scope="module")
def cloud_sandbox() -> Iterator[Sandbox]:
    """A demo-seeded sandbox in the cloud profile, shared by the tests of one module."""
    with start(seed="demo", profile="cloud") as sb:
        yield sb
