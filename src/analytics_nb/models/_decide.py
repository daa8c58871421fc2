"""The public ``/decide`` and ``/flags`` request and response, in all response versions."""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, Field, field_validator, model_validator

from analytics_nb.models._common import WireModel

__all__ = ["DecideRequest", "DecideResponse", "FlagDetail", "FlagMetadata", "FlagReason"]


def _stringify_id(value: Any) -> Any:
    """The service turns numeric ids into strings; do the same instead of rejecting them."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return value


class DecideRequest(WireModel):
    """A ``/decide`` / ``/flags`` body; ``api_key`` is the public project key (also read from ``token``)."""

    api_key: str | None = Field(
        None, validation_alias=AliasChoices("api_key", "token", "$token"), serialization_alias="api_key"
    )
    distinct_id: str | None = Field(
        None, validation_alias=AliasChoices("distinct_id", "$distinct_id"), serialization_alias="distinct_id"
    )
    groups: dict[str, Any] | None = None
    person_properties: dict[str, Any] | None = None
    group_properties: dict[str, dict[str, Any]] | None = None
    geoip_disable: bool | None = None
    disable_flags: bool | None = None
    anon_distinct_id: str | None = Field(
        None,
        validation_alias=AliasChoices("$anon_distinct_id", "anon_distinct_id"),
        serialization_alias="$anon_distinct_id",
    )
    device_id: str | None = Field(
        None, validation_alias=AliasChoices("$device_id", "device_id"), serialization_alias="$device_id"
    )
    flag_keys_to_evaluate: list[str] | None = None
    timezone: str | None = None
    evaluation_contexts: list[str] | None = None

    @field_validator("distinct_id", "anon_distinct_id", "device_id", mode="before")
    @classmethod
    def _ids(cls, value: Any) -> Any:
        return _stringify_id(value)


class FlagReason(WireModel):
    """Why a flag got its value: ``code`` (condition_match, out_of_rollout_bound, ...) and 0-based index."""

    code: str | None = None
    condition_index: int | None = None
    description: str | None = None


class FlagMetadata(WireModel):
    """Flag id, version and payload (JSON text as the wire carries it) of a detailed flag result."""

    id: int | None = None
    version: int | None = None
    payload: Any = None
    description: str | None = None


class FlagDetail(WireModel):
    """One flag of the detailed v4 / ``/flags?v=2`` response."""

    key: str
    enabled: bool = False
    variant: str | None = None
    reason: FlagReason | None = None
    metadata: FlagMetadata | None = None
    failed: bool | None = None

    @property
    def value(self) -> bool | str:
        """The v3-style value: the variant key when enabled with a variant, else ``enabled``."""
        if self.enabled and self.variant is not None:
            return self.variant
        return self.enabled


class DecideResponse(WireModel):
    """A decide / flags response of any version, read into one shape.

    ``feature_flags`` is ``{key: True | False | "variant"}`` whatever the version: the v1 key list becomes
    ``{key: True}``, and for the detailed form (``flags``) it and ``feature_flag_payloads`` are derived
    from the details. Both ``errorsWhileComputingFlags`` (real service) and ``errorComputingFlags`` (spec)
    are read.
    """

    feature_flags: dict[str, bool | str] = Field(default_factory=dict, alias="featureFlags")
    feature_flag_payloads: dict[str, Any] = Field(default_factory=dict, alias="featureFlagPayloads")
    flags: dict[str, FlagDetail] | None = None
    errors_while_computing_flags: bool = Field(
        False,
        validation_alias=AliasChoices(
            "errorsWhileComputingFlags", "errorComputingFlags", "errors_while_computing_flags"
        ),
        serialization_alias="errorsWhileComputingFlags",
    )
    quota_limited: list[str] | None = Field(None, alias="quotaLimited")
    request_id: str | None = Field(None, alias="requestId")
    evaluated_at: Any = Field(None, alias="evaluatedAt")
    config: dict[str, Any] | None = None
    toolbar_params: dict[str, Any] | None = Field(None, alias="toolbarParams")
    is_authenticated: bool | None = Field(None, alias="isAuthenticated")
    supported_compression: list[str] | None = Field(None, alias="supportedCompression")
    session_recording: Any = Field(None, alias="sessionRecording")
    capture_performance: Any = Field(None, alias="capturePerformance")
    site_apps: list[Any] | None = Field(None, alias="siteApps")

    @model_validator(mode="before")
    @classmethod
    def _normalise(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        ff = data.get("featureFlags", data.get("feature_flags"))
        if isinstance(ff, list | tuple):  # v1: keys of enabled flags
            data["featureFlags" if "featureFlags" in data else "feature_flags"] = {str(k): True for k in ff}
        for key in ("featureFlags", "feature_flags", "featureFlagPayloads", "feature_flag_payloads"):
            if key in data and data[key] is None:
                data[key] = {}
        if "errorsWhileComputingFlags" in data and "errorComputingFlags" in data:
            data["errorsWhileComputingFlags"] = bool(
                data["errorsWhileComputingFlags"] or data["errorComputingFlags"]
            )
        for key in ("errorsWhileComputingFlags", "errorComputingFlags"):
            if key in data and data[key] is None:
                data[key] = False
        return data

    @model_validator(mode="after")
    def _from_details(self) -> DecideResponse:
        if self.flags is None:
            return self
        # Derived values are written straight into __dict__ so they do not count as "set":
        # to_wire(exclude_unset=True) then gives back exactly the detailed wire shape.
        if "feature_flags" not in self.model_fields_set:
            self.__dict__["feature_flags"] = {key: d.value for key, d in self.flags.items()}
        if "feature_flag_payloads" not in self.model_fields_set:
            self.__dict__["feature_flag_payloads"] = {
                key: d.metadata.payload
                for key, d in self.flags.items()
                if d.enabled and d.metadata is not None and d.metadata.payload is not None
            }
        return self

    def is_enabled(self, key: str) -> bool:
        """True when flag ``key`` is on (any variant counts); False when off or absent."""
        value = self.feature_flags.get(key, False)
        return value is not False and value is not None

    def get_value(self, key: str, default: bool | str | None = None) -> bool | str | None:
        """The flag's value (True, False or the variant key), or ``default`` when the response lacks it."""
        return self.feature_flags.get(key, default)

    def get_payload(self, key: str) -> Any:
        """The flag's payload as sent (usually JSON text), or None."""
        return self.feature_flag_payloads.get(key)
