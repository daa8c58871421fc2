"""Each analyst verb is written once; every other form carries its signature and full docstring (issue 24).

Before: ``Client.capture_frame`` showed a 2-line docstring in Jupyter's Shift-Tab (the function has 19
lines), and ``simulate``'s 14 parameters were written four times.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from _flags import flag
from analytics_nb import AsyncClient, Client, capture, simulation
from analytics_nb.client import method_doc, twin_matches, verb_form_matches

ROOT = Path(__file__).resolve().parents[2] / "src" / "analytics_nb"

#: method name -> (the verb: the one definition, its async twin)
VERBS: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "capture": (capture.capture_event, capture.acapture_event),
    "capture_frame": (capture.capture_frame, capture.acapture_frame),
    "flag_called": (capture.flag_called, capture.aflag_called),
    "flag_called_frame": (capture.flag_called_frame, capture.aflag_called_frame),
    "simulate": (simulation.simulate, simulation.asimulate),
}


def _bound(verb: Callable[..., Any]) -> list[str]:
    """The verb's parameter names with the client bound to ``self``."""
    return ["self", *(p for p in inspect.signature(verb).parameters if p != "client")]


@pytest.mark.parametrize("name", list(VERBS))
@pytest.mark.parametrize("cls", [Client, AsyncClient], ids=["Client", "AsyncClient"])
def test_each_client_method_carries_the_verbs_signature_and_full_docstring(cls: type, name: str) -> None:
    verb, _ = VERBS[name]
    method = getattr(cls, name)
    assert verb_form_matches(method, verb)
    assert list(inspect.signature(method).parameters) == _bound(verb)
    # what Shift-Tab shows: the verb's whole docstring, not a two-line summary
    # (less the verb's ``client:`` argument, which is the method's ``self``)
    assert method.__doc__ == method_doc(verb.__doc__) and len(inspect.getdoc(method).splitlines()) >= 3  # type: ignore[union-attr]
    assert "    client:" in (verb.__doc__ or "") and "    client:" not in (method.__doc__ or "")
    assert inspect.iscoroutinefunction(method) is (cls is AsyncClient)
    # ?? shows the verb's own source
    assert f"def {verb.__name__}(" in inspect.getsource(method)


def test_client_capture_frame_shows_the_full_docstring() -> None:
    """The issue's example: the form the README teaches shows all of the function's docstring."""
    doc = inspect.getdoc(Client.capture_frame) or ""
    assert doc == inspect.cleandoc(method_doc(capture.capture_frame.__doc__) or "")
    assert len(doc.splitlines()) >= 15 and "CaptureInterrupted" in doc and "batch_size" in doc


def test_asimulate_is_simulate_s_signature_and_docstring() -> None:
    assert (
        inspect.signature(simulation.asimulate).parameters
        == inspect.signature(simulation.simulate).parameters
    )
    assert simulation.asimulate.__doc__ == simulation.simulate.__doc__
    assert inspect.iscoroutinefunction(simulation.asimulate)


@pytest.mark.parametrize("name", list(VERBS))
def test_each_async_twin_carries_the_verbs_signature_and_full_docstring(name: str) -> None:
    """Every public form of every verb: ``acapture_event``, ``acapture_frame``, ``aflag_called``,
    ``aflag_called_frame`` and ``asimulate`` show the verb's parameters and whole docstring (they used to
    repeat the parameter list and carry a one-line docstring of their own)."""
    verb, twin = VERBS[name]
    assert twin_matches(twin, verb)
    assert twin.__name__ == f"a{verb.__name__}"
    assert len(inspect.getdoc(twin).splitlines()) >= 3  # type: ignore[union-attr]


@pytest.mark.parametrize("name", [n for n in VERBS if n != "simulate"])
def test_the_capture_twins_say_they_take_either_client(name: str) -> None:
    verb, twin = VERBS[name]
    assert inspect.signature(verb).parameters["client"].annotation == "ApiClient"
    assert inspect.signature(twin).parameters["client"].annotation == "AnyApiClient"


def test_every_public_async_twin_is_checked() -> None:
    """A new ``a``-prefixed verb in ``capture`` or ``simulation`` must join ``VERBS`` (and so the checks)."""
    checked = {twin.__name__ for _, twin in VERBS.values()}
    for module in (capture, simulation):
        public = set(module.__all__)
        twins = {n for n in public if n.startswith("a") and n[1:] in public}
        assert twins <= checked, twins - checked


