"""GPU arrays for the CUDA execution backends: reading CuPy-style arrays, checking devices, allocating
outputs, and copying between host and device through torch (preferred) or CuPy.

Nothing here imports torch or CuPy until an array of theirs is in hand (or a copy is asked for).
"""

from __future__ import annotations

from typing import Any

from tilecraft._modules import optional
from tilecraft.errors import ArgumentError, ToolchainError
from tilecraft.execution.cuda_driver import DLPACK_CUDA
from tilecraft.ir.dtype import DataType, torch_bit_view
from tilecraft.runtime.arrays import ArrayArg, from_array_interface
from tilecraft.runtime.devices import DLPACK_HOST

NEED_ARRAY_LIBRARY = (
    "the CUDA execution backends copy arrays to and from the GPU with torch or CuPy; install one "
    "(pip install torch, or pip install cupy-cuda12x)"
)

_reads_interface: dict[type, bool] = {}


def read_cuda_array_interface(x: Any) -> ArrayArg | None:
    """An ArrayArg for objects exposing `__cuda_array_interface__` (CuPy, Numba), else None.

    Torch tensors and numpy arrays are left to tilecraft's own readers (torch's interface is slow to
    build and lacks bfloat16); that decision is cached per class, so for them a call costs one lookup.
    """
    cls = type(x)
    reads = _reads_interface.get(cls)
    if reads is None:
        reads = not cls.__module__.startswith(("torch", "numpy"))
        _reads_interface[cls] = reads
    if not reads:
        return None
    info = getattr(x, "__cuda_array_interface__", None)
    if info is None:
        return None
    if info.get("mask") is not None:
        raise ArgumentError(f"masked {cls.__name__} arrays are not supported; pass an unmasked array")
    return from_array_interface(x, info, DLPACK_CUDA, _device_of(x, info["data"][0]))


def _device_of(x: Any, ptr: int) -> int:
    device = getattr(getattr(x, "device", None), "id", None)
    if isinstance(device, int):
        return device
    if not ptr:
        return 0
    from tilecraft.execution.cuda_driver.driver import get_driver

    return get_driver().pointer_device(ptr)


def not_on_gpu(arg: ArrayArg, name: str) -> ArgumentError:
    """The error for an array outside GPU memory: where it is, and how to move it."""
    return ArgumentError(
        f"parameter {name!r} is a {arg.library} array in {_where(arg)}, but this kernel runs on a CUDA "
        "GPU; pass GPU memory (torch: tensor.cuda() or tensor.to('cuda:N'); numpy: "
        "torch.from_numpy(array).cuda() or cupy.asarray(array))"
    )


def _where(arg: ArrayArg) -> str:
    if arg.device_type == DLPACK_HOST:
        return "host memory"
    return f"device {arg.device_type}:{arg.device_id}"


def wrong_device_error(args: Any, device: int, names: list[str]) -> ArgumentError:
    """The error for buffers on another GPU than the target's `device`."""
    misplaced = [
        f"{name!r} is on cuda:{arg.device_id}"
        for name, arg in zip(names, args)
        if isinstance(arg, ArrayArg) and arg.device_id != device
    ]
    return ArgumentError(
        f"this kernel was built for CUDA device {device} (target attribute -device={device}), but "
        f"{', '.join(misplaced)}; move the arrays with tensor.to('cuda:{device}'), or compile for their "
        "device with target 'cuda -device=N'"
    )


# ---------------------------------------------------------------------- allocation and copies


def empty_like_library(reference: ArrayArg | None, shape: tuple[int, ...], dtype: DataType) -> Any:
    """An uninitialized GPU array on `reference`'s device, from `reference`'s library (torch or CuPy)."""
    if reference is None:
        raise ArgumentError(
            "cannot allocate the kernel's outputs: no input array says which GPU (and which array "
            "library) to use; pass the outputs as arguments"
        )
    if reference.library == "torch":
        import torch

        return torch.empty(shape, dtype=torch_dtype(torch, dtype), device=reference.obj.device)
    if _is_cupy(reference.obj):
        return _cupy_empty(shape, dtype, reference.device_id)
    if reference.library == "dlpack":  # allocated with torch or CuPy, handed back as the caller's type
        torch = optional("torch")
        if torch is not None:
            return torch.empty(shape, dtype=torch_dtype(torch, dtype), device=f"cuda:{reference.device_id}")
        if optional("cupy") is not None:
            return _cupy_empty(shape, dtype, reference.device_id)
    raise ArgumentError(
        f"cannot allocate the kernel's outputs next to a {type(reference.obj).__name__}: the CUDA execution "
        "backends allocate with torch or CuPy; pass torch tensors or CuPy arrays, or pass the outputs"
        + (" (or install torch or CuPy: a DLPack caller gets its own array type back)"
           if reference.library == "dlpack" else "")
    )


def _is_cupy(obj: Any) -> bool:
    return type(obj).__module__.startswith("cupy")


def _cupy_empty(shape: tuple[int, ...], dtype: DataType, device: int) -> Any:
    import cupy

    with cupy.cuda.Device(device):
        return cupy.empty(shape, dtype=_cupy_dtype(dtype))


def _cupy_dtype(dtype: DataType) -> Any:
    if dtype.kind in ("bfloat", "float8"):
        raise ArgumentError(f"CuPy has no {dtype} arrays; use torch tensors for {dtype} kernels")
    from tilecraft.ir.dtype import numpy_dtype

    return numpy_dtype(dtype)


def torch_dtype(torch: Any, dtype: DataType) -> Any:
    name = dtype.torch_name
    found = getattr(torch, name, None) if name is not None else None
    if found is None:
        missing = name or dtype
        raise ArgumentError(f"this torch has no dtype {missing} (for {dtype}); upgrade torch or use another dtype")
    return found


def to_device(array: Any, device: int | None = None) -> Any:
    """A GPU copy of a numpy array: a torch tensor when torch is importable, else a CuPy array."""
    import numpy as np

    from tilecraft.ir.dtype import as_dtype

    host = np.ascontiguousarray(array)
    dtype = as_dtype(host.dtype)
    torch = optional("torch")
    if torch is not None:
        index = torch.cuda.current_device() if device is None else device
        view = torch_bit_view(dtype)
        tensor = torch.from_numpy(host.view(view) if view else host).to(f"cuda:{index}")
        return tensor.view(torch_dtype(torch, dtype)) if view else tensor
    cupy = optional("cupy")
    if cupy is not None:
        _cupy_dtype(dtype)  # refuses dtypes CuPy lacks
        with cupy.cuda.Device(device or 0):
            return cupy.asarray(host)
    raise ToolchainError(NEED_ARRAY_LIBRARY)


def to_host(array: Any) -> Any:
    """A numpy copy of a GPU array (torch tensor or CuPy array); numpy arrays are returned as they are."""
    import numpy as np

    module = type(array).__module__
    if module.startswith("torch"):
        return _torch_to_numpy(array)
    if module.startswith("cupy"):
        return array.get()
    return np.asarray(array)


def _torch_to_numpy(tensor: Any) -> Any:
    import torch

    from tilecraft.ir.dtype import as_dtype, numpy_dtype

    dtype = as_dtype(tensor.dtype)
    view = torch_bit_view(dtype)
    if view is None:
        return tensor.detach().cpu().numpy()
    bits = tensor.detach().view(getattr(torch, view)).cpu().numpy()
    return bits.view(numpy_dtype(dtype))
