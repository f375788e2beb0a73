"""`--cuda-on-cpu`: let a script written for CUDA torch tensors run with host tensors.

TileLang's examples allocate `torch.randn(..., device="cuda")`, move tensors with `.cuda()` and time
with `torch.cuda.synchronize()` and CUDA events. On a machine without an NVIDIA GPU (or with a CPU
build of torch) every such line fails before a kernel runs. This emulation, switched on explicitly for
one process, makes torch's `cuda` device mean the host:

* a torch function mode rewrites every `device` argument that names CUDA (`"cuda"`, `"cuda:0"`,
  `torch.device("cuda")`, a bare device index) to `"cpu"`, in factory functions, `Tensor.to`,
  `Tensor.new_*` and `torch.device(...)` itself; `Tensor.cuda()` and `pin_memory()` return the tensor;
* `torch.set_default_device("cuda")` sets the host;
* a tensor divided by a Python number is multiplied by the number's reciprocal, as torch's CUDA kernel
  does (its CPU kernel divides, which can differ in the last bit: a reference written for the GPU would
  then disagree with a kernel that multiplies by the reciprocal, as TileLang's act_quant example does);
* `torch.cuda.*` answers as one emulated device: `is_available()` is True, `device_count()` is 1,
  `get_device_capability()` is the emulated compute capability (8.0 unless chosen), properties report
  the host's core count as SMs and its memory as the device's (`mem_get_info()` is the host's free and
  total memory), `synchronize()` and `empty_cache()` do nothing (host work is already
  complete when a call returns), events time with the host clock, streams are no-ops.

What it cannot do: tensors report `device(type='cpu')` and `is_cuda` is False, so a script that checks
them sees the host; anything that needs real CUDA (custom CUDA extensions, `torch.cuda.graphs`, NVTX,
CUDA-only torch operators, libraries that load CUDA kernels) still fails; timings are host timings and
say nothing about a GPU (`do_bench(backend="cupti")` times each call on the host's clock); allocation
statistics (`memory_allocated`) are zero. Kernels must run on a host target (the CPU, or a
device target whose execution backend copies host arrays, like OpenCL): a kernel that names the CUDA
target (`target="cuda"`, `"cuda -arch=sm_80"`, TVM's `Target("cuda")`) runs on the target that `"auto"`
resolves to, which `tilecraft run-tilelang --target` sets (the CPU by default), as if it had asked for
`"auto"`; a real CUDA machine without the emulation resolves it as always.
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from tilecraft.backend.target import Target, redirect_kind
from tilecraft.jit.lower import set_compile_flag_rewrite
from tilecraft.profiler.bench import set_kernel_clock_standin
from tilecraft.runtime.timing import KernelClock

DEFAULT_CAPABILITY = (8, 0)
# The target kind of the emulated device: kernels that name it are sent to the host (`enable`).
EMULATED_KIND = "cuda"
EMULATED_NAME = "host CPU (tilecraft --cuda-on-cpu emulation)"

_state: dict[str, Any] = {}


def active() -> bool:
    """Whether the emulation is on in this process."""
    return bool(_state)


def capability() -> tuple[int, int] | None:
    """The emulated compute capability, or None when the emulation is off."""
    return _state.get("capability")


def parse_capability(text: str) -> tuple[int, int]:
    """`"8.0"` -> (8, 0); ValueError saying what to write."""
    major, dot, minor = text.strip().partition(".")
    if not (major.isdigit() and (not dot or minor.isdigit())):
        raise ValueError(f"compute capability {text!r} is not MAJOR.MINOR; write it like 8.0 or 9.0")
    return int(major), int(minor or 0)


def _is_cuda(device: Any, torch: ModuleType) -> bool:
    if isinstance(device, str):
        return device.split(":")[0].strip().lower() == "cuda"
    if isinstance(device, torch.device):
        return device.type == "cuda"
    return isinstance(device, int) and not isinstance(device, bool)  # an index names a CUDA device


def _host(device: Any, torch: ModuleType) -> Any:
    return "cpu" if _is_cuda(device, torch) else device


@dataclass(frozen=True)
class EmulatedDeviceProperties:
    """What `torch.cuda.get_device_properties` reports for the emulated device."""

    name: str
    major: int
    minor: int
    multi_processor_count: int
    total_memory: int
    L2_cache_size: int = 0
    warp_size: int = 32


class EmulatedEvent:
    """`torch.cuda.Event` on the host clock: `elapsed_time` is in milliseconds, as CUDA's."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
        self.enable_timing = enable_timing
        self.stamp: float | None = None

    def record(self, stream: Any = None) -> None:
        self.stamp = time.perf_counter()

    def elapsed_time(self, end: EmulatedEvent) -> float:
        if self.stamp is None or end.stamp is None:
            raise RuntimeError("elapsed_time needs both events to be recorded first (event.record())")
        return (end.stamp - self.stamp) * 1e3

    def synchronize(self) -> None:
        """Host work is complete when it returns, so there is nothing to wait for."""

    def wait(self, stream: Any = None) -> None:
        """Nothing to wait for on the host."""

    def query(self) -> bool:
        return True


