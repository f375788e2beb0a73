"""The `hip` execution backend: code objects (hsaco) compiled by the HIP target's clang step, loaded and
launched through the HIP runtime (`libamdhip64`) with ctypes.

    runtime.py   the HIP runtime API through ctypes (modules, functions, launches, streams)
    backend.py   HipExecutionBackend: Build (the artifact's code object), Load, Launch
    spec.py      the spec: available where libamdhip64 loads and reports a device

Importing this package imports nothing else; each module loads on first use.
"""

DLPACK_ROCM = 10
"""kDLROCM: AMD GPU memory (what torch's ROCm tensors report through __dlpack_device__)."""
DEVICE_TYPES = (DLPACK_ROCM,)
