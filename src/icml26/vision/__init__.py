"""Vision and vision-language evaluation and grounding.

One subpackage per paper; see ``icml26.registry`` for the list."""
