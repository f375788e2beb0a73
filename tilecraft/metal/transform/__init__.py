"""The Metal backend's own passes."""
