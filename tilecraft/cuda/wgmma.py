"""wgmma (sm_90a) facts the CUDA backend relies on: the shared-memory matrix descriptor and the asm of
`wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}` (and `m64nNk32.f32.{e4m3,e5m2}.{e4m3,e5m2}`) for
each N a kernel uses.

The descriptor (PTX ISA, "Matrix Descriptor Format" of the asynchronous warpgroup-level matrix
instructions) is a 64-bit word:

    bits  0-13  start address, (addr & 0x3FFFF) >> 4
    bits 16-29  leading dimension byte offset >> 4
    bits 32-45  stride dimension byte offset >> 4
    bits 49-51  matrix base offset (0: the swizzle pattern starts on its own alignment)
    bits 62-63  swizzle mode: 0 none, 1 128-byte, 2 64-byte, 3 32-byte

`tc_wgmma_desc` in tc_cuda.h builds the same word on the device; `descriptor` here is its statement in
Python, which the unit tests pin.
"""

from __future__ import annotations

SWIZZLE_MODE = {128: 1, 64: 2, 32: 3}  # swizzle width in bytes -> descriptor bits 62-63
MAX_N = 256  # the widest wgmma instruction


def descriptor(address: int, leading_bytes: int, stride_bytes: int, swizzle_bytes: int) -> int:
    """The 64-bit wgmma matrix descriptor of an operand at shared address `address`."""
    for name, value in (("address", address), ("leading", leading_bytes), ("stride", stride_bytes)):
        if value % 16:
            raise ValueError(f"wgmma descriptor: {name} {value} is not a multiple of 16 bytes")
    return (
        ((address & 0x3FFFF) >> 4)
        | ((leading_bytes >> 4) & 0x3FFF) << 16
        | ((stride_bytes >> 4) & 0x3FFF) << 32
        | SWIZZLE_MODE[swizzle_bytes] << 62
    )


def operand_strides(rows: int, atom: int, k_major: bool) -> tuple[int, int]:
    """(leading, stride) byte offsets of a 16-bit operand tile in `wgmma_operand(rows, _, atom)`.

    The stride byte offset is the distance between 8-row groups (8 rows of `atom` elements). The leading
    byte offset is, for MN-major operands, the distance between column blocks of `atom` elements along
    M or N (`rows` = K rows apart); K-major swizzled operands never read it (a k16 step stays inside one
    swizzle row), and it is 16 there as in CUTLASS.
    """
    stride = 8 * atom * 2
    leading = 16 if k_major else rows * atom * 2
    return leading, stride


def instruction_n(group_n: int) -> int:
    """The N of the wgmma instructions covering a warpgroup's `group_n` columns."""
    return min(group_n, MAX_N)


def asm_functions(
    widths: set[int] | frozenset[int],
    rs_widths: set[int] | frozenset[int] = frozenset(),
    fp8_widths: set[int] | frozenset[int] = frozenset(),
) -> str:
    """CUDA C++ specializations `tc_wgmma_op<N>` (A and B from shared memory) for `widths`,
    `tc_wgmma_rs_op<N>` (A from four registers) for `rs_widths` and `tc_wgmma_fp8_op<N>` (float8 A and B
    from shared memory, m64nNk32) for `fp8_widths`: the instruction widths a kernel uses."""
    ss = [_asm_function(n, False) for n in sorted(widths)]
    rs = [_asm_function(n, True) for n in sorted(rs_widths)]
    return "\n".join(ss + rs + [_asm_fp8_function(n) for n in sorted(fp8_widths)])


def _asm_fp8_function(n: int) -> str:
    """`tc_wgmma_fp8_op<N>::run<E5M2_A, E5M2_B>`: wgmma m64nNk32 with e4m3 / e5m2 operands (K-major: the
    8-bit forms take no transpose immediates, only scale-d and the input scales)."""
    regs = n // 2
    outs = ", ".join(f"%{i}" for i in range(regs))
    constraints = ", ".join(f'"+f"(d[{i}])' for i in range(regs))
    a, b, p = regs, regs + 1, regs + 2

    def body(ta: str, tb: str) -> str:
        return (
            f'            asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{p}, 0;\\n"\n'
            f'                         "wgmma.mma_async.sync.aligned.m64n{n}k32.f32.{ta}.{tb} {{{outs}}}, "\n'
            f'                         "%{a}, %{b}, p, 1, 1;\\n}}\\n"\n'
            f"                         : {constraints}\n"
            f'                         : "l"(a), "l"(b), "r"(1));'
        )

    cases = []
    for ea in (False, True):
        for eb in (False, True):
            ta, tb = ("e5m2" if ea else "e4m3"), ("e5m2" if eb else "e4m3")
            cases.append(f"        if ({'' if ea else '!'}E5M2_A && {'' if eb else '!'}E5M2_B) {{\n{body(ta, tb)}\n"
                         f"        }}")  # fmt: skip
    return (
        f"template <>\nstruct tc_wgmma_fp8_op<{n}> {{\n"
        f"    template <bool E5M2_A, bool E5M2_B>\n"
        f"    static __device__ __forceinline__ void run(float* d, uint64_t a, uint64_t b) {{\n"
        + "\n".join(cases)
        + "\n    }\n};\n"
    )


def _asm_function(n: int, register_a: bool) -> str:
    regs = n // 2
    outs = ", ".join(f"%{i}" for i in range(regs))
    d = regs  # operand numbers after the accumulators
    constraints = ", ".join(f'"+f"(d[{i}])' for i in range(regs))
    if register_a:
        # a is the warp's 16x16 slice of the 64x16 A step in four .b32 registers; wgmma with A in
        # registers takes no transpose-A immediate
        a_operand = f"{{%{d}, %{d + 1}, %{d + 2}, %{d + 3}}}"
        b, p, rest = d + 4, d + 5, f"%{d + 6}"
        inputs = '"r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1), "n"(TB)'
        name, a_type, template = "tc_wgmma_rs_op", "const uint32_t* a", "template <bool BF16, int TB>"
    else:
        a_operand, b, p, rest = f"%{d}", d + 1, d + 2, f"%{d + 3}, %{d + 4}"
        inputs = '"l"(a), "l"(b), "r"(1), "n"(TA), "n"(TB)'
        name, a_type, template = "tc_wgmma_op", "uint64_t a", "template <bool BF16, int TA, int TB>"

    def body(ab: str) -> str:
        return (
            f'        asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{p}, 0;\\n"\n'
            f'                     "wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{ab}.{ab} {{{outs}}}, "\n'
            f'                     "{a_operand}, %{b}, p, 1, 1, {rest};\\n}}\\n"\n'
            f"                     : {constraints}\n"
            f"                     : {inputs});"
        )

    return (
        f"template <>\nstruct {name}<{n}> {{\n"
        f"    {template}\n"
        f"    static __device__ __forceinline__ void run(float* d, {a_type}, uint64_t b) {{\n"
        f"        if (BF16) {{\n{body('bf16')}\n        }} else {{\n{body('f16')}\n        }}\n"
        f"    }}\n}};\n"
    )
