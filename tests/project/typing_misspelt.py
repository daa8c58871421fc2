"""A misspelt keyword on every verb form: mypy (and pyright) must report each line marked ``# misspelt``.

Never run; never collected by pytest (``conftest.py`` ignores it). ``tests/project/test_typed_surface.py``
runs mypy on it and expects exactly one error per marked line: a form typed ``(*args, **kwargs)`` passes
every misspelling and would be missing from mypy's report.
"""

from __future__ import annotations

import pandas as pd

import analytics_nb as anb
from analytics_nb import capture, simulation


def sync_forms(client: anb.Client, df: pd.DataFrame) -> None:
    anb.Client("eu", personal_api_kee="phx_x")  # misspelt
    client.simulate(df, enginee="local")  # misspelt
    client.capture_frame(df, batchsize=10)  # misspelt
    client.capture("e", "u1", propertys={})  # misspelt
    client.flag_called("u1", "f", True, flagid=1)  # misspelt
    client.flag_called_frame(df, unknown_key="warn")  # misspelt
    client.flag_called_frame(df, batchsize=10)  # misspelt
    simulation.simulate(df, enginee="local")  # misspelt
    capture.capture_frame(client, df, batchsize=10)  # misspelt
    capture.capture_event(client, "e", "u1", propertys={})  # misspelt
    capture.flag_called(client, "u1", "f", True, flagid=1)  # misspelt
    capture.flag_called_frame(client, df, unknown_key="warn")  # misspelt


async def async_forms(aclient: anb.AsyncClient, df: pd.DataFrame) -> None:
    anb.AsyncClient("eu", personal_api_kee="phx_x")  # misspelt
    await aclient.simulate(df, enginee="local")  # misspelt
    await aclient.capture_frame(df, batchsize=10)  # misspelt
    await aclient.capture("e", "u1", propertys={})  # misspelt
    await aclient.flag_called("u1", "f", True, flagid=1)  # misspelt
    await aclient.flag_called_frame(df, unknown_key="warn")  # misspelt
    await simulation.asimulate(df, enginee="local", client=aclient)  # misspelt
    await capture.acapture_frame(aclient, df, batchsize=10)  # misspelt
    await capture.acapture_event(aclient, "e", "u1", propertys={})  # misspelt
    await capture.aflag_called(aclient, "u1", "f", True, flagid=1)  # misspelt
    await capture.aflag_called_frame(aclient, df, unknown_key="warn")  # misspelt
    await capture.aflag_called_frame(aclient, df, batchsize=10)  # misspelt


def _takes_int(value: int) -> None: ...


async def awaitables_are_coroutines(aclient: anb.AsyncClient, df: pd.DataFrame) -> None:
    _takes_int(await aclient.simulate(df))  # misspelt: awaiting the coroutine gives a SimulationResult
    _takes_int(await capture.acapture_frame(aclient, df))  # misspelt: a DataFrame
