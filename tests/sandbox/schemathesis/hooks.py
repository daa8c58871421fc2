"""Schemathesis hooks of the conformance run (loaded through ``SCHEMATHESIS_HOOKS`` by
``tests/sandbox/test_sandbox_conformance_full.py``).

``schemathesis.toml`` lets ``positive_data_acceptance`` pass a 400 on the few operations it names; on
those, and only those, one more check, :func:`positive_data_refused_only_as_documented`, fails every 400
but two narrow kinds:

* **State rules** the document lists per operation under ``x-refusals`` (built from the endpoint table,
  `sandbox._endpoints.Refusal`): a schema-valid request refused because of what is stored (a flag key
  another flag uses, an id that names no function, a template id the catalog lacks, a plugin URL already
  installed). Only a 400 whose JSON body has the listed ``code`` and ``attr`` (and starts with the listed
  ``detail``) passes; any other refusal fails as before.
* **The request line**: a GET capture whose URL is longer than :data:`MAX_REQUEST_LINE` is refused by the
  HTTP parser in front of the app (uvicorn + httptools answer ``400 Invalid HTTP request received.`` as
  plain text), before any sandbox code runs; PostHog's capture (hyper) also refuses long URIs (414).
  Only that exact answer to such a URL passes.
"""

from __future__ import annotations

from typing import Any

import schemathesis

#: URLs up to this many bytes reach the app (a 64 KB request line was served in the run's checks);
#: the parser refuses longer ones (a 320 KB one was refused).
MAX_REQUEST_LINE = 64 * 1024
_PARSER_REFUSAL = "Invalid HTTP request received."
_CAPTURE_GETS = {"/batch/", "/capture/", "/e/", "/i/v0/e/"}


def _refusals(case: Any) -> list[dict[str, Any]]:
    raw = getattr(case.operation.definition, "raw", None)
    return list(raw.get("x-refusals", [])) if isinstance(raw, dict) else []


def _documented_state_refusal(case: Any, response: Any) -> bool:
    refusals = _refusals(case)
    if not refusals:
        return False
    try:
        body = response.json()
    except Exception:  # not JSON: no documented refusal
        return False
    if not isinstance(body, dict):
        return False
    detail = str(body.get("detail", ""))
    return any(
        r["status"] == response.status_code
        and r["code"] == body.get("code")
        and r["attr"] == body.get("attr")
        and detail.startswith(r.get("detail", ""))
        for r in refusals
    )


def _request_line_refusal(case: Any, response: Any) -> bool:
    if case.method.upper() != "GET" or case.operation.path not in _CAPTURE_GETS:
        return False
    url = response.request.url or ""
    return response.status_code == 400 and response.text == _PARSER_REFUSAL and len(url) > MAX_REQUEST_LINE


@schemathesis.check
def positive_data_refused_only_as_documented(ctx: Any, response: Any, case: Any) -> bool | None:
    """A schema-valid request answered 400 is refused only as the document (``x-refusals``) or the HTTP
    parser's request-line limit allows (on the operations where ``positive_data_acceptance`` passes 400)."""
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive or response.status_code != 400:
        return None
    if not _refusals(case) and not (case.method.upper() == "GET" and case.operation.path in _CAPTURE_GETS):
        return None  # positive_data_acceptance decides alone (400 is a failure there, or documented in toml)
    if _documented_state_refusal(case, response) or _request_line_refusal(case, response):
        return None
    raise AssertionError(
        "Valid data should have been accepted: this 400 is none of the refusals the document lists for "
        "the operation (x-refusals) nor the HTTP parser's answer to a request line over "
        f"{MAX_REQUEST_LINE} bytes"
    )
