"""`LaunchPlan` (runtime/plan.py): the one description of a call that every call path reads."""

from __future__ import annotations

import pytest

import tilecraft.language as T
from tilecraft.backend.target import Target
from tilecraft.errors import ArgumentError
from tilecraft.runtime.artifact import CompiledArtifact, ParamInfo
from tilecraft.runtime.plan import INPUT, OUTPUT, LaunchPlan


def artifact(func, alignment=1):
    params = tuple(ParamInfo.from_param(p, written=i == len(func.params) - 1) for i, p in enumerate(func.params))
    return CompiledArtifact(func.name, Target("c", ()), params, func.symbolic_dims, (), buffer_alignment=alignment)


def scale():
    n = T.dynamic("n")

    @T.prim_func
    def scale(X: T.Tensor((n, 4), "float32"), alpha: T.int8, Y: T.Tensor((n, 4), "float32")):
        with T.Kernel(n, threads=32) as bx:
            for j in T.Parallel(4):
                Y[bx, j] = X[bx, j] * alpha

    return scale


def derived():
    n = T.dynamic("n")

    @T.prim_func
    def half(X: T.Tensor((n,), "float32"), Y: T.Tensor((n // 2,), "float32")):
        with T.Kernel(1, threads=1):
            for i in T.serial(n // 2):
                Y[i] = X[2 * i]

    return half


def test_roles_rules_ranges_and_twins_are_decided_once():
    """Per parameter its role, dims as rules (static or a symbolic dim's slot), scalar range; an output
    of an input's dims and dtype is allocated like it."""
    plan = LaunchPlan.build(artifact(scale(), 16), out_idx=[-1])
    x, alpha, y = plan.params
    assert (x.role, alpha.role, y.role) == (INPUT, INPUT, OUTPUT)
    assert plan.inputs == (0, 1) and plan.outputs == (2,) and plan.twins == (0,)
    assert [(r.static, r.slot) for r in x.shape] == [(None, 0), (4, -1)]
    assert alpha.scalar_range() == (-128, 127) and x.scalar_range() is None
    assert plan.dim_limits == (2**31 - 1,) and plan.alignment == 16
    assert plan.plain() and x.written is False and y.written is True


def test_a_derived_dim_makes_the_plan_not_plain_and_is_checked_after_binding():
    plan = LaunchPlan.build(artifact(derived()), out_idx=[1])
    assert not plan.plain() and plan.twins == (-1,)
    assert plan.params[1].shape[0].expr is not None
    env = {plan.dims[0]: 10}
    assert plan.shape_of(1, env) == (5,)
    with pytest.raises(ArgumentError, match=r"parameter 'Y': shape\[0\] must be n // 2 = 5, got 4"):
        plan.check_deferred(env, [(plan.params[1].shape[0], 4, "Y", "shape")])


def test_arity_and_out_idx_errors_name_what_the_kernel_takes():
    plan = LaunchPlan.build(artifact(scale()), out_idx=[2])
    assert plan.arrange((1, 2)) == [1, 2, None]
    with pytest.raises(ArgumentError, match=r"kernel scale takes 2 inputs \(X, alpha\) or all 3 parameters"):
        plan.arrange((1,))
    with pytest.raises(ArgumentError, match="out_idx 3 is out of range for a kernel with 3 parameters"):
        LaunchPlan.build(artifact(scale()), out_idx=[3])
