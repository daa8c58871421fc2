"""The public API's docstrings are Google style (as ``mkdocs.yml`` tells mkdocstrings): every entry point the
reference renders has an ``Args:`` section naming exactly its parameters, in order, and no docstring in the
reference names a parameter its callable does not have (mkdocstrings would warn, and the strict build fail).

The sections are parsed by griffe's Google parser, the one mkdocstrings uses, on the live objects' docstrings
(so a client method made from a verb is checked as ``help()`` shows it).
"""

from __future__ import annotations

import importlib
import inspect
import logging
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

griffe = pytest.importorskip("griffe")

import analytics_nb  # noqa: E402
from analytics_nb import client as client_part  # noqa: E402
from analytics_nb import session, simulation, widgets  # noqa: E402

#: Modules whose ``__all__`` functions are entry points (every one must document every parameter).
FUNCTION_MODULES = (
    "analytics_nb.sandbox",
    "analytics_nb.models",
    "analytics_nb.capture",
    "analytics_nb.flags",
    "analytics_nb.simulation",
    "analytics_nb.frames",
)
#: Classes whose constructor (in the class docstring, as ``merge_init_into_class`` renders it) and public
#: methods are entry points.
CLASSES: tuple[type, ...] = (
    session.Client,
    session.AsyncClient,
    client_part.ApiClient,
    client_part.AsyncApiClient,
    client_part.Playlists,
    client_part.HogFunctions,
    client_part.HogFunctionTemplates,
    client_part.FeatureFlags,
    client_part.Transformations,
    client_part.Projects,
    client_part.Organizations,
    simulation.WhatIf,
    simulation.SimulationResult,
    simulation.WhatIfResult,
    simulation.SqlSimulationResult,
    analytics_nb.flags.FrameEvaluator,
    analytics_nb.sandbox.Sandbox,
    analytics_nb.sandbox.Faults,
    analytics_nb.models.DecideResponse,
    widgets.PlaylistEditor,
    widgets.FlagSimulator,
    widgets.TransformationsBrowser,
)
#: Made by the client (``client.playlists``) or returned by a function (``simulate``), never by the user: no
#: constructor docs.
NOT_CONSTRUCTED = {
    analytics_nb.sandbox.Sandbox,
    analytics_nb.sandbox.Faults,
    analytics_nb.models.DecideResponse,
    simulation.SimulationResult,
    simulation.WhatIfResult,
    simulation.SqlSimulationResult,
    client_part.Playlists,
    client_part.HogFunctions,
    client_part.HogFunctionTemplates,
    client_part.FeatureFlags,
    client_part.Transformations,
    client_part.Projects,
    client_part.Organizations,
}


#: Classes whose inherited methods (``from_env``, ``decide``, ...) are checked too.
BASES = {client_part.ApiClient, client_part.AsyncApiClient}


def entry_points() -> Iterator[tuple[str, Callable[..., Any], str | None]]:
    """(name, callable whose parameters count, docstring that must document them)."""
    for name in FUNCTION_MODULES:
        module = importlib.import_module(name)
        for attr in module.__all__:
            obj = getattr(module, attr)
            if inspect.isfunction(obj):
                yield f"{name}.{attr}", obj, obj.__doc__
    for cls in CLASSES:
        if cls not in NOT_CONSTRUCTED:
            yield f"{cls.__name__}()", cls.__init__, constructor_doc(cls)
        own = {
            k: v
            for base in reversed(cls.__mro__[:-1])
            if cls in BASES or base.__module__.startswith("analytics_nb.session")  # the verbs' methods
            for k, v in vars(base).items()
        }
        for attr, raw in {**own, **vars(cls)}.items():
            if attr.startswith("_"):
                continue
            obj = raw.__func__ if isinstance(raw, (staticmethod, classmethod)) else raw
            if inspect.isfunction(obj):
                yield f"{cls.__name__}.{attr}", getattr(cls, attr), obj.__doc__


def constructor_doc(cls: type) -> str | None:
    """Where the constructor's arguments are described: ``__init__`` (``merge_init_into_class`` renders it
    in the class), else the class docstring."""
    init = inspect.getdoc(cls.__init__)
    return init if init and "Args:" in init else cls.__doc__


#: what a generated async form says instead of repeating its verb's docstring (scripts/generate_sync.py)
POINTER = re.compile(r"The parameters, defaults and answer of `(\w+)`( \(less ``client``\))?:")


def documenting(fn: Callable[..., Any], doc: str | None) -> tuple[list[str], list[str] | None]:
    """The parameters to document and the names documented: an async form that points to its verb
    (``asimulate``: "The parameters ... of `simulate`: see it") is documented by the verb (less ``client``
    for a client method)."""
    expected = [p.lstrip("*") for p in parameters(fn)]
    match = POINTER.search(doc or "")
    if match is None:
        return expected, documented(doc)
    verb = next(
        getattr(m, match.group(1)) for m in (analytics_nb.capture, simulation) if hasattr(m, match.group(1))
    )
    found = documented(verb.__doc__)
    less = {"client"} if match.group(2) else set()
    return expected, None if found is None else [n for n in found if n not in less]


