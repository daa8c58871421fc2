"""PostHog's persons exports read by the simulation door: the persons list CSV and the actors query CSV.

The CSV text is written as PostHog's exporter writes it (`posthog/tasks/exports/csv_exporter.py`, fixture
`posthog/tasks/exports/test/csv_renders/people.json`): ``id`` is the person id, ``name`` a display name,
lists flattened by index (``distinct_ids.0``), dicts by dots (``properties.email``), ``True``/``False``,
null as an empty cell. The oracle is the sandbox's own answer for each distinct id (``engine="remote"``
with the id alone: the service reads the stored person), so the export path must equal it for every id.
"""

from __future__ import annotations

import csv
import io
import random
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest

from _clients import client_for
from analytics_nb import Client
from analytics_nb.sandbox import Sandbox, start
from analytics_nb.simulation import (
    SimulationInputError,
    normalise_property_sets,
    read_posthog_export,
    simulate,
)

#: Flags over person properties only (the group flag needs a group key, which an export has not).
FLAGS = [
    "beta-feature",
    "new-checkout",
    "pricing-page-experiment",
    "paid-upsell",
    "power-users",
    "phone-verification",
    "legacy-accounts",
    "ios-redesign",
    "gradual-rollout",
    "beta-extras",
    "eu-cohort-promo",
]
PROPERTY_KEYS = [
    "$os",
    "email",
    "plan",
    "country",
    "phone",
    "sessions_count",
    "lifetime_value",
    "signup_date",
    "app_version",
    "email_opt_in",
]


def _persons(n: int, seed: int = 5) -> list[dict[str, Any]]:
    """PostHog person records (the persons API shape the exporter flattens), 1-3 distinct ids each."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        ids = [f"0191{rng.getrandbits(48):012x}-anon-{i}"]
        for k in range(rng.choice([0, 1, 1, 2])):
            ids.append(f"user{i}@corp{k}.example" if k else f"user-{i}")
        props: dict[str, Any] = {
            "$os": rng.choice(["iOS", "Android", "Mac OS X"]),
            "email": rng.choice([f"qa-{i}@acme.io", f"p{i}@example.com", f"p{i}@test.dev", f"p{i}@corp.io"]),
            "plan": rng.choice(["free", "starter", "pro", "enterprise"]),
            "country": rng.choice(["US", "DE", "FR", "GB", "CA", "JP"]),
            "sessions_count": rng.randrange(0, 3000),
            "lifetime_value": round(rng.uniform(0, 1200), 2),
            "signup_date": f"20{rng.randint(21, 26)}-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}",
            "app_version": f"{rng.randint(1, 3)}.{rng.randint(0, 9)}.{rng.randint(0, 5)}",
            "email_opt_in": rng.random() < 0.5,
        }
        if rng.random() < 0.4:
            props["phone"] = f"+1555{rng.randrange(10**6):06d}"
        out.append({"id": 1000 + i, "name": props["email"], "distinct_ids": ids, "properties": props})
    return out


def _cell(value: Any) -> str:
    """A value as PostHog's CSV renderer writes it: None empty, booleans True/False, the rest str()."""
    return "" if value is None else str(value)


def persons_csv(
    persons: list[dict[str, Any]], *, prefix: str = "", extra: dict[str, Any] | None = None
) -> str:
    """The persons list CSV (``prefix=""``) or the actors query CSV (``prefix="person."``) of ``persons``."""
    width = max(len(p["distinct_ids"]) for p in persons)
    keys = sorted({k for p in persons for k in p["properties"]})
    header = [f"{prefix}id", f"{prefix}name"]
    header += [f"{prefix}distinct_ids.{i}" for i in range(width)]
    header += [f"{prefix}properties.{k}" for k in keys]
    header += [f"{prefix}created_at", f"{prefix}uuid", *(extra or {})]
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    for n, p in enumerate(persons):
        ids = p["distinct_ids"] + [None] * (width - len(p["distinct_ids"]))
        row = [p["id"], p["name"], *ids, *(p["properties"].get(k) for k in keys)]
        row += ["2022-07-07T09:33:23.447000Z", f"0181d801-c717-0000-ba5e-{n:012d}", *(extra or {}).values()]
        writer.writerow([_cell(v) for v in row])
    return buf.getvalue()


@pytest.fixture(scope="module")
def persons() -> list[dict[str, Any]]:
    return _persons(240)


@pytest.fixture(scope="module")
def stored(persons: list[dict[str, Any]]) -> Iterator[tuple[Sandbox, Client, pd.DataFrame]]:
    """A demo sandbox holding the persons (each distinct id with the person's properties) and the
    service's own answer for every distinct id (the id alone: the stored person is read)."""
    with start(seed="demo", profile="spec") as sb:
        for p in persons:
            for did in p["distinct_ids"]:
                sb.set_person(did, p["properties"])
        client = client_for(sb, ids=True)
        ids = [d for p in persons for d in p["distinct_ids"]]
        oracle = client.simulate(pd.DataFrame({"distinct_id": ids}), FLAGS, engine="remote")
        try:
            yield sb, client, oracle.frame.set_index("distinct_id")[FLAGS]
        finally:
            client.close()


def _same_answers(result_frame: pd.DataFrame, oracle: pd.DataFrame) -> int:
    """Rows of the result that differ from the oracle (by distinct id); asserts every id is answered."""
    got = result_frame.set_index("distinct_id")[FLAGS]
    assert set(got.index) == set(oracle.index)
    got = got.loc[oracle.index].astype(object)
    want = oracle.astype(object)
    differs = ~(got.eq(want) | (got.isna() & want.isna()))
    return int(differs.any(axis=1).sum())


