"""Issue 12 finding 8 (server side): listings page in SQL in a stable order, so offset paging returns every
row exactly once while rows are renamed during the listing."""

from __future__ import annotations

from collections.abc import Callable

import httpx

from _sandbox_helpers import api, playlists_path, transformations_path
from analytics_nb.sandbox import start


def _walk(http: httpx.Client, path: str, params: dict[str, str], rename: Callable[[int], None]) -> list[int]:
    """Follow `next` from the first page, renaming rows between pages; the ids seen, in order."""
    seen: list[int] = []
    url: str | None = path
    page = 0
    while url:
        body = http.get(url, params=params if page == 0 else None).json()
        seen += [r["id"] for r in body["results"]]
        rename(page)
        page += 1
        url = body["next"]
    return seen


def test_flags_projects_and_transformations_list_every_row_once_while_renamed() -> None:
    with start(seed="demo") as sb, api(sb) as http:
        flags = f"/api/projects/{sb.project_id}/feature_flags/"
        ids = [r["id"] for r in http.get(flags, params={"limit": 500}).json()["results"]]

        def rename_flag(page: int) -> None:
            http.patch(f"{flags}{ids[-1 - page]}/", json={"name": f"renamed {page}"})

        assert sorted(_walk(http, flags, {"limit": "3"}, rename_flag)) == sorted(ids)

        plugins = [r["id"] for r in http.get(transformations_path(sb)).json()["results"]]

        def rename_plugin(page: int) -> None:
            http.patch(transformations_path(sb, f"{plugins[-1 - page]}/"), json={"name": f"renamed {page}"})

        assert _walk(http, transformations_path(sb), {"limit": "2"}, rename_plugin) == sorted(plugins)

        for i in range(4):
            sb.add_project(f"extra {i}")
        projects = _walk(http, "/api/projects/", {"limit": "2"}, lambda page: None)
        assert projects == sorted(projects) and len(projects) == 5


def test_playlists_ordered_by_creation_list_every_row_once_while_renamed() -> None:
    with start(seed="demo") as sb, api(sb) as http:
        everything = http.get(playlists_path(sb), params={"limit": 500}).json()
        short = {r["id"]: r["short_id"] for r in everything["results"]}
        newest_first = [r["id"] for r in everything["results"]]  # the default: -last_modified_at, then id

        def rename(page: int) -> None:  # renaming moves a row to the front of the default order
            http.patch(playlists_path(sb, f"{short[newest_first[-1 - page]]}/"), json={"name": f"r{page}"})

        seen = _walk(http, playlists_path(sb), {"limit": "5", "order": "created_at"}, rename)
        assert sorted(seen) == sorted(short) and len(seen) == len(short)
