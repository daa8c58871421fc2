"""Seeds: the core rows every sandbox has (organization, project, owner) and the deterministic `demo` data
for playlists, recordings and transformations. Timestamps are anchored at the start of the current UTC day
so that relative filters such as `date_from=-7d` keep working; everything else is the same on every run.
"""

from __future__ import annotations

import random
import secrets
import string
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from . import _playlists, _transformations
from ._auth import create_user
from ._store import Store, dumps

if TYPE_CHECKING:
    from ._context import SandboxContext

ORGANIZATION_ID = str(uuid.uuid5(uuid.NAMESPACE_URL, "analytics-nb-sandbox/organization"))
PROJECT_ID = 1
OWNER_EMAIL = "owner@sandbox.example"

USERS = (
    ("Ada", "Lovelace", OWNER_EMAIL, "founder"),
    ("Grace", "Hopper", "grace@sandbox.example", "engineering"),
    ("Katherine", "Johnson", "katherine@sandbox.example", "data"),
    ("Alan", "Turing", "alan@sandbox.example", "product"),
    ("Hedy", "Lamarr", "hedy@sandbox.example", "marketing"),
)

PAGES = (
    "/",
    "/pricing",
    "/signup",
    "/login",
    "/docs",
    "/blog",
    "/checkout",
    "/settings",
    "/dashboard",
    "/search",
)
COUNTRIES = ("GB", "US", "DE", "FR", "BR", "IN", "JP", "AU")
BROWSERS = ("Chrome", "Firefox", "Safari", "Edge")
TOPICS = (
    "Checkout",
    "Onboarding",
    "Pricing page",
    "Signup",
    "Search",
    "Settings",
    "Docs",
    "Mobile",
    "Errors",
    "Power users",
    "Churn risk",
    "Dashboard",
    "Billing",
    "Login",
    "Blog readers",
    "Enterprise",
)


@dataclass(frozen=True)
class CoreSeed:
    """What `seed_core` made or found."""

    fresh: bool
    project_id: int
    organization_id: str
    project_api_key: str
    owner_user_id: int


def _iso(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def seed_core(store: Store, *, profile: str) -> CoreSeed:
    """Create the organization, the project (with its `phc_` token) and the owner user, unless they exist.

    The plugin access level follows the profile: ROOT (9) in `spec`, CONFIG (3) in `cloud`.
    """
    level = 3 if profile == "cloud" else 9
    org = store.query_one("SELECT id FROM organizations ORDER BY created_at LIMIT 1")
    if org is not None:
        store.execute("UPDATE organizations SET plugins_access_level=?", (level,))
        project = store.query_one(
            "SELECT id, api_token FROM projects WHERE organization_id=? ORDER BY id LIMIT 1", (org["id"],)
        )
        owner = store.query_one(
            "SELECT id FROM users WHERE organization_id=? ORDER BY id LIMIT 1", (org["id"],)
        )
        assert project is not None and owner is not None, (
            "sandbox database has an organization but no project"
        )
        return CoreSeed(False, int(project["id"]), org["id"], project["api_token"], int(owner["id"]))
    now = _iso(datetime.now(UTC))
    token = "phc_" + "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(43))
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO organizations(id, name, slug, created_at, plugins_access_level) VALUES (?,?,?,?,?)",
            (ORGANIZATION_ID, "Sandbox Organization", "sandbox-organization", now, level),
        )
        conn.execute(
            "INSERT INTO projects(id, organization_id, name, api_token, created_at, timezone) VALUES "
            "(?,?,?,?,?,?)",
            (PROJECT_ID, ORGANIZATION_ID, "Sandbox Project", token, now, "UTC"),
        )
        first, last, email, role = USERS[0]
        owner_id = create_user(
            store,
            email=email,
            first_name=first,
            last_name=last,
            organization_id=ORGANIZATION_ID,
            current_project_id=PROJECT_ID,
            role=role,
            user_uuid=str(uuid.uuid5(uuid.NAMESPACE_URL, f"analytics-nb-sandbox/user/{email}")),
        )
    return CoreSeed(True, PROJECT_ID, ORGANIZATION_ID, token, owner_id)


def seed_demo(store: Store, ctx: SandboxContext) -> None:
    """Users, >= 300 recordings, 64 playlists of both types with recordings, 12 transformations with source
    files, 3 export plugins with configs, and the matching activity log. Deterministic (fixed random
    seed)."""
    rng = random.Random(20240917)
    day = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    project_id, org_id = ctx.project_id, ctx.organization_id
    user_ids = [ctx.extra["owner_user_id"]]
    for first, last, email, role in USERS[1:]:
        user_ids.append(
            create_user(
                store,
                email=email,
                first_name=first,
                last_name=last,
                organization_id=org_id,
                current_project_id=project_id,
                role=role,
                user_uuid=str(uuid.uuid5(uuid.NAMESPACE_URL, f"analytics-nb-sandbox/user/{email}")),
            )
        )
    with store.transaction() as conn:
        session_ids = _seed_recordings(conn, rng, day, project_id)
        _seed_playlists(conn, rng, day, project_id, user_ids, session_ids)
        _seed_plugins(store, conn, rng, day, project_id, org_id, user_ids[0])


