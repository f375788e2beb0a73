"""Layouts of shared buffers and fragments (see docs/layouts.md)."""

from tilecraft.layout.layout import Fragment, Layout

__all__ = ["Fragment", "Layout"]
