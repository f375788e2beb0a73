"""CUDA C++ codegen: device kernels (source-only and compiled to cubin) and their launch metadata.

Formats:
- `cuda-source`: one self-contained translation unit: the text of include/tc_cuda.h, the wgmma
  instructions the kernels use (sm_90a; tilecraft/cuda/wgmma.py), the texts the kernels'
  `T.import_source` calls gave (each once; `imported_source`), then one
  `extern "C" __global__` kernel per T.Kernel, taking the kernel's params in KernelInfo order
  (buffers as device pointers, scalars by value), then its tensor maps (`KernelInfo.tensor_maps`, as
  `const __grid_constant__ tc_tensor_map`), and its shared memory as dynamic shared memory; TMA
  kernels also hold their mbarriers in static shared memory.
- `cubin`: the compiled entry's output for the target's arch (nvcc).
The CUDA execution backends launch kernels from the KernelInfo records; no host source is needed.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

from tilecraft.backend.codegen import DeviceCode
from tilecraft.codegen import headers
from tilecraft.codegen.c_family import BoundsSite
from tilecraft.codegen.kernel import (
    bind_indices,
    device_code,
    function_text,
    param_decl,
    pointer_type,
    written_buffers,
)
from tilecraft.cuda.ir import MIN_BLOCKS_PER_SM
from tilecraft.cuda.printer import CudaPrinter
from tilecraft.cuda.storage import (
    ASSUME_ALIGNED,
    BUFFER_ALIGN,
    SHARED_ALIGN,
    WGMMA_ALIGN,
    swizzled_tma_tiles,
    wgmma_calls,
)
from tilecraft.cuda.transform.multicast import multicasts
from tilecraft.cuda.wgmma import asm_functions, instruction_n
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.expr import Var
from tilecraft.ir.function import IRModule, PrimFunc
from tilecraft.ir.visitor import walk
from tilecraft.language.extern import imported_sources
from tilecraft.runtime.artifact import KernelInfo, TensorMapInfo
from tilecraft.transform.bounds_checks import BOUNDS_CHECK
from tilecraft.transform.storage import launch_info, planned_offsets

SOURCE_FORMAT = "cuda-source"
BINARY_FORMAT = "cubin"
INCLUDE_DIR = Path(__file__).parent / "include"
# Measured on an H200 (benchmarks/NOTES-cuda.md): the assumption turns float32 accesses into 16-byte
# vectors (add: 0.88x -> 0.99x torch) but makes nvcc drop the read-only path for 16-bit loads
# (rms norm in bfloat16: 0.79x -> 0.54x), so only buffers of 4-byte and wider elements get it.
ALIGNED_MIN_BYTES = 4


def header_text() -> str:
    return headers.header_text(INCLUDE_DIR / "tc_cuda.h")


def _tma(body: S.Stmt) -> tuple[dict[int, tuple[int, int]], dict[tuple, int]]:
    """The kernel's mbarrier rings (ring -> (barriers, arrivals per phase)) and tensor maps ((buffer
    name, box, swizzle) -> index), in the order they first appear."""
    from tilecraft.cuda.ir import MbarRing, TmaCopy, TmaStoreCopy

    rings: dict[int, tuple[int, int]] = {}
    maps: dict[tuple, int] = {}
    for n in walk(body):
        if isinstance(n, MbarRing):
            rings[n.ring] = (n.stages, n.arrivals)
        elif isinstance(n, TmaCopy):
            if n.ring == 0:
                rings.setdefault(0, (1, 1))
            for load in n.loads:
                maps.setdefault((load.src.name, load.box, load.swizzle), len(maps))
        elif isinstance(n, TmaStoreCopy):
            # a store map of a buffer may be the same map as a load's (a map has no direction)
            for store in n.stores:
                maps.setdefault((store.dst.name, store.box, store.swizzle), len(maps))
    return rings, maps


def _tma_stores(body: S.Stmt) -> bool:
    from tilecraft.cuda.ir import TmaStoreCopy

    return any(isinstance(n, TmaStoreCopy) for n in walk(body))


def _ring_bases(rings: dict[int, tuple[int, int]]) -> dict[int, int]:
    bases, total = {}, 0
    for ring, (count, _) in rings.items():
        bases[ring] = total
        total += count
    return bases


def _tensor_map_infos(func: PrimFunc, maps: dict[tuple, int]) -> tuple[TensorMapInfo, ...]:
    """A map of a view (`T.Tensor(shape, dtype, A.data)`) is one of its base parameter's memory with the
    view's row-major dims."""
    buffers = _mapped_buffers(func.body)
    infos = []
    for name, box, swizzle in maps:
        buf = buffers[name]
        if buf.base is None:
            infos.append(TensorMapInfo(name, buf.dtype, box, swizzle))
        else:
            infos.append(TensorMapInfo(buf.base.name, buf.dtype, box, swizzle, tuple(buf.shape)))
    return tuple(infos)


