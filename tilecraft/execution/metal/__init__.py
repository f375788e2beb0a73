"""The `metal` execution backend: MSL built and run on the default Metal device through PyObjC (macOS)."""
