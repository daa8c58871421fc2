"""Issue 14 item 6: long simulations say how far they are and what is left.

- the local engine runs long inputs in chunks (a bar of rows), with results equal to one evaluation;
- a long remote run prints its expected duration, measured on its first rows, and warns past a threshold;
- Ctrl-C (a real SIGINT to this process) or a cancelled task during a remote or both run returns the rows
  answered so far as a partial result; the client stays usable.

Everything speaks HTTP to the demo sandbox; slowness comes from the sandbox's own fault injection.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import threading
import warnings
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest

from _clients import client_for
from _flags import condition, flag, prop
from analytics_nb import AsyncClient, Client
from analytics_nb.sandbox import Sandbox
from analytics_nb.simulation import (
    LongRunWarning,
    SimulationInputError,
    _local,
    _remote,
    asimulate,
    grid,
    load_definitions,
    normalise_property_sets,
    simulate,
)
from analytics_nb.simulation._definitions import live_flags
from analytics_nb.simulation._local import ChunkedEvaluator, conform, make_evaluator


def _sets(n: int, seed: int = 3) -> pd.DataFrame:
    """``n`` property sets over the seeded flags' properties, with group keys and group properties."""
    cells = grid(
        {
            "country": ["US", "DE", "FR", "JP"],
            "plan": ["free", "pro", "enterprise"],
            "email": ["a@example.com", "qa-1@acme.io", "b@test.dev"],
        },
        ids_per_cell=max(1, -(-n // 36)),
        seed=seed,
    ).iloc[:n]
    df = cells.reset_index(drop=True)
    m = len(df)
    df["$os"] = (["iOS", "Android", "Windows"] * m)[:m]
    df["app_version"] = (["2.4.0", "1.0.0", "3.1.2"] * m)[:m]
    df["signup_date"] = (["2023-05-01", "2026-11-01"] * m)[:m]
    df["sessions_count"] = [i * 37 % 2000 for i in range(m)]
    df["group:company"] = [f"sim-co-{i % 7}" if i % 3 else None for i in range(m)]
    df["group:company:plan"] = [("enterprise" if i % 2 else "free") if i % 3 else None for i in range(m)]
    df["group:company:employees"] = [(i * 13) % 400 if i % 3 else None for i in range(m)]
    return df.set_index(pd.RangeIndex(500, 500 + m))


# -- local: chunks and a bar -------------------------------------------------------------------------------


@pytest.mark.parametrize(("payloads", "reasons"), [(True, False), (True, True)])
def test_chunked_local_evaluation_equals_one_evaluation(
    demo_definitions: Any, payloads: bool, reasons: bool
) -> None:
    sets = normalise_property_sets(_sets(2_300))
    defs = live_flags(load_definitions(demo_definitions))
    whole = conform(
        make_evaluator(sets, defs).run(payloads=payloads, reasons=reasons),
        sets,
        None,
        payloads=payloads,
        reasons=reasons,
    )
    chunked_engine = ChunkedEvaluator(sets, defs, chunk_rows=333)  # uneven: the last chunk is short
    chunked = conform(
        chunked_engine.run(payloads=payloads, reasons=reasons),
        sets,
        None,
        payloads=payloads,
        reasons=reasons,
    )
    pd.testing.assert_frame_equal(chunked, whole)
    assert len(whole) == 2_300 and whole.index.equals(sets.frame.index)


def test_every_chunk_reads_relative_dates_against_one_instant(monkeypatch: pytest.MonkeyPatch) -> None:
    """A long run is chunked; a relative date ("-7d") must mean the same instant in every chunk and in a
    re-run, or a row's answer depends on which chunk holds it (a regression: each chunk's evaluator took
    its own "now"). The engine's clock is made to jump a day at each reading, as a very long run would."""
    import datetime as dt

    from analytics_nb.flags import _frame

    real_now = _frame._now
    clock = iter(dt.datetime(2026, 1, 20, tzinfo=dt.UTC) + dt.timedelta(days=i) for i in range(1_000))

    def jumpy(now: Any, server: bool = False, timezone: str = "UTC") -> Any:
        return real_now(now if now is not None else next(clock), server, timezone)

    monkeypatch.setattr(_frame, "_now", jumpy)
    recent = flag("recent", condition(prop("joined", "-7d", "is_date_after")))
    frame = pd.DataFrame({"distinct_id": [f"u{i}" for i in range(40)], "joined": ["2026-01-15"] * 40})
    sets = normalise_property_sets(frame)
    defs = live_flags(load_definitions([recent]))
    engine = ChunkedEvaluator(sets, defs, chunk_rows=10)
    for _ in range(2):  # the first run and a re-run
        got = engine.run()["recent"]
        assert got.nunique() == 1, got.tolist()  # the old code: True in the first chunks, then False


def test_long_local_simulation_shows_a_bar_of_rows_and_equals_the_unchunked_result(
    demo_definitions: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    df = _sets(3_000)
    whole = simulate(df, engine="local", definitions=demo_definitions, progress=True, reasons=True)
    assert "local" not in capsys.readouterr().err  # short enough: one evaluation, no bar
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    monkeypatch.setattr(_local, "LOCAL_CHUNK_ROWS", 500)  # 3,000 rows are "long" now: 6 chunks
    updates: list[int] = []
    real_bar = _local.progress_bar

    def recorded(*args: Any, **kw: Any) -> Any:
        bar = real_bar(*args, **kw)
        update = bar.update
        bar.update = lambda n=1: (updates.append(n), update(n))[1]
        return bar

    monkeypatch.setattr(_local, "progress_bar", recorded)
    chunked = simulate(df, engine="local", definitions=demo_definitions, progress=True, reasons=True)
    err = capsys.readouterr().err
    assert re.search(r"local:\s+0%.*\| ?0/3000 \[.*row/s", err), err  # a tqdm bar of rows, 3,000 in all
    assert updates == [500] * 6  # that moves chunk by chunk
    pd.testing.assert_frame_equal(chunked.frame, whole.frame)
    assert not chunked.partial and chunked.rows_done == chunked.rows_total == 3_000


def test_no_bar_with_progress_false_or_tqdm_disable(
    demo_definitions: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(_local, "LOCAL_CHUNK_ROWS", 400)
    df = _sets(1_000)
    simulate(df, engine="local", definitions=demo_definitions, progress=False)
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("TQDM_DISABLE", "1")
    simulate(df, engine="local", definitions=demo_definitions, progress=True)
    assert capsys.readouterr().err == ""


def test_whatif_keeps_one_evaluator_over_all_rows(
    demo_definitions: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from analytics_nb.flags import FrameEvaluator
    from analytics_nb.simulation import WhatIf

    monkeypatch.setattr(_local, "LOCAL_CHUNK_ROWS", 100)
    session = WhatIf(_sets(1_000), demo_definitions)
    assert isinstance(session.evaluator, FrameEvaluator)  # cached hashes serve every re-run


# -- remote: the estimate -----------------------------------------------------------------------------------


def test_a_long_remote_run_prints_its_estimate_and_warns_past_the_threshold(
    client: Client, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    assert (_remote.ESTIMATE_MIN_ROWS, _remote.PROBE_ROWS) == (2_000, 200)  # the Ctrl-C test uses these
    monkeypatch.setattr(_remote, "ESTIMATE_MIN_ROWS", 300)
    monkeypatch.setattr(_remote, "PROBE_ROWS", 50)
    df = _sets(301)  # one over ESTIMATE_MIN_ROWS
    with pytest.warns(LongRunWarning, match=r"301 rows is expected to take about .*warn_minutes=0"):
        result = simulate(df, "beta-feature", client=client, warn_minutes=0, progress=True)
    captured = capsys.readouterr()
    err = captured.err
    assert re.search(r"decide ≈\d+ (s|min):", err), err  # the bar carries the estimate too
    # the estimate line is a status line: stdout, not stderr (red, like an error, in JupyterLab)
    assert "decide: 301 rows at ~" not in err
    line = re.search(
        r"decide: 301 rows at ~([\d,]+) rows/s ≈ \d+ (s|min) \(measured on the first 50 rows\)", captured.out
    )
    assert line, captured.out
    assert int(line.group(1).replace(",", "")) > 0
    assert len(result) == 301 and not result.partial


def test_no_warning_under_the_threshold_and_nothing_with_estimate_false(
    client: Client, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(_remote, "ESTIMATE_MIN_ROWS", 100)
    monkeypatch.setattr(_remote, "PROBE_ROWS", 20)
    df = _sets(150)
    with warnings.catch_warnings():
        warnings.simplefilter("error", LongRunWarning)
        simulate(df, "beta-feature", client=client)  # seconds, under the default 10 minutes
        assert "decide: 150 rows at ~" in capsys.readouterr().out
        simulate(df, "beta-feature", client=client, estimate=False, warn_minutes=0)
        assert "decide:" not in str(capsys.readouterr())
        simulate(df.iloc[:100], "beta-feature", client=client, warn_minutes=0)  # not over the row limit
        assert "decide:" not in str(capsys.readouterr())


def test_estimate_options_are_checked(client: Client) -> None:
    with pytest.raises(SimulationInputError, match="warn_minutes=-1"):
        simulate(_sets(3), client=client, warn_minutes=-1)
    with pytest.raises(SimulationInputError, match="estimate='yes'"):
        simulate(_sets(3), client=client, estimate="yes")  # type: ignore[arg-type]


# -- remote: interrupted runs return the rows done --------------------------------------------------------


def _decides(sb: Sandbox) -> int:
    log = sb.requests()
    return int(log["path"].isin(["/decide/", "/flags/"]).sum()) if len(log) else 0


class _CtrlCAfter(threading.Thread):
    """Sends SIGINT to this process once the sandbox has answered ``decides`` more decides (a real Ctrl-C,
    timed by progress rather than by the clock, so a loaded machine does not change what it tests)."""

    def __init__(self, sb: Sandbox, decides: int) -> None:
        super().__init__(daemon=True)
        self.sb, self.target_count = sb, _decides(sb) + decides
        self.stopped = threading.Event()

    def run(self) -> None:
        while _decides(self.sb) < self.target_count:
            if self.stopped.wait(0.05):
                return
        os.kill(os.getpid(), signal.SIGINT)

    def cancel(self) -> None:
        self.stopped.set()


@contextlib.contextmanager
def _returns_after_ctrl_c() -> Iterator[None]:
    """Turn a KeyboardInterrupt that escapes the call (the rows thrown away) into a test failure."""
    try:
        yield
    except KeyboardInterrupt:
        pytest.fail("Ctrl-C raised KeyboardInterrupt instead of returning the rows done")


def _check_partial(result: Any, df: pd.DataFrame, fresh: Any) -> None:
    """A partial result: rows in input order, the rest in ``remaining``, values as a full run gives them."""
    assert result.partial is True
    assert 0 < result.rows_done < result.rows_total == len(df)
    assert result.rows_done == len(result.frame) == len(result.inputs)
    done, left = result.frame.index, result.remaining.index
    assert done.is_monotonic_increasing and not done.intersection(left).size
    assert sorted([*done, *left]) == list(df.index)
    assert f"partial: {result.rows_done:,} of {len(df):,} rows" in repr(result)
    assert "partial: " in result._repr_html_()
    assert result.frame["error"].isna().all()  # no row is marked failed because of the interrupt
    rest = fresh(result.remaining.iloc[-60:])  # the remaining property sets are valid input again
    assert len(rest) == 60 and not rest.partial and rest.frame.index.equals(left[-60:])
    redo = fresh(df.loc[done])
    pd.testing.assert_frame_equal(result.frame, redo.frame)


def test_ctrl_c_during_a_remote_run_returns_the_rows_done(
    sandbox: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    df = _sets(2_500)
    fault = sandbox.faults.add(path="/flags/", status=None, rate=1.0, delay=0.02)
    timer = _CtrlCAfter(sandbox, 300)  # after the estimate (measured on the first 200 rows)
    try:
        with client_for(sandbox, project_id=sandbox.project_id, max_retry_wait=1.0) as c:
            timer.start()
            with _returns_after_ctrl_c(), pytest.warns(LongRunWarning, match="Ctrl-C stops it"):
                # warn_minutes=0: any estimate warns, however fast the machine is (0.1 min depended on the
                # load: a quiet machine finished the estimate under 6 s and did not warn; issue 38)
                result = c.simulate(df, ["beta-feature", "new-checkout"], warn_minutes=0)
            timer.join()
            captured = capsys.readouterr()
            out = captured.out  # status lines, not errors: stdout (stderr is red in JupyterLab)
            assert re.search(r"decide: 2,500 rows at ~[\d,]+ rows/s ≈ ", out), out
            assert f"returning the {result.rows_done:,} of 2,500 rows done" in out
            assert "rows done" not in captured.err and "rows/s ≈" not in captured.err
            sandbox.faults.remove(fault)
            fault = None
            _check_partial(
                result, df, lambda rows: c.simulate(rows, ["beta-feature", "new-checkout"], estimate=False)
            )
    finally:
        timer.cancel()
        if fault is not None:
            sandbox.faults.remove(fault)


def test_ctrl_c_during_a_both_run_returns_the_rows_done_with_their_comparison(sandbox: Sandbox) -> None:
    df = _sets(2_000, seed=8)
    fault = sandbox.faults.add(path="/flags/", status=None, rate=1.0, delay=0.02)
    timer = _CtrlCAfter(sandbox, 100)
    try:
        with client_for(sandbox, project_id=sandbox.project_id, max_retry_wait=1.0) as c:
            timer.start()
            with _returns_after_ctrl_c():
                result = simulate(df, engine="both", client=c, estimate=False)
            timer.join()
            sandbox.faults.remove(fault)
            fault = None
            assert result.engine == "both" and result.local is not None and result.agreement is not None
            assert result.local.index.equals(result.frame.index)
            assert int(result.agreement["rows"].max()) <= result.rows_done
            _check_partial(result, df, lambda rows: simulate(rows, engine="both", client=c, estimate=False))
    finally:
        timer.cancel()
        if fault is not None:
            sandbox.faults.remove(fault)


def test_ctrl_c_before_any_row_is_answered_still_raises(sandbox: Sandbox) -> None:
    fault = sandbox.faults.add(path="/flags/", status=None, rate=1.0, delay=3.0)
    timer = threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT))  # within the first 3 s
    try:
        with client_for(sandbox, project_id=sandbox.project_id, max_retry_wait=1.0) as c:
            timer.start()
            with pytest.raises(KeyboardInterrupt):
                c.simulate(_sets(40), "beta-feature", concurrency=2)
            timer.join()
            sandbox.faults.remove(fault)
            fault = None
            assert len(c.simulate(_sets(5), "beta-feature")) == 5  # the client is still usable
    finally:
        timer.cancel()
        if fault is not None:
            sandbox.faults.remove(fault)


def test_a_cancelled_async_run_returns_the_rows_done(sandbox: Sandbox) -> None:
    df = _sets(2_000, seed=5)
    fault = sandbox.faults.add(path="/flags/", status=None, rate=1.0, delay=0.02)

    async def main() -> tuple[Any, Any]:
        async with AsyncClient(
            sandbox.url, project_api_key=sandbox.project_api_key, progress=False, retry_backoff=0.01
        ) as ac:
            target = _decides(sandbox) + 100
            task = asyncio.ensure_future(ac.simulate(df, "beta-feature", estimate=False))
            while _decides(sandbox) < target:  # cancel once some rows are answered
                await asyncio.sleep(0.05)
            task.cancel()
            result = await task
            sandbox.faults.remove(fault)
            after = await asimulate(df.iloc[:5], "beta-feature", client=ac)  # still usable
            return result, after

    try:
        result, after = asyncio.run(main())
        fault = None
    finally:
        if fault is not None:
            sandbox.faults.remove(fault)
    assert len(after) == 5
    with client_for(sandbox, project_id=sandbox.project_id, max_retry_wait=1.0) as c:
        _check_partial(result, df, lambda rows: c.simulate(rows, "beta-feature", estimate=False))