def _mapped_buffers(body: S.Stmt) -> dict[str, Buffer]:
    """The global buffers TMA copies of `body` read or write, by name."""
    from tilecraft.cuda.ir import TmaCopy, TmaStoreCopy

    found: dict[str, Buffer] = {}
    for n in walk(body):
        if isinstance(n, TmaCopy):
            found.update((load.src.name, load.src) for load in n.loads)
        elif isinstance(n, TmaStoreCopy):
            found.update((store.dst.name, store.dst) for store in n.stores)
    return found


def _phased_rings(body: S.Stmt) -> set[int]:
    """The rings whose waits track the phase in a register (the others' waits compute their parity)."""
    from tilecraft.cuda.ir import MbarWait, TmaCopy

    rings = set()
    for n in walk(body):
        if isinstance(n, MbarWait) and n.parity is None:
            rings.add(n.ring)
        elif isinstance(n, TmaCopy) and n.ring == 0:
            rings.add(0)
    return rings


def _declare_barriers(printer: CudaPrinter, rings: dict[int, tuple[int, int]], phased: set[int],
                      cluster: bool = False) -> None:  # fmt: skip
    """The mbarriers, initialised by one thread and published to every thread and the TMA unit (and to
    the blocks of the cluster, where they multicast into each other's)."""
    total = sum(count for count, _ in rings.values())
    printer.line(f"__shared__ __align__(8) uint64_t tc_mbar[{total}];")
    for ring in (r for r in rings if r in phased):
        printer.line(f"uint32_t tc_phase{ring} = 0u;  // the parity each barrier of ring {ring} waits for")
    printer.line("if (tc_leader()) {")
    base = _ring_bases(rings)
    for ring, (count, arrivals) in rings.items():
        printer.line(
            f"    for (int i = {base[ring]}; i < {base[ring] + count}; ++i) tc_mbar_init(&tc_mbar[i], {arrivals});"
        )
    printer.line("    tc_mbar_init_fence();")
    printer.line("}")
    printer.line("tc_cluster_sync();" if cluster else "__syncthreads();")


def _written(func: PrimFunc) -> set[int]:
    from tilecraft.cuda.ir import (
        AsyncCopy,
        StMatrix,
        TmaStore,
        VectorCopy,
        VectorLoad,
        VectorStore,
        VectorZero,
    )

    writers = (AsyncCopy, VectorCopy, VectorLoad, VectorZero, VectorStore, StMatrix, TmaStore)
    return written_buffers(func, *writers)


def _param(printer: CudaPrinter, p: Buffer | Var, written: set[int]) -> str:
    return param_decl(printer, p, written, lambda buf, ptr: f"{ptr} __restrict__ {printer.name(buf)}_arg")


def _buffer_pointers(printer: CudaPrinter, func: PrimFunc, written: set[int]) -> None:
    """The kernel's names for its buffer arguments: restrict-qualified, and assumed BUFFER_ALIGN-aligned
    where the pass config allows it (the launchers check that alignment, so the compiler may vectorize);
    a new restrict-qualified pointer keeps read-only loads on the non-coherent path."""
    assume = func.attr(ASSUME_ALIGNED, False)
    for p in func.buffer_params:
        ptr, name = pointer_type(p, written), printer.name(p)
        if assume and p.dtype.bytes >= ALIGNED_MIN_BYTES:
            printer.line(
                f"{ptr} __restrict__ {name} = ({ptr})__builtin_assume_aligned({name}_arg, {BUFFER_ALIGN});"
            )
        else:
            printer.line(f"{ptr} __restrict__ {name} = {name}_arg;")


