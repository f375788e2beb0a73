"""CUDA's instruction facts: the register layouts mma.sync and wgmma impose (`mma_layouts`), and what the
shared SIMT passes ask of a warp: its width, the block limit, the vector width and the shuffle (`simt`)."""
