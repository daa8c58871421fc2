"""Issue 12 finding 4 (client side): capture_frame refuses, per row and with the reason, what the service
would refuse (lone surrogates, non-finite or overflowing numbers, nesting beyond ``MAX_NESTING``, oversize),
and the rest of the batch is sent; no ``RecursionError`` anywhere."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from analytics_nb import Client
from analytics_nb.capture import EventError, build_event, capture_frame
from analytics_nb.capture._values import MAX_NESTING


def _deep(levels: int) -> Any:
    value: Any = "bottom"
    for _ in range(levels):
        value = {"d": value}
    return value


def _frame() -> pd.DataFrame:
    rows: list[dict[str, Any]] = [
        {"event": "ok", "distinct_id": "u0", "note": "fine"},
        {"event": "ok", "distinct_id": "u1", "note": "bad \ud800 text"},  # lone surrogate in a value
        {"event": "ok \udfff", "distinct_id": "u2", "note": "fine"},  # in the event name
        {"event": "ok", "distinct_id": "u3\ud83d", "note": "fine"},  # in the distinct id
        {"event": "ok", "distinct_id": "u4", "properties": {"k\udc00": 1}},  # in a property name
        {"event": "ok", "distinct_id": "u5", "properties": {"x": [1, float("inf")]}},  # nested infinity
        {"event": "ok", "distinct_id": "u6", "properties": {"deep": _deep(MAX_NESTING + 5)}},
        {"event": "ok", "distinct_id": "u7", "properties": {"deeper": _deep(1500)}},  # RecursionError before
        {"event": "ok", "distinct_id": "u8", "properties": {"huge": 10**400}},  # overflows to infinity
        {"event": "ok", "distinct_id": "u9", "note": "emoji \U0001f600 is fine"},
        {"event": "ok", "distinct_id": "u10", "properties": {"ok": _deep(MAX_NESTING - 2)}},
    ]
    # object columns: with pyarrow installed pandas 3 stores text in Arrow, which cannot hold a lone surrogate
    return pd.DataFrame(rows, dtype=object)


def test_rows_the_service_would_refuse_are_refused_here_and_the_rest_is_sent(empty_sandbox: Any) -> None:
    df = _frame()
    with Client(empty_sandbox.url, project_api_key=empty_sandbox.project_api_key, progress=False) as client:
        report = capture_frame(client, df, batch_size=1000)
    status = report["status"].tolist()
    assert status == ["sent"] + ["refused"] * 8 + ["sent", "sent"]
    reasons = report["reason"].tolist()
    for i in (1, 2, 3, 4):
        assert "lone surrogate" in reasons[i]
    assert "infinite" in reasons[5] or "infinity" in reasons[5]
    assert f"more than {MAX_NESTING} levels" in reasons[6] and f"more than {MAX_NESTING} levels" in reasons[7]
    assert "digits" in reasons[8]
    stored = empty_sandbox.events()
    assert sorted(stored["distinct_id"]) == ["u0", "u10", "u9"]
    batches = empty_sandbox.requests()
    batches = batches[batches["path"].str.startswith("/batch")]
    assert (batches["status"] == 200).all()  # one good batch, no 5xx/4xx


def test_a_lone_surrogate_in_a_string_dtype_column_is_refused_per_row(empty_sandbox: Any) -> None:
    df = pd.DataFrame(
        {
            "event": ["a", "b", "c"],
            "distinct_id": ["u1", "u2", "u3"],
            # python storage: with pyarrow installed "string" is Arrow, which refuses the surrogate itself
            "text": pd.Series(["ok", "bro\udcffken", "ok"], dtype=pd.StringDtype("python")),
        }
    )
    with Client(empty_sandbox.url, project_api_key=empty_sandbox.project_api_key, progress=False) as client:
        report = capture_frame(client, df)
    assert report["status"].tolist() == ["sent", "refused", "sent"]
    assert "'text'" in report.loc[1, "reason"]


def test_single_events_refuse_the_same_without_recursion_error() -> None:
    with pytest.raises(EventError, match="lone surrogate"):
        build_event("e", "u", {"x": "\ud800"})
    with pytest.raises(EventError, match="levels deep"):
        build_event("e", "u", {"x": _deep(5000)})


def test_request_bodies_too_deep_raise_a_value_error_not_recursion_error() -> None:
    from analytics_nb.client._core import encode_json

    with pytest.raises(ValueError, match="nested too deeply"):
        encode_json({"filters": _deep(100_000)})
