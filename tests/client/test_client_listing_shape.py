"""Each listing's filters are written once (issue 24, "Listing"): a resource's ``iter``/``list``/``frame``
take ``**filters: Unpack[<Resource>Filters]`` and nothing else, the three share one TypedDict, and the paging
controls are declared once (``_base.Paging``) and inherited. A scan of the sources, so a parameter list
repeated across the three verbs (as ``HogFunctions`` had it) cannot come back, in the async resources nor
in the generated sync API."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import analytics_nb.client as client_package

CLIENT = Path(client_package.__file__).parent
SOURCES = [*sorted((CLIENT / "_resources").glob("*.py")), CLIENT / "_sync_api.py"]
VERBS = ("iter", "list", "frame")
PAGING = {"page_size", "offset", "max_items"}


def _classes() -> Iterator[tuple[Path, ast.ClassDef]]:
    for path in SOURCES:
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef):
                yield path, node


def _verbs(cls: ast.ClassDef) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    return {
        fn.name: fn
        for fn in cls.body
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) and fn.name in VERBS
    }


def _unpacked(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    """The TypedDict of ``**name: Unpack[X]`` (None when the verb takes no keywords)."""
    kwarg = fn.args.kwarg
    if kwarg is None:
        return None
    ann = kwarg.annotation
    assert isinstance(ann, ast.Subscript) and ast.unparse(ann.value) == "Unpack", (
        f"{fn.name}(**{kwarg.arg}) must be typed Unpack[<the listing's filters TypedDict>]"
    )
    return ast.unparse(ann.slice)


def test_listing_verbs_take_only_their_filters_typeddict() -> None:
    offenders = []
    for path, cls in _classes():
        for name, fn in _verbs(cls).items():
            args = fn.args
            named = [a.arg for a in (*args.posonlyargs, *args.args[1:], *args.kwonlyargs)]
            if named or args.vararg is not None:
                offenders.append(f"{path.name}: {cls.name}.{name} spells out {named}")
    assert not offenders, "write the filters once, as a TypedDict taken by **filters:\n" + "\n".join(
        offenders
    )


def test_the_three_verbs_of_a_resource_share_one_typeddict() -> None:
    checked = 0
    for path, cls in _classes():
        shapes = {name: _unpacked(fn) for name, fn in _verbs(cls).items()}
        if len(shapes) > 1:
            checked += 1
            assert len(set(shapes.values())) == 1, f"{path.name}: {cls.name} {shapes}"
    assert checked >= 10  # 5 listing resources, async and sync


def test_paging_is_declared_once_and_inherited() -> None:
    typed_dicts = {}
    for _path, cls in _classes():
        bases = {ast.unparse(b) for b in cls.bases}
        own = {
            s.target.id for s in cls.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
        }
        if cls.name.endswith(("Filters", "Paging")):
            typed_dicts[cls.name] = (bases, own)
    assert typed_dicts["Paging"][1] == PAGING
    for name, (bases, own) in typed_dicts.items():
        if name != "Paging":
            assert "Paging" in bases, f"{name} must inherit the paging controls from Paging"
            assert not own & PAGING, f"{name} redeclares {own & PAGING}"
    assert {
        "PlaylistFilters",
        "HogFunctionFilters",
        "HogFunctionTemplateFilters",
        "FeatureFlagFilters",
    } <= set(typed_dicts)
