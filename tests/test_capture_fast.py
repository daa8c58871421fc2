"""capture_frame's encoding of batches (issue 15): orjson when installed, the same events stored as with
`json`, and the local size check still exact for what the service measures."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from analytics_nb import Client
from analytics_nb.capture import _events, capture_frame
from analytics_nb.capture._events import MAX_EVENT_BYTES, prepare_frame

pytest.importorskip("orjson")


def make_client(sb: Any) -> Client:
    return Client(sb.url, project_api_key=sb.project_api_key, retry_backoff=0.05)


ODD = {
    "big": [2**64, 3],  # beyond 64 bits: orjson refuses the batch, json encodes it
    "tiny": [1e-9, 1e-05],
    "large": [1e16, 1e15],
    "text": ["é😀\u2028", "a\x01b\\ud"],
    "nested": [{"a": [1.5, None, "ü"]}, [-0.0]],
}


def test_a_batch_orjson_cannot_encode_is_encoded_by_json() -> None:
    prepared = prepare_frame(pd.DataFrame({"event": ["e", "e"], "distinct_id": ["a", "b"], "n": [2**64, 1]}))
    text = prepared.encode_many([0, 1])
    assert b"18446744073709551616" in text
    fine = prepare_frame(pd.DataFrame({"event": ["e"], "distinct_id": ["a"], "t": ["é"]})).encode_many([0])
    assert "é".encode() in fine  # orjson: UTF-8, not `\u00e9`


def test_odd_values_are_stored_as_given(empty_sandbox: Any) -> None:
    df = pd.DataFrame({"event": ["e", "e"], "distinct_id": ["a", "b"], **ODD})
    df["big"] = pd.Series(ODD["big"], dtype=object)
    with make_client(empty_sandbox) as client:
        report = capture_frame(client, df, progress=False)
    assert report["status"].tolist() == ["sent", "sent"], report["reason"].tolist()
    stored = empty_sandbox.events().set_index("uuid").loc[report["uuid"], "properties"].tolist()
    for row, props in enumerate(stored):
        expected = {k: v[row] for k, v in ODD.items()}
        expected["nested"] = [{"a": [1.5, None, "ü"]}, [-0.0]][row]
        assert props == expected
        assert type(props["big"]) is int


def test_an_event_over_the_limit_only_as_json_spells_its_floats_is_refused_here(empty_sandbox: Any) -> None:
    # `1e-09` (json, what the service measures) is a fifth longer than orjson's `1e-9`: this event is under
    # 2 MB as orjson writes it and over it as the service measures it, so it must be refused locally (with
    # the reason), not sent and refused by the service
    count = MAX_EVENT_BYTES // 6 + 1000
    df = pd.DataFrame({"event": ["e", "e"], "distinct_id": ["a", "b"]})
    df["floats"] = pd.Series([[1e-9] * count, None], dtype=object)
    prepared = prepare_frame(df)
    assert _events._ORJSON_DUMPS is not None
    assert len(prepared.encode_many([0])) <= MAX_EVENT_BYTES < len(prepared.encode(0))
    with make_client(empty_sandbox) as client:
        report = capture_frame(client, df, progress=False)
    assert report["status"].tolist() == ["refused", "sent"]
    assert (
        report["reason"].iloc[0].startswith("the event is ")
        and "2,097,152-byte limit" in report["reason"].iloc[0]
    )
    assert len(empty_sandbox.events()) == 1
