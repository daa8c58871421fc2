"""``AsyncClient``: ``AsyncApiClient`` plus capture, simulation and the embedded sandbox (the async source of
``Client``'s generated methods)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Self

from analytics_nb.capture import (
    DEFAULT_BATCH_BYTES,
    NaivePolicy,
    UuidPolicy,
    acapture_event,
    acapture_frame,
    aflag_called,
    aflag_called_frame,
)
from analytics_nb.client import AsyncApiClient
from analytics_nb.embedded import connect_sandbox
from analytics_nb.simulation import Engine, Output, SimulationResult, asimulate

if TYPE_CHECKING:
    import pandas as pd

    from analytics_nb.flags import FrameEvaluator

__all__ = ["AsyncClient"]


class AsyncClient(AsyncApiClient):
    """Async client for a PostHog-style service: ``await client.playlists.list()``; use ``async with``.

    ``host``: "us", "eu" (app host for ``/api``, ingestion host for decide/capture) or a self-hosted base URL.
    Keys: ``personal_api_key`` (``phx_...``, for ``/api``) and ``project_api_key`` (``phc_...``, for decide
    and capture; read from the project when omitted). Retries: ``max_retries`` with jittered backoff;
    ``rate_limit=True`` keeps under the service's per-key limits. Besides the API: ``capture``,
    ``capture_frame``, ``flag_called``, ``flag_called_frame`` and ``simulate``.
    """

    @classmethod
    def sandbox(cls, seed: str = "demo", **kw: Any) -> Self:
        """Start the embedded sandbox and return an AsyncClient on it; closing the client stops it.

        Keyword arguments of the client (e.g. ``max_retries``) configure the client; the rest go to
        ``analytics_nb.sandbox.start`` (e.g. ``profile="cloud"``).
        """
        return connect_sandbox(seed, client_class=cls, **kw)

    async def capture(
        self,
        event: str,
        distinct_id: str,
        properties: Mapping[str, Any] | None = None,
        *,
        flags: Any = None,
        timestamp: Any = None,
        uuid: Any = None,
        groups: Mapping[str, Any] | None = None,
    ) -> str:
        """Capture one event through ``/capture/`` and return its uuid (``capture.capture_event``).

        ``flags`` (a decide result, a simulation-frame row or ``{key: value}``) adds ``$feature/<key>`` and
        ``$active_feature_flags``; ``groups`` becomes ``$groups``.
        """
        return await acapture_event(
            self, event, distinct_id, properties, flags=flags, timestamp=timestamp, uuid=uuid, groups=groups
        )

    async def capture_frame(
        self,
        df: pd.DataFrame,
        *,
        batch_size: int | None = None,
        max_batch_bytes: int = DEFAULT_BATCH_BYTES,
        concurrency: int = 4,
        gzip: bool = True,
        historical_migration: bool | None = None,
        progress: bool | None = None,
        on_naive_timestamp: NaivePolicy = "local",
        batch_attempts: int = 2,
        uuids: UuidPolicy = "content",
    ) -> pd.DataFrame:
        """Capture one event per row of ``df`` via ``/batch/`` and return the report
        (``analytics_nb.capture.capture_frame`` describes the columns and options)."""
        return await acapture_frame(
            self,
            df,
            batch_size=batch_size,
            max_batch_bytes=max_batch_bytes,
            concurrency=concurrency,
            gzip=gzip,
            historical_migration=historical_migration,
            progress=progress,
            on_naive_timestamp=on_naive_timestamp,
            batch_attempts=batch_attempts,
            uuids=uuids,
        )

    async def flag_called(
        self,
        distinct_id: Any,
        key: str,
        response: Any,
        *,
        payload: Any = None,
        flag_id: int | None = None,
        version: int | None = None,
        reason: str | None = None,
        request_id: str | None = None,
        locally_evaluated: bool = False,
        groups: Mapping[str, Any] | None = None,
    ) -> bool:
        """Send a ``$feature_flag_called`` event once per (distinct_id, key, response, groups) for this client
        (``analytics_nb.capture.flag_called``); True when sent, False when already reported."""
        return await aflag_called(
            self,
            distinct_id,
            key,
            response,
            payload=payload,
            flag_id=flag_id,
            version=version,
            reason=reason,
            request_id=request_id,
            locally_evaluated=locally_evaluated,
            groups=groups,
        )

    async def flag_called_frame(
        self,
        outcomes: Any,
        flags: Any = None,
        *,
        locally_evaluated: bool | None = None,
        **capture_kw: Any,
    ) -> pd.DataFrame:
        """Send ``$feature_flag_called`` for every (row, flag) of a simulation frame, deduplicated
        (``analytics_nb.capture.flag_called_frame``); returns its report."""
        return await aflag_called_frame(
            self, outcomes, flags, locally_evaluated=locally_evaluated, **capture_kw
        )

    async def simulate(
        self,
        property_sets: Any,
        flags: Sequence[str] | str | None = None,
        engine: Engine = "remote",
        *,
        definitions: Any = None,
        mode: Literal["server", "sdk"] = "server",
        concurrency: int | None = None,
        progress: bool | None = None,
        payloads: bool = True,
        reasons: bool = False,
        evaluator: FrameEvaluator | None = None,
        group_type_mapping: dict[str, str] | None = None,
        estimate: bool = True,
        warn_minutes: float | None = 10.0,
        output: Output | None = None,
        missing_columns: Literal["unknown", "not_set"] = "unknown",
    ) -> SimulationResult:
        """Evaluate flags across property sets with this client (``analytics_nb.simulate``):
        ``engine="remote"`` (one decide per row), ``"local"`` (the flag engine over the project's
        definitions) or ``"both"`` (and compare them). A long remote run prints its expected duration
        (and warns past ``warn_minutes``); an interrupted one returns the rows done (``result.partial``).
        Property sets may be pandas, Polars, Arrow, DuckDB or a parquet path; ``result.data`` is the result
        in their family (Polars in, Polars out) or in ``output`` ("pandas", "polars", "arrow"). A property
        the sets have no column for is unknown (NA where an answer depends on it, with a
        `MissingPropertyWarning`) unless ``missing_columns="not_set"``."""
        return await asimulate(
            property_sets,
            flags,
            engine,
            client=self,
            definitions=definitions,
            mode=mode,
            concurrency=concurrency,
            progress=progress,
            payloads=payloads,
            reasons=reasons,
            evaluator=evaluator,
            group_type_mapping=group_type_mapping,
            estimate=estimate,
            warn_minutes=warn_minutes,
            output=output,
            missing_columns=missing_columns,
        )
