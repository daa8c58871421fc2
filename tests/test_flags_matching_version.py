"""`property_matching_version` as definitions payloads carry it (issue 28): posthog 7.91.1 reads every value
but the integer 2 (None, 0, 1, 3, the text "2", True) as version 1; the engine used to refuse 0, 3 and "2"
with `ValueError`. A value given as a parameter is still checked (1 or 2)."""

from __future__ import annotations

import copy
import logging
from typing import Any

import pytest

from analytics_nb.flags import compile_flags, evaluate_flags

posthog = pytest.importorskip("posthog")
from posthog import Posthog  # noqa: E402

_CLIENT = Posthog("phc_matching_version_test", send=False, sync_mode=True)
logging.getLogger("posthog").setLevel(logging.CRITICAL)
pytestmark = pytest.mark.filterwarnings("ignore:`get_feature_flag` is deprecated:DeprecationWarning")

FLAG = {
    "id": 1,
    "key": "f",
    "active": True,
    "filters": {
        "groups": [{"properties": [{"key": "p", "operator": "exact", "value": "true", "type": "person"}]}]
    },
}
# "true" equals ["true"] by truthiness in version 1 only (posthog-python `_match_exact_property`)
PERSON = {"p": ["true"]}


def _sdk(version: Any) -> Any:
    payload: dict[str, Any] = {"flags": [copy.deepcopy(FLAG)], "group_type_mapping": {}, "cohorts": {}}
    if version != "absent":
        payload["property_matching_version"] = version
    _CLIENT._update_flag_state(payload)
    return _CLIENT.get_feature_flag(
        "f", "u", person_properties=dict(PERSON), only_evaluate_locally=True, send_feature_flag_events=False
    )


@pytest.mark.parametrize(
    "version", ["absent", None, 0, 1, 2, 3, "2", "1", True, False, 2.0, -1, [2], {"v": 2}]
)
def test_payload_versions_read_as_the_sdk_reads_them(version: Any) -> None:
    payload: dict[str, Any] = {"flags": [FLAG], "group_type_mapping": {}, "cohorts": {}}
    if version != "absent":
        payload["property_matching_version"] = version
    compiled = compile_flags(payload)
    assert compiled.property_matching_version == (2 if version == 2 and not isinstance(version, str) else 1)
    want = _sdk(version)
    for mode in ("server", "sdk"):
        assert evaluate_flags(compiled, "u", person_properties=PERSON, mode=mode)["f"].value == want, mode


def test_a_parameter_is_still_checked() -> None:
    with pytest.raises(ValueError, match="property_matching_version must be 1 or 2"):
        compile_flags([FLAG], property_matching_version=3)
