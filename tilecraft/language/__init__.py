"""The common, backend-neutral kernel language (`import tilecraft.language as T`).

Names and argument conventions follow TileLang so kernels port by changing the imports. Everything
here is lowered by every backend or rejected with a clear error at lowering; backend extensions live
in `tilecraft.<backend>.language`.
"""

import tilecraft._origin  # noqa: F401 - first: says so when a folder named tilecraft hides this package
from tilecraft.ir.dtype import (
    bfloat16,
    float4_e2m1fn,
    float6_e2m3fn,
    float6_e3m2fn,
    float8_e4m3fn,
    float8_e4m3fnuz,
    float8_e5m2,
    float8_e5m2fnuz,
    float8_e8m0fnu,
    float16,
    float32,
    float64,
    int4,
    int8,
    int16,
    int32,
    int64,
    tfloat32,
    uint4,
    uint8,
    uint16,
    uint32,
    uint64,
)
from tilecraft.ir.dtype import bool_ as bool  # noqa: A001 - TileLang's name
from tilecraft.ir.stmt import GemmWarpPolicy
from tilecraft.language.alloc import alloc_fragment, alloc_local, alloc_shared, alloc_var
from tilecraft.language.kernel import (
    ClusterKernel,
    Kernel,
    annotate_layout,
    assume,
    device_assert,
    evaluate,
    func_attr,
    get_block_binding,
    get_thread_binding,
    print,  # noqa: A004
    sync_threads,
    use_swizzle,
)
from tilecraft.language.lanes import (
    get_lane_idx,
    get_warp_group_idx,
    get_warp_idx,
    get_warp_idx_sync,
    shuffle_elect,
)
from tilecraft.language.loops import Parallel, Persistent, Pipelined, serial, unroll, vectorized
from tilecraft.language.macro import macro
from tilecraft.language.math import (
    And,
    Broadcast,
    Cast,
    Not,
    Or,
    Ramp,
    Select,
    abs,  # noqa: A004
    align_up,
    all_of,
    any_of,
    call_intrin,
    cast,
    ceil,
    ceildiv,
    cos,
    erf,
    exp,
    exp2,
    floor,
    floordiv,
    floormod,
    if_then_else,
    infinity,
    log,
    log2,
    max,  # noqa: A004
    max_value,
    min,  # noqa: A004
    min_value,
    pow,  # noqa: A004
    round,  # noqa: A004
    rsqrt,
    sigmoid,
    sin,
    sqrt,
    tanh,
    truncdiv,
    truncmod,
)
from tilecraft.language.prim_func import prim_func
from tilecraft.language.tileops import (
    atomic_add,
    atomic_addx2,
    atomic_addx4,
    atomic_load,
    atomic_max,
    atomic_min,
    atomic_store,
    clear,
    copy,
    cummax,
    cummin,
    cumsum,
    fill,
    gemm,
    reduce_absmax,
    reduce_abssum,
    reduce_max,
    reduce_min,
    reduce_sum,
)
from tilecraft.language.types import StridedTensor, Tensor, const, dynamic, empty, symbolic
from tilecraft.layout import Fragment, Layout

Buffer = Tensor
half = float16
float = float32  # noqa: A001
double = float64
# TileLang's C-style names (its quantization helpers use T.int and T.uint as defaults at import).
int = int32  # noqa: A001
uint = uint32
short = int16
long = int64
float8_e4m3 = float8_e4m3fn
# Two float4_e2m1fn values in one byte (torch.float4_e2m1fn_x2): the dtype of packed bytes' views.
float4_e2m1fnx2 = float4_e2m1fn.with_lanes(2)
# TileLang's vector dtypes, `T.float32x2` ... `T.int8x64`: its dtypes module names every scalar type below
# with 2 to 64 lanes (its tests name them at import, in parametrize lists, and compare them as strings).
# Not in __all__: 90 names that a star import need not bring (docs/language.md, "Data types").
VECTOR_DTYPE_BASES = (int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, float32, float64,
                      bfloat16, float8_e4m3fn, float8_e5m2, float8_e8m0fnu)  # fmt: skip
VECTOR_DTYPES = {f"{base}x{lanes}": base.with_lanes(lanes) for base in VECTOR_DTYPE_BASES
                 for lanes in (2, 4, 8, 16, 32, 64)}  # fmt: skip
globals().update(VECTOR_DTYPES)

__all__ = [
    "And", "Broadcast", "Buffer", "Cast", "Fragment", "GemmWarpPolicy", "ClusterKernel", "Kernel", "Layout", "Not", "Or",
    "Parallel", "Persistent", "Pipelined", "Ramp", "Select", "StridedTensor", "Tensor", "abs", "align_up", "all_of", "alloc_fragment", "alloc_local",
    "alloc_shared", "alloc_var", "annotate_layout", "any_of", "atomic_add", "atomic_addx2", "atomic_addx4", "atomic_load", "get_lane_idx", "get_warp_group_idx", "get_warp_idx", "get_warp_idx_sync", "shuffle_elect", "atomic_max", "atomic_min", "atomic_store", "bfloat16",
    "bool", "call_intrin", "cast", "ceil", "ceildiv", "clear", "const", "copy", "cos", "cummax", "cummin", "cumsum", "double",
    "dynamic", "empty", "erf", "evaluate", "exp", "exp2", "fill", "float", "float4_e2m1fn", "float4_e2m1fnx2",
    "float6_e2m3fn", "float6_e3m2fn", "float8_e4m3", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "float16", "float32", "float64", "floor", "floordiv", "floormod", "func_attr", "gemm",
    "get_block_binding", "get_thread_binding", "half", "if_then_else", "infinity", "int4", "int8", "int16",
    "int", "int32", "int64", "log", "log2", "long", "macro", "max", "max_value", "min", "min_value", "pow", "prim_func",
    "print", "reduce_abssum", "reduce_absmax", "reduce_max", "reduce_min", "reduce_sum", "round", "rsqrt",
    "serial", "short", "sigmoid", "sin", "sqrt", "symbolic", "sync_threads", "tanh", "tfloat32", "truncdiv", "truncmod",
    "uint", "uint4", "uint8", "uint16", "uint32", "uint64", "unroll", "use_swizzle", "vectorized",
]  # fmt: skip

