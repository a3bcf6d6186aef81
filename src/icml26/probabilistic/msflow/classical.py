"""Classical reconstructions without a learned prior (the trivial baselines): biharmonic inpainting, bicubic
upsampling and filtered back-projection, all from scikit-image."""

from __future__ import annotations

import numpy as np
import torch

from icml26.probabilistic.msflow.operators import AvgPoolSR, Inpainting, LinearOperator, RadonCT

__all__ = ["classical_reconstruction"]


def classical_reconstruction(op: LinearOperator, y: torch.Tensor) -> torch.Tensor:
    """The field's prior-free answer for ``op``: ``inpaint_biharmonic`` (mask), bicubic ``resize`` (average
    pooling), ``iradon`` (CT); anything else gets the scaled adjoint A^T y / ||A||^2."""
    from skimage.restoration import inpaint_biharmonic
    from skimage.transform import resize

    if isinstance(op, Inpainting):
        missing = (op.mask[0] == 0).numpy()
        out = [inpaint_biharmonic(img[0], missing) for img in y.detach().double().numpy()]
        return torch.as_tensor(np.stack(out)[:, None], dtype=torch.float32)
    if isinstance(op, AvgPoolSR):
        h, w = op.image_shape[-2:]
        out = [resize(img[0], (h, w), order=3, mode="edge", anti_aliasing=False) for img in y.detach().double().numpy()]
        return torch.as_tensor(np.stack(out)[:, None], dtype=torch.float32)
    if isinstance(op, RadonCT):
        return op.fbp(y)
    return op.A_adjoint(y) / op.norm_sq
