"""Server-mode regex as fancy_regex reads it (issue 34), and its nested-repeat rewrite.

Service facts: the flags service compiles `regex` / `not_regex` with `fancy_regex::RegexBuilder`
(PostHog/posthog rust/feature-flags/src/properties/property_matching.rs, `Regex | NotRegex` arm,
`REGEX_BACKTRACK_LIMIT` = 10,000); an invalid pattern or a search past the limit answers `false` for both
operators. fancy_regex parses the text with its own parser (fancy-regex 0.19 `src/parse.rs`) and runs
the easy parts on the `regex` crate; the rows below name the parser function each fact comes from.
`fancy_regex_cases.json` holds the pattern checks of fancy-regex 0.19's own tests
(`_fancy_regex_cases_extract.py` rebuilds it): every one must agree except the forms listed in `KNOWN`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from _flags import condition, flag, prop
from analytics_nb.flags import evaluate_flag
from analytics_nb.flags._regex import compile_pattern

PARSE = "fancy-regex 0.19 src/parse.rs"

# (source, pattern, text, regex answer; None: the service refuses the pattern, both operators false)
CASES = [
    (f"{PARSE} parse_repeat (lo omitted)", r"^\d{,3}$", "12", True),
    (f"{PARSE} parse_repeat (lo omitted)", r"^\d{,3}$", "1234", False),
    (f"{PARSE} optional_whitespace ((?#...))", r"a(?#a comment)b", "ab", True),
    (f"{PARSE} parse_escape (\\Z)", r"ab\Z", "ab\n\n", True),
    (f"{PARSE} parse_escape (\\Z)", r"ab\Z", "abc", False),
    (f"{PARSE} parse_escape (\\N)", r"a\Nb", "axb", True),
    (f"{PARSE} parse_escape (\\N)", r"a\Nb", "a\nb", False),
    (f"{PARSE} parse_escape (\\G: where the search starts)", r"\Gab", "abc", True),
    (f"{PARSE} parse_escape (\\G: where the search starts)", r"\Gab", "cab", False),
    (f"{PARSE} parse_quantifier (hi < lo; regex-automata c_bounded: lo copies)", r"xa{2,1}", "xaa", True),
    (f"{PARSE} parse_quantifier (hi < lo; regex-automata c_bounded: lo copies)", r"xa{2,1}", "xab", False),
    (f"{PARSE} parse_group / Resolver (duplicate names)", r"(?<n>a)(?<n>b)", "ab", True),
    (f"{PARSE} Resolver resolve_target (last group of the name)", r"(?<n>a)(?<n>b)\k<n>", "abb", True),
    (f"{PARSE} Resolver resolve_target (last group of the name)", r"(?<n>a)(?<n>b)\k<n>", "aba", False),
    (f"{PARSE} parse_branch (one quantifier per atom)", "a**", "aa", None),
    (f"{PARSE} parse_branch (one quantifier per atom)", "a{2}*", "aa", None),
    (f"{PARSE} parse_atom ('{{' after a repeat is a literal)", "a{2}{3}", "aa{3}", True),
    (f"{PARSE} parse_quantifier (invalid repeat: literal '{{')", "a{x", "a{x", True),
    (f"{PARSE} parse_class / parse_escape (\\b in a class: backspace)", r"[\b]", "a\b", True),
    (f"{PARSE} parse_class / parse_escape (\\b in a class: backspace)", r"[\b]", "ab", False),
    (f"{PARSE} parse_escape (escaped non-letter)", r"\/\é", "/é", True),
    (f"{PARSE} parse_escape (unknown escaped letter)", r"\q", "q", None),
    (f"{PARSE} parse_escape (\\e)", r"\e", "\x1b", True),
    (f"{PARSE} parse_escape (\\h)", r"^\h+$", "0fA", True),
    (f"{PARSE} parse_flags (a bare (?i) is not undone by the group's end)", r"(a(?i)b)c", "aBC", True),
    (f"{PARSE} remap_unicode_property_if_necessary", r"^\p{alnum}+$", "a1š", True),
    (f"{PARSE} remap_unicode_property_if_necessary", r"\p{blank}", "a_b", False),
    (f"{PARSE} optional_whitespace (verbose mode)", "(?x) a b  # comment", "ab", True),
    (f"{PARSE} parse_word_boundary_brace (verbose mode)", "(?x) \\b { s t a r t } a", "a", True),
    (f"{PARSE} parse_hex (verbose mode)", "(?x) \\u { 0 0 4 1 } b", "Ab", True),
    # issue 34: the forms modelled since (tests/matching.rs rows of fancy-regex 0.19 where noted)
    (f"{PARSE} parse_conditional; src/compile.rs compile_conditional", r"(a)?b(?(1)c|d)", "bd", True),
    (f"{PARSE} parse_conditional; src/compile.rs compile_conditional", r"(a)?b(?(1)c|d)", "bc", False),
    (f"{PARSE} parse_conditional (a name)", r"(?<g>a)?b(?(<g>)c|d)", "abc", True),
    (f"{PARSE} parse_conditional (an expression test)", r"^(?(ab)c|d)$", "abc", True),
    (f"{PARSE} parse_conditional (an expression test)", r"^(?(ab)c|d)$", "abd", False),
    (f"{PARSE} parse_conditional (a test alone; src/vm.rs store_capture_groups)", r"(a)(?(1))", "a", True),
    (f"{PARSE} parse_conditional (a test alone)", r"(a)(b)?(?(2))", "a", False),
    (f"{PARSE} parse_conditional (the condition is parsed as a pattern)", r"(?(?=\d)\w|!)", "5", None),
    (f"{PARSE} parse_backtracking_control_verb", r"a(*FAIL)|b", "ab", True),
    (f"{PARSE} parse_backtracking_control_verb", r"a(*F)", "a", False),
    ("fancy-regex 0.19 src/compile.rs (verbs other than FAIL do not compile)", r"a(*ACCEPT)", "a", None),
    (
        f"{PARSE} parse_absent; src/compile.rs compile_hard_absent_repeater",
        r"^(`{3,})(?~\1)\1$",
        "```a```",
        True,
    ),
    (
        f"{PARSE} parse_absent; src/compile.rs compile_hard_absent_repeater",
        r"^(`{3,})(?~\1)\1$",
        "```a``",
        False,
    ),
    (f"{PARSE} parse_absent; src/vm.rs AbsentRepeater", r"^(?~abc)$", "xxab", True),
    (f"{PARSE} parse_absent; src/vm.rs AbsentRepeater", r"^(?~abc)$", "xxabc", False),
    ("fancy-regex 0.19 src/compile.rs (absent stopper does not compile)", r"(?~|abc)x", "x", None),
    (f"{PARSE} parse_delimited_subroutine_call; src/compile.rs SubroutineCall", r"^(a)\g<1>$", "aa", True),
    (f"{PARSE} parse_delimited_subroutine_call; src/compile.rs SubroutineCall", r"^(a)\g<1>$", "ab", False),
    (f"{PARSE} parse_delimited_subroutine_call (forward, by name)", r"\g<n>(?<n>a)", "aa", True),
    (f"{PARSE} parse_delimited_subroutine_call (relative)", r"^(a)(.)\g<-1>$", "abc", True),
    (f"{PARSE} parse_unrestricted_subroutine_call ((?P>name))", r"^(?<n>a|b)(?P>n)$", "ab", True),
    (f"{PARSE} parse_conditional (DEFINE)", r"^(?(DEFINE)(?<w>\w+))\g<w>$", "hello", True),
    (f"{PARSE} parse_conditional (DEFINE)", r"^(?(DEFINE)(?<w>\w+))\g<w>$", "hello world", False),
    ("fancy-regex 0.19 src/analyze.rs (SubroutineCallTargetNotFound)", r"\g<nope>(a)", "a", None),
    (f"{PARSE} Resolver resolve_target (a number may point forward)", r"^(?:\1b|(a))+$", "aab", True),
    (f"{PARSE} Resolver resolve_target (a number may point forward)", r"^(?:\1b|(a))+$", "ab", False),
    (f"{PARSE} parse_flags (R); src/vm.rs AnyNoCRLF", r"(?R)(?=).", "\r", False),
    (f"{PARSE} parse_flags (R); src/vm.rs AnyNoCRLF", r"(?R)(?=).", "a", True),
    ("fancy-regex 0.19 src/vm.rs matches_literal_casei (window in bytes)", r"(s)(?i:\1)", "sſ", False),
    ("fancy-regex 0.19 src/vm.rs matches_literal_casei (simple folding)", r"(s)(?i:\1)", "sS", True),
]


def _answer(operator: str, pattern: str, text: str) -> object:
    definition = flag("f", condition(prop("p", pattern, operator)))
    return evaluate_flag(definition, "u", person_properties={"p": text}).value


@pytest.mark.parametrize(("source", "pattern", "text", "want"), CASES)
def test_server_mode_reads_patterns_as_fancy_regex(
    source: str, pattern: str, text: str, want: object
) -> None:
    assert _answer("regex", pattern, text) is (want is True), source
    assert _answer("not_regex", pattern, text) is (want is False), source


# Rows of the table that only check fancy_regex's *parser* ("accepted") for forms its analysis or compiler
# then refuses: `Regex::new`, which the service calls, fails, so the service's answer is "invalid" (both
# operators false), and the engine must refuse them too.
REFUSED_AFTER_PARSING = {
    "back-reference at a recursion level (src/analyze.rs: FeatureNotYetSupported)": re.compile(
        r"\\k<\w*[+-]\d"
    ),
    "verb other than (*FAIL) (src/compile.rs: FeatureNotYetSupported)": re.compile(
        r"\(\*(ACCEPT|COMMIT|SKIP|PRUNE)\)"
    ),
    "absent expression, stopper or range clear (src/compile.rs: FeatureNotYetSupported)": re.compile(
        r"\(\?~\|"
    ),
    "property name regex-syntax does not know (the delegate does not build)": re.compile(r"^\\pä$"),
}

ROWS = json.loads((Path(__file__).parent / "fancy_regex_cases.json").read_text(encoding="utf-8"))


def _agrees(pattern: str, text: str | None, want: object) -> bool:
    compiled = compile_pattern(pattern)
    if want == "accepted" and any(shape.search(pattern) for shape in REFUSED_AFTER_PARSING.values()):
        want = "refused"
    if want == "refused":
        return compiled is None
    if want == "accepted":
        return compiled is not None
    return compiled is not None and compiled.search(text or "") is want


def test_fancy_regex_own_pattern_checks() -> None:
    """The 597 checks of fancy-regex 0.19's tests all agree with what the service's `Regex::new` +
    `is_match` answer: 584 as the table states them, plus 13 parse-only rows for forms refused after
    parsing (before issue 34: 339, then 496). One parse-only row holds a recursive subroutine call, which
    the engine accepts but answers unknown when matching (see `test_an_unmodelled_form_is_unknown_...`)."""
    disagree = [(w, p, t, want) for w, p, t, want in ROWS if not _agrees(p, t, want)]
    assert not disagree, disagree
    assert len(ROWS) == 597


def test_nested_repeat_reaches_the_limit_where_the_service_does() -> None:
    """fancy-regex 0.19 src/optimize.rs `optimize_nested_repeats`: `^(a*)*\\1$` runs as `^(a*)\\1$`, so the
    10,000-step limit is reached near 10,000 characters, not at 12 (before issue 34 here)."""
    pattern = r"^(a*)*\1$"
    assert _answer("not_regex", pattern, "a" * 12 + "b") is True
    assert _answer("not_regex", pattern, "a" * 9_000 + "b") is True
    assert _answer("not_regex", pattern, "a" * 10_500 + "b") is False  # past the limit: no answer, false
    assert _answer("regex", pattern, "a" * 12) is True


@pytest.mark.parametrize(
    ("pattern", "text"),
    [(r"^(a+)+$(?<=x)", "a" * 40 + "b"), (r"^(?:a?)*$(?<=x)", "a" * 40 + "b")],
)
def test_nested_repeats_merge_into_one(pattern: str, text: str) -> None:
    """`+` of `+` is `+`; `*` of `?` is `*` (`can_simplify`): linear, an answer instead of the limit."""
    assert compile_pattern(pattern).search(text) is False  # type: ignore[union-attr]


def test_word_boundaries_count_steps_as_the_service() -> None:
    """fancy-regex 0.19 src/lib.rs `Assertion::is_always_hard`: a word boundary always runs on fancy_regex's
    VM, so `\\bfoo` searched through 11,000 characters without "foo" (one step per start position) runs
    out of steps: no match for `regex` and `not_regex` (before issue 34 the engine answered True here)."""
    text = ("ab " * 4000)[:11_000]
    assert _answer("not_regex", r"\bfoo", text) is False
    assert _answer("regex", r"\bfoo", text) is False
    assert _answer("not_regex", r"\bfoo", text[:9_000]) is True
    assert _answer("regex", r"\bab\b", text) is True  # found at the start: no steps spent
    assert _answer("not_regex", r"\bfoo\b", "a foo b") is False


@pytest.mark.parametrize(
    ("pattern", "text"),
    [(r"^(?:a*b?a*)+$(?<=x)", "a" * 3000 + "!"), (r"^a*b?a*c(?<=x)", "a" * 1000 + "!")],
)
def test_ambiguous_concat_repeats_are_rewritten_as_the_service(pattern: str, text: str) -> None:
    """fancy-regex 0.19 src/optimize.rs `optimize_ambiguous_concat_repeats`: `X* Y? X*` becomes
    `X* (Y X*)?` and a `*`/`+` around that `X* (Y X*)*`, so these run in linear steps (before: the limit)."""
    assert compile_pattern(pattern).search(text) is False  # type: ignore[union-attr]


def test_a_capture_group_keeps_the_ambiguous_repeat() -> None:
    """`check_repeated_concat` reads a concatenation directly under the repeat: inside a capture group
    the rewrite does not apply, so `^(a*b?a*)*$` still runs out of steps, there and here."""
    assert compile_pattern(r"^(a*b?a*)*$(?<=x)").search("a" * 30 + "!") is None  # type: ignore[union-attr]


def test_an_unclosed_word_boundary_brace_is_refused_at_once() -> None:
    """`\\b{` with no `}` is an error to fancy_regex (src/parse.rs `parse_word_boundary_brace`). The engine's
    old parser looped on it without end, growing memory (found by a random-pattern run; not re-run on the
    old code for that reason)."""
    assert compile_pattern(r"\b{\k<n>$(?#c)a") is None
    assert compile_pattern(r"x\b{start") is None


RECURSIVE = r"^(?<n>a|\(\g<n>\))$"


def test_an_unmodelled_form_is_unknown_never_a_guess() -> None:
    """A recursive subroutine call (a group calling itself) is valid to the service, which answers; the
    engine does not model recursion, so a filter on it is unknown with a reason naming the form, for
    `regex` and `not_regex`, in the dict and frame paths (before issue 34: false for both, as if the
    service refused the pattern). A False filter beside it still decides the condition."""
    import pandas as pd

    from analytics_nb.flags import evaluate_frame

    for operator in ("regex", "not_regex"):
        definition = flag("f", condition(prop("p", RECURSIVE, operator)))
        got = evaluate_flag(definition, "u", person_properties={"p": "((a))"})
        assert got.value is None and got.reason == "inconclusive", got
        assert "recursive subroutine call" in (got.description or ""), got.description
        frame = pd.DataFrame({"distinct_id": ["a", "b"], "p": ["(a)", "x"]})
        out = evaluate_frame(frame, definitions=[definition])
        assert out["f"].isna().all(), out
    both = flag("f", condition(prop("p", RECURSIVE, "regex"), prop("q", "z", "exact")))
    assert evaluate_flag(both, "u", person_properties={"p": "(a)", "q": "y"}).value is False


def test_calls_of_calls_stop_at_a_size_bound() -> None:
    """Each call inlines its group, so calls of calls double at every level; past 20,000 inlined nodes
    the pattern is answered unknown instead of building a program of millions of instructions."""
    pattern = "(a)" + "".join(f"(\\g<{i}>\\g<{i}>)" for i in range(1, 25))
    compiled = compile_pattern(pattern)
    assert compiled is not None and compiled.engine == "unknown"
    small = compile_pattern(r"^(a)(\g<1>\g<1>)(\g<2>\g<2>)$")
    assert small is not None and small.search("a" * 7) is True and small.search("a" * 6) is False


def test_an_unmodelled_regex_in_a_legacy_super_condition_is_unknown_in_frames_too() -> None:
    """Server mode, a legacy super condition (`super_groups`) on an unmodelled regex: the dict path answers
    unknown (the service's answer cannot be known); the frame path read the filter as no match and answered
    `False` (super_condition_value) before - a plausible value in place of "unknown"."""
    import pandas as pd

    from analytics_nb.flags import evaluate_frame

    definition = flag("f", condition(rollout=0), super_groups=[condition(prop("p", RECURSIVE, "regex"))])
    got = evaluate_flag(definition, "u", person_properties={"p": "((a))"})
    assert got.value is None and got.reason == "inconclusive", got
    frame = pd.DataFrame({"distinct_id": ["u", "v"], "p": ["((a))", "x"]})
    out = evaluate_frame(frame, definitions=[definition], reasons=True)
    assert out["f"].isna().all(), out
