"""WGSL helper functions the printer calls, emitted once per module where used.

bfloat16 rounds to nearest even on the bits (NaN kept); float16 without `shader-f16` rounds through
`pack2x16float`; 8- and 16-bit integers wrap by sign extension; floor division and modulo follow Python
(and NumPy) for negative operands; erf is Abramowitz and Stegun 7.1.26 (absolute error < 1.5e-7).
"""



def _floor_division(ty: str, suffix: str) -> dict[str, str]:
    """tc_floordiv_<ty> and tc_floormod_<ty>: WGSL's / and % truncate; these round the quotient toward
    -inf and give the remainder the divisor's sign. `suffix` spells a literal of `ty` (`0i`, `0li`)."""
    return {
        f"tc_floordiv_{ty}": f"""fn tc_floordiv_{ty}(a: {ty}, b: {ty}) -> {ty} {{
    let q = a / b;
    return select(q, q - 1{suffix}, (a % b != 0{suffix}) && ((a < 0{suffix}) != (b < 0{suffix})));
}}""",
        f"tc_floormod_{ty}": f"""fn tc_floormod_{ty}(a: {ty}, b: {ty}) -> {ty} {{
    let r = a % b;
    return select(r, r + b, (r != 0{suffix}) && ((r < 0{suffix}) != (b < 0{suffix})));
}}""",
    }


SOURCES = {
    "tc_lt_i64": """fn tc_lt_i64(a: i64, b: i64) -> bool {
    let ah = i32(a >> 32u);
    let bh = i32(b >> 32u);
    return select(u32(a & 0xffffffffli) < u32(b & 0xffffffffli), ah < bh, ah != bh);
}""",
    "tc_lt_u64": """fn tc_lt_u64(a: u64, b: u64) -> bool {
    let ah = u32(a >> 32u);
    let bh = u32(b >> 32u);
    return select(u32(a & 0xfffffffflu) < u32(b & 0xfffffffflu), ah < bh, ah != bh);
}""",
    "tc_round_bf16": """fn tc_round_bf16(x: f32) -> f32 {
    let b = bitcast<u32>(x);
    if ((b & 0x7fffffffu) > 0x7f800000u) { return x; }
    return bitcast<f32>((b + 0x7fffu + ((b >> 16u) & 1u)) & 0xffff0000u);
}""",
    "tc_round_f16": """fn tc_round_f16(x: f32) -> f32 {
    return unpack2x16float(pack2x16float(vec2<f32>(x, 0.0f))).x;
}""",
    # Round to float32 *to odd* (see tilecraft/codegen/include/tc_common.h) before rounding to float16 or
    # bfloat16, so that float64 and wide integers are rounded once. The float64 one finds the truncation
    # from whichever neighbour f32() chose; the integer ones keep the top 24 bits and a sticky bit.
    "tc_f64_to_f32_odd": """fn tc_f64_to_f32_odd(d: f64) -> f32 {
    let f = f32(d);
    let back = f64(f);
    var u = bitcast<u32>(f);
    if (back == d || (u & 0x7fffffffu) > 0x7f800000u) { return f; }
    if (select((back < d), (back > d), d > 0.0lf)) { u = u - 1u; }
    return bitcast<f32>(u | 1u);
}""",
    "tc_u32_to_f32_odd": """fn tc_u32_to_f32_odd(m: u32) -> f32 {
    if (m < 0x1000000u) { return f32(m); }
    let shift = 8u - countLeadingZeros(m);
    let sticky = select(0u, 1u, (m & ((1u << shift) - 1u)) != 0u);
    return ldexp(f32((m >> shift) | sticky), i32(shift));
}""",
    "tc_i32_to_f32_odd": """fn tc_i32_to_f32_odd(x: i32) -> f32 {
    let f = tc_u32_to_f32_odd(select(u32(x), 0u - u32(x), x < 0i));
    return select(f, -f, x < 0i);
}""",
    "tc_u64_to_f32_odd": """fn tc_u64_to_f32_odd(m: u64) -> f32 {
    let hi = u32(m >> 32u);
    if (hi == 0u) { return tc_u32_to_f32_odd(u32(m)); }
    let shift = 40u - countLeadingZeros(hi);
    let sticky = select(0u, 1u, (m & ((1lu << shift) - 1lu)) != 0lu);
    return ldexp(f32(u32(m >> shift) | sticky), i32(shift));
}""",
    "tc_i64_to_f32_odd": """fn tc_i64_to_f32_odd(x: i64) -> f32 {
    let f = tc_u64_to_f32_odd(select(u64(x), 0lu - u64(x), x < 0li));
    return select(f, -f, x < 0li);
}""",
    # NumPy's maximum and minimum: NaN when an operand is NaN, found on the bits (a compiler may fold
    # `x != x` away) and returned as a quiet NaN's bits.
    "tc_max_f32": """fn tc_max_f32(a: f32, b: f32) -> f32 {
    let nan = ((bitcast<u32>(a) & 0x7fffffffu) > 0x7f800000u) || ((bitcast<u32>(b) & 0x7fffffffu) > 0x7f800000u);
    return select(max(a, b), bitcast<f32>(0x7fc00000u), nan);
}""",
    "tc_min_f32": """fn tc_min_f32(a: f32, b: f32) -> f32 {
    let nan = ((bitcast<u32>(a) & 0x7fffffffu) > 0x7f800000u) || ((bitcast<u32>(b) & 0x7fffffffu) > 0x7f800000u);
    return select(min(a, b), bitcast<f32>(0x7fc00000u), nan);
}""",
    "tc_max_f64": """fn tc_max_f64(a: f64, b: f64) -> f64 {
    let nan = !(a == a) || !(b == b);  // not `a != a`: naga emits an ordered not-equal, false for NaN
    return select(max(a, b), a + b, nan);
}""",
    "tc_min_f64": """fn tc_min_f64(a: f64, b: f64) -> f64 {
    let nan = !(a == a) || !(b == b);  // not `a != a`: naga emits an ordered not-equal, false for NaN
    return select(min(a, b), a + b, nan);
}""",
    # C's fmax and fmin: a NaN operand gives the other one, NaN only when both are (bits tested as above).
    **{f"tc_f{op}_f32": f"""fn tc_f{op}_f32(a: f32, b: f32) -> f32 {{
    let a_nan = (bitcast<u32>(a) & 0x7fffffffu) > 0x7f800000u;
    let b_nan = (bitcast<u32>(b) & 0x7fffffffu) > 0x7f800000u;
    return select(select({op}(a, b), a, b_nan), b, a_nan);
}}""" for op in ("max", "min")},
    **{f"tc_f{op}_f64": f"""fn tc_f{op}_f64(a: f64, b: f64) -> f64 {{
    let a_nan = !(a == a);  // not `a != a`: naga emits an ordered not-equal, false for NaN
    let b_nan = !(b == b);
    return select(select({op}(a, b), a, b_nan), b, a_nan);
}}""" for op in ("max", "min")},
    "tc_wrap_i8": "fn tc_wrap_i8(x: i32) -> i32 { return (x << 24u) >> 24u; }",
    "tc_wrap_i16": "fn tc_wrap_i16(x: i32) -> i32 { return (x << 16u) >> 16u; }",
    **_floor_division("i32", "i"),
    **_floor_division("i64", "li"),
    "tc_erf": """fn tc_erf(x: f32) -> f32 {
    let t = 1.0f / (1.0f + 0.3275911f * abs(x));
    let p = t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
    return sign(x) * (1.0f - p * exp(-x * x));
}""",
}
