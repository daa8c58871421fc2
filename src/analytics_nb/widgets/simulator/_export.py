"""``ExportView``: the last result as CSV: a browser download, plus a file on the server only when asked.

"Export CSV" turns the result into a download link (an ``<a download>`` with a ``data:`` URL, rebuilt on
every export), so in JupyterLab and Voila the file lands in the browser's downloads. A file is written on
the server (the kernel's machine) only when a server path is given. The CSV is
``analytics_nb.frames.to_csv``'s (``read_csv`` reads it back with the same dtypes), the same as
``SimulationResult.to_csv``.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Callable
from pathlib import Path

import ipywidgets as w
import pandas as pd

from analytics_nb.frames import to_csv
from analytics_nb.widgets._errors import FormError
from analytics_nb.widgets.views import column, fill, row

__all__ = ["MAX_DOWNLOAD_BYTES", "ExportView", "download_link_html"]

#: Above this a CSV goes through the notebook's connection too slowly: use a server path instead.
MAX_DOWNLOAD_BYTES = 25_000_000


def download_link_html(csv_text: str, filename: str) -> str:
    """An ``<a download>`` link carrying ``csv_text`` as a base64 ``data:`` URL (CSS ``anb-download``)."""
    data = csv_text.encode("utf-8")
    encoded = base64.b64encode(data).decode("ascii")
    size = f"{len(data) / 1000:.1f} kB" if len(data) < 1_000_000 else f"{len(data) / 1e6:.1f} MB"
    name = html.escape(filename, quote=True)
    return (
        f'<a class="anb-download" download="{name}" href="data:text/csv;charset=utf-8;base64,{encoded}" '
        'style="display:inline-block;padding:2px 10px;border:1px solid #1976d2;border-radius:3px;'
        f'color:#1976d2;text-decoration:none">⬇ Download {name} ({size})</a>'
    )


def _csv_name(text: str, what: str) -> str:
    name = text.strip()
    if not name.lower().endswith(".csv"):
        raise FormError(f"The {what} {name!r} should end in .csv, e.g. 'simulation.csv'.")
    return name


class ExportView:
    """Controls: ``filename`` (the download's name), ``server_path`` (optional: also write this file on the
    server), ``inputs`` ("with inputs": the input property columns beside the flags), ``export``
    ("Export CSV"); ``link`` holds the download link, ``label`` what was written.

    State: ``csv_text`` (the last exported CSV), ``written`` (the server file, or None).
    CSS: ``anb-export-filename``, ``anb-export-server-path``, ``anb-export-inputs``, ``anb-export-export``,
    ``anb-export-download``
    (the link's box; the ``<a>`` inside is ``a.anb-download``), ``anb-export-label``.
    """

    def __init__(self, *, on_export: Callable[[], object]) -> None:
        self.csv_text: str | None = None
        self.written: Path | None = None
        self.filename = w.Text(value="simulation.csv", description="CSV file", layout=fill("320px"))
        self.server_path = w.Text(
            value="",
            placeholder="optional: also save on the server",
            description="Server path",
            layout=fill("360px"),
        )
        self.export = w.Button(description="Export CSV", icon="download")
        self.inputs = w.Checkbox(
            value=True, description="with inputs", indent=False, layout=w.Layout(width="auto", min_width="0")
        )
        self.link = w.HTML(value="")
        self.label = w.HTML(value="")
        for control, name in (
            (self.filename, "filename"),
            (self.server_path, "server-path"),
            (self.export, "export"),
            (self.inputs, "inputs"),
            (self.link, "download"),
            (self.label, "label"),
        ):
            control.add_class(f"anb-export-{name}")
        self.export.on_click(lambda _b: on_export())
        self.controls: list[w.Widget] = [self.export]
        self.root = column(
            row(self.filename, self.inputs, self.export, self.link),
            row(self.server_path, self.label),
            css_class="anb-export",
        )

    def target(self, path: str | Path | None) -> Path | None:
        """The server file to write: ``path``, else the server path box, else None (download only)."""
        text = str(path) if path is not None else str(self.server_path.value)
        return Path(_csv_name(text, "server path")) if text.strip() else None

    def offer(self, frame: pd.DataFrame) -> str:
        """Build the download link for ``frame`` (FormError when it is too big for a browser download)."""
        name = _csv_name(str(self.filename.value) or "simulation.csv", "file name")
        text = to_csv(frame)
        assert text is not None  # to_csv returns the text when given no path
        if len(text) > MAX_DOWNLOAD_BYTES:
            raise FormError(
                f"The CSV is {len(text) / 1e6:.0f} MB, too big to send to the browser; type a server path "
                "(e.g. results/simulation.csv) and export again to write it on the server."
            )
        self.csv_text = text
        self.link.value = download_link_html(text, Path(name).name)
        return text

    def wrote(self, path: Path) -> None:
        """Say where the server file went."""
        self.written = path
        self.label.value = f"written on the server: <code>{html.escape(str(path))}</code>"

    def clear(self) -> None:
        """No result to export: no link, no label."""
        self.csv_text = None
        self.written = None
        self.link.value = ""
        self.label.value = ""
