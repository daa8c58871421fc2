"""Each analyst verb written once: its other forms carry the one definition's signature and docstring, and
Ctrl-C on a sync client is handled here, once.

A verb (``simulate``, ``capture_frame``, ``capture_event``, ``flag_called``, ``flag_called_frame``) is one
function with its full docstring. Its async twin (``asimulate``, ...) is declared with `same_signature`, and
the client methods (``Client.capture_frame``, ``AsyncClient.capture_frame``, ...) are made by
`sync_method` / `async_method`: one-line delegations whose ``__signature__`` is the verb's with the client
argument bound to ``self`` and whose ``__doc__`` is the verb's (less its ``client`` argument), so
Jupyter's Shift-Tab shows the whole docstring on every form and ``??`` shows the verb's source
(``__wrapped__``).

A client class that takes another's constructor arguments (``ApiClient``, ``AsyncClient`` and ``Client``
take ``AsyncApiClient``'s) is decorated with `same_constructor_doc`: its docstring is its own summary
followed by the source's ``Args:`` and ``Raises:`` sections, so the arguments are described once.

`run_interruptible` is the one Ctrl-C handler of the sync forms: it runs a coroutine on the client's loop
and, on ``KeyboardInterrupt``, waits for the cancelled run to settle before the caller builds what it
returns (the partial `SimulationResult`, the capture report).
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Protocol, TypeVar

__all__ = [
    "Settles",
    "async_method",
    "bind_arguments",
    "method_doc",
    "run_interruptible",
    "same_constructor_doc",
    "same_signature",
    "sync_method",
    "twin_matches",
    "verb_form_matches",
]

R = TypeVar("R")
T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])
C = TypeVar("C", bound=type)


def same_signature(source: Callable[..., Any], *, client: str | None = None) -> Callable[[F], F]:
    """Give the decorated twin (e.g. ``asimulate``, written ``(*args, **kwargs)``) ``source``'s signature
    and docstring; the twin reads its arguments with `bind_arguments`.

    ``client``, when given, is the annotation the twin's ``client`` parameter shows instead of the
    source's (the async twins take either client: ``"AnyApiClient"``)."""

    def decorate(twin: F) -> F:
        sig = _signature(source, returns=inspect.signature(twin).return_annotation)
        if client is not None:
            sig = sig.replace(
                parameters=[
                    p.replace(annotation=client) if p.name == "client" else p for p in sig.parameters.values()
                ]
            )
        twin.__signature__ = sig  # type: ignore[attr-defined]
        twin.__doc__ = source.__doc__
        return twin

    return decorate


def constructor_sections(doc: str | None) -> str:
    """The ``Args:`` section of a class docstring and every section after it (``Raises:``), dedented."""
    text = inspect.cleandoc(doc or "")
    lines = text.splitlines()
    if "Args:" not in lines:
        raise ValueError("the source class's docstring has no 'Args:' section to share")
    return "\n".join(lines[lines.index("Args:") :])


def same_constructor_doc(source: type) -> Callable[[C], C]:
    """Class decorator for a client that takes ``source``'s constructor arguments: the class docstring
    becomes its own summary followed by ``source``'s ``Args:`` and ``Raises:`` sections (written once, on
    ``source``), as ``help()``, Shift-Tab and the reference pages show it."""

    def decorate(cls: C) -> C:
        own = inspect.cleandoc(cls.__doc__ or "")
        if "Args:" in own.splitlines():
            raise ValueError(f"{cls.__name__}'s docstring has its own 'Args:'; {source.__name__}'s are used")
        cls.__doc__ = f"{own}\n\n{constructor_sections(source.__doc__)}\n"
        return cls

    return decorate


def bind_arguments(
    source: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, Any]:
    """Every parameter of ``source`` by name, as a call ``source(*args, **kwargs)`` would bind them (defaults
    filled in); a wrong call raises the same `TypeError` the source would."""
    bound = inspect.signature(source).bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


def _signature(
    verb: Callable[..., Any], *, client: str | None = None, returns: Any = inspect.Signature.empty
) -> inspect.Signature:
    """``verb``'s signature; with ``client``, that parameter removed and ``self`` put first."""
    sig = inspect.signature(verb)
    params = list(sig.parameters.values())
    if client is not None:
        params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)] + [
            p for p in params if p.name != client
        ]
    if returns is inspect.Signature.empty:
        returns = sig.return_annotation
    return sig.replace(parameters=params, return_annotation=returns)


def _first_positional(verb: Callable[..., Any], client: str) -> bool:
    first = next(iter(inspect.signature(verb).parameters.values()))
    return first.name == client and first.kind is not inspect.Parameter.KEYWORD_ONLY


