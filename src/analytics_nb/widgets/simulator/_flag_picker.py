"""``FlagPicker``: which flags of the definitions the next run simulates (none picked: all flags)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets as w

from analytics_nb.widgets._errors import FormError
from analytics_nb.widgets.views import fill

__all__ = ["FlagPicker"]


class FlagPicker:
    """The multi-select (``.select``, CSS ``anb-flags-picker``); ``keys`` are the offered flag keys and
    ``picked`` the chosen ones. Changing the pick calls ``on_change``."""

    def __init__(self, *, on_change: Callable[[], object]) -> None:
        self.select = w.SelectMultiple(options=[], rows=6, description="Flags", layout=fill("360px"))
        self.select.add_class("anb-flags-picker")
        self.select.observe(lambda _c: on_change(), names="value")
        self.controls: list[w.Widget] = [self.select]
        self.root = self.select

    @property
    def keys(self) -> list[str]:
        """The keys offered (deleted flags are left out)."""
        return [str(key) for _label, key in self.select.options]

    @property
    def picked(self) -> list[str]:
        """The picked keys, in the order offered."""
        return [str(key) for key in self.select.value]

    def offer(self, flags: list[dict[str, Any]]) -> None:
        """Offer these flag definitions (inactive ones marked), keeping the picks that are still offered."""
        options = [
            (str(f["key"]) + ("" if f.get("active", True) else " (inactive)"), str(f["key"]))
            for f in flags
            if not f.get("deleted")
        ]
        keys = [key for _label, key in options]
        kept = tuple(k for k in self.select.value if k in keys)
        self.select.options = options
        self.select.value = kept

    def pick(self, *keys: str) -> None:
        """Pick these flags (none: all flags); FormError naming the known flags for an unknown key."""
        unknown = [k for k in keys if k not in self.keys]
        if unknown:
            raise FormError(
                f"No flag {unknown[0]!r} in the definitions; known flags: {', '.join(self.keys)}."
            )
        self.select.value = tuple(keys)
