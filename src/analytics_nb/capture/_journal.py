"""The capture journal: what each ``capture_frame`` run meant to send and what the service acknowledged, on
disk, so that a run outlives the kernel that started it.

Where: ``$ANALYTICS_NB_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/analytics_nb`` (``~/.cache/analytics_nb``;
``~/Library/Caches/analytics_nb`` on macOS, ``%LOCALAPPDATA%\\analytics_nb\\Cache`` on Windows), in
``capture-journal/<target>/``: folders 0700, files 0600. ``<target>`` is a digest of the ingestion host and
the project API key (the key itself is never written). One file per run, ``<run key>.jrn``, of lines:

* a JSON header: version, run key, target, start time;
* ``S <base64>``: slots the run will send, 16 bytes each (core key, content identity: two 64-bit digests,
  ``capture._events``), written *before* their batches are sent;
* ``A<code><base64>``: slot numbers (32-bit) the service acknowledged (``s``: stored) or refused (``r``),
  written after each answer.

No event content is written, only digests. Every line is one ``write`` on a file opened for appending
(atomic between processes on a local disk), under an advisory lock (``fcntl.flock``) where the platform has
one; choosing a run and writing its slots hold the target's lock, so two kernels sending the same frame at
once share one run (the same uuids: the service keeps one event each). A last line without its newline (a
write cut short) is ignored; any other line that does not parse makes the file *corrupt*: it is renamed
``<name>.corrupt-<time>`` and a ``CaptureJournalWarning`` says so.

Bounds: runs older than ``MAX_AGE`` (30 days), more than ``MAX_RUNS`` (64) runs per target, and the oldest
runs beyond ``MAX_BYTES`` (256 MB) for the whole journal are deleted when a run starts (about 21 bytes a row).
When the folder cannot be written the journal is kept in memory for this process, with a warning.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import hashlib
import json
import os
import sys
import threading
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = [
    "MAX_AGE",
    "MAX_BYTES",
    "MAX_RUNS",
    "CaptureJournalWarning",
    "JournalRun",
    "JournalWriter",
    "journal_dir",
    "load_runs",
    "occurrence_ranks",
    "target_lock",
    "target_of",
]

ENV_DIR = "ANALYTICS_NB_CACHE_DIR"
MAX_AGE = dt.timedelta(days=30)
"""Runs whose file was last written longer ago are deleted (PostHog merges a uuid within one day anyway)."""
MAX_RUNS = 64
"""Runs kept per target (host + project); the oldest beyond go first."""
MAX_BYTES = 256 * 1024 * 1024
"""Size of the whole journal; the oldest runs beyond go first (a run of 1M rows takes about 21 MB)."""
VERSION = 1
_SLOT = np.dtype(">u8")
_ACK = np.dtype(">u4")
_CHUNK = 4096
"""Slots (or acknowledged slot numbers) per journal line."""

try:
    import fcntl
except ImportError:  # Windows: appends stay single writes; no advisory lock
    fcntl = None  # type: ignore[assignment]


def occurrence_ranks(keys: np.ndarray) -> np.ndarray:
    """For each element, how many earlier elements hold the same key (0 for the first of each key)."""
    if keys.size == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    starts = np.r_[True, ordered[1:] != ordered[:-1]]
    first = np.maximum.accumulate(np.where(starts, np.arange(ordered.size), 0))
    ranks = np.empty(keys.size, dtype=np.int64)
    ranks[order] = np.arange(ordered.size) - first
    return ranks


class CaptureJournalWarning(UserWarning):
    """The capture journal could not be used as is: a corrupt file set aside, or a folder that cannot be
    written (the journal is then kept in memory, so a new process cannot resume this process's runs)."""


def journal_dir() -> Path:
    """The folder of the capture journal (``ANALYTICS_NB_CACHE_DIR``, else the user's cache folder)."""
    given = os.environ.get(ENV_DIR)
    if given:
        base = Path(given).expanduser()
    elif os.environ.get("XDG_CACHE_HOME"):
        base = Path(os.environ["XDG_CACHE_HOME"]).expanduser() / "analytics_nb"
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches" / "analytics_nb"
    elif sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA", Path.home())) / "analytics_nb" / "Cache"
    else:
        base = Path.home() / ".cache" / "analytics_nb"
    return base / "capture-journal"


def target_of(host: str, project_api_key: str) -> str:
    """The journal's name for a project: a digest of the ingestion host and the project API key (the key is
    never stored; the digest cannot be turned back into it)."""
    text = f"analytics_nb capture journal\0{host.rstrip('/')}\0{project_api_key}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


@dataclass
class JournalRun:
    """One journaled run: its key, start time, slots (core keys and content identities, in slot order) and
    each slot's outcome (0: none yet, 1: stored, 2: refused by the service)."""

    run_key: str
    at: dt.datetime
    cores: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint64))
    contents: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint64))
    settled: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint8))
    mtime: float = 0.0

    @property
    def size(self) -> int:
        return int(self.cores.size)

    @property
    def finished(self) -> bool:
        """Every slot has an outcome (stored or refused)."""
        return self.size > 0 and bool((self.settled != 0).all())

    def ks(self) -> list[int]:
        """Each slot's k: how many earlier slots share its core key."""
        ranks: list[int] = occurrence_ranks(self.cores).tolist()
        return ranks


