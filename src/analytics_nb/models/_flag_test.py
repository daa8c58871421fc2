"""The answer of ``POST /api/projects/:id/feature_flags/:id/test_evaluation/``: one person's answer for one
flag, each condition and property explained (posthog-notes §11; PostHog/posthog #55149; the fields of
`FeatureFlagTestEvaluationResponseApi` in PostHog's generated API client)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from analytics_nb.models._common import WireModel

__all__ = ["ConditionAnalysis", "FlagTestEvaluation", "PropertyAnalysis"]


class PropertyAnalysis(WireModel):
    """One property filter of a condition: the person's ``actual_value`` and whether it ``matched``."""

    key: Any = None
    operator: str | None = None
    value: Any = None
    type: str | None = None
    actual_value: Any = None
    matched: bool | None = None
    explanation: str | None = None


class ConditionAnalysis(WireModel):
    """One release condition: whether its properties matched, whether the rollout left the person out."""

    index: int | None = None
    matched: bool | None = None
    properties_matched: bool | None = None
    explanation: str | None = None
    rollout_percentage: float | None = None
    rollout_excluded: bool | None = None
    variant: str | None = None
    properties: list[PropertyAnalysis] = Field(default_factory=list)


class FlagTestEvaluation(WireModel):
    """PostHog's own answer for one person and flag, explained: ``result`` (True/False/variant),
    ``reason``, ``condition_index``, ``payload``, the ``person_properties`` it read, the
    ``evaluation_distinct_id`` it hashed (None on the person_id path) and one `ConditionAnalysis` each."""

    flag_key: str | None = None
    result: Any = None
    reason: str | None = None
    condition_index: int | None = None
    payload: Any = None
    person_properties: dict[str, Any] = Field(default_factory=dict)
    evaluation_distinct_id: str | None = None
    conditions: list[ConditionAnalysis] = Field(default_factory=list)
