"""The decoded design as a MuJoCo model (MJCF generated from the Morphology) and a gymnasium environment on it.

``mjcf_chain(morph)`` writes a planar chain lying on a frictionless plane (gravity off, joints about z): one
capsule link per joint (mass proportional to length), hinge limits from the design, joint damping 1, one motor per
joint with ``gear = s_j g_j`` and control range [-1, 1]; a site at the tip. MuJoCo integrates the *coupled*
rigid-body dynamics, where the torch task integrates each joint on its own (a simplification; the sign of a
motor's effect and the reachable workspace are the same). ``MorphReachMujocoEnv`` has the torch task's observation
layout and reward, at the same control period (dt 0.01 x frame_skip 5 = 0.05 s).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from icml26.decision.evo_moe.design import DesignError, Morphology
from icml26.decision.evo_moe.sim import EFFORT, OBS_DIM, TARGET_RADIUS

__all__ = ["MorphReachMujocoEnv", "compile_mjcf", "mjcf_chain"]


def _import_mujoco() -> Any:
    try:
        import mujoco
    except ImportError as exc:  # pragma: no cover - the decision extra installs it
        raise ImportError("the MuJoCo model needs mujoco: pip install 'icml26[decision]'") from exc
    return mujoco


def mjcf_chain(morph: Morphology) -> str:
    """The MJCF document (a string) of one decoded design."""
    if not isinstance(morph, Morphology):
        raise DesignError(f"mjcf_chain takes a Morphology (decode a latent first), got {type(morph).__name__}")
    bodies, close = [], []
    for j, (length, limit) in enumerate(zip(morph.lengths, morph.limits, strict=True)):
        pos = "0 0 0" if j == 0 else f"{morph.lengths[j - 1]:.6f} 0 0"
        bodies.append(
            f'<body name="link{j}" pos="{pos}">'
            f'<joint name="j{j}" type="hinge" axis="0 0 1" limited="true" range="{-limit:.6f} {limit:.6f}"/>'
            f'<geom type="capsule" fromto="0 0 0 {length:.6f} 0 0" size="0.04" mass="{length:.6f}"/>'
        )
        close.append("</body>")
    tip = f'<site name="tip" pos="{morph.lengths[-1]:.6f} 0 0" size="0.02"/>'
    motors = "".join(
        f'<motor joint="j{j}" gear="{s * g:.6f}" ctrllimited="true" ctrlrange="-1 1"/>'
        for j, (s, g) in enumerate(zip(morph.gear_signs, morph.gains, strict=True))
    )
    return (
        '<mujoco model="morphreach">'
        '<compiler angle="radian"/>'
        '<option timestep="0.01" gravity="0 0 0" integrator="implicitfast"/>'
        '<default><joint damping="1" armature="0.05"/><geom contype="0" conaffinity="0"/></default>'
        f"<worldbody>{''.join(bodies)}{tip}{''.join(close)}</worldbody>"
        f"<actuator>{motors}</actuator></mujoco>"
    )


def compile_mjcf(morph: Morphology) -> Any:
    """``mujoco.MjModel`` of the design (raises DesignError if MuJoCo refuses it)."""
    mujoco = _import_mujoco()
    try:
        return mujoco.MjModel.from_xml_string(mjcf_chain(morph))
    except ValueError as exc:
        raise DesignError(f"MuJoCo refused the generated model: {exc}") from exc


def _gym() -> Any:
    import gymnasium

    return gymnasium


class MorphReachMujocoEnv(_gym().Env):  # type: ignore[misc]
    """Gymnasium env: reach a random target with the decoded design, simulated by MuJoCo.

    ``observation_space``: Box(13); ``action_space``: Box(-1, 1, (3,)); episodes of ``horizon`` steps (truncated).
    """

    metadata: ClassVar[dict[str, list[str]]] = {"render_modes": []}

    def __init__(self, morphology: Morphology, horizon: int = 40, frame_skip: int = 5):
        gym = _gym()
        mujoco = _import_mujoco()
        self.morphology = morphology
        self.model = compile_mjcf(morphology)
        self.data = mujoco.MjData(self.model)
        self._mujoco = mujoco
        self.horizon, self.frame_skip = int(horizon), int(frame_skip)
        self._gains = np.asarray(morphology.gains)
        self._tip = self.model.site("tip").id
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (OBS_DIM,), dtype=np.float64)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (len(morphology.lengths),), dtype=np.float64)
        self.target = np.zeros(2)
        self._t = 0

    def _obs(self) -> np.ndarray:
        q, v = self.data.qpos, self.data.qvel
        tip = self.data.site_xpos[self._tip][:2]
        return np.concatenate([np.cos(q), np.sin(q), 0.2 * v, self.target, self.target - tip])

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self._mujoco.mj_resetData(self.model, self.data)
        self.data.qpos[:] = self.np_random.uniform(-0.1, 0.1, self.model.nq)
        if options and "target" in options:
            self.target = np.asarray(options["target"], dtype=float).reshape(2)
        else:
            r = self.np_random.uniform(*TARGET_RADIUS)
            a = self.np_random.uniform(-np.pi, np.pi)
            self.target = np.array([r * np.cos(a), r * np.sin(a)])
        self._mujoco.mj_forward(self.model, self.data)
        self._t = 0
        return self._obs(), {}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict]:
        a = np.clip(np.asarray(action, dtype=float), -1.0, 1.0)
        if a.shape != self.action_space.shape:
            raise ValueError(f"action must have shape {self.action_space.shape}, got {a.shape}")
        if not np.all(np.isfinite(a)):
            raise ValueError("action contains NaN or infinity")
        self.data.ctrl[:] = a
        self._mujoco.mj_step(self.model, self.data, nstep=self.frame_skip)
        self._t += 1
        obs = self._obs()
        dist = float(np.linalg.norm(obs[-2:]))
        reward = -dist - EFFORT * float(np.sum(self._gains * a * a))
        return obs, reward, False, self._t >= self.horizon, {"distance": dist}
