"""The flag engine: PostHog flag matching (hash, rollout, variants, operators, cohorts, dependencies) for one
subject (`evaluate_flag`, `evaluate_flags`) or a whole DataFrame (`evaluate_frame`, `FrameEvaluator`).

Pure and I/O-free. Two modes: "server" answers what today's Rust flags service answers (the sandbox's
/decide uses it), "sdk" what posthog 7.91.1's local evaluation answers through its client (inconclusive when
it would ask the server). A definition that cannot be evaluated affects only its own flag (reason "error";
`strict=True` raises `FlagDefinitionError` instead). Regex filters run in the service's dialect with bounded
time.
"""

from __future__ import annotations

from analytics_nb.flags._definitions import CompiledFlag
from analytics_nb.flags._errors import FlagDefinitionError
from analytics_nb.flags._evaluate import (
    CompiledFlags,
    FlagResult,
    compile_flags,
    evaluate_flag,
    evaluate_flags,
)
from analytics_nb.flags._frame import REASON_CODES, REASON_DTYPE, FrameEvaluator, evaluate_frame
from analytics_nb.flags._hashing import hash_fraction
from analytics_nb.flags._operators import PROPERTY_OPERATORS

__all__ = [
    "PROPERTY_OPERATORS",
    "REASON_CODES",
    "REASON_DTYPE",
    "CompiledFlag",
    "CompiledFlags",
    "FlagDefinitionError",
    "FlagResult",
    "FrameEvaluator",
    "compile_flags",
    "evaluate_flag",
    "evaluate_flags",
    "evaluate_frame",
    "hash_fraction",
]
