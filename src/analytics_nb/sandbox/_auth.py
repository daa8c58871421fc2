"""Personal API keys (`phx_...`): issued, stored as sha256 hashes, resolved to users; scope rules of the real
service (posthog-notes §2.4)."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import string
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from starlette.requests import Request

from ._errors import authentication_failed, not_authenticated, permission_denied
from ._http import parse_json_body
from ._store import Store, dumps, loads, now_iso

#: Scope objects the sandbox knows (a subset of PostHog's `posthog/scopes.py` list, enough to validate keys).
SCOPE_OBJECTS: frozenset[str] = frozenset(
    {
        "action",
        "activity_log",
        "annotation",
        "batch_export",
        "cohort",
        "dashboard",
        "early_access_feature",
        "event_definition",
        "experiment",
        "export",
        "feature_flag",
        "group",
        "hog_function",
        "insight",
        "notebook",
        "organization",
        "organization_member",
        "person",
        "plugin",
        "project",
        "property_definition",
        "query",
        "session_recording",
        "session_recording_playlist",
        "sharing_configuration",
        "subscription",
        "survey",
        "user",
        "webhook",
    }
)

#: Sentinel scope for actions that refuse personal API keys whatever scopes they hold.
UNSUPPORTED = "!unsupported"

_ALNUM = string.ascii_letters + string.digits


def hash_key(key: str) -> str:
    """The stored form of a personal key: sha256 hex digest (the plain key is never stored)."""
    return "sha256$" + hashlib.sha256(key.encode("utf-8")).hexdigest()


def generate_personal_key() -> str:
    """A fresh `phx_` key with 47 random alphanumeric characters."""
    return "phx_" + "".join(secrets.choice(_ALNUM) for _ in range(47))


def validate_scopes(scopes: list[str]) -> list[str]:
    """Check each scope is `*` or `<object>:read|write` with a known object; raises ValueError naming the bad
    one."""
    if isinstance(scopes, str) or not isinstance(scopes, list | tuple):
        raise ValueError("scopes must be a list of strings such as ['session_recording_playlist:read']")
    for scope in scopes:
        if scope == "*":
            continue
        obj, _, action = str(scope).partition(":")
        if action not in ("read", "write") or obj not in SCOPE_OBJECTS:
            raise ValueError(
                f"invalid scope {scope!r}: use '*' or '<object>:read' / '<object>:write' with an object "
                f"among "
                f"{sorted(SCOPE_OBJECTS)}"
            )
    return list(scopes)


@dataclass(repr=False)
class User:
    """An authenticated sandbox user and the key they authenticated with (no secret is held)."""

    id: int
    uuid: str
    distinct_id: str
    first_name: str
    last_name: str
    email: str
    is_email_verified: bool
    hedgehog_config: dict[str, Any] | None
    role_at_organization: str | None
    organization_id: str
    current_project_id: int | None
    scopes: list[str] = field(default_factory=lambda: ["*"])
    scoped_teams: list[int] | None = None
    scoped_organizations: list[str] | None = None
    key_id: str | None = None

    def __repr__(self) -> str:
        return f"User(id={self.id}, email={self.email!r}, scopes={self.scopes!r})"

    def basic(self) -> dict[str, Any]:
        """The nested `UserBasicSerializer` shape used in `created_by` / `last_modified_by`."""
        return user_basic(self.__dict__)

    def has_scope(self, scope: str) -> bool:
        """Whether the key's scopes satisfy `scope` (`*` covers all; `:write` also covers `:read`)."""
        if "*" in self.scopes or scope in self.scopes:
            return True
        obj, _, action = scope.partition(":")
        return action == "read" and f"{obj}:write" in self.scopes


def user_basic(row: Any) -> dict[str, Any]:
    """UserBasicSerializer fields from a users row (or dict)."""
    hog = row["hedgehog_config"]
    if isinstance(hog, str):
        hog = loads(hog)
    return {
        "id": row["id"],
        "uuid": row["uuid"],
        "distinct_id": row["distinct_id"],
        "first_name": row["first_name"],
        "last_name": row["last_name"],
        "email": row["email"],
        "is_email_verified": bool(row["is_email_verified"]),
        "hedgehog_config": hog,
        "role_at_organization": row["role_at_organization"],
    }


def users_by_id(store: Store) -> dict[int, dict[str, Any]]:
    """All users as basic dicts, keyed by id (used to serialize lists quickly)."""
    return {r["id"]: user_basic(r) for r in store.query("SELECT * FROM users")}


def create_user(
    store: Store,
    *,
    email: str,
    first_name: str,
    last_name: str = "",
    organization_id: str,
    current_project_id: int | None,
    role: str | None = None,
    user_uuid: str | None = None,
    distinct_id: str | None = None,
) -> int:
    """Insert a user and return its id."""
    uid = user_uuid or str(uuid.uuid4())
    return store.execute(
        "INSERT INTO users(uuid, distinct_id, first_name, last_name, email, is_email_verified, "
        "hedgehog_config, "
        "role_at_organization, organization_id, current_project_id) VALUES (?,?,?,?,?,?,?,?,?,?)",
        (
            uid,
            distinct_id or uid,
            first_name,
            last_name,
            email,
            1,
            None,
            role,
            organization_id,
            current_project_id,
        ),
    )


