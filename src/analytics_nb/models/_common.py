"""Shared base model, UTC datetime type, nested user and the generic paginated envelope."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Generic, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

__all__ = ["Number", "Page", "User", "UtcDatetime", "WireModel", "to_wire"]


def _as_utc(value: datetime) -> datetime:
    """Make a parsed datetime tz-aware UTC (naive values are taken to be UTC already)."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


UtcDatetime = Annotated[datetime, AfterValidator(_as_utc)]
"""A datetime parsed from ISO 8601 text (or a datetime) and normalised to tz-aware UTC."""

Number = int | float
"""A JSON number; ints stay ints so that a wire round-trip does not turn ``5`` into ``5.0``."""


class WireModel(BaseModel):
    """Base of every API model: unknown server fields are kept, wire names are accepted as aliases."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    def to_wire(self, *, exclude_unset: bool = True) -> dict[str, Any]:
        """Return the JSON-ready wire shape (camelCase aliases, ISO datetimes, extras kept).

        Args:
            exclude_unset: Emit only the fields that were given or parsed.

        Returns:
            The wire dict.
        """
        return to_wire(self, exclude_unset=exclude_unset)


def to_wire(model: BaseModel, *, exclude_unset: bool = True) -> dict[str, Any]:
    """Dump ``model`` in the wire shape: ``model_dump(by_alias=True, mode="json", exclude_unset=...)``.

    ``exclude_unset=True`` (the default) emits only the fields that were given or parsed, so a parsed payload
    dumps back to the same keys and a model built for a request body sends only what the caller set.

    Args:
        model: A pydantic model of this package (or any ``BaseModel``).
        exclude_unset: Emit only the fields that were given or parsed.

    Returns:
        The wire dict.
    """
    return model.model_dump(by_alias=True, mode="json", exclude_unset=exclude_unset)


class User(WireModel):
    """A nested user (``created_by``, ``last_modified_by``, activity ``user``): UserBasicSerializer fields."""

    id: int | None = None
    uuid: str | None = None
    distinct_id: str | None = None
    first_name: str | None = None
    last_name: str | None = None
    email: str | None = None
    is_email_verified: bool | None = None
    hedgehog_config: dict[str, Any] | None = None
    role_at_organization: str | None = None


T = TypeVar("T")


class Page(WireModel, Generic[T]):
    """The paginated list envelope ``{count, next, previous, results}`` of ``/api/...`` list endpoints."""

    count: int | None = None
    next: str | None = None
    previous: str | None = None
    results: list[T] = Field(default_factory=list)
