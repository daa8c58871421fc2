"""Capture events and batches sent to the ingestion endpoints."""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, Field, field_validator

from analytics_nb.models._common import UtcDatetime, WireModel

__all__ = ["CaptureBatch", "CaptureEvent"]


def _stringify(value: Any) -> Any:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return value


class CaptureEvent(WireModel):
    """One event for ``/capture`` or inside a ``/batch`` body; ``api_key`` is the public project key."""

    event: str
    distinct_id: str | None = None
    properties: dict[str, Any] = Field(default_factory=dict)
    timestamp: UtcDatetime | None = None
    uuid: str | None = None
    api_key: str | None = Field(
        None, validation_alias=AliasChoices("api_key", "token", "$token"), serialization_alias="api_key"
    )

    @field_validator("distinct_id", mode="before")
    @classmethod
    def _distinct_id(cls, value: Any) -> Any:
        return _stringify(value)

    @field_validator("properties", mode="before")
    @classmethod
    def _properties_null(cls, value: Any) -> Any:
        return {} if value is None else value


class CaptureBatch(WireModel):
    """A ``/batch`` body: ``{api_key, batch: [events], historical_migration, sent_at}``."""

    api_key: str | None = Field(
        None, validation_alias=AliasChoices("api_key", "token", "$token"), serialization_alias="api_key"
    )
    batch: list[CaptureEvent] = Field(default_factory=list)
    historical_migration: bool | None = None
    sent_at: UtcDatetime | None = None
