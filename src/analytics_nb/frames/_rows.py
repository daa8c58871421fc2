"""Listing pages decoded straight into compact rows (msgspec, the ``fast`` extra), and frames built from them.

Why: listing 10,000 playlists into a frame spent half of the client's CPU turning JSON into dicts (about
300,000 Python objects, a dict per record and two per nested user) that the frame builder then took apart. A
``RowFormat`` knows the wire fields of one kind of record, so msgspec decodes each page into one compact row
per record (a ``Struct`` the cyclic GC does not track), keeps each nested user as its raw JSON bytes, and the
frame is built from the rows with every distinct user decoded once (a listing repeats a handful of users).

Exactness comes first. The rows are a shortcut, never a second reading of the service's answer:

The one fallback rule: a page that does not fit the format exactly (a field the format does not know, a
value of another JSON type than the column's, invalid UTF-8, anything msgspec reads differently from
``json``, e.g. ``NaN``) is not decoded here (``decode`` answers None) and the client reads it as JSON dicts;
a listing with any such page is built from dicts (``frame``). Rows and dicts feed the same column builders
(``assemble_frame``), so columns, dtypes, values, extra-field columns and the error a refused value raises
are those of ``playlists_frame`` over the dicts.

Without msgspec installed ``decode`` always answers None: everything works, at the dict path's speed.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from analytics_nb.frames._schema import (
    Kind,
    UserBlock,
    _as_user,
    assemble_frame,
    gc_paused,
)

__all__ = ["RowFormat", "msgspec_module"]


def msgspec_module() -> Any:
    """The msgspec module, or None when it is not installed (the ``fast`` extra brings it)."""
    try:
        return importlib.import_module("msgspec")
    except ImportError:
        return None


#: The Python type a row field is declared with, by column kind. Types only where msgspec accepts exactly the
#: JSON values ``json`` reads as that type: ``float`` is left ``Any`` because msgspec would turn an integer
#: into a float there, and date-times stay text for the column builder to parse as it always does.
_FIELD_TYPES: dict[str, Any] = {"int": int, "bool": bool, "str": str, "datetime": str}


class RowFormat:
    """The wire fields of one kind of listed record, and the frame builder they feed.

    ``spec``/``users``/``tail`` are the frame builder's own layout (see ``build_frame``); ``build`` is that
    builder over dicts (``playlists_frame``), used whenever the rows cannot be (see the module docstring).
    """

    def __init__(
        self,
        name: str,
        *,
        spec: Sequence[tuple[str, Kind]],
        users: Sequence[str],
        tail: Sequence[tuple[str, Kind]],
        build: Callable[[list[dict[str, Any]]], pd.DataFrame],
    ) -> None:
        self.name = name
        self.spec = list(spec)
        self.users = list(users)
        self.tail = list(tail)
        self.build = build
        # (msgspec, the row class, the page decoder), made on first use
        self._types: tuple[Any, Any, Any] | None = None
        self._loaded = False

    # -- decoding --------------------------------------------------------------------------------------------
    def _load(self) -> tuple[Any, Any, Any] | None:
        """Make the row ``Struct`` and the page decoder (once); None without msgspec."""
        if not self._loaded:
            self._loaded = True
            msgspec = msgspec_module()
            if msgspec is not None:
                null = msgspec.Raw(b"null")
                fields: list[tuple[str, Any, Any]] = [
                    (name, (_FIELD_TYPES[kind] | None) if kind in _FIELD_TYPES else Any, None)
                    for name, kind in self.spec
                ]
                fields += [(prefix, msgspec.Raw, null) for prefix in self.users]
                fields += [(name, Any, None) for name, _ in self.tail]
                # gc=False: rows hold no reference cycles, and untracked rows spare the collector a re-scan of
                # every row on each pass; forbid_unknown_fields: a field we do not know sends the page the
                # dict way, where it becomes an extra column (nothing the service sent is dropped).
                row: Any = msgspec.defstruct(
                    f"{self.name}Row", fields, gc=False, forbid_unknown_fields=True, module=__name__
                )
                page = msgspec.defstruct(
                    f"{self.name}Page",
                    [("results", list[row]), ("count", Any, None), ("next", Any, None)],
                    gc=False,
                    module=__name__,
                )
                self._types = (msgspec, row, msgspec.json.Decoder(page))
        return self._types

    def decode(self, content: bytes) -> dict[str, Any] | None:
        """A page ``{"count", "next", "results": [rows]}`` from a listing answer's bytes, or None when the
        page does not fit this format exactly (or msgspec is missing): the caller then decodes it as JSON."""
        types = self._load()
        if types is None:
            return None
        msgspec, _row, decoder = types
        try:
            # msgspec would keep invalid UTF-8 inside a raw user; json refuses it (a ResponseFormatError)
            content.decode("utf-8")
            page = decoder.decode(content)
        except (msgspec.DecodeError, msgspec.ValidationError, ValueError, RecursionError):
            return None
        return {"count": page.count, "next": page.next, "results": page.results}

    def is_row(self, record: Any) -> bool:
        """Whether ``record`` is one of this format's rows (not a dict)."""
        types = self._load()
        return types is not None and record.__class__ is types[1]

    # -- frames ----------------------------------------------------------------------------------------------
    def as_dict(self, record: Any) -> dict[str, Any]:
        """A row as the dict the service sent (an absent field as None: the frame is the same either way)."""
        if not self.is_row(record):
            return dict(record)
        msgspec = self._types[0]  # type: ignore[index]  # is_row implies loaded
        out = {name: getattr(record, name) for name in record.__struct_fields__}
        for prefix in self.users:
            out[prefix] = msgspec.json.decode(out[prefix])
        return out

    def frame(self, records: list[Any]) -> pd.DataFrame:
        """The frame ``build`` gives for these records (rows, dicts or a mix): built from the rows when all
        are rows, otherwise by ``build`` over the dicts (the one fallback rule, see the module docstring).
        A value the column builders refuse raises the error ``build`` would raise (the same builders)."""
        if records and all(map(self.is_row, records)):
            with gc_paused():
                return self._frame_from_rows(records)
        return self.build([self.as_dict(record) for record in records])

    def _frame_from_rows(self, rows: list[Any]) -> pd.DataFrame:
        msgspec = self._types[0]  # type: ignore[index]  # frame() checked every record is a row
        n = len(rows)
        names = rows[0].__struct_fields__
        cols = dict(zip(names, zip(*map(msgspec.structs.astuple, rows), strict=True), strict=True))
        people: dict[str, UserBlock] = {}
        for prefix in self.users:
            # Equal raw JSON is an equal user: decode each distinct one once, and number the rows by it.
            index: dict[bytes, int] = {}
            codes = np.fromiter(
                (index.setdefault(bytes(raw), len(index)) for raw in cols[prefix]), dtype=np.intp, count=n
            )
            decoded = [msgspec.json.decode(raw) for raw in index]
            users = [u if u.__class__ is dict else _as_user(u) for u in decoded]
            people[prefix] = UserBlock(users, codes)
        return assemble_frame(cols, n, self.spec, people, self.tail, extras=True)
