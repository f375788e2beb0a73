"""mbarriers on the CPU: a block runs as one thread, so thread groups run one after the other in program
order (run-thread-groups), and an mbarrier is a counter that this order must satisfy.

Each barrier of a `T.alloc_barrier` buffer becomes three ints of the block: the arrivals its phase still
waits for, its phase's parity and its count. `T.barrier_arrive` run by a group of n threads (the threads
that take the branches on the thread index around it) makes n arrivals, completing the phase, and
starting the next, when none is left to wait for. A wait for a phase that has not completed is one that
threads running at the same time would satisfy later, which one thread in program order cannot: the call
then raises, naming the wait (a `KernelCheckError`), instead of reading tiles that are not there yet. The
transaction bytes of `T.mbarrier_expect_tx` count nothing: copies here are complete when issued.
"""

from __future__ import annotations

import dataclasses

from tilecraft.backend.pipeline import module_pass
from tilecraft.cpu.ir import CheckFailed
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.function import IRModule
from tilecraft.ir.visitor import Mutator
from tilecraft.transform.thread_groups import is_thread_condition

PENDING, PHASE, COUNT = 0, 1, 2  # the three ints of one barrier


class _Mbarriers(Mutator):
    def __init__(self) -> None:
        super().__init__()
        self.states: dict[int, Buffer] = {}
        self.tid: E.Var | None = None
        self.threads: list[int] = []  # the threads that run the code being rewritten

    def mutate_Buffer(self, buf):
        return self.states.get(id(buf), buf)

    def mutate_KernelLaunch(self, launch: S.KernelLaunch) -> S.Stmt:
        count = 1
        for t in launch.threads:
            count *= t
        saved = (self.tid, self.threads)
        self.tid = launch.thread_vars[0] if len(launch.thread_vars) == 1 else None
        self.threads = list(range(count))
        try:
            return self.generic_mutate(launch)
        finally:
            self.tid, self.threads = saved

    def mutate_Allocate(self, s: S.Allocate) -> S.Stmt:
        if s.buffer.scope != S.BARRIER_SCOPE:
            return self.generic_mutate(s)
        state = Buffer(s.buffer.name, (s.buffer.shape[0], E.const(3)), dt.int32, "local", span=s.buffer.span)
        self.states[id(s.buffer)] = state
        return S.Allocate(state, self.mutate(s.body), span=s.span)

    def mutate_IfThenElse(self, s: S.IfThenElse) -> S.Stmt:
        if self.tid is None or not is_thread_condition(s.condition, self.tid):
            return self.generic_mutate(s)
        from tilecraft.ir.eval import evaluate

        taken = [t for t in self.threads if evaluate(s.condition, {self.tid: t})]
        others = [t for t in self.threads if t not in set(taken)]
        cases = []
        for body, threads in ((s.then_case, taken), (s.else_case, others)):
            saved, self.threads = self.threads, threads
            try:
                cases.append(None if body is None else self.mutate(body))
            finally:
                self.threads = saved
        return dataclasses.replace(
            s, condition=self.mutate(s.condition), then_case=cases[0], else_case=cases[1]
        )

    def mutate_BarrierInit(self, s: S.BarrierInit) -> S.Stmt:
        state = self.states[id(s.barriers)]
        stores = []
        for k, count in enumerate(s.counts):
            for field, value in ((PENDING, count), (PHASE, 0), (COUNT, count)):
                stores.append(S.BufferStore(state, E.const(value), (E.const(k), E.const(field)), span=s.span))
        return S.seq(*stores)

    def mutate_Mbarrier(self, s: S.Mbarrier) -> S.Stmt:
        state = self.states[id(s.barriers)]
        index = self.mutate(s.index)

        def at(field: int) -> E.Expr:
            return E.BufferLoad(dt.int32, state, (index, E.const(field)))

        def store(field: int, value: E.Expr) -> S.Stmt:
            return S.BufferStore(state, value, (index, E.const(field)), span=s.span)

        if s.op == "arrive":
            arrived = store(PENDING, E.sub(at(PENDING), len(self.threads)))
            complete = S.seq(store(PHASE, E.sub(1, at(PHASE))), store(PENDING, E.add(at(PENDING), at(COUNT))))
            # more arrivals than the count complete the next phases too
            return S.seq(arrived, S.While(E.compare(E.LE, at(PENDING), 0), complete, span=s.span))
        if s.op == "wait":
            parity = E.floormod(E.cast(self.mutate(s.value), dt.int32), 2)
            message = (
                f"the wait on mbarrier {s.barriers.name} is for a phase no arrival has completed yet: threads "
                "running at once on a GPU would complete it later, but the CPU target runs thread groups one "
                "after the other in program order (put the code that arrives before the code that waits)"
            )
            return S.IfThenElse(
                E.compare(E.EQ, at(PHASE), parity), CheckFailed(message, span=s.span), span=s.span
            )
        return S.SeqStmt(())  # expect_tx: copies are complete when issued


@module_pass("emulate-mbarriers")
def emulate_mbarriers(mod: IRModule, ctx) -> IRModule:
    """mbarriers are per-block counters; a wait that program order cannot satisfy raises when the call ends."""
    mutator = _Mbarriers()
    return mod.with_functions(f.with_body(mutator.mutate(f.body)) for f in mod.functions)