def create_personal_key(
    store: Store,
    user_id: int,
    scopes: list[str],
    *,
    scoped_teams: list[int] | None = None,
    scoped_organizations: list[str] | None = None,
    label: str = "sandbox key",
    key: str | None = None,
) -> str:
    """Issue a personal API key for `user_id`; only its sha256 hash is stored. Returns the plain key."""
    scopes = validate_scopes(scopes)
    if store.query_one("SELECT id FROM users WHERE id=?", (user_id,)) is None:
        raise ValueError(f"user {user_id} does not exist in the sandbox")
    plain = key or generate_personal_key()
    store.execute(
        "INSERT INTO personal_api_keys(id, user_id, label, secure_value, mask_value, scopes, scoped_teams, "
        "scoped_organizations, created_at) VALUES (?,?,?,?,?,?,?,?,?)",
        (
            str(uuid.uuid4()),
            user_id,
            label,
            hash_key(plain),
            plain[:4] + "..." + plain[-4:],
            dumps(scopes),
            None if scoped_teams is None else dumps([int(t) for t in scoped_teams]),
            None if scoped_organizations is None else dumps([str(o) for o in scoped_organizations]),
            now_iso(),
        ),
    )
    return plain


OWNER_KEY_LABEL = "sandbox owner"


def owner_key(store: Store, owner_user_id: int, *, rotate: bool = False) -> str:
    """The owner's all-scopes key of this database: the stored one (a restart on the same file reuses it),
    or a new one when there is none yet, its key row is gone, or `rotate` is asked; a new key revokes every
    earlier owner key (so restarts never pile up valid all-scopes keys). Kept in `sandbox_meta` in plain
    text, next to its hash in `personal_api_keys` -- a local sandbox file, never a real PostHog key."""
    with store.transaction():
        current = store.get_meta("owner_key")
        if current and not rotate:
            live = store.query_one(
                "SELECT 1 FROM personal_api_keys WHERE secure_value=?", (hash_key(current),)
            )
            if live is not None:
                return current
        store.execute("DELETE FROM personal_api_keys WHERE label=?", (OWNER_KEY_LABEL,))
        plain = create_personal_key(store, owner_user_id, ["*"], label=OWNER_KEY_LABEL)
        store.set_meta("owner_key", plain)
        return plain


def is_key(presented: str | None, key_hash: str) -> bool:
    """Whether `presented` is the key whose stored hash is `key_hash` (constant-time comparison)."""
    return bool(presented) and bool(key_hash) and hmac.compare_digest(hash_key(presented or ""), key_hash)


def _body_key(request: Request) -> str | None:
    """`personal_api_key` from a body the app has already read (JSON or form), else None. A JSON body is
    parsed with the API's checks, so a malformed one is the DRF 400 (as PostHog's authentication, which
    reads `request.data`, answers) and never a 500."""
    body: bytes | None = getattr(request, "_body", None)
    if not body or not body.strip():
        return None
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype == "application/x-www-form-urlencoded":
        values = parse_qs(body.decode("latin-1")).get("personal_api_key")
        return values[0] if values else None
    if ctype and ctype != "application/json" and not ctype.endswith("+json"):
        return None
    data = parse_json_body(request, body)
    if isinstance(data, dict) and isinstance(data.get("personal_api_key"), str):
        return str(data["personal_api_key"])
    return None


def extract_key(request: Request) -> tuple[str | None, str]:
    """The personal key sent with the request and where it was found (header, body, then query string)."""
    auth = request.headers.get("authorization", "")
    if auth:
        kind, _, token = auth.partition(" ")
        token = token.strip()
        if kind.lower() == "bearer" and token and not token.startswith("pha_"):
            return token, "Authorization header"
    body_key = _body_key(request)
    if body_key:
        return body_key, "body"
    query_key = request.query_params.get("personal_api_key")
    if query_key:
        return query_key, "query string"
    return None, ""


def authenticate(store: Store, request: Request) -> User:
    """Resolve the request's personal key to a user, or raise the real 401."""
    key, source = extract_key(request)
    if key is None:
        raise not_authenticated()
    row = store.query_one(
        "SELECT k.id AS key_id, k.scopes, k.scoped_teams, k.scoped_organizations, u.* FROM "
        "personal_api_keys k "
        "JOIN users u ON u.id = k.user_id WHERE k.secure_value=?",
        (hash_key(key),),
    )
    if row is None:
        raise authentication_failed(f"Personal API key found in request {source} is invalid.")
    return User(
        id=row["id"],
        uuid=row["uuid"],
        distinct_id=row["distinct_id"],
        first_name=row["first_name"],
        last_name=row["last_name"],
        email=row["email"],
        is_email_verified=bool(row["is_email_verified"]),
        hedgehog_config=loads(row["hedgehog_config"]),
        role_at_organization=row["role_at_organization"],
        organization_id=row["organization_id"],
        current_project_id=row["current_project_id"],
        scopes=loads(row["scopes"]),
        scoped_teams=loads(row["scoped_teams"]),
        scoped_organizations=loads(row["scoped_organizations"]),
        key_id=row["key_id"],
    )


def check_scope(user: User, scope: str | None) -> None:
    """Raise the real 403 when the key does not carry `scope` (UNSUPPORTED refuses every personal key)."""
    if scope is None:
        return
    if scope == UNSUPPORTED:
        raise permission_denied("This action does not support personal API key access")
    if not user.has_scope(scope):
        raise permission_denied(f"API key missing required scope '{scope}'")
