"""``FlagPicker``: which flags of the definitions the next run simulates (none picked: all flags).

A search box filters the list (a project has dozens of flags; the list shows a few rows at once); picks of
flags the filter hides are kept, and the count line says how many are shown and picked.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

import ipywidgets as w

from analytics_nb.widgets._errors import FormError
from analytics_nb.widgets.views import column, fill

__all__ = ["FlagPicker"]


class FlagPicker:
    """The search box (``.search``, CSS ``anb-flags-search``: a case-insensitive part of a key or name), the
    multi-select (``.select``, CSS ``anb-flags-picker``) and the count line (``.count``, ``anb-flags-count``).

    ``keys`` are the offered flag keys (all of them, whatever the filter shows) and ``picked`` the chosen
    ones. Changing the pick calls ``on_change``.
    """

    def __init__(self, *, on_change: Callable[[], object]) -> None:
        self._on_change = on_change
        self._options: list[tuple[str, str]] = []  # (label, key) of every offered flag
        self._names: dict[str, str] = {}  # key -> the flag's name, searched too
        self._picked: list[str] = []
        self._syncing = False
        self.search = w.Text(
            value="",
            placeholder="search flags",
            description="Flags",
            continuous_update=True,
            layout=fill("360px"),
        )
        self.select = w.SelectMultiple(options=[], rows=8, description="", layout=fill("360px"))
        self.count = w.HTML(value="")
        self.search.add_class("anb-flags-search")
        self.select.add_class("anb-flags-picker")
        self.count.add_class("anb-flags-count")
        self.search.observe(lambda _c: self._show(), names="value")
        self.select.observe(lambda _c: self._selected(), names="value")
        self.controls: list[w.Widget] = [self.search, self.select]
        self.root = column(self.search, self.select, self.count, css_class="anb-flags")

    @property
    def keys(self) -> list[str]:
        """The keys offered (deleted flags are left out), whatever the search shows."""
        return [key for _label, key in self._options]

    @property
    def shown(self) -> list[str]:
        """The keys the search shows."""
        return [str(key) for _label, key in self.select.options]

    @property
    def picked(self) -> list[str]:
        """The picked keys, in the order offered (hidden by the search or not)."""
        return [key for key in self.keys if key in self._picked]

    def offer(self, flags: list[dict[str, Any]]) -> None:
        """Offer these flag definitions (inactive ones marked), keeping the picks that are still offered."""
        self._options = [
            (str(f["key"]) + ("" if f.get("active", True) else " (inactive)"), str(f["key"]))
            for f in flags
            if not f.get("deleted")
        ]
        self._names = {str(f["key"]): str(f.get("name") or "") for f in flags}
        self._picked = [k for k in self._picked if k in self.keys]
        self._show()

    def filter(self, text: str) -> list[str]:
        """Show only the flags whose key or name contains ``text`` (case-insensitive); returns those keys."""
        self.search.value = text
        return self.shown

    def pick(self, *keys: str) -> None:
        """Pick these flags (none: all flags); FormError naming the known flags for an unknown key."""
        unknown = [k for k in keys if k not in self.keys]
        if unknown:
            raise FormError(
                f"No flag {unknown[0]!r} in the definitions; known flags: {', '.join(self.keys)}."
            )
        self._picked = list(dict.fromkeys(keys))
        self._show()
        self._on_change()

    def _matches(self, key: str, needle: str) -> bool:
        return not needle or needle in key.lower() or needle in self._names.get(key, "").lower()

    def _show(self) -> None:
        """Put the options the search matches in the list, with the picks among them selected."""
        needle = str(self.search.value).strip().lower()
        options = [(label, key) for label, key in self._options if self._matches(key, needle)]
        shown = {key for _label, key in options}
        self._syncing = True
        try:
            self.select.options = options
            self.select.value = tuple(k for k in self.picked if k in shown)
        finally:
            self._syncing = False
        self._count(len(options))

    def _selected(self) -> None:
        """The user changed the selection among the shown flags: picks of hidden flags stay."""
        if self._syncing:
            return
        shown = set(self.shown)
        chosen = {str(k) for k in self.select.value}
        self._picked = [k for k in self.keys if (k in self._picked and k not in shown) or k in chosen]
        self._count(len(shown))
        self._on_change()

    def _count(self, shown: int) -> None:
        total, picked = len(self._options), len(self._picked)
        hidden = len([k for k in self._picked if k not in set(self.shown)])
        parts = [f"{shown} of {total} flags shown" if shown != total else f"{total} flags"]
        parts.append(
            f"{picked} picked" + (f" ({hidden} hidden by the search)" if hidden else "")
            if picked
            else "none picked: all run"
        )
        self.count.value = f"<small>{html.escape('; '.join(parts))}</small>"