class EmulatedStream:
    """`torch.cuda.Stream`: work is done in order on the host, so every method is a no-op."""

    def __init__(self, device: Any = None, priority: int = 0, **kwargs: Any) -> None:
        self.device = device

    def synchronize(self) -> None:
        """Nothing to wait for on the host."""

    def wait_stream(self, stream: Any) -> None:
        """Nothing to wait for on the host."""

    def wait_event(self, event: Any) -> None:
        """Nothing to wait for on the host."""

    def record_event(self, event: EmulatedEvent | None = None) -> EmulatedEvent:
        event = event or EmulatedEvent()
        event.record()
        return event

    def query(self) -> bool:
        return True

    def __enter__(self) -> EmulatedStream:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def _no_op_context() -> Callable[..., contextlib.AbstractContextManager[None]]:
    # A new function for each name: torch.compile keeps a rule per torch function object and refuses
    # one object that stands for two names.
    @contextlib.contextmanager
    def context(*args: Any, **kwargs: Any) -> Iterator[None]:
        yield

    return context


def _nothing() -> Callable[..., None]:
    def nothing(*args: Any, **kwargs: Any) -> None:
        return None

    return nothing


def _cuda_functions(torch: ModuleType, cap: tuple[int, int]) -> dict[str, Any]:
    """The `torch.cuda` attributes the emulation replaces, by name."""
    stream = EmulatedStream()
    properties = EmulatedDeviceProperties(EMULATED_NAME, cap[0], cap[1], os.cpu_count() or 1, _host_memory()[1])
    return {
        "is_available": lambda: True,
        "init": _nothing(),
        "device_count": lambda: 1,
        "current_device": lambda: 0,
        "set_device": _nothing(),
        "device": _no_op_context(),
        "get_device_name": lambda device=None: EMULATED_NAME,
        "get_device_capability": lambda device=None: cap,
        "get_device_properties": lambda device=None: properties,
        "synchronize": _nothing(),
        "empty_cache": _nothing(),
        "mem_get_info": lambda device=None: _host_memory(),
        "memory_allocated": lambda device=None: 0,
        "max_memory_allocated": lambda device=None: 0,
        "reset_peak_memory_stats": _nothing(),
        "Event": EmulatedEvent,
        "Stream": EmulatedStream,
        "stream": _no_op_context(),
        "current_stream": lambda device=None: stream,
        "default_stream": lambda device=None: stream,
    }


def _host_memory() -> tuple[int, int]:
    """(free, total) bytes of the host's memory, which the emulated device's tensors live in (0, 0
    where the system does not say)."""
    try:
        page = os.sysconf("SC_PAGE_SIZE")
        return os.sysconf("SC_AVPHYS_PAGES") * page, os.sysconf("SC_PHYS_PAGES") * page
    except (AttributeError, ValueError, OSError):
        return 0, 0


def _host_rng(torch: ModuleType) -> dict[str, Any]:
    """`torch.cpu` generator-state functions: `torch.random.fork_rng` asks the module of the device the
    emulated tensors report (the host) for them, and torch.cpu lacks them."""
    return {
        "get_rng_state": lambda device=None: torch.get_rng_state(),
        "set_rng_state": lambda state, device=None: torch.set_rng_state(state),
    }


