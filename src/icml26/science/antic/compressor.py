"""ANTIC: streaming temporal selection + neural-field compression with continual LoRA updates, and the stored
trajectory with byte-exact accounting."""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field

import numpy as np
import torch

from icml26.science.antic.field import LoRALinear, NeuralField, fit, grid_coordinates
from icml26.science.antic.selector import EnstrophySelector, TemporalSelector

__all__ = ["ANTIC", "CompressedTrajectory", "FixedSelector", "interpolate_frames"]

LORA_TARGETS = ("hidden", "input_hidden")
_MAGIC = b"ANTIC1"


class FixedSelector(TemporalSelector):
    """Keep a given set of frame indices (the uniform arm at an equal frame count, or a replay of another arm's)."""

    def __init__(self, indices: np.ndarray | list[int]) -> None:
        super().__init__()
        self.indices = {int(i) for i in indices}
        if not self.indices or min(self.indices) < 0:
            raise ValueError("FixedSelector needs non-negative frame indices")

    def _first(self, field: np.ndarray) -> bool:
        return True

    def _decide(self, field: np.ndarray) -> bool:
        return self.count in self.indices


def interpolate_frames(indices: np.ndarray, frames: np.ndarray, n_frames: int) -> np.ndarray:
    """Linear interpolation in time from the kept frames (sorted ``indices``, first = 0, last = n_frames - 1) to all
    ``n_frames`` frames; kept frames come back unchanged."""
    idx = np.asarray(indices, int)
    frames = np.asarray(frames, np.float32)
    if idx[0] != 0 or idx[-1] != n_frames - 1 or np.any(np.diff(idx) <= 0):
        raise ValueError("kept indices must be increasing and include the first and last frame")
    t = np.arange(n_frames)
    right = np.clip(np.searchsorted(idx, t, side="left"), 1, len(idx) - 1)
    left = right - 1
    w = ((t - idx[left]) / (idx[right] - idx[left])).astype(np.float32)[:, None, None]
    return (1 - w) * frames[left] + w * frames[right]


def _check_frame(frame: np.ndarray, shape: tuple[int, ...] | None) -> np.ndarray:
    arr = np.asarray(frame, np.float32)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise ValueError(f"ANTIC compresses square 2-D snapshots; got shape {arr.shape}")
    if shape is not None and arr.shape != shape:
        raise ValueError(f"snapshot shape {arr.shape} differs from the stream's {shape}")
    if not np.isfinite(arr).all():
        raise ValueError("the snapshot contains NaN or infinite values")
    return arr


@dataclass
class CompressedTrajectory:
    """Everything ANTIC stores. ``nbytes`` is the length of ``to_bytes()``: header (JSON: grid, frame count, times,
    field architecture), Fourier frequencies (int8), kept indices (int32), each kept frame's keyframe id (int32) and
    min-max range (float32 x 2), keyframe weights (float32) and LoRA A/B (float32)."""

    n: int
    n_frames: int
    t0: float
    frame_dt: float
    config: dict
    frequencies: np.ndarray
    indices: np.ndarray
    keyframe_of: np.ndarray
    ranges: np.ndarray
    keyframes: list[np.ndarray]
    loras: list[np.ndarray] = field(default_factory=list)

    # --------------------------------------------------------------- storage
    def _arrays(self) -> list[np.ndarray]:
        return [
            self.frequencies.astype(np.int8),
            self.indices.astype(np.int32),
            self.keyframe_of.astype(np.int32),
            self.ranges.astype(np.float32),
            *[k.astype(np.float32) for k in self.keyframes],
            *[a.astype(np.float32) for a in self.loras],
        ]

    def to_bytes(self) -> bytes:
        arrays = self._arrays()
        header = {
            "n": self.n,
            "n_frames": self.n_frames,
            "t0": self.t0,
            "frame_dt": self.frame_dt,
            "config": self.config,
            "sizes": [int(a.size) for a in arrays],
            "n_keyframes": len(self.keyframes),
        }
        head = json.dumps(header, separators=(",", ":")).encode()
        return _MAGIC + struct.pack("<I", len(head)) + head + b"".join(a.tobytes() for a in arrays)

    @classmethod
    def from_bytes(cls, data: bytes) -> CompressedTrajectory:
        if not data.startswith(_MAGIC):
            raise ValueError("not an ANTIC stream")
        (hlen,) = struct.unpack("<I", data[6:10])
        h = json.loads(data[10 : 10 + hlen])
        pos, arrays = 10 + hlen, []
        dtypes = [np.int8, np.int32, np.int32, np.float32] + [np.float32] * (len(h["sizes"]) - 4)
        for size, dt in zip(h["sizes"], dtypes, strict=True):
            nb = size * np.dtype(dt).itemsize
            arrays.append(np.frombuffer(data[pos : pos + nb], dt).copy())
            pos += nb
        nk = h["n_keyframes"]
        return cls(
            n=h["n"],
            n_frames=h["n_frames"],
            t0=h["t0"],
            frame_dt=h["frame_dt"],
            config=h["config"],
            frequencies=arrays[0].reshape(-1, 2),
            indices=arrays[1],
            keyframe_of=arrays[2],
            ranges=arrays[3].reshape(-1, 2),
            keyframes=arrays[4 : 4 + nk],
            loras=arrays[4 + nk :],
        )

    @property
    def nbytes(self) -> int:
        return len(self.to_bytes())

    def compression_ratio(self, raw_shape: tuple[int, ...] | None = None) -> float:
        """Raw float32 bytes of ALL frames (selected or not) over stored bytes."""
        shape = raw_shape or (self.n_frames, self.n, self.n)
        return float(np.prod(shape) * 4 / self.nbytes)

    # --------------------------------------------------------------- decoding
    def _model(self) -> NeuralField:
        cfg = self.config
        model = NeuralField(**cfg["field"])
        model.features.B.copy_(torch.as_tensor(self.frequencies.astype(np.float32)))
        if cfg["continual"]:
            model.add_lora(cfg["lora_rank"])
            if cfg["lora_targets"] == "input_hidden":
                model.net[0] = LoRALinear(model.net[0], cfg["lora_rank"])
        return model

    @torch.no_grad()
    def decode_selected(self) -> np.ndarray:
        """The kept frames, (k, n, n) float32: keyframe weights + that frame's LoRA, de-normalised."""
        model = self._model()
        feats = model.features(grid_coordinates(self.n))
        out = np.empty((len(self.indices), self.n, self.n), np.float32)
        lora_params = model.lora_parameters()
        for j in range(len(self.indices)):
            model.set_flat(model.base_parameters(), self.keyframes[self.keyframe_of[j]])
            if lora_params and self.loras[j].size:
                model.set_flat(lora_params, self.loras[j])
            elif lora_params:  # a keyframe: B = 0
                for m in model.lora_layers():
                    m.B.zero_()
            y = model.net(feats).squeeze(-1).numpy().reshape(self.n, self.n)
            lo, hi = self.ranges[j]
            out[j] = (y + 1) / 2 * (hi - lo) + lo
        return out

    def decompress(self, interp: str = "linear") -> np.ndarray:
        """All ``n_frames`` frames: the kept ones decoded, the dropped ones linearly interpolated in time."""
        if interp != "linear":
            raise ValueError(f"only interp='linear' is implemented, got {interp!r}")
        return interpolate_frames(self.indices, self.decode_selected(), self.n_frames)


