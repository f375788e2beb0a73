"""The tuning database: every tuning's candidates in one SQLite file, read at run time.

    tunings(key, kernel, signature, target, device, arch, version, configs, complete, updated)
    results(key, config, status, latency, error, compile_seconds, updated)   one row per candidate

A tuning's key is the kernel (its module and name), the argument signature (the arguments it is tuned
for, as plain data), the target, the device's name and architecture, and tilecraft's version. Results
are written as they arrive, so a tuning that is interrupted resumes with the candidates it has not
measured; a tuning that finished is marked `complete`, and its best candidate (the lowest latency among
those `ok`) is what a later run uses instead of tuning. Merging two files keeps, per key and config,
the better result (ok before failed, then the lower latency), hence the best entry per key.

Nothing read from the file is executed: configs are JSON, matched against the caller's own list.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tilecraft.autotuner.record import render
from tilecraft.autotuner.result import OK, AutotuneError

SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tunings (
    key TEXT PRIMARY KEY, kernel TEXT NOT NULL, signature TEXT NOT NULL, target TEXT NOT NULL,
    device TEXT NOT NULL, arch TEXT NOT NULL, version TEXT NOT NULL, configs INTEGER NOT NULL,
    complete INTEGER NOT NULL DEFAULT 0, updated REAL NOT NULL);
CREATE TABLE IF NOT EXISTS results (
    key TEXT NOT NULL, config TEXT NOT NULL, status TEXT NOT NULL, latency REAL, error TEXT NOT NULL,
    compile_seconds REAL, updated REAL NOT NULL, PRIMARY KEY (key, config));
"""
_IDENTITY = ("kernel", "signature", "target", "device", "arch", "version")


class TuningDatabaseError(AutotuneError):
    """A tuning database that cannot be opened, or is not one."""


class _NoWrites:
    """Stands in for the connection when the file cannot be written: statements do nothing."""

    def execute(self, *args: Any) -> _NoWrites:
        return self

    def fetchone(self) -> None:
        return None


_NO_WRITES = _NoWrites()


@dataclass(frozen=True)
class TuningKey:
    """What a tuning is for; `digest` is its key in the file."""

    kernel: str
    signature: str
    target: str
    device: str
    arch: str
    version: str

    @property
    def digest(self) -> str:
        return hashlib.sha256(json.dumps([getattr(self, n) for n in _IDENTITY]).encode()).hexdigest()


@dataclass(frozen=True)
class Row:
    """One candidate's stored result."""

    config: str
    status: str
    latency: float | None
    error: str
    compile_seconds: float | None

    @property
    def rank(self) -> tuple[int, float]:
        """Smaller is better: a measured candidate before a failed one, then the lower latency."""
        return (0, self.latency) if self.status == OK and self.latency is not None else (1, 0.0)


def config_text(config: Mapping[str, Any]) -> str:
    """A config as the database keeps it (JSON, keys sorted)."""
    return json.dumps(render(config), sort_keys=True)


