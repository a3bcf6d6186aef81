"""Invertible transforms applied online to a layer's input before the MX quantiser, folded into its weight.

Every transform is T(x) = x A + b with A block-diagonal (blocks of ``block_size`` along the feature dimension,
aligned with the MX blocks) or full (``block_size=None``: one d x d block). Blocks are applied with a batched
einsum (32 multiply-adds per element for 32-blocks), never as a dense ``block_diag``; inverses are taken block by
block in fp32. The consumer weight W (out x d) becomes W A^{-T}, so (x A) (W A^{-T})^T = x W^T.

- :class:`HadamardTransform`: A = D H / sqrt(k) (H a Hadamard matrix, D random signs when ``randomized``), b = 0;
  QuaRot-like with ``block_size=None``, the MXFP4 block Hadamard of MR-GPTQ / "block rotation" with 32.
- :class:`CayleyOrthogonal`: A = B (I - S)(I + S)^{-1} with S skew-symmetric and learned (SpinQuant-like),
  B the Hadamard (or identity) start; b = 0.
- :class:`InvertibleAffine`: A = B + Delta with Delta learned and b = scale * beta learned (LATMiX).
"""

from __future__ import annotations

import torch
from torch import nn

from icml26.quant.latmix.hadamard import hadamard_factors, hadamard_matrix

__all__ = ["CayleyOrthogonal", "HadamardTransform", "InvertibleAffine", "SiteTransform", "check_dim"]

INITS = ("hadamard", "identity")


def check_dim(dim: int, block_size: int | None) -> int:
    """The block order k (block_size, or dim for a full transform) after one clear check of the sizes."""
    if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
        raise ValueError(f"dim must be a positive integer, got {dim!r}")
    if block_size is None:
        return dim
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
        raise ValueError(f"block_size must be a positive integer or None (a full transform), got {block_size!r}")
    if dim % block_size:
        raise ValueError(
            f"the hidden size {dim} is not divisible by the block size {block_size}: a block transform must tile "
            "the MX blocks exactly (use block_size=None for a full transform, or skip the layer)"
        )
    return block_size


def _start(kind: str, k: int) -> torch.Tensor:
    if kind not in INITS:
        raise ValueError(f"init must be one of {INITS}, got {kind!r}")
    return hadamard_matrix(k) if kind == "hadamard" else torch.eye(k)


