"""Hog syntax checked by PostHog's own parser (`hogql-parser` on PyPI, the `hog` extra).

PostHog compiles a function's Hog with `compile_hog` (`products/cdp/backend/api/hog_function.py`): the
program is parsed, and a parse failure is the 400 `{"attr": "hog", "detail": "Hog code has errors."}`.
A call to a function the type does not support (`fetch()` in a transformation) is *not* an error there: the
compiler records it and the code is saved (PostHog's own `test_hog_function.py` creates such a
transformation with 201). So the sandbox asks the parser, and nothing else, whether Hog is valid.

The parser's C extension imports `posthog.hogql.ast` / `errors` / `base` from PostHog's monorepo when it
loads, though its `*_json` functions never use them; those names are provided as empty stand-ins only while
it loads (and removed after, so the `posthog` SDK, if installed, is left as it was).
"""

from __future__ import annotations

import json
import sys
import types
from functools import cache
from typing import Any

__all__ = ["available", "syntax_error"]

_STANDINS = ("posthog.hogql", "posthog.hogql.ast", "posthog.hogql.errors", "posthog.hogql.base")


def _standin(name: str) -> types.ModuleType:
    module = types.ModuleType(name)

    def __getattr__(attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return type(attr, (Exception,), {})

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    return module


@cache
def _parser() -> Any:
    """The `hogql_parser` module, or None when it is not installed."""
    added = [name for name in ("posthog", *_STANDINS) if name not in sys.modules]
    parent = sys.modules.get("posthog")
    for name in added:
        module = _standin(name)
        if name != _STANDINS[-1]:
            module.__path__ = []
        sys.modules[name] = module
    try:
        import hogql_parser
    except ImportError:
        return None
    finally:
        for name in added:
            sys.modules.pop(name, None)
        standin = getattr(parent, "hogql", None) if parent is not None else None
        if isinstance(standin, types.ModuleType) and getattr(standin, "__file__", None) is None:
            delattr(parent, "hogql")
    return hogql_parser


def available() -> bool:
    """Whether PostHog's parser is installed (`pip install 'analytics-nb[hog]'`)."""
    return _parser() is not None


def syntax_error(source: str) -> str | None:
    """The parser's message when `source` is not a Hog program, else None. Raises RuntimeError when the
    parser is not installed (callers check `available()`)."""
    parser = _parser()
    if parser is None:
        raise RuntimeError("hogql-parser is not installed: pip install 'analytics-nb[hog]'")
    try:
        parsed = json.loads(parser.parse_program_json(source, is_internal=True))
    except Exception as exc:  # the parser's own exceptions (a stand-in class) or malformed output
        return str(exc) or type(exc).__name__
    if isinstance(parsed, dict) and parsed.get("error"):
        return str(parsed.get("message") or "syntax error")
    return None
