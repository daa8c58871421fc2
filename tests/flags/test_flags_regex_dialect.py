"""Regex dialect (issue 28): the service compiles `regex` / `not_regex` with fancy_regex, which hands every
pattern without look-around or back-references to the Rust `regex` crate (rust/feature-flags/src/properties/
property_matching.rs: `RegexBuilder::new(...).backtrack_limit(REGEX_BACKTRACK_LIMIT)`, an invalid pattern
answers `Ok(false)` for both operators). The engine now hands the pattern text to that crate unchanged
(`paula`, regex 1.12 / regex-syntax 0.8); `rurex`, used before, parsed with Python's `re` rules first.

Service facts (the regex crate's syntax, regex-syntax 0.8 `ast/parse.rs` and its docs):

| pattern | Rust `regex` | before (Python rules) |
| --- | --- | --- |
| `a(?i)b` | valid: flags apply from there on ("aB" matches, "AB" not) | refused (Python: "global flags") |
| `(?a)\\w` | error: unrecognized flag | accepted (Python's ASCII flag) |
| `a{,3}` | fancy_regex's parser (issue 34): `a{0,3}` | refused |
| `[[:alpha:]]+` | POSIX class inside a bracket | same |
| `[a-z&&[^aeiou]]` | class intersection (consonants) | same through rurex |
| `[a-z--b]` | class difference | same through rurex |
| `[\\b]` | fancy_regex's parser (issue 34): a backspace | refused |

Issue 34: fancy_regex parses the pattern itself before the `regex` crate sees it (fancy-regex 0.19
`src/parse.rs`), so `a{,3}` and `[\\b]` are valid in the service; see `test_flags_fancy_syntax.py`.
"""

from __future__ import annotations

import pytest

from _flags import condition, flag, prop
from analytics_nb.flags import evaluate_flags
from analytics_nb.flags._regex import compile_pattern

CASES = [
    # pattern, value, regex answer (None: invalid, both operators False)
    ("a(?i)b", "aB", True),
    ("a(?i)b", "AB", False),
    ("(?i)a(?-i)b", "Ab", True),
    ("(?i)a(?-i)b", "AB", False),
    (r"(?a)\w", "x", None),
    ("a{,3}", "aaa", True),
    ("[[:alpha:]]+", "1", False),
    ("[[:alpha:]]+", "x", True),
    ("[a-z&&[^aeiou]]", "a", False),
    ("[a-z&&[^aeiou]]", "b", True),
    ("[a-z--b]", "b", False),
    ("[a-z--b]", "c", True),
    (r"[\b]", "\b", True),
    (r"\pL+$", "é", True),
    ("^(a+)+$", "a" * 40 + "b", False),
]


@pytest.mark.parametrize(("pattern", "value", "want"), CASES)
@pytest.mark.parametrize("mode", ["server", "sdk"])
def test_service_dialect(pattern: str, value: str, want: bool | None, mode: str) -> None:
    if want is None:
        assert compile_pattern(pattern) is None
    matches = flag("f", condition(prop("p", pattern, "regex")))
    regex = evaluate_flags([matches], "u", person_properties={"p": value}, mode=mode)["f"]  # type: ignore[arg-type]
    differs = flag("f", condition(prop("p", pattern, "not_regex")))
    negated = evaluate_flags([differs], "u", person_properties={"p": value}, mode="server")["f"]
    if mode == "server":
        assert regex.value is (want is True)
        assert negated.value is (want is False)
    elif regex.value is not None:
        # sdk mode: where the SDK runs the pattern itself it must agree with the service's dialect here
        assert regex.value is (want is True)
