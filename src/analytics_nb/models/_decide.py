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
    """Flag id, version and payload (JSON text as the wire carries it) of a detailed flag result.

    ``has_experiment`` and, in typed (``/flags?v=4``) records, ``config_version`` (1: the flag's filters are
    the classic release conditions), ``variant_key``, ``rule_type`` and ``rule_id`` are the fields of
    ``FlagDetailsMetadata`` / ``FlagDetailsMetadataV3`` in PostHog's ``rust/feature-flags/src/api/types.rs``.
    """

    id: int | None = None
    version: int | None = None
    payload: Any = None
    description: str | None = None
    has_experiment: bool | None = None
    config_version: int | None = None
    variant_key: str | None = None
    rule_type: str | None = None
    rule_id: str | None = None


class FlagDetail(WireModel):
    """One flag of a detailed response: ``/flags?v=2`` / ``/decide?v=4`` records (``enabled``, ``variant``)
    or the typed records posthog-python 7.91.1 asks for with ``/flags/?v=4`` (one ``value``;
    ``FlagDetailsV3`` in PostHog's ``rust/feature-flags/src/api/types.rs``).

    ``failed: true`` (since Feb 2026) means the service could not evaluate the flag: its ``enabled: false``
    is not an answer, so `value` is None (unknown), never False.
    """

    key: str
    enabled: bool = False
    variant: str | None = None
    typed_value: Any = Field(None, alias="value")
    reason: FlagReason | None = None
    metadata: FlagMetadata | None = None
    failed: bool | None = None

    @model_validator(mode="after")
    def _from_typed(self) -> FlagDetail:
        # A typed record carries `value` only: derive enabled/variant (not marked as set, so the wire
        # shape given back stays the typed one). A string is a variant; null is off (or failed).
        if "typed_value" in self.model_fields_set and "enabled" not in self.model_fields_set:
            value = self.typed_value
            self.__dict__["enabled"] = not self.failed and value is not None and value is not False
            self.__dict__["variant"] = value if isinstance(value, str) and not self.failed else None
        return self

    @property
    def value(self) -> bool | str | None:
        """The v3-style value: the variant key when enabled with a variant, else ``enabled``; None when
        the service marked the flag ``failed`` (it could not evaluate it: unknown, not False)."""
        if self.failed:
            return None
        if self.enabled and self.variant is not None:
            return self.variant
        return self.enabled

    @property
    def failure(self) -> str | None:
        """Why the flag failed (``reason.code: description``), or None when it did not."""
        if not self.failed:
            return None
        reason = self.reason
        if reason is None:
            return "failed on the service (no reason given)"
        return ": ".join(t for t in (reason.code, reason.description) if t) or "failed on the service"


class DecideResponse(WireModel):
    """A decide / flags response of any version, read into one shape.

    ``feature_flags`` is ``{key: True | False | "variant" | None}`` whatever the version: the v1 key list
    becomes ``{key: True}``, and for the detailed form (``flags``) it and ``feature_flag_payloads`` are
    derived from the details. Both ``errorsWhileComputingFlags`` (real service) and ``errorComputingFlags``
    (spec) are read.

    **None means unknown, never False**: a detailed record marked ``failed`` is None; in the legacy v3 map
    the service writes a flag it failed to evaluate as ``false`` (``LegacyFlagsResponse::from_response``
    in ``rust/feature-flags/src/api/types.rs``), so when ``errorsWhileComputingFlags`` is true every
    ``false`` of that map is None too (it cannot be told from a real false; ask ``/flags`` for the
    detail). `failures` names them with the reason.
    """

    feature_flags: dict[str, bool | str | None] = Field(default_factory=dict, alias="featureFlags")
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
        if self.flags is not None:
            self._check_keys(self.flags)
        if self.flags is None:
            if self.errors_while_computing_flags and any(v is False for v in self.feature_flags.values()):
                self.__dict__["feature_flags"] = {
                    k: None if v is False else v for k, v in self.feature_flags.items()
                }
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

    def _check_keys(self, flags: dict[str, FlagDetail]) -> None:
        """A record whose own ``key`` is not the entry it sits under is not an answer for that flag (the
        service writes each record under its key: ``FlagsResponse.flags`` in
        ``rust/feature-flags/src/api/types.rs``): it becomes a failed record (value None) with the reason,
        never the other flag's value. A ``featureFlags`` map sent beside it shows None for it too."""
        for name, detail in list(flags.items()):
            if detail.key == name:
                continue
            flags[name] = detail.model_copy(
                update={
                    "failed": True,
                    "reason": FlagReason(
                        code="key_mismatch",
                        description=(
                            f"the service's record under {name!r} is for flag {detail.key!r}; its value "
                            "is not used (a proxy or a broken server mixed the answer up): ask again"
                        ),
                    ),
                }
            )
            if name in self.feature_flags:
                self.feature_flags[name] = None

    @property
    def failures(self) -> dict[str, str]:
        """``{key: reason}`` of the flags whose value is unknown: detailed records marked ``failed`` (with
        the service's reason), or the ``false`` values of a legacy map sent with
        ``errorsWhileComputingFlags`` (the map cannot tell a failed flag from a real false)."""
        if self.flags is not None:
            return {k: d.failure or "failed" for k, d in self.flags.items() if d.failed}
        if not self.errors_while_computing_flags:
            return {}
        why = "errorsWhileComputingFlags: the legacy map writes a failed flag as false; use /flags for detail"
        return {k: why for k, v in self.feature_flags.items() if v is None}

    def is_enabled(self, key: str) -> bool:
        """True when flag ``key`` is on (any variant counts); False when off, absent or unknown (see
        `failures` and `get_value`, which gives None for an unknown value).

        Args:
            key: The flag key.

        Returns:
            True when on.
        """
        value = self.feature_flags.get(key, False)
        return value is not False and value is not None

    def get_value(self, key: str, default: bool | str | None = None) -> bool | str | None:
        """The flag's value (True, False or the variant key), None when the service failed to evaluate
        it (see `failures`), or ``default`` when the response lacks it.

        Args:
            key: The flag key.
            default: What to answer when the response lacks the flag.

        Returns:
            The value, None when it failed, or ``default``.
        """
        return self.feature_flags.get(key, default)

    def get_payload(self, key: str) -> Any:
        """The flag's payload as sent (usually JSON text), or None.

        Args:
            key: The flag key.

        Returns:
            The payload, or None.
        """
        return self.feature_flag_payloads.get(key)
