"""Offline images: scikit-learn's bundled 8x8 digits, split once into the prior's training set and held-out tests."""

from __future__ import annotations

import numpy as np

N_HELD_OUT = 297  # the last 297 of 1797 images never reach the prior (1500 train it)


def digits(split: str = "train") -> np.ndarray:
    """Digits as float32 images [n, 1, 8, 8] in [-1, 1] (background -1); ``split`` is "train" or "test"."""
    from sklearn.datasets import load_digits

    images = load_digits().images.astype(np.float32) / 16.0 * 2.0 - 1.0
    images = images[:, None]
    if split == "train":
        return images[:-N_HELD_OUT]
    if split == "test":
        return images[-N_HELD_OUT:]
    raise ValueError(f"split must be 'train' or 'test', got {split!r}")


def digit_labels(split: str = "train") -> np.ndarray:
    from sklearn.datasets import load_digits

    y = load_digits().target
    return y[:-N_HELD_OUT] if split == "train" else y[-N_HELD_OUT:]
