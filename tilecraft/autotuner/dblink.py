"""One tuning's link to the tuning database: its key, what earlier runs stored, and writing as it goes."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tilecraft import settings
from tilecraft.autotuner.database import Row, TuningDatabase, TuningKey, config_text
from tilecraft.autotuner.record import NotKeyable, canonical, render
from tilecraft.autotuner.result import CandidateResult

if TYPE_CHECKING:
    from tilecraft.autotuner.session import Session


def database_path(db: str | Path | None) -> Path | None:
    """`db`, else TILECRAFT_TUNING_DB, else None (no database)."""
    if db is not None:
        return Path(db)
    return settings.get("TILECRAFT_TUNING_DB")


def _kernel_name(fn: Any) -> str:
    module = getattr(fn, "__module__", None) or ""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
    return f"{module}.{name}" if module else name


def database_key(session: Session) -> TuningKey:
    """The tuning's key: kernel, argument signature, target, device name and arch, tilecraft version.
    NotKeyable when an argument has no identity across processes."""
    from tilecraft import __version__

    ctx, args = session.ctx, session.compile_args
    device = ctx.execution_backend().benchmark_devices(ctx.target)[0]
    signature = canonical([
        session.factory.signature_args(), args.normalized_out_idx(), args.pass_configs, args.compile_flags,
        session.inputs,
    ])  # fmt: skip
    return TuningKey(_kernel_name(session.factory.signature), json.dumps(signature), str(ctx.target),
                     device.name, device.arch, __version__)  # fmt: skip


class DatabaseLink:
    """Reads and writes one tuning's rows."""

    def __init__(self, db: TuningDatabase, key: TuningKey, configs: list[dict[str, Any]]) -> None:
        self.db = db
        self.key = key
        self.configs = configs
        self._texts = [config_text(c) for c in configs]

    @classmethod
    def open(cls, session: Session, path: Path) -> DatabaseLink | None:
        try:
            key = database_key(session)
        except NotKeyable as err:
            warnings.warn(f"autotune {session.factory.name}: not kept in the tuning database {path}: {err} has no "
                          "identity that lasts across processes", RuntimeWarning, stacklevel=5)  # fmt: skip
            return None
        return cls(TuningDatabase(path), key, session.configs)

    def best_index(self) -> int | None:
        """The index of the stored best config when the tuning is complete and it is one of ours."""
        best = self.db.best(self.key)
        if best is None or best.config not in self._texts:
            return None
        return self._texts.index(best.config)

    def stored(self) -> dict[int, Row]:
        """Earlier results for our configs, by index (a resumed tuning skips them)."""
        rows = self.db.results(self.key)
        return {i: rows[t] for i, t in enumerate(self._texts) if t in rows}

    def begin(self, retune: bool) -> None:
        if retune:
            self.db.forget(self.key)
        self.db.begin(self.key, len(self.configs))

    def record(self, candidate: CandidateResult) -> None:
        self.db.record(self.key, render(candidate.config), candidate.status, candidate.latency, candidate.error,
                       candidate.compile_seconds)  # fmt: skip

    def record_all(self, candidates: list[CandidateResult]) -> None:
        """A whole tuning at once (one the kernel cache held), marked complete."""
        self.db.begin(self.key, len(self.configs))
        for candidate in candidates:
            self.record(candidate)
        self.db.finish(self.key)

    def finish(self) -> None:
        self.db.finish(self.key)

    def close(self) -> None:
        self.db.close()