def test_a_twin_refuses_a_wrong_keyword_like_its_verb() -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'batchsize'"):
        asyncio.run(capture.acapture_frame(None, pd.DataFrame(), batchsize=10))
    with pytest.raises(TypeError, match="missing a required argument: 'response'"):
        asyncio.run(capture.aflag_called(None, "u1", "flag"))


def test_asimulate_binds_its_arguments_like_simulate() -> None:
    sets = pd.DataFrame({"distinct_id": ["a", "b"]})
    flags = [flag("f", active=None)]
    result = asyncio.run(simulation.asimulate(sets, None, "local", definitions=flags))
    assert result.frame["f"].tolist() == [True, True]
    with pytest.raises(TypeError, match="unexpected keyword argument 'definition'"):
        asyncio.run(simulation.asimulate(sets, engine="local", definition=flags))


def test_no_verb_parameter_list_is_written_twice() -> None:
    """A scan of the session, simulation and capture sources: each verb's parameter list appears once, in
    the verb; its async twin is written ``(*args, **kwargs)`` and takes the verb's signature."""
    names = {verb.__name__ for verb, _ in VERBS.values()} | {twin.__name__ for _, twin in VERBS.values()}
    written: dict[str, list[str]] = {}
    for part in ("session", "simulation", "capture"):
        for path in (ROOT / part).glob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in {*VERBS, *names}:
                    args = [a.arg for a in [*node.args.args, *node.args.kwonlyargs]]
                    written.setdefault(node.name, []).append(f"{path.name}:{len(args)}")
    assert written == {
        "simulate": ["_simulate.py:18"],
        "asimulate": ["_simulate.py:0"],
        "capture_event": ["_bulk.py:8"],
        "acapture_event": ["_bulk.py:0"],
        "capture_frame": ["_bulk.py:13"],
        "acapture_frame": ["_bulk.py:0"],
        "flag_called": ["_flag_called.py:12"],
        "aflag_called": ["_flag_called.py:0"],
        "flag_called_frame": ["_flag_called.py:5"],
        "aflag_called_frame": ["_flag_called.py:0"],
    }


# -- the constructor's arguments: described once, on AsyncApiClient ---------------------------------------
def test_every_client_class_shows_the_one_constructor_args_section() -> None:
    """``ApiClient``, ``AsyncClient`` and ``Client`` take ``AsyncApiClient``'s arguments; each one's docstring
    (``help()``, Shift-Tab, the reference page) ends with exactly ``AsyncApiClient``'s ``Args:`` and
    ``Raises:`` sections, after its own summary."""
    from analytics_nb.client import ApiClient, AsyncApiClient
    from analytics_nb.client._verbs import constructor_sections

    shared = constructor_sections(AsyncApiClient.__doc__)
    assert shared.startswith("Args:\n    host:") and "\nRaises:\n" in shared
    for cls in (ApiClient, AsyncClient, Client):
        doc = inspect.cleandoc(cls.__doc__ or "")
        assert doc.endswith(shared), cls.__name__
        assert doc.count("Args:") == 1, cls.__name__
        assert inspect.signature(cls) == inspect.signature(AsyncApiClient), cls.__name__


def test_the_constructor_args_text_is_written_once_in_the_source() -> None:
    """Before: the 30-line ``Args:`` block was written in ``ApiClient``, ``AsyncApiClient``, ``Client`` and
    (shorter, already drifting) ``AsyncClient``. Now one source line describes ``personal_api_key``."""
    entry = "personal_api_key: A personal API key"
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in ROOT.rglob("*.py")
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if line.strip().startswith("personal_api_key:") and "API key" in line
    ]
    assert len(found) == 1 and entry in (ROOT / found[0].split(":")[0]).read_text(encoding="utf-8"), found


def test_a_class_with_its_own_args_is_refused_by_same_constructor_doc() -> None:
    """Two descriptions of one argument would drift: a class that writes its own ``Args:`` is an error."""
    from analytics_nb.client import AsyncApiClient, same_constructor_doc

    with pytest.raises(ValueError, match="its own 'Args:'"):

        @same_constructor_doc(AsyncApiClient)
        class Twice:
            """Summary.

            Args:
                host: again.
            """
