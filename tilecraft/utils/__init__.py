"""TileLang's `tilelang.utils` paths that its programs import (`tilelang.utils.tensor`)."""
