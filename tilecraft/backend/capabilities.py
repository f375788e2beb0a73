"""`Capabilities`: what one target has, as data.

The hardware facts that decide whether, and how, a kernel runs on a target (the thread-group width,
shared memory per block, asynchronous copies, matrix instructions and their dtypes, which dtypes and
atomic updates exist, ...) are one typed record per target, not tests of an arch or a family scattered
over a backend. A target kind builds the record from the target's canonical attributes (its arch, its
family, what the device or adapter reported): `TargetKind(capabilities=fn)`, fn(target) ->
Capabilities. `target.capabilities` (or `capabilities_of(target)`) is that record.

What a target lacks is a `Lack`: why, in the target's own words; what to do instead; and the limit key
(`"dtype:float64"`, as a manifest's `unsupported` declares it) a kernel that needs it reports. The
shared pass `check-target-support` (tilecraft/transform/target_support.py) reads the record and refuses
what it lacks at the kernel's line; lowering passes read it to pick instructions.

Each yes-or-no fact is a `Support`: True (the target has it), a `Lack` (it has not, and the check
refuses it), or None (unknown here: no device to ask and nothing given; the device's compiler decides
when it builds the code, so nothing is refused). `Capabilities()`, every field at its default, knows
nothing and refuses nothing: what a kind that declares no capabilities gets.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from tilecraft.backend.formats import LIMIT_KEY
from tilecraft.errors import BackendError

if TYPE_CHECKING:
    from tilecraft.backend.target import Target
    from tilecraft.ir.dtype import DataType


def _fail(owner: str, message: str) -> BackendError:
    return BackendError(f"{owner}: {message}")


def _check_key(owner: str, key: object) -> None:
    if key is not None and not (isinstance(key, str) and LIMIT_KEY.fullmatch(key)):
        raise _fail(owner, f"key must be None or a limit key such as 'dtype:float64' ({LIMIT_KEY.pattern}), "
                    f"got {key!r}")  # fmt: skip


def _check_text(owner: str, name: str, value: object) -> None:
    if not isinstance(value, str) or not value:
        raise _fail(owner, f"{name} must be a non-empty string, got {value!r}")


def _check_count(owner: str, name: str, value: object, minimum: int = 1) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < minimum):
        raise _fail(owner, f"{name} must be None (unknown) or an int >= {minimum}, got {value!r}")


def _check_names(owner: str, name: str, value: object, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if not isinstance(value, tuple) or not all(isinstance(v, str) and v for v in value):
        raise _fail(owner, f"{name} must be a tuple of names{' or None' if allow_none else ''}, got {value!r}")


@dataclass(frozen=True)
class Lack:
    """Something a target does not have. `reason` says why in the target's words and completes the
    check's sentence ("buffer A is float64, but <reason>"); `fix` says what to do instead; `key` is the
    limit a kernel that needs it reports (`LoweringError.unsupported`, declared in the manifest's
    `unsupported` where it depends on the device), or None for a plain error."""

    reason: str
    fix: str
    key: str | None = None

    def __post_init__(self) -> None:
        _check_text("Lack", "reason", self.reason)
        _check_text("Lack", "fix", self.fix)
        _check_key("Lack", self.key)


# True: the target has it; a Lack: it has not (refused, with the Lack's reason); None: unknown here.
Support = bool | Lack | None


def support_of(flag: bool | None, lack: Lack) -> Support:
    """The Support of a device attribute that is True (has it), False (`lack`) or unset (unknown)."""
    return lack if flag is False else flag


def _check_support(owner: str, name: str, value: object) -> None:
    if value is True or value is None or isinstance(value, Lack):
        return
    raise _fail(owner, f"{name} must be True (the target has it), a Lack (why not, and what to do) or None "
                f"(unknown here), got {value!r}")  # fmt: skip


@dataclass(frozen=True)
class Limit:
    """At most `most` of something (threads per block, buffers per kernel); None: unknown, nothing is
    refused. `reason` states the limit in the target's words, its number included ("this device runs at
    most 256 work-items per work-group"); `key` is the limit key a kernel past it reports."""

    most: int | None = None
    reason: str = ""
    key: str | None = None

    def __post_init__(self) -> None:
        _check_count("Limit", "most", self.most)
        if self.most is not None:
            _check_text("Limit", "reason", self.reason)
        _check_key("Limit", self.key)


