"""Statistics: hypothesis tests, conformal bands, spectral representations, subspace screening.

One subpackage per paper; see ``icml26.registry`` for the list."""