class TuningDatabase:
    """An open tuning database (created when the file does not exist yet)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.read_only = False
        if not self.path.parent.is_dir():
            raise TuningDatabaseError(
                f"tuning database {self.path}: the directory {self.path.parent} does not exist; create it first"
            )
        try:
            self._db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            self._db.executescript(_SCHEMA)
            self._check_version()
        except sqlite3.DatabaseError as err:
            raise TuningDatabaseError(
                f"{self.path} is not a tilecraft tuning database ({err}); give a new file or one "
                "`tilecraft tune --db` wrote"
            ) from None

    def _check_version(self) -> None:
        found = self._db.execute("SELECT value FROM meta WHERE name = 'schema'").fetchone()
        if found is None:
            self._db.execute("INSERT INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
        elif found[0] != str(SCHEMA_VERSION):
            raise TuningDatabaseError(
                f"{self.path} has tuning database schema {found[0]}; this tilecraft reads schema "
                f"{SCHEMA_VERSION}: tune again into a new file"
            )

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One write; on a file this process may not write (shipped read-only), a warning, once, and
        nothing is written: the tuning goes on without being kept."""
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as err:
            self._refused(err)
            yield _NO_WRITES
            return
        try:
            yield self._db
        except sqlite3.OperationalError as err:
            self._db.execute("ROLLBACK")
            self._refused(err)
            return
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def _refused(self, err: sqlite3.OperationalError) -> None:
        if "readonly" not in str(err) and "read-only" not in str(err):
            raise TuningDatabaseError(f"tuning database {self.path}: {err}") from None
        if not self.read_only:
            self.read_only = True
            warnings.warn(f"tuning database {self.path} is read-only ({err}): tunings are used from it, and new "
                          "ones are not kept", RuntimeWarning, stacklevel=4)  # fmt: skip

    # ------------------------------------------------------------------ one tuning

    def begin(self, key: TuningKey, configs: int) -> None:
        """Note a tuning of `configs` candidates for `key` (kept complete if it already was)."""
        with self._transaction() as db:
            db.execute(
                "INSERT INTO tunings VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?) ON CONFLICT(key) DO UPDATE SET "
                "configs = excluded.configs, updated = excluded.updated",
                (key.digest, *[getattr(key, n) for n in _IDENTITY], configs, time.time()),
            )

    def record(self, key: TuningKey, config: Mapping[str, Any], status: str, latency: float | None,
               error: str = "", compile_seconds: float | None = None) -> None:  # fmt: skip
        """Store one candidate's result now (a later result for the same config replaces it)."""
        with self._transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?, ?, ?, ?)",
                (key.digest, config_text(config), status, latency, error, compile_seconds, time.time()),
            )

    def finish(self, key: TuningKey) -> None:
        """Mark the tuning for `key` complete: its best is used from now on."""
        with self._transaction() as db:
            db.execute("UPDATE tunings SET complete = 1, updated = ? WHERE key = ?", (time.time(), key.digest))

    def forget(self, key: TuningKey) -> None:
        """Delete the tuning for `key` and its results (re-tuning)."""
        with self._transaction() as db:
            db.execute("DELETE FROM results WHERE key = ?", (key.digest,))
            db.execute("DELETE FROM tunings WHERE key = ?", (key.digest,))

    def results(self, key: TuningKey) -> dict[str, Row]:
        """The stored results for `key`, by config text."""
        rows = self._db.execute(
            "SELECT config, status, latency, error, compile_seconds FROM results WHERE key = ?", (key.digest,)
        ).fetchall()
        return {r[0]: Row(*r) for r in rows}

    def complete(self, key: TuningKey) -> bool:
        found = self._db.execute("SELECT complete FROM tunings WHERE key = ?", (key.digest,)).fetchone()
        return bool(found and found[0])

    def best(self, key: TuningKey) -> Row | None:
        """The best measured candidate of the complete tuning for `key`, or None."""
        if not self.complete(key):
            return None
        ok = [r for r in self.results(key).values() if r.rank[0] == 0]
        return min(ok, key=lambda r: r.rank) if ok else None

    # ------------------------------------------------------------------ the whole file

    def tunings(self) -> list[dict[str, Any]]:
        """Every tuning: its identity, whether complete, and its best config and latency."""
        rows = self._db.execute(
            "SELECT key, kernel, signature, target, device, arch, version, configs, complete FROM tunings "
            "ORDER BY kernel, signature"
        ).fetchall()
        out = []
        for row in rows:
            found = self._db.execute(
                "SELECT config, latency, COUNT(*) OVER () FROM results WHERE key = ? AND status = ? "
                "AND latency IS NOT NULL ORDER BY latency LIMIT 1", (row[0], OK)
            ).fetchone()  # fmt: skip
            done = self._db.execute("SELECT COUNT(*) FROM results WHERE key = ?", (row[0],)).fetchone()[0]
            out.append({**dict(zip(("key", *_IDENTITY, "configs", "complete"), row)), "results": done,
                        "best": json.loads(found[0]) if found else None, "latency": found[1] if found else None})  # fmt: skip
        return out

    def merge(self, other: TuningDatabase) -> int:
        """Take `other`'s tunings in: per key and config the better result stays. Returns how many
        results changed here."""
        changed = 0
        with self._transaction() as db:
            for row in other._db.execute("SELECT * FROM tunings"):
                db.execute(
                    "INSERT INTO tunings VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(key) DO UPDATE SET "
                    "configs = MAX(configs, excluded.configs), complete = MAX(complete, excluded.complete), "
                    "updated = MAX(updated, excluded.updated)",
                    row,
                )
            for row in other._db.execute("SELECT * FROM results"):
                changed += self._merge_result(db, row)
        return changed

    @staticmethod
    def _merge_result(db: sqlite3.Connection, row: Sequence[Any]) -> int:
        key, config = row[0], row[1]
        mine = db.execute(
            "SELECT config, status, latency, error, compile_seconds FROM results WHERE key = ? AND config = ?",
            (key, config),
        ).fetchone()
        theirs = Row(*row[1:6])
        if mine is not None and Row(*mine).rank <= theirs.rank:
            return 0
        db.execute("INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?, ?, ?, ?)", tuple(row))
        return 1

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> TuningDatabase:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def merge_databases(sources: Sequence[str | Path], output: str | Path) -> int:
    """Write `output` holding every tuning of `sources`, the best result per key and config; returns the
    number of results in it. `output` may be one of the sources (it is then merged into)."""
    out = Path(output)
    with TuningDatabase(out) as merged:
        for source in sources:
            if Path(source).resolve() == out.resolve():
                continue
            if not Path(source).is_file():
                raise TuningDatabaseError(f"tuning database {source} does not exist")
            with TuningDatabase(source) as other:
                merged.merge(other)
        return merged._db.execute("SELECT COUNT(*) FROM results").fetchone()[0]