SHARED_FIX = "use smaller shared tiles (block sizes) or fewer shared buffers"


@dataclass(frozen=True)
class Memory:
    """On-chip memory: the `bytes` one block (shared memory) or one thread (private memory) may hold
    (None: unknown, nothing is refused), what messages call it (`name`), the bytes each buffer is
    rounded up to (`align`), what to do when a kernel needs more (`fix`), and the limit key it reports."""

    bytes: int | None = None
    name: str = "shared memory"
    align: int = 1
    fix: str = SHARED_FIX
    key: str | None = None

    def __post_init__(self) -> None:
        _check_count("Memory", "bytes", self.bytes)
        _check_text("Memory", "name", self.name)
        _check_count("Memory", "align", self.align)
        _check_text("Memory", "fix", self.fix)
        _check_key("Memory", self.key)


@dataclass(frozen=True)
class MatrixInstruction:
    """A matrix multiply-accumulate instruction the backend emits on this target: its `name`
    ("mma.sync", "wgmma", "mfma", "simdgroup_matrix"), the (m, n, k) `shape` one instruction computes
    (wgmma: its largest n; it takes every multiple of 8 up to that), the operand dtypes it reads and the
    accumulator dtypes it writes."""

    name: str
    shape: tuple[int, int, int]
    operands: tuple[str, ...]
    accumulators: tuple[str, ...]

    def __post_init__(self) -> None:
        owner = f"MatrixInstruction {self.name!r}"
        _check_text(owner, "name", self.name)
        if not isinstance(self.shape, tuple) or len(self.shape) != 3:
            raise _fail(owner, f"shape must be (m, n, k), got {self.shape!r}")
        for dim in self.shape:
            _check_count(owner, "each of shape's (m, n, k)", dim)
        _check_names(owner, "operands", self.operands)
        _check_names(owner, "accumulators", self.accumulators)

    def __str__(self) -> str:
        m, n, k = self.shape
        return f"{self.name} {m}x{n}x{k} {'/'.join(self.operands)} -> {'/'.join(self.accumulators)}"


ATOMIC_OPS = ("add", "max", "min")
# The element dtypes the language's atomic updates take, and those of 32 bits or fewer.
ATOMIC_DTYPES = ("float16", "bfloat16", "float32", "float64", "int32", "int64", "uint32", "uint64")
ATOMIC_DTYPES_32BIT = ("float16", "bfloat16", "float32", "int32", "uint32")


@dataclass(frozen=True)
class Atomics:
    """Atomic updates (T.atomic_add, T.atomic_max, T.atomic_min): the `ops`, the element `dtypes` and
    the buffer `scopes` they may update (None: every one the language has), and the `lack` an update
    outside them is refused with (required when `dtypes` or `scopes` leave something out)."""

    ops: tuple[str, ...] = ATOMIC_OPS
    dtypes: tuple[str, ...] | None = None
    scopes: tuple[str, ...] | None = None
    lack: Lack | None = None

    def __post_init__(self) -> None:
        _check_names("Atomics", "ops", self.ops)
        _check_names("Atomics", "dtypes", self.dtypes, allow_none=True)
        _check_names("Atomics", "scopes", self.scopes, allow_none=True)
        restricted = self.dtypes is not None or self.scopes is not None or set(ATOMIC_OPS) - set(self.ops)
        if restricted and not isinstance(self.lack, Lack):
            raise _fail("Atomics", "an atomic update these ops, dtypes or scopes leave out needs a Lack (lack=...)")

    def allows(self, op: str, dtype: str, scope: str) -> bool:
        """Whether an atomic `op` of a `dtype` element of a `scope` buffer is on the list."""
        return (
            op in self.ops
            and (self.dtypes is None or dtype in self.dtypes)
            and (self.scopes is None or scope in self.scopes)
        )


