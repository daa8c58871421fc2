"""Flag simulation across property sets: remote decide, the local flag engine, both compared, and what-if.

``simulate(property_sets, flags=None, engine="remote" | "local" | "both" | "sql", client=..., ...)``
returns a `SimulationResult`, the one result of every engine (with ``engine="sql"`` and `simulate_sql` its
subclass `SqlSimulationResult`: DuckDB over the rows where they lie, out of core; `simulate_dask` a lazy one
over Dask); `WhatIf` / `whatif` show who moves when definitions are edited (a `WhatIfResult`);
`flag_timeline` who each change of a flag moved, `definitions_as_of` the definitions at a past moment,
`flag_audit` the recorded flag calls against the definitions in force then; `grid`,
`sample_persons` and `random_property_sets` build property sets; `read_posthog_export` reads PostHog's persons
and actors CSV exports (``simulate`` also reads them directly). Property sets may be pandas, Polars, Arrow,
DuckDB or a parquet path; `simulate_dask` runs the local engine over a Dask DataFrame on a cluster.

``analytics_nb.simulate`` is the function ``simulate`` (``analytics_nb.simulate(df, client=c)``);
``analytics_nb.simulation`` is this package.
"""

from __future__ import annotations

import warnings
from typing import Any

from analytics_nb.flags import IncompleteDefinitionsWarning
from analytics_nb.simulation._answers import AnswerSource
from analytics_nb.simulation._audience import audience
from analytics_nb.simulation._audience_twins import aaudience
from analytics_nb.simulation._audit import FlagAudit, flag_audit
from analytics_nb.simulation._builders import grid, random_property_sets, sample_persons
from analytics_nb.simulation._compare import AGREEMENT_COLUMNS, agreement_headline
from analytics_nb.simulation._definitions import Definitions, load_definitions
from analytics_nb.simulation._distributed import simulate_dask
from analytics_nb.simulation._errors import LongRunWarning, SimulationInputError
from analytics_nb.simulation._exports import read_posthog_export
from analytics_nb.simulation._history import (
    FlagTimeline,
    adefinitions_as_of,
    definitions_as_of,
    flag_timeline,
)
from analytics_nb.simulation._inputs import normalise_property_sets
from analytics_nb.simulation._local import MissingPropertyWarning
from analytics_nb.simulation._output import concat_frames
from analytics_nb.simulation._plot import PLOT_HINT
from analytics_nb.simulation._remote import DEFAULT_CONCURRENCY, FailedFlagsWarning, FilteredFlagsWarning
from analytics_nb.simulation._result import Answers, SimulationResult
from analytics_nb.simulation._simulate import Engine, simulate
from analytics_nb.simulation._simulate_twins import asimulate
from analytics_nb.simulation._spark import simulate_spark
from analytics_nb.simulation._sql_engine import SqlSimulationResult, simulate_sql
from analytics_nb.simulation._summary import SUMMARY_COLUMNS, UnknownShareWarning, wilson_interval
from analytics_nb.simulation._verify import Verification
from analytics_nb.simulation._whatif import (
    WhatIf,
    WhatIfResult,
    whatif,
    with_condition,
    with_rollout,
    with_variant_weights,
    without_condition,
)
from analytics_nb.tables import Output

__all__ = [
    "AGREEMENT_COLUMNS",
    "DEFAULT_CONCURRENCY",
    "PLOT_HINT",
    "SUMMARY_COLUMNS",
    "AnswerSource",
    "Answers",
    "Definitions",
    "Engine",
    "FailedFlagsWarning",
    "FilteredFlagsWarning",
    "FlagAudit",
    "FlagTimeline",
    "IncompleteDefinitionsWarning",
    "LongRunWarning",
    "MissingPropertyWarning",
    "Output",
    "SimulationInputError",
    "SimulationResult",
    "SqlSimulationResult",
    "UnknownShareWarning",
    "Verification",
    "WhatIf",
    "WhatIfResult",
    "aaudience",
    "adefinitions_as_of",
    "agreement_headline",
    "asimulate",
    "audience",
    "concat_frames",
    "definitions_as_of",
    "flag_audit",
    "flag_timeline",
    "grid",
    "load_definitions",
    "normalise_property_sets",
    "random_property_sets",
    "read_posthog_export",
    "sample_persons",
    "simulate",
    "simulate_dask",
    "simulate_spark",
    "simulate_sql",
    "whatif",
    "wilson_interval",
    "with_condition",
    "with_rollout",
    "with_variant_weights",
    "without_condition",
]

#: class names retired by the one result (issue 34): importable for one release, with a `FutureWarning`
_RETIRED = {
    "DaskSimulation": (SimulationResult, "SimulationResult (simulate_dask returns one)"),
    "DaskWhatIf": (WhatIfResult, "WhatIfResult (a Dask result's whatif returns one)"),
    "SqlSimulation": (SqlSimulationResult, "SqlSimulationResult (simulate_sql returns one)"),
}


def __getattr__(name: str) -> Any:
    """The retired names, as the classes that replaced them, with a `FutureWarning` naming the new one."""
    if name in _RETIRED:
        cls, new = _RETIRED[name]
        warnings.warn(
            f"analytics_nb.simulation.{name} is now {new}; the old name works until the next release.",
            FutureWarning,
            stacklevel=2,
        )
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
