"""tilecraft's own entry points, for a checkout used without `pip install`.

pyproject.toml registers the built-in backends in the entry-point groups every plugin uses
(`tilecraft.backends`, `tilecraft.execution_backends`); the loader (tilecraft/backend/_loader.py) reads
them from the installed metadata. This copy stands in only where there is none: no `tilecraft`
distribution is installed, or it declares nothing in a group (installed before the entry points
existed). tests/backend/test_plugins.py keeps it equal to pyproject.toml.

This is the only module of shared code allowed to name built-in backends (the boundary test in
tests/backend/test_boundaries.py exempts it).
"""

BUILTIN_ENTRY_POINTS: dict[str, tuple[str, ...]] = {
    "tilecraft.backends": (
        "cpu = tilecraft.cpu.backend:CPU_BACKEND",
        "cuda = tilecraft.cuda.backend:CUDA_BACKEND",
        "opencl = tilecraft.opencl.backend:OPENCL_BACKEND",
        "webgpu = tilecraft.webgpu.backend:WEBGPU_BACKEND",
        "metal = tilecraft.metal.backend:METAL_BACKEND",
        "hip = tilecraft.hip.backend:HIP_BACKEND",
        "cutedsl = tilecraft.cutedsl.backend:CUTEDSL_BACKEND",
    ),
    "tilecraft.execution_backends": (
        "cc = tilecraft.execution.cc.spec:CC",
        "nvcc = tilecraft.execution.nvcc.spec:NVCC",
        "nvrtc = tilecraft.execution.nvrtc.spec:NVRTC",
        "opencl = tilecraft.execution.opencl.spec:OPENCL",
        "wgpu = tilecraft.execution.wgpu.spec:WGPU",
        "metal = tilecraft.execution.metal.spec:METAL",
        "hip = tilecraft.execution.hip.spec:HIP",
        "cutedsl = tilecraft.execution.cutedsl.spec:CUTEDSL",
    ),
}
