"""Regex filters in the flags service's dialect, always with bounded running time.

The service compiles `regex` / `not_regex` patterns with `fancy_regex` and a backtrack limit of 10,000 steps
(rust/feature-flags/src/properties/property_matching.rs, `REGEX_BACKTRACK_LIMIT` and the `Regex | NotRegex`
arm of `match_property`). `fancy_regex` hands every pattern without look-around or back-references to the
Rust `regex` crate, so we do the same:

* patterns the Rust `regex` crate accepts run on `rurex`, a binding of that crate: the same dialect
  (Unicode ``\\w``/``\\b``/``\\d``, ``\\pL``, POSIX classes, scoped inline flags, ``$`` = end of text) and
  linear time, so ``^(a+)+$`` cannot backtrack at all;
* patterns with look-around or back-references (the `fancy_regex` extensions) run on the `regex` module
  with a time limit standing in for the step limit; running out of time counts as "no answer", which the
  service turns into "no match" for `regex` and `not_regex` alike;
* a pattern neither accepts is invalid: the service never matches it (`regex` and `not_regex` both false).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import regex as _mrab  # type: ignore[import-untyped]  # look-around/back-references with a timeout
import rurex  # type: ignore[import-untyped]

#: Wall-clock stand-in for fancy_regex's 10,000-step backtrack limit (about 1 ms in Rust): generous
#: enough that a sane look-around pattern finishes, small enough that a catastrophic one is cut short.
FANCY_TIMEOUT_S = 0.02

_FANCY_HINT = re.compile(r"\(\?<?[=!]|\\[1-9]|\\k<|\(\?>|\(\?P=")


@dataclass(frozen=True, slots=True)
class Pattern:
    """A compiled filter pattern: `search(text)` is True/False, or None when the bound was hit."""

    source: str
    engine: str  # "rust" (linear time), "fancy" (time-bounded backtracking)
    search: Callable[[str], bool | None]


def _strict_end(pattern: str) -> str:
    """Unescaped ``$`` outside classes as ``\\Z`` for the `regex` module, whose ``$`` also matches before
    a final newline (Rust's does not)."""
    out: list[str] = []
    i, in_class = 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
        elif c == "[":
            in_class = True
            j = i + 1
            if pattern[j : j + 1] == "^":
                j += 1
            if pattern[j : j + 1] == "]":
                j += 1
            out.append(pattern[i:j])
            i = j
            continue
        elif c == "$":
            out.append(r"\Z")
            i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


@lru_cache(maxsize=4096)
def compile_pattern(pattern: str) -> Pattern | None:
    """The pattern compiled in the service's dialect, or None when the service would reject it."""
    try:
        compiled = rurex.compile(pattern)
    except Exception:  # rurex.PatternError: not in the Rust regex dialect
        compiled = None
    if compiled is not None:
        rust_search = compiled.search

        def search_rust(text: str) -> bool | None:
            return rust_search(text) is not None

        return Pattern(pattern, "rust", search_rust)
    if _FANCY_HINT.search(pattern) is None:
        return None
    try:
        fancy = _mrab.compile(_strict_end(pattern), _mrab.VERSION0)
    except Exception:  # regex.error and friends: invalid in the fancy dialect too
        return None
    fancy_search = fancy.search

    def search_fancy(text: str) -> bool | None:
        try:
            return fancy_search(text, timeout=FANCY_TIMEOUT_S) is not None
        except TimeoutError:
            return None

    return Pattern(pattern, "fancy", search_fancy)