def parameters(fn: Callable[..., Any]) -> list[str]:
    """The names a caller passes, ``*args`` / ``**kw`` written as Google style writes them."""
    names = []
    for p in inspect.signature(fn).parameters.values():
        if p.name in ("self", "cls"):
            continue
        star = {inspect.Parameter.VAR_POSITIONAL: "*", inspect.Parameter.VAR_KEYWORD: "**"}.get(p.kind, "")
        names.append(star + p.name)
    return names


def documented(doc: str | None) -> list[str] | None:
    """The names in the docstring's ``Args:`` section (None when it has none), as griffe reads them."""
    if not doc:
        return None
    logging.getLogger("griffe").setLevel(logging.ERROR)
    sections = griffe.Docstring(inspect.cleandoc(doc), lineno=1).parse("google")
    names = [
        ("*" if p.annotation == "*" else "") + p.name
        for s in sections
        if s.kind is griffe.DocstringSectionKind.parameters
        for p in s.value
    ]
    if not any(s.kind is griffe.DocstringSectionKind.parameters for s in sections):
        return None
    return [n.lstrip("*") for n in names]


ENTRY_POINTS = list(entry_points())


@pytest.mark.parametrize(("name", "fn", "doc"), ENTRY_POINTS, ids=[e[0] for e in ENTRY_POINTS])
def test_entry_point_documents_exactly_its_parameters(
    name: str, fn: Callable[..., Any], doc: str | None
) -> None:
    assert doc, f"{name} has no docstring"
    expected, found = documenting(fn, doc)
    if not expected:
        assert found in (None, []), f"{name} takes no arguments but documents {found}"
        return
    assert found == expected, f"{name}: Args: {found}, parameters: {expected}"


def test_the_check_catches_a_missing_and_a_stray_argument() -> None:
    def f(a: int, *, b: int = 0, **kw: Any) -> None:
        """Do it.

        Args:
            a: The a.
            c: Not a parameter.
            **kw: More.
        """

    assert documented(f.__doc__) == ["a", "c", "kw"] != [p.lstrip("*") for p in parameters(f)]
    assert parameters(f) == ["a", "b", "**kw"]


REFERENCE_MODULES = [
    "analytics_nb.capture",
    "analytics_nb.client",
    "analytics_nb.errors",
    "analytics_nb.flags",
    "analytics_nb.frames",
    "analytics_nb.models",
    "analytics_nb.sandbox",
    "analytics_nb.session",
    "analytics_nb.simulation",
    "analytics_nb.tables",
    "analytics_nb.widgets",
]


def reference_callables() -> Iterator[tuple[str, Callable[..., Any], str | None]]:
    """Every public function, class (its constructor) and method the reference pages render."""
    for name in REFERENCE_MODULES:
        module = importlib.import_module(name)
        for attr in module.__all__:
            obj = getattr(module, attr)
            if inspect.isfunction(obj):
                yield f"{name}.{attr}", obj, obj.__doc__
            elif inspect.isclass(obj) and obj.__module__.startswith("analytics_nb"):
                yield f"{name}.{attr}()", obj.__init__, obj.__doc__
                for member, raw in vars(obj).items():
                    fn = raw.__func__ if isinstance(raw, (staticmethod, classmethod)) else raw
                    if not member.startswith("_") and inspect.isfunction(fn):
                        yield f"{name}.{attr}.{member}", getattr(obj, member), fn.__doc__


def test_no_docstring_in_the_reference_names_a_parameter_its_callable_lacks() -> None:
    """Beyond the entry points: an ``Args:`` section anywhere in the reference lists only real parameters,
    in signature order (mkdocstrings warns otherwise, and the strict build fails)."""
    wrong = []
    for name, fn, doc in reference_callables():
        found = documented(doc)
        if not found:
            continue
        try:
            expected = [p.lstrip("*") for p in parameters(fn)]
        except (TypeError, ValueError):  # a builtin's __init__ without a signature
            continue
        if [n for n in expected if n in found] != found:
            wrong.append(f"{name}: Args {found}, parameters {expected}")
    assert not wrong, "\n".join(wrong)


def test_enough_entry_points_are_checked() -> None:
    names = {name for name, _, _ in ENTRY_POINTS}
    for must in (
        "Client()",
        "Client.simulate",
        "Client.capture_frame",
        "analytics_nb.simulation.simulate",
        "WhatIf()",
        "WhatIf.run",
        "analytics_nb.frames.to_csv",
        "analytics_nb.flags.to_sql",
        "analytics_nb.flags.evaluate_frame",
        "Playlists.frame",
        "PlaylistEditor()",
    ):
        assert must in names, must
    assert len(ENTRY_POINTS) >= 150
    assert analytics_nb.Client is session.Client
