"""Errors raised by the flag engine."""

from __future__ import annotations


class FlagDefinitionError(ValueError):
    """A flag definition cannot be evaluated; the message names the flag key, the filter and the fix."""

    def __init__(self, flag_key: str | None, where: str, problem: str) -> None:
        self.flag_key = flag_key
        self.where = where
        self.problem = problem
        prefix = f"flag {flag_key!r}, " if flag_key is not None else ""
        super().__init__(f"{prefix}{where}: {problem}")
