"""ECo-MoE: co-design of robot bodies and a mixture of control experts gated by the design latent
(Wang, Li, Guo & Kriegman, ICML 2026).

    from icml26.decision.evo_moe import CoDesign, CoDesignConfig, RandomMLPDecoder

    result = CoDesign("moe", RandomMLPDecoder(seed=0), CoDesignConfig(popsize=8), seed=0).run(generations=20)
    result.final_fitness, result.forgetting, result.population[-1]

The algorithm, step by step:

1. **Genotype -> phenotype.** A latent z in the box [-B, B]^d (d = 8, B = 3) is decoded, D(z), into a body.
   Ours (the paper uses a VAE over voxel/skeleton designs that is not available): a fixed, seeded random MLP
   (:class:`RandomMLPDecoder`, *not* learned) onto a 3-link planar chain: link lengths, motor gains, joint limits
   and the motor gear signs (m b, m, m), whose bits (mirror m, base sign b) make four *control regimes* that need
   opposite torques for the same observation.
2. **Controller.** pi(a | s, z) = N( sum_e g_e(z) mu_e(s), sigma^2 ), the gate ``g(z) = softmax(MLP(z))`` reads the
   latent only, never the observation (:class:`LatentGatedMoEPolicy`, E = 4 experts). Ours (left open by the
   abstract): mixing at the action level, experts see the state only, no load-balancing loss.
3. **One generation.** (a) ask K latents from CMA-ES (``cma``; sigma0 = 0.5, bounded); (b) decode them and train the
   shared controller with PPO (:class:`PPOTrainer`: GAE, clipped surrogate) on rollouts of all K designs at once;
   (c) *then* score each design (fitness = mean reward per step of deterministic rollouts, here minus the tip's
   distance to a target minus effort); (d) tell CMA-ES.
4. **Baselines** (same PPO, critic, env steps): :class:`MonolithicPolicy` (one MLP of [s, z], width matched to the
   mixture's parameter count) and :class:`PerRobotPolicies` (a fresh small policy per design, each trained on its
   own share of the envs).
5. **Evo by demo.** Pretrain an expert on a demo body (:func:`pretrain_demo_expert`), then
   ``LatentGatedMoEPolicy.add_expert(expert, frozen=True)`` (no gradient, no optimiser state; the gate gains one
   logit) and/or start the search mean at the demo's latent: :func:`evo_by_demo` with ``mode`` freeform,
   pretrain (PretrainOnly), predesign (PredesignOnly) or costeer (CoSteering).

Simulators: :class:`PlanarChainVecEnv` (torch, every env of every design in one batch; each joint a torque-driven
damped double integrator) and the same design as a generated MuJoCo model (:func:`mjcf_chain`, a gymnasium env
:class:`MorphReachMujocoEnv`, coupled rigid-body dynamics). Bad inputs get one clear error each:
:class:`LatentError` (NaN, wrong shape, outside the box) and :class:`DesignError` (a body outside the family).

References: Y. Wang, M. Li, Z. Guo, S. Kriegman, "ECo-MoE: Embodiment-Conditioned Mixture of Experts Increases the
Evolvability of Robots", ICML 2026 (arXiv 2605.24225; https://eco-moe.github.io). M. Li, J. Kong, S. Kriegman,
"Generating Freeform Endoskeletal Robots", ICLR 2025. N. Hansen, "The CMA Evolution Strategy: A Tutorial",
arXiv 1604.00772. J. Schulman et al., "Proximal Policy Optimization Algorithms", arXiv 1707.06347.
"""

from icml26._core.lazy import lazy_exports

_MODULE_OF = {
    "ARMS": "codesign",
    "DEMO_BODY": "codesign",
    "DEMO_MODES": "codesign",
    "CoDesign": "codesign",
    "CoDesignConfig": "codesign",
    "CoDesignResult": "codesign",
    "EvoMoE": "codesign",
    "evaluate_designs": "codesign",
    "evo_by_demo": "codesign",
    "find_demo_latent": "codesign",
    "pretrain_demo_expert": "codesign",
    "LATENT_BOUND": "design",
    "LATENT_DIM": "design",
    "DesignError": "design",
    "LatentError": "design",
    "Morphology": "design",
    "RandomMLPDecoder": "design",
    "morphology_distance": "design",
    "MorphReachMujocoEnv": "mjcf",
    "compile_mjcf": "mjcf",
    "mjcf_chain": "mjcf",
    "BatchedMLP": "policies",
    "Critic": "policies",
    "LatentGatedMoEPolicy": "policies",
    "MonolithicPolicy": "policies",
    "PerRobotPolicies": "policies",
    "SingleExpert": "policies",
    "count_parameters": "policies",
    "matched_hidden": "policies",
    "PPOConfig": "ppo",
    "PPOTrainer": "ppo",
    "ACT_DIM": "sim",
    "OBS_DIM": "sim",
    "PlanarChainVecEnv": "sim",
    "codesign_experiment": "experiment",
    "demo_experiment": "experiment",
}
__all__ = sorted(_MODULE_OF)

__getattr__, __dir__ = lazy_exports(
    globals(),
    _MODULE_OF,
    {
        "codesign": "torch and cma",
        "mjcf": "mujoco and gymnasium",
        "policies": "torch",
        "ppo": "torch",
        "sim": "torch",
        "experiment": "torch and cma",
    },
    "decision",
)
