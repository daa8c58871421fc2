"""fancy_regex's own pattern syntax, rewritten into the plain Rust `regex` syntax the engine runs.

The flags service builds every `regex` / `not_regex` pattern with `fancy_regex::RegexBuilder`
(PostHog/posthog rust/feature-flags/src/properties/property_matching.rs, `Regex | NotRegex` arm). fancy_regex
does not hand the pattern text to the `regex` crate: it parses it with its own parser (fancy-regex 0.19
`src/parse.rs`) and gives the `regex` crate the expression it built (`src/lib.rs` `Expr::to_str`,
`src/to_hir.rs`). Its parser reads some text differently from the `regex` crate's; facts from that file,
each in the function named:

* `parse_repeat`: ``a{,3}`` is ``a{0,3}``; a ``{`` that does not start a valid repeat is a literal
  (``a{x``, ``{``); `parse_quantifier`: ``a{2,1}`` is accepted (and runs as ``a{2}``: regex-automata's
  `nfa/thompson/compiler.rs` `c_bounded` compiles the ``lo`` copies and no optional ones); one quantifier
  per atom, so ``a**`` and ``a{2}*`` are errors and ``a{2}{3}`` is ``aa`` then the text ``{3}``;
  a quantifier may be followed by ``?`` (lazy) or ``+`` (possessive);
* `optional_whitespace`: ``(?#...)`` comments are skipped between any two tokens;
* `parse_escape`: ``\\Z`` (end of text or before final newlines), ``\\N`` (not a newline), ``\\G``
  (where the search starts), ``\\K``, ``\\R``, ``\\O``, ``\\h``, ``\\e``, ``\\<``/``\\>``, any escaped
  non-letter (``\\/``, ``\\é``); an escaped letter it does not know is an error; inside a class ``\\b`` is
  a backspace and ``\\A``/``\\z``/``\\k``/``\\K``/``\\G``/``\\R``/``\\B`` are the letter;
* `parse_group` / `Resolver`: ``(?<n>..)``, ``(?'n'..)``, ``(?P<n>..)`` with any name, names may repeat
  (``\\k<n>`` is the last group of that name, which must come before the reference); ``(?P=n)``;
* `parse_flags`: ``i m s U x R u`` (``-u`` is an error); a bare ``(?i)`` is not undone at the end of the
  enclosing group (only ``(?i:...)`` is scoped); ``R`` (CRLF mode) is written out on each ``.``, ``^``, ``$``;
* `parse_conditional`, `parse_backtracking_control_verb`: conditionals and ``(*FAIL)`` are written in a
  form `_backtrack` reads (see `_Scanner.conditional`); other verbs and the absent forms other than the
  repeater parse but do not compile (the service refuses them).

`rewrite(pattern)` returns the pattern in plain `regex` syntax with every flag written out where it
applies, or `None` when fancy_regex refuses it (the service then never matches); it raises `Unmodelled`
for the forms fancy_regex accepts that the engine does not model (a conditional on a group that does
not exist); subroutine calls are written ``\\g<N>`` and ``(?(DEFINE)...)`` kept for `_backtrack`.
Written from a reading of those files, not a port.
"""

from __future__ import annotations

from dataclasses import dataclass

#: fancy-regex `src/lib.rs` `MAX_RECURSION`: groups nested this deep are an error.
MAX_DEPTH = 64


class _Refused(Exception):
    """fancy_regex's parser refuses the pattern (a `ParseError`)."""


class Unmodelled(Exception):
    """fancy_regex accepts the pattern but it uses a form the engine does not run as fancy_regex does
    (the message names it): the service answers, the engine cannot say what."""


#: fancy-regex 0.19 `src/parse.rs` `parse_backtracking_control_verb`: the verbs it parses. Only `(*FAIL)`
#: / `(*F)` compile; the others are `CompileError::FeatureNotYetSupported` (`src/compile.rs` `visit`).
_VERBS = {
    "*FAIL)": True,
    "*F)": True,
    "*ACCEPT)": False,
    "*COMMIT)": False,
    "*SKIP)": False,
    "*PRUNE)": False,
}


@dataclass
class _Atom:
    """One parsed atom: its text in `regex` syntax and whether fancy_regex lets a quantifier follow it."""

    text: str
    repeatable: bool = True
    empty: bool = False


