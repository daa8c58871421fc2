"""``SourceEditor``: the picked transformation's source files: a file picker, a text editor, Save file."""

from __future__ import annotations

from collections.abc import Callable

import ipywidgets as w

from analytics_nb.widgets._errors import FormError
from analytics_nb.widgets.views import column, fill, row

__all__ = ["SourceEditor"]


class SourceEditor:
    """State: ``sources`` (``{filename: content}``). Controls: ``file_picker``, ``editor`` (the text),
    ``save`` ("Save file").

    CSS: ``anb-source-file``, ``anb-source`` (the editor), ``anb-source-save``.
    """

    def __init__(self, *, on_save: Callable[[], object]) -> None:
        self.sources: dict[str, str | None] = {}
        self.file_picker = w.Dropdown(options=[], description="File", layout=fill("460px"))
        self.editor = w.Textarea(layout=w.Layout(width="100%", max_width="100%", height="260px"))
        self.save = w.Button(description="Save file", icon="save", button_style="primary")
        self.file_picker.add_class("anb-source-file")
        self.editor.add_class("anb-source")
        self.save.add_class("anb-source-save")
        self._quiet = False
        self.file_picker.observe(
            lambda c: self.open(c["new"]) if c["new"] and not self._quiet else None, names="value"
        )
        self.save.on_click(lambda _b: on_save())
        self.controls: list[w.Widget] = [self.file_picker, self.save]
        self.root = column(row(self.file_picker, self.save), self.editor, css_class="anb-source-view")

    @property
    def filename(self) -> str | None:
        """The open file."""
        value = self.file_picker.value
        return None if value is None else str(value)

    @property
    def is_dirty(self) -> bool:
        """True when the editor holds edits to the open file that are not saved."""
        name = self.filename
        return bool(name) and self.editor.value != (self.sources.get(name or "") or "")

    def show(self, sources: dict[str, str | None]) -> None:
        """Offer ``sources`` and open the first file (by name)."""
        self.sources = dict(sources)
        names = sorted(self.sources)
        self._quiet = True
        try:
            self.file_picker.options = names
            self.file_picker.value = None
        finally:
            self._quiet = False
        self.editor.value = ""
        if names:
            self.file_picker.value = names[0]

    def open(self, filename: str) -> None:
        """Show source file ``filename`` in the editor."""
        if filename not in self.sources:
            raise FormError(
                f"No source file {filename!r}; the files are {', '.join(self.sources) or '(none)'}."
            )
        if self.file_picker.value != filename:
            self.file_picker.value = filename  # the observer comes back here
            return
        self.editor.value = self.sources[filename] or ""
