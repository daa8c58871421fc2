"""The list filters of `GET /api/projects/:id/feature_flags/`, answered as PostHog answers them.

Source: PostHog `products/feature_flags/backend/api/feature_flag.py`, `FeatureFlagViewSet._apply_filters`
(what `_filter_request` calls; `posthog/api/feature_flag.py` `_filter_request` before the move) and
`safely_get_queryset` (the `order`), and `products/feature_flags/backend/flag_status.py`
`filter_flags_by_active_param` (`active=STALE`). As there, a value a filter does not know is ignored
(`type=other`, invalid `excluded_properties` / `tags` JSON) or narrows to what matches it
(`evaluation_runtime=both`: no flag; `active=yes`: the inactive ones), and only a search over 200
characters is refused. `order`
names a model field there (any other is a server error); here it is one of `ORDERS`, else a 400.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from .._errors import validation_error

__all__ = ["EVALUATION_RUNTIMES", "FLAG_TYPES", "ORDERS", "FlagListFilters", "is_stale"]

FLAG_TYPES = ("boolean", "multivariant", "experiment", "remote_config")
#: `FeatureFlag.EVALUATION_RUNTIME_CHOICES` (posthog/models/feature_flag/feature_flag.py).
EVALUATION_RUNTIMES = ("server", "client", "all")
ORDER_FIELDS = ("created_at", "updated_at", "key", "name", "id", "active")
ORDERS = tuple(sign + name for name in ORDER_FIELDS for sign in ("", "-"))
MAX_SEARCH = 200
STALE_AFTER = timedelta(days=30)


def _when(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _is_100(value: Any) -> bool:
    """`->>'rollout_percentage' = '100'`: the JSON number 100 (not 100.0) or the text "100"."""
    return (type(value) is int and value == 100) or value == "100"


def _full_groups(filters: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The release conditions at 100% with no properties (`properties` exactly `[]`)."""
    groups = filters.get("groups")
    return [
        g
        for g in (groups if isinstance(groups, list) else [])
        if isinstance(g, Mapping) and _is_100(g.get("rollout_percentage")) and g.get("properties") == []
    ]


def _variants(filters: Mapping[str, Any]) -> list[Any] | None:
    """`filters.multivariate.variants` (None when absent or not a list)."""
    multivariate = filters.get("multivariate")
    variants = multivariate.get("variants") if isinstance(multivariate, Mapping) else None
    return variants if isinstance(variants, list) else None


def _fully_rolled_out(filters: Any) -> bool:
    """The configuration branch of STALE (`filter_flags_by_active_param`'s SQL): a 100% condition without
    properties and no variants; or a variant at 100% plus such a condition; or such a condition with a
    variant override on a multivariate flag; or no filters at all."""
    if not isinstance(filters, Mapping) or not filters:
        return True
    full = _full_groups(filters)
    if not full:
        return False
    variants = _variants(filters)
    multivariate = filters.get("multivariate")
    if multivariate is None or multivariate == {} or variants == []:
        return True
    if variants and any(isinstance(v, Mapping) and _is_100(v.get("rollout_percentage")) for v in variants):
        return True
    return bool(variants) and any(g.get("variant") is not None for g in full)


def is_stale(flag: Mapping[str, Any], now: datetime) -> bool:
    """`active=STALE`: an active flag not called in 30 days (`last_called_at`), or, never called, created
    over 30 days ago and fully rolled out (see `_fully_rolled_out`)."""
    if not flag.get("active", True):
        return False
    threshold = now - STALE_AFTER
    called = _when(flag.get("last_called_at"))
    if called is not None:
        return called < threshold
    created = _when(flag.get("created_at"))
    return created is not None and created < threshold and _fully_rolled_out(flag.get("filters"))


def _created_by_ids(text: str) -> tuple[int, ...]:
    """`parse_created_by_ids`: one id, a comma-separated list or a JSON list; what is not an id is left out
    (no id at all: no filter)."""
    text = text.strip()
    values: Any
    if text.startswith("["):
        try:
            values = json.loads(text)
        except ValueError:
            return ()
        values = values if isinstance(values, list) else []
    else:
        values = text.split(",")
    ids = []
    for value in values:
        if isinstance(value, int) and not isinstance(value, bool):
            ids.append(value)
        elif isinstance(value, str) and value.strip().isdigit():
            ids.append(int(value.strip()))
    return tuple(ids)


def _json_names(text: str) -> tuple[str, ...]:
    """`excluded_properties`, `tags`, `excluded_tags`: a JSON list of names; anything else (invalid JSON too)
    filters nothing."""
    try:
        keys = json.loads(text)
    except ValueError:
        return ()
    return tuple(str(k) for k in keys) if isinstance(keys, list) else ()


