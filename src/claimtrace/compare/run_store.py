"""The runs a server compares, kept in one SQLite database beside the build: every worker
process of ``claimtrace serve --workers N`` reads and writes the same file, and a restart finds
what was uploaded before.

What is kept is each run's file, byte for byte, under its digest (:func:`run_digest`: the same
bytes are one run, whoever sends them), with its name, its kind (``"upload"`` or ``"given"``, a
file given at start) and when it was added. Reading a run (the course's shape, the audit) is the
caller's: the store holds bytes, not conclusions, so a new version of the reader reads old runs
afresh.

Concurrency: the database is in WAL mode (readers never wait for the writer, nor it for them),
each thread has its own connection, and every write is one ``BEGIN IMMEDIATE`` transaction, so
writes from several processes are taken one at a time (a writer waits up to
:data:`BUSY_SECONDS` for another's) and a killed process leaves the last committed state. Only
writes change it: a page that only reads never writes.

Size: past :attr:`RunStore.cap_bytes` of stored files, the oldest runs are evicted (never those
given to this server at its start), and each eviction is recorded (:meth:`RunStore.evicted`) so
that a page can say a run was evicted rather than that it never existed.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from claimtrace.errors import DataError

#: The database's layout version (``PRAGMA user_version``); a database of another is refused.
SCHEMA_VERSION = 1
#: How long a write waits for another process's to finish before giving up (a class uploading at
#: once: each write takes a few ms).
BUSY_SECONDS = 30.0
#: The stored files' total size past which the oldest runs are evicted: thousands of dev
#: predictions files (their size: docs/benchmarks.md, "A class: `claimtrace compare --class`").
DEFAULT_CAP_BYTES = 256 * 1024 * 1024
#: An in-memory store's name (tests, and a server without a file), made its own by a random part.
_MEMORY = "file:claimtrace-runs-{}?mode=memory&cache=shared"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    digest TEXT PRIMARY KEY,  -- run_digest of the bytes
    name TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('upload', 'given')),
    size INTEGER NOT NULL,
    added REAL NOT NULL,      -- seconds since the epoch: the eviction order, oldest first
    raw BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS evicted (
    digest TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    size INTEGER NOT NULL,
    added REAL NOT NULL,
    evicted REAL NOT NULL
);
"""


def run_digest(raw: bytes) -> str:
    """A run's key: the first 16 hex digits of its file's sha256 (``/compare/<digest>``)."""
    return hashlib.sha256(raw).hexdigest()[:16]


@dataclass(frozen=True)
class Stored:
    """One stored run's record (its bytes are read apart: :meth:`RunStore.raw`)."""

    digest: str
    name: str
    kind: str
    size: int
    added: float


@dataclass(frozen=True)
class Evicted:
    """A run evicted to keep the store under its cap: which, and when."""

    digest: str
    name: str
    size: int
    added: float
    evicted: float