@dataclass(frozen=True)
class Functions:
    """The math functions (T.exp, T.sqrt, ...) of one dtype: `allowed` (None: every one), and the `lack`
    the others are refused with."""

    allowed: tuple[str, ...] | None = None
    lack: Lack | None = None

    def __post_init__(self) -> None:
        _check_names("Functions", "allowed", self.allowed, allow_none=True)
        if self.allowed is not None and not isinstance(self.lack, Lack):
            raise _fail("Functions", "functions left out of `allowed` need a Lack (lack=...)")


# Every dtype field at True, for a target that has them all: `Capabilities(**EVERY_DTYPE)`, or with the
# ones it lacks replaced: `Capabilities(**EVERY_DTYPE | {"float64": Lack(...)})`.
EVERY_DTYPE: dict[str, Support] = dict.fromkeys(
    ("float64", "int64", "float16", "bfloat16", "float8", "narrow", "wide_shared"), True
)
_SUPPORT_FIELDS = (
    "mbarriers", "float64", "int64", "float16", "bfloat16", "float8", "narrow", "wide_shared", "print",
    "imported_source",
)  # fmt: skip


# What a target whose code generator does not compile T.import_source's text lacks (the default).
NO_IMPORTED_SOURCE = Lack(
    "this target's code generator does not compile source text imported with T.import_source",
    "run the kernel on a target whose code generator compiles the imported text, or write what the "
    "imported function computes in T.* (TileLang's dequantize examples have such a path: "
    "fast_decoding=False / fast_dequant=False)",
)


@dataclass(frozen=True)
class Capabilities:
    """What one target has (see the module docstring); every field's default refuses nothing.

    * `refused`: why the backend lowers nothing for this target (an arch too old), or None.
    * `thread_group`: lanes that run in lockstep and exchange registers (a warp of 32, a wavefront of 64
      or 32, a SIMD group, a subgroup); 1 where a block runs as one thread; None: unknown.
    * `max_threads`: threads per block. `max_buffers`: buffer parameters one kernel may bind.
    * `shared_memory`: per block (the scopes `shared`, `shared.dyn`); `private_memory`: per thread
      (fragments' shares, local buffers, variables).
    * `async_copies`: the asynchronous global-to-shared copies the hardware has ("cp.async", "tma").
    * `matrix`: the matrix instructions the backend emits here, with their shapes and dtypes.
    * `mbarriers`: T.alloc_barrier's barriers. `clusters`: thread-block clusters run as clusters (False:
      a T.Kernel's cluster_dims is a scheduling hint the target drops).
    * dtypes of buffers: `float64`, `int64` (and uint64), `float16`, `bfloat16`, `float8` (e4m3, e5m2),
      `narrow` (4-bit and microscaling dtypes, in buffers and values), `wide_shared` (64-bit elements in
      shared memory); `float64_math`: the math functions float64 values have.
    * `atomics`: which atomic updates exist. `print`: T.print.
    * `imported_source`: whether the code generator puts `T.import_source` text (device functions,
      inline assembly) into the device translation unit. Unlike the other facts it is refused unless a
      kind says True, since a code generator that does not know it would drop the text.
    """

    refused: Lack | None = None
    thread_group: int | None = None
    max_threads: Limit = Limit()
    max_buffers: Limit = Limit()
    shared_memory: Memory = Memory()
    private_memory: Memory = Memory(name="private memory", fix="use smaller tiles or more threads")
    async_copies: tuple[str, ...] = ()
    matrix: tuple[MatrixInstruction, ...] = ()
    mbarriers: Support = None
    clusters: bool = False
    float64: Support = None
    int64: Support = None
    float16: Support = None
    bfloat16: Support = None
    float8: Support = None
    narrow: Support = None
    wide_shared: Support = None
    float64_math: Functions = Functions()
    atomics: Atomics = Atomics()
    print: Support = None
    imported_source: Support = NO_IMPORTED_SOURCE

    def __post_init__(self) -> None:
        owner = "Capabilities"
        if self.refused is not None and not isinstance(self.refused, Lack):
            raise _fail(owner, f"refused must be None or a Lack, got {self.refused!r}")
        _check_count(owner, "thread_group", self.thread_group)
        for name, kind in (("max_threads", Limit), ("max_buffers", Limit), ("shared_memory", Memory),
                           ("private_memory", Memory), ("float64_math", Functions), ("atomics", Atomics)):  # fmt: skip
            if not isinstance(getattr(self, name), kind):
                raise _fail(owner, f"{name} must be a {kind.__name__}, got {getattr(self, name)!r}")
        _check_names(owner, "async_copies", self.async_copies)
        if not isinstance(self.matrix, tuple) or not all(isinstance(m, MatrixInstruction) for m in self.matrix):
            raise _fail(owner, f"matrix must be a tuple of MatrixInstruction, got {self.matrix!r}")
        if not isinstance(self.clusters, bool):
            raise _fail(owner, f"clusters must be True or False, got {self.clusters!r}")
        for name in _SUPPORT_FIELDS:
            _check_support(owner, name, getattr(self, name))

    def matrix_instruction(self, name: str, operand: str | None = None) -> MatrixInstruction | None:
        """The first matrix instruction called `name` (that reads `operand` dtypes, when given), or None."""
        for instruction in self.matrix:
            if instruction.name == name and (operand is None or operand in instruction.operands):
                return instruction
        return None

    def dtype_support(self, dtype: DataType) -> Support:
        """What the target says of buffers of `dtype` (True for the dtypes every target has)."""
        if dtype.is_packed or dtype.kind == "microfloat":
            return self.narrow
        name = dtype.element().name
        if name == "float64":
            return self.float64
        if name in ("int64", "uint64"):
            return self.int64
        if name in ("float16", "bfloat16"):
            return getattr(self, name)
        if dtype.kind == "float8":
            return self.float8
        return True

    def limit_keys(self) -> frozenset[str]:
        """Every limit key a kernel this record refuses may report (each needs the manifest's word)."""
        found = [getattr(self, name) for name in _SUPPORT_FIELDS]
        found += [self.refused, self.float64_math.lack, self.atomics.lack]
        keys = {x.key for x in found if isinstance(x, Lack)}
        keys |= {x.key for x in (self.max_threads, self.max_buffers) if x.most is not None}
        keys |= {x.key for x in (self.shared_memory, self.private_memory) if x.bytes is not None}
        return frozenset(k for k in keys if k is not None)