_EMPTY = _Atom("", repeatable=False, empty=True)
_SIMPLE_ESCAPES = {"a": "\x07", "f": "\x0c", "n": "\n", "r": "\r", "t": "\t", "v": "\x0b", "e": "\x1b"}
_KNOWN_LETTERS = set("kAzbB<>KGR")  # escaped letters read as the letter itself where no rule applies
_GENERAL_NEWLINE = r"(?>\r\n|[\n\x0B\x0C\r\x{85}\x{2028}\x{2029}])"


def _quote(char: str, in_class: bool = False) -> str:
    """One character as a `regex` literal (escaped when it is syntax, hex when it is a control)."""
    if ord(char) < 0x20 or ord(char) == 0x7F:
        return f"\\x{{{ord(char):X}}}"
    if char.isascii() and not char.isalnum() and not char.isspace() and char not in "_\"'`!%,/:;<=>@":
        return "\\" + char
    if in_class and char == " ":
        return char
    return char


class _Scanner:
    """One pass over a pattern with fancy_regex's grammar; methods return (next index, result)."""

    def __init__(self, pattern: str) -> None:
        self.p = pattern
        self.n = len(pattern)
        self.flags = {"i": False, "m": False, "s": False, "U": False, "x": False, "R": False}
        self.groups = 0
        self.names: dict[str, tuple[int, int]] = {}  # name -> (group number, position of its "(")
        self.refs: list[tuple[str, int, int]] = []  # (name, position, index in out) to resolve at the end
        self.max_ref = 0
        self.conditions: list[str | int] = []  # per `(?(<name>)..)` marker: a group name or number
        self.calls: list[str] = []  # subroutine-call targets given by name (must exist)
        self.unmodelled: list[str] = []  # forms fancy_regex accepts that the engine does not model
        self.compile_refused = False  # parsed, but fancy_regex's analysis / compiler refuses it

    # --------------------------------------------------------------------------------- whitespace

    def ws(self, i: int) -> int:
        """`optional_whitespace`: skip ``(?#...)`` comments (a backslash skips the next character) and, in
        verbose mode (``x``), blanks and ``#`` comments to the end of the line."""
        p = self.p
        while i < self.n:
            if self.flags["x"] and p[i] in " \r\n\t":
                i += 1
            elif self.flags["x"] and p[i] == "#":
                newline = p.find("\n", i)
                i = self.n if newline < 0 else newline + 1
            elif p.startswith("(?#", i):
                i = self._comment_end(i + 3)
            else:
                break
        return i

    def _comment_end(self, i: int) -> int:
        while True:
            if i >= self.n:
                raise _Refused("unclosed comment")
            if self.p[i] == ")":
                return i + 1
            i += 2 if self.p[i] == "\\" else 1

    # --------------------------------------------------------------------------------- structure

    def alternation(self, i: int, depth: int) -> tuple[int, str]:
        i, first = self.branch(i, depth)
        i = self.ws(i)
        if not self.p.startswith("|", i):
            return i, first
        branches = [first]
        while self.p.startswith("|", i):
            i, text = self.branch(i + 1, depth)
            branches.append(text)
            i = self.ws(i)
        return i, "(?:" + "|".join(branches) + ")"

    def branch(self, i: int, depth: int) -> tuple[int, str]:
        parts: list[str] = []
        while i < self.n:
            nxt, text = self.piece(i, depth)
            if nxt == i:
                break
            parts.append(text)
            i = nxt
        return i, "".join(parts)

    def piece(self, i: int, depth: int) -> tuple[int, str]:
        start = i
        i, atom = self.atom(i, depth)
        i = self.ws(i)
        if i >= self.n or self.p[i] not in "?*+{":
            return i, atom.text
        bounds = self.quantifier_bounds(i)
        if bounds is None:  # an invalid repeat: the "{" is read as a literal by the next atom
            return i, atom.text
        i, lo, hi = bounds
        if not atom.repeatable or (atom.empty and i > start):
            raise _Refused("target not repeatable")
        i = self.ws(i)
        lazy = self.p.startswith("?", i)
        if lazy:
            i += 1
        lazy ^= self.flags["U"]
        possessive = self.p.startswith("+", i)
        if possessive:
            i += 1
        return i, _repeat_text(atom.text, lo, hi, lazy, possessive)

    def quantifier_bounds(self, i: int) -> tuple[int, int, int | None] | None:
        """`parse_quantifier` / `parse_repeat`: (next index, lo, hi or None for unbounded), or None when a
        ``{`` does not start a valid repeat."""
        c = self.p[i]
        if c != "{":
            lo, hi = {"?": (0, 1), "*": (0, None), "+": (1, None)}[c]
            return i + 1, lo, hi
        try:
            return self._repeat(i)
        except _Refused:
            return None

    def _repeat(self, i: int) -> tuple[int, int, int | None]:
        i = self.ws(i + 1)
        lo_end = self._digits(i)
        if i >= self.n or (lo_end == i and self.p[i] != ","):
            raise _Refused("repeat")
        lo = int(self.p[i:lo_end]) if lo_end > i else 0
        i = self.ws(lo_end)
        if i >= self.n or self.p[i] not in "},":
            raise _Refused("repeat")
        hi: int | None = lo
        if self.p[i] == ",":
            i = self.ws(i + 1)
            hi_end = self._digits(i)
            hi = int(self.p[i:hi_end]) if hi_end > i else None
            i = self.ws(hi_end)
        if i >= self.n or self.p[i] != "}":
            raise _Refused("repeat")
        return i + 1, lo, hi

    def _digits(self, i: int) -> int:
        while i < self.n and self.p[i] in "0123456789":
            i += 1
        return i

    # --------------------------------------------------------------------------------- atoms

    def atom(self, i: int, depth: int) -> tuple[int, _Atom]:
        i = self.ws(i)
        if i >= self.n:
            return i, _EMPTY
        c = self.p[i]
        if c == ".":  # CRLF mode (`R`): a dot matches neither \r nor \n (fancy-regex `Insn::AnyNoCRLF`)
            dot = "(?s:.)" if self.flags["s"] else "(?R-s:.)" if self.flags["R"] else "(?-s:.)"
            return i + 1, _Atom(dot)
        if c in "^$":  # line anchors in CRLF mode also see \r (`Assertion::StartLine { crlf }`)
            mode = "mR" if self.flags["R"] else "m"
            return i + 1, _Atom(f"(?{mode}:{c})" if self.flags["m"] else c)
        if c == "(":
            return self.group(i, depth)
        if c == "\\":
            return self.escape(i)
        if c in "+*?|)":
            return i, _EMPTY
        if c == "[":
            return self.char_class(i)
        return i + 1, self.literal(c)

    def literal(self, char: str) -> _Atom:
        text = _quote(char)
        if self.flags["i"] and char.lower() != char.upper():
            text = f"(?i:{text})"
        return _Atom(text)

    def escape(self, i: int) -> tuple[int, _Atom]:
        p = self.p
        if i + 1 >= self.n:
            raise _Refused("trailing backslash")
        b, end = p[i + 1], i + 2
        if b in "0123456789":
            return self.numbered_backref(i + 1)
        if b == "k":
            return self.named_backref(end, i)
        fixed = {"A": "^", "z": "$", "<": r"\<", ">": r"\>", "O": "(?s:.)", "N": "(?-s:.)"}
        if b in fixed:
            return end, _Atom(fixed[b])
        if b == "Z":
            return end, _Atom(r"(?=\n*$)")
        if b in "bB":
            return self.word_boundary(i, b)
        if b in "dswDSW":
            return end, _Atom(f"(?i:\\{b})" if self.flags["i"] else f"\\{b}")
        if b in "hH":
            return end, _Atom("[0-9A-Fa-f]" if b == "h" else "[^0-9A-Fa-f]")
        if b in "xuU":
            return self.hex(self.ws(end), {"x": 2, "u": 4, "U": 8}[b])
        if b in "pP" and end < self.n:
            end = self.property_end(i, end)
            text = _property(p[i:end], in_class=False)
            return end, _Atom(f"(?i:{text})" if self.flags["i"] else text)
        if b == "K":
            return end, _Atom("", repeatable=False)  # keep-out moves the match start only
        if b == "G":
            return end, _Atom("^", repeatable=False)  # one search from the start: where it started
        if b == "R":
            return end, _Atom(_GENERAL_NEWLINE)
        if b == "g":
            return self.subroutine_call(end)
        return end, self.literal(self.escaped_char(i, b))

    def subroutine_call(self, i: int) -> tuple[int, _Atom]:
        """`\\g1`, `\\g<name>`, `\\g'name'`, `\\g<-1>` (src/parse.rs `parse_escape`,
        `parse_delimited_subroutine_call`), written ``\\g<N>`` with the group's number for `_backtrack`;
        a name no group has is an error (`SubroutineCallTargetNotFound`, src/analyze.rs)."""
        if i >= self.n:
            raise _Refused("\\g at the end")
        if self.p[i].isdigit():
            end = self._digits(i)
            return end, self._call(int(self.p[i:end]))
        opener = "'" if self.p[i] == "'" else "<"
        end, target = self._call_target(i, opener, ">" if opener == "<" else "'")
        return end, self._call(target)

    def _call(self, target: str | int) -> _Atom:
        """A subroutine call atom; a name is resolved at the end (forward references are allowed)."""
        if isinstance(target, int):
            return _Atom(f"\\g<{target}>")
        self.calls.append(target)
        return _Atom(f"\\g<\x02{len(self.calls) - 1}\x02>")

    def _call_target(self, i: int, opener: str, close: str) -> tuple[int, str | int]:
        """A delimited call target: (end, the name, or the group number; a relative +N / -N resolved)."""
        p = self.p
        if not p.startswith(opener, i) or self.n - i <= len(opener) + len(close):
            raise _Refused("invalid group name")
        end = p.find(close, i + len(opener))
        name = p[i + len(opener) : end] if end > 0 else ""
        if not name:
            raise _Refused("invalid group name")
        if name in ("+", "-") or (name[0] in "+-" and name[1:].isdigit()):
            if not name[1:].isdigit() or int(name[1:]) == 0 or not name[1:].isascii():
                raise _Refused("invalid relative call")
            amount = int(name)  # src/parse.rs `resolve_target`: relative to the last group opened
            number = self.groups + (amount + 1 if amount < 0 else amount)
            if number < 0:
                raise _Refused("invalid relative call")
            return end + len(close), number
        return end + len(close), int(name) if name.isdigit() and name.isascii() else name

    def escaped_char(self, i: int, b: str) -> str:
        """The character an escape outside the rules above stands for; an unknown letter is an error."""
        if b in _SIMPLE_ESCAPES:
            return _SIMPLE_ESCAPES[b]
        if b.isascii() and b.isalpha() and b not in _KNOWN_LETTERS:
            raise _Refused(f"invalid escape \\{b}")
        return b

    def property_end(self, i: int, end: int) -> int:
        if self.p[end] != "{":
            return end + 1
        close = self.p.find("}", end)
        if close < 0:
            raise _Refused("unclosed unicode name")
        return close + 1

    def word_boundary(self, i: int, b: str) -> tuple[int, _Atom]:
        end = i + 2
        check = self.ws(end)
        if self.p.startswith("{", check):
            after = self.ws(check + 1)
            if not (after < self.n and (self.p[after].isdigit() or self.p[after] == ",")):
                name, close = self.braced(check + 1)
                if b == "B" or name not in ("start", "end", "start-half", "end-half"):
                    raise _Refused("invalid word boundary")
                return close + 1, _Atom(f"\\b{{{name}}}")
        return end, _Atom("\\" + b)

    def hex(self, i: int, digits: int) -> tuple[int, _Atom]:
        p = self.p
        if i >= self.n:
            raise _Refused("invalid hex")
        if i + digits <= self.n and all(c in "0123456789abcdefABCDEF" for c in p[i : i + digits]):
            return i + digits, self.literal(_codepoint(p[i : i + digits]))
        if p[i] == "{":
            body, close = self.braced(i + 1)
            if 0 < len(body) <= 8 and all(c in "0123456789abcdefABCDEF" for c in body):
                return close + 1, self.literal(_codepoint(body))
        raise _Refused("invalid hex")

    def braced(self, i: int) -> tuple[str, int]:
        """The text up to the next ``}`` with blanks and comments skipped as `optional_whitespace` skips
        them (verbose mode: ``\\b{ s t a r t }``, ``\\u{ 0 0 3 2 }``), and the index of that ``}``."""
        chars: list[str] = []
        while True:
            i = self.ws(i)
            if i >= self.n:
                raise _Refused("unclosed brace")
            if self.p[i] == "}":
                return "".join(chars), i
            chars.append(self.p[i])
            i += 1

    def numbered_backref(self, i: int) -> tuple[int, _Atom]:
        end = self._digits(i)
        number = int(self.p[i:end])
        self.max_ref = max(self.max_ref, number)
        text = f"(?i:\\{number})" if self.flags["i"] else f"\\{number}"
        return end, _Atom(text)

    def named_backref(self, i: int, at: int) -> tuple[int, _Atom]:
        close = {"<": ">", "'": "'"}.get(self.p[i : i + 1])
        end = self.p.find(close, i + 1) if close else -1
        name = self.p[i + 1 : end] if end > 0 else ""
        if not name or not all(c.isalnum() or c in "_+-" for c in name):
            raise _Refused("invalid group name")
        if name.lstrip("+-").isdigit() and name[0] in "+-":
            number = self.groups + 1 + int(name) if name[0] == "-" else self.groups + int(name)
            if number <= 0 or int(name) == 0:
                raise _Refused("invalid backref")
            return end + 1, _Atom(f"(?i:\\{number})" if self.flags["i"] else f"\\{number}")
        if name.isdigit():
            return self.numbered_backref_text(int(name), end + 1)
        self.refs.append((name, at, 0))
        marker = f"\x00{len(self.refs) - 1}\x00"
        return end + 1, _Atom(f"(?i:{marker})" if self.flags["i"] else marker)

    def numbered_backref_text(self, number: int, end: int) -> tuple[int, _Atom]:
        self.max_ref = max(self.max_ref, number)
        return end, _Atom(f"(?i:\\{number})" if self.flags["i"] else f"\\{number}")

    # --------------------------------------------------------------------------------- classes

    def char_class(self, i: int) -> tuple[int, _Atom]:
        """`parse_class`: the class text for the `regex` crate, escapes read by fancy_regex's rules."""
        p = self.p
        i += 1
        out = ["["]
        for prefix in ("^", "]"):
            if p.startswith(prefix, i):
                out.append(prefix if prefix == "^" else r"\]")
                i += 1
        nest = 1
        while True:
            if i >= self.n:
                raise _Refused("unclosed class")
            c = p[i]
            if c == "\\":
                i = self.class_escape(i, out)
                continue
            if c == "[":
                nest += 1
                out.append("[")
                i += 1
                for prefix in ("^", "]"):
                    if p.startswith(prefix, i):
                        out.append(prefix if prefix == "^" else r"\]")
                        i += 1
                continue
            out.append(c)
            i += 1
            if c == "]":
                nest -= 1
                if nest == 0:
                    break
        text = "".join(out)
        return i, _Atom(f"(?i:{text})" if self.flags["i"] else text)

    def class_escape(self, i: int, out: list[str]) -> int:
        p = self.p
        if i + 1 >= self.n:
            raise _Refused("trailing backslash")
        b, end = p[i + 1], i + 2
        if b in "0123456789":
            raise _Refused("back-reference in a class")
        if b in "dswDSW":
            out.append("\\" + b)
            return end
        if b in "hH":
            out.append("[0-9A-Fa-f]" if b == "h" else "[^0-9A-Fa-f]")
            return end
        if b in "xuU":
            j, atom = self.hex(self.ws(end), {"x": 2, "u": 4, "U": 8}[b])
            char = _codepoint_of(atom.text)
            out.append(_quote(char, in_class=True))
            return j
        if b in "pP" and end < self.n:
            j = self.property_end(i, end)
            out.append(_property(p[i:j], in_class=True))
            return j
        char = "\x08" if b == "b" else self.escaped_char(i, b)
        out.append(_quote(char, in_class=True))
        return end

    # --------------------------------------------------------------------------------- groups

    def group(self, i: int, depth: int) -> tuple[int, _Atom]:
        """A parenthesised form from its `(` (src/parse.rs `parse_re`'s group cases): the opener picks it."""
        depth += 1
        if depth >= MAX_DEPTH:
            raise _Refused("too deep")
        at = i
        i = self.ws(i + 1)
        p = self.p
        for prefix in ("?=", "?!", "?<=", "?<!"):
            if p.startswith(prefix, i):
                return self.group_body(i + len(prefix), depth, "(" + prefix, repeatable=False)
        if p.startswith(("?<", "?'"), i) or p.startswith("?P<", i):
            return self.named_group(i, depth, at)
        if p.startswith("?P=", i):
            return self.python_backref(i + 3)
        if p.startswith("?~", i):
            return self.absent(i + 2, depth)
        if p.startswith("?(", i):
            return self.conditional(i + 2, depth)
        if p.startswith("?P>", i):
            return self.python_call(i + 3)
        if p.startswith("*", i):
            return self.verb(i)
        if p.startswith("?>", i):
            return self.group_body(i + 2, depth, "(?>")
        if p.startswith("?", i):
            return self.flag_group(i, depth)
        self.groups += 1
        return self.group_body(i, depth, "(")

    def python_backref(self, i: int) -> tuple[int, _Atom]:
        """``(?P=name)``, read from the name at `i`: a back-reference to a named (or, all digits, a
        numbered) group; the name is resolved at the end, as for `named_backref`."""
        p = self.p
        close = p.find(")", i)
        name = p[i:close] if close > 0 else ""
        if not name or not all(c.isalnum() or c == "_" for c in name):
            raise _Refused("invalid group name")
        if name.isdigit():
            return self.numbered_backref_text(int(name), close + 1)
        self.refs.append((name, i, 0))
        marker = f"\x00{len(self.refs) - 1}\x00"
        return close + 1, _Atom(f"(?i:{marker})" if self.flags["i"] else marker)

    def python_call(self, i: int) -> tuple[int, _Atom]:
        """``(?P>name)``, read from the name at `i`: a subroutine call to a named or numbered group
        (written as `subroutine_call` writes ``\\g<...>``); an empty name is an error."""
        close = self.p.find(")", i)
        if close <= i:
            raise _Refused("invalid group name")
        name = self.p[i:close]
        return close + 1, self._call(int(name) if name.isdigit() and name.isascii() else name)

    def named_group(self, i: int, depth: int, at: int) -> tuple[int, _Atom]:
        p = self.p
        start = i + (3 if p.startswith("?P<", i) else 2)
        close = ">" if p[start - 1] == "<" else "'"
        end = p.find(close, start)
        if end <= start:
            raise _Refused("invalid group name")
        self.groups += 1
        self.names[p[start:end]] = (self.groups, at)
        return self.group_body(end + 1, depth, "(")

    def group_body(self, i: int, depth: int, opener: str, repeatable: bool = True) -> tuple[int, _Atom]:
        i, inner = self.alternation(i, depth)
        i = self.ws(i)
        if i >= self.n or self.p[i] != ")":
            raise _Refused("expected close paren")
        return i + 1, _Atom(opener + inner + ")", repeatable=repeatable)

    def flag_group(self, i: int, depth: int) -> tuple[int, _Atom]:
        """`parse_flags`: ``(?flags)`` changes the flags from here on; ``(?flags:...)`` inside only."""
        start = i + 1
        i, neg, old = start, False, dict(self.flags)
        while True:
            i = self.ws(i)
            if i >= self.n:
                raise _Refused("unclosed group")
            c = self.p[i]
            if c in "imsUxR":
                self.flags[c] = not neg
            elif c == "u":
                if neg:
                    raise _Refused("changing unicode mode")
            elif c == "-" and not neg:
                neg = True
            elif c == ")" and i != start and not (neg and i == start + 1):
                return i + 1, _EMPTY_ADVANCED
            elif c == ":" and not (neg and i == start + 1):
                j, inner = self.alternation(i + 1, depth)
                if j >= self.n or self.p[j] != ")":
                    raise _Refused("expected close paren")
                self.flags = old
                return j + 1, (_Atom("(?:" + inner + ")") if inner else _EMPTY_ADVANCED)
            else:
                raise _Refused("unknown flag")
            i += 1

    # --------------------------------------------------------------------------------- fancy forms

    def verb(self, i: int) -> tuple[int, _Atom]:
        """`parse_backtracking_control_verb`: ``(*FAIL)`` / ``(*F)`` fail here (written ``(*FAIL)``); the
        other verbs parse but do not compile; anything else is an error."""
        for text, compiles in _VERBS.items():
            if self.p.startswith(text, i):
                self.compile_refused |= not compiles
                return i + len(text), _Atom("(*FAIL)", repeatable=False)
        raise _Refused("unknown verb")

    def absent(self, i: int, depth: int) -> tuple[int, _Atom]:
        """`parse_absent`: ``(?~|absent|exp)``, ``(?~|absent)`` and ``(?~|)`` parse but do not compile
        (src/compile.rs: "Absent expression / stopper", "Range clear"); the repeater ``(?~absent)`` is
        written as such for `_backtrack`."""
        if i >= self.n:
            raise _Refused("unclosed group")
        if self.p[i] != "|":
            i, text = self.alternation(i, depth)
            return self.close_paren(i), _Atom(f"(?~{text})")
        i, _ = self.branch(i + 1, depth)
        if i < self.n and self.p[i] == "|":
            i, _ = self.branch(i + 1, depth)
            i = self.close_paren(i)
        elif i < self.n and self.p[i] == ")":
            i += 1
        else:
            raise _Refused("expected | or ) in an absent expression")
        self.compile_refused = True
        return i, _Atom("(?:)")

    def close_paren(self, i: int) -> int:
        """`check_for_close_paren`."""
        i = self.ws(i)
        if i >= self.n or self.p[i] != ")":
            raise _Refused("expected close paren")
        return i + 1

    def conditional(self, i: int, depth: int) -> tuple[int, _Atom]:
        """`parse_conditional` (i just after ``(?(``): a group-exists test (``(?(1)``, ``(?(<n>)``,
        ``(?('n')``, ``(?(-1)``), a verb, ``DEFINE`` or any expression, then the branches: the first
        alternative runs when the test passes, the others (an alternation) when it fails. Written for
        `_backtrack` as ``(?(N)T|F)``, ``(?(*FAIL)T|F)`` or ``(?((?:C))T|F)``; a bare test as ``(?(N))``."""
        p = self.p
        if i >= self.n:
            raise _Refused("unclosed group")
        if p.startswith("DEFINE)", i):  # groups to call, matching nothing here
            j, text = self.alternation(i + 7, depth)
            return self.close_paren(j), _Atom(f"(?(DEFINE){text})")
        b = p[i]
        target = b in "'<+-" or b.isdigit()
        if target:
            close = {"'": "')", "<": ">)"}.get(b, ")")
            nxt, head = self.condition_target(i + (b in "'<"), close)
        elif b == "*":
            nxt, _ = self.verb(i)
            head = "(?(*FAIL)"
        else:
            j, text = self.alternation(i, depth)
            nxt, head = self.close_paren(j), f"(?((?:{text}))"
        branches: list[str] = []
        end = nxt
        while True:
            end, text = self.branch(end, depth)
            branches.append(text)
            end = self.ws(end)
            if not p.startswith("|", end):
                break
            end += 1
        if end == nxt and not target:
            raise _Refused("a conditional needs a branch")
        end = self.close_paren(end)
        if len(branches) == 1 and not branches[0]:  # no branch: the test alone
            if target:
                return end, _Atom(head + ")", repeatable=False)
            return end, _Atom(head[3:-1] if b != "*" else "(*FAIL)", repeatable=b != "*")
        false = branches[1] if len(branches) == 2 else "(?:" + "|".join(branches[1:]) + ")"
        return end, _Atom(f"{head}{branches[0]}|{false})")

    def condition_target(self, i: int, close: str) -> tuple[int, str]:
        """`parse_condition_target` / `parse_id`: a name or number, or a relative +N / -N, then `close`;
        a recursion level (``(?(n+1)``) parses but does not compile (src/compile.rs)."""
        p = self.p
        j = i
        while j < self.n and (p[j].isalnum() or p[j] == "_"):
            j += 1
        ident = p[i:j]
        if ident and p.startswith(close, j):
            target: str | int = int(ident) if ident.isdigit() and ident.isascii() else ident
            return self._condition_marker(target, j + len(close))
        k = self._digits(j + 1) if j < self.n and p[j] in "+-" else j
        if k == j + 1 or k == j or not p.startswith(close, k):
            raise _Refused("invalid group name")
        amount = int(p[j + 1 : k]) * (-1 if p[j] == "-" else 1)
        if ident:  # a recursion level
            self.compile_refused = True
            return k + len(close), "(?(0)"
        if amount == 0:
            raise _Refused("invalid group name")
        number = self.groups + (amount + 1 if amount < 0 else amount)
        if number < 0:
            raise _Refused("invalid relative group")
        return self._condition_marker(number, k + len(close))

    def _condition_marker(self, target: str | int, end: int) -> tuple[int, str]:
        self.conditions.append(target)
        return end, f"(?(\x01{len(self.conditions) - 1}\x01)"

    # --------------------------------------------------------------------------------- names

    def resolve(self, text: str) -> str:
        """Named back-references as numbers: the last group of that name, which must come first."""
        for k, (name, at, _) in enumerate(self.refs):
            target = self.names.get(name)
            if target is None or target[1] >= at:
                raise _Refused("invalid named back-reference")
            text = text.replace(f"\x00{k}\x00", f"\\{target[0]}")
            self.max_ref = max(self.max_ref, target[0])
        for k, name in enumerate(self.calls):
            if name not in self.names:
                raise _Refused("subroutine call to a group that does not exist")
            text = text.replace(f"\x02{k}\x02", str(self.names[name][0]))
        for k, cond in enumerate(self.conditions):
            number = cond if isinstance(cond, int) else self.names.get(cond, (None, 0))[0]
            if number is None:
                raise _Refused("condition on a group that does not exist")
            if not 0 < number <= self.groups:
                self.unmodelled.append("a condition on a group that does not exist")
            text = text.replace(f"\x01{k}\x01", str(number))
        return text


