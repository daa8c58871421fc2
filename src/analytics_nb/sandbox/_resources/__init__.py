"""The sandbox's resources, one module each, every module with the same parts:

* ``SCHEMA``: its tables (SQL DDL; "" when it only uses the core tables of `_store.CORE_SCHEMA`);
* storage functions: all of its SQL;
* request models (`_validation.RequestModel`) and thin handlers;
* ``ENDPOINTS``: its rows of the endpoint table (routes and OpenAPI document are built from them);
* ``seed(store, ctx)``: its part of the `demo` seed.
"""

from __future__ import annotations

from types import ModuleType

from . import (
    capture,
    decide,
    events,
    feature_flags,
    flag_history,
    flag_testing,
    hog_functions,
    persons,
    playlists,
    projects,
    query,
    transformations,
)

#: Every resource, in route order (decide/flags and capture first: the hot paths) -- also the order the
#: demo seed runs in (users before the playlists they own, persons before the flags that read them).
RESOURCES: tuple[ModuleType, ...] = (
    decide,
    capture,
    events,
    projects,
    persons,
    query,
    feature_flags,
    flag_history,
    flag_testing,
    playlists,
    transformations,
    hog_functions,
)

#: Order of the demo seed (each module's `seed`).
SEED_ORDER: tuple[ModuleType, ...] = (
    projects,
    persons,
    feature_flags,
    playlists,
    transformations,
    hog_functions,
    events,
)

__all__ = ["RESOURCES", "SEED_ORDER"]
