"""Demo data of the flags part (data only; `feature_flags.seed` and `persons.seed` store it): feature flags
covering every operator family, a cohort, a few dozen `company` groups and a few thousand persons with
stored properties. Deterministic."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from typing import Any

__all__ = [
    "DEMO_COMPANIES",
    "DEMO_PERSONS",
    "EU_COHORT",
    "demo_companies",
    "demo_flag_definitions",
    "demo_persons",
]

DEMO_PERSONS = 3000
DEMO_COMPANIES = 40
_SEED = 20_241_121
_PLANS = ("free", "starter", "pro", "enterprise")
_COUNTRIES = ("US", "CA", "GB", "DE", "FR", "JP", "BR", "IN")
_OSES = ("iOS", "Android", "Windows", "macOS", "Linux")
_DOMAINS = ("example.com", "acme.io", "globex.com", "initech.net", "test.dev")
_INDUSTRIES = ("saas", "retail", "fintech", "health", "media")
#: Fixed reference day of the seeded dates, so the data is the same on every run.
_REFERENCE = datetime(2026, 11, 1, tzinfo=UTC)


def _payload(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _prop(key: str, operator: str, value: Any, type_: str = "person", **extra: Any) -> dict[str, Any]:
    return {"key": key, "operator": operator, "value": value, "type": type_, **extra}


def demo_flag_definitions(cohort_id: int) -> list[dict[str, Any]]:
    """The demo flags as create bodies (wire shape of `/api/projects/:id/feature_flags/`)."""
    return [
        {
            "key": "beta-feature",
            "name": "Beta feature (boolean with payload)",
            "filters": {
                "groups": [
                    {"properties": [_prop("email", "icontains", "@example.com")], "rollout_percentage": 100},
                    {"properties": [_prop("plan", "exact", ["pro", "enterprise"])], "rollout_percentage": 50},
                ],
                "payloads": {"true": _payload({"banner": "Welcome to the beta", "color": "teal"})},
            },
        },
        {
            "key": "new-checkout",
            "name": "New checkout (multivariate with payloads)",
            "filters": {
                "groups": [
                    {"properties": [_prop("country", "exact", ["US", "CA", "GB"])], "rollout_percentage": 100}
                ],
                "multivariate": {
                    "variants": [
                        {"key": "control", "name": "Control", "rollout_percentage": 50},
                        {"key": "test", "name": "One-page checkout", "rollout_percentage": 50},
                    ]
                },
                "payloads": {"control": _payload({"steps": 3}), "test": _payload({"steps": 1})},
            },
        },
        {
            "key": "pricing-page-experiment",
            "name": "Pricing page (3 variants, QA override)",
            "filters": {
                "groups": [
                    {
                        "properties": [_prop("email", "regex", r"^qa-.*@")],
                        "rollout_percentage": 100,
                        "variant": "variant-b",
                    },
                    {"properties": [], "rollout_percentage": 80},
                ],
                "multivariate": {
                    "variants": [
                        {"key": "control", "rollout_percentage": 34},
                        {"key": "variant-a", "rollout_percentage": 33},
                        {"key": "variant-b", "rollout_percentage": 33},
                    ]
                },
                "payloads": {"variant-a": _payload({"price": 19}), "variant-b": _payload({"price": 29})},
            },
        },
        {
            "key": "paid-upsell",
            "name": "Upsell for paying, non-test users (is_not list, not_icontains)",
            "filters": {
                "groups": [
                    {
                        "properties": [
                            _prop("plan", "is_not", ["free", "starter"]),
                            _prop("email", "not_icontains", "test"),
                        ],
                        "rollout_percentage": 100,
                    }
                ]
            },
        },
        {
            "key": "power-users",
            "name": "Power users (gt / lt / gte / lte)",
            "filters": {
                "groups": [
                    {
                        "properties": [
                            _prop("sessions_count", "gt", 200),
                            _prop("sessions_count", "lt", 1500),
                        ],
                        "rollout_percentage": 100,
                    },
                    {
                        "properties": [
                            _prop("lifetime_value", "gte", 900),
                            _prop("lifetime_value", "lte", 1000),
                        ],
                        "rollout_percentage": 100,
                    },
                ]
            },
        },
        {
            "key": "phone-verification",
            "name": "Phone verification (is_set / is_not_set)",
            "filters": {
                "groups": [
                    {"properties": [_prop("phone", "is_set", "is_set")], "rollout_percentage": 100},
                    {"properties": [_prop("phone", "is_not_set", "is_not_set")], "rollout_percentage": 10},
                ]
            },
        },
        {
            "key": "recent-signups",
            "name": "Recent signups (relative date after)",
            "filters": {
                "groups": [
                    {"properties": [_prop("signup_date", "is_date_after", "-90d")], "rollout_percentage": 100}
                ]
            },
        },
        {
            "key": "legacy-accounts",
            "name": "Legacy accounts (date before, not_regex)",
            "filters": {
                "groups": [
                    {
                        "properties": [
                            _prop("signup_date", "is_date_before", "2024-01-01"),
                            _prop("email", "not_regex", r"@test\.dev$"),
                        ],
                        "rollout_percentage": 100,
                    }
                ]
            },
        },
        {
            "key": "ios-redesign",
            "name": "iOS redesign (semver, exact)",
            "filters": {
                "groups": [
                    {
                        "properties": [
                            _prop("app_version", "semver_gte", "2.3.0"),
                            _prop("$os", "exact", "iOS"),
                        ],
                        "rollout_percentage": 100,
                    }
                ]
            },
        },
        {
            "key": "company-dashboard",
            "name": "Company dashboard (group flag on company)",
            "filters": {
                "aggregation_group_type_index": 0,
                "groups": [
                    {
                        "properties": [_prop("plan", "exact", "enterprise", "group", group_type_index=0)],
                        "rollout_percentage": 100,
                    },
                    {
                        "properties": [_prop("employees", "gt", 100, "group", group_type_index=0)],
                        "rollout_percentage": 50,
                    },
                ],
                "payloads": {"true": _payload({"widgets": ["usage", "seats"]})},
            },
        },
        {
            "key": "onboarding-holdout",
            "name": "Onboarding experiment with a 10% holdout",
            "filters": {
                "groups": [{"properties": [], "rollout_percentage": 100}],
                "multivariate": {
                    "variants": [
                        {"key": "control", "rollout_percentage": 50},
                        {"key": "test", "rollout_percentage": 50},
                    ]
                },
                "holdout_groups": [{"properties": [], "rollout_percentage": 10, "variant": "holdout-7"}],
                "holdout": {"id": 7, "exclusion_percentage": 10},
                "payloads": {},
            },
        },
        {
            "key": "early-access-ai",
            "name": "AI assistant (early access, super condition)",
            "filters": {
                "groups": [{"properties": [_prop("plan", "exact", "enterprise")], "rollout_percentage": 100}],
                "feature_enrollment": True,
                "super_groups": [
                    {
                        "properties": [
                            _prop("$feature_enrollment/early-access-ai", "exact", ["true"]),
                        ],
                        "rollout_percentage": 100,
                    }
                ],
            },
        },
        {
            "key": "beta-extras",
            "name": "Beta extras (depends on beta-feature)",
            "filters": {
                "groups": [
                    {
                        "properties": [
                            {
                                "key": "beta-feature",
                                "type": "flag",
                                "value": True,
                                "operator": "flag_evaluates_to",
                            },
                            _prop("country", "exact", ["US", "DE"]),
                        ],
                        "rollout_percentage": 100,
                    }
                ]
            },
        },
        {
            "key": "eu-cohort-promo",
            "name": "EU cohort promo (cohort flag)",
            "filters": {
                "groups": [
                    {
                        "properties": [
                            {"key": "id", "type": "cohort", "value": cohort_id, "operator": "in"},
                        ],
                        "rollout_percentage": 100,
                    }
                ]
            },
        },
        {
            "key": "gradual-rollout",
            "name": "Plain 25% rollout",
            "filters": {"groups": [{"properties": [], "rollout_percentage": 25}]},
        },
        {
            "key": "sunset-banner",
            "name": "Retired banner (inactive)",
            "active": False,
            "filters": {
                "groups": [{"properties": [], "rollout_percentage": 100}],
                "payloads": {"true": _payload("bye")},
            },
        },
    ]


def demo_persons(
    count: int = DEMO_PERSONS, companies: int = DEMO_COMPANIES
) -> list[tuple[str, dict[str, Any]]]:
    """Deterministic `(distinct_id, properties)` pairs of the demo persons."""
    rng = random.Random(_SEED)
    out: list[tuple[str, dict[str, Any]]] = []
    for i in range(count):
        domain = rng.choice(_DOMAINS)
        local = f"qa-{i}" if rng.random() < 0.03 else f"user{i}"
        props: dict[str, Any] = {
            "email": f"{local}@{domain}",
            "plan": rng.choices(_PLANS, weights=(50, 25, 18, 7))[0],
            "country": rng.choice(_COUNTRIES),
            "sessions_count": int(rng.paretovariate(1.2) * 10),
            "lifetime_value": round(rng.uniform(0, 1000), 2),
            "signup_date": (_REFERENCE - timedelta(days=rng.randint(0, 1400))).strftime("%Y-%m-%d"),
            "app_version": f"{rng.randint(1, 3)}.{rng.randint(0, 9)}.{rng.randint(0, 5)}",
            "$os": rng.choice(_OSES),
            "company": f"company-{rng.randrange(companies):03d}",
        }
        if rng.random() < 0.4:
            props["phone"] = f"+1555{rng.randint(1000000, 9999999)}"
        if rng.random() < 0.05:
            props["$feature_enrollment/early-access-ai"] = rng.random() < 0.7
        out.append((f"user-{i:05d}", props))
    return out


def demo_companies(count: int = DEMO_COMPANIES) -> list[tuple[str, dict[str, Any]]]:
    rng = random.Random(_SEED + 1)
    return [
        (
            f"company-{k:03d}",
            {
                "name": f"Company {k:03d}",
                "plan": rng.choices(_PLANS, weights=(30, 30, 25, 15))[0],
                "employees": int(rng.paretovariate(1.0) * 10),
                "industry": rng.choice(_INDUSTRIES),
            },
        )
        for k in range(count)
    ]


#: The demo cohort's property group (`cohorts.filters.properties`).
EU_COHORT: dict[str, Any] = {
    "type": "OR",
    "values": [
        {
            "type": "AND",
            "values": [{"key": "country", "value": ["DE", "FR"], "operator": "exact", "type": "person"}],
        }
    ],
}