#: `(?i)` and friends: nothing to match, and nothing a quantifier may follow.
_EMPTY_ADVANCED = _Atom("", repeatable=False, empty=True)


#: `remap_unicode_property_if_necessary` (Unicode mode, the service's): POSIX-style names as classes; for
#: each name (positive, negated) outside a class, and the text put inside a class when positive.
_PROPERTIES = {
    "alnum": (r"[\p{alpha}\p{digit}]", r"[^\p{alpha}\p{digit}]", r"\p{alpha}\p{digit}"),
    "blank": (r"[\p{Zs}\x09]", r"[^\p{Zs}\x09]", r"\p{Zs}\x09"),
    "cntrl": (r"[\x00-\x1F\x7F-\x9F]", r"[^\x00-\x1F\x7F-\x9F]", r"\x00-\x1F\x7F-\x9F"),
    "word": (r"\w", r"\W", r"\w"),
    "graph": (r"[^\p{White_Space}\p{C}]", r"[\p{White_Space}\p{C}]", r"[^\p{White_Space}\p{C}]"),
    "print": (r"[^\p{C}\t\n\v\f\r]", r"[\p{C}\t\n\v\f\r]", r"[^\p{C}\t\n\v\f\r]"),
    "cs": (r"\P{any}", r"\p{any}", r"\P{any}"),
}


