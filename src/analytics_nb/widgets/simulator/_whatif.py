"""``WhatIfView``: rollout and variant-weight sliders for the picked flags, edits against the definitions.

The sliders start at the current definitions; ``edits`` lists only what moved, and ``edited`` applies it
with ``with_rollout`` / ``with_variant_weights`` (the current definitions are never changed).
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

import ipywidgets as w

from analytics_nb.simulation import Definitions, with_rollout, with_variant_weights
from analytics_nb.widgets._errors import FormError
from analytics_nb.widgets.views import column, row

__all__ = ["WhatIfView", "describe_edits"]


def _condition_text(group: dict[str, Any]) -> str:
    props = group.get("properties") or []
    if not props:
        return "everyone"
    return " and ".join(
        f"{p.get('key')} {p.get('operator') or 'exact'} {p.get('value')!r}"
        for p in props
        if isinstance(p, dict)
    )


def describe_edits(edits: dict[str, dict[str, Any]]) -> str:
    """The edits in words: ``half: condition 1 at 100%; exp: control 0% / test 100%``."""
    parts = []
    for key, edit in edits.items():
        bits = [f"condition {i + 1} at {pct:g}%" for i, pct in edit.get("rollout", {}).items()]
        if "weights" in edit:
            bits.append(" / ".join(f"{name} {pct}%" for name, pct in edit["weights"].items()))
        parts.append(f"{key}: {', '.join(bits)}")
    return "; ".join(parts)


class WhatIfView:
    """State: ``rollout`` (``{flag: [slider per condition set]}``), ``weights`` (``{flag: {variant:
    slider}}``). ``reset`` ("Reset what-if") puts every slider back.

    CSS: ``anb-whatif`` (the view), ``anb-whatif-row`` (one flag), ``anb-whatif-rollout``,
    ``anb-whatif-weight`` (sliders), ``anb-whatif-reset``.
    """

    def __init__(self, *, on_reset: Callable[[], object]) -> None:
        self.rollout: dict[str, list[w.FloatSlider]] = {}
        self.weights: dict[str, dict[str, w.IntSlider]] = {}
        self.box = w.VBox([], layout=w.Layout(max_width="100%"))
        self.reset_button = w.Button(description="Reset what-if", icon="undo")
        self.reset_button.add_class("anb-whatif-reset")
        self.reset_button.on_click(lambda _b: on_reset())
        self.controls: list[w.Widget] = [self.reset_button]
        self._definitions: Definitions | None = None
        self._keys: list[str] = []
        self.root = column(
            w.HTML(value="<b>What-if</b> (local engine): edit the current definitions before the run"),
            self.box,
            self.reset_button,
            css_class="anb-whatif",
        )

    @property
    def visible(self) -> bool:
        """True while the view is shown (the local engine with definitions)."""
        return self.root.layout.display != "none"

    @visible.setter
    def visible(self, on: bool) -> None:
        self.root.layout.display = "flex" if on else "none"

    def build(self, definitions: Definitions | None, keys: list[str]) -> None:
        """Sliders for the flags ``keys``; a slider that already exists keeps its value."""
        self._definitions, self._keys = definitions, list(keys)
        if definitions is None:
            self.rollout, self.weights = {}, {}
            self.box.children = []
            return
        flags = definitions.by_key()
        rows: list[w.Widget] = []
        rollout: dict[str, list[w.FloatSlider]] = {}
        weights: dict[str, dict[str, w.IntSlider]] = {}
        for key in keys:
            filters = flags[key].get("filters") or {}
            parts: list[w.Widget] = [
                w.HTML(value=f"<code>{html.escape(key)}</code>", layout=w.Layout(width="170px"))
            ]
            old = self.rollout.get(key, [])
            rollout[key] = []
            for index, group in enumerate(filters.get("groups") or []):
                current = group.get("rollout_percentage")
                value = (
                    old[index].value if index < len(old) else (100.0 if current is None else float(current))
                )
                slider = w.FloatSlider(
                    value=value,
                    min=0,
                    max=100,
                    step=1,
                    description=f"cond {index + 1} %",
                    tooltip=_condition_text(group),
                    readout_format=".0f",
                    continuous_update=False,
                    layout=w.Layout(width="300px", max_width="100%"),
                )
                slider.add_class("anb-whatif-rollout")
                rollout[key].append(slider)
                parts.append(slider)
            variants = (filters.get("multivariate") or {}).get("variants") or []
            if variants:
                weights[key] = {}
                for variant in variants:
                    name = str(variant.get("key"))
                    old_v = self.weights.get(key, {}).get(name)
                    pct = variant.get("rollout_percentage") or 0
                    slider_v = w.IntSlider(
                        value=old_v.value if old_v is not None else round(pct),
                        min=0,
                        max=100,
                        description=name[:12],
                        tooltip=f"weight of variant {name} (all weights must add up to 100)",
                        continuous_update=False,
                        layout=w.Layout(width="260px", max_width="100%"),
                    )
                    slider_v.add_class("anb-whatif-weight")
                    weights[key][name] = slider_v
                    parts.append(slider_v)
            rows.append(row(*parts, css_class="anb-whatif-row"))
        self.rollout, self.weights = rollout, weights
        hint = "<i>Pick flags above to get rollout and variant-weight sliders for them.</i>"
        self.box.children = rows or [w.HTML(value=hint)]

    def reset_sliders(self) -> None:
        """Put every slider back to the current definitions."""
        self.rollout, self.weights = {}, {}
        self.build(self._definitions, self._keys)

    def set_rollout(self, key: str, pct: float, condition: int = 0) -> None:
        """Set the rollout (0-100) of condition set ``condition`` of the picked flag ``key``."""
        sliders = self.rollout.get(key)
        if not sliders:
            raise FormError(f"No rollout slider for {key!r}: pick the flag first (it needs condition sets).")
        if not 0 <= condition < len(sliders):
            raise FormError(f"Flag {key!r} has condition sets 0 to {len(sliders) - 1}, not {condition}.")
        if not 0 <= pct <= 100:
            raise FormError(f"The rollout of {key!r} must be from 0 to 100, got {pct!r}.")
        sliders[condition].value = float(pct)

    def set_weights(self, key: str, weights: dict[str, int]) -> None:
        """Set the variant weights of the picked multivariate flag ``key`` (adding up to 100)."""
        sliders = self.weights.get(key)
        if not sliders:
            raise FormError(f"{key!r} has no variant sliders: pick it first (it must be multivariate).")
        unknown = [v for v in weights if v not in sliders]
        if unknown:
            raise FormError(
                f"Flag {key!r} has no variant {unknown[0]!r}; its variants: {', '.join(sliders)}."
            )
        for name, slider in sliders.items():
            slider.value = int(weights.get(name, 0))

    def edits(self) -> dict[str, dict[str, Any]]:
        """What moved against the definitions: ``{flag: {"rollout": {cond: pct}, "weights": {...}}}``."""
        if self._definitions is None:
            return {}
        flags = self._definitions.by_key()
        edits: dict[str, dict[str, Any]] = {}
        for key, sliders in self.rollout.items():
            groups = (flags[key].get("filters") or {}).get("groups") or []
            for index, (slider, group) in enumerate(zip(sliders, groups, strict=False)):
                current = group.get("rollout_percentage")
                if abs(slider.value - (100.0 if current is None else float(current))) > 1e-9:
                    edits.setdefault(key, {}).setdefault("rollout", {})[index] = slider.value
        for key, variant_sliders in self.weights.items():
            mv = (flags[key].get("filters") or {}).get("multivariate") or {}
            current_w = {
                str(v.get("key")): v.get("rollout_percentage") or 0 for v in mv.get("variants") or []
            }
            chosen = {name: s.value for name, s in variant_sliders.items()}
            if any(abs(chosen[n] - current_w.get(n, 0)) > 1e-9 for n in chosen):
                edits.setdefault(key, {})["weights"] = chosen
        return edits

    def edited(self) -> Definitions | None:
        """The definitions with the edits applied (FormError when weights do not add up to 100)."""
        defs = self._definitions
        if defs is None:
            return None
        for key, edit in self.edits().items():
            for index, pct in edit.get("rollout", {}).items():
                defs = with_rollout(defs, key, pct, condition=index)
            if "weights" in edit:
                total = sum(edit["weights"].values())
                if total != 100:
                    raise FormError(
                        f"The variant weights of {key!r} add up to {total}, not 100; move the sliders so "
                        "they add up to 100 (or Reset what-if). Nothing was run."
                    )
                defs = with_variant_weights(defs, key, edit["weights"])
        return defs
