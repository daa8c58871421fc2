"""Opening a sandbox database: every resource's schema, then the seed in one transaction.

The seed state is recorded in ``sandbox_meta`` (``seed`` = ``empty`` | ``demo``) by the same transaction
that writes the seed, so a start killed while seeding leaves the database as it was (empty), never
half-seeded. A database written by an older build (no seed state) is checked: no data beyond the core rows
or every demo table filled is adopted; anything in between was left half-seeded and is refused with an
error that says what to do.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._context import SandboxContext
from ._faults import Faults
from ._resources import RESOURCES, SEED_ORDER, events, projects
from ._store import Store

SEEDS = ("demo", "empty")

#: Tables the demo seed fills (used to recognise a database of an older build, which has no seed state).
_DEMO_TABLES = ("recordings", "playlists", "plugins", "feature_flags", "persons")


class HalfSeededDatabase(RuntimeError):
    """The database was left half-seeded by an interrupted start of an older build."""


@dataclass(frozen=True)
class Opened:
    """What :func:`open_store` opened: the store and its core rows (first organization, project, owner)."""

    store: Store
    core: projects.CoreRows
    seed: str


def _legacy_state(store: Store, db: str | None) -> str:
    filled = {t: store.query_one(f"SELECT EXISTS(SELECT 1 FROM {t}) AS x")["x"] for t in _DEMO_TABLES}  # type: ignore[index]
    if not any(filled.values()):
        return "empty"
    if all(filled.values()):
        return "demo"
    missing = ", ".join(t for t, x in filled.items() if not x)
    raise HalfSeededDatabase(
        f"the sandbox database {db!r} was left half-seeded by an interrupted start (no rows in: {missing}); "
        "delete the file to seed it again, or start with another --db"
    )


def open_store(db: str | None, *, seed: str, profile: str) -> Opened:
    """Open (or create) the database, create every resource's tables, and seed it once, atomically."""
    if seed not in SEEDS:
        raise ValueError(f"seed must be 'demo' or 'empty', got {seed!r}")
    store = Store(db)
    try:
        events.upgrade_schema(store)
        for module in RESOURCES:
            if module.SCHEMA:
                store.executescript(module.SCHEMA)
            add_columns = getattr(module, "ADDED_COLUMNS", ())
            for table, column, kind in add_columns:  # columns added after a database file was created
                names = {r["name"] for r in store.query(f"PRAGMA table_info({table})")}
                if column not in names:
                    store.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
            if getattr(module, "INDEXES", ""):  # indexes over added columns: after they exist
                store.executescript(module.INDEXES)
        with store.transaction():
            state = store.get_meta("seed")
            has_core = store.query_one("SELECT 1 FROM organizations LIMIT 1") is not None
            if state is None and has_core:
                state = _legacy_state(store, db)
                store.set_meta("seed", state)
            core = projects.seed_core(store, profile=profile)
            if state is None:  # a new database: seed it inside this transaction
                state = seed
                if seed == "demo":
                    ctx = SandboxContext(
                        store=store,
                        profile=profile,
                        project_id=core.project_id,
                        organization_id=core.organization_id,
                        project_api_key=core.project_api_key,
                        faults=Faults(),
                        owner_user_id=core.owner_user_id,
                    )
                    for module in SEED_ORDER:
                        module.seed(store, ctx)
                store.set_meta("seed", state)
    except BaseException:
        store.close()
        raise
    return Opened(store, core, state)
