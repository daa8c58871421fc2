"""The reference pages show the forms made at import time as Python shows them
(``scripts/griffe_runtime_forms.py``, loaded by ``mkdocs.yml``).

Before the extension, the session page listed ``Client.sandbox`` only: ``Client.capture_frame``,
``simulate`` and the other verbs are assignments in the source (``capture_frame = sync_method(...)``), which
griffe does not render, and ``ApiClient``'s constructor read ``(*args, **kwargs)``.
"""

from __future__ import annotations

import importlib.util
import inspect
from pathlib import Path
from typing import Any

import pytest

griffe = pytest.importorskip("griffe")

import analytics_nb  # noqa: E402
from analytics_nb import capture  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def package() -> Any:
    spec = importlib.util.spec_from_file_location(
        "griffe_runtime_forms", ROOT / "scripts" / "griffe_runtime_forms.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    extensions = griffe.load_extensions(module.RuntimeForms())
    return griffe.load("analytics_nb", search_paths=[str(ROOT / "src")], extensions=extensions)


def _resolved(obj: Any) -> Any:
    """The object an alias (a re-export such as ``analytics_nb.session.Client``) stands for."""
    return obj.final_target if obj.is_alias else obj


def _names(params: Any) -> list[str]:
    return [p.name for p in params]


@pytest.mark.parametrize("name", ["capture", "capture_frame", "flag_called", "flag_called_frame", "simulate"])
@pytest.mark.parametrize("cls", ["Client", "AsyncClient"])
def test_client_verbs_are_rendered_with_their_run_time_signature_and_docstring(
    package: Any, cls: str, name: str
) -> None:
    method = _resolved(_resolved(package["session"][cls]).all_members[name])
    runtime = getattr(getattr(analytics_nb, cls), name)
    assert isinstance(method, griffe.Function)
    assert _names(method.parameters) == list(inspect.signature(runtime).parameters)
    assert method.docstring is not None and method.docstring.value == inspect.cleandoc(runtime.__doc__)


def test_api_client_constructor_is_rendered_with_its_real_parameters(package: Any) -> None:
    api_client = _resolved(package["client"]["ApiClient"])
    init = _resolved(api_client.all_members["__init__"])
    assert _names(init.parameters) == ["self", *inspect.signature(analytics_nb.client.ApiClient).parameters]
    doc = api_client.docstring.value
    assert "Args:" in doc and "personal_api_key:" in doc


def test_an_async_twin_is_rendered_with_the_verbs_parameters_and_its_own_short_docstring(
    package: Any,
) -> None:
    twin = _resolved(package["capture"]["acapture_frame"])
    assert _names(twin.parameters) == list(inspect.signature(capture.capture_frame).parameters)
    assert "Args:" not in twin.docstring.value  # the source's short text; the verb's page has the Args
