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

from analytics_nb import AsyncClient, Client, capture, simulation
from analytics_nb.client import verb_form_matches

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
    assert method.__doc__ == verb.__doc__ and len(inspect.getdoc(method).splitlines()) >= 3  # type: ignore[union-attr]
    assert inspect.iscoroutinefunction(method) is (cls is AsyncClient)
    # ?? shows the verb's own source
    assert f"def {verb.__name__}(" in inspect.getsource(method)


def test_client_capture_frame_shows_the_full_docstring() -> None:
    """The issue's example: the form the README teaches shows all of the function's docstring."""
    doc = inspect.getdoc(Client.capture_frame) or ""
    assert doc == inspect.getdoc(capture.capture_frame)
    assert len(doc.splitlines()) >= 15 and "CaptureInterrupted" in doc and "batch_size" in doc


def test_asimulate_is_simulate_s_signature_and_docstring() -> None:
    assert (
        inspect.signature(simulation.asimulate).parameters
        == inspect.signature(simulation.simulate).parameters
    )
    assert simulation.asimulate.__doc__ == simulation.simulate.__doc__
    assert inspect.iscoroutinefunction(simulation.asimulate)


def test_asimulate_binds_its_arguments_like_simulate() -> None:
    sets = pd.DataFrame({"distinct_id": ["a", "b"]})
    flags = [{"key": "f", "filters": {"groups": [{"properties": [], "rollout_percentage": 100}]}}]
    result = asyncio.run(simulation.asimulate(sets, None, "local", definitions=flags))
    assert result.frame["f"].tolist() == [True, True]
    with pytest.raises(TypeError, match="unexpected keyword argument 'definition'"):
        asyncio.run(simulation.asimulate(sets, engine="local", definition=flags))


def test_no_verb_parameter_list_is_written_twice() -> None:
    """A scan of the session and simulation sources: the verbs' parameter lists appear once, in the verb."""
    written: dict[str, list[str]] = {}
    for path in [*(ROOT / "session").glob("*.py"), *(ROOT / "simulation").glob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in {
                *VERBS,
                "asimulate",
            }:
                names = [a.arg for a in [*node.args.args, *node.args.kwonlyargs]]
                written.setdefault(node.name, []).append(f"{path.name}:{len(names)}")
    assert written == {"simulate": ["_simulate.py:18"], "asimulate": ["_simulate.py:0"]}
