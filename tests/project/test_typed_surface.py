"""What mypy and pyright see of the verb forms (issue 38): every form's parameters, typed.

Before, ``Client.simulate``, ``Client.capture_frame``, ``asimulate``, ``anb.Client(...)``... were made at
import time as ``(*args, **kwargs)``: ``client.simulate(df, enginee="local")`` passed both checkers and
failed only at run time. ``tests/project/typing_misspelt.py`` (never collected) misspells a keyword on every
form; ``scripts/check_typed_surface.py`` (also run by ``scripts/test``) expects one error per marked line.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _script(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def surface() -> Any:
    return _script("check_typed_surface")


def test_the_sample_misspells_a_keyword_on_every_verb_form(surface: Any) -> None:
    lines = surface.SAMPLE.read_text(encoding="utf-8").splitlines()
    marked = "\n".join(lines[n - 1] for n in surface.marked_lines())
    forms = [
        'anb.Client("eu"',
        'anb.AsyncClient("eu"',
        *(f"{owner}.{verb}(" for owner in ("client", "aclient") for verb in ("simulate", "capture_frame")),
        *(f"{owner}.{verb}(" for owner in ("client", "aclient") for verb in ("capture", "flag_called")),
        *(f"{owner}.flag_called_frame(" for owner in ("client", "aclient")),
        *(f"simulation.{f}(" for f in ("simulate", "asimulate")),
        *(f"capture.{f}(" for f in ("capture_frame", "acapture_frame", "capture_event", "acapture_event")),
        *(
            f"capture.{f}("
            for f in ("flag_called", "aflag_called", "flag_called_frame", "aflag_called_frame")
        ),
    ]
    assert [f for f in forms if f not in marked] == []


def test_mypy_reports_the_misspelt_keyword_on_every_verb_form(surface: Any) -> None:
    expected = surface.marked_lines()
    assert len(expected) >= 26
    found = surface.mypy_lines()
    assert sorted(expected - found) == [] and sorted(found - expected) == []


def test_pyright_reports_the_misspelt_keyword_on_every_verb_form(surface: Any) -> None:
    command = surface.pyright()
    if command is None:
        pytest.skip("pyright is not installed in this environment (scripts/test runs mypy's check)")
    assert surface.pyright_lines(command) == surface.marked_lines()


def test_the_check_fails_when_a_form_accepts_any_keyword(surface: Any, tmp_path: Path) -> None:
    """The check itself can fail: a form written ``(*args, **kwargs)`` leaves its line unreported."""
    sample = tmp_path / "typing_misspelt.py"
    sample.write_text(
        "from typing import Any\n\n\ndef loose(*args: Any, **kwargs: Any) -> None: ...\n\n\n"
        'loose(1, enginee="local")  # misspelt\n',
        encoding="utf-8",
    )
    assert surface.marked_lines(sample) == {7} and surface.mypy_lines(sample) == set()


def test_one_generator_run_updates_every_form_when_a_verb_gains_a_parameter(tmp_path: Path) -> None:
    """The signatures are read from the source: a parameter added to ``simulate`` (any new keyword)
    reaches ``asimulate``, ``Client.simulate`` and ``AsyncClient.simulate`` in one run, and ``--check``
    (CI) fails until that run is made."""
    generator = _script("generate_sync")
    src = tmp_path / "src"
    shutil.copytree(
        ROOT / "src" / "analytics_nb", src / "analytics_nb", ignore=shutil.ignore_patterns("*.so")
    )
    path = src / "analytics_nb" / "simulation" / "_simulate.py"
    text = path.read_text(encoding="utf-8")
    anchor = "    as_of: dt.datetime | str | None = None,\n) -> SimulationResult:"
    assert anchor in text
    path.write_text(
        text.replace(anchor, anchor.replace("\n)", '\n    new_option: str = "auto",\n)')), "utf-8"
    )
    generator.SRC = src
    generator._PARSED.clear()
    texts = generator.generated()
    for name in ("simulation/_simulate_twins.py", "session/_verbs.py"):
        current = (ROOT / "src" / "analytics_nb" / name).read_text(encoding="utf-8")
        assert texts[f"analytics_nb/{name}"] != current
    assert texts["analytics_nb/simulation/_simulate_twins.py"].count('new_option: str = "auto"') == 1
    assert texts["analytics_nb/session/_verbs.py"].count('new_option: str = "auto"') == 2  # sync and async
    assert texts["analytics_nb/session/_verbs.py"].count("new_option=new_option") == 2
    for name, text in texts.items():  # written where the script writes them
        (src / name).write_text(text, encoding="utf-8")
    assert generator.main(["--check"]) == 0


def test_check_fails_on_stale_generated_source(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    generator = _script("generate_sync")
    src = tmp_path / "src"
    shutil.copytree(
        ROOT / "src" / "analytics_nb", src / "analytics_nb", ignore=shutil.ignore_patterns("*.so")
    )
    twins = src / "analytics_nb" / "capture" / "_bulk_twins.py"
    twins.write_text(
        twins.read_text(encoding="utf-8").replace("concurrency: int = 4", "concurrency: int = 5")
    )
    generator.SRC = src
    generator._PARSED.clear()
    assert generator.main(["--check"]) == 1
    assert "capture/_bulk_twins.py" in capsys.readouterr().out
