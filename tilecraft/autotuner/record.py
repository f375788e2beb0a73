"""The tuning cache: the best configuration of a tuning, kept as JSON in the shared kernel cache.

Key: the kernel factory (its source, closure values, and the structure of the first candidate's IR, so an
edited helper function changes it), the arguments it was called with, the configurations, the compile
options (target, host target, execution backend, out_idx, pass configs, flags, compiler version) and the
profile options (input supply, warm-up and repetitions, tolerances, the reference program's source), plus
tilecraft's version and code fingerprint. A value with no stable identity (an object whose repr shows an
address) makes the tuning uncacheable; the tuner then says so when verbose and tunes every time.

Value: `autotune.json`, plain data: the index of the best configuration, its latency, the reference
latency and every candidate's status. Configurations themselves are not read back from it (they are part
of the key, so the caller's list is the same list): nothing in the record is executed or unpickled.
"""

from __future__ import annotations

import enum
import inspect
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from tilecraft.autotuner.result import STATUSES, CandidateResult
from tilecraft.ir.dtype import DataType

RECORD_FILE = "autotune.json"
FORMAT = 1


class NotKeyable(Exception):
    """A value that has no stable identity across processes."""


def canonical(value: Any) -> Any:
    """Plain data (None, bool, int, float, str, lists, sorted pairs) that identifies `value` across
    processes; NotKeyable when it cannot."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Mapping):
        return ["map", sorted(([str(k), canonical(v)] for k, v in value.items()), key=repr)]
    if isinstance(value, (list, tuple)):
        return [type(value).__name__, [canonical(v) for v in value]]
    if hasattr(value, "shape") and hasattr(value, "dtype"):  # arrays: their type, not their values
        return ["array", str(value.dtype), [int(s) for s in value.shape]]
    if inspect.isfunction(value) or inspect.ismethod(value):
        return function_identity(value)
    if inspect.isbuiltin(value):  # np.matmul's C function, torch.add: their names are their identity
        return ["builtin", getattr(value, "__module__", None) or "", value.__qualname__]
    if isinstance(value, (DataType, enum.Enum)):
        return [type(value).__name__, str(value)]
    text = repr(value)
    if " at 0x" in text:
        raise NotKeyable(f"{type(value).__name__} value {text[:60]}")
    return [type(value).__qualname__, text]


def function_identity(fn: Any) -> list[Any]:
    """A function by its module, name, source and closure values (its globals are not followed)."""
    fn = getattr(fn, "__func__", fn)
    if not (inspect.isfunction(fn) or inspect.ismethod(fn)):
        return canonical(fn)  # a builtin, a ufunc or a callable object
    try:
        source = inspect.getsource(fn)
    except (OSError, TypeError):  # defined interactively: the bytecode stands in for the source
        code = getattr(fn, "__code__", None)
        if code is None:
            raise NotKeyable(f"{fn!r} has no source") from None
        source = code.co_code.hex() + repr(code.co_consts)
    code = getattr(fn, "__code__", None)
    cells = getattr(fn, "__closure__", None) or ()
    names = code.co_freevars if code is not None else ()
    closure = [[name, canonical(_cell(cell))] for name, cell in zip(names, cells) if _cell(cell) is not fn]
    return ["function", getattr(fn, "__module__", ""), getattr(fn, "__qualname__", ""), source, closure]


def _cell(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell: a name assigned after the function was made
        return None


def render(value: Any) -> Any:
    """`value` as JSON-able data for people to read (dtypes and other objects as their str)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Mapping):
        return {str(k): render(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [render(v) for v in value]
    return str(value)


def record_files(best: int, latency: float, ref_latency: float | None, function: str,
                 candidates: Sequence[CandidateResult]) -> dict[str, bytes]:  # fmt: skip
    """The cache entry's files for a finished tuning."""
    data = {
        "format": FORMAT,
        "function": function,
        "best": best,
        "latency": latency,
        "ref_latency": ref_latency,
        "candidates": [_candidate_data(c) for c in candidates],
    }
    return {RECORD_FILE: json.dumps(data, sort_keys=True).encode()}


def _candidate_data(c: CandidateResult) -> dict[str, Any]:
    return {"index": c.index, "config": render(c.config), "status": c.status, "latency": c.latency,
            "error": c.error, "compile_seconds": c.compile_seconds}  # fmt: skip


class Record:
    """A stored tuning, checked against the configurations it must describe."""

    def __init__(self, best: int, latency: float, ref_latency: float | None,
                 candidates: list[CandidateResult]) -> None:  # fmt: skip
        self.best = best
        self.latency = latency
        self.ref_latency = ref_latency
        self.candidates = candidates


def parse_record(raw: bytes, configs: Sequence[dict[str, Any]]) -> Record | None:
    """The record in `raw` if it is well formed and describes `configs`, else None."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return None
    rows = data.get("candidates")
    if not isinstance(rows, list) or len(rows) != len(configs):
        return None
    candidates = [_parse_candidate(row, i, configs[i]) for i, row in enumerate(rows)]
    best, latency = data.get("best"), data.get("latency")
    if any(c is None for c in candidates) or type(best) is not int or not 0 <= best < len(configs):
        return None
    if not candidates[best].ok or not _is_duration(latency):
        return None
    ref = data.get("ref_latency")
    return Record(best, float(latency), float(ref) if _is_duration(ref) else None, candidates)


def _is_duration(value: Any) -> bool:
    """A measured time: a finite number >= 0 (JSON also reads NaN, Infinity and negative numbers)."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return number and math.isfinite(value) and value >= 0


def _parse_candidate(row: Any, index: int, config: dict[str, Any]) -> CandidateResult | None:
    if not isinstance(row, dict) or row.get("index") != index or row.get("config") != render(config):
        return None
    status, latency, error, seconds = (
        row.get("status"),
        row.get("latency"),
        row.get("error"),
        row.get("compile_seconds"),
    )
    if status not in STATUSES or not isinstance(error, str):
        return None
    if not (latency is None or _is_duration(latency)) or not (seconds is None or _is_duration(seconds)):
        return None
    return CandidateResult(index, config, status, latency, error, seconds)
