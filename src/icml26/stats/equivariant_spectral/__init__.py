"""Equivariant spectral representation learning (placeholder docstring)."""
