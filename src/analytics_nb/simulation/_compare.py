"""Both-mode: per-flag agreement of local vs remote, and the differing rows with their likely cause."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from analytics_nb.simulation._definitions import Definitions, flag_references
from analytics_nb.simulation._remote import PARTIAL_ERROR
from analytics_nb.wire.cells import is_missing

__all__ = ["AGREEMENT_COLUMNS", "CAUSES", "agreement_headline", "compare"]

CAUSES = (
    "request error",
    "not returned by the service",
    "inconclusive (sdk mode)",
    "local error",
    "GeoIP (ip given)",
    "stored person properties",
    "cohorts",
    "stored group properties",
    "experience continuity",
    "unknown",
)
"""The causes a difference can be given, most specific first."""

_GEOIP_PREFIX = "$geoip_"


def same_value(a: Any, b: Any) -> bool:
    """True when two flag values are both known and equal (a variant never equals True). Missing is any of
    None, pd.NA or NaN (`is_missing`), whichever the column's dtype uses."""
    if is_missing(a) or is_missing(b):
        return False
    if isinstance(a, bool) != isinstance(b, bool):
        return False
    return bool(a == b)


def _values(frame: pd.DataFrame, key: str) -> list[Any]:
    if key not in frame.columns:
        return [None] * len(frame)
    return [None if is_missing(v) else v for v in frame[key].astype(object).tolist()]


def _cause(
    key: str,
    local_value: Any,
    remote_value: Any,
    local_error: Any,
    remote_error: Any,
    request: dict[str, Any],
    refs: dict[str, set[str]],
    flag: dict[str, Any] | None,
    mode: str,
) -> tuple[str, str]:
    if isinstance(remote_error, str) and remote_value is None:
        if remote_error.startswith(PARTIAL_ERROR):
            return (
                "failed on the service",
                f"the service could not evaluate {key!r} for this row (remote is NA, not False): "
                f"{remote_error}",
            )
        return "request error", remote_error
    if remote_value is None:
        scope = str((flag or {}).get("evaluation_runtime") or "all").lower()
        if scope in ("server", "client"):
            return "filtered by runtime", (
                f"{key!r} has evaluation_runtime {scope!r}: the service answers it only to {scope} callers "
                "(simulate's runtime= chooses which one the requests ask as)"
            )
        return "not returned by the service", f"the decide response has no value for {key!r} (inactive flag?)"
    if local_value is None:
        if mode == "sdk":
            return "inconclusive (sdk mode)", "local evaluation cannot decide without stored properties"
        return "local error", str(local_error) if isinstance(local_error, str) else "no local value"
    given = set(request.get("person_properties") or {})
    if request.get("ip"):
        geo = sorted(
            p
            for p in refs["person"] | refs["cohort_person"]
            if p.startswith(_GEOIP_PREFIX) and p not in given
        )
        if geo:
            return "GeoIP (ip given)", f"the service derived {', '.join(geo)} from ip {request['ip']}"
    absent = sorted(
        p for p in refs["person"] if p not in given and not p.startswith(_GEOIP_PREFIX) and p != "distinct_id"
    )
    if absent:
        return "stored person properties", (
            f"the row does not give {', '.join(absent)}; the service uses the person's stored values"
        )
    if refs["cohort"]:
        return "cohorts", (
            f"the flag uses cohort(s) {', '.join(sorted(refs['cohort']))}; the service "
            "evaluates static cohort "
            "membership and stored properties"
        )
    if refs["group"] or (
        flag and (flag.get("filters") or {}).get("aggregation_group_type_index") is not None
    ):
        return "stored group properties", "the service merges the group's stored properties under the row's"
    if flag and flag.get("ensure_experience_continuity"):
        return "experience continuity", "the service hashes a stored hash-key override instead of the id"
    return "unknown", "no cause found from the definitions"


AGREEMENT_COLUMNS = [
    "flag",
    "rows",
    "compared",
    "agree",
    "disagree",
    "unknown_local",
    "unknown_remote",
    "share",
]
"""The agreement table: ``compared`` rows have a known value on both sides; ``share`` is ``agree /
compared``; a row unknown on one side (or both) is counted in ``unknown_local`` / ``unknown_remote``, never as
a disagreement (issue 34: NA on one side read as "agreement 0.000" for flags with no two different values)."""