class RunStore:
    """The runs of one build's servers, in the SQLite file ``path`` (created when missing), or
    in memory for this process alone when ``path`` is None."""

    def __init__(self, path: str | Path | None, cap_bytes: int = DEFAULT_CAP_BYTES):
        self.path = None if path is None else Path(path)
        self.cap_bytes = int(cap_bytes)
        self._local = threading.local()
        self._uri = _MEMORY.format(uuid.uuid4().hex) if path is None else None
        # An in-memory database lives while a connection to it is open: this one keeps it.
        self._keeper = self._connect() if self._uri else None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._check_schema()

    def __repr__(self) -> str:
        return f"RunStore({str(self.path) if self.path else 'in memory'!r})"

    # -- connections ------------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        try:
            if self._uri:
                connection = sqlite3.connect(self._uri, uri=True, timeout=BUSY_SECONDS, isolation_level=None)
            else:
                connection = sqlite3.connect(self.path, timeout=BUSY_SECONDS, isolation_level=None)
                connection.execute("PRAGMA journal_mode=WAL")  # readers and the writer never wait for each other
                connection.execute(
                    "PRAGMA synchronous=NORMAL"
                )  # WAL: a power cut may lose the last commit, never corrupt
        except sqlite3.DatabaseError as err:  # a file that is not SQLite's fails at the first pragma
            raise DataError(f"{self.path}: not a runs database ({err}): move it aside") from None
        except sqlite3.Error as err:
            raise DataError(f"{self.path}: cannot open the runs database: {err}") from None
        return connection

    @property
    def _db(self) -> sqlite3.Connection:
        """This thread's connection (a connection is not shared between threads)."""
        connection = getattr(self._local, "connection", None)
        if connection is None:
            connection = self._local.connection = self._connect()
        return connection

    def _check_schema(self) -> None:
        db = self._db
        try:
            with _immediate(db):
                version = db.execute("PRAGMA user_version").fetchone()[0]
                if version not in (0, SCHEMA_VERSION):
                    raise DataError(
                        f"{self.path}: a runs database of layout {version}, not {SCHEMA_VERSION}: "
                        "move it aside (a newer claimtrace wrote it)"
                    )
                for statement in _SCHEMA.split(";")[:-1]:  # not executescript: it would commit
                    db.execute(statement)
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except sqlite3.OperationalError as err:  # locked past the timeout by another process
            raise DataError(f"{self.path}: cannot open the runs database: {err}") from None
        except sqlite3.DatabaseError as err:
            raise DataError(f"{self.path}: not a runs database ({err}): move it aside") from None

    # -- writing ----------------------------------------------------------------------------------

    def put(
        self, raw: bytes, name: str, kind: str = "upload", keep: frozenset[str] = frozenset()
    ) -> tuple[Stored, list[Evicted]]:
        """Keep a run's bytes (the same bytes once: the first name stays; a file given again at
        a start is added anew, so it is evicted last), then evict the oldest runs, none of
        ``keep`` nor this one, while the store is over its cap. Returns the run's record and
        what was evicted."""
        try:
            return self._put(raw, name, kind, keep)
        except sqlite3.Error as err:  # locked past the timeout, a full disk, a read-only file
            raise DataError(f"{self.path or 'the in-memory run store'}: could not keep the run: {err}") from None

    def _put(self, raw: bytes, name: str, kind: str, keep: frozenset[str]) -> tuple[Stored, list[Evicted]]:
        digest = run_digest(raw)
        now = time.time()
        db = self._db
        with _immediate(db):
            db.execute(
                "INSERT OR IGNORE INTO runs (digest, name, kind, size, added, raw) VALUES (?, ?, ?, ?, ?, ?)",
                (digest, name, kind, len(raw), now, raw),
            )
            if kind == "given":
                db.execute("UPDATE runs SET kind = 'given', added = ? WHERE digest = ?", (now, digest))
            db.execute("DELETE FROM evicted WHERE digest = ?", (digest,))
            evicted = self._evict(db, keep | {digest}, now)
            row = db.execute("SELECT digest, name, kind, size, added FROM runs WHERE digest = ?", (digest,)).fetchone()
        return Stored(*row), evicted

    def _evict(self, db: sqlite3.Connection, keep: frozenset[str], now: float) -> list[Evicted]:
        total = db.execute("SELECT COALESCE(SUM(size), 0) FROM runs").fetchone()[0]
        evicted = []
        if total <= self.cap_bytes:
            return evicted
        for digest, name, size, added in db.execute(
            "SELECT digest, name, size, added FROM runs ORDER BY added, digest"
        ).fetchall():
            if total <= self.cap_bytes:
                break
            if digest in keep:
                continue
            db.execute("DELETE FROM runs WHERE digest = ?", (digest,))
            db.execute("INSERT OR REPLACE INTO evicted VALUES (?, ?, ?, ?, ?)", (digest, name, size, added, now))
            evicted.append(Evicted(digest, name, size, added, now))
            total -= size
        return evicted

    # -- reading ----------------------------------------------------------------------------------

    def listed(self, kind: str | None = None) -> list[Stored]:
        """Every stored run (of ``kind``), oldest first."""
        query = "SELECT digest, name, kind, size, added FROM runs"
        rows = self._db.execute(
            query + (" WHERE kind = ?" if kind else "") + " ORDER BY added, digest", (kind,) if kind else ()
        )
        return [Stored(*row) for row in rows.fetchall()]

    def raw(self, digest: str) -> bytes | None:
        """A stored run's file, byte for byte (None when not stored)."""
        row = self._db.execute("SELECT raw FROM runs WHERE digest = ?", (digest,)).fetchone()
        return None if row is None else bytes(row[0])

    def evicted(self) -> list[Evicted]:
        """Every run evicted to keep the store under its cap, most recent first."""
        rows = self._db.execute("SELECT digest, name, size, added, evicted FROM evicted ORDER BY evicted DESC, digest")
        return [Evicted(*row) for row in rows.fetchall()]

    def total_bytes(self) -> int:
        return self._db.execute("SELECT COALESCE(SUM(size), 0) FROM runs").fetchone()[0]

    def check(self) -> str:
        """SQLite's own integrity check: ``"ok"`` for a whole database."""
        return self._db.execute("PRAGMA integrity_check").fetchone()[0]


class _immediate:
    """One write transaction, taken at once (``BEGIN IMMEDIATE``: another process's writer makes
    this one wait, up to the connection's timeout), committed whole or rolled back."""

    def __init__(self, db: sqlite3.Connection):
        self.db = db

    def __enter__(self):
        self.db.execute("BEGIN IMMEDIATE")
        return self.db

    def __exit__(self, kind, value, traceback):
        self.db.execute("COMMIT" if kind is None else "ROLLBACK")
        return False


def store_beside(workdir: str | Path) -> Path:
    """Where a build's runs are kept by default: beside its workdir, never inside it
    (``work/demo`` -> ``work/demo.runs.sqlite``)."""
    workdir = Path(workdir).resolve()
    return workdir.with_name(workdir.name + ".runs.sqlite")
