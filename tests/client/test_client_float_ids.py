"""Issue 14 item 2: a float ``distinct_id`` (a column that became float64 because of one gap, or any
non-text, non-integer id) is refused by decide, simulate and capture with a message naming the fix, and
nothing is sent. One shared check (``analytics_nb.wire.check_distinct_id``) serves all three."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from analytics_nb import Client
from analytics_nb.capture import capture_frame


@pytest.fixture
def client(sandbox: Any) -> Any:
    with Client(
        sandbox.url,
        personal_api_key=sandbox.personal_api_key,
        project_api_key=sandbox.project_api_key,
        progress=False,
    ) as c:
        yield c


def _float_ids() -> pd.Series:
    ids = pd.Series([1, 2, None, 4]).astype("float64")  # what one gap does to an integer id column
    return ids


def test_decide_refuses_a_float_id(client: Client, sandbox: Any) -> None:
    before = len(sandbox.requests())
    for bad in (1.0, np.float64(2.0)):
        with pytest.raises(ValueError) as info:
            client.decide(bad)  # type: ignore[arg-type]
        assert "'1.0'" in str(info.value) or "'2.0'" in str(info.value)
        assert "astype('Int64').astype(str)" in str(info.value)
    assert client.decide(7).feature_flags is not None  # a whole number is still fine ("7")
    assert len(sandbox.requests()) == before + 1


def test_simulate_refuses_a_float_id_column(client: Client) -> None:
    from analytics_nb.simulation import SimulationInputError, simulate

    frame = pd.DataFrame({"distinct_id": _float_ids(), "country": ["US", "DE", "FR", "US"]})
    for engine in ("local", "remote"):
        with pytest.raises(SimulationInputError) as info:
            simulate(frame, engine=engine, client=client)
        message = str(info.value)
        assert "float64" in message and "1.0" in message
        assert "df['distinct_id'].astype('Int64').astype(str)" in message
    mixed = pd.DataFrame({"distinct_id": ["u1", 2.0], "country": ["US", "DE"]})
    with pytest.raises(SimulationInputError, match="row 1"):
        simulate(mixed, engine="local", client=client)


def test_capture_refuses_a_float_id_column_before_sending(client: Client, sandbox: Any) -> None:
    before = len(sandbox.events())
    df = pd.DataFrame({"event": ["a", "b", "c", "d"], "distinct_id": _float_ids()})
    with pytest.raises(ValueError) as info:
        capture_frame(client, df)
    assert "float64" in str(info.value) and "astype('Int64').astype(str)" in str(info.value)
    with pytest.raises(ValueError, match="float"):
        client.capture("signup", 3.0)  # type: ignore[arg-type]
    assert len(sandbox.events()) == before  # nothing sent
    fixed = df.dropna().assign(distinct_id=lambda d: d["distinct_id"].astype("Int64").astype(str))
    report = capture_frame(client, fixed)
    assert (report["status"] == "sent").all() and report["distinct_id"].tolist() == ["1", "2", "4"]
