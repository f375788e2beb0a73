"""The `cutedsl` execution backend: Build compiles a CuTe DSL module with the DSL's JIT (or keeps the cubin
codegen compiled), through the content-addressed cache; Load and Launch are the shared CUDA driver's."""