class SiteTransform(nn.Module):
    """Base class: T(x) = x A + b from the blocks of A (``blocks()``, shape (n_blocks, k, k)) and the shift b.

    Subclasses define :meth:`blocks`, optionally :meth:`inverse_blocks` (orthogonal ones transpose) and
    :meth:`shift`. ``forward`` maps (..., d) -> (..., d); ``inverse`` undoes it; ``fold(W)`` returns W A^{-T}.
    """

    def __init__(self, dim: int, block_size: int | None) -> None:
        super().__init__()
        self.k = check_dim(dim, block_size)
        self.dim, self.block_size, self.n_blocks = dim, block_size, dim // self.k

    def blocks(self) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def inverse_blocks(self) -> torch.Tensor:
        """Block inverses in fp32 (``torch.linalg.inv``); a singular block raises one clear error."""
        inv, info = torch.linalg.inv_ex(self.blocks().float())
        if bool((info != 0).any()):
            bad = torch.nonzero(info).flatten().tolist()
            raise ValueError(f"the transform is singular (blocks {bad[:5]} of {self.n_blocks} cannot be inverted)")
        return inv

    def shift(self) -> torch.Tensor | None:
        return None

    def _apply(self, x: torch.Tensor, blocks: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] != self.dim:
            raise ValueError(f"expected inputs with last dimension {self.dim}, got shape {tuple(x.shape)}")
        xb = x.reshape(*x.shape[:-1], self.n_blocks, self.k)
        return torch.einsum("...ni,nij->...nj", xb, blocks).reshape(x.shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self._apply(x, self.blocks())
        b = self.shift()
        return y if b is None else y + b

    def inverse(self, y: torch.Tensor) -> torch.Tensor:
        b = self.shift()
        return self._apply(y if b is None else y - b, self.inverse_blocks())

    def fold(self, weight: torch.Tensor) -> torch.Tensor:
        """W A^{-T} for a consumer weight W of shape (out, d): blockwise W_n A_n^{-T}."""
        if weight.ndim != 2 or weight.shape[1] != self.dim:
            raise ValueError(f"expected a weight of shape (out, {self.dim}), got {tuple(weight.shape)}")
        wb = weight.reshape(weight.shape[0], self.n_blocks, self.k)
        return torch.einsum("oni,nji->onj", wb, self.inverse_blocks()).reshape(weight.shape)

    def matrix(self) -> torch.Tensor:
        """A as a dense d x d matrix (for tests and inspection; the forward never forms it)."""
        return torch.block_diag(*self.blocks().detach())

    def inverse_matrix(self) -> torch.Tensor:
        return torch.block_diag(*self.inverse_blocks().detach())

    def inverse_norms(self) -> torch.Tensor:
        """||A_n^{-1}||_2 of every block (float64), what the error bound multiplies by."""
        return torch.linalg.matrix_norm(self.inverse_blocks().detach().double(), ord=2)

    def cond(self) -> float:
        """The 2-norm condition number of A: the largest over its blocks (sigma_max / sigma_min, in fp64)."""
        s = torch.linalg.svdvals(self.blocks().detach().double())
        smin = s[:, -1].clamp_min(0.0)
        return float("inf") if bool((smin == 0).any()) else float((s[:, 0] / smin).max())

    def extra_repr(self) -> str:
        return f"dim={self.dim}, block_size={self.block_size}"


class HadamardTransform(SiteTransform):
    """A fixed orthogonal (randomised) Hadamard transform: A_n = D_n H / sqrt(k), b = 0.

    ``block_size=None`` is QuaRot-like (one d x d Hadamard; d needs a construction in :mod:`.hadamard`),
    ``block_size=32`` the block Hadamard matched to MX blocks. ``randomized`` multiplies rows by random signs
    drawn from ``seed`` (a different sign pattern per block).
    """

    def __init__(self, dim: int, block_size: int | None = None, randomized: bool = True, seed: int = 0) -> None:
        super().__init__(dim, block_size)
        if randomized:
            g = torch.Generator().manual_seed(seed)
            signs = torch.randint(0, 2, (self.n_blocks, self.k), generator=g).float() * 2 - 1
        else:
            signs = torch.ones(self.n_blocks, self.k)
        self.register_buffer("signs", signs)
        core, syl = hadamard_factors(self.k)
        self.register_buffer("core", core)
        self.register_buffer("syl", syl)
        self.randomized = randomized

    def blocks(self) -> torch.Tensor:
        """Dense blocks D_n H (for inspection, the bound and tests; the forward uses the factors)."""
        return self.signs[..., None] * hadamard_matrix(self.k).to(self.signs.device)

    def inverse_blocks(self) -> torch.Tensor:
        return self.blocks().transpose(-1, -2)

    def inverse_norms(self) -> torch.Tensor:
        return torch.ones(self.n_blocks, dtype=torch.float64)

    def _rotate(self, x: torch.Tensor) -> torch.Tensor:
        """(x * signs) H per block through H = kron(C, S): m + p multiply-adds per element."""
        m, p = self.core.shape[0], self.syl.shape[0]
        xb = (x.reshape(*x.shape[:-1], self.n_blocks, self.k) * self.signs).reshape(*x.shape[:-1], self.n_blocks, m, p)
        return torch.einsum("...nab,ac,bd->...ncd", xb, self.core, self.syl).reshape(x.shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] != self.dim:
            raise ValueError(f"expected inputs with last dimension {self.dim}, got shape {tuple(x.shape)}")
        return self._rotate(x)

    def inverse(self, y: torch.Tensor) -> torch.Tensor:
        m, p = self.core.shape[0], self.syl.shape[0]
        yb = y.reshape(*y.shape[:-1], self.n_blocks, m, p)
        back = torch.einsum("...ncd,ac,bd->...nab", yb, self.core, self.syl).reshape(
            *y.shape[:-1], self.n_blocks, self.k
        )
        return (back * self.signs).reshape(y.shape)

    def fold(self, weight: torch.Tensor) -> torch.Tensor:
        """W A^{-T} = W A for an orthogonal A: the rows of W transformed like activations."""
        if weight.ndim != 2 or weight.shape[1] != self.dim:
            raise ValueError(f"expected a weight of shape (out, {self.dim}), got {tuple(weight.shape)}")
        return self._rotate(weight)

    def cond(self) -> float:
        """1: a normalised Hadamard with sign flips is orthogonal by construction (the tests check H H^T = I)."""
        return 1.0


class CayleyOrthogonal(SiteTransform):
    """A learned orthogonal transform (SpinQuant-like): A_n = B_n (I - S_n)(I + S_n)^{-1}, S_n = U_n - U_n^T.

    U starts at 0, so A starts at B (the normalised Hadamard, or the identity). The Cayley map keeps A exactly
    orthogonal for every U (its inverse is its transpose), and gradient steps on U are ordinary Adam steps.
    """

    def __init__(self, dim: int, block_size: int | None = 32, init: str = "hadamard") -> None:
        super().__init__(dim, block_size)
        self.register_buffer("base", _start(init, self.k).expand(self.n_blocks, self.k, self.k).clone())
        self.u = nn.Parameter(torch.zeros(self.n_blocks, self.k, self.k))

    def blocks(self) -> torch.Tensor:
        s = self.u - self.u.transpose(-1, -2)
        eye = torch.eye(self.k, dtype=s.dtype, device=s.device)
        cayley = torch.linalg.solve(eye + s, eye - s, left=False)  # (I - S)(I + S)^{-1}; I + S is never singular
        return self.base @ cayley

    def inverse_blocks(self) -> torch.Tensor:
        return self.blocks().transpose(-1, -2)

    def inverse_norms(self) -> torch.Tensor:
        return torch.ones(self.n_blocks, dtype=torch.float64)  # orthogonal (to float rounding)


class InvertibleAffine(SiteTransform):
    """LATMiX's learnable invertible affine map T(x) = x A + b.

    A = B + Delta, with B the normalised Hadamard (``init="hadamard"``, the default) or the identity and Delta a
    learned (n_blocks, k, k) tensor starting at 0; ``block_size=32`` (default) makes A block-diagonal over the MX
    blocks, ``None`` a full d x d matrix. b = ``bias_scale`` * beta with beta learned (``learn_bias=True``);
    ``bias_scale`` (a buffer, 1 by default) puts b on the scale of the activations so that one learning rate
    serves A and b. Inverses are fp32 block inverses; :meth:`cond` reports the conditioning the bound depends on.
    """

    def __init__(self, dim: int, block_size: int | None = 32, init: str = "hadamard", learn_bias: bool = True) -> None:
        super().__init__(dim, block_size)
        self.register_buffer("base", _start(init, self.k).expand(self.n_blocks, self.k, self.k).clone())
        self.delta = nn.Parameter(torch.zeros(self.n_blocks, self.k, self.k))
        self.learn_bias = learn_bias
        self.beta = nn.Parameter(torch.zeros(dim)) if learn_bias else None
        self.register_buffer("bias_scale", torch.ones(()))

    def blocks(self) -> torch.Tensor:
        return self.base + self.delta

    def shift(self) -> torch.Tensor | None:
        return None if self.beta is None else self.bias_scale * self.beta

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, learn_bias={self.learn_bias}"
