"""Issue 29 #2: ``flag_called`` / ``flag_called_frame`` for a key the project does not have warns with the
closest keys (difflib) or refuses on request; the check reads the definitions the client already holds (one
fetch, ETag-cached), never one request per call."""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import pandas as pd
import pytest

from analytics_nb import Client
from analytics_nb.capture import UnknownFlagKeyError, UnknownFlagKeyWarning
from analytics_nb.sandbox import Sandbox


@pytest.fixture
def client(sandbox: Sandbox) -> Iterator[Client]:
    with Client(
        sandbox.url,
        secret_api_key=sandbox.create_secret_key(),
        project_api_key=sandbox.project_api_key,
        project_id=sandbox.project_id,
        progress=False,
    ) as c:
        yield c


def _flag_events(sb: Sandbox, key: str) -> int:
    ev = sb.events()
    if ev.empty:
        return 0
    ev = ev[ev["event"] == "$feature_flag_called"]
    return int(sum(p.get("$feature_flag") == key for p in ev["properties"]))


def test_a_typo_warns_with_the_closest_key_and_still_sends(sandbox: Sandbox, client: Client) -> None:
    before = _flag_events(sandbox, "new-chekout")
    with pytest.warns(UnknownFlagKeyWarning, match=r"no flag 'new-chekout' \(did you mean 'new-checkout'"):
        assert client.flag_called("user-1", "new-chekout", True) is True
    assert _flag_events(sandbox, "new-chekout") == before + 1


def test_raise_refuses_and_sends_nothing(sandbox: Sandbox, client: Client) -> None:
    before = _flag_events(sandbox, "new-chekout")
    with pytest.raises(UnknownFlagKeyError, match="did you mean 'new-checkout'") as info:
        client.flag_called("user-2", "new-chekout", True, unknown_keys="raise")
    assert "Nothing was sent" in str(info.value) and len(str(info.value).splitlines()) <= 3
    assert _flag_events(sandbox, "new-chekout") == before


def test_a_known_key_is_quiet_and_checks_cost_no_request_per_call(sandbox: Sandbox, client: Client) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnknownFlagKeyWarning)
        client.flag_called("user-3", "new-checkout", True)  # reads the definitions once
        sandbox.clear_requests()
        for i in range(10):
            client.flag_called(f"user-4-{i}", "new-checkout", False)
    paths = sandbox.requests()["path"].tolist()
    assert paths and not [p for p in paths if "definitions" in p or "local_evaluation" in p]


def test_the_frame_variant_warns_or_refuses_before_sending(sandbox: Sandbox, client: Client) -> None:
    frame = pd.DataFrame(
        {"distinct_id": ["f-1", "f-2"], "new-checkout": [True, False], "beta-featur": [True, True]}
    )
    with pytest.raises(UnknownFlagKeyError, match="'beta-featur' \\(did you mean 'beta-feature'"):
        client.flag_called_frame(frame, ["new-checkout", "beta-featur"], unknown_keys="raise")
    assert _flag_events(sandbox, "beta-featur") == 0
    with pytest.warns(UnknownFlagKeyWarning, match="beta-featur"):
        report = client.flag_called_frame(frame, ["new-checkout", "beta-featur"])
    assert (report["status"] == "sent").sum() == 4


def test_ignore_skips_the_check(sandbox: Sandbox, client: Client) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnknownFlagKeyWarning)
        client.flag_called("user-5", "no-such-flag-at-all", True, unknown_keys="ignore")
    with pytest.raises(ValueError, match="unknown_keys='nope'"):
        client.flag_called("user-5", "new-checkout", True, unknown_keys="nope")  # type: ignore[arg-type]


def test_a_key_without_definitions_scope_says_the_check_was_skipped(sandbox: Sandbox) -> None:
    key = sandbox.create_personal_key(["insight:read"])
    with Client(sandbox.url, personal_api_key=key, project_api_key=sandbox.project_api_key) as c:
        with pytest.warns(UnknownFlagKeyWarning, match="could not check flag keys") as record:
            c.flag_called("user-6", "new-chekout", True)
        assert key not in str(record[0].message)
        sandbox.clear_requests()
        with warnings.catch_warnings():
            warnings.simplefilter("error", UnknownFlagKeyWarning)
            c.flag_called("user-7", "new-chekout", True)  # said once per client, tried once
        assert not [p for p in sandbox.requests()["path"] if "definitions" in p]


def test_a_missing_key_in_a_frame_is_sent_as_a_missing_flag(sandbox: Sandbox, client: Client) -> None:
    # issue 37 #8: the warning's words and the stored events agree (flag_missing, no value recorded)
    frame = pd.DataFrame({"distinct_id": ["m-1", "m-2"], "no-such-flaggg": [True, "test"]})
    with pytest.warns(UnknownFlagKeyWarning, match="'flag_missing' \\(the value passed is not recorded\\)"):
        report = client.flag_called_frame(frame, ["no-such-flaggg"])
    assert (report["status"] == "sent").all() and report["response"].isna().all()
    ev = sandbox.events()
    props = [p for p in ev["properties"] if p.get("$feature_flag") == "no-such-flaggg"]
    assert len(props) == 2
    for p in props:
        assert p["$feature_flag_error"] == "flag_missing"
        assert p.get("$feature_flag_response") is None and p.get("$feature/no-such-flaggg") is None
