"""Probabilistic inference: variational, Langevin, flow-based and simulation-based methods.

One subpackage per paper; see ``icml26.registry`` for the list."""
