"""Shared base of the async resource classes and small argument checks."""

from __future__ import annotations

import datetime as _dt
import difflib
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar

import pydantic

from analytics_nb.client._core import Core, parse_model

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "PAGING",
    "Pages",
    "Paging",
    "Resource",
    "check_choice",
    "check_filters",
    "check_id",
    "collect_frame",
    "collect_models",
    "filter_names",
    "iso",
    "iterate_models",
    "paging_of",
    "require_text",
]

M = TypeVar("M", bound=pydantic.BaseModel)
Pages = AsyncGenerator[list[Any], None]
"""A listing's pages of records (``_pagination.iter_record_pages``, the one paging path)."""


class Paging(TypedDict, total=False):
    """The paging controls every listing takes (the base of each resource's filters TypedDict).

    ``page_size``: records per request (at most 500, the services' maximum); ``offset``: records to skip
    first; ``max_items``: stop after this many (None: every page). See ``_pagination.iter_record_pages``.
    """

    page_size: int
    offset: int
    max_items: int | None


PAGING: frozenset[str] = Paging.__required_keys__ | Paging.__optional_keys__
"""The names of the paging controls (``page_size``, ``offset``, ``max_items``)."""


def paging_of(filters: Mapping[str, Any]) -> dict[str, Any]:
    """The paging controls among ``filters`` (the keyword arguments of ``iter_record_pages``)."""
    return {key: filters[key] for key in PAGING if key in filters}


class Resource:
    """An API area bound to the client's core; methods are ``async`` (the sync client wraps them)."""

    def __init__(self, core: Core) -> None:
        self._core = core

    def __repr__(self) -> str:
        return f"<{type(self).__name__} on {self._core.config.app_url}>"


def require_text(name: str, value: Any) -> str:
    """A non-empty string identifier, or a ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, str | int) or not str(value).strip():
        raise ValueError(f"{name} must be a non-empty string, got {value!r}.")
    return str(value).strip()


def check_id(name: str, value: Any) -> int:
    """A positive integer id, or a ValueError naming ``name``."""
    if isinstance(value, bool):
        raise ValueError(f"{name} must be an integer id, got {value!r}.")
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an integer id, got {value!r}.") from None
    if str(number) != str(value).strip() and not isinstance(value, int):
        raise ValueError(f"{name} must be an integer id, got {value!r}.")
    return number


def check_choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    """``value`` if it is one of ``choices``, else a ValueError listing them."""
    if value not in choices:
        raise ValueError(f"{name}={value!r} is not allowed; use one of {', '.join(map(repr, choices))}.")
    return str(value)


def filter_names(filters: type) -> frozenset[str]:
    """The keywords a listing's filters TypedDict declares (its filters and its paging controls)."""
    names: frozenset[str] = filters.__required_keys__ | filters.__optional_keys__  # type: ignore[attr-defined]
    return names


def check_filters(resource: str, given: Mapping[str, Any], filters: type) -> None:
    """Refuse keywords the listing's ``filters`` TypedDict does not declare, before any request.

    The one rule of every listing (``iter``/``list``/``frame``): a misspelt filter (``enabeld=True``,
    ``serach="x"``) is neither dropped nor sent. Sent, the service would ignore it and answer every
    record, a plausible but wrong answer. The ValueError names the unknown keywords, the nearest
    allowed one and every allowed one.
    """
    allowed = filter_names(filters)
    unknown = sorted(set(given) - allowed)
    if not unknown:
        return
    named = []
    for name in unknown:
        close = difflib.get_close_matches(name, sorted(allowed), n=1, cutoff=0.6)
        named.append(f"{name!r} (did you mean {close[0]!r}?)" if close else repr(name))
    plural = "s" if len(unknown) > 1 else ""
    raise ValueError(
        f"unknown {resource} filter{plural} {', '.join(named)}; nothing was sent. The filters are "
        f"{', '.join(sorted(allowed))}."
    )


def iso(name: str, value: Any) -> str | None:
    """A date filter as the service reads it: relative text (``-7d``) or ISO 8601 from a datetime/date."""
    if value is None:
        return None
    if isinstance(value, _dt.datetime | _dt.date):
        return value.isoformat()
    if isinstance(value, str) and value.strip():
        return value.strip()
    raise ValueError(f"{name} must be a datetime, a date, ISO 8601 text or relative text like '-7d'.")


# -- the three forms of a listing: iterate, list, frame (each resource's methods are one call to these) ------
async def iterate_models(pages: Pages, model: type[M]) -> AsyncIterator[M]:
    """The records of ``pages`` as ``model`` instances, one at a time (a record that does not fit the model
    is a ``ResponseFormatError``)."""
    try:
        async for page in pages:
            for record in page:
                yield parse_model(model, record)
    finally:
        await pages.aclose()


async def collect_models(pages: Pages, model: type[M]) -> list[M]:
    """Every record of ``pages`` as a ``model`` instance."""
    records: list[Any] = []
    async for page in pages:
        records.extend(page)
    return [parse_model(model, record) for record in records]


async def collect_frame(pages: Pages, build: Callable[[list[Any]], pd.DataFrame]) -> pd.DataFrame:
    """The frame ``build`` makes of every record of ``pages`` (one build, once every page is in)."""
    records: list[Any] = []
    async for page in pages:
        records.extend(page)
    return build(records)