def compare(
    local: pd.DataFrame,
    remote: pd.DataFrame,
    keys: Sequence[str],
    requests: Sequence[dict[str, Any]],
    defs: Definitions,
    *,
    mode: str,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Return ``(agreement, differences)``.

    ``agreement``: one row per flag with `AGREEMENT_COLUMNS`. ``differences``: one row per (property set,
    flag) whose values are not the same known value, with row (the input index label), distinct_id, flag,
    local, remote, kind (``"disagree"``: two different known values; ``"unknown"``: NA on a side), cause,
    detail.
    """
    by_key = defs.by_key()
    ids = local["distinct_id"].tolist()
    labels = local.index.tolist()
    local_err = local["error"].astype(object).tolist() if "error" in local.columns else [None] * len(local)
    remote_err = (
        remote["error"].astype(object).tolist() if "error" in remote.columns else [None] * len(remote)
    )
    agreement: list[dict[str, Any]] = []
    diffs: list[dict[str, Any]] = []
    for key in keys:
        lv = _values(local, key)
        rv = _values(remote, key)
        refs = flag_references(defs, key)
        counts = {"compared": 0, "agree": 0, "unknown_local": 0, "unknown_remote": 0}
        for i, (a, b) in enumerate(zip(lv, rv, strict=True)):
            counts["unknown_local"] += a is None
            counts["unknown_remote"] += b is None
            if a is not None and b is not None:
                counts["compared"] += 1
                if same_value(a, b):
                    counts["agree"] += 1
                    continue
            cause, detail = _cause(
                key, a, b, local_err[i], remote_err[i], requests[i], refs, by_key.get(key), mode
            )
            diffs.append(
                {
                    "row": labels[i],
                    "distinct_id": ids[i],
                    "flag": key,
                    "local": pd.NA if a is None else a,
                    "remote": pd.NA if b is None else b,
                    "kind": "disagree" if a is not None and b is not None else "unknown",
                    "cause": cause,
                    "detail": detail,
                }
            )
        compared, agree = counts["compared"], counts["agree"]
        agreement.append(
            {
                "flag": key,
                "rows": len(lv),
                **counts,
                "disagree": compared - agree,
                "share": agree / compared if compared else float("nan"),
            }
        )
    agree_df = pd.DataFrame.from_records(agreement, columns=AGREEMENT_COLUMNS)
    agree_df = agree_df.astype({c: "int64" for c in AGREEMENT_COLUMNS[1:-1]} | {"share": "float64"})
    diff_cols = ["row", "distinct_id", "flag", "local", "remote", "kind", "cause", "detail"]
    diff_df = (
        pd.DataFrame.from_records(diffs, columns=diff_cols)
        if diffs
        else pd.DataFrame({c: pd.Series([], dtype=object) for c in diff_cols})
    )
    for c in ("local", "remote", "row"):
        diff_df[c] = diff_df[c].astype(object)
    return agree_df, diff_df


def agreement_headline(agreement: pd.DataFrame) -> str:
    """``"2 disagreements over 2,700 compared; 300 unknown (local 300, remote 0)"``: the both-mode result in
    one line, disagreements first, never a share that counts unknown rows as disagreeing.

    Args:
        agreement: A both-mode result's ``agreement`` table (`AGREEMENT_COLUMNS`).

    Returns:
        The one-line headline.
    """
    disagree = int(agreement["disagree"].sum())
    compared = int(agreement["compared"].sum())
    local, remote = int(agreement["unknown_local"].sum()), int(agreement["unknown_remote"].sum())
    rows = int(agreement["rows"].sum())
    unknown = rows - compared
    line = f"{disagree:,} disagreement{'s' if disagree != 1 else ''} over {compared:,} compared"
    if unknown:
        line += f"; {unknown:,} unknown (local {local:,}, remote {remote:,})"
    return line
