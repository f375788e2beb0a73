"""The CuTe DSL variant of the cuda target: the same tile programs, emitted as Python for NVIDIA's CuTe
DSL (package nvidia-cutlass-dsl, `pip install 'tilecraft[cutedsl]'`) and compiled by its JIT to a cubin.

Started with `tilecraft backend new cutedsl --from cuda` and moved in tree. Import order, as in
tilecraft's own backends: target, language, ops, then the manifest (which imports pipeline and codegen).
"""

import tilecraft.backend.shared_compiler  # noqa: F401 - first: the shared compiler loads in one thread at a time

# isort: off
from tilecraft.cutedsl import target  # noqa: F401  (registers the variant spelling)
from tilecraft.cutedsl import language  # noqa: F401
from tilecraft.cutedsl import op  # noqa: F401
from tilecraft.cutedsl import backend  # noqa: F401  (registers the manifest)
# isort: on
