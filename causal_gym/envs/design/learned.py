"""A learned intervention designer: pair features of the posterior, a permutation-equivariant scorer, SB3's VecEnv.

Needs the ``rl`` extra (torch, Stable-Baselines3); nothing else in causal_gym imports this module.

The policy picks a target node; the value is always ``+value_bound``, the box's edge (the value
grid of :class:`~causal_gym.envs.design.baselines.GreedyDesigner` at ``--greedy-grid 1.0`` too:
in a linear SCM a harder intervention only separates the target's effects more clearly from
noise). What it sees (:func:`design_features`) comes from the edge posterior the env keeps for its
reward (``observe_posterior=True``) and from the rows so far, for every ordered pair ``(i, j)``:
``p_ij`` and ``p_ji``, their expected errors ``min(p, 1 - p)``, ``|corr(x_i, x_j)|`` over the rows,
how often ``i`` and ``j`` have been intervened on (fractions of the budget), and how likely a
directed path ``i ~> j`` and ``j ~> i`` is (:func:`path_probabilities`) with the first one's
expected error; and for the episode, the budget left and the expected errors of the whole matrix
(fractions). The path terms matter because an intervention on ``i`` moves all of ``i``'s
descendants, which a network reading one pair at a time cannot work out from the edges. No posterior is
evaluated to decide: the policy reads the one the env computes after every step anyway, where
:class:`~causal_gym.envs.design.baselines.GreedyDesigner` evaluates ``samples x (d + 1)``
posteriors per decision (88 at d = 10 with one value).

:class:`PairScorerPolicy` embeds every pair with one shared network, averages node ``i``'s pairs
into its embedding and scores it (a logit per node); the critic reads the mean embedding. So
relabelling the nodes relabels the choice and leaves the value unchanged, what it learns about one
node applies to all, and a policy trained at d = 10 runs unchanged at d = 12.

Two ways to train it: PPO on the dense reward (``PPO(PairScorerPolicy, DesignVecEnv(...))``), or
fitted Q iteration, where the per-node scores are action values ``Q(s, k)`` regressed on
:meth:`DesignVecEnv.lookahead`'s rewards of *every* target in the visited states (plus the best
value after each, :func:`q_targets`) by :func:`fit_scorer`. The lookahead steps copies of the
hidden SCMs, which only a simulator of the train stream can do; the policy that results reads the
observation alone (argmax of its scores). One state gives ``d`` labels, compared on the same noise,
instead of one sampled return per episode; on ``lg10`` the fitted-Q policy matched the greedy
lookahead where PPO had tied round-robin (README, ``examples/results/design``).
"""

from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3.common.policies import ActorCriticPolicy
from torch import nn

from causal_gym.envs.design.batch import encode_action
from causal_gym.envs.design.sb3 import DesignSB3VecEnv
from causal_gym.envs.design.vector import InterventionDesignVectorEnv

__all__ = ["PAIR_FEATURES", "GLOBAL_FEATURES", "path_probabilities", "design_features", "DesignVecEnv", "PairScorer",
           "PairScorerPolicy", "q_targets", "fit_scorer"]

PAIR_FEATURES = 10
"""Features per ordered pair of nodes (see the module docstring)."""

PATH_STEPS = 3
"""Rounds of :func:`path_probabilities`: paths of up to four edges."""

GLOBAL_FEATURES = 2
"""Features of the whole episode: budget left, expected errors."""


def path_probabilities(edge_probs: np.ndarray, steps: int = PATH_STEPS) -> np.ndarray:
    """``(B, d, d)``: the probability of a directed path ``i ~> j`` if edges were independent with these marginals.

    Noisy-OR over paths, ``r_ij <- 1 - (1 - p_ij) * prod_m (1 - p_im r_mj)`` for ``steps`` rounds
    from ``r = p``; exact when the paths share no edge (e.g. three nodes in a fixed order), an
    approximation otherwise. The exact path probabilities of the posterior would need a sum over
    DAGs, or samples from it: ~10 ms for 64 DAGs at d = 10, about ten times the posterior itself.

    Examples
    --------
    >>> p = np.zeros((1, 3, 3)); p[0, 0, 1], p[0, 1, 2] = 0.9, 0.5
    >>> round(float(path_probabilities(p)[0, 0, 2]), 3)
    0.45
    """
    p = np.asarray(edge_probs, dtype=np.float64)
    d = p.shape[-1]
    off = ~np.eye(d, dtype=bool)
    p = p * off
    through = off[None, :, :, None] & off[None, None, :, :]  # (i, m, j) with m != i and m != j
    reach = p
    for _ in range(steps):
        via = np.clip(p[:, :, :, None] * reach[:, None, :, :], 0.0, 1.0 - 1e-12) * through
        reach = (1.0 - (1.0 - p) * np.exp(np.log1p(-via).sum(axis=2))) * off
    return reach


