"""Run the async core from synchronous code: a private event loop in a daemon thread, and sync facades.

The sync ``Client`` never calls ``asyncio.run``: each call is submitted to the client's own loop with
``run_coroutine_threadsafe`` and waited for, so it works the same in a script and inside a Jupyter kernel
whose event loop is already running. Facade classes are generated from the async resource classes, so every
method is written once (``async def``) and the sync signature, docstring and type hints are derived from it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import inspect
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from typing import Any, TypeVar

__all__ = ["LoopThread", "sync_facade"]

T = TypeVar("T")


class LoopThread:
    """An asyncio event loop running forever in a daemon thread; ``run(coro)`` blocks until it completes."""

    def __init__(self, name: str = "analytics-nb-client") -> None:
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self.thread = threading.Thread(target=self._main, name=name, daemon=True)
        self.thread.start()
        self._ready.wait()

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self._ready.set)
        try:
            self.loop.run_forever()
        finally:
            pending = [t for t in asyncio.all_tasks(self.loop) if not t.done()]
            for task in pending:
                task.cancel()
            if pending:
                self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.close()

    @property
    def running(self) -> bool:
        """True while the loop thread is alive."""
        return self.thread.is_alive() and not self.loop.is_closed()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the loop and return its result (raising its exception); Ctrl-C cancels it."""
        if threading.get_ident() == self.thread.ident:
            coro.close()
            raise RuntimeError(
                "A sync Client method was called from inside the client's own event loop; use AsyncClient "
                "and `await` in async code."
            )
        if not self.running:
            coro.close()
            raise RuntimeError("This client is closed; create a new Client to make more requests.")
        # The task runs in a copy of the caller's context, so context variables (e.g. the Jupyter cell
        # that output and progress bars belong to) follow the call onto the loop thread.
        context = contextvars.copy_context()
        done: concurrent.futures.Future[T] = concurrent.futures.Future()
        started: list[asyncio.Task[T]] = []

        def finish(task: asyncio.Task[T]) -> None:
            if task.cancelled():
                done.set_exception(asyncio.CancelledError())
            elif (exc := task.exception()) is not None:
                done.set_exception(exc)
            else:
                done.set_result(task.result())

        def start() -> None:
            try:
                task = self.loop.create_task(coro, context=context)
            except BaseException as exc:  # pragma: no cover - loop closing
                done.set_exception(exc)
                return
            started.append(task)
            task.add_done_callback(finish)

        self.loop.call_soon_threadsafe(start)
        try:
            return done.result()
        except BaseException:
            if not done.done():  # interrupted (Ctrl-C): cancel the work on the loop
                self.loop.call_soon_threadsafe(lambda: [t.cancel() for t in started])
            raise

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the loop and join the thread (idempotent)."""
        if self.thread.is_alive() and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self.loop.stop)
        if self.thread.is_alive() and threading.get_ident() != self.thread.ident:
            self.thread.join(timeout)


def iterate_sync(agen: AsyncIterator[T], run: Callable[[Coroutine[Any, Any, Any]], Any]) -> Iterator[T]:
    """Turn an async iterator into a sync generator pulling each item through ``run``."""

    async def _next() -> tuple[bool, Any]:
        try:
            return True, await agen.__anext__()
        except StopAsyncIteration:
            return False, None

    try:
        while True:
            ok, item = run(_next())
            if not ok:
                return
            yield item
    finally:
        aclose = getattr(agen, "aclose", None)
        if aclose is not None:
            try:
                run(aclose())
            except RuntimeError:  # the client was closed meanwhile
                pass


def _sync_return(annotation: Any) -> Any:
    if isinstance(annotation, str):
        return annotation.replace("AsyncIterator[", "Iterator[").replace("AsyncGenerator[", "Generator[")
    return annotation


def _wrap(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    if inspect.iscoroutinefunction(fn):

        def method(self: Any, *args: Any, **kwargs: Any) -> Any:
            return self._runner(getattr(self._target, name)(*args, **kwargs))

    elif inspect.isasyncgenfunction(fn):

        def method(self: Any, *args: Any, **kwargs: Any) -> Any:
            return iterate_sync(getattr(self._target, name)(*args, **kwargs), self._runner)

    else:

        def method(self: Any, *args: Any, **kwargs: Any) -> Any:
            return getattr(self._target, name)(*args, **kwargs)

    functools.update_wrapper(method, fn)
    del method.__wrapped__  # type: ignore[attr-defined]  # inspect.signature must show the sync return
    annotations = dict(getattr(fn, "__annotations__", {}))
    if "return" in annotations:
        annotations["return"] = _sync_return(annotations["return"])
    method.__annotations__ = annotations
    try:
        sig = inspect.signature(fn)
        method.__signature__ = sig.replace(  # type: ignore[attr-defined]
            return_annotation=_sync_return(sig.return_annotation)
        )
    except (TypeError, ValueError):  # pragma: no cover
        pass
    return method


class SyncFacade:
    """Base of generated sync facades: holds the async object and the function that runs coroutines."""

    _target: Any
    _runner: Callable[[Coroutine[Any, Any, Any]], Any]

    def __init__(self, target: Any, runner: Callable[[Coroutine[Any, Any, Any]], Any]) -> None:
        self._target = target
        self._runner = runner

    def __repr__(self) -> str:
        return f"<sync {self._target!r}>"

    def __getattr__(self, name: str) -> Any:  # plain attributes of the async object
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._target, name)


def sync_facade(async_cls: type, name: str | None = None) -> type[SyncFacade]:
    """Generate the sync facade class of ``async_cls``: one sync method per public method, same signature."""
    namespace: dict[str, Any] = {
        "__doc__": (async_cls.__doc__ or "") + "\n\n(Synchronous facade: each method blocks until done.)",
        "__module__": async_cls.__module__,
    }
    for attr in dir(async_cls):
        if attr.startswith("_"):
            continue
        value = inspect.getattr_static(async_cls, attr)
        if isinstance(value, staticmethod | classmethod | property):
            continue
        if inspect.isfunction(value):
            namespace[attr] = _wrap(attr, value)
    return type(name or f"Sync{async_cls.__name__}", (SyncFacade,), namespace)
