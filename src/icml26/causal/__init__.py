"""Causal discovery with interventions (causal-learn compatible graphs).

One subpackage per paper; see ``icml26.registry`` for the list."""
