"""Issue 14 item 8 (client side): a 404 names what was not found; a dict of lists is read as columns;
``flag_called`` for a key that does not exist does what posthog 7.91.1 does (sends the event, with
``$feature_flag_error: "flag_missing"``)."""

from __future__ import annotations

import time
from typing import Any

import pandas as pd
import pytest

from _clients import client_for
from analytics_nb.capture import flag_called
from analytics_nb.errors import NotFoundError
from analytics_nb.simulation import SimulationInputError, simulate


def test_404_for_a_missing_project_talks_about_the_project(sandbox: Any) -> None:
    with client_for(sandbox, project_id=999, max_retries=0) as client:
        for call in (client.playlists.list, lambda: client.playlists.get("abc"), client.feature_flags.list):
            with pytest.raises(NotFoundError) as info:
                call()
            message = str(info.value)
            assert "Project 999 does not exist" in message and "project_id=" in message
            assert "playlist" not in message.split("failed with HTTP 404")[1]  # nothing about soft deletes


def test_404_for_an_item_names_the_item(sandbox: Any) -> None:
    with client_for(sandbox, max_retries=0) as client:
        with pytest.raises(NotFoundError, match=r"short_id.*restore"):
            client.playlists.get("nOtThErE")
        with pytest.raises(NotFoundError) as info:
            client.feature_flags.get(987654)
    assert "flag id" in str(info.value) and "playlist" not in str(info.value)


def test_a_dict_of_lists_is_read_as_columns(sandbox: Any) -> None:
    columns = {"distinct_id": ["u1", "u2", "u3"], "country": ["US", "DE", "FR"]}
    with client_for(sandbox, max_retries=0) as client:
        result = simulate(columns, engine="local", client=client)
        frame = getattr(result, "frame", result)
        assert len(frame) == 3
        with pytest.raises(SimulationInputError, match="different lengths"):
            simulate({"distinct_id": ["u1", "u2"], "country": ["US"]}, engine="local", client=client)
        with pytest.raises(SimulationInputError, match="wrap it in a list"):
            simulate({"distinct_id": "u1", "country": "US"}, engine="local", client=client)


def _called(sb: Any, distinct_id: str) -> list[dict[str, Any]]:
    events = sb.events()
    rows = events[(events["event"] == "$feature_flag_called") & (events["distinct_id"] == distinct_id)]
    return list(rows["properties"])


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # the SDK's own notice about get_feature_flag
def test_flag_called_for_a_missing_key_matches_the_sdk(sandbox: Any) -> None:
    posthog = pytest.importorskip("posthog")  # the oracle (7.91.1), never a runtime dependency
    sdk = posthog.Posthog(sandbox.project_api_key, host=sandbox.url, flush_at=1, max_retries=0)
    try:
        assert sdk.get_feature_flag("no-such-flag", "sdk-user") is None
        sdk.flush()
    finally:
        sdk.shutdown()
    with client_for(sandbox, max_retries=0) as client:
        decide = client.decide("our-user")
        assert flag_called(client, "our-user", "no-such-flag", decide) is True
    deadline = time.monotonic() + 5
    while not _called(sandbox, "sdk-user") and time.monotonic() < deadline:
        time.sleep(0.05)
    theirs, ours = _called(sandbox, "sdk-user")[-1], _called(sandbox, "our-user")[-1]
    for prop in ("$feature_flag", "$feature_flag_response", "$feature/no-such-flag", "$feature_flag_error"):
        assert ours.get(prop) == theirs.get(prop), prop
    assert ours["$feature_flag_error"] == "flag_missing" and ours["$feature_flag_response"] is None
    frame = pd.DataFrame([ours])
    assert frame.loc[0, "$feature_flag"] == "no-such-flag"
