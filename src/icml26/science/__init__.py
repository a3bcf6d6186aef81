"""Scientific machine learning.

One subpackage per paper; see ``icml26.registry`` for the list."""