def _seed_recordings(conn: Any, rng: random.Random, day: datetime, project_id: int) -> list[str]:
    rows = []
    ids = []
    for i in range(320):
        start = day - timedelta(days=rng.uniform(0, 28), hours=rng.uniform(0, 23))
        duration = rng.randint(15, 3600)
        active = rng.randint(5, duration)
        session_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        person_n = rng.randint(1, 180)
        distinct_id = f"user-{person_n:04d}"
        person = {
            "id": person_n,
            "uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"analytics-nb-sandbox/person/{person_n}")),
            "distinct_ids": [distinct_id],
            "properties": {
                "email": f"{distinct_id}@example.com",
                "$geoip_country_code": rng.choice(COUNTRIES),
                "$browser": rng.choice(BROWSERS),
            },
            "created_at": _iso(day - timedelta(days=60 + person_n % 30)),
        }
        rows.append(
            (
                project_id,
                session_id,
                distinct_id,
                _iso(start),
                _iso(start + timedelta(seconds=duration)),
                duration,
                active,
                duration - active,
                rng.randint(0, 120),
                rng.randint(0, 300),
                rng.randint(0, 900),
                rng.randint(0, 40),
                rng.randint(0, 10),
                rng.choice((0, 0, 0, 1, 2, 6)),
                "https://shop.example.com" + rng.choice(PAGES),
                int(rng.random() < 0.3),
                round(rng.uniform(0, 100), 2),
                dumps(person),
            )
        )
        ids.append(session_id)
        del i
    conn.executemany(
        "INSERT INTO recordings(project_id, session_id, distinct_id, start_time, end_time, "
        "recording_duration, "
        "active_seconds, inactive_seconds, click_count, keypress_count, mouse_activity_count, "
        "console_log_count, "
        "console_warn_count, console_error_count, start_url, viewed, activity_score, person) "
        "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        rows,
    )
    return ids


def _seed_playlists(
    conn: Any, rng: random.Random, day: datetime, project_id: int, user_ids: list[int], session_ids: list[str]
) -> None:
    used: set[str] = set()
    for i in range(64):
        short_id = _playlists.generate_short_id(rng)
        while short_id in used:
            short_id = _playlists.generate_short_id(rng)
        used.add(short_id)
        kind = "filters" if i % 3 == 2 else "collection"
        topic = TOPICS[i % len(TOPICS)]
        created = day - timedelta(days=rng.uniform(1, 90))
        modified = min(day, created + timedelta(days=rng.uniform(0, 30)))
        author = user_ids[i % len(user_ids)]
        editor = user_ids[(i + rng.randint(0, 2)) % len(user_ids)]
        if kind == "filters":
            filters: dict[str, Any] = {
                "date_from": "-7d",
                "filter_test_accounts": rng.random() < 0.5,
                "properties": [
                    {
                        "key": "$current_url",
                        "value": "/" + topic.lower().split()[0],
                        "operator": "icontains",
                        "type": "event",
                    }
                ],
                "duration": [
                    {
                        "key": "duration",
                        "value": rng.choice((30, 60, 300)),
                        "operator": "gt",
                        "type": "recording",
                    }
                ],
            }
            name = f"{topic} sessions" if i % 5 else None
            derived = f"{topic} – URL contains {topic.lower().split()[0]}"
        else:
            filters = {}
            name = f"{topic} review #{i // len(TOPICS) + 1}"
            derived = None
        cur = conn.execute(
            "INSERT INTO playlists(project_id, short_id, name, derived_name, description, pinned, deleted, "
            "filters, "
            "type, created_at, created_by, last_modified_at, last_modified_by) VALUES "
            "(?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                project_id,
                short_id,
                name,
                derived,
                f"Sessions about {topic.lower()}" if i % 4 else "",
                int(i % 7 == 0),
                int(i % 16 == 15),
                dumps(filters),
                kind,
                _iso(created),
                author,
                _iso(modified),
                editor,
            ),
        )
        if kind == "collection":
            count = 0 if i % 10 == 4 else rng.randint(1, 12)
            for session_id in rng.sample(session_ids, count):
                conn.execute(
                    "INSERT INTO playlist_items(playlist_id, session_id, created_at) VALUES (?,?,?)",
                    (cur.lastrowid, session_id, _iso(created + timedelta(minutes=rng.randint(1, 5000)))),
                )


