"""Flag simulation across property sets: remote decide, the local flag engine, both compared, and what-if.

``simulate(property_sets, flags=None, engine="remote" | "local" | "both", client=..., definitions=...)``
returns a `SimulationResult`; `WhatIf` / `whatif` show who moves when definitions are edited; `grid`,
`sample_persons` and `random_property_sets` build property sets.

``analytics_nb.simulate`` is this module, and it is callable: ``analytics_nb.simulate(df, client=c)`` is
``analytics_nb.simulate.simulate(df, client=c)``.
"""

from __future__ import annotations

import sys
import types
from typing import Any

from analytics_nb.simulate._builders import grid, random_property_sets, sample_persons
from analytics_nb.simulate._definitions import Definitions, load_definitions
from analytics_nb.simulate._errors import SimulationInputError
from analytics_nb.simulate._inputs import normalise_property_sets
from analytics_nb.simulate._plot import PLOT_HINT
from analytics_nb.simulate._remote import DEFAULT_CONCURRENCY
from analytics_nb.simulate._result import SimulationResult
from analytics_nb.simulate._simulate import asimulate, simulate
from analytics_nb.simulate._summary import wilson_interval
from analytics_nb.simulate._whatif import (
    WhatIf,
    WhatIfResult,
    whatif,
    with_condition,
    with_rollout,
    with_variant_weights,
    without_condition,
)

__all__ = [
    "DEFAULT_CONCURRENCY",
    "PLOT_HINT",
    "Definitions",
    "SimulationInputError",
    "SimulationResult",
    "WhatIf",
    "WhatIfResult",
    "asimulate",
    "grid",
    "load_definitions",
    "normalise_property_sets",
    "random_property_sets",
    "sample_persons",
    "simulate",
    "whatif",
    "wilson_interval",
    "with_condition",
    "with_rollout",
    "with_variant_weights",
    "without_condition",
]


class _CallableModule(types.ModuleType):
    """Makes ``analytics_nb.simulate(...)`` work: the lazy package attribute resolves to this module."""

    def __call__(self, *args: Any, **kwargs: Any) -> SimulationResult:
        return simulate(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
