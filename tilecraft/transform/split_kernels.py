"""Split a function into a host function and one device function per `T.Kernel` launch.

After it runs, each KernelLaunch is a device PrimFunc (role "device") whose body is that launch and
whose params are the buffers, scalars and symbolic dims it uses; the host PrimFunc (role "host") keeps
the original params and calls the kernels in order with `KernelCall`. `split_host_device_pass` is the
pass every pipeline runs for it (`split-host-device`).
"""

from __future__ import annotations

from tilecraft.backend.pipeline import module_pass
from tilecraft.backend.split import ROLE_ATTR as ROLE
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.expr import Var
from tilecraft.ir.function import IRModule, PrimFunc
from tilecraft.ir.host import KernelCall
from tilecraft.ir.visitor import BufferKeepingMutator, free_vars, walk
from tilecraft.language.extern import IMPORT_SOURCE_ATTR


def device_params(func: PrimFunc, launch: S.KernelLaunch) -> tuple[Buffer | Var, ...]:
    """The function params and symbolic dims `launch` uses, in a stable ABI order."""
    seen = [n for n in walk(launch) if isinstance(n, Buffer)]
    # a view a statement kept (a tensor-map copy's) uses its base's memory and its own dims
    views = [b for b in seen if b.base is not None]
    used_buffers = {id(b) for b in seen} | {id(b.base) for b in views}
    buffers = [p for p in func.buffer_params if id(p) in used_buffers]
    used_vars = {id(v) for v in free_vars(launch.body)}
    # a tensor made from an address (T.make_tensor) passes what its address and dims are computed from
    made = [b for b in seen if b.address is not None]
    for b in (*buffers, *views, *made):
        used_vars |= {id(v) for v in free_vars((b.shape, b.strides, b.address))}
    scalars = [p for p in func.params if isinstance(p, Var) and id(p) in used_vars]
    dims = [v for v in func.symbolic_dims if id(v) in used_vars]
    return (*buffers, *scalars, *dims)


class _Extract(BufferKeepingMutator):
    def __init__(self, func: PrimFunc) -> None:
        super().__init__()
        self.func = func
        self.kernels: list[PrimFunc] = []

    def mutate_KernelLaunch(self, launch: S.KernelLaunch) -> KernelCall:
        symbol = f"{self.func.name}_kernel{len(self.kernels)}"
        params = device_params(self.func, launch)
        attrs = ((ROLE, "device"), ("tilecraft.host_function", self.func.name))
        imported = self.func.attr(IMPORT_SOURCE_ATTR)
        if imported:  # T.import_source: the device translation unit holds it
            attrs += ((IMPORT_SOURCE_ATTR, imported),)
        self.kernels.append(PrimFunc(symbol, params, launch, attrs, span=launch.span))
        return KernelCall(symbol, params, launch.grid, launch.threads, span=launch.span)


def split_kernels(mod: IRModule) -> IRModule:
    """Every function becomes a host function plus its device kernels."""
    out: list[PrimFunc] = []
    for func in mod.functions:
        extract = _Extract(func)
        body = extract.mutate(func.body)
        out.append(func.with_body(body).with_attr(ROLE, "host"))
        out.extend(extract.kernels)
    return mod.with_functions(out)


@module_pass("split-host-device")
def split_host_device_pass(mod: IRModule, ctx) -> IRModule:
    """Each T.Kernel is a device function; the host function launches them in order."""
    return split_kernels(mod)