def _property(text: str, in_class: bool) -> str:
    """`\\p{..}` / `\\P{..}` as fancy_regex hands it on: ``^`` negates, POSIX-style names become classes,
    other names are lowercased (fancy-regex 0.19 src/parse.rs `remap_unicode_property_if_necessary`)."""
    if not text.endswith("}") or text[2:3] != "{":
        return text
    negated, name = text[1] == "P", text[3:-1]
    if name.startswith("^"):
        negated, name = not negated, name[1:]
    forms = _PROPERTIES.get(name.lower())
    if forms is None:
        return ("\\P{" if negated else "\\p{") + name.lower() + "}"
    if negated:
        return forms[1]
    return forms[2] if in_class else forms[0]


def _codepoint(hex_digits: str) -> str:
    value = int(hex_digits, 16)
    if value > 0x10FFFF or 0xD800 <= value <= 0xDFFF:
        raise _Refused("invalid code point")
    return chr(value)


def _codepoint_of(text: str) -> str:
    """The one character a literal atom's text stands for (its quoting undone)."""
    if text.startswith("(?i:"):
        text = text[4:-1]
    if text.startswith("\\x{"):
        return chr(int(text[3:-1], 16))
    return text[-1]


def _repeat_text(text: str, lo: int, hi: int | None, lazy: bool, possessive: bool) -> str:
    if hi is not None and hi < lo:
        hi = lo  # `{2,1}`: regex-automata's Thompson compiler (`c_bounded`) emits the `lo` copies only
    upper = "" if hi is None else str(hi)
    quantified = f"(?:{text}){{{lo},{upper}}}" + ("?" if lazy else "")
    return f"(?>{quantified})" if possessive else quantified


def rewrite(pattern: str) -> str | None:
    """The pattern in plain `regex` syntax as fancy_regex reads it; None when fancy_regex refuses it;
    the pattern itself for the forms left to the engine's other paths."""
    scanner = _Scanner(pattern)
    try:
        i, text = scanner.alternation(0, 0)
        if i < len(pattern):
            raise _Refused("end of string not reached")
        text = scanner.resolve(text)
    except _Refused:
        return None
    if scanner.max_ref > scanner.groups:
        return None  # a back-reference to a group that does not exist
    if scanner.unmodelled:
        raise Unmodelled(scanner.unmodelled[0])
    if scanner.compile_refused:
        return None
    return text
