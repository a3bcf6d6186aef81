"""LLM serving and systems: batching, configuration selection, fatigue indices.

One subpackage per paper; see ``icml26.registry`` for the list."""