def _scalar_divisions(torch: ModuleType) -> tuple[set[Callable], set[Callable]]:
    """torch's true divisions of a tensor by a second operand: (out of place, in place)."""
    t = torch.Tensor
    return (
        {torch.div, torch.divide, torch.true_divide, t.div, t.divide, t.true_divide, t.__truediv__},
        {t.div_, t.divide_, t.true_divide_, t.__itruediv__},
    )


def _divide_as_cuda(torch: ModuleType, a: Any, b: Any, in_place: bool) -> Any:
    """`a / b` for a Python number `b` as torch's CUDA kernel computes it, or None where it divides.

    torch's CUDA true division by a host scalar multiplies by the scalar's reciprocal, taken in the
    computation type (float32 for half, bfloat16 and float32; float64 for double); its CPU kernel divides.
    The two differ in the last bit (amax / 448 for amax = 3.0625), so a reference a script computes on
    "cuda" must take the CUDA path for the emulated device to give what the GPU gives.
    """
    common = torch.result_type(a, b)
    if not common.is_floating_point or a.is_complex():
        return None
    opmath = torch.float64 if common == torch.float64 else torch.float32
    inverse = torch.tensor(1.0, dtype=opmath) / torch.tensor(b, dtype=opmath)
    product = (a.to(opmath) * inverse).to(common)
    return a.copy_(product) if in_place else product


def _device_mode(torch: ModuleType) -> Any:
    """A torch function mode that sends every CUDA device argument to the host, and divides by a Python
    number as torch's CUDA kernels do (`_divide_as_cuda`)."""
    from torch.overrides import TorchFunctionMode

    identities = {torch.Tensor.cuda, torch.Tensor.pin_memory}
    divisions, in_place_divisions = _scalar_divisions(torch)

    class HostForCuda(TorchFunctionMode):
        def __torch_function__(
            self, func: Callable, types: Any, args: tuple = (), kwargs: dict | None = None
        ):
            kwargs = dict(kwargs or {})
            if func in identities:
                return args[0]
            if (
                (func in divisions or func in in_place_divisions)
                and len(args) == 2
                and isinstance(args[0], torch.Tensor)
                and isinstance(args[1], (int, float))
                and not isinstance(args[1], bool)
                and not kwargs
            ):
                quotient = _divide_as_cuda(torch, args[0], args[1], func in in_place_divisions)
                if quotient is not None:
                    return quotient
            if func is torch.device and args and _is_cuda(args[0], torch):
                return func("cpu")  # torch.device("cuda", 0) too: the index names a CUDA device
            if "device" in kwargs:
                kwargs["device"] = _host(kwargs["device"], torch)
            if func is torch.Tensor.to:
                args = tuple(_host(a, torch) if _is_device_like(a, torch) else a for a in args)
            return func(*args, **kwargs)

    return HostForCuda()


def _host_generator(torch: ModuleType) -> type:
    """torch.Generator that puts a CUDA generator on the host; a class, so isinstance checks still hold
    (a C type: torch function modes do not see its constructor)."""
    generator = torch.Generator

    class HostGenerator(generator):
        def __new__(cls, device: Any = "cpu") -> Any:
            return generator.__new__(cls, _host(device, torch))

        def __init__(self, device: Any = "cpu") -> None:
            pass  # __new__ made it

    HostGenerator.__name__ = HostGenerator.__qualname__ = "Generator"
    return HostGenerator


def _is_device_like(value: Any, torch: ModuleType) -> bool:
    return isinstance(value, (str, torch.device)) or (isinstance(value, int) and not isinstance(value, bool))


class HostCallClock(KernelClock):
    """The emulated device's "kernel time": each call's wall-clock time (host launches are synchronous)."""

    description = "host wall clock (--cuda-on-cpu)"

    def time_calls(self, fn: Callable[[], Any], count: int) -> list[float]:
        times = []
        for _ in range(count):
            start = time.perf_counter()
            fn()
            times.append((time.perf_counter() - start) * 1e3)
        return times


