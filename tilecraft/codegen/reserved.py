"""Names a printer must not give a kernel's variables and buffers, per language.

A kernel's parameter, buffer or loop variable may be called anything Python allows: `INFINITY`, `NULL`,
`int32_t`, `errno`, `printf`, `max`. Printed as written, such a name is expanded by a macro of the
system headers, shadows a type or function the generated code uses, or is a keyword of the target
language, and the kernel fails to compile or, worse, compiles to something else. A name that is a
reserved word of the language, a name of its libraries, or matches one of its reserved patterns is
therefore printed with `v_` in front (`INFINITY` becomes `v_INFINITY`); every other name is printed as
written, so generated code stays readable. Error messages and diagnostics (bounds-check reports,
argument errors) use the kernel's own names, never the printed ones.

This module holds what the C family shares (C's keywords and standard library, C++'s keywords and
library, the patterns of names either reserves); each backend adds its language's own (its built-in
functions and types) where it defines its printer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ReservedNames:
    """Reserved words and patterns (regular expressions matched against the whole name)."""

    words: frozenset[str]
    patterns: tuple[str, ...] = ()
    _compiled: re.Pattern | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.patterns:
            object.__setattr__(self, "_compiled", re.compile("|".join(f"(?:{p})" for p in self.patterns)))

    def __contains__(self, name: str) -> bool:
        return name in self.words or (
            self._compiled is not None and self._compiled.fullmatch(name) is not None
        )

    def extended(self, words: Iterable[str] = (), patterns: Iterable[str] = ()) -> ReservedNames:
        """These names and patterns, and `words` and `patterns` too."""
        return ReservedNames(self.words | frozenset(words), self.patterns + tuple(patterns))


def printed_name(obj: Any, names: dict[int, str], used: set[str], reserved: Callable[[str], bool]) -> str:
    """The name a printer gives `obj` (a variable or buffer), chosen on its first use and kept in `names`
    by object id: its own name with non-word characters as `_`, `v_` in front where that starts with a
    digit or `reserved` says the language (or the generated code) claims it, and `_1`, `_2`, ... after
    it where another object took it first (`used` holds the names taken)."""
    key = id(obj)
    if key not in names:
        base = re.sub(r"\W", "_", obj.name) or "v"
        if base[0].isdigit() or reserved(base):
            base = "v_" + base
        name, k = base, 1
        while name in used:
            name, k = f"{base}_{k}", k + 1
        used.add(name)
        names[key] = name
    return names[key]


def words(text: str) -> frozenset[str]:
    return frozenset(text.split())


C_KEYWORDS = words("""
auto break case char const continue default do double else enum extern float for goto if inline int long
register restrict return short signed sizeof static struct switch typedef union unsigned void volatile
while alignas alignof bool constexpr false nullptr static_assert thread_local true typeof typeof_unqual
asm main""")

# Macros of the C standard library and its usual platforms that are not all capitals with an
# underscore (those match a pattern below), and names the compilers predefine.
C_MACROS = words("""
NULL EOF NAN INFINITY BUFSIZ FILE errno stdin stdout stderr assert offsetof math_errhandling isnan isinf
isfinite isnormal signbit fpclassify isgreater isgreaterequal isless islessequal islessgreater isunordered
iscanonical issignaling issubnormal iszero complex imaginary linux unix i386 alloca setjmp va_arg
va_start va_end va_copy""")

# Functions, types and objects of the C standard headers the C-family device headers include (math,
# stdint, stdio, stdlib, string, errno, stddef, stdbool, limits, float) and of pthread. (Names the
# platforms' headers add beyond the standard, such as glibc's `gamma` or `index`, are left to the
# user: the generated code never calls them, and a local of that name only hides them.)
C_LIBRARY = words("""
abs labs llabs div ldiv lldiv imaxabs imaxdiv fabs fabsf fabsl fmod fmodf fmodl remainder remainderf
remainderl remquo remquof remquol fma fmaf fmal fmax fmaxf fmaxl fmin fminf fminl fdim fdimf fdiml nan nanf
nanl exp expf expl exp2 exp2f exp2l expm1 expm1f expm1l exp10 exp10f log logf logl log10 log10f log10l log2
log2f log2l log1p log1pf log1pl logb logbf logbl ilogb ilogbf ilogbl pow powf powl sqrt sqrtf sqrtl cbrt
cbrtf cbrtl hypot hypotf hypotl sin sinf sinl cos cosf cosl tan tanf tanl asin asinf asinl acos acosf acosl
atan atanf atanl atan2 atan2f atan2l sinh sinhf sinhl cosh coshf coshl tanh tanhf tanhl asinh asinhf asinhl
acosh acoshf acoshl atanh atanhf atanhl erf erff erfl erfc erfcf erfcl tgamma tgammaf tgammal lgamma lgammaf
lgammal ceil ceilf ceill floor floorf floorl trunc truncf truncl round roundf roundl lround lroundf lroundl
llround llroundf llroundl nearbyint nearbyintf nearbyintl rint rintf rintl lrint lrintf lrintl llrint
llrintf llrintl frexp frexpf frexpl ldexp ldexpf ldexpl modf modff modfl scalbn scalbnf scalbnl scalbln
scalblnf scalblnl nextafter nextafterf nextafterl nexttoward nexttowardf nexttowardl copysign copysignf
copysignl
printf fprintf sprintf snprintf vprintf vfprintf vsprintf vsnprintf scanf fscanf sscanf vscanf vfscanf
vsscanf puts fputs putc fputc putchar getc fgetc getchar gets fgets ungetc fopen freopen fclose fflush
fread fwrite fseek ftell rewind fgetpos fsetpos clearerr feof ferror perror remove rename tmpfile tmpnam
setbuf setvbuf
malloc calloc realloc free aligned_alloc posix_memalign abort exit _Exit atexit quick_exit
at_quick_exit getenv setenv unsetenv putenv system atof atoi atol atoll strtod strtof strtold strtol strtoll
strtoul strtoull rand srand qsort bsearch mblen mbtowc wctomb mbstowcs wcstombs
memcpy memmove memset memcmp memchr memccpy strcpy strncpy strcat strncat strcmp
strncmp strcoll strxfrm strchr strrchr strspn strcspn strpbrk strstr strtok strtok_r strlen strnlen
strerror strdup strndup
size_t ssize_t ptrdiff_t intptr_t uintptr_t intmax_t uintmax_t wchar_t wint_t max_align_t nullptr_t
div_t ldiv_t lldiv_t fpos_t float_t double_t va_list jmp_buf sig_atomic_t
int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t
pthread_t pthread_atfork pthread_create pthread_join pthread_self pthread_exit pthread_once""")

# Names C reserves for the implementation (two underscores, or one and a capital), the integer types
# of stdint.h, and the macro families of the standard headers: every name of capitals, digits and
# underscores that has an underscore (INT32_MAX, FLT_EPSILON, M_PI, HUGE_VAL, SEEK_SET, EXIT_FAILURE,
# PTHREAD_..., TC_...) and the errno codes (E followed by capitals or digits). POSIX reserves every name
# ending in `_t` too, but those are types, never macros: a kernel's `tile_t` hides no type the
# generated code uses (those are listed above), so it is left as written.
C_PATTERNS = (
    r"__\w*",
    r"_[A-Z]\w*",
    r"u?int(_least|_fast)?[0-9]+_t",
    r"[A-Z][A-Z0-9]*_[A-Z0-9_]*",
    r"E[A-Z0-9]+",
    r"pthread_\w+",
)

C_RESERVED = ReservedNames(C_KEYWORDS | C_MACROS | C_LIBRARY, C_PATTERNS)

CPP_KEYWORDS = words("""
and and_eq bitand bitor compl not not_eq or or_eq xor xor_eq asm catch char8_t char16_t char32_t class
co_await co_return co_yield concept const_cast consteval constinit decltype delete dynamic_cast explicit
export friend mutable namespace new noexcept operator private protected public reinterpret_cast requires
static_cast template this throw try typeid typename using virtual final override import module""")

# Names of C++'s standard library a C++ device language brings into scope: the overloaded math and
# the min/max family, the namespace, and what <cmath> adds to C's math.
CPP_LIBRARY = words("std min max swap move forward size array vector abs fabs isnan isinf signbit")

CPP_RESERVED = C_RESERVED.extended(CPP_KEYWORDS | CPP_LIBRARY)
