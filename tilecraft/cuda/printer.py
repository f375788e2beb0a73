"""Prints lowered tile IR as CUDA C++.

Global buffers are kernel parameters; shared buffers are pointers into the block's dynamic shared
memory at offsets the shared-memory plan chose; per-thread buffers (lowered fragments and `local`
buffers) are register arrays; `local.var` buffers are scalars. Thread and block indices are read from
threadIdx/blockIdx once at the top of the kernel.
"""

from __future__ import annotations

from tilecraft.codegen.c_family import CFamilyPrinter, c_string, static_size, storage_type, value_type
from tilecraft.codegen.reserved import CPP_RESERVED, words
from tilecraft.cuda.intrinsics.simt import SHUFFLE_XOR
from tilecraft.cuda.ir import (
    AsyncCommit,
    AsyncCopy,
    AsyncWait,
    GemmCall,
    MbarArrive,
    MbarRing,
    MbarWait,
    NamedBarrier,
    ProducerExit,
    SetMaxNReg,
    StMatrix,
    TmaCopy,
    TmaStoreCopy,
    TmaStoreWait,
    VectorCopy,
    VectorLoad,
    VectorStore,
    VectorZero,
    WgmmaWait,
)
from tilecraft.cuda.storage import SHARED_SCOPES
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer

_VECTOR = {4: "uint32_t", 8: "uint2", 16: "uint4"}
# CUDA C++'s built-in variables, vector types and their make_ functions, device functions and runtime
# API (nvcc includes cuda_runtime.h in every translation unit), on top of C++'s and C's names.
CUDA_RESERVED = CPP_RESERVED.extended(
    words("""threadIdx blockIdx blockDim gridDim warpSize dim3 clock clock64 half half2 nv_bfloat16
    nv_bfloat162 rsqrt rsqrtf rcbrt rcbrtf sincos sincosf sincospi sincospif sinpi sinpif cospi cospif exp10
    exp10f fdividef erfinv erfinvf erfcinv erfcinvf erfcx erfcxf normcdf normcdff normcdfinv normcdfinvf norm
    normf norm3d norm3df norm4d norm4df rnorm rnormf rhypot rhypotf rnorm3d rnorm3df rnorm4d rnorm4df
    cyl_bessel_i0 cyl_bessel_i0f cyl_bessel_i1 cyl_bessel_i1f j0 j0f j1 j1f jn jnf y0 y0f y1 y1f yn ynf
    saturate umin umax llmin llmax ullmin ullmax mul24 umul24 mulhi umulhi mul64hi umul64hi signbit
    surface texture tex1Dfetch tex2D cooperative_groups nvcuda wmma"""),
    (
        r"(u?(char|short|int|long|longlong)|float|double)[1-4]",
        r"make_\w+",
        r"atomic[A-Z]\w*",
        r"cuda[A-Z]\w*",
        r"CU[a-z]\w*",
        r"nv_\w+",
    ),
)


_FROM_FLOAT = {"float": "__float_as_int", "double": "__double_as_longlong"}
_TO_FLOAT = {"float": ("int", "__int_as_float"), "double": ("long long", "__longlong_as_double")}


