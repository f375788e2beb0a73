"""The conformance kit: the kernels every backend, in tree or out, must run, with float64 NumPy
references, and the rule for what counts as a skip.

    from tilecraft.testing import conformance as kit

    for pair in kit.declared_cases("mybackend"):        # (target kind, execution backend) pairs
        ctx = kit.resolve(pair)                         # or kit.NotHere: why not on this machine
        for case in kit.CASES:
            print(case.name, kit.run_case(case, ctx))   # Verdict: pass, fail or skip, and why

`CASES` are kernels with inputs and references (`cases.py`, built from `kernels.py`, `regressions.py`
and the other modules here); `CHECKS` are the checks that take more than one kernel call. A kernel that
fails to lower is a skip only for a limit the backend's manifest declares in `unsupported`; anything else
fails. tilecraft's own suite (tests/conformance) and `tilecraft backend check` both run this kit.
"""

from tilecraft.testing.conformance.cases import CASES, DYNAMIC_SIZES, Case, f64, poison, randn
from tilecraft.testing.conformance.checks import CHECKS
from tilecraft.testing.conformance.runner import (
    FAIL,
    PASS,
    SKIP,
    UndeclaredLimit,
    Unsupported,
    Verdict,
    check_case,
    compile_kernel,
    declared,
    expect,
    rel_error,
    run_case,
    verdict_of,
    within,
)
from tilecraft.testing.conformance.targets import NotHere, TargetCase, declared_cases, resolve

__all__ = [
    "CASES", "CHECKS", "DYNAMIC_SIZES", "FAIL", "PASS", "SKIP", "Case", "NotHere", "TargetCase",
    "UndeclaredLimit", "Unsupported", "Verdict", "check_case", "compile_kernel", "declared",
    "declared_cases", "expect", "f64", "poison", "randn", "rel_error", "resolve", "run_case", "verdict_of",
    "within",
]  # fmt: skip
