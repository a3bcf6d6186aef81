"""Language-model training and decoding: PEFT/TRL extensions, MoE routing, private decoding.

One subpackage per paper; see ``icml26.registry`` for the list."""