class ANTIC:
    """Adaptive Neural Temporal In situ Compressor (streaming).

    ``observe(t, field)`` is called once per solver output; the selector decides whether the frame is kept; a kept
    frame is min-max normalised to [-1, 1] and encoded by the neural field: the first (and every
    ``keyframe_every``-th kept frame after a keyframe) trains every weight for ``steps_first`` steps (warm-started from
    the merged previous state) and is stored as a keyframe; the others train only LoRA A, B (rank ``lora_rank``) for
    ``steps_next`` steps, continuing from the previous frame's A, B, and store A, B. ``finalize()`` also keeps the
    stream's last frame (so dropped frames are always between two kept ones) and returns the stored trajectory.

    ``continual=False`` is the per-frame baseline: every kept frame is a fresh field trained from scratch with the
    same step schedule (``steps_first`` where ANTIC would train a keyframe, ``steps_next`` elsewhere) and stored whole.
    ``lora_targets="hidden"`` is the paper's rule (LoRA on hidden layers only); ``"input_hidden"`` (ours) adds the
    first layer, where a translation of the field acts linearly on the Fourier features.
    """

    def __init__(
        self,
        selector: TemporalSelector | None = None,
        *,
        field_config: dict | None = None,
        lora_rank: int = 4,
        lora_targets: str = "hidden",
        keyframe_every: int = 20,
        steps_first: int = 300,
        steps_next: int = 60,
        lr_first: float = 1e-2,
        lr_next: float = 1e-2,
        continual: bool = True,
        seed: int = 0,
    ) -> None:
        if lora_targets not in LORA_TARGETS:
            raise ValueError(f"lora_targets must be one of {LORA_TARGETS}, got {lora_targets!r}")
        if int(lora_rank) < 1 or int(keyframe_every) < 1 or int(steps_first) < 0 or int(steps_next) < 0:
            raise ValueError("lora_rank and keyframe_every must be >= 1, steps_first/steps_next >= 0")
        self.selector = selector if selector is not None else EnstrophySelector()
        self.field_config = {"n_frequencies": 32, "hidden": 48, "depth": 3, "scale": 7.0} | dict(field_config or {})
        self.field_config["seed"] = int(seed)
        self.lora_rank, self.lora_targets = int(lora_rank), lora_targets
        self.keyframe_every, self.continual = int(keyframe_every), bool(continual)
        self.steps_first, self.steps_next, self.lr_first, self.lr_next = steps_first, steps_next, lr_first, lr_next
        self._shape: tuple[int, ...] | None = None
        self._times: list[float] = []
        self._pending: dict[int, np.ndarray] = {}
        self._kept: list[int] = []
        self._ranges: list[tuple[float, float]] = []
        self._keyframes: list[np.ndarray] = []
        self._keyframe_of: list[int] = []
        self._loras: list[np.ndarray] = []
        self._since_keyframe = 0
        self._model: NeuralField | None = None
        self.optimizer_steps = 0

    # --------------------------------------------------------------- streaming
    def observe(self, t: float, field: np.ndarray) -> bool:
        """Feed one snapshot (square 2-D, finite; equal time spacing); returns whether it was kept."""
        frame = _check_frame(field, self._shape)
        if self._shape is None:
            self._shape = frame.shape
            self._feats = NeuralField(**self.field_config).features(grid_coordinates(frame.shape[0]))
        if len(self._times) >= 2:
            step = self._times[1] - self._times[0]
            if abs((t - self._times[-1]) - step) > 1e-6 * max(abs(step), 1.0):
                raise ValueError("snapshots must be equally spaced in time (the stream stores t0 and dt only)")
        self._times.append(float(t))
        index = len(self._times) - 1
        self._pending[index] = frame  # frames a lagging selector may still keep
        kept = self.selector.update(frame)
        for i in kept:
            self._encode(i, self._pending[i])
        last = max(kept) if kept else None
        for i in [i for i in self._pending if (last is not None and i <= last) or i < index - self.selector.lag]:
            del self._pending[i]
        return index in kept

    def _encode(self, index: int, frame: np.ndarray) -> None:
        lo, hi = float(frame.min()), float(frame.max())
        hi = hi if hi > lo else lo + 1.0
        target = torch.as_tensor(2 * (frame - lo) / (hi - lo) - 1).reshape(-1)
        first = self._model is None
        keyframe = first or self._since_keyframe >= self.keyframe_every
        if not self.continual:
            self._model = NeuralField(**self.field_config)
            steps = self.steps_first if keyframe else self.steps_next
            fit(self._model, self._feats, target, list(self._model.parameters()), steps, self.lr_first)
            self._keyframes.append(self._model.get_flat(self._model.base_parameters()))
            self._keyframe_of.append(len(self._keyframes) - 1)
            self._loras.append(np.zeros(0, np.float32))
            self.optimizer_steps += steps
            self._since_keyframe = 0 if keyframe else self._since_keyframe + 1
        elif keyframe:
            if first:
                self._model = NeuralField(**self.field_config)
            else:
                self._model.merge_lora()
            assert self._model is not None
            base = self._model.base_parameters()
            fit(self._model, self._feats, target, base, self.steps_first, self.lr_first)
            self._keyframes.append(self._model.get_flat(base))
            self._keyframe_of.append(len(self._keyframes) - 1)
            self._add_lora()  # fresh A (he-uniform), B = 0: nothing to store for the keyframe itself
            self._loras.append(np.zeros(0, np.float32))
            self._since_keyframe = 0
            self.optimizer_steps += self.steps_first
        else:
            assert self._model is not None
            lora = self._model.lora_parameters()
            fit(self._model, self._feats, target, lora, self.steps_next, self.lr_next)
            self._keyframe_of.append(len(self._keyframes) - 1)
            self._loras.append(self._model.get_flat(lora))
            self._since_keyframe += 1
            self.optimizer_steps += self.steps_next
        self._kept.append(index)
        self._ranges.append((lo, hi))

    def _add_lora(self) -> None:
        assert self._model is not None
        self._model.add_lora(self.lora_rank, seed=self.field_config["seed"])
        if self.lora_targets == "input_hidden" and not isinstance(self._model.net[0], LoRALinear):
            self._model.net[0] = LoRALinear(self._model.net[0], self.lora_rank, seed=self.field_config["seed"] + 7)

    def finalize(self) -> CompressedTrajectory:
        """Keep the stream's last frame if it was dropped, and return the stored trajectory."""
        if self._shape is None:
            raise ValueError("no snapshot was observed")
        last = len(self._times) - 1
        if self._kept[-1] != last:
            self._encode(last, self._pending[last])
        self._pending.clear()
        assert self._model is not None
        step = self._times[1] - self._times[0] if len(self._times) > 1 else 0.0
        return CompressedTrajectory(
            n=self._shape[0],
            n_frames=len(self._times),
            t0=self._times[0],
            frame_dt=step,
            config={
                "field": dict(self.field_config),
                "continual": self.continual,
                "lora_rank": self.lora_rank,
                "lora_targets": self.lora_targets,
            },
            frequencies=self._model.features.B.numpy().astype(np.int8),
            indices=np.asarray(self._kept, np.int32),
            keyframe_of=np.asarray(self._keyframe_of, np.int32),
            ranges=np.asarray(self._ranges, np.float32),
            keyframes=list(self._keyframes),
            loras=list(self._loras),
        )

    def compress(self, frames: np.ndarray, t0: float = 0.0, frame_dt: float = 1.0) -> CompressedTrajectory:
        """Convenience: stream a (T, n, n) array through ``observe`` and ``finalize``."""
        frames = np.asarray(frames)
        if frames.ndim != 3 or len(frames) == 0:
            raise ValueError(f"expected a non-empty (T, n, n) array of snapshots, got shape {frames.shape}")
        for i, f in enumerate(frames):
            self.observe(t0 + i * frame_dt, f)
        return self.finalize()
