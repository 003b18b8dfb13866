"""Intervention design: choose hard interventions on a hidden linear SCM; an exact posterior over DAGs scores them.

The RL task of CAASL (Annadani et al., NeurIPS 2024) with the exact posterior of
:mod:`causal_gym.stats.graph_posterior` instead of an amortised one. Reads top-down:
:mod:`.world` (the hidden SCMs and their seeded streams), :mod:`.batch` (how a batch of episodes
plays and is scored), :mod:`.env` (the Gymnasium env), :mod:`.vector` (the batched vector env)
and :mod:`.baselines` (scripted designers). With the ``rl`` extra: :mod:`.sb3` (SB3's ``VecEnv``,
the standard route), :mod:`.policy` (a permutation-equivariant SB3 policy for that route) and
:mod:`.learned` (the fitted-Q distillation of greedy, a labelled baseline with privileged labels).
"""
