"""Quantisation: block-scaled low-precision formats and transforms (torchao-style configs).

One subpackage per paper; see ``icml26.registry`` for the list."""