def _search_pattern(text: str) -> re.Pattern[str] | None:
    """The search as the service matches it: case-insensitive, the text escaped and each space matching any
    run of whitespace, `-` and `_` (so "new checkout" finds `new-checkout`)."""
    text = text.strip()
    if not text:
        return None
    if len(text) > MAX_SEARCH:
        raise validation_error(f"Search term cannot exceed {MAX_SEARCH} characters", attr="search")
    return re.compile(re.escape(text).replace(r"\ ", r"[\s\-_]*"), re.IGNORECASE)


@dataclass(frozen=True)
class FlagListFilters:
    """The filters of one list request (absent: None / empty)."""

    active: str | None = None
    created_by_ids: tuple[int, ...] = ()
    search: re.Pattern[str] | None = None
    key: str | None = None
    type: str | None = None
    evaluation_runtime: str | None = None
    excluded_keys: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    excluded_tags: tuple[str, ...] = ()
    order: str = "-created_at"

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> FlagListFilters:
        """The filters of a request's query string (a 400 naming `search` or `order` when refused)."""
        order = query.get("order") or "-created_at"
        if order not in ORDERS:
            raise validation_error(f"order must be one of {', '.join(ORDERS)}.", attr="order")
        key = (query.get("key") or "").strip()
        return cls(
            active=query.get("active"),
            created_by_ids=_created_by_ids(query.get("created_by_id") or ""),
            search=_search_pattern(query.get("search") or ""),
            key=key.lower() or None,
            type=query.get("type"),
            evaluation_runtime=query.get("evaluation_runtime"),
            excluded_keys=_json_names(query.get("excluded_properties") or ""),
            tags=_json_names(query.get("tags") or ""),
            excluded_tags=_json_names(query.get("excluded_tags") or ""),
            order=order,
        )

    def matches(self, flag: Mapping[str, Any], now: datetime) -> bool:
        """Whether `flag` (the stored body) passes every filter."""
        return (
            self._active(flag, now)
            and self._created_by(flag)
            and self._text(flag)
            and self._of_type(flag)
            and self._runtime(flag)
            and flag.get("key") not in self.excluded_keys
            and self._tagged(flag)
        )

    def _tagged(self, flag: Mapping[str, Any]) -> bool:
        """`tags`: any of them (`tagged_items__tag__name__in`); `excluded_tags`: none of them."""
        stored = flag.get("tags")
        names = {str(t) for t in stored} if isinstance(stored, list) else set()
        if self.tags and not names & set(self.tags):
            return False
        return not names & set(self.excluded_tags)

    def _runtime(self, flag: Mapping[str, Any]) -> bool:
        wanted = self.evaluation_runtime
        return wanted is None or flag.get("evaluation_runtime", "all") == wanted

    def _active(self, flag: Mapping[str, Any], now: datetime) -> bool:
        if self.active is None:
            return True
        if self.active == "STALE":
            return is_stale(flag, now)
        return bool(flag.get("active", True)) == (self.active == "true")

    def _created_by(self, flag: Mapping[str, Any]) -> bool:
        if not self.created_by_ids:
            return True
        user = flag.get("created_by")
        return isinstance(user, Mapping) and user.get("id") in self.created_by_ids

    def _text(self, flag: Mapping[str, Any]) -> bool:
        if self.key is not None and str(flag.get("key", "")).lower() != self.key:
            return False
        if self.search is None:
            return True
        names = [str(flag.get("key") or ""), str(flag.get("name") or "")]
        names += [str(e.get("name") or "") for e in _experiments(flag)]
        return any(self.search.search(name) for name in names)

    def _of_type(self, flag: Mapping[str, Any]) -> bool:
        stored = flag.get("filters")
        filters: Mapping[str, Any] = stored if isinstance(stored, Mapping) else {}
        if self.type == "boolean":
            return not _variants(filters)
        if self.type == "multivariant":
            return bool(_variants(filters))
        if self.type == "experiment":
            return bool(flag.get("experiment_set"))
        if self.type == "remote_config":
            return bool(flag.get("is_remote_configuration"))
        return True  # any other value: ignored, as the service does

    def sort(self, flags: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """`flags` (stored bodies with their `id`) in `order` (ties: newest id first)."""
        field = self.order.lstrip("-")

        def rank(flag: dict[str, Any]) -> tuple[bool, Any]:
            value = flag.get(field, "" if field == "name" else None)  # the API shape's name is "" when absent
            return (value is None, 0 if value is None else value)

        by_id = sorted(flags, key=lambda f: f["id"], reverse=True)
        return sorted(by_id, key=rank, reverse=self.order.startswith("-"))


def _experiments(flag: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The flag's live experiments (their names are searched too)."""
    found = flag.get("experiment_set")
    items = found if isinstance(found, list) else []
    return [e for e in items if isinstance(e, Mapping) and not e.get("deleted")]