from tilecraft.language.generic import ir  # noqa: E402
from tilecraft.language.script import parse_script  # noqa: E402

__all__ += ["ir", "parse_script"]

# TileLang's names that need no backend support (docs/compat.md, "API surface").
from tilecraft.ir.dtype import DataType as dtype  # noqa: E402
from tilecraft.ir.expr import Expr as PrimExpr  # noqa: E402 - TVM's name for a value expression
from tilecraft.language.alloc import alloc_global  # noqa: E402
from tilecraft.language.barriers import (  # noqa: E402
    alloc_barrier,
    barrier_arrive,
    barrier_wait,
    mbarrier_arrive,
    mbarrier_arrive_expect_tx,
    mbarrier_expect_tx,
    mbarrier_wait_parity,
    tma_copy,
    ws,
)
from tilecraft.language.extern import access_ptr, alloc_buffer, call_extern, dp4a, import_source  # noqa: E402
from tilecraft.language.gemm_sp import gemm_sp  # noqa: E402
from tilecraft.language.im2col import c2d_im2col, im2col  # noqa: E402
from tilecraft.language.kernel import (  # noqa: E402
    annotate_compile_flags,
    annotate_consumer_reg_alloc,
    annotate_pass_configs,
    annotate_producer_reg_dealloc,
    annotate_safe_value,
    disable_warp_group_reg_alloc,
    no_set_max_nreg,
    set_max_nreg,
    thread_binding,
)
from tilecraft.language.let import let  # noqa: E402
from tilecraft.language.math import (  # noqa: E402
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
    clamp,
    reinterpret,
    shift_left,
    shift_right,
)
from tilecraft.language.packed import abs2, add2, fma2, max2, min2, mul2, sub2  # noqa: E402
from tilecraft.language.pointers import make_tensor, make_tensor_from_addr, ptr  # noqa: E402
from tilecraft.language.random import rng_init, rng_rand, rng_rand_float  # noqa: E402
from tilecraft.language.reducers import (  # noqa: E402
    alloc_reducer,
    attr,
    comm_reducer,
    finalize_reducer,
    reducer_init,
    reducer_update,
    tvm_thread_allreduce,
    warp_reduce_bitand,
    warp_reduce_bitor,
    warp_reduce_bitxor,
    warp_reduce_max,
    warp_reduce_min,
    warp_reduce_sum,
)
from tilecraft.language.types import FragmentBuffer, LocalBuffer, SharedBuffer  # noqa: E402
from tilecraft.language.types import SymbolicVar as Var  # noqa: E402 - TVM's name, TVM's argument order
from tilecraft.language.views import reshape, view  # noqa: E402

__all__ += [
    "PrimExpr",
    "Var",
    "let",
    "warp_reduce_bitand", "warp_reduce_bitor", "warp_reduce_bitxor", "warp_reduce_max", "warp_reduce_min",
    "warp_reduce_sum",
    "access_ptr",
    "alloc_buffer",
    "bitwise_and",
    "bitwise_not",
    "bitwise_or",
    "bitwise_xor",
    "shift_left",
    "shift_right",
    "call_extern",
    "dp4a",
    "import_source",
    "alloc_reducer",
    "attr",
    "comm_reducer",
    "finalize_reducer",
    "reducer_init",
    "reducer_update",
    "tvm_thread_allreduce",
    "alloc_barrier",
    "annotate_compile_flags",
    "annotate_consumer_reg_alloc",
    "annotate_pass_configs",
    "annotate_producer_reg_dealloc",
    "annotate_safe_value",
    "set_max_nreg",
    "barrier_arrive",
    "barrier_wait",
    "mbarrier_arrive",
    "mbarrier_arrive_expect_tx",
    "mbarrier_expect_tx",
    "mbarrier_wait_parity",
    "tma_copy",
    "ws",
    "FragmentBuffer",
    "LocalBuffer",
    "SharedBuffer",
    "alloc_global",
    "c2d_im2col",
    "clamp",
    "disable_warp_group_reg_alloc",
    "assume",
    "device_assert",
    "dtype",
    "gemm_sp",
    "im2col",
    "no_set_max_nreg",
    "reinterpret",
    "reshape",
    "thread_binding",
    "view",
    "abs2", "add2", "fma2", "max2", "min2", "mul2", "sub2", "rng_init", "rng_rand", "rng_rand_float",
    "make_tensor", "make_tensor_from_addr", "ptr",
]  # fmt: skip
