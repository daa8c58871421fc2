"""Look-around and back-references bounded by fancy_regex's step count (issue 28), not by a wall clock.

Service facts (each with its source):

* `regex` / `not_regex` compile with `RegexBuilder::new(..).backtrack_limit(REGEX_BACKTRACK_LIMIT)`,
  10,000 (rust/feature-flags/src/properties/property_matching.rs);
* hitting the limit: `find` returns `Err`, mapped to `FlagMatchingError::InvalidRegexPattern` (same file,
  the `Regex | NotRegex` arm);
* an `Err` from `match_property` counts as "the filter does not match" (`unwrap_or(false)`), for both
  operators (rust/feature-flags/src/flags/flag_matching.rs, `all_properties_match`);
* a step is one backtrack branch popped after a failure; the error comes when the count passes the limit
  (fancy-regex 0.19 `src/vm.rs`, `run_with`);
* easy sub-patterns are delegates that push no branch; a trailing top-level `(?=..)` is searched as plain
  text (fancy-regex 0.19 `src/compile.rs` `compile_concat`, `src/optimize.rs` `optimize_trailing_lookahead`).
"""

from __future__ import annotations

from typing import Any

import pytest
import regex as mrab

from _flags import condition, flag, prop
from analytics_nb.flags import evaluate_flag
from analytics_nb.flags._backtrack import BACKTRACK_LIMIT, LimitExceeded, compile_program
from analytics_nb.flags._regex import compile_pattern


def _value(operator: str, pattern: str, text: str) -> Any:
    return evaluate_flag(
        flag("f", condition(prop("p", pattern, operator))), "u", person_properties={"p": text}
    ).value


def test_the_limit_is_the_services() -> None:
    assert BACKTRACK_LIMIT == 10_000


def test_fancy_regex_limit_one_is_hit() -> None:
    """fancy-regex tests/finding.rs `find_iter_collect_when_backtrack_limit_hit`: `(x+x+)+(?>y)` with
    `backtrack_limit(1)` on "xxxxxxxxxxy" is an error."""
    program = compile_program("(x+x+)+(?>y)", limit=1)
    assert not isinstance(program, str)
    with pytest.raises(LimitExceeded):
        program.search("xxxxxxxxxxy")
    assert compile_program("(x+x+)+(?>y)").search("xxxxxxxxxxy") is True  # type: ignore[union-attr]


def test_fancy_regex_limit_hit_when_not_seeking() -> None:
    """fancy-regex tests/matching.rs `backtrack_limit_hit_when_not_seeking`: `(?i)(a|b|ab)*(?>c)` on
    "abab...ab" (56 chars) exhausts even 100,000 steps (seek off, fancy-regex's default)."""
    program = compile_program(r"(?i)(a|b|ab)*(?>c)", limit=100_000)
    with pytest.raises(LimitExceeded):
        program.search("ab" * 28)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("pattern", "text"),
    [
        (r"(?i)(a|b|ab)*(?>c)", "ab" * 28),
        (r"^(a|aa)+$(?<=b)", "a" * 30 + "c"),
        (r"(a|a)*(?=x)y", "a" * 20),
        (r"^(\w+\s?)*$(?<=x)", "a" * 25),
    ],
)
def test_catastrophic_patterns_exhaust_and_answer_as_the_service(pattern: str, text: str) -> None:
    """Past the limit the filter does not match, for `regex` and `not_regex` alike (the old time-bounded
    engine answered `not_regex` True on the first case: the `regex` module finds no match quickly)."""
    assert compile_pattern(pattern).search(text) is None  # type: ignore[union-attr]
    assert _value("regex", pattern, text) is False
    assert _value("not_regex", pattern, text) is False


def test_the_bound_is_a_count_not_a_clock() -> None:
    """The same pattern and text exhaust or not by the count alone: 16 a's finish, 18 do not. (`(a|aa)+`,
    not `(a+)+`: fancy_regex rewrites a repeat of a repeat into one, see `test_nested_repeats_*`.)"""
    program = compile_program(r"^(a|aa)+(?=b)c")
    assert program.search("a" * 16 + "!") is False  # type: ignore[union-attr]
    with pytest.raises(LimitExceeded):
        program.search("a" * 18 + "!")  # type: ignore[union-attr]


SANE = [
    (r"^(?!test).*@example\.com$", ["a@example.com", "test@example.com", "x@example.co", "a@example.com\n"]),
    (r"foo(?=bar)", ["foobar", "foobaz"]),
    (r"(?<=a)b", ["ab", "cb"]),
    (r"(?<!a)b", ["ab", "cb", "b"]),
    (r"^(a)\1$", ["aa", "ab"]),
    (r"(\w+)\s\1", ["hello hello", "hello world"]),
    (r"(?i)(ab)\1", ["abAB", "abcd"]),
    (r"(?<=ab|c)d", ["abd", "cd", "bd"]),
    (r"\b(?=\w)x", ["a x", "ax"]),
    (r"(?<=é)b", ["éb", "eb"]),
    (r"(?i)(?<!X)y", ["xy", "zy"]),
    (r"^(?=.*\d)(?=.*[a-z]).{8,}$", ["abc12345", "abcdefgh", "12345678"]),
    (r"(?>a+)b", ["aaab", "aaa"]),
    (r"^(?:(?!admin)[a-z])+$", ["user", "xadminx", "Admin"]),
    (r"(a|ab)(?=c)\1?", ["abc", "ac", "abd"]),
    (r"^(?!.*(.).*\1)[a-z]{3,}$", ["abc", "abca", "ab"]),
    (r"(?m)^b(?=$)", ["a\nb", "a\nbc"]),
    (r"[[:digit:]]+(?!px)", ["12px", "12em"]),
]


@pytest.mark.parametrize(("pattern", "texts"), SANE)
def test_sane_look_arounds_answer(pattern: str, texts: list[str]) -> None:
    """Sane patterns finish well inside the limit and answer as a backtracking engine does (the `regex`
    module with Rust's `$` = end of text as the reference)."""
    python = pattern.replace("[[:digit:]]", "[0-9]")
    reference = mrab.compile(python if "(?m)" in python else python.replace("$", r"\Z"))
    compiled = compile_pattern(pattern)
    assert compiled is not None
    for text in texts:
        expected = reference.search(text) is not None
        assert compiled.search(text) is expected, (pattern, text)
        assert _value("regex", pattern, text) is expected
        assert _value("not_regex", pattern, text) is (not expected)