def test_persons_csv_read_directly_gives_the_service_answer_for_every_distinct_id(
    persons: list[dict[str, Any]], stored: tuple[Sandbox, Client, pd.DataFrame]
) -> None:
    _sb, client, oracle = stored
    export = pd.read_csv(io.StringIO(persons_csv(persons)))
    result = client.simulate(export, FLAGS, engine="local", missing_columns="not_set")
    n_ids = sum(len(p["distinct_ids"]) for p in persons)
    assert len(result.frame) == n_ids > len(persons)  # one row per distinct id, not per person
    assert _same_answers(result.frame, oracle) == 0
    # the person id is shown (to group by person) and never read as a property
    assert result.frame["person_id"].nunique() == len(persons)
    assert "name" not in result.frame.columns and "uuid" not in result.frame.columns


def test_persons_csv_through_remote_sends_the_export_properties(
    persons: list[dict[str, Any]], stored: tuple[Sandbox, Client, pd.DataFrame]
) -> None:
    sb, client, oracle = stored
    export = pd.read_csv(io.StringIO(persons_csv(persons[:60])))
    sb.clear_requests()
    result = client.simulate(export, FLAGS, engine="remote")
    sent = sb.requests()
    assert (sent["path"] == "/flags/").sum() == len(result.frame)
    sub = oracle.loc[result.frame["distinct_id"]]
    assert _same_answers(result.frame, sub) == 0


def test_actors_query_csv_reads_the_person_columns_only(
    persons: list[dict[str, Any]], stored: tuple[Sandbox, Client, pd.DataFrame]
) -> None:
    _sb, client, oracle = stored
    text = persons_csv(persons, prefix="person.", extra={"event_count": 7, "person_display_name": "x"})
    result = client.simulate(pd.read_csv(io.StringIO(text)), FLAGS, engine="local", missing_columns="not_set")
    assert _same_answers(result.frame, oracle) == 0
    assert "event_count" not in result.frame.columns  # a query column, not a person property


def test_first_keeps_one_row_per_person_with_distinct_ids_0(persons: list[dict[str, Any]]) -> None:
    text = persons_csv(persons)
    first = read_posthog_export(text, distinct_ids="first")
    assert len(first) == len(persons)
    assert first["distinct_id"].tolist() == [p["distinct_ids"][0] for p in persons]
    every = read_posthog_export(io.StringIO(text))
    assert len(every) == sum(len(p["distinct_ids"]) for p in persons)
    with pytest.raises(SimulationInputError, match="does not say which one is identified"):
        read_posthog_export(text, distinct_ids="identified")


def test_numeric_ids_with_gaps_refused_from_read_csv_and_kept_as_text_by_the_reader() -> None:
    persons = [
        {"id": 1, "name": "a", "distinct_ids": ["anon-1", "1234"], "properties": {"country": "NA"}},
        {"id": 2, "name": "b", "distinct_ids": ["anon-2"], "properties": {"country": "US"}},
    ]
    text = persons_csv(persons)
    with pytest.raises(SimulationInputError, match=r"distinct_ids\.1.*read_posthog_export"):
        normalise_property_sets(pd.read_csv(io.StringIO(text)))  # 1234.0 would be someone else
    sets = read_posthog_export(text)
    assert sets["distinct_id"].tolist() == ["anon-1", "1234", "anon-2"]
    assert sets["country"].tolist() == ["NA", "NA", "US"]  # Namibia, not pandas' missing value


def test_hint_never_points_at_the_person_id(persons: list[dict[str, Any]]) -> None:
    frame = pd.DataFrame({"id": [1, 2], "country": ["US", "DE"]})
    with pytest.raises(SimulationInputError) as info:
        normalise_property_sets(frame)
    text = str(info.value)
    assert "did you mean 'id'" not in text and "person id" in text
    # following the old hint (id -> distinct_id) on an export is refused, not answered for other people
    export = pd.read_csv(io.StringIO(persons_csv(persons[:5]))).rename(columns={"id": "distinct_id"})
    with pytest.raises(SimulationInputError, match=r"distinct_ids\.N"):
        normalise_property_sets(export)


def test_duplicate_columns_name_them(persons: list[dict[str, Any]]) -> None:
    export = pd.read_csv(io.StringIO(persons_csv(persons[:5])))
    export.columns = [c.replace("properties.", "") for c in export.columns]
    export = export.assign(distinct_id=[p["distinct_ids"][0] for p in persons[:5]])
    export = export.drop(columns=[c for c in export.columns if c.startswith("distinct_ids.")])
    export = export.rename(columns={"email": "name"})  # two 'name' columns, as stripping a prefix makes
    with pytest.raises(SimulationInputError, match=r"'name' appear more than once"):
        simulate(export, engine="local", definitions=[])


def test_properties_prefix_read_without_the_export_shape() -> None:
    sets = normalise_property_sets(
        pd.DataFrame({"distinct_id": ["a"], "properties.email": ["x@example.com"]})
    )
    assert sets.person_columns == ["email"]
    with pytest.raises(SimulationInputError, match=r"'properties\.email' is property 'email'"):
        normalise_property_sets(
            pd.DataFrame({"distinct_id": ["a"], "email": ["y"], "properties.email": ["x@example.com"]})
        )


def test_export_through_the_sql_engine_gives_the_same_answers(
    persons: list[dict[str, Any]], stored: tuple[Sandbox, Client, pd.DataFrame]
) -> None:
    _sb, client, oracle = stored
    export = pd.read_csv(io.StringIO(persons_csv(persons)))
    result = client.simulate(export, FLAGS, engine="sql", missing_columns="not_set")
    assert _same_answers(result.frame, oracle) == 0
