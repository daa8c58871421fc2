"""A griffe extension for the reference pages (``mkdocs.yml`` loads it): what is made at import time is shown
as Python shows it at run time.

The analyst verbs are written once and their other forms are made from them when the package is imported
(``analytics_nb.client._verbs``): the client methods (``Client.capture_frame = sync_method(capture_frame)``),
the async twins declared ``(*args, **kwargs)`` under ``same_signature``, ``ApiClient.__init__`` and the
client classes' docstrings under ``same_constructor_doc``. griffe reads the source, where those are an
assignment or ``(*args, **kwargs)``; this extension imports the package and gives each such object the
signature (``inspect.signature``) and, where the source has none of its own, the docstring that ``help()``
and Jupyter's Shift-Tab show, so the reference page says what the user meets.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Iterator
from typing import Any

import griffe

PACKAGE = "analytics_nb"


def _modules(module: griffe.Module) -> Iterator[griffe.Module]:
    yield module
    for member in module.members.values():
        if not member.is_alias and isinstance(member, griffe.Module):
            yield from _modules(member)


def _annotation(value: Any) -> str | None:
    if value is inspect.Parameter.empty:
        return None
    return value if isinstance(value, str) else inspect.formatannotation(value)


def _parameters(func: Callable[..., Any]) -> tuple[griffe.Parameters, str | None]:
    sig = inspect.signature(func)
    params = [
        griffe.Parameter(
            p.name,
            annotation=_annotation(p.annotation),
            kind=griffe.ParameterKind(p.kind.description),
            default=None if p.default is inspect.Parameter.empty else repr(p.default),
        )
        for p in sig.parameters.values()
    ]
    return griffe.Parameters(*params), _annotation(sig.return_annotation)


def _made_at_import(value: Any) -> bool:
    """A function whose signature was set when the package was imported (a verb's form or twin)."""
    return inspect.isfunction(value) and "__signature__" in vars(value)


def _docstring(text: str | None, owner: griffe.Object, lineno: int | None) -> griffe.Docstring | None:
    if not text:
        return None
    return griffe.Docstring(inspect.cleandoc(text), lineno=lineno, parent=owner, parser="google")


def _replace_function(owner: griffe.Object, name: str, value: Callable[..., Any]) -> None:
    static = owner.members.get(name)
    params, returns = _parameters(value)
    if isinstance(static, griffe.Function) and not static.is_alias:
        static.parameters = params
        if static.docstring is None and value.__doc__:
            static.docstring = _docstring(value.__doc__, static, static.lineno)
        return
    lineno = static.lineno if static is not None and not static.is_alias else owner.lineno
    func = griffe.Function(name, parameters=params, returns=returns, lineno=lineno, endlineno=lineno)
    func.docstring = _docstring(value.__doc__, func, lineno)
    owner.set_member(name, func)


def _class(cls: griffe.Class, runtime: type) -> None:
    own = cls.docstring.value if cls.docstring else ""
    if runtime.__doc__ and "Args:" not in own and "Args:" in runtime.__doc__:
        cls.docstring = _docstring(runtime.__doc__, cls, cls.lineno)
    for name, value in vars(runtime).items():
        if _made_at_import(value):
            _replace_function(cls, name, value)


class RuntimeForms(griffe.Extension):
    """Give the objects made at import time their run-time signature and docstring (see the module)."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        if pkg.name != PACKAGE:
            return
        for module in _modules(pkg):
            runtime_module = importlib.import_module(module.path)
            for name, member in list(module.members.items()):
                if member.is_alias:
                    continue
                value = getattr(runtime_module, name, None)
                if isinstance(member, griffe.Class) and isinstance(value, type):
                    _class(member, value)
                elif isinstance(member, griffe.Function) and _made_at_import(value):
                    _replace_function(module, name, value)
