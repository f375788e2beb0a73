"""Pass instrumentation: per-pass timing and IR dumps, switched on by a compile session or by settings.

`TILECRAFT_PASS_TIMING=1` prints a timing table (to stderr) after every pipeline run;
`TILECRAFT_DUMP_IR=dir` writes `dir/00-input.py`, then `dir/<NN>-<pass-name>.py` after each pass, each
holding `mod.script()`. A later pipeline run writes into the same directory and overwrites its files.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from pathlib import Path

    from tilecraft.backend.pipeline import Pass, PassPipeline
    from tilecraft.ir import IRModule


class PassInstrument:
    """Hooks around a pipeline run; every hook does nothing by default."""

    def enter_pipeline(self, pipeline: PassPipeline, mod: IRModule) -> None:
        """Called once before the first pass with the input module."""

    def before_pass(self, index: int, pass_: Pass, mod: IRModule) -> None:
        """Called before pass number `index` (1-based) runs on `mod`."""

    def after_pass(self, index: int, pass_: Pass, mod: IRModule, seconds: float) -> None:
        """Called after pass number `index` returned `mod`, with its wall time."""

    def exit_pipeline(self, pipeline: PassPipeline, mod: IRModule) -> None:
        """Called once after the last pass succeeded, with the output module."""


class CompositeInstrument(PassInstrument):
    """Several instruments, called in order."""

    def __init__(self, *instruments: PassInstrument) -> None:
        self.instruments = instruments

    def enter_pipeline(self, pipeline: PassPipeline, mod: IRModule) -> None:
        for inst in self.instruments:
            inst.enter_pipeline(pipeline, mod)

    def before_pass(self, index: int, pass_: Pass, mod: IRModule) -> None:
        for inst in self.instruments:
            inst.before_pass(index, pass_, mod)

    def after_pass(self, index: int, pass_: Pass, mod: IRModule, seconds: float) -> None:
        for inst in self.instruments:
            inst.after_pass(index, pass_, mod, seconds)

    def exit_pipeline(self, pipeline: PassPipeline, mod: IRModule) -> None:
        for inst in self.instruments:
            inst.exit_pipeline(pipeline, mod)


class PassTiming(PassInstrument):
    """Records the wall time of each pass; `table()` formats it. With `stream`, prints it at the end."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream
        self.pipeline_name = ""
        self.records: list[tuple[str, float]] = []

    def enter_pipeline(self, pipeline: PassPipeline, mod: IRModule) -> None:
        self.pipeline_name = pipeline.name

    def after_pass(self, index: int, pass_: Pass, mod: IRModule, seconds: float) -> None:
        self.records.append((pass_.name, seconds))

    def exit_pipeline(self, pipeline: PassPipeline, mod: IRModule) -> None:
        if self.stream is not None:
            print(self.table(), file=self.stream)

    @property
    def total(self) -> float:
        return sum(seconds for _, seconds in self.records)

    def table(self) -> str:
        """One row per pass: index, name, milliseconds, share of the total; then the total."""
        total = self.total or 1.0
        width = max([len(name) for name, _ in self.records] + [4])
        lines = [f"pass timing (pipeline '{self.pipeline_name}'):"]
        for i, (name, seconds) in enumerate(self.records, 1):
            lines.append(f"  {i:>3} {name:<{width}} {seconds * 1e3:9.3f} ms {100 * seconds / total:5.1f}%")
        lines.append(f"      {'total':<{width}} {self.total * 1e3:9.3f} ms")
        return "\n".join(lines)


class IRDumper(PassInstrument):
    """Writes the module after each pass to `directory/<NN>-<pass-name>.py` (input as `00-input.py`)."""

    def __init__(self, directory: str | Path) -> None:
        from pathlib import Path

        self.directory = Path(directory)
        self.width = 2
        self.pipeline_name = ""
        self.written: list[Path] = []

    def enter_pipeline(self, pipeline: PassPipeline, mod: IRModule) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.width = max(2, len(str(len(pipeline.passes))))
        self.pipeline_name = pipeline.name
        self._write(0, "input", mod)

    def after_pass(self, index: int, pass_: Pass, mod: IRModule, seconds: float) -> None:
        self._write(index, pass_.name, mod)

    def _write(self, index: int, name: str, mod: IRModule) -> None:
        path = self.directory / f"{index:0{self.width}d}-{name}.py"
        header = f"# tilecraft IR after {name!r} (step {index} of pipeline {self.pipeline_name!r})\n"
        path.write_text(header + script_or_error(mod))
        self.written.append(path)


def script_or_error(mod: IRModule) -> str:
    """`mod.script()`, or the error it raised: a broken printer must not hide the pass's output."""
    try:
        return mod.script()
    except Exception as err:
        names = ", ".join(getattr(f, "name", "?") for f in getattr(mod, "functions", ()))
        return f"# script() failed: {type(err).__name__}: {err}\n# functions: {names}\n"


def instruments_from_settings() -> list[PassInstrument]:
    """The instruments the settings ask for, read at each pipeline run so scoped overrides apply."""
    from tilecraft import settings

    found: list[PassInstrument] = []
    dump_dir = settings.get("TILECRAFT_DUMP_IR")
    if dump_dir is not None:
        found.append(IRDumper(dump_dir))
    if settings.get("TILECRAFT_PASS_TIMING"):
        found.append(PassTiming(stream=sys.stderr))
    return found
