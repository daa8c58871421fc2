"""Regex filters in the flags service's dialect, always with bounded running time.

The service compiles `regex` / `not_regex` patterns with `fancy_regex` and a backtrack limit of 10,000 steps
(rust/feature-flags/src/properties/property_matching.rs, `REGEX_BACKTRACK_LIMIT` and the `Regex | NotRegex`
arm of `match_property`). `fancy_regex` hands every pattern without look-around or back-references to the
Rust `regex` crate, so we do the same:

* patterns the Rust `regex` crate accepts run on `paula`, a binding that hands the pattern text to that
  crate unchanged (`regex` 1.12 / `regex-syntax` 0.8): the same dialect, decided by the crate's own parser
  (Unicode ``\\w``/``\\b``/``\\d``, ``\\pL``, POSIX classes, ``&&`` / ``--`` class operations, flags
  anywhere such as ``a(?i)b``; ``(?a)``, ``a{,3}`` and ``[\\b]`` are errors) and linear time, so
  ``^(a+)+$`` cannot backtrack at all. (`rurex`, used before, parses with Python's `re` rules first, and
  refused ``a(?i)b`` or accepted ``(?a)\\w`` where the service does the opposite);
* patterns with look-around or back-references (the `fancy_regex` extensions) run on `_backtrack`, a
  backtracking VM that compiles them the way fancy_regex does (easy sub-patterns delegated to `paula`) and
  counts backtracks the way fancy_regex counts them, up to the same 10,000; past it there is "no answer",
  which the service turns into "no match" for `regex` and `not_regex` alike;
* a fancy_regex form the engine does not model (a recursive subroutine call, a variable-length
  look-behind holding fancy parts, a nested absent repeater, a conditional on a group that does not
  exist) compiles to an *unknown* pattern (`Pattern.unknown` says which form): the service answers it,
  the engine cannot say what, so a filter on it is unknown (issue 34; before, such patterns ran on the
  `regex` module with a time limit, or counted as invalid);
* a pattern neither accepts is invalid: the service never matches it (`regex` and `not_regex` both false).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import paula  # type: ignore[import-untyped]  # the Rust regex crate, pattern text unchanged

from analytics_nb.flags._backtrack import LimitExceeded, Unsupported, compile_program, has_word_boundary
from analytics_nb.flags._fancy_syntax import Unmodelled, rewrite

_FANCY_HINT = re.compile(r"\(\?<?[=!]|\\[1-9]|\\k<|\(\?>|\(\?P=|\(\?\(|\(\*|\(\?~|\\g<")


@dataclass(frozen=True, slots=True)
class Pattern:
    """A compiled filter pattern: `search(text)` is True/False, or None when the bound was hit."""

    source: str
    engine: str  # "rust" (linear time), "steps" (step-bounded VM), "unknown" (a form not modelled)
    search: Callable[[str], bool | None]
    #: for engine "unknown": the fancy_regex form the engine does not model (a sentence for the cause)
    unknown: str | None = None


def _unknown(pattern: str, form: str) -> Pattern:
    """A pattern the service accepts but the engine cannot run as fancy_regex does: no answer."""
    return Pattern(pattern, "unknown", lambda text: None, form)


@lru_cache(maxsize=4096)
def compile_pattern(pattern: str) -> Pattern | None:
    """The pattern compiled in the service's dialect, or None when the service would reject it.

    fancy_regex's own parser reads the text first (`_fancy_syntax.rewrite`); what it builds runs here. A
    form the engine does not model gives an "unknown" pattern (never a guessed answer)."""
    try:
        source = rewrite(pattern)
    except Unmodelled as exc:
        return _unknown(pattern, str(exc))
    if source is None:
        return None
    return _compile_source(pattern, source)


def _compile_source(pattern: str, source: str) -> Pattern | None:
    """`source` (plain `regex` syntax) compiled: the `regex` crate, else the step-bounded VM, else the
    time-bounded `regex` module; `pattern` is the text the filter holds."""
    try:
        compiled = paula.Regex(source)
    except Exception:  # ValueError: regex-syntax refuses it (or a look-around, which fancy_regex adds)
        return _compile_fancy(pattern, source)
    rust_search = compiled.is_match

    def search_rust(text: str) -> bool | None:
        return bool(rust_search(text))

    if has_word_boundary(source):
        return _word_boundary(pattern, source, search_rust)
    return Pattern(pattern, "rust", search_rust)


#: Values shorter than this run a word-boundary pattern on the `regex` crate; see `_word_boundary`.
WORD_BOUNDARY_VM_FROM = 64


def _word_boundary(pattern: str, source: str, search_rust: Callable[[str], bool | None]) -> Pattern:
    """A pattern whose only fancy part is a word boundary. fancy_regex 0.19 runs every word boundary on its
    VM, so the 10,000-step limit applies (fancy-regex src/lib.rs `Assertion::is_always_hard`): `\\bfoo`
    against 11,000 characters without "foo" runs out (no match for `regex` and `not_regex`). The VM here
    counts the same steps but costs ~50x the `regex` crate, so values under `WORD_BOUNDARY_VM_FROM`
    characters take the crate's answer: there the count passes 10,000 only for a pattern that backtracks
    cubically or worse (`\\b(a|a)*c`), a difference documented in docs/explanation/engine.md."""
    try:
        program = compile_program(source)
    except Unsupported:
        return Pattern(pattern, "rust", search_rust)
    if isinstance(program, str):
        return Pattern(pattern, "rust", search_rust)
    run = program.search

    def search(text: str) -> bool | None:
        if len(text) < WORD_BOUNDARY_VM_FROM:
            return search_rust(text)
        try:
            return run(text)
        except LimitExceeded:
            return None

    return Pattern(pattern, "steps", search)


def _compile_fancy(pattern: str, source: str) -> Pattern | None:
    """A pattern the `regex` crate alone does not run as fancy_regex would: the step-bounded VM; unknown
    for a form that VM does not model; None when it is not a fancy form either (the service refuses it)."""
    if _FANCY_HINT.search(source) is None:
        return None
    try:
        program = compile_program(source)
    except Unsupported as exc:
        return _unknown(pattern, str(exc))
    if isinstance(program, str):  # fancy_regex's rewrite left nothing fancy: the regex crate, unbounded
        try:
            easy = paula.Regex(program).is_match
        except ValueError:
            return None
        return Pattern(pattern, "rust", lambda text: bool(easy(text)))
    run = program.search

    def search_steps(text: str) -> bool | None:
        try:
            return run(text)
        except LimitExceeded:
            return None

    return Pattern(pattern, "steps", search_steps)


# ---------------------------------------------------------------------------------------------- sdk mode


@dataclass(frozen=True, slots=True)
class SdkSupport:
    """What posthog 7.91.1 needs to know about a pattern before running it on Python's `re`: whether it
    sends the pattern to the server outright, and the traits that make some values go there too."""

    defers: bool
    word_class: bool
    space_class: bool
    end_anchor: bool
    quantified: bool

    def defers_value(self, text: str) -> bool:
        """Whether the SDK sends this pattern with this value to the server ("Regex requires server
        evaluation"): a final newline under `$` with a quantifier, non-word non-ASCII text under `\\w`,
        surrogates, and the separators U+001C..U+001F under `\\s`."""
        if self.defers:
            return True
        if self.end_anchor and self.quantified and text.endswith("\n"):
            return True
        if not text.isascii():
            if any(0xD800 <= ord(c) <= 0xDFFF for c in text):
                return True
            if self.word_class and any(not c.isascii() and not (c.isalpha() or c.isdecimal()) for c in text):
                return True
        return self.space_class and any(c in text for c in "\x1c\x1d\x1e\x1f")


_SDK_ESCAPES = set("dDsSwWbfnrt")
_SDK_CLASS_ESCAPES = set("\\-[]^.$*+?(){}|")
_REPEAT = re.compile(r"\{([0-9]+)(?:,([0-9]*))?\}")


@lru_cache(maxsize=4096)
def sdk_support(pattern: str) -> SdkSupport:
    """Scan a pattern the way posthog 7.91.1 decides what its Python `re` may run (facts from its
    `_RegexTranslator`, `_match_regex`, `_assert_regex_value_supported`; written independently)."""
    scan = _SdkScan(pattern)
    i = 0
    while 0 <= i < scan.n and not scan.defers:
        i = scan.step(i)
    return SdkSupport(scan.defers, scan.word, scan.space, scan.end, scan.quantified)


_STOP = -1


class _SdkScan:
    """The state of one `sdk_support` scan; `step(i)` reads the token at `i` and returns where the next
    one starts (`_STOP` ends the scan)."""

    def __init__(self, pattern: str) -> None:
        self.p = pattern
        self.n = len(pattern)
        self.word = self.space = self.end = self.quantified = self.defers = False
        self.in_class: int | None = None
        self.previous = ""
        self.groups: list[bool] = []  # per open group: does it contain a quantifier?
        self.closed_quantified = False

    def step(self, i: int) -> int:
        c = self.p[i]
        if 0xD800 <= ord(c) <= 0xDFFF:
            self.defers = True
            return _STOP
        if self.in_class is None and not self._track_groups(c):
            return _STOP
        if c == "\\":
            return self._escape(i)
        if c == "[" or (c == "]" and self.in_class is not None):
            self._bracket(i, c)
        elif self.in_class is not None:
            self._class_char(i, c)
        elif c == "(" and self.p[i + 1 : i + 2] == "?":
            if self.p[i + 2 : i + 3] != ":":
                self.defers = True
            self.previous = "("
            return i + 3
        elif c == "{":
            return self._repeat(i)
        elif c in "*+?":
            self._quantifier(i)
        else:
            self.previous = "empty group" if c == ")" and self.previous in ("(", "empty group") else c
        return i + 1

    def _bracket(self, i: int, c: str) -> None:
        """A class opens (a class inside a class defers) or closes (an empty class `[]` defers)."""
        if c == "[":
            if self.in_class is not None:
                self.defers = True
            self.in_class = i
            return
        assert self.in_class is not None
        start = self.in_class + (2 if self.p[self.in_class + 1 : self.in_class + 2] == "^" else 1)
        if i == start:
            self.defers = True
        self.in_class = None
        self.previous = "literal"

    def _quantifier(self, i: int) -> None:
        """`*`, `+` or `?`: after an anchor or an empty group, or followed by `+` / `{`, the SDK defers."""
        if self.previous in ("^", "$", "empty group") or self.p[i + 1 : i + 2] in ("+", "{"):
            self.defers = True
        self.previous = "quantifier"

    def _track_groups(self, c: str) -> bool:
        """Outside a class: anchors, quantifiers and which groups hold a quantifier; False when a
        quantified group itself holds a quantifier, such as `(a+)+` (the SDK defers it)."""
        self.end |= c == "$"
        self.quantified |= c in "*+?{|"
        if c == "(":
            self.groups.append(False)
        elif c == ")":
            self.closed_quantified = self.groups.pop() if self.groups else False
            if self.groups:
                self.groups[-1] |= self.closed_quantified
        elif c in "*+?{":
            if self.previous == ")" and self.closed_quantified:
                self.defers = True
                return False
            if self.groups:
                self.groups[-1] = True
        return True

    def _escape(self, i: int) -> int:
        p = self.p
        i += 1
        if i == self.n:
            return _STOP
        e = p[i]
        self.previous = "literal"
        if e == "x":
            digits = p[i + 1 : i + 3]
            if len(digits) != 2 or any(d not in "0123456789abcdefABCDEF" for d in digits):
                self.defers = True
            return i + 3
        in_class = self.in_class is not None
        if (e in "bB<>" and not in_class) or (
            e not in _SDK_ESCAPES
            and (
                not (0x20 <= ord(e) <= 0x7E and not e.isalnum()) or (in_class and e not in _SDK_CLASS_ESCAPES)
            )
        ):
            self.defers = True
        self.word |= e in "wW"
        self.space |= e in "sS"
        return i + 1

    def _class_char(self, i: int, c: str) -> None:
        p = self.p
        if p[i : i + 2] in ("&&", "--", "~~"):
            self.defers = True
        elif c == "-" and i + 1 < self.n and p[i + 1] != "]":
            around = p[i + 1 : i + 3]
            if around in (r"\d", r"\D", r"\s", r"\S", r"\w", r"\W") or (
                i >= 2 and p[i - 2] == "\\" and p[i - 1] in "dDsSwW"
            ):
                self.defers = True

    def _repeat(self, i: int) -> int:
        m = _REPEAT.match(self.p, i)
        if m is None or self.previous in ("", "|", "(", "^", "$", "empty group", "quantifier"):
            self.defers = True
            return _STOP
        if any(len(x) > 10 or int(x) > 0xFFFFFFFF for x in m.groups() if x):
            self.defers = True
        i = m.end() - 1
        if self.p[i + 1 : i + 2] in ("+", "{"):
            self.defers = True
        self.previous = "quantifier"
        return i + 1
