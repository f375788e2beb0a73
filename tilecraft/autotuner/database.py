"""The tuning database: every tuning's candidates in one SQLite file, read at run time.

    tunings(key, kernel, signature, target, device, arch, version, configs, complete, updated)
    results(key, config, status, latency, error, compile_seconds, updated)   one row per candidate

A tuning's key is the kernel (its module and name), the argument signature (the arguments it is tuned
for, as plain data), the target, the device's name and architecture, and tilecraft's version. Results
are written as they arrive, so a tuning that is interrupted resumes with the candidates it has not
measured; a tuning that finished is marked `complete`, and its best candidate (the lowest latency among
those `ok`) is what a later run uses instead of tuning. Merging two files keeps, per key and config,
the better result (ok before failed, then the lower latency), hence the best entry per key.

Nothing read from the file is executed: configs are JSON, matched against the caller's own list. Every
row is checked as it is read (types, a config that is JSON, a status tilecraft writes, latencies that
are finite and not negative, an `ok` row with its latency): a malformed row (written by another tool,
edited by hand, a half-written merge) is skipped with one warning naming the file and the row, and the
others are used. A file whose tables lack columns is refused.
"""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tilecraft.autotuner.record import render
from tilecraft.autotuner.result import OK, STATUSES, AutotuneError

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
_COLUMNS = {
    "tunings": ("key", *_IDENTITY, "configs", "complete", "updated"),
    "results": ("key", "config", "status", "latency", "error", "compile_seconds", "updated"),
}
_SHOWN_PROBLEMS = 5  # rows named in one warning; the rest are counted


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


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _duration_problem(name: str, value: Any) -> str | None:
    """Why `value` is not a stored duration (None, or a finite number >= 0), or None when it is one."""
    if value is None:
        return None
    if not _is_number(value):
        return f"{name} {value!r} is not a number"
    if not math.isfinite(value) or value < 0:
        return f"{name} {value!r} is not a finite number >= 0"
    return None


def _json_problem(name: str, text: Any, kind: type) -> str | None:
    if not isinstance(text, str):
        return f"{name} {text!r} is not text"
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return f"{name} {_clip(text)} is not JSON (truncated?)"
    return None if isinstance(value, kind) else f"{name} {_clip(text)} is not a JSON {kind.__name__}"


def _clip(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:57] + "...")


def result_problem(row: Sequence[Any]) -> str | None:
    """What is wrong with a `results` row (config, status, latency, error, compile_seconds, updated), or
    None when it is one tilecraft could have written."""
    config, status, latency, error, seconds, updated = row
    problem = _json_problem("config", config, dict)
    if problem is None and status not in STATUSES:
        problem = f"status {status!r} is not one of {', '.join(STATUSES)}"
    problem = (
        problem or _duration_problem("latency", latency) or _duration_problem("compile_seconds", seconds)
    )
    if problem is None and status == OK and latency is None:
        problem = "status 'ok' without a latency"
    if problem is None and not isinstance(error, str):
        problem = f"error {error!r} is not text"
    if problem is None and not (_is_number(updated) and math.isfinite(updated)):
        problem = f"updated {updated!r} is not a time"
    return problem


def tuning_problem(row: Sequence[Any]) -> str | None:
    """What is wrong with a `tunings` row (key, identity..., configs, complete, updated), or None."""
    key, *identity, configs, complete, updated = row
    texts = {"key": key, **dict(zip(_IDENTITY, identity))}
    for name, value in texts.items():
        if not isinstance(value, str):
            return f"{name} {value!r} is not text"
    problem = _json_problem("signature", texts["signature"], list)
    if problem is None and not (type(configs) is int and configs >= 0):
        problem = f"configs {configs!r} is not a count"
    if problem is None and complete not in (0, 1):
        problem = f"complete {complete!r} is not 0 or 1"
    if problem is None and not (_is_number(updated) and math.isfinite(updated)):
        problem = f"updated {updated!r} is not a time"
    return problem


