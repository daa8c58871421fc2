"""``Client``: the sync twin of ``AsyncClient`` (its capture and simulation methods are generated)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Self

from analytics_nb.capture import DEFAULT_BATCH_BYTES, NaivePolicy, UuidPolicy, capture_frame
from analytics_nb.client import ApiClient
from analytics_nb.embedded import connect_sandbox
from analytics_nb.session._async_client import AsyncClient
from analytics_nb.session._sync_api import ClientMethods
from analytics_nb.simulation import Engine, Output, SimulationResult, simulate

if TYPE_CHECKING:
    import pandas as pd

    from analytics_nb.flags import FrameEvaluator

__all__ = ["Client"]


class Client(ClientMethods, ApiClient):
    """Sync client for a PostHog-style service: ``client.playlists.frame()``; works in scripts and Jupyter.

    Same arguments and methods as ``AsyncClient``; each call runs on the client's private event loop in a
    daemon thread (never ``asyncio.run``), so it is safe inside a running Jupyter kernel. Use ``with`` or
    ``close()``. Besides the API: ``capture``, ``capture_frame``, ``flag_called``, ``flag_called_frame`` and
    ``simulate``.
    """

    async_class: ClassVar[type[AsyncClient]] = AsyncClient
    _async: AsyncClient

    @classmethod
    def sandbox(cls, seed: str = "demo", **kw: Any) -> Self:
        """Start the embedded sandbox and return a Client on it; ``close()`` also stops the sandbox.

        Keyword arguments of ``Client`` (e.g. ``max_retries``) configure the client; the rest go to
        ``analytics_nb.sandbox.start`` (e.g. ``profile="cloud"``).
        """
        return connect_sandbox(seed, client_class=cls, **kw)

    def capture_frame(
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
        # Written by hand, not generated: the plain function lets the batches in flight settle on Ctrl-C and
        # raises CaptureInterrupted carrying the report of what was sent, failed and not attempted.
        return capture_frame(
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

    def simulate(
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
        # Written by hand, not generated: the plain function waits, after Ctrl-C, for the cancelled run to
        # hand over the rows answered so far and returns them as a partial SimulationResult.
        return simulate(
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
