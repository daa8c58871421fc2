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
        # measured 1.5-5 s each (``--durations=40``, 2026-11-26: the quick tier had grown to 187-199 s):
        # every docs page's code, timing and pacing runs, Ctrl-C runs, fresh-interpreter import checks
        "test_docs_pages.py::test_page_runs",
        "test_flags_differential_cells.py::test_sdk_mode_agrees_with_the_sdk_on_raw_cells",
        "test_client_errors.py::test_429_retry_after_is_honoured",
        "test_client_adaptive_pacing.py::test_stays_near_the_knee_when_the_service_queues",
        "test_client_adaptive_pacing.py::test_opens_up_to_hundreds_in_flight_at_100ms",
        "test_simulate_progress.py::test_ctrl_c_during_a_remote_run_returns_the_rows_done",
        "test_simulate_progress.py::test_ctrl_c_during_a_both_run_returns_the_rows_done_with_their_comparison",
        "test_simulate_pacing.py::test_pool_holds_the_requested_concurrency",
        "test_simulate_pacing.py::test_429_with_retry_after_slows_the_run_and_fails_no_row",
        "test_capture_safety.py::test_ctrl_c_reports_what_was_sent_and_a_rerun_completes_without_doubles",
        "test_simulate_families.py::test_the_simulation_package_loads_no_frame_library",
        "test_architecture.py::test_the_clients_load_neither_the_sandbox_nor_the_widgets",
        "test_sandbox_seeding.py::test_a_start_killed_while_seeding_leaves_nothing_and_the_next_one_seeds_in_full",
        "test_sandbox_capture_fast.py::test_random_batches_get_the_same_answer_and_store_the_same_events",
        "test_sandbox_capture_size.py::test_decompressed_body_past_the_budget_is_event_too_big",
        "test_client_safety_listings.py::test_endless_next_without_a_count_stops_at_the_page_cap",
        "test_sandbox_limits.py::test_a_large_batch_does_not_hold_other_requests_up",
        "test_simulate_progress.py::test_a_cancelled_async_run_returns_the_rows_done",
        "test_simulate_progress.py::test_long_local_simulation_shows_a_bar_of_rows_and_equals_the_unchunked_result",
        "test_sandbox_server.py::test_process_mode",
        # a new Python process per kernel (2-3 each; 5 s to import under load): kill -9, Ctrl-C, two at once
        "test_capture_journal.py::test_kill_9_mid_run_then_the_same_cell_in_a_new_process_doubles_nothing",
        "test_capture_journal.py::test_ctrl_c_then_a_new_process_doubles_nothing",
        "test_capture_journal.py::test_two_processes_sending_the_same_frame_at_once_store_it_once",
        # two OS processes racing keep_filters renames against 60 filter writes (each read back 0.5 s on)
        "test_client_safety_conflicts.py::test_filter_writes_undone_by_another_processes_keep_filters_are_reported",
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


@pytest.fixture(autouse=True)
def capture_journal_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Each test gets its own capture journal folder (``ANALYTICS_NB_CACHE_DIR``, inherited by the
    subprocesses it starts), so no test sees another's runs or writes to the user's cache."""
    folder = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("ANALYTICS_NB_CACHE_DIR", str(folder))
    return folder