class TuningDatabase:
    """An open tuning database (created when the file does not exist yet)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.read_only = False
        self._reported: set[tuple[str, int]] = set()  # malformed rows warned about already
        if not self.path.parent.is_dir():
            raise TuningDatabaseError(
                f"tuning database {self.path}: the directory {self.path.parent} does not exist; create it first"
            )
        try:
            self._db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            self._db.executescript(_SCHEMA)
            self._check_columns()
            self._check_version()
        except sqlite3.DatabaseError as err:
            raise TuningDatabaseError(
                f"{self.path} is not a tilecraft tuning database ({err}); give a new file or one "
                "`tilecraft tune --db` wrote"
            ) from None

    def _check_columns(self) -> None:
        for table, wanted in _COLUMNS.items():
            have = {row[1] for row in self._db.execute(f"PRAGMA table_info({table})")}
            missing = [c for c in wanted if c not in have]
            if missing:
                raise TuningDatabaseError(
                    f"{self.path}: table {table} has no column {', '.join(missing)}, so it was not written by "
                    "tilecraft; tune again into a new file"
                )

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
            db.execute(
                "UPDATE tunings SET complete = 1, updated = ? WHERE key = ?", (time.time(), key.digest)
            )

    def forget(self, key: TuningKey) -> None:
        """Delete the tuning for `key` and its results (re-tuning)."""
        with self._transaction() as db:
            db.execute("DELETE FROM results WHERE key = ?", (key.digest,))
            db.execute("DELETE FROM tunings WHERE key = ?", (key.digest,))

    def results(self, key: TuningKey) -> dict[str, Row]:
        """The stored results for `key`, by config text (malformed rows skipped, with a warning)."""
        return self._results(key.digest)

    def _results(self, digest: str) -> dict[str, Row]:
        return {row[1]: Row(*row[1:6]) for row in self._result_rows("WHERE key = ?", (digest,))}

    def _result_rows(self, where: str = "", args: tuple = ()) -> list[tuple[Any, ...]]:
        """The well-formed `results` rows (all columns); the others are reported once."""
        rows = self._db.execute(f"SELECT rowid, {', '.join(_COLUMNS['results'])} FROM results {where}", args)
        return self._well_formed("results", rows.fetchall(), lambda v: result_problem(v[1:]), 1)

    def _tuning_rows(self, where: str = "", args: tuple = ()) -> list[tuple[Any, ...]]:
        """The well-formed `tunings` rows (all columns); the others are reported once."""
        rows = self._db.execute(f"SELECT rowid, {', '.join(_COLUMNS['tunings'])} FROM tunings {where}", args)
        return self._well_formed("tunings", rows.fetchall(), tuning_problem, 1)

    def _well_formed(self, table: str, rows: Sequence[Sequence[Any]], problem: Any, shown: int
                     ) -> list[tuple[Any, ...]]:  # fmt: skip
        """Of `rows` (rowid, then the columns), the columns of those where `problem` finds nothing; the
        others are named (by rowid and column `shown`) in one warning."""
        good, bad = [], []
        for rowid, *values in rows:
            why = problem(values)
            if why is None:
                good.append(tuple(values))
            else:
                bad.append((rowid, f"{_COLUMNS[table][shown]} {_clip(str(values[shown]))}", why))
        self._report(table, bad)
        return good

    def _report(self, table: str, bad: Sequence[tuple[int, str, str]]) -> None:
        """One warning naming this file and the malformed rows of `table` not reported before."""
        new = sorted(b for b in bad if (table, b[0]) not in self._reported)
        if not new:
            return
        self._reported.update((table, b[0]) for b in new)
        shown = "; ".join(
            f"{table} row {rowid} ({what}): {why}" for rowid, what, why in new[:_SHOWN_PROBLEMS]
        )
        more = f"; and {len(new) - _SHOWN_PROBLEMS} more" if len(new) > _SHOWN_PROBLEMS else ""
        warnings.warn(f"tuning database {self.path}: skipped {len(new)} malformed row(s), the others are used: "
                      f"{shown}{more}", RuntimeWarning, stacklevel=4)  # fmt: skip

    def complete(self, key: TuningKey) -> bool:
        found = self._tuning_rows("WHERE key = ?", (key.digest,))
        return bool(found and found[0][-2])

    def best(self, key: TuningKey) -> Row | None:
        """The best measured candidate of the complete tuning for `key`, or None."""
        if not self.complete(key):
            return None
        ok = [r for r in self.results(key).values() if r.rank[0] == 0]
        return min(ok, key=lambda r: r.rank) if ok else None

    # ------------------------------------------------------------------ the whole file

    def tunings(self) -> list[dict[str, Any]]:
        """Every tuning: its identity, whether complete, and its best config and latency."""
        out = []
        for row in sorted(self._tuning_rows(), key=lambda r: (r[1], r[2])):
            results = self._results(row[0]).values()
            ok = [r for r in results if r.rank[0] == 0]
            best = min(ok, key=lambda r: r.rank) if ok else None
            out.append({**dict(zip(("key", *_IDENTITY, "configs", "complete"), row)), "results": len(results),
                        "best": json.loads(best.config) if best else None,
                        "latency": best.latency if best else None})  # fmt: skip
        return out

    def merge(self, other: TuningDatabase) -> int:
        """Take `other`'s tunings in: per key and config the better result stays (malformed rows of
        either file are skipped, with a warning). Returns how many results changed here."""
        changed = 0
        with self._transaction() as db:
            for row in other._tuning_rows():
                db.execute(
                    "INSERT INTO tunings VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(key) DO UPDATE SET "
                    "configs = MAX(configs, excluded.configs), complete = MAX(complete, excluded.complete), "
                    "updated = MAX(updated, excluded.updated)",
                    row,
                )
            for row in other._result_rows():
                changed += self._merge_result(db, row)
        return changed

    @staticmethod
    def _merge_result(db: sqlite3.Connection, row: Sequence[Any]) -> int:
        key, config = row[0], row[1]
        mine = db.execute(
            "SELECT config, status, latency, error, compile_seconds, updated FROM results WHERE key = ? AND "
            "config = ?", (key, config),
        ).fetchone()  # fmt: skip
        # A malformed row of ours is replaced by their well-formed one.
        if mine is not None and result_problem(mine) is None and Row(*mine[:5]).rank <= Row(*row[1:6]).rank:
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