class CudaPrinter(CFamilyPrinter):
    """Writes the body of one CUDA kernel."""

    target_name = "the CUDA target"
    barrier_statement = "__syncthreads();"
    thread_index = "(int32_t)threadIdx.x"
    reserved_names = CUDA_RESERVED
    print_where = "[block %d,%d,%d thread %d] "
    print_ids = "(int)blockIdx.x, (int)blockIdx.y, (int)blockIdx.z, (int)threadIdx.x"
    int32_index_scopes = (*SHARED_SCOPES, "local", "local.fragment")
    arena_scopes = SHARED_SCOPES

    def __init__(self, arena_offsets: dict[int, int] | None = None, async_proxy_fence: bool = False,
                 ring_base: dict[int, int] | None = None, tensor_maps: dict[tuple, int] | None = None) -> None:  # fmt: skip
        super().__init__(arena_offsets)
        # mbarrier ring -> index of its first barrier in tc_mbar; (buffer, box, swizzle) -> tc_tmap<i>
        self.ring_base = ring_base or {}
        self.tensor_maps = tensor_maps or {}
        # wgmma reads shared memory through the async proxy: generic writes (stores, cp.async) must be
        # fenced by their writer before the barrier that publishes them
        self.fence = "tc_fence_proxy_async(); " if async_proxy_fence else ""
        # ids of the buffer arguments the kernel never writes: vector loads of them take the read-only
        # (non-coherent) path (codegen fills it in)
        self.read_only: set[int] = set()
        self.barrier_statement = self.fence + "__syncthreads();"

    # ------------------------------------------------------------------ intrinsics

    def bitcast(self, value: str, source: str, dest: str) -> str:
        # CUDA's own intrinsics (NVRTC and nvcc alike); integers of one size keep their bits in a cast
        if source == dest:
            return value
        if source in ("float", "double"):
            return f"(({dest}){_FROM_FLOAT[source]}({value}))"
        if dest in ("float", "double"):
            int_type, to_float = _TO_FLOAT[dest]
            return f"{to_float}(({int_type})({value}))"
        return f"(({dest})({value}))"

    def intrinsic(self, e: E.Call, args: list[str]) -> str:
        if e.op == SHUFFLE_XOR:
            return f"__shfl_xor_sync(0xffffffffu, {args[0]}, {args[1]})"
        if e.op == "cluster_ctarank":
            return "tc_cluster_ctarank()"
        return super().intrinsic(e, args)

    def assumption(self, condition: E.Expr, text: str) -> None:
        """T.assume: checked as T.device_assert is (a trap where false), then told to nvcc, which may
        rely on it past here."""
        self.line(self.discard_statement.format(self.device_assert(condition, f"Assume: {text}")))
        self.line(f"__builtin_assume({self.expr(condition)});")

    def device_assert(self, condition: E.Expr, message: str) -> str:
        """T.device_assert: a thread whose condition is false prints the message and traps, as CUDA's own
        assert does (the launch then fails)."""
        where = f" at {self.span}" if self.span else ""
        text = c_string(f"{message}{where}".replace("\n", " "))
        ids = "blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x"
        report = f'printf("[block %d,%d,%d thread %d] {text}\\n", {ids})'
        return f"(({self.expr(condition)}) ? (void)0 : ({report}, __trap()))"

    # ------------------------------------------------------------------ statements

    def arena_pointer(self, buf: Buffer, ctype: str, offset: int) -> str:
        return f"{ctype}* __restrict__ {self.name(buf)} = ({ctype}*)(tc_smem + {offset});"

    def private_array(self, buf: Buffer, ctype: str) -> str:
        if buf.scope == S.BARRIER_SCOPE:  # T.alloc_barrier: the block's mbarriers, in static shared memory
            return f"__shared__ __align__(8) uint64_t {self.name(buf)}[{static_size(buf)}];"
        return f"{ctype} {self.name(buf)}[{static_size(buf)}] __attribute__((aligned(16)));"

    def _s_GemmCall(self, s: GemmCall) -> None:
        flags = f"{str(s.trans_b).lower()}, {str(s.bf16).lower()}"
        dims = f"{s.m}, {s.n}, {s.k}, {s.warps_m}, {s.warps_n}"
        a, b, c = self.name(s.a), self.name(s.b), self.name(s.c)
        if not _is_zero(s.a_offset):
            a = f"{a} + {self.expr(E.convert(s.a_offset))}"
        if not _is_zero(s.b_offset):
            b = f"{b} + {self.expr(E.convert(s.b_offset))}"
        if s.float8_wgmma:
            atoms = f"{s.atom_a}, {s.atom_b}" + (f", {s.wait}" if s.wait else "")
            formats = ", ".join(str(x.dtype.name == "float8_e5m2").lower() for x in (s.a, s.b))
            self.line(f"tc::gemm_wgmma_fp8<{dims}, {formats}, {atoms}>({a}, {b}, {c});")
        elif s.variant == "wgmma":
            atoms = f"{s.atom_a}, {s.atom_b}" + (f", {s.wait}" if s.wait else "")
            self.line(f"tc::gemm_wgmma<{dims}, {str(s.trans_a).lower()}, {flags}, {atoms}>({a}, {b}, {c});")
        elif s.variant == "wgmma_rs":
            rest = f"{s.atom_b}" + (f", {s.wait}" if s.wait else "")
            self.line(f"tc::gemm_wgmma_rs<{dims}, {flags}, {rest}>((const uint32_t*){a}, {b}, {c});")
        elif s.variant in ("ss", "rs") and s.tf32:
            transposes = f"{str(s.trans_a).lower()}, " if s.variant == "ss" else ""
            self.line(f"tc::gemm_{s.variant}_tf32<{dims}, {transposes}{str(s.trans_b).lower()}>"
                      f"({a}, {b}, {c}{self._warp(s)});")  # fmt: skip
        elif s.variant in ("ss", "rs") and s.int8:
            signs = ", ".join(str(x.dtype.name == "uint8").lower() for x in (s.a, s.b))
            a = a if s.variant == "ss" else f"(const uint32_t*){a}"
            self.line(f"tc::gemm_{s.variant}_i8<{dims}, {signs}>({a}, {b}, {c}{self._warp(s)});")
        elif s.variant == "ss" and s.a.dtype.kind == "float8":
            formats = ", ".join(str(x.dtype.name == "float8_e5m2").lower() for x in (s.a, s.b))
            self.line(f"tc::gemm_ss_fp8<{dims}, {str(s.trans_a).lower()}, {str(s.trans_b).lower()}, {formats}>"
                      f"({a}, {b}, {c}{self._warp(s)});")  # fmt: skip
        elif s.variant == "ss":
            warp = self._warp(s)
            atoms = f", {s.atom_a}, {s.atom_b}" if s.atom_a or s.atom_b else ""  # operands in wgmma's layout
            self.line(f"tc::gemm_ss<{dims}, {str(s.trans_a).lower()}, {flags}{atoms}>({a}, {b}, {c}{warp});")
        else:
            self.line(f"tc::gemm_rs<{dims}, {flags}>((const uint32_t*){a}, {b}, {c}{self._warp(s)});")

    def _warp(self, s: GemmCall) -> str:
        return "" if s.warp is None else f", {self.expr(E.convert(s.warp))}"

    def _s_AsyncCopy(self, s: AsyncCopy) -> None:
        fn = {16: "tc_cp_async16", 4: "tc_cp_async4"}[s.bytes]
        dst = f"{self.name(s.dst)} + {self.expr(s.dst_offset)}"
        src = f"{self.name(s.src)} + {self.expr(s.src_offset)}"
        self.line(f"{fn}({dst}, {src}, {self.expr(s.valid)});")

    def _barrier(self, ring: int, stage) -> str:
        base = self.ring_base[ring]
        return (
            f"&tc_mbar[{base} + {self.expr(E.convert(stage))}]"
            if not _is_zero(stage)
            else f"&tc_mbar[{base}]"
        )

    def _s_TmaCopy(self, s: TmaCopy) -> None:
        bar = self._barrier(s.ring, s.stage)
        if not s.elected:
            self.line("if (tc_leader()) {")
            self.indent += 1
        self.line(f"tc_mbar_expect_tx({bar}, {s.bytes}u);")
        for load in s.loads:
            tmap = self.tensor_maps[(load.src.name, load.box, load.swizzle)]
            coords = ", ".join(f"(int32_t)({self.expr(c)})" for c in load.coords)
            dst = f"{self.name(load.dst)} + {self.expr(load.dst_offset)}"
            if load.multicast:
                mask = f"0x{(1 << load.multicast) - 1:x}"
                self.line(f"tc_tma_load_multicast<{len(load.coords)}>({dst}, tc_tmap{tmap}, {{{coords}}}, {bar}, {mask});")
            else:
                self.line(f"tc_tma_load<{len(load.coords)}>({dst}, tc_tmap{tmap}, {{{coords}}}, {bar});")
        if not s.elected:
            self.indent -= 1
            self.line("}")
        if s.ring == 0:
            self._wait(0, 0)

    def _s_TmaStoreCopy(self, s: TmaStoreCopy) -> None:
        self.line("if (tc_leader()) {")
        self.indent += 1
        for store in s.stores:
            tmap = self.tensor_maps[(store.dst.name, store.box, store.swizzle)]
            coords = ", ".join(f"(int32_t)({self.expr(c)})" for c in store.coords)
            src = f"{self.name(store.src)} + {self.expr(store.src_offset)}"
            self.line(f"tc_tma_store<{len(store.coords)}>(tc_tmap{tmap}, {{{coords}}}, {src});")
        self.line("tc_tma_store_commit();")
        self.indent -= 1
        self.line("}")

    def _s_TmaStoreWait(self, s: TmaStoreWait) -> None:
        count = f"<{s.pending}>" if s.pending else ""
        self.line(f"if (tc_leader()) tc_tma_store_wait_read{count}();")

    def _s_StMatrix(self, s: StMatrix) -> None:
        dtype = s.dst.dtype
        bits = [self.to_storage(self.stored(v, dtype), dtype) for v in s.values]
        words = [f"((uint32_t)(uint16_t)({lo}) | ((uint32_t)(uint16_t)({hi}) << 16))"
                 for lo, hi in zip(bits[::2], bits[1::2])]  # fmt: skip
        row = f"{self.name(s.dst)} + {self.expr(s.dst_offset)}"
        self.line(f"tc_stmatrix_x{s.count}({row}, {', '.join(words)});")

    def _wait(self, ring: int, stage) -> None:
        if _is_zero(stage):
            self.line(f"tc_mbar_wait({self._barrier(ring, 0)}, tc_phase{ring} & 1u);")
            self.line(f"tc_phase{ring} ^= 1u;")
            return
        st = self.expr(E.convert(stage))
        self.line("{")
        self.line(f"    const int32_t tc_stage = {st};")
        self.line(
            f"    tc_mbar_wait(&tc_mbar[{self.ring_base[ring]} + tc_stage], (tc_phase{ring} >> tc_stage) & 1u);"
        )
        self.line(f"    tc_phase{ring} ^= 1u << tc_stage;")
        self.line("}")

    def _s_MbarWait(self, s: MbarWait) -> None:
        if s.parity is None:
            self._wait(s.ring, s.stage)
        else:
            self.line(f"tc_mbar_wait({self._barrier(s.ring, s.stage)}, (uint32_t)({self.expr(s.parity)}));")

    def _s_MbarArrive(self, s: MbarArrive) -> None:
        if s.converge:
            self.line("__syncwarp();")
        if s.cluster > 1:
            self.line(f"if ((threadIdx.x & 31u) < {s.cluster}u) "
                      f"tc_mbar_arrive_cluster({self._barrier(s.ring, s.stage)}, threadIdx.x & 31u);")  # fmt: skip
        else:
            self.line(f"if ((threadIdx.x & 31u) == 0u) tc_mbar_arrive({self._barrier(s.ring, s.stage)});")

    def _s_ProducerExit(self, s: ProducerExit) -> None:
        self.line("return;")

    def _s_SetMaxNReg(self, s: SetMaxNReg) -> None:
        self.line(f"tc_setmaxnreg_{'inc' if s.increase else 'dec'}<{s.regs}>();")

    # ------------------------------------------------------------------ T.alloc_barrier's mbarriers

    def _s_BarrierInit(self, s: S.BarrierInit) -> None:
        """One thread initializes the barriers; the fence makes them visible to the async proxy, and every
        thread of the block waits for them (T.alloc_barrier stands at the kernel's top level)."""
        name = self.name(s.barriers)
        self.line("if (tc_leader()) {")
        for k, count in enumerate(s.counts):
            self.line(f"    tc_mbar_init(&{name}[{k}], {count}u);")
        self.line("    tc_mbar_init_fence();")
        self.line("}")
        self.line("__syncthreads();")

    def _s_Mbarrier(self, s: S.Mbarrier) -> None:
        barrier = f"&{self.name(s.barriers)}[{self.expr(s.index)}]"
        if s.op == "arrive":
            self.line(f"tc_mbar_arrive({barrier});")
        elif s.op == "wait":
            self.line(f"tc_mbar_wait({barrier}, (uint32_t)({self.expr(s.value)}) & 1u);")
        # expect_tx: tilecraft's T.tma_copy is complete when its threads go on, so no bytes are counted

    def _s_NamedBarrier(self, s: NamedBarrier) -> None:
        self.line(f"{self.fence}tc_named_barrier({s.barrier}, {s.threads});")

    def _s_MbarRing(self, s: MbarRing) -> None:
        pass  # declared at the kernel's top (codegen.kernel_source)

    def _s_WgmmaWait(self, s: WgmmaWait) -> None:
        self.line(f"tc_wgmma_wait<{s.pending}>();")
        for c in s.c:
            self.line(f"tc_wgmma_fence_operands<{static_size(c)}>({self.name(c)});")
        for a in s.keep:
            words = static_size(a) * a.dtype.bytes // 4
            self.line(f"tc_wgmma_keep_operands<{words}>((const uint32_t*){self.name(a)});")

    def _s_AsyncCommit(self, s: AsyncCommit) -> None:
        self.line("tc_cp_async_commit();")

    def _s_AsyncWait(self, s: AsyncWait) -> None:
        self.line(f"tc_cp_async_wait<{s.pending}>();")

    def _s_VectorCopy(self, s: VectorCopy) -> None:
        vt = _VECTOR[s.bytes]
        dst = f"{self.name(s.dst)} + {self.expr(s.dst_offset)}"
        src = f"{self.name(s.src)} + {self.expr(s.src_offset)}"
        self.line(f"*({vt}*)({dst}) = *(const {vt}*)({src});")

    def _s_VectorZero(self, s: VectorZero) -> None:
        vt = _VECTOR[s.bytes]
        zero = {4: "0u", 8: "make_uint2(0u, 0u)", 16: "make_uint4(0u, 0u, 0u, 0u)"}[s.bytes]
        self.line(f"*({vt}*)({self.name(s.dst)} + {self.expr(s.dst_offset)}) = {zero};")

    def _s_VectorStore(self, s: VectorStore) -> None:
        dtype = s.dst.dtype
        # a register of the buffer's dtype is stored as its bits (no round trip through float)
        bits = [self.raw_value(v, dtype) or self.to_storage(self.stored(v, dtype), dtype) for v in s.values]
        if dtype.bits == 8:
            # through uint8_t: a negative int8 must not sign-extend into its neighbours' bytes
            words = [" | ".join(f"((uint32_t)(uint8_t)({b}) << {8 * k})" if k else f"(uint32_t)(uint8_t)({b})"
                                for k, b in enumerate(bits[w : w + 4]))
                     for w in range(0, len(bits), 4)]  # fmt: skip
            words = [f"({w})" for w in words]
        elif dtype.bits == 16:
            # through uint16_t: a negative int16 must not sign-extend into its neighbour's half
            words = [f"((uint32_t)(uint16_t)({lo}) | ((uint32_t)(uint16_t)({hi}) << 16))"
                     for lo, hi in zip(bits[::2], bits[1::2])]  # fmt: skip
        elif dtype.is_float:
            words = [f"__float_as_uint({b})" for b in bits]
        else:
            words = [f"(uint32_t)({b})" for b in bits]
        vt = _VECTOR[4 * len(words)]
        packed = words[0] if len(words) == 1 else f"make_{vt}({', '.join(words)})"
        if dtype.bits == 8 and len(bits) == 2:  # a pair of bytes: one 16-bit store
            vt, packed = "uint16_t", f"(uint16_t){words[0]}"
        target = f"{self.name(s.dst)} + {self.expr(s.dst_offset)}"
        store = f"*({vt}*)({target}) = {packed};"
        if self.bounds_check:
            store = f"if ({self._run_in_bounds(s.dst, s.dst_offset, len(s.values))}) {store}"
        self.line(store)

    def _s_VectorLoad(self, s: VectorLoad) -> None:
        """One aligned vector load into `tc_v`, whose words are split into the run's elements; each is
        written to its register as loaded (one dtype) or converted."""
        src, dst = s.src.dtype, s.dst.dtype
        nbytes = s.count * src.bytes
        vt = _VECTOR[nbytes]
        address = f"(const {vt}*)({self.name(s.src)} + {self.expr(s.src_offset)})"
        # nvcc 13 left plain loads of a `const __restrict__` buffer that it assumes aligned on ld.global
        # (not the non-coherent ld.global.nc) in TileLang's cast kernels; __ldg asks for it
        load = f"__ldg({address})" if id(s.src) in self.read_only else f"*{address}"
        if self.bounds_check:
            zero = {4: "0u", 8: "make_uint2(0u, 0u)", 16: "make_uint4(0u, 0u, 0u, 0u)"}[nbytes]
            load = f"({self._run_in_bounds(s.src, s.src_offset, s.count)} ? {load} : {zero})"
        self.line("{")
        self.indent += 1
        self.line(f"const {vt} tc_v = {load};")
        words = ["tc_v"] if nbytes == 4 else [f"tc_v.{c}" for c in "xyzw"[: nbytes // 4]]
        per_word = 4 // src.bytes
        storage = storage_type(src)
        for j in range(s.count):
            word, shift = words[j // per_word], (j % per_word) * src.bits
            if src.bits == 32:
                bits = self.bitcast(word, "uint32_t", storage)
            else:
                part = word if shift == 0 else f"({word} >> {shift})"
                narrow = "uint8_t" if src.bits == 8 else "uint16_t"
                bits = self.bitcast(f"({narrow})({part})", narrow, storage)
            value = bits if dst == src else self._converted(self.from_storage(bits, src), src, dst)
            index = s.dst_offset if j == 0 else E.add(s.dst_offset, j)
            reg = f"{self.name(s.dst)}[{self.expr(index)}]"
            self.line(f"{reg} = {value};")
        self.indent -= 1
        self.line("}")

    def fused_store(self, s: S.BufferStore) -> str | None:
        """`x * y + z` stored into float16 from float16 elements (a GEMV accumulating in float16) is one
        `fma.rn.f16`: the exact product and sum rounded once to float16. The float32 path computes the
        same exact product, rounds the sum to float32 and then to float16, which is that value except
        where the first rounding lands on a float16 midpoint; it costs four conversions per
        multiply-add, which made such loops compute-bound."""
        value = s.value
        if s.buffer.dtype != dt.float16 or not isinstance(value, E.Add) or value.dtype != dt.float16:
            return None
        for product, addend in ((value.a, value.b), (value.b, value.a)):
            if isinstance(product, E.Mul) and product.dtype == dt.float16:
                bits = [self.raw_value(x, dt.float16) for x in (product.a, product.b, addend)]
                if all(b is not None for b in bits):
                    return f"tc_hfma({bits[0]}, {bits[1]}, {bits[2]})"
        return None

    def _converted(self, value: str, src, dst) -> str:
        """The stored form in `dst` of `value` (C text of a `src` value), converted as a cast would."""
        placeholder = E.Var(src, "tc_elem")
        self.names[id(placeholder)] = f"({value})"
        try:
            return self.to_storage(self.stored(E.cast(placeholder, dst), dst), dst)
        finally:
            del self.names[id(placeholder)]

    def _run_in_bounds(self, buf: Buffer, offset: E.Expr, count: int) -> str:
        first = self.expr(offset)
        return f"{self.in_bounds(buf, first)} && {self.in_bounds(buf, f'({first}) + {count - 1}')}"


def _is_zero(value) -> bool:
    return E.const_value(value) == 0 if isinstance(value, (E.Expr, int)) else False


__all__ = ["CudaPrinter", "value_type"]
