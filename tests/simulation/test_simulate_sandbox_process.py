"""The notebook's sandbox in a child process (``Client.sandbox(mode="process")``): a heavy remote run does
not share the kernel's GIL with the server; the client owns the process and stops it on close."""

from __future__ import annotations

import pandas as pd

from analytics_nb import Client
from analytics_nb.sandbox import ProcessSandbox
from analytics_nb.simulation import simulate


def test_client_sandbox_in_a_child_process_simulates_and_stops_it() -> None:
    df = pd.DataFrame({"distinct_id": [f"p{i}" for i in range(30)], "plan": ["pro", "free", "starter"] * 10})
    client = Client.sandbox(mode="process", progress=False)
    try:
        server = client.sandbox_server
        assert isinstance(server, ProcessSandbox)
        result = simulate(df, client=client)
        assert len(result.frame) == len(df) and result.frame["error"].isna().all()
        assert client.core.bulk_transport == "lane"
    finally:
        client.close()
    assert server._proc.poll() is not None  # the child process ended with the client