def method_doc(doc: str | None, client: str = "client") -> str | None:
    """A verb's docstring as its client method shows it: the ``Args:`` entry of ``client`` (the method's
    ``self``) left out, so the method's ``Args:`` name exactly its parameters."""
    if not doc:
        return doc
    out: list[str] = []
    args_indent: int | None = None  # indent of the "Args:" header while inside that section
    skip_deeper: int | None = None  # indent of the client entry being dropped (with its continuation lines)
    for line in doc.splitlines():
        text = line.strip()
        indent = len(line) - len(line.lstrip())
        if skip_deeper is not None and (not text or indent > skip_deeper):
            if not text:
                skip_deeper = None
                out.append(line)
            continue
        skip_deeper = None
        if text == "Args:":
            args_indent = indent
        elif args_indent is not None and text and indent <= args_indent:
            args_indent = None
        if args_indent is not None and indent > args_indent and text.startswith(f"{client}:"):
            skip_deeper = indent
            continue
        out.append(line)
    return "\n".join(out)


def _dress(
    method: Callable[..., Any],
    verb: Callable[..., Any],
    name: str | None,
    sig: inspect.Signature,
    client: str,
) -> None:
    method.__name__ = name or verb.__name__
    method.__qualname__ = method.__name__
    method.__doc__ = method_doc(verb.__doc__, client)
    method.__module__ = verb.__module__
    method.__signature__ = sig  # type: ignore[attr-defined]
    method.__wrapped__ = verb  # type: ignore[attr-defined]


def sync_method(
    verb: Callable[..., R], *, name: str | None = None, client: str = "client"
) -> Callable[..., R]:
    """A sync client's method for ``verb`` (a function taking the client as its ``client`` argument): it
    calls ``verb`` with the client, under the verb's signature (the client is ``self``) and docstring."""
    positional = _first_positional(verb, client)

    def method(self: Any, /, *args: Any, **kwargs: Any) -> R:
        return verb(self, *args, **kwargs) if positional else verb(*args, **{client: self}, **kwargs)

    _dress(method, verb, name, _signature(verb, client=client), client)
    return method


def async_method(
    verb: Callable[..., Any],
    call: Callable[..., Awaitable[R]],
    *,
    name: str | None = None,
    client: str = "client",
) -> Callable[..., Awaitable[R]]:
    """An async client's method for ``verb``: it awaits ``call`` (the verb's async twin) with the client,
    under the verb's signature (the client is ``self``) and docstring."""
    positional = _first_positional(call, client)

    async def method(self: Any, /, *args: Any, **kwargs: Any) -> R:
        if positional:
            return await call(self, *args, **kwargs)
        return await call(*args, **{client: self}, **kwargs)

    _dress(method, verb, name, _signature(verb, client=client), client)
    return method


def verb_form_matches(form: Callable[..., Any], verb: Callable[..., Any], *, client: str = "client") -> bool:
    """Whether a client method ``form`` carries ``verb``'s signature (client bound) and docstring."""
    expected = _signature(verb, client=client)
    return inspect.signature(form) == expected and form.__doc__ == method_doc(verb.__doc__, client)


def twin_matches(twin: Callable[..., Any], verb: Callable[..., Any]) -> bool:
    """Whether an async twin (``acapture_frame``, ...) carries ``verb``'s parameters (names, kinds,
    defaults, order; the client's annotation may differ), return annotation and docstring, and is a
    coroutine function."""

    def shape(f: Callable[..., Any]) -> list[tuple[str, Any, Any]]:
        return [(p.name, p.kind, p.default) for p in inspect.signature(f).parameters.values()]

    return (
        shape(twin) == shape(verb)
        and inspect.signature(twin).return_annotation == inspect.signature(verb).return_annotation
        and twin.__doc__ == verb.__doc__
        and inspect.iscoroutinefunction(twin)
    )


# ------------------------------------------------------------------------------------------ Ctrl-C


class Runs(Protocol):
    """What `run_interruptible` needs of a sync client: ``run(coro)`` on its loop (``ApiClient.run``). A
    protocol, so this module needs no import of the client it serves (``_client`` imports it)."""

    def run(self, coro: Coroutine[Any, Any, T]) -> T: ...


class Settles(Protocol):
    """A run the sync caller can wait for after Ctrl-C: ``started`` once it runs, ``settled`` once done."""

    started: threading.Event
    settled: threading.Event


def run_interruptible(
    client: Runs,
    coro: Coroutine[Any, Any, T],
    run: Settles,
    *,
    settle_seconds: float,
    on_interrupt: Callable[[KeyboardInterrupt], T],
    before_wait: Callable[[], None] | None = None,
) -> T:
    """Run ``coro`` on the sync client's loop. On Ctrl-C (the loop cancels the run) wait for the run to settle
    (half a second for it to start, then up to ``settle_seconds``; a second Ctrl-C stops waiting) and return
    ``on_interrupt(exc)``, which builds the partial answer or raises. ``before_wait`` runs first (e.g. to stop
    new requests). The client stays usable."""
    try:
        return client.run(coro)
    except KeyboardInterrupt as exc:
        if before_wait is not None:
            before_wait()
        if run.started.wait(0.5):
            run.settled.wait(settle_seconds)
        return on_interrupt(exc)