def kernel_source(func: PrimFunc, sites: list[BoundsSite] | None = None) -> str:
    """One kernel's source; with bounds checks on, its checked accesses are numbered into `sites`."""
    launch: S.KernelLaunch = func.body
    wgmma = bool(wgmma_calls(launch.body))
    rings, maps = _tma(launch.body)
    printer = CudaPrinter(
        planned_offsets(func, CudaPrinter.arena_scopes),
        # TMA stores read shared memory through the async proxy too, after the barrier that publishes
        # the tile's generic writes (tma_store_waits.py)
        async_proxy_fence=wgmma or _tma_stores(launch.body),
        ring_base=_ring_bases(rings),
        tensor_maps=maps,
    )
    printer.reserve("tc_smem")
    printer.check_bounds(bool(func.attr(BOUNDS_CHECK, False)), sites)
    written = _written(func)
    printer.read_only = {id(p) for p in func.buffer_params if id(p) not in written}
    params = ", ".join([_param(printer, p, written) for p in func.params]
                       + [f"const __grid_constant__ tc_tensor_map tc_tmap{i}" for i in range(len(maps))])  # fmt: skip
    swizzled = wgmma or bool(swizzled_tma_tiles(launch.body))
    printer.line(f"extern __shared__ __align__({WGMMA_ALIGN if swizzled else SHARED_ALIGN}) char tc_smem[];")
    _buffer_pointers(printer, func, written)
    bind_indices(
        printer, func, lambda k: f"(int32_t)blockIdx.{'xyz'[k]}", lambda k: f"(int32_t)threadIdx.{'xyz'[k]}"
    )
    cluster = multicasts(launch.body)
    if rings:
        _declare_barriers(printer, rings, _phased_rings(launch.body), cluster)
    printer.stmt(launch.body)
    if cluster:  # no block may exit while its peers may still arrive on its barriers
        printer.line("tc_cluster_sync();")
    min_blocks = S.annotation(launch.annotations, MIN_BLOCKS_PER_SM)
    threads = math.prod(launch.threads)
    bounds = f"{threads}, {min_blocks}" if min_blocks else f"{threads}"
    cluster = S.annotation(launch.annotations, S.CLUSTER_DIMS)
    # compile-time cluster dims: cuLaunchKernel launches whole clusters without a launch attribute
    clusters = f" __cluster_dims__({', '.join(map(str, cluster))})" if cluster else ""
    return function_text(
        f'extern "C" __global__ void __launch_bounds__({bounds}){clusters} {func.name}({params})', printer
    )


def device_source(mod: IRModule, ctx) -> DeviceCode:
    parts = [header_text(), *headers.used_texts(mod)]
    calls = [c for f in mod.functions for c in wgmma_calls(f.body)]
    widths = {instruction_n(c.n // c.warps_n) for c in calls if c.variant == "wgmma" and not c.float8_wgmma}
    rs_widths = {instruction_n(c.n // c.warps_n) for c in calls if c.variant == "wgmma_rs"}
    fp8_widths = {instruction_n(c.n // c.warps_n) for c in calls if c.float8_wgmma}
    if widths or rs_widths or fp8_widths:
        parts.append(asm_functions(widths, rs_widths, fp8_widths))
    imported = imported_source(mod)
    if imported:
        parts.append(imported)
    sites: list[BoundsSite] = []
    kernels, infos = [], []
    for f in mod.functions:
        first = len(sites)
        kernels.append(kernel_source(f, sites))
        infos.append(dataclasses.replace(_kernel_info(f), bounds_sites=tuple(s.describe() for s in sites[first:])))
    if sites:  # the header's checks and the record the runtime reads back
        parts.insert(0, "#define TC_BOUNDS_CHECK 1")
    return device_code(mod, SOURCE_FORMAT, parts + kernels, infos, BUFFER_ALIGN)


def imported_source(mod: IRModule) -> str:
    """The source texts the kernels' `T.import_source` calls gave, each once, in the order they were
    first imported (after the header, before the kernels). TileLang's decoders use `uint`, which nvcc's
    host headers declare and NVRTC does not; a repeated typedef of the same type is valid C++."""
    texts: list[str] = []
    for f in mod.functions:
        for code, *_where in imported_sources(f):
            if code not in texts:
                texts.append(code)
    if not texts:
        return ""
    return "\n".join(["// T.import_source", "typedef unsigned int uint;", *texts, "// end of T.import_source"])


def _kernel_info(func: PrimFunc) -> KernelInfo:
    info = launch_info(func)
    _, maps = _tma(func.body.body)
    return dataclasses.replace(info, tensor_maps=_tensor_map_infos(func, maps)) if maps else info


def compile_cubin(code: DeviceCode, ctx) -> DeviceCode:
    """The compiled entry: the source compiled by nvcc for the target's arch, with the fast math and
    flags the user asked for (`code.compile_options`)."""
    from tilecraft.execution.nvcc.toolchain import compile_cubin as nvcc_compile
    from tilecraft.execution.nvcc.toolchain import requested_flags

    arch = ctx.target.attr("arch")
    options = code.compile_options
    flags = requested_flags(bool(options.get("fast_math", False)), tuple(options.get("flags", ())))
    return code.with_binaries({BINARY_FORMAT: nvcc_compile(code.sources[SOURCE_FORMAT], arch, flags)})