# nvcc's fast-math switch, which the host target's fast-math pass config stands for.
NVCC_FAST_MATH = ("--use_fast_math", "-use_fast_math")
# Flags both nvcc and a host C compiler take; the emulation passes these on and drops nvcc's others.
SHARED_FLAG_PREFIXES = ("-O", "-D", "-U", "-I")


def host_compile_flags(flags: tuple[str, ...]) -> tuple[tuple[str, ...], dict[str, bool]]:
    """nvcc's compile flags for a kernel the emulation runs on the host: `--use_fast_math` becomes the
    pass config `tl.enable_fast_math`, flags a C compiler shares (`-O3`, `-DNAME`, `-Ipath`) stay, and
    nvcc's own (`-lineinfo`, `--ptxas-options=...`) are dropped with a warning naming them."""
    kept = tuple(f for f in flags if f.startswith(SHARED_FLAG_PREFIXES))
    dropped = [f for f in flags if f not in kept and f not in NVCC_FAST_MATH]
    if dropped:
        _warn_dropped(tuple(dropped))
    fast = any(f in NVCC_FAST_MATH for f in flags)
    return kept, ({"tl.enable_fast_math": True} if fast else {})


@functools.cache
def _warn_dropped(flags: tuple[str, ...]) -> None:
    warnings.warn(
        f"--cuda-on-cpu: the nvcc flags {' '.join(flags)} have no meaning for the host's C compiler and are "
        "not passed to it (--use_fast_math is the fast-math pass config; -O, -D, -U and -I flags are passed)",
        RuntimeWarning,
        stacklevel=2,
    )


def enable(cap: tuple[int, int] = DEFAULT_CAPABILITY) -> None:
    """Turn the emulation on for this process (idempotent); needs torch."""
    if active():
        return
    try:
        import torch
    except ImportError as err:
        raise ImportError(
            f"--cuda-on-cpu emulates torch's CUDA device, but torch cannot be imported ({err}); install "
            "torch, or run without --cuda-on-cpu"
        ) from err
    saved = {name: getattr(torch.cuda, name, None) for name in _cuda_functions(torch, cap)}
    for name, value in _cuda_functions(torch, cap).items():
        setattr(torch.cuda, name, value)
    saved_host = {name: getattr(torch.cpu, name, None) for name in _host_rng(torch)}
    for name, value in _host_rng(torch).items():
        setattr(torch.cpu, name, value)
    original_default = torch.set_default_device
    torch.set_default_device = lambda device: original_default(_host(device, torch))
    original_generator = torch.Generator
    torch.Generator = _host_generator(torch)
    mode = _device_mode(torch)
    mode.__enter__()
    set_kernel_clock_standin(lambda flush_bytes: HostCallClock())
    # A kernel that names the emulated device's target (`target="cuda"`, with or without an arch) runs
    # where `"auto"` runs: the host target that --target / TILECRAFT_TARGET chose.
    redirect_kind(EMULATED_KIND, lambda: Target.parse("auto"))
    # Compile flags are nvcc's (the programs were written for the emulated device); the host's compiler
    # gets what it understands.
    set_compile_flag_rewrite(host_compile_flags)
    _state.update(
        torch=torch,
        saved=saved,
        saved_host=saved_host,
        mode=mode,
        capability=cap,
        set_default_device=original_default,
        generator=original_generator,
    )


def disable() -> None:
    """Undo `enable` (for tests that switch it on in-process)."""
    if not active():
        return
    torch = _state["torch"]
    _state["mode"].__exit__(None, None, None)
    for name, value in _state["saved"].items():
        if value is None:
            delattr(torch.cuda, name)
        else:
            setattr(torch.cuda, name, value)
    for name, value in _state["saved_host"].items():
        if value is None:
            delattr(torch.cpu, name)
        else:
            setattr(torch.cpu, name, value)
    torch.set_default_device = _state["set_default_device"]
    torch.Generator = _state["generator"]
    set_kernel_clock_standin(None)
    redirect_kind(EMULATED_KIND, None)
    set_compile_flag_rewrite(None)
    _state.clear()