# -- the store: files on disk, or (folder not writable) bytes in memory -----------------------------------

_memory: dict[str, dict[str, bytearray]] = {}
_memory_lock = threading.RLock()
_warned_memory: set[Path] = set()


def _usable_dir(target: str) -> Path | None:
    """The target's folder (created 0700), or None when it cannot be written (warned once a folder)."""
    folder = journal_dir() / target
    try:
        for part in (folder.parent.parent, folder.parent, folder):
            part.mkdir(mode=0o700, exist_ok=True)
        for part in (folder.parent, folder):
            if part.stat().st_mode & 0o077:
                part.chmod(0o700)
        probe = folder / ".lock"
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT, 0o600)
        os.close(fd)
        return folder
    except OSError as exc:
        if folder.parent not in _warned_memory:
            _warned_memory.add(folder.parent)
            warnings.warn(
                f"the capture journal folder {folder.parent} cannot be written ({exc.strerror}): runs are "
                f"journaled in memory only, so a new kernel cannot resume them; set {ENV_DIR} to a "
                "writable folder",
                CaptureJournalWarning,
                stacklevel=5,
            )
        return None


@contextlib.contextmanager
def target_lock(target: str) -> Iterator[None]:
    """Hold the target's lock (between processes with ``flock``; within this one, a lock) while a run is
    chosen and its slots written."""
    folder = _usable_dir(target)
    with _memory_lock:
        if folder is None or fcntl is None:
            yield
            return
        fd = os.open(folder / ".lock", os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


def _encode_lines(kind: str, values: np.ndarray) -> bytes:
    raw = values.tobytes()
    step = _CHUNK * values.dtype.itemsize * (2 if kind == "S" else 1)
    return b"".join(
        kind.encode("ascii") + b" " * (kind == "S") + base64.b64encode(raw[i : i + step]) + b"\n"
        for i in range(0, len(raw), step)
    )


class JournalWriter:
    """Appends to one run's file (or its memory copy): slots before sending, outcomes after each answer."""

    def __init__(self, target: str, run_key: str, at: dt.datetime, *, new: bool) -> None:
        self.target = target
        self.run_key = run_key
        self.folder = _usable_dir(target)
        self.failed: str | None = None
        if new:
            header = {"v": VERSION, "run": run_key, "target": target, "at": at.isoformat()}
            self._append(json.dumps(header, separators=(",", ":")).encode("ascii") + b"\n")
        elif self.folder is not None:
            self._cut_torn_tail()

    def _cut_torn_tail(self) -> None:
        """Drop a last line cut short (a process killed inside a large write) before appending to the file,
        so that the next line does not run into it (under the file's lock: no append is half done)."""
        path = self.folder / f"{self.run_key}.jrn" if self.folder is not None else None
        if path is None or not path.exists():
            return
        with contextlib.suppress(OSError), path.open("r+b") as fh:
            if fcntl is not None:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            data = fh.read()
            if data and not data.endswith(b"\n"):
                fh.truncate(data.rfind(b"\n") + 1)

    def _append(self, data: bytes) -> None:
        if not data or self.failed is not None:
            return
        if self.folder is None:
            with _memory_lock:
                _memory.setdefault(self.target, {}).setdefault(self.run_key, bytearray()).extend(data)
            return
        try:
            fd = os.open(self.folder / f"{self.run_key}.jrn", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                if fcntl is not None:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
        except OSError as exc:  # disk full, folder removed: said in the report's attrs, nothing is lost here
            self.failed = f"the capture journal could not be written ({exc.strerror})"

    def add_slots(self, cores: list[int], contents: list[int]) -> None:
        """Journal new slots (before their events are sent)."""
        pairs = np.empty(2 * len(cores), dtype=_SLOT)
        pairs[0::2] = cores
        pairs[1::2] = contents
        self._append(_encode_lines("S", pairs))

    def settle(self, slots: list[int], code: str) -> None:
        """Journal slots the service answered for: ``"s"`` stored, ``"r"`` refused."""
        self._append(_encode_lines("A" + code, np.asarray(slots, dtype=_ACK)))


# -- reading -------------------------------------------------------------------------------------------------


class _Corrupt(ValueError):
    pass


def _parse(data: bytes, run_key: str) -> JournalRun:
    """A run from its file's bytes; ``_Corrupt`` naming the line that does not parse."""
    lines = data.split(b"\n")
    lines.pop()  # the text after the last newline: empty, or a write cut short (ignored)
    if not lines:
        raise _Corrupt("no header line")
    try:
        header = json.loads(lines[0])
        at = dt.datetime.fromisoformat(header["at"])
    except (ValueError, KeyError, TypeError) as exc:
        raise _Corrupt(f"line 1: {exc}") from None
    if header.get("v") != VERSION or header.get("run") != run_key:
        raise _Corrupt("line 1: not a version-1 header of this run")
    slots: list[bytes] = []
    acks: list[tuple[int, bytes]] = []
    for number, line in enumerate(lines[1:], start=2):
        try:
            if line.startswith(b"S "):
                raw = base64.b64decode(line[2:], validate=True)
                if len(raw) % 16:
                    raise ValueError("a slot line is not whole slots")
                slots.append(raw)
            elif line[:2] in (b"As", b"Ar"):
                raw = base64.b64decode(line[2:], validate=True)
                if len(raw) % 4:
                    raise ValueError("an outcome line is not whole slot numbers")
                acks.append((1 if line[1:2] == b"s" else 2, raw))
            else:
                raise ValueError("unknown line")
        except ValueError as exc:
            raise _Corrupt(f"line {number}: {exc}") from None
    pairs = np.frombuffer(b"".join(slots), dtype=_SLOT).astype(np.uint64)
    run = JournalRun(run_key, at, pairs[0::2].copy(), pairs[1::2].copy())
    run.settled = np.zeros(run.size, dtype=np.uint8)
    for code, raw in acks:
        where = np.frombuffer(raw, dtype=_ACK).astype(np.int64)
        if where.size and int(where.max()) >= run.size:
            raise _Corrupt("an outcome names a slot the file does not hold")
        run.settled[where] = code
    return run


def _set_aside(path: Path, why: str) -> None:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    aside = path.with_name(f"{path.name}.corrupt-{stamp}")
    with contextlib.suppress(OSError):
        path.rename(aside)
    warnings.warn(
        f"capture journal file {path} is corrupt ({why}); it was set aside as {aside.name}. The run it "
        "held cannot be found by itself: pass resume=<its report or run key> to finish it without doubles.",
        CaptureJournalWarning,
        stacklevel=5,
    )


def load_runs(target: str) -> list[JournalRun]:
    """The target's journaled runs, newest first (corrupt files set aside with a warning)."""
    folder = _usable_dir(target)
    if folder is None:
        with _memory_lock:
            stored = dict(_memory.get(target, {}))
        runs = [_parse(bytes(data), key) for key, data in stored.items()]
        return sorted(runs, key=lambda r: r.at, reverse=True)
    runs = []
    for path in folder.glob("*.jrn"):
        try:
            data = path.read_bytes()
            mtime = path.stat().st_mtime
        except OSError:
            continue  # pruned by another process meanwhile
        try:
            run = _parse(data, path.stem)
        except _Corrupt as exc:
            _set_aside(path, str(exc))
            continue
        run.mtime = mtime
        runs.append(run)
    return sorted(runs, key=lambda r: r.at, reverse=True)


def prune(target: str, keep: str | None = None) -> None:
    """Delete runs beyond the bounds (``MAX_AGE``, ``MAX_RUNS`` per target, ``MAX_BYTES`` in all), oldest
    first; never ``keep`` (the run starting now)."""
    root = journal_dir()
    if _usable_dir(target) is None:
        return
    now = dt.datetime.now(dt.UTC).timestamp()
    files: list[tuple[float, int, Path]] = []
    for path in root.glob("*/*.jrn*"):
        with contextlib.suppress(OSError):
            info = path.stat()
            files.append((info.st_mtime, info.st_size, path))
    files.sort(reverse=True)  # newest first
    total = 0
    per_target: dict[str, int] = {}
    for mtime, size, path in files:
        count = per_target.get(path.parent.name, 0) + 1
        per_target[path.parent.name] = count
        total += size
        if path.stem == keep:
            continue
        if now - mtime > MAX_AGE.total_seconds() or count > MAX_RUNS or total > MAX_BYTES:
            with contextlib.suppress(OSError):
                path.unlink()
