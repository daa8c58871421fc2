"""Feature flag definitions: property filters, condition groups, variants, filters, local evaluation."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from analytics_nb.models._common import Number, User, UtcDatetime, WireModel

__all__ = [
    "FeatureFlag",
    "FeatureFlagVersion",
    "FlagConditionGroup",
    "FlagFilters",
    "LocalEvaluationResponse",
    "Multivariate",
    "PropertyFilter",
    "Variant",
]


class PropertyFilter(WireModel):
    """One property condition: ``type`` is person | group | cohort | flag; a missing ``operator`` means exact.

    A flag dependency is ``type="flag"`` with ``operator="flag_evaluates_to"`` and ``key`` naming the flag
    (the real service puts the flag id there; either is kept as sent).
    """

    key: str | int
    value: Any = None
    operator: str | None = None
    type: str | None = None
    group_type_index: int | None = None
    negation: bool | None = None

    @property
    def is_flag_dependency(self) -> bool:
        """True for a ``flag`` filter (a dependency on another flag's value)."""
        return self.type == "flag"


def _none_to_list(value: Any) -> Any:
    return [] if value is None else value


class FlagConditionGroup(WireModel):
    """A condition set: its properties are AND'd; groups are OR'd; ``variant`` forces a variant on match."""

    properties: list[PropertyFilter] = Field(default_factory=list)
    rollout_percentage: Number | None = None
    variant: str | None = None
    description: str | None = None

    @field_validator("properties", mode="before")
    @classmethod
    def _properties_null(cls, value: Any) -> Any:
        return _none_to_list(value)


class Variant(WireModel):
    """One multivariate variant; percentages are expected to sum to 100 (checked by the flag engine)."""

    key: str
    name: str | None = None
    rollout_percentage: Number | None = None


class Multivariate(WireModel):
    """``filters.multivariate``: the list of variants."""

    variants: list[Variant] = Field(default_factory=list)

    @field_validator("variants", mode="before")
    @classmethod
    def _variants_null(cls, value: Any) -> Any:
        return _none_to_list(value)


class FlagFilters(WireModel):
    """A flag's ``filters``: condition groups, variants, payloads (JSON text keyed by variant or "true")."""

    groups: list[FlagConditionGroup] = Field(default_factory=list)
    multivariate: Multivariate | None = None
    payloads: dict[str, Any] = Field(default_factory=dict)
    aggregation_group_type_index: int | None = None
    super_groups: list[FlagConditionGroup] | None = None
    holdout_groups: list[FlagConditionGroup] | None = None

    @field_validator("groups", mode="before")
    @classmethod
    def _groups_null(cls, value: Any) -> Any:
        return _none_to_list(value)

    @field_validator("payloads", mode="before")
    @classmethod
    def _payloads_null(cls, value: Any) -> Any:
        return {} if value is None else value


class FeatureFlag(WireModel):
    """A feature flag definition as ``/api/projects/:id/feature_flags/`` and local evaluation send it."""

    id: int | None = None
    key: str
    name: str | None = None
    active: bool = True
    deleted: bool = False
    filters: FlagFilters = Field(default_factory=FlagFilters)
    ensure_experience_continuity: bool | None = None
    version: int | None = None
    rollout_percentage: Number | None = None
    team_id: int | None = None
    created_at: UtcDatetime | None = None
    created_by: User | None = None
    updated_at: UtcDatetime | None = None
    is_simple_flag: bool | None = None
    bucketing_identifier: str | None = None
    evaluation_runtime: str | None = None
    tags: list[Any] | None = None

    @field_validator("filters", mode="before")
    @classmethod
    def _filters_null(cls, value: Any) -> Any:
        return {} if value is None else value

    @property
    def variant_keys(self) -> list[str]:
        """Keys of the multivariate variants, in order (empty for a boolean flag)."""
        mv = self.filters.multivariate
        return [v.key for v in mv.variants] if mv is not None else []

    @property
    def is_group_flag(self) -> bool:
        """True when the flag aggregates by a group type instead of persons."""
        return self.filters.aggregation_group_type_index is not None

    @property
    def dependencies(self) -> list[str | int]:
        """Keys (or ids) of flags this flag's conditions depend on, in order of appearance."""
        out: list[str | int] = []
        for group in [*self.filters.groups, *(self.filters.super_groups or [])]:
            for prop in group.properties:
                if prop.type == "flag" and prop.key not in out:
                    out.append(prop.key)
        return out


class FeatureFlagVersion(WireModel):
    """A flag as it was at one version: ``GET .../feature_flags/:id/versions/:n/``
    (``FeatureFlagVersionResponseSerializer`` in products/feature_flags/backend/api/feature_flag.py).

    ``is_historical`` is False for the current version; ``version_timestamp`` is when the version was made
    (the activity entry that produced it, or the creation for version 1); ``created_by`` and ``modified_by``
    are user ids. ``rebuilt_locally`` is True when the client rebuilt it from the activity log (the
    instance does not serve ``versions/:n``).
    """

    id: int | None = None
    key: str | None = None
    name: str | None = None
    filters: dict[str, Any] = Field(default_factory=dict)
    active: bool | None = None
    deleted: bool | None = None
    version: int | None = None
    ensure_experience_continuity: bool | None = None
    is_remote_configuration: bool | None = None
    has_encrypted_payloads: bool | None = None
    evaluation_runtime: str | None = None
    bucketing_identifier: str | None = None
    created_at: UtcDatetime | None = None
    created_by: int | None = None
    is_historical: bool | None = None
    version_timestamp: UtcDatetime | None = None
    modified_by: int | None = None
    rebuilt_locally: bool = False

    @field_validator("filters", mode="before")
    @classmethod
    def _filters_null(cls, value: Any) -> Any:
        return {} if value is None else value


class LocalEvaluationResponse(WireModel):
    """``/api/feature_flag/local_evaluation/``: flag definitions, group type index -> name, cohorts by id."""

    flags: list[FeatureFlag] = Field(default_factory=list)
    group_type_mapping: dict[str, str] = Field(default_factory=dict)
    cohorts: dict[str, Any] = Field(default_factory=dict)
    #: The project's exact/is_not matching rules: 1 (legacy, PostHog's default; also when absent) or 2.
    property_matching_version: int | None = None
    #: Whether the SDKs send minimal `$feature_flag_called` events for flags without an experiment.
    minimal_flag_called_events: bool | None = None
