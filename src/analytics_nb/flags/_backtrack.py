"""A backtracking matcher for look-around and back-references, bounded by fancy_regex's step count.

The flags service compiles `regex` / `not_regex` patterns with fancy_regex and
`backtrack_limit(REGEX_BACKTRACK_LIMIT)` = 10,000 (rust/feature-flags/src/properties/property_matching.rs);
`find` returning `Err` (the limit was hit) becomes `FlagMatchingError::InvalidRegexPattern`, which the
condition reads as "this filter does not match" (`match_property(..).unwrap_or(false)` in
flag_matching.rs), for `regex` and `not_regex` alike.

What fancy_regex counts (fancy-regex 0.19, `src/vm.rs` `run_with`): its VM keeps a stack of backtrack
branches (pushed by `Split`, the greedy/lazy repeat instructions and the unanchored-search preamble); every
time a thread fails and a branch is popped to resume, the count goes up by one, and the search fails with
`BacktrackLimitExceeded` when the count passes the limit. The program it counts over comes from
`src/compile.rs`: sub-expressions without look-around or back-references ("easy") are handed whole to the
`regex` crate as anchored *delegates* that never push a branch; in a "hard" context literals, `.`,
alternations and repetitions become VM instructions; a concatenation delegates its constant-size easy
prefix and its easy suffix; a trailing positive look-ahead at the top is first rewritten as a plain
sub-expression (`optimize_trailing_lookahead`); a pattern starting with `\\A`/`^` runs anchored (no
preamble, `can_compile_as_anchored`).

This module follows that scheme (written from a reading of those files, not a port of their code): it
parses the pattern into the same tree, marks hard / constant-size / minimum size the way `analyze.rs`
does, emits the same instruction shapes and counts pops the same way. Delegates run on `paula` (the Rust
`regex` crate) anchored at the current position. fancy_regex's tree rewrites (src/optimize.rs
`optimize_nested_repeats`, `optimize_ambiguous_concat_repeats`) are applied before counting, and word
boundaries are hard (src/lib.rs `Assertion::is_always_hard`). Known differences, so the count can differ
from the service's on some patterns (the answer differs only when one side crosses the limit and the
other does not): a delegate sees one character of left context (enough for ``\\b`` and ``^``);
case-insensitive literals whose case folding changes their length are taken as constant size.
It also reads the forms `_fancy_syntax` writes for fancy_regex's conditionals (``(?(N)T|F)``), ``(*FAIL)``,
the absent repeater ``(?~X)``, subroutine calls ``\\g<N>`` (inlined, as src/compile.rs does) and
``(?(DEFINE)...)`` (issue 34). What it does not model (recursive calls, a nested absent repeater, a
variable-length look-behind with fancy parts) raises `Unsupported`: the caller answers unknown.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import paula  # type: ignore[import-untyped]  # the Rust regex crate

#: fancy_regex's limit as the flags service sets it (property_matching.rs `REGEX_BACKTRACK_LIMIT`).
BACKTRACK_LIMIT = 10_000


class Unsupported(ValueError):
    """The pattern uses syntax this matcher does not model."""


class LimitExceeded(Exception):
    """The search popped more than `BACKTRACK_LIMIT` branches (fancy_regex's `BacktrackLimitExceeded`)."""


# ------------------------------------------------------------------------------------------------ tree


@dataclass(eq=False)
class Node:
    """One parsed expression. `kind`: lit (one char), any, leaf (a class / escape, one char), assert
    (zero width), concat, alt, group (capturing, `index`), repeat, look (`look` = ahead/ahead_neg/behind/
    behind_neg), backref (`index`), atomic, empty."""

    kind: str
    text: str = ""  # lit: the char; leaf/assert: Rust syntax; any: "s" when dotall
    casei: bool = False
    children: list[Node] = field(default_factory=list)
    index: int = 0
    lo: int = 0
    hi: int = -1  # -1: unbounded
    greedy: bool = True
    look: str = ""
    # analysis
    hard: bool = False
    const: bool = True
    min_size: int = 0


_META = set("\\.+*?()|[]{}^$#&-~")


def _render(node: Node) -> str:
    """The node as Rust `regex` syntax (flags baked into the leaves), for a delegate."""
    k = node.kind
    if k == "lit":
        body = ("\\" + node.text) if node.text in _META else node.text
        return f"(?i:{body})" if node.casei else body
    if k in ("leaf", "assert"):
        return node.text
    if k == "any":
        return {"s": "(?s:.)", "R": "(?R-s:.)"}.get(node.text, "(?-s:.)")
    if k in ("empty", "define"):
        return ""
    if k == "concat":
        return "".join(_render(c) for c in node.children)
    if k == "alt":
        return "(?:" + "|".join(_render(c) for c in node.children) + ")"
    if k == "group":
        return "(" + _render(node.children[0]) + ")"
    if k == "repeat":
        hi = "" if node.hi < 0 else str(node.hi)
        lazy = "" if node.greedy else "?"
        return "(?:" + _render(node.children[0]) + "){" + f"{node.lo},{hi}" + "}" + lazy
    raise Unsupported(f"cannot delegate {k}")


# ---------------------------------------------------------------------------------------------- parser


#: escape letter -> how many characters follow it (without braces): \\pL, \\x41, \\u0041, \\U00000041
_ESCAPE_WIDTH = {"p": 1, "P": 1, "x": 2, "u": 4, "U": 8}


def _escape_end(p: str, e: str, j: int) -> int:
    """Where the escape with letter `e` ends, `j` just after the letter: braces (`\\x{41}`, `\\p{L}`,
    `\\b{start}`) run to their `}`; other code-point and class escapes have a fixed width."""
    if e in "xuUpP" and p[j : j + 1] == "{":
        j = p.find("}", j) + 1
        if j == 0:
            raise Unsupported("escape")
        return j
    if e == "b" and p[j : j + 1] == "{":
        return p.find("}", j) + 1
    return j + _ESCAPE_WIDTH.get(e, 0)


class _Parser:
    def __init__(self, pattern: str) -> None:
        self.p = pattern
        self.i = 0
        self.groups = 0
        self.names: dict[str, int] = {}
        self.backrefs: set[int] = set()
        self.tested: set[int] = set()  # groups a conditional tests (`(?(1)...)`)

    def parse(self) -> Node:
        node = self._alt({"i": False, "m": False, "s": False, "U": False, "R": False})
        if self.i != len(self.p):
            raise Unsupported("unbalanced parenthesis")
        groups = {n.index: n for n in _preorder(node) if n.kind == "group"}
        budget = [_INLINE_BUDGET]
        for call in (n for n in _preorder(node) if n.kind == "call"):
            _inline(call, groups, (), budget)
        return node

    def _alt(self, flags: dict[str, bool]) -> Node:
        branches = [self._concat(flags)]
        while self.i < len(self.p) and self.p[self.i] == "|":
            self.i += 1
            branches.append(self._concat(flags))
        return branches[0] if len(branches) == 1 else Node("alt", children=branches)

    def _concat(self, flags: dict[str, bool]) -> Node:
        items: list[Node] = []
        p = self.p
        while self.i < len(p) and p[self.i] not in "|)":
            atom = self._atom(flags, items)
            if atom is None:
                continue
            items.append(self._quantified(atom, flags))
        if not items:
            return Node("empty")
        return items[0] if len(items) == 1 else Node("concat", children=items)

    def _quantified(self, atom: Node, flags: dict[str, bool]) -> Node:
        p = self.p
        while self.i < len(p) and p[self.i] in "*+?{":
            c = p[self.i]
            if c == "{":
                end = p.find("}", self.i)
                body = p[self.i + 1 : end] if end > 0 else ""
                lo_s, _, hi_s = body.partition(",")
                if end < 0 or not lo_s.strip().isdigit() or (hi_s.strip() and not hi_s.strip().isdigit()):
                    raise Unsupported("repetition")
                lo = int(lo_s)
                hi = lo if "," not in body else (int(hi_s) if hi_s.strip() else -1)
                self.i = end + 1
            else:
                lo, hi = {"*": (0, -1), "+": (1, -1), "?": (0, 1)}[c]
                self.i += 1
            lazy = self.i < len(p) and p[self.i] == "?"
            if lazy:
                self.i += 1
            elif self.i < len(p) and p[self.i] == "+":
                raise Unsupported("possessive quantifier")
            if atom.kind in ("assert", "look", "empty"):
                raise Unsupported("repeated assertion")
            atom = Node("repeat", children=[atom], lo=lo, hi=hi, greedy=lazy == flags["U"])
        return atom

    def _atom(self, flags: dict[str, bool], items: list[Node]) -> Node | None:
        c = self.p[self.i]
        if c == "(":
            return self._group(flags)
        if c == "[":
            return self._class(flags)
        if c == "\\":
            return self._escape(flags)
        self.i += 1
        if c == ".":
            return Node("any", text="s" if flags["s"] else "R" if flags["R"] else "")
        if c in "^$":
            mode = "mR" if flags["R"] else "m"
            return Node("assert", text=f"(?{mode}:{c})" if flags["m"] else r"\A" if c == "^" else r"\z")
        if c in "*+?":
            raise Unsupported("nothing to repeat")
        if c == "{" and not items:
            raise Unsupported("nothing to repeat")
        return Node("lit", text=c, casei=flags["i"] and c.lower() != c.upper())

    def _class(self, flags: dict[str, bool]) -> Node:
        p, start = self.p, self.i
        i = start + 1
        if i < len(p) and p[i] == "^":
            i += 1
        if i < len(p) and p[i] == "]":
            i += 1
        depth = 1
        while i < len(p):
            c = p[i]
            if c == "\\":
                i += 2
                continue
            if c == "[" and p[i + 1 : i + 2] == ":":
                end = p.find(":]", i + 2)
                if end > 0:
                    i = end + 2
                    continue
            if c == "[":
                depth += 1
                i += 1
                if i < len(p) and p[i] == "^":
                    i += 1
                if i < len(p) and p[i] == "]":
                    i += 1
                continue
            if c == "]":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        if depth:
            raise Unsupported("unclosed class")
        self.i = i + 1
        return Node("leaf", text=self._flagged(p[start : i + 1], flags))

    @staticmethod
    def _flagged(text: str, flags: dict[str, bool]) -> str:
        return f"(?i:{text})" if flags["i"] else text

    def _escape(self, flags: dict[str, bool]) -> Node:
        p, start = self.p, self.i
        if start + 1 >= len(p):
            raise Unsupported("trailing backslash")
        e = p[start + 1]
        if e.isdigit() and e != "0":
            j = start + 1
            while j < len(p) and p[j].isdigit():
                j += 1
            self.i = j
            return self._backref(int(p[start + 1 : j]), flags)
        if e == "k" and p[start + 2 : start + 3] == "<":
            return self._named_backref(flags)
        if e == "g" and p[start + 2 : start + 3] == "<":  # `_fancy_syntax` writes every call as \g<N>
            end = p.index(">", start)
            self.i = end + 1
            return Node("call", index=int(p[start + 3 : end]))
        self.i = _escape_end(p, e, start + 2)
        return self._escape_node(e, p[start : self.i], flags)

    def _named_backref(self, flags: dict[str, bool]) -> Node:
        """`\\k<name>` or `\\k<1>`: a back-reference by group name or number."""
        p, start = self.p, self.i
        end = p.find(">", start)
        name = p[start + 3 : end]
        self.i = end + 1
        if name.isdigit():
            return self._backref(int(name), flags)
        if name not in self.names:
            raise Unsupported("unknown group name")
        return self._backref(self.names[name], flags)

    def _escape_node(self, e: str, text: str, flags: dict[str, bool]) -> Node:
        """The node of one escape `text` (escaped letter `e`): an assertion, a literal, a class or code
        point for the regex module, or unsupported."""
        if e in "bBAz<>" or (e == "b" and "{" in text):
            return Node("assert", text=text)
        if e in "dDsSwWpPxuU" or not e.isalnum():
            if not e.isalnum() and not e.isspace() and e not in "dDsSwW":
                return Node("lit", text=e, casei=flags["i"] and e.lower() != e.upper())
            return Node("leaf", text=self._flagged(text, flags))
        if e in "nrtfva":
            return Node("leaf", text=text)
        raise Unsupported(f"escape \\{e}")

    def _backref(self, group: int, flags: dict[str, bool]) -> Node:
        """A back-reference; one to a later group (`\\1(a)`) is valid to fancy_regex (the resolver only
        checks the number exists, which `_fancy_syntax` did) and fails until that group has matched."""
        self.backrefs.add(group)
        return Node("backref", index=group, casei=flags["i"])

    def _group(self, flags: dict[str, bool]) -> Node | None:
        """A parenthesised form, read from its `(`: the forms only `_fancy_syntax` writes (`(*FAIL)`,
        `(?(DEFINE)...)`, a conditional, the absent repeater), a capture group, or a `(?...)` form."""
        p = self.p
        self.i += 1
        if p.startswith("*FAIL)", self.i):
            self.i += 6
            return Node("fail")
        if p.startswith("?(DEFINE)", self.i):
            self.i += 9
            return Node("define", children=[self._closed_alt(dict(flags))])
        if p.startswith("?(", self.i):
            self.i += 2
            return self._conditional(flags)
        if p.startswith("?~", self.i):  # the absent repeater (`_fancy_syntax` writes no other absent form)
            self.i += 2
            return Node("absent", children=[self._closed_alt(dict(flags))])
        if not p.startswith("?", self.i):
            self.groups += 1  # numbered before the groups inside it
            index = self.groups
            return Node("group", children=[self._closed_alt(dict(flags))], index=index)
        return self._question_group(flags)

    def _closed_alt(self, flags: dict[str, bool]) -> Node:
        """A group's alternation and its closing `)`, which must be there (else Unsupported)."""
        child = self._alt(flags)
        if self.i >= len(self.p) or self.p[self.i] != ")":
            raise Unsupported("unclosed group")
        self.i += 1
        return child

    def _question_group(self, flags: dict[str, bool]) -> Node | None:
        """A group opened by `(?`: a look-around, an atomic group, a named group, or flags (see
        `_flag_group`); kept apart from `_group` so each reads as one choice."""
        p = self.p
        for prefix, look in (("=", "ahead"), ("!", "ahead_neg"), ("<=", "behind"), ("<!", "behind_neg")):
            if p.startswith(prefix, self.i + 1):
                self.i += 1 + len(prefix)
                return Node("look", children=[self._closed_alt(dict(flags))], look=look)
        if p.startswith(">", self.i + 1):
            self.i += 2
            return Node("atomic", children=[self._closed_alt(dict(flags))])
        if p.startswith(("P<", "<"), self.i + 1):
            end = p.find(">", self.i)
            name = p[self.i + (3 if p.startswith("P", self.i + 1) else 2) : end]
            self.groups += 1
            index = self.groups
            self.names[name] = index
            self.i = end + 1
            return Node("group", children=[self._closed_alt(dict(flags))], index=index)
        return self._flag_group(flags)

    def _flag_group(self, flags: dict[str, bool]) -> Node | None:
        """`(?flags)`, which sets `flags` for the rest of the enclosing group (None: no node), or
        `(?flags:...)`, whose flags hold inside it only (its alternation, as a plain group)."""
        p = self.p
        inner_flags = dict(flags)
        j = self.i + 1
        on = True
        while j < len(p) and p[j] not in ":)":
            f = p[j]
            if f == "-":
                on = False
            elif f in "imsUR":
                inner_flags[f] = on
            elif f != "u":
                raise Unsupported(f"flag {f}")
            j += 1
        if j >= len(p):
            raise Unsupported("unclosed group")
        self.i = j + 1
        if p[j] == ")":  # (?flags): applies to the rest of the enclosing group
            flags.update(inner_flags)
            return None
        return self._closed_alt(inner_flags)

    def _conditional(self, flags: dict[str, bool]) -> Node:
        """What `_fancy_syntax` writes for fancy_regex's conditionals (src/parse.rs `parse_conditional`):
        ``(?(N))`` a bare group-exists test, ``(?(N)T|F)``, ``(?(*FAIL)T|F)`` or ``(?((?:C))T|F)``."""
        p = self.p
        if p[self.i].isdigit():
            end = p.index(")", self.i)
            test = Node("exists", index=int(p[self.i : end]))
            self.tested.add(test.index)
            self.i = end + 1
            if p.startswith(")", self.i):
                self.i += 1
                return test
        elif p.startswith("*FAIL)", self.i):
            self.i += 6
            test = Node("fail")
        else:
            condition = self._atom(flags, [])
            if condition is None or not p.startswith(")", self.i):
                raise Unsupported("conditional")
            self.i += 1
            test = condition
        true = self._concat(flags)
        if not p.startswith("|", self.i):
            raise Unsupported("conditional")
        self.i += 1
        false = self._concat(flags)
        if not p.startswith(")", self.i):
            raise Unsupported("conditional")
        self.i += 1
        return Node("cond", children=[test, true, false])


#: Nodes the inlined copies of subroutine calls may add before the pattern counts as not modelled (calls
#: of calls double at each level: `(a)(\\g<1>\\g<1>)(\\g<2>\\g<2>)...`).
_INLINE_BUDGET = 20_000


def _inline(call: Node, groups: dict[int, Node], calling: tuple[int, ...], budget: list[int]) -> None:
    """src/compile.rs `Expr::SubroutineCall`: a call compiles as a copy of the called group's body that
    captures into that group. A recursive call (a group calling itself, directly or not, or the whole
    pattern, `\\g<0>`) is not modelled: fancy_regex unrolls it 20 levels deep
    (`MAX_SUBROUTINE_RECURSION_DEPTH`) and checks left recursion, which this matcher does not follow."""
    target = groups.get(call.index)
    if target is None or call.index in calling:
        raise Unsupported("a recursive subroutine call")
    body = copy.deepcopy(target.children[0])
    nodes = _preorder(body)
    budget[0] -= len(nodes)
    if budget[0] < 0:
        raise Unsupported("subroutine calls expanding past 20,000 nodes")
    for inner in (n for n in nodes if n.kind == "call"):
        _inline(inner, groups, (*calling, call.index), budget)
    call.children = [body]


# -------------------------------------------------------------------------------------------- analysis


def _analyse(node: Node, backrefs: set[int]) -> None:
    """hard / const / min_size as fancy_regex's analyze.rs defines them."""
    for c in node.children:
        _analyse(c, backrefs)
    measure = _MEASURES.get(node.kind)
    if measure is not None:
        node.hard, node.const, node.min_size = measure(node, node.children, backrefs)


def _concat_measure(node: Node, ch: list[Node], backrefs: set[int]) -> tuple[bool, bool, int]:
    return any(c.hard for c in ch), all(c.const for c in ch), sum(c.min_size for c in ch)


def _alt_measure(node: Node, ch: list[Node], backrefs: set[int]) -> tuple[bool, bool, int]:
    const = all(c.const and c.min_size == ch[0].min_size for c in ch)
    return any(c.hard for c in ch), const, min(c.min_size for c in ch)


def _assert_measure(node: Node, ch: list[Node], backrefs: set[int]) -> tuple[bool, bool, int]:
    # fancy-regex 0.19 src/lib.rs `Assertion::is_always_hard`: word boundaries always run on its VM
    return node.kind == "assert" and is_word_boundary(node.text), True, 0


#: node kind -> (hard, const, min_size) from the node and its analysed children
_MEASURES: dict[str, Callable[[Node, list[Node], set[int]], tuple[bool, bool, int]]] = {
    "lit": lambda node, ch, backrefs: (False, True, 1),
    "any": lambda node, ch, backrefs: (False, True, 1),
    "leaf": lambda node, ch, backrefs: (False, True, 1),
    "assert": _assert_measure,
    "empty": _assert_measure,
    "concat": _concat_measure,
    "alt": _alt_measure,
    "group": lambda node, ch, backrefs: (ch[0].hard or node.index in backrefs, ch[0].const, ch[0].min_size),
    "repeat": lambda node, ch, backrefs: (
        ch[0].hard,
        ch[0].const and node.lo == node.hi,
        ch[0].min_size * node.lo,
    ),
    "look": lambda node, ch, backrefs: (True, True, 0),
    "atomic": lambda node, ch, backrefs: (True, ch[0].const, ch[0].min_size),
    "backref": lambda node, ch, backrefs: (True, False, 0),
    # fancy-regex 0.19 src/analyze.rs: a group-exists test and a verb are hard and of constant size 0; a
    # conditional is hard, its size the test's plus the smaller branch's, constant when test + true
    # branch and false branch are constant and as long
    "exists": lambda node, ch, backrefs: (True, True, 0),
    "fail": lambda node, ch, backrefs: (True, True, 0),
    "absent": lambda node, ch, backrefs: (True, False, 0),
    # src/analyze.rs: a subroutine call is hard and as long as the group it calls; a DEFINE group is easy,
    # empty and of constant size
    "call": lambda node, ch, backrefs: (True, ch[0].const, ch[0].min_size),
    "define": lambda node, ch, backrefs: (False, True, 0),
    "cond": lambda node, ch, backrefs: (
        True,
        all(c.const for c in ch) and ch[0].min_size + ch[1].min_size == ch[2].min_size,
        ch[0].min_size + min(ch[1].min_size, ch[2].min_size),
    ),
}


#: (lo, hi) of `?`, `*`, `+` (hi -1: unbounded), the only shapes fancy_regex's nested-repeat rewrite reads.
_SIMPLE = {(0, 1): "?", (0, -1): "*", (1, -1): "+"}


def _merge_nested_repeats(node: Node) -> Node:
    """fancy_regex 0.19's `optimize_nested_repeats` (src/optimize.rs), bottom-up: a greedy `?`/`*`/`+`
    directly around another greedy `?`/`*`/`+`, or around a capture group holding one, becomes one
    repeat: `+` of `+` stays `+`, `?` of `?` stays `?`, every other pair is `*` (`^(a*)*\\1$` runs as
    `^(a*)\\1$`). This is what keeps the service's step count linear on such patterns."""
    node.children = [_merge_nested_repeats(c) for c in node.children]
    if node.kind != "repeat" or not node.greedy or (node.lo, node.hi) not in _SIMPLE:
        return node
    child = node.children[0]
    inner = child.children[0] if child.kind == "group" else child
    if inner.kind != "repeat" or not inner.greedy or (inner.lo, inner.hi) not in _SIMPLE:
        return node
    pair = _SIMPLE[(inner.lo, inner.hi)] + _SIMPLE[(node.lo, node.hi)]
    lo, hi = {"++": (1, -1), "??": (0, 1)}.get(pair, (0, -1))
    merged = Node("repeat", children=[inner.children[0]], lo=lo, hi=hi, greedy=True)
    if child.kind == "group":
        child.children = [merged]
        return child
    return merged


def _unbounded(node: Node) -> bool:
    """A greedy `*` or `+` (`is_unbounded_simple_repeat`)."""
    return node.kind == "repeat" and node.greedy and node.hi < 0 and node.lo in (0, 1)


def _same(a: Node, b: Node) -> bool:
    """Structural equality as fancy_regex compares `Expr`s (a group's number is its position, not a field)."""
    if (a.kind, a.text, a.casei, a.lo, a.hi, a.greedy, a.look) != (
        b.kind,
        b.text,
        b.casei,
        b.lo,
        b.hi,
        b.greedy,
        b.look,
    ):
        return False
    return len(a.children) == len(b.children) and all(
        _same(x, y) for x, y in zip(a.children, b.children, strict=True)
    )


def _concat_windows(children: list[Node]) -> list[Node]:
    """`rewrite_concat_repeat_windows`: `X* Y? X*` (Y's repeat starting at 0) becomes `X* (Y{1,..} X*)?` or,
    when only the right X repeats at least once, `(X* Y{1,..})? X+`, so the two X runs stop competing."""
    out = list(children)
    ix = 0
    while ix + 2 < len(out):
        left, middle, right = out[ix : ix + 3]
        if not (
            _unbounded(left)
            and _unbounded(right)
            and middle.kind == "repeat"
            and middle.lo == 0
            and middle.hi != 0
            and _same(left.children[0], right.children[0])
        ):
            ix += 1
            continue
        mandatory = Node("repeat", children=middle.children, lo=1, hi=middle.hi, greedy=middle.greedy)
        if left.lo < right.lo:
            head = Node("concat", children=[Node("repeat", children=left.children, lo=left.lo), mandatory])
            out[ix : ix + 3] = [Node("repeat", children=[head], lo=0, hi=1), right]
        else:
            tail = Node("concat", children=[mandatory, right])
            prefix = Node("repeat", children=left.children, lo=left.lo)
            out[ix : ix + 3] = [prefix, Node("repeat", children=[tail], lo=0, hi=1)]
        ix += 2
    return out


def _repeated_concat(node: Node) -> Node:
    """`check_repeated_concat` / `build_repeated_concat`: `(X* (Y X*)?)*` (outer `*` or `+`) becomes
    `(X* (Y X*)*)?` (`*`) or `X* (Y X*)*` (`+`)."""
    if not (node.kind == "repeat" and node.greedy and node.hi < 0 and node.lo in (0, 1)):
        return node
    child = node.children[0]
    if child.kind != "concat" or len(child.children) != 2:
        return node
    prefix, optional = child.children
    if not (optional.kind == "repeat" and optional.greedy and optional.lo == 0 and optional.hi == 1):
        return node
    tail = optional.children[0]
    if tail.kind != "concat" or len(tail.children) != 2:
        return node
    right = tail.children[1]
    if not (_unbounded(prefix) and _unbounded(right) and _same(prefix.children[0], right.children[0])):
        return node
    core = Node("concat", children=[prefix, Node("repeat", children=[tail], lo=0, hi=-1)])
    return core if node.lo == 1 else Node("repeat", children=[core], lo=0, hi=1)


def _merge_ambiguous_repeats(node: Node) -> Node:
    """fancy-regex 0.19 src/optimize.rs `optimize_ambiguous_concat_repeats`, bottom-up."""
    node.children = [_merge_ambiguous_repeats(c) for c in node.children]
    if node.kind == "concat":
        node.children = _concat_windows(node.children)
    return _repeated_concat(node)


def is_word_boundary(text: str) -> bool:
    """Whether an assertion is a word boundary (``\\b``, ``\\B``, ``\\<``, ``\\>``, ``\\b{start}``...)."""
    return text[:2] in ("\\b", "\\B", "\\<", "\\>")


def has_word_boundary(source: str) -> bool:
    """Whether plain `regex` syntax (as `_fancy_syntax.rewrite` writes it, where a class holds no ``\\b``)
    has a word-boundary assertion."""
    i, n = 0, len(source)
    while i < n - 1:
        if source[i] == "\\":
            if source[i + 1] in "bB<>":
                return True
            i += 2
        else:
            i += 1
    return False


def _is_literal(node: Node) -> bool:
    if node.kind == "lit":
        return not node.casei
    return node.kind == "concat" and all(_is_literal(c) for c in node.children)


def _literal_text(node: Node) -> str:
    return node.text if node.kind == "lit" else "".join(_literal_text(c) for c in node.children)


# -------------------------------------------------------------------------------------------- compiler

# instructions: tuples (op, a, b); ops are small ints for speed
LIT, ANY, ANYNL, DELEGATE, SPLIT, JMP, SAVE, RESTORE, REP_GR, REP_NG, REP_EPS_GR, REP_EPS_NG = range(12)
GOBACK, FAIL_NEG, BACKREF, BEGIN_ATOMIC, END_ATOMIC, LOOKBEHIND, SAVE0, END, UNANCHORED = range(12, 21)
EXISTS, FAIL, ANYNCRLF, DELEGATE_CAPTURES, ABSENT = 21, 22, 23, 24, 25


class _Compiler:
    def __init__(self, groups: int, tested: set[int] | None = None) -> None:
        self.prog: list[list[Any]] = []
        self.nslots = 2 * (groups + 1)
        self.tested = tested or set()

    def newslot(self) -> int:
        self.nslots += 1
        return self.nslots - 1

    def add(self, *insn: Any) -> int:
        self.prog.append(list(insn))
        return len(self.prog) - 1

    def delegate(self, nodes: list[Node]) -> None:
        if not nodes:
            return
        if all(_is_literal(n) for n in nodes):
            text = "".join(_literal_text(n) for n in nodes)
            if text:
                self.add(LIT, text)
            return
        body = "".join(_render(n) for n in nodes)
        if not body:
            return
        try:
            start = paula.Regex(r"\A(?:" + body + ")")
            after = paula.Regex(r"\A(?s:.)(?:" + body + ")")
        except ValueError as exc:
            raise Unsupported(f"delegate {body!r}: {exc}") from None
        groups = [g.index for n in nodes for g in _preorder(n) if g.kind == "group"]
        if self.tested.intersection(groups):
            # src/vm.rs `store_capture_groups`: a delegate records the groups it matched, which a
            # conditional's group-exists test reads
            self.add(DELEGATE_CAPTURES, start, after, tuple(groups))
            return
        self.add(DELEGATE, start, after)

    def visit(self, node: Node, hard: bool) -> None:
        if not hard and not node.hard:
            self.delegate([node])
            return
        k = node.kind
        if k == "lit":
            if node.casei:
                self.delegate([node])
            else:
                self.add(LIT, node.text)
        elif k == "any":
            self.add({"s": ANY, "R": ANYNCRLF}.get(node.text, ANYNL))
        elif k in ("leaf", "assert"):
            self.delegate([node])
        elif k == "concat":
            self.concat(node, hard)
        elif k == "alt":
            self.alt(node.children, lambda c: self.visit(c, hard))
        elif k == "group":
            self.add(SAVE, 2 * node.index)
            self.visit(node.children[0], hard)
            self.add(SAVE, 2 * node.index + 1)
        elif k == "repeat":
            self.repeat(node, hard)
        elif k == "look":
            self.lookaround(node)
        elif k == "backref":
            self.add(BACKREF, 2 * node.index, node.casei)
        elif k == "atomic":
            self.add(BEGIN_ATOMIC)
            self.visit(node.children[0], False)
            self.add(END_ATOMIC)
        elif k == "exists":
            self.add(EXISTS, 2 * node.index)
        elif k == "fail":
            self.add(FAIL)
        elif k == "cond":
            self.conditional(node, hard)
        elif k == "absent":
            self.absent(node.children[0], hard)
        elif k == "call":  # the called group's body, captured into that group
            self.add(SAVE, 2 * node.index)
            self.visit(node.children[0], hard)
            self.add(SAVE, 2 * node.index + 1)

    def absent(self, inner: Node, hard: bool) -> None:
        """src/compile.rs `Expr::Absent(Absent::Repeater)`: an easy body is one `AbsentRepeater` delegate
        (src/vm.rs: advance one character at a time, pushing a branch each time, until the body matches
        here or the text ends); a hard one is expanded to ``(?((?!body))\\O|)*``
        (`compile_hard_absent_repeater`). A nested absent repeater does not compile there."""
        if any(n.kind == "absent" for n in _preorder(inner)):
            raise Unsupported("a nested absent repeater")
        if not inner.hard:
            body = _render(inner)
            try:
                start = paula.Regex(r"\A(?:" + body + ")")
                after = paula.Regex(r"\A(?s:.)(?:" + body + ")")
            except ValueError as exc:
                raise Unsupported(f"absent {body!r}: {exc}") from None
            self.add(ABSENT, start, after)
            return
        test = Node("look", children=[inner], look="ahead_neg")
        step = Node("cond", children=[test, Node("any", text="s"), Node("empty")])
        _analyse(step, set())
        self.repeat(Node("repeat", children=[step], lo=0, hi=-1, hard=True), hard)

    def conditional(self, node: Node, hard: bool) -> None:
        """src/compile.rs `compile_conditional`: the test runs inside an atomic section behind a split to
        the false branch, so a test that passed is never retried and a failed one costs one backtrack."""
        test, true, false = node.children
        self.add(BEGIN_ATOMIC)
        split = self.add(SPLIT, len(self.prog) + 1, -1)
        self.visit(test, hard)
        self.add(END_ATOMIC)
        self.visit(true, hard)
        jump = self.add(JMP, -1)
        self.prog[split][2] = len(self.prog)
        self.visit(false, hard)
        self.prog[jump][1] = len(self.prog)

    def concat(self, node: Node, hard: bool) -> None:
        ch = node.children
        prefix = 0
        while prefix < len(ch) and ch[prefix].const and not ch[prefix].hard:
            prefix += 1
        suffix = 0
        for c in reversed(ch[prefix:]):
            if c.hard or (hard and not c.const):
                break
            suffix += 1
        begin = len(ch) - suffix
        self.delegate(ch[:prefix])
        for c in ch[prefix:begin]:
            self.visit(c, True)
        self.delegate(ch[begin:])

    def alt(self, branches: list[Node], visit: Callable[[Node], None]) -> None:
        jumps: list[int] = []
        last_split = -1
        for i, branch in enumerate(branches):
            has_next = i != len(branches) - 1
            pc = len(self.prog)
            if has_next:
                self.add(SPLIT, pc + 1, -1)
            if last_split >= 0:
                self.prog[last_split][2] = pc
            last_split = pc
            visit(branch)
            if has_next:
                jumps.append(self.add(JMP, -1))
        for j in jumps:
            self.prog[j][1] = len(self.prog)

    def repeat(self, node: Node, hard: bool) -> None:
        child, lo, hi, greedy = node.children[0], node.lo, node.hi, node.greedy
        if lo == 0 and hi == 0:
            return
        if lo == 0 and hi == 1:
            pc = self.add(SPLIT, -1, -1)
            self.visit(child, hard)
            nxt = len(self.prog)
            self.prog[pc][1:] = [pc + 1, nxt] if greedy else [nxt, pc + 1]
            return
        hard = hard or node.hard
        if hi < 0 and child.min_size == 0:
            repeat, check = self.newslot(), self.newslot()
            self.add(SAVE0, repeat)
            pc = self.add(REP_EPS_GR if greedy else REP_EPS_NG, lo, -1, repeat, check)
            self.visit(child, hard)
            self.add(JMP, pc)
            self.prog[pc][2] = len(self.prog)
        elif lo == 0 and hi < 0:
            pc = self.add(SPLIT, -1, -1)
            self.visit(child, hard)
            self.add(JMP, pc)
            nxt = len(self.prog)
            self.prog[pc][1:] = [pc + 1, nxt] if greedy else [nxt, pc + 1]
        elif lo == 1 and hi < 0:
            pc = len(self.prog)
            self.visit(child, hard)
            nxt = len(self.prog) + 1
            self.add(SPLIT, *((pc, nxt) if greedy else (nxt, pc)))
        else:
            repeat = self.newslot()
            self.add(SAVE0, repeat)
            pc = self.add(REP_GR if greedy else REP_NG, lo, hi, -1, repeat)
            self.visit(child, hard)
            self.add(JMP, pc)
            self.prog[pc][3] = len(self.prog)

    def lookaround(self, node: Node) -> None:
        inner, look = node.children[0], node.look
        if look in ("behind", "behind_neg") and not inner.const and inner.kind == "alt":
            if look == "behind":
                self.alt(inner.children, lambda c: self.look_one(c, look))
            else:
                for c in inner.children:
                    self.look_one(c, look)
            return
        self.look_one(inner, look)

    def look_one(self, inner: Node, look: str) -> None:
        if look in ("ahead", "behind"):
            slot = self.newslot()
            self.add(SAVE, slot)
            self.look_inner(inner, look)
            self.add(RESTORE, slot)
        else:
            pc = self.add(SPLIT, pc_next := len(self.prog) + 1, -1)
            self.look_inner(inner, look)
            self.add(FAIL_NEG)
            self.prog[pc][1:] = [pc_next, len(self.prog)]

    def look_inner(self, inner: Node, look: str) -> None:
        if look.startswith("behind"):
            if inner.const:
                self.add(GOBACK, inner.min_size)
                self.visit(inner, False)
            elif not inner.hard:
                try:
                    behind = paula.Regex("(?:" + _render(inner) + r")\z")
                except ValueError as exc:
                    raise Unsupported(f"look-behind: {exc}") from None
                self.add(LOOKBEHIND, behind)
            else:
                raise Unsupported("variable-length look-behind with fancy features")
        else:
            self.visit(inner, False)


# ---------------------------------------------------------------------------------------------- program


@dataclass(frozen=True)
class Program:
    """A compiled hard pattern: `search(text)` is True/False, or raises `LimitExceeded`."""

    code: tuple[tuple[Any, ...], ...]
    nslots: int
    limit: int

    def search(self, text: str) -> bool:
        return _run(self.code, self.nslots, text, self.limit)


def compile_program(pattern: str, limit: int = BACKTRACK_LIMIT) -> Program | str:
    """The pattern's VM program or, when it has no look-around / back-reference once fancy_regex's
    trailing look-ahead rewrite is applied, the rewritten pattern text for the `regex` crate (fancy_regex
    hands such a pattern to it whole, unbounded). Raises `Unsupported` for syntax not modelled here."""
    parser = _Parser(pattern)
    tree = parser.parse()
    # optimize_trailing_lookahead: `X(?=Y)` at the top searches like `XY`
    if tree.kind == "concat" and tree.children[-1].kind == "look" and tree.children[-1].look == "ahead":
        tree.children[-1] = tree.children[-1].children[0]
    elif tree.kind == "look" and tree.look == "ahead":
        tree = tree.children[0]
    tree = _merge_ambiguous_repeats(_merge_nested_repeats(tree))
    _analyse(tree, parser.backrefs)
    if not tree.hard:
        return _render(tree)
    c = _Compiler(parser.groups, parser.tested)
    first = tree.children[0] if tree.kind == "concat" else tree
    anchored = first.kind == "assert" and first.text == r"\A"
    if not anchored:
        pc = len(c.prog)
        c.add(UNANCHORED, pc + 3, pc + 1)
        c.add(ANY)
        c.add(JMP, pc)
    c.visit(tree, False)
    c.add(END)
    return Program(tuple(tuple(i) for i in c.prog), c.nslots, limit)


def _run(code: tuple[tuple[Any, ...], ...], nslots: int, text: str, limit: int) -> bool:
    """The VM. A branch is (pc, ix, slots, atomic-marks); each pop after a failure is one step."""
    n = len(text)
    slots: list[int] = [-1] * nslots
    marks: tuple[int, ...] = ()
    stack: _Stack = []
    steps = 0
    pc = ix = 0
    while True:
        ok = True
        while ok:
            insn = code[pc]
            op = insn[0]
            if op == LIT:
                s: str = insn[1]
                if text.startswith(s, ix):
                    ix += len(s)
                    pc += 1
                else:
                    ok = False
            elif op == DELEGATE:
                if ix == 0:
                    m = insn[1].find(text)
                    end = _chars(text, 0, m.end) if m is not None else -1
                else:
                    sub = text[ix - 1 :]
                    m = insn[2].find(sub)
                    end = ix - 1 + _chars(sub, 0, m.end) if m is not None else -1
                if end < 0:
                    ok = False
                else:
                    ix = end
                    pc += 1
            elif op == SPLIT:
                stack.append((insn[2], ix, slots[:], marks))
                pc = insn[1]
            elif op == JMP:
                pc = insn[1]
            elif op in (ANY, ANYNL):
                if ix < n and (op == ANY or text[ix] != "\n"):
                    ix += 1
                    pc += 1
                else:
                    ok = False
            elif op == SAVE:
                slots[insn[1]] = ix
                pc += 1
            elif op == RESTORE:
                ix = slots[insn[1]]
                pc += 1
            elif op == SAVE0:
                slots[insn[1]] = 0
                pc += 1
            elif op == UNANCHORED:
                if ix > n:
                    return False
                stack.append((insn[2], ix, slots[:], marks))
                pc = insn[1]
            elif op == END:
                return True
            elif op <= REP_EPS_NG:  # the four repeat instructions
                pc = _repeat(insn, pc, ix, slots, marks, stack)
            else:
                state = _rare(insn, pc, ix, slots, marks, stack, text)
                if state is None:
                    ok = False
                else:
                    pc, ix, marks = state
        if not stack:
            return False
        steps += 1
        if steps > limit:
            raise LimitExceeded
        pc, ix, slots, marks = stack.pop()


_Stack = list[tuple[int, int, list[int], tuple[int, ...]]]


def _repeat(
    insn: tuple[Any, ...], pc: int, ix: int, slots: list[int], marks: tuple[int, ...], stack: _Stack
) -> int:
    """fancy_regex's RepeatGr / RepeatNg (a counted repeat) and RepeatEpsilonGr / RepeatEpsilonNg (an
    unbounded repeat of something that may match empty, stopped when an iteration consumed nothing);
    returns the next pc."""
    op = insn[0]
    if op in (REP_GR, REP_NG):
        _, lo, hi, nxt, rep = insn
        count = slots[rep]
        if count == hi:
            return int(nxt)
        slots[rep] = count + 1
    else:
        _, lo, nxt, rep, check = insn
        count = slots[rep]
        if count > 0 and slots[check] == ix:
            return int(nxt)
        slots[rep] = count + 1
        if count >= lo:
            slots[check] = ix
    if count >= lo:
        if op in (REP_GR, REP_EPS_GR):
            stack.append((nxt, ix, slots[:], marks))
        else:
            stack.append((pc + 1, ix, slots[:], marks))
            return int(nxt)
    return pc + 1


def _rare(
    insn: tuple[Any, ...],
    pc: int,
    ix: int,
    slots: list[int],
    marks: tuple[int, ...],
    stack: _Stack,
    text: str,
) -> tuple[int, int, tuple[int, ...]] | None:
    """The instructions only look-behind, negative look-around, back-references and atomic groups use:
    the next (pc, ix, marks), or None when the thread fails."""
    op = insn[0]
    if op == GOBACK:
        back: int = insn[1]
        return None if back > ix else (pc + 1, ix - back, marks)
    if op == FAIL_NEG:
        _drop_look_around(stack, pc + 1)
        return None
    if op == BACKREF:
        return _backref_step(insn, pc, ix, slots, marks, text)
    if op == BEGIN_ATOMIC:
        return pc + 1, ix, (*marks, len(stack))
    if op == END_ATOMIC:
        del stack[marks[-1] :]
        return pc + 1, ix, marks[:-1]
    if op == LOOKBEHIND:
        return None if insn[1].find(text[:ix]) is None else (pc + 1, ix, marks)
    if op == EXISTS:  # src/vm.rs `BackrefExistsCondition`: the group's start slot is set
        return None if slots[insn[1]] < 0 else (pc + 1, ix, marks)
    if op == FAIL:
        return None
    if op == ABSENT:
        return _absent_step(insn, pc, ix, slots, marks, stack, text)
    if op == DELEGATE_CAPTURES:
        return _delegate_captures(insn, pc, ix, slots, marks, text)
    if op == ANYNCRLF:  # src/vm.rs `AnyNoCRLF`
        return (pc + 1, ix + 1, marks) if ix < len(text) and text[ix] not in "\r\n" else None
    raise AssertionError(op)  # pragma: no cover - every op is handled


def _drop_look_around(stack: _Stack, target: int) -> None:
    """FAIL_NEG: the negative look-around's body matched, so drop every thread it pushed, down to and
    including the one at `target` (the thread past the look-around), uncounted."""
    while stack[-1][0] != target:
        stack.pop()
    stack.pop()


def _backref_step(
    insn: tuple[Any, ...], pc: int, ix: int, slots: list[int], marks: tuple[int, ...], text: str
) -> tuple[int, int, tuple[int, ...]] | None:
    """BACKREF: the text the group captured, matched again here (case-folded under `(?i)`, see
    `_fold_equal`); the thread fails when the group has not matched or the text differs."""
    lo_ix, hi_ix = slots[insn[1]], slots[insn[1] + 1]
    if lo_ix < 0 or hi_ix < 0:
        return None
    ref = text[lo_ix:hi_ix]
    got = text[ix : ix + len(ref)]
    if got == ref or (insn[2] and len(got) == len(ref) and _fold_equal(got, ref)):
        return pc + 1, ix + len(ref), marks
    return None


def _absent_step(
    insn: tuple[Any, ...],
    pc: int,
    ix: int,
    slots: list[int],
    marks: tuple[int, ...],
    stack: _Stack,
    text: str,
) -> tuple[int, int, tuple[int, ...]]:
    """ABSENT (src/vm.rs `AbsentRepeater`, see `_Compiler.absent`): the repeater stops when its body
    matches here or the text ends; elsewhere it pushes a thread that stops here and takes one character."""
    context = 1 if ix > 0 else 0
    if (insn[2] if context else insn[1]).find(text[ix - context :]) is not None or ix >= len(text):
        return pc + 1, ix, marks
    stack.append((pc + 1, ix, slots[:], marks))
    return pc, ix + 1, marks


def _fold_equal(got: str, ref: str) -> bool:
    """src/vm.rs `matches_literal_casei`: the window is as many UTF-8 bytes as the captured text, and each
    character equals its counterpart under simple case folding (`chars_fold_equal`), so `ſ` (2 bytes)
    never stands for `s` (1 byte) and `ß` never for `ss`."""
    if got.isascii() and ref.isascii():
        return got.lower() == ref.lower()
    if len(got.encode()) != len(ref.encode()):
        return False
    return all(a == b or _simple_fold(a) == _simple_fold(b) for a, b in zip(got, ref, strict=True))


def _simple_fold(char: str) -> str:
    folded = char.casefold()
    return folded if len(folded) == 1 else char.lower()


def _preorder(node: Node) -> list[Node]:
    out = [node]
    for c in node.children:
        out.extend(_preorder(c))
    return out


def _delegate_captures(
    insn: tuple[Any, ...], pc: int, ix: int, slots: list[int], marks: tuple[int, ...], text: str
) -> tuple[int, int, tuple[int, ...]] | None:
    """A delegate holding a group some conditional tests: as DELEGATE, and each group it matched is
    marked as set (its slots get the current position; only whether it is set is ever read)."""
    context = 1 if ix > 0 else 0
    found = (insn[2] if context else insn[1]).captures(text[ix - context :])
    if found is None:
        return None
    for number, got in zip(insn[3], found[1:], strict=False):
        if got is not None:
            slots[2 * number] = slots[2 * number + 1] = ix
    return pc + 1, ix - context + len(found[0]), marks


def _chars(text: str, start: int, byte_end: int) -> int:
    """Characters in the first `byte_end` UTF-8 bytes of `text[start:]` (paula reports byte offsets)."""
    if text.isascii():
        return byte_end
    return len(text[start:].encode("utf-8")[:byte_end].decode("utf-8"))
