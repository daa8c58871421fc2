"""``ConfirmRow``: "Do X? [Yes, X] [Cancel]" shown under a form before a destructive action.

The row wraps inside its column (its question shrinks and breaks lines), so showing it never widens the
panel or pushes a neighbouring view off the cell.
"""

from __future__ import annotations

from collections.abc import Callable

import ipywidgets as w

from analytics_nb.widgets.views._layout import row

__all__ = ["ConfirmRow"]


class ConfirmRow:
    """A hidden row with a question (``.question``) and two buttons; ``ask`` shows it, ``hide`` hides it.

    CSS: the row ``anb-<name>``, its buttons ``anb-<name>-yes`` and ``anb-<name>-cancel``.
    """

    def __init__(
        self, name: str, yes: str, *, on_yes: Callable[[], object], on_cancel: Callable[[], object]
    ) -> None:
        self.question = w.HTML(value="", layout=w.Layout(flex="1 1 240px", min_width="0", max_width="100%"))
        self.yes = w.Button(description=yes, button_style="danger")
        self.yes.add_class(f"anb-{name}-yes")
        self.cancel = w.Button(description="Cancel")
        self.cancel.add_class(f"anb-{name}-cancel")
        self.yes.on_click(lambda _b: on_yes())
        self.cancel.on_click(lambda _b: on_cancel())
        self.root = row(self.question, self.yes, self.cancel, css_class=f"anb-{name}", width="100%")
        self.root.layout.display = "none"

    @property
    def visible(self) -> bool:
        """True while the question is shown."""
        return self.root.layout.display != "none"

    def ask(self, question_html: str) -> None:
        """Show the row with ``question_html`` (already escaped by the caller)."""
        self.question.value = question_html
        self.root.layout.display = "flex"

    def hide(self) -> None:
        """Hide the row."""
        self.root.layout.display = "none"
