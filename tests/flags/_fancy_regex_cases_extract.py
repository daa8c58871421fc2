"""Rebuild `fancy_regex_cases.json`: the pattern checks of fancy-regex 0.19's own test suite.

Run by hand with a checkout of github.com/fancy-regex/fancy-regex at tag 0.19.0 (the version the flags
service's regex filters are compared with; see `_fancy_syntax.py`):

    python tests/flags/_fancy_regex_cases_extract.py /path/to/fancy-regex > tests/flags/fancy_regex_cases.json

It reads calls with literal arguments only: in `src/parse.rs`, `fail(re)` / `assert_error(re, ..)` (the
parser refuses `re`) and `p(re)` (it parses); in `tests/matching.rs`, `assert_match` / `assert_no_match`
and `common::assert_is_match` / `common::assert_no_match` (`Regex::new(re)` then `is_match(text)`). Each
row is `[file:line, pattern, text or null, true | false | "refused" | "accepted"]`.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", '"': '"', "'": "'"}


def _raw(s: str, i: int) -> tuple[str, int] | None:
    j = i + 1
    while s[j] == "#":
        j += 1
    if s[j] != '"':
        return None
    close = '"' + "#" * (j - i - 1)
    end = s.index(close, j + 1)
    return s[j + 1 : end], end + len(close)


def _escape(s: str, j: int, out: list[str]) -> int | None:
    e = s[j + 1]
    if e in _ESCAPES:
        out.append(_ESCAPES[e])
        return j + 2
    if e == "x":
        out.append(chr(int(s[j + 2 : j + 4], 16)))
        return j + 4
    if e == "u":
        close = s.index("}", j)
        out.append(chr(int(s[j + 3 : close], 16)))
        return close + 1
    if e == "\n":
        j += 2
        while s[j] in " \t\n":
            j += 1
        return j
    return None


def rust_string(s: str, i: int) -> tuple[str, int] | None:
    """The Rust string literal at `s[i:]` (plain or raw): (value, end), or None."""
    if s.startswith("r", i):
        return _raw(s, i)
    if s[i] != '"':
        return None
    j, out = i + 1, []
    while s[j] != '"':
        if s[j] == "\\":
            nxt = _escape(s, j, out)
            if nxt is None:
                return None
            j = nxt
        else:
            out.append(s[j])
            j += 1
    return "".join(out), j + 1


def calls(src: str, name: str, expect: object) -> Iterator[tuple[int, str, str | None, object]]:
    for m in re.finditer(r"(?<![\w:])" + re.escape(name) + r"\(\s*", src):
        first = rust_string(src, m.end())
        if first is None:
            continue
        pattern, i = first
        line = src.count("\n", 0, m.start()) + 1
        if expect in ("refused", "accepted"):
            if src[i:].lstrip().startswith((")", ",")):
                yield line, pattern, None, expect
            continue
        while src[i] in " \n,":
            i += 1
        second = rust_string(src, i)
        if second is not None and src[second[1] :].lstrip().startswith(")"):
            yield line, pattern, second[0], expect


SOURCES = {
    "src/parse.rs": [("fail", "refused"), ("assert_error", "refused"), ("p", "accepted")],
    "tests/matching.rs": [
        ("common::assert_is_match", True),
        ("common::assert_no_match", False),
        ("assert_match", True),
        ("assert_no_match", False),
    ],
}


def main(repo: str) -> None:
    rows, seen = [], set()
    for path, names in SOURCES.items():
        src = subprocess.run(
            ["git", "-C", repo, "show", f"HEAD:{path}"], capture_output=True, text=True
        ).stdout
        for name, expect in names:
            for line, pattern, text, want in calls(src, name, expect):
                if (pattern, text, str(want)) not in seen:
                    seen.add((pattern, text, str(want)))
                    rows.append([f"{path}:{line}", pattern, text, want])
    print("[\n" + ",\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n]")


if __name__ == "__main__":
    main(sys.argv[1])