def design_features(obs: dict[str, np.ndarray], budget: int) -> np.ndarray:
    """``(B, d * d * PAIR_FEATURES + GLOBAL_FEATURES)`` float32 features of a batch of observations.

    ``obs`` is a batched observation with ``edge_probs`` (an env made with ``observe_posterior=True``).
    Pair ``(i, j)``'s block is zero on the diagonal.

    Raises
    ------
    KeyError
        If the observation has no ``edge_probs``.
    """
    if "edge_probs" not in obs:
        raise KeyError("design_features needs the observed posterior: make the env with observe_posterior=True")
    p = obs["edge_probs"].astype(np.float64)
    b, d, _ = p.shape
    off = ~np.eye(d, dtype=bool)
    p = np.where(off, p, 0.0)
    q = np.swapaxes(p, 1, 2)
    error = np.where(off, np.minimum(p, 1.0 - p), 0.0)
    counts = obs["intervention_mask"].sum(axis=1) / budget
    filled = obs["filled"].astype(np.float64)
    data = obs["data"].astype(np.float64) * filled[..., None]
    n = filled.sum(axis=1)[:, None]
    centred = (data - data.sum(axis=1)[:, None, :] / n[..., None]) * filled[..., None]
    cov = np.einsum("bri,brj->bij", centred, centred)
    sd = np.sqrt(np.maximum(np.diagonal(cov, axis1=1, axis2=2), 1e-12))
    corr = np.where(off, np.abs(cov / sd[:, :, None] / sd[:, None, :]), 0.0)
    shape = (b, d, d)
    reach = path_probabilities(p)
    pairs = np.stack([p, q, error, np.swapaxes(error, 1, 2), corr, np.broadcast_to(counts[:, :, None], shape),
                      np.broadcast_to(counts[:, None, :], shape), reach, np.swapaxes(reach, 1, 2),
                      np.minimum(reach, 1.0 - reach)], axis=3) * off[None, :, :, None]
    left = obs["budget_left"].reshape(b, 1) / budget
    total = error.sum(axis=(1, 2))[:, None] / (d * (d - 1))
    return np.concatenate([pairs.reshape(b, -1), left, total], axis=1).astype(np.float32)


