"""Backend-neutral passes: the frontend boundary check and shared building blocks."""