def _seed_plugins(
    store: Store, conn: Any, rng: random.Random, day: datetime, project_id: int, org_id: str, owner_id: int
) -> None:
    entries = _transformations.registry()
    transformations = [e for e in entries if "processEvent" in e["capabilities"]["methods"]]
    exports = [e for e in entries if "processEvent" not in e["capabilities"]["methods"]]
    installed = []
    for n, entry in enumerate([*transformations, *exports]):
        when = _iso(day - timedelta(days=40 - n))
        # a few installs lag behind the registry, so check_for_updates/upgrade have something to do
        major, minor, patch = (int(x) for x in entry["tag"].split("."))
        tag = f"{major}.{max(0, minor - 1)}.{patch}" if n % 3 == 0 else entry["tag"]
        cur = conn.execute(
            "INSERT INTO plugins(organization_id, plugin_type, name, description, url, icon, "
            "config_schema, tag, "
            "latest_tag, is_global, capabilities, metrics, public_jobs, created_at, updated_at) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                org_id,
                "repository" if n % 2 == 0 else "custom",
                entry["name"],
                entry["description"],
                entry["url"],
                entry["icon"],
                dumps(entry["config_schema"]),
                tag,
                None,
                0,
                dumps(entry["capabilities"]),
                None,
                None,
                when,
                when,
            ),
        )
        plugin_id = int(cur.lastrowid)
        installed.append((plugin_id, entry))
        for filename, source in entry["source"].items():
            conn.execute(
                "INSERT INTO plugin_source_files(plugin_id, filename, source, status) VALUES (?,?,?,?)",
                (plugin_id, filename, source, "LOCKED"),
            )
        store.log_activity(
            scope="Plugin",
            item_id=plugin_id,
            activity="installed",
            detail={
                "changes": None,
                "merge": None,
                "trigger": None,
                "name": entry["name"],
                "short_id": None,
                "type": None,
            },
            user_id=owner_id,
            organization_id=org_id,
            project_id=project_id,
            conn=conn,
        )
    # one transformation written in the browser (plugin_type "source")
    source = (
        "// Adds the hour of day to every event\n"
        "export function processEvent(event) {\n"
        "    const hour = new Date(event.timestamp ?? Date.now()).getUTCHours()\n"
        "    event.properties = { ...event.properties, hour_of_day: hour }\n"
        "    return event\n"
        "}\n"
    )
    when = _iso(day - timedelta(days=3))
    cur = conn.execute(
        "INSERT INTO plugins(organization_id, plugin_type, name, description, url, icon, config_schema, tag, "
        "latest_tag, is_global, capabilities, metrics, public_jobs, created_at, updated_at) "
        "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            org_id,
            "source",
            "Hour of day",
            "Adds hour_of_day to events",
            None,
            None,
            "[]",
            None,
            None,
            0,
            dumps({"jobs": [], "methods": ["processEvent"], "scheduled_tasks": []}),
            None,
            None,
            when,
            when,
        ),
    )
    for filename, text in (
        ("index.ts", source),
        ("plugin.json", '{\n  "name": "Hour of day",\n  "config": []\n}'),
    ):
        conn.execute(
            "INSERT INTO plugin_source_files(plugin_id, filename, source, status) VALUES (?,?,?,?)",
            (cur.lastrowid, filename, text, "LOCKED"),
        )
    # plugin configs: most transformations and every export are enabled in the project
    for order, (plugin_id, entry) in enumerate(installed):
        if order % 4 == 3:
            continue  # left unused
        config = {}
        for field in entry["config_schema"]:
            key = field["key"]
            config[key] = (
                f"secret-{rng.randint(1000, 9999)}"
                if field.get("secret")
                else field.get("default", f"value-{order}")
            )
        when = _iso(day - timedelta(days=30 - order))
        conn.execute(
            'INSERT INTO plugin_configs(project_id, plugin_id, enabled, "order", config, name, description, '
            "deleted, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
            (
                project_id,
                plugin_id,
                int(order % 5 != 4),
                order,
                dumps(config),
                entry["name"],
                entry["description"],
                0,
                when,
                when,
            ),
        )
        store.log_activity(
            scope="PluginConfig",
            item_id=plugin_id,
            activity="enabled",
            detail={
                "changes": None,
                "merge": None,
                "trigger": None,
                "name": entry["name"],
                "short_id": None,
                "type": None,
            },
            user_id=owner_id,
            organization_id=org_id,
            project_id=project_id,
            conn=conn,
        )