def no_mbarriers(where: str) -> Lack:
    """The Lack of a target without mbarriers; `where` names it ("the X target"). The reason is the
    whole message (check-target-support, and C-family codegen where a kernel reaches it)."""
    return Lack(
        f"mbarriers (T.alloc_barrier, T.barrier_wait, T.barrier_arrive) are not supported on {where}",
        "hand tiles between thread groups through shared memory and T.sync_threads() (docs/language.md, "
        "'Warp specialization', lists the targets that run mbarriers)",
    )


# What a target kind declares: a function of a (normalized) target of the kind to its record.
CapabilityFacts = Callable[["Target"], Capabilities]


def capabilities_of(target: Target) -> Capabilities:
    """The record of `target`, built by its kind's `capabilities` (`Capabilities()` where the kind
    declares none); built once per target and function."""
    from tilecraft.backend.target_kind import lookup_target_kind

    build = lookup_target_kind(target.kind).capabilities
    return Capabilities() if build is None else _built(build, target)


@lru_cache(maxsize=1024)
def _built(build: CapabilityFacts, target: Target) -> Capabilities:
    caps = build(target)
    if not isinstance(caps, Capabilities):
        raise BackendError(
            f"the capabilities of target {target} are a {type(caps).__name__}; the kind's capabilities "
            "function must return a tilecraft.backend.capabilities.Capabilities"
        )
    return caps


__all__ = [
    "ATOMIC_DTYPES", "ATOMIC_DTYPES_32BIT", "ATOMIC_OPS", "Atomics", "EVERY_DTYPE", "Capabilities", "CapabilityFacts", "Functions", "Lack", "Limit",
    "MatrixInstruction", "Memory", "SHARED_FIX", "Support", "capabilities_of", "no_mbarriers", "support_of",
]  # fmt: skip
