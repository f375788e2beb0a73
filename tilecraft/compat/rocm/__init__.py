"""TileLang's `tilelang.rocm` package: the part its programs use to ask about the AMD GPU they run on
(`tilelang.rocm.target`). TileLang's ROCm dialect and MFMA emitters are not provided."""
