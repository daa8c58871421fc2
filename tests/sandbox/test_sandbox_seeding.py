"""Issue 12 finding 13: the seed is written in one transaction, so a start killed while seeding leaves
nothing behind and the next start seeds in full; a half-seeded database (from an older build) is refused
with an error that says what to do."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from analytics_nb.sandbox import start

_KILLED_WHILE_SEEDING = r"""
import os, signal, sys
from analytics_nb.sandbox import _store, start

calls = [0]
original = _store.Store.executemany

def executemany(self, sql, rows):
    calls[0] += 1
    if "INSERT INTO persons" in sql:  # the demo persons: well into the seed
        os.kill(os.getpid(), signal.SIGKILL)
    return original(self, sql, rows)

_store.Store.executemany = executemany
with start(seed="demo", db=sys.argv[1]):
    pass
"""


def _counts(db: str) -> dict[str, int]:
    with sqlite3.connect(db) as conn:
        tables = ("organizations", "users", "playlists", "plugins", "feature_flags", "persons")
        return {t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in tables}


def test_a_start_killed_while_seeding_leaves_nothing_and_the_next_one_seeds_in_full(tmp_path: Path) -> None:
    db = str(tmp_path / "sandbox.sqlite")
    killed = subprocess.run(
        [sys.executable, "-c", _KILLED_WHILE_SEEDING, db], capture_output=True, timeout=120
    )
    assert killed.returncode == -9, killed.stderr.decode()
    with start(seed="demo", db=db):
        pass
    with start(seed="demo", db=str(tmp_path / "fresh.sqlite")):
        pass
    assert _counts(db) == _counts(str(tmp_path / "fresh.sqlite"))  # the same as an uninterrupted seed


def test_a_half_seeded_database_of_an_older_build_is_refused(tmp_path: Path) -> None:
    db = str(tmp_path / "sandbox.sqlite")
    with start(seed="demo", db=db):
        pass
    with sqlite3.connect(db) as conn:  # what an older build left when killed after the playlists
        conn.execute("DELETE FROM sandbox_meta WHERE name='seed'")
        conn.execute("DELETE FROM feature_flags")
    with pytest.raises(RuntimeError, match=r"half-seeded.*feature_flags.*delete the file"), start(db=db):
        pass


def test_databases_of_older_builds_that_finished_seeding_are_adopted(tmp_path: Path) -> None:
    for seed in ("demo", "empty"):
        db = str(tmp_path / f"{seed}.sqlite")
        with start(seed=seed, db=db):
            pass
        before = _counts(db)
        with sqlite3.connect(db) as conn:
            conn.execute("DELETE FROM sandbox_meta WHERE name='seed'")
        with start(seed="demo", db=db) as sb:
            assert sb.ctx.store.get_meta("seed") == seed
        assert _counts(db) == before  # never seeded twice
