"""The CUDA driver runtime that the `nvrtc` and `nvcc` execution backends share; they differ only in how
Build makes the cubin (tilecraft/execution/nvrtc, tilecraft/execution/nvcc), and neither imports the
other.

    driver.py      the CUDA driver API through ctypes (and cuda-python's cuLaunchKernel when present)
    runtime.py     CudaRuntimeBackend: Load and Launch of a cubin, the base class of both backends
    launch.py      the generated launcher: parameter packing, grids, streams
    tensor_map.py  TMA tensor maps, encoded per argument and cached
    interop.py     GPU arrays: readers, device checks, outputs, host <-> device copies
    timing.py      the profiler's timer: CUDA events through torch, else the driver
    probe.py       whether a driver and a device are there (part of both availability probes)
    toolkit.py     where the CUDA toolkit is: nvcc, and the headers NVRTC needs from it
    sources.py     where a failed compile leaves its source

Importing this package imports nothing else; each module loads on first use.
"""

DLPACK_CUDA = 2
"""kDLCUDA: GPU memory."""
DLPACK_CUDA_MANAGED = 13
"""kDLCUDAManaged: unified memory, which kernels read as GPU memory."""
DEVICE_TYPES = (DLPACK_CUDA, DLPACK_CUDA_MANAGED)
"""The DLPack device types of the arrays the launcher reads (both specs' `device_types`)."""
