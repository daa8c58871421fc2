"""One implementation per concept: missing values, JSON encoding, UUIDv7 ids, key redaction (in wire)."""

from __future__ import annotations

import ast
import datetime as dt
import json
import uuid
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import analytics_nb
from analytics_nb.frames import read_csv, to_csv
from analytics_nb.wire import redact, uuid7
from analytics_nb.wire.cells import is_missing, json_default

PACKAGE = Path(analytics_nb.__file__).parent

#: function names that would be a second implementation of a wire concept
CONCEPTS = {
    "is_missing",
    "_missing",
    "_is_missing",
    "uuid7",
    "new_uuid7",
    "redact",
    "_json_default",
    "_clean_nan",
}
#: parts other helpers are reworking (the sandbox keeps its own uuid7/redact until it adopts wire)
ELSEWHERE = {"sandbox", "flags", "widgets"}


def test_each_concept_is_defined_once() -> None:
    found: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] in ELSEWHERE:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and node.name in CONCEPTS:
                found.setdefault(node.name, []).append(str(rel))
    assert found == {
        "is_missing": ["wire/cells.py"],
        "uuid7": ["wire/_ids.py"],
        "redact": ["wire/_secrets.py"],
    }


@pytest.mark.parametrize(
    "value",
    [None, pd.NA, pd.NaT, float("nan"), np.float32("nan"), np.datetime64("NaT"), np.timedelta64("NaT")],
)
def test_missing_values(value: object) -> None:
    assert is_missing(value)


@pytest.mark.parametrize("value", ["", 0, False, [], {}, np.float32(1.5), np.datetime64("2024-01-01")])
def test_present_values(value: object) -> None:
    assert not is_missing(value)


def test_csv_round_trip_treats_numpy_float32_nan_as_missing() -> None:
    df = pd.DataFrame({"x": pd.Series([np.float32(1.5), np.float32("nan")], dtype=object)})
    back = read_csv(to_csv(df))
    assert back["x"].isna().tolist() == [False, True]


def test_json_default_encodes_what_records_hold() -> None:
    body = {
        "when": pd.Timestamp("2024-05-01T12:00:00Z"),
        "day": dt.date(2024, 5, 1),
        "n": np.int64(3),
        "tags": ("a", "b"),
        "arr": np.array([1, 2]),
        "gone": pd.NA,
    }
    assert json.loads(json.dumps(body, default=json_default)) == {
        "when": "2024-05-01T12:00:00+00:00",
        "day": "2024-05-01",
        "n": 3,
        "tags": ["a", "b"],
        "arr": [1, 2],
        "gone": None,
    }
    with pytest.raises(TypeError):
        json.dumps({"x": object()}, default=json_default)


def test_uuid7_is_version_7_and_sorts_by_time() -> None:
    first, second = uuid7(ms=1_700_000_000_000), uuid7(ms=1_700_000_000_001)
    assert uuid.UUID(first).version == 7 and uuid.UUID(first).variant == uuid.RFC_4122
    assert first < second


def test_redact_hides_every_kind_of_key_and_given_secrets() -> None:
    text = "phx_abcdefgh phc_abcdefgh pha_abcdefgh phs_abcdefgh token=s3cret-value"
    assert redact(text, ["s3cret-value"]) == "phx_*** phc_*** pha_*** phs_*** token=***"


def test_the_client_and_errors_load_without_pandas() -> None:
    import subprocess
    import sys

    code = "import sys, analytics_nb.client, analytics_nb.errors; print('pandas' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "False"