class DesignVecEnv(DesignSB3VecEnv):
    """SB3's ``VecEnv`` over the batched design env: :func:`design_features` in, a target node out.

    Action ``k`` plays ``do(x_k = +value_bound)``. The batching, autoreset and instance options are
    :class:`~causal_gym.envs.design.sb3.DesignSB3VecEnv`'s; this adapter only replaces the
    observation by :func:`design_features` (of the posterior: ``observe_posterior`` is always on)
    and the action by a node. Its arguments are the parent's (the env's keywords with the default
    box action and rows observation).
    """

    def __init__(self, env_id: str, num_envs: int, seed: int | None = None, **kwargs: Any) -> None:
        super().__init__(env_id, num_envs, seed, observe_posterior=True, **kwargs)
        unwrapped = self._design_env()
        self.budget, self.d, self.value_bound = unwrapped.setting.budget, unwrapped.setting.d, unwrapped.value_bound
        size = self.d * self.d * PAIR_FEATURES + GLOBAL_FEATURES
        self.observation_space = spaces.Box(-np.inf, np.inf, (size,), np.float32)
        self.action_space = spaces.Discrete(self.d)

    def _design_env(self) -> InterventionDesignVectorEnv:
        env = self.env.unwrapped
        assert isinstance(env, InterventionDesignVectorEnv)  # DesignSB3VecEnv takes design ids only
        return env

    def observe(self, obs: dict[str, np.ndarray]) -> np.ndarray:
        """:func:`design_features` of the batched env's observation."""
        return design_features(obs, self.budget)

    def encode(self, targets: np.ndarray) -> np.ndarray:
        """The env's ``(B, 2)`` actions for target nodes ``(B,)``."""
        targets = np.asarray(targets).reshape(self.num_envs)
        return np.stack([encode_action(int(k), self.value_bound, self.d, self.value_bound) for k in targets])

    def lookahead(self, with_features: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
        """What every target would give now: rewards ``(B, d)`` and the features after it ``(B, d, F)``.

        ``with_features=False`` skips the features (None): one-step targets (``gamma=0``) need none.

        Entry ``[b, k]`` is what playing target ``k`` (at ``+value_bound``) in episode ``b`` would
        return from :meth:`step_wait` (before an episode's end), computed on copies of the batch:
        the env's state does not change. Every target meets the episode's own next noise row (common
        random numbers), so the differences between targets are not noise between draws. It reads
        the hidden SCMs: a training signal on the train stream, never a policy's input.

        Raises
        ------
        RuntimeError
            Before :meth:`reset`, when the batch's episodes have no step left, or on the ``dev`` and
            ``test`` suites (what would be an oracle there).
        """
        unwrapped = self._design_env()
        batch = unwrapped._batch
        if batch.instances is None or batch.done:
            raise RuntimeError("lookahead needs an episode with steps left: reset() first")
        if unwrapped._split != "train":
            raise RuntimeError(f"lookahead reads the hidden SCMs: it is offered on the train stream only, "
                               f"not on {unwrapped._split!r}")
        rewards = np.zeros((self.num_envs, self.d))
        features = []
        for k in range(self.d):
            twin = copy.deepcopy(batch, memo={id(batch.instances): batch.instances})
            rewards[:, k], _ = twin.play(self.encode(np.full(self.num_envs, k)))
            if with_features:
                observation = twin.observation()
                assert isinstance(observation, dict)  # the rows observation, as this adapter plays it
                features.append(design_features(observation, self.budget))
        return rewards, np.stack(features, axis=1) if with_features else None


class PairScorer(nn.Module):
    """Node ``i``'s embedding is the mean over ``j`` of a shared network of pair ``(i, j)``; a logit per node.

    Takes SB3's flat features (:func:`design_features` layout); the number of nodes is read from
    the input's width, so one network serves any ``d``. The critic reads the mean embedding.
    """

    def __init__(self, hidden: int = 64) -> None:
        super().__init__()
        self.pair = nn.Sequential(nn.Linear(PAIR_FEATURES + GLOBAL_FEATURES, hidden), nn.Tanh(),
                                  nn.Linear(hidden, hidden), nn.Tanh())
        self.node = nn.Sequential(nn.Linear(hidden + GLOBAL_FEATURES, hidden), nn.Tanh())
        self.score = nn.Linear(hidden, 1)
        self.critic = nn.Sequential(nn.Linear(hidden + GLOBAL_FEATURES, hidden), nn.Tanh())
        self.latent_dim_vf = hidden
        self.latent_dim_pi = 0  # set by the policy: its d

    def _embedded(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        d = round(math.sqrt((x.shape[1] - GLOBAL_FEATURES) / PAIR_FEATURES))
        pairs = x[:, : d * d * PAIR_FEATURES].reshape(-1, d, d, PAIR_FEATURES)
        shared = x[:, d * d * PAIR_FEATURES:]
        h = self.pair(torch.cat([pairs, shared[:, None, None, :].expand(-1, d, d, -1)], dim=3))
        off = 1.0 - torch.eye(d, dtype=h.dtype, device=h.device)
        h = (h * off[None, :, :, None]).sum(dim=2) / (d - 1)
        return self.node(torch.cat([h, shared[:, None, :].expand(-1, d, -1)], dim=2)), shared

    def forward_actor(self, x: torch.Tensor) -> torch.Tensor:
        return self.score(self._embedded(x)[0]).squeeze(-1)

    def forward_critic(self, x: torch.Tensor) -> torch.Tensor:
        h, shared = self._embedded(x)
        return self.critic(torch.cat([h.mean(dim=1), shared], dim=1))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.forward_actor(x), self.forward_critic(x)


class PairScorerPolicy(ActorCriticPolicy):
    """SB3 actor-critic whose action logits are :class:`PairScorer`'s per-node scores (no output layer on top).

    Use with ``PPO(PairScorerPolicy, DesignVecEnv(...), policy_kwargs={"hidden": 64})``. The action
    space must be ``Discrete(d)``.
    """

    def __init__(self, observation_space: spaces.Space, action_space: spaces.Space, lr_schedule: Any,
                 hidden: int = 64, **kwargs: Any) -> None:
        if not isinstance(action_space, spaces.Discrete):
            raise ValueError(f"PairScorerPolicy picks a node: the action space must be Discrete(d), got {action_space}")
        self.hidden = hidden
        super().__init__(observation_space, action_space, lr_schedule, **kwargs)

    def _build_mlp_extractor(self) -> None:
        scorer = PairScorer(self.hidden)
        scorer.latent_dim_pi = spaces.flatdim(self.action_space)  # Discrete(d): d
        # SB3 declares an MlpExtractor; any module with latent_dim_pi/vf and the forward methods serves
        self.mlp_extractor = scorer  # type: ignore[assignment]

    def _build(self, lr_schedule: Any) -> None:
        super()._build(lr_schedule)
        self.action_net = nn.Identity()  # the logits are the scores themselves: node order never matters
        scorer = self.mlp_extractor
        assert isinstance(scorer, PairScorer)
        nn.init.orthogonal_(scorer.score.weight, gain=0.01)
        nn.init.zeros_(scorer.score.bias)
        # as SB3 builds it: optimizer_class is a concrete optimizer (Adam by default), which takes lr
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)  # type: ignore[call-arg]

    def _get_constructor_parameters(self) -> dict[str, Any]:
        return {**super()._get_constructor_parameters(), "hidden": self.hidden}


def q_targets(scorer: PairScorer | None, rewards: np.ndarray, next_features: np.ndarray | None, last: np.ndarray,
              gamma: float = 1.0, chunk: int = 512) -> np.ndarray:
    """Fitted-Q targets ``r_k + gamma * max_k' Q(s'_k, k')`` of :meth:`DesignVecEnv.lookahead`'s output.

    Parameters
    ----------
    scorer : PairScorer or None
        The previous iteration's action values; None (the first iteration) gives the rewards.
    rewards : (N, d)
    next_features : (N, d, F), or None with ``gamma=0``
        The features after each target.
    last : (N,) bool
        States at the episode's last step (no value after them).
    gamma : float, default 1.0
        The discount (0: the one-step gains alone).
    """
    targets = np.asarray(rewards, dtype=np.float32).copy()
    if scorer is None or gamma == 0.0:
        return targets
    if next_features is None:
        raise ValueError("q_targets needs next_features with gamma > 0 (lookahead(with_features=True))")
    n, d, width = next_features.shape
    with torch.no_grad():
        for start in range(0, n, chunk):
            block = np.asarray(next_features[start:start + chunk], dtype=np.float32).reshape(-1, width)
            best = scorer.forward_actor(torch.as_tensor(block)).reshape(-1, d, d).max(dim=2).values.numpy()
            targets[start:start + chunk] += gamma * np.where(last[start:start + chunk, None], 0.0, best)
    return targets


def fit_scorer(scorer: PairScorer, features: np.ndarray, targets: np.ndarray, epochs: int = 20, lr: float = 1e-3,
               batch_size: int = 256, seed: int = 0) -> float:
    """Regress ``scorer``'s per-node scores on ``targets`` ``(N, d)`` by Adam on the squared error; the last epoch's loss."""
    optimiser = torch.optim.Adam(scorer.parameters(), lr=lr)
    x, y = torch.as_tensor(np.asarray(features, dtype=np.float32)), torch.as_tensor(np.asarray(targets, dtype=np.float32))
    rng = np.random.default_rng(seed)
    loss_sum = 0.0
    for _ in range(epochs):
        loss_sum = 0.0
        for batch in np.array_split(rng.permutation(len(x)), max(1, len(x) // batch_size)):
            loss = ((scorer.forward_actor(x[batch]) - y[batch]) ** 2).mean()
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            loss_sum += loss.item() * len(batch)
    return loss_sum / len(x)
