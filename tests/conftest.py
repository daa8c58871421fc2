"""Shared pytest set-up: the sandbox fixtures (the package's own plugin), the client and flag fixtures, the
Hypothesis profiles and the quick tier.

``-m "not slow"`` is the quick tier to run while editing (browser, notebook-server, Spark, SQL-parity, schema
fuzzing and the large differential files are slow); ``bash scripts/test`` runs everything with the full
Hypothesis example counts (``HYPOTHESIS_PROFILE=ci``, see ``tests/_examples.py``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import settings

from _clients import client_for
from analytics_nb import Client
from analytics_nb.sandbox import Sandbox

pytest_plugins = ["analytics_nb.sandbox.testing"]  # sandbox, empty_sandbox, cloud_sandbox

settings.register_profile("ci", deadline=None)
settings.register_profile("dev", deadline=None, max_examples=20)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

SLOW_FILES = frozenset(
    {
        "test_flags_hypothesis.py",
        "test_flags_differential.py",
        "test_flags_sql.py",
        "test_lab_script.py",
        "test_sandbox_conformance.py",
        "test_sandbox_conformance_full.py",
        "test_simulate_spark.py",
        "test_simulate_dask.py",
        "test_client_tracebacks.py",
        "test_demo.py",  # its module fixture runs the whole demo in a subprocess (15 s)
    }
)
"""Whole files in the slow tier (each takes 10 s to minutes: servers, JVMs, subprocesses, fuzzing)."""

SLOW_TESTS = frozenset(
    {
        # measured over 2 s each on 2 cores (``--durations=30`` of the quick tier, issue 24); all run in CI
        "test_flags_frame.py::test_frame_agrees_with_scalar_engine",  # the frame vs scalar differential
        "test_sandbox_limits.py::test_a_gzip_bomb_of_tiny_events_is_refused_by_count",
        "test_sdk_against_sandbox.py::test_remote_flags_equal_the_engine",  # posthog-python over HTTP
        "test_sdk_against_sandbox.py::test_local_evaluation_equals_the_engine_and_the_server",
        "test_frames_rows.py::test_any_page_gives_the_dict_frame_and_error",  # Hypothesis over HTTP pages
    }
)
"""Single tests in the slow tier: ``<file name>::<test function>`` (every parameter of it)."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the slow tier: the files and tests above, the browser tests and the notebooks (nbval)."""
    for item in items:
        path = item.path
        function = getattr(item, "originalname", item.name)
        if (
            path.name in SLOW_FILES
            or f"{path.name}::{function}" in SLOW_TESTS
            or "browser" in path.parts
            or path.suffix == ".ipynb"
        ):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="module")
def client(sandbox: Sandbox) -> Iterator[Client]:
    """A ``Client`` on the module's demo sandbox: both keys, its project and organization ids, the test
    defaults and ``max_retry_wait=1.0`` (a fault's long ``Retry-After`` fails fast). A module that needs
    another client defines its own ``client`` fixture, which overrides this one."""
    with client_for(sandbox, ids=True, max_retry_wait=1.0) as c:
        yield c


@pytest.fixture(scope="module")
def demo_definitions(client: Client) -> Any:
    """The module's demo sandbox's flag definitions as the API answers them
    (``client.feature_flags.local_evaluation()``: the demo flags, cohorts and group types). Definitions a test
    writes itself come from the builders in ``tests/_flags.py``."""
    return client.feature_flags.local_evaluation()


@pytest.fixture
def make_client() -> Iterator[Callable[..., Client]]:
    """``make_client(sb, ...)``: `_clients.client_for` (a client on a sandbox or a fake server's URL with the
    test defaults), closed when the test ends. Tests that scope a client with ``with`` call
    ``client_for`` directly."""
    made: list[Client] = []

    def make(*args: Any, **kwargs: Any) -> Client:
        client = client_for(*args, **kwargs)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()
