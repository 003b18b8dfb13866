"""A CAASL-style learner's interface: the raw rows in, a score and a value per node out (no posterior shown).

Needs the ``rl`` extra (torch, Stable-Baselines3); nothing else in causal_gym imports this module.

CAASL (Annadani et al. 2024) trains a transformer that reads the data and the intervention history
(no posterior) and outputs, per node, a target score and an intervention value, with SAC over
continuous actions. This module is that interface over the design env, for SB3:

- :class:`RowsVecEnv`: SB3's ``VecEnv`` over the batched env (:class:`~causal_gym.envs.design.sb3.DesignSB3VecEnv`,
  the box action, the rows observation). Observation: one ``Box`` vector packing the padded rows
  ``data (R, d)``, their ``intervention_mask (R, d)``, ``filled (R,)`` and the share of the budget
  left. Action: ``Box(-1, 1, (2 d,))``, a score per node then a value per node; the target is the
  node of the highest score and the value its value times ``value_bound`` (CAASL's design space:
  one hard intervention per step; no "observe").
- :class:`RowAttentionPolicy`: an SB3 actor-critic over that vector, equivariant in the nodes and
  invariant in the order of the rows: every cell ``(row, node)`` is embedded from its value (each
  node's column standardised over the filled rows), its mask bit and the budget left; blocks of
  attention over the rows (within each node, filled rows only) and over the nodes (within each row)
  alternate, as in CAASL's and AVICI's encoders; a masked max over the rows gives one embedding per
  node; the actor maps each to its (score, value) mean, the critic pools the nodes. The Gaussian's
  two log standard deviations (scores, values) are shared by all nodes, so relabelling the nodes
  relabels the action and leaves the value unchanged. The value means start at ``value_init``
  (default 0.5 of the bound), not 0: ``do(x = v)`` and ``do(x = -v)`` teach alike, so a mean of 0 is
  a saddle of the Gaussian policy, and its deterministic action there would be ``do(x = 0)``.

The reward is the env's (``reward=`` any mode, e.g. CAASL's ``"truth"``); the observation never
holds the posterior or the truth.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3.common.policies import ActorCriticPolicy
from torch import nn

from causal_gym.envs.design.batch import encode_action
from causal_gym.envs.design.sb3 import DesignSB3VecEnv
from causal_gym.envs.design.vector import InterventionDesignVectorEnv

__all__ = ["RowsVecEnv", "RowAttentionNet", "RowAttentionPolicy", "unpack_rows"]


class RowsVecEnv(DesignSB3VecEnv):
    """The rows packed in one vector in, per-node scores and values out (see the module docstring).

    Parameters
    ----------
    env_id : str
        A design id.
    num_envs, seed, options
        As :class:`~causal_gym.envs.design.sb3.DesignSB3VecEnv`.
    **kwargs
        The env's keywords (not ``action``, ``observation`` or ``observe_posterior``: this adapter fixes them).
    """

    def __init__(self, env_id: str, num_envs: int, seed: int | None = None, options: dict[str, Any] | None = None,
                 **kwargs: Any) -> None:
        for fixed in ("action", "observation", "observe_posterior"):
            if fixed in kwargs:
                raise ValueError(f"RowsVecEnv fixes {fixed!r} (box actions, the rows, no posterior shown)")
        super().__init__(env_id, num_envs, seed, options, **kwargs)
        unwrapped = self.env.unwrapped
        assert isinstance(unwrapped, InterventionDesignVectorEnv)  # DesignSB3VecEnv takes design ids only
        self.d, self.value_bound = unwrapped.setting.d, unwrapped.value_bound
        self.rows, self.budget = unwrapped.setting.max_rows, unwrapped.setting.budget
        self.observation_space = spaces.Box(-np.inf, np.inf, (2 * self.rows * self.d + self.rows + 1,), np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, (2 * self.d,), np.float32)

    def observe(self, obs: dict[str, np.ndarray]) -> np.ndarray:
        """``[data, intervention_mask, filled, budget share left]`` of every episode, flat."""
        b = self.num_envs
        return np.concatenate([obs["data"].reshape(b, -1), obs["intervention_mask"].reshape(b, -1),
                               obs["filled"].reshape(b, -1), obs["budget_left"].reshape(b, 1) / self.budget],
                              axis=1).astype(np.float32)

    def encode(self, actions: np.ndarray) -> np.ndarray:
        """The env's box actions: the best-scoring node at its own value."""
        a = np.clip(np.asarray(actions, dtype=np.float64).reshape(self.num_envs, 2, self.d), -1.0, 1.0)
        targets = np.argmax(a[:, 0], axis=1)
        values = a[np.arange(self.num_envs), 1, targets] * self.value_bound
        return np.stack([encode_action(int(t), float(v), self.d, self.value_bound) for t, v in zip(targets, values)])


def unpack_rows(x: torch.Tensor, d: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(data (B, R, d), mask (B, R, d), filled (B, R), left (B, 1))`` of :meth:`RowsVecEnv.observe`'s vectors."""
    rows = (x.shape[1] - 1) // (2 * d + 1)
    if rows * (2 * d + 1) + 1 != x.shape[1]:
        raise ValueError(f"a rows vector of d = {d} has R (2 d + 1) + 1 entries; got width {x.shape[1]}")
    data = x[:, : rows * d].reshape(-1, rows, d)
    mask = x[:, rows * d: 2 * rows * d].reshape(-1, rows, d)
    return data, mask, x[:, 2 * rows * d: 2 * rows * d + rows], x[:, -1:]


class _Block(nn.Module):
    """Attention over the rows (per node, filled rows only), then over the nodes (per row); each with a feed-forward."""

    def __init__(self, hidden: int, heads: int) -> None:
        super().__init__()
        self.rows = nn.MultiheadAttention(hidden, heads, batch_first=True)
        self.nodes = nn.MultiheadAttention(hidden, heads, batch_first=True)
        self.norms = nn.ModuleList([nn.LayerNorm(hidden) for _ in range(4)])
        self.feed = nn.ModuleList([nn.Sequential(nn.Linear(hidden, 2 * hidden), nn.GELU(), nn.Linear(2 * hidden, hidden))
                                   for _ in range(2)])

    def forward(self, h: torch.Tensor, empty: torch.Tensor) -> torch.Tensor:
        b, r, d, k = h.shape
        by_node = h.permute(0, 2, 1, 3).reshape(b * d, r, k)
        hidden_rows = empty[:, None, :].expand(b, d, r).reshape(b * d, r)
        z = self.norms[0](by_node)
        by_node = by_node + self.rows(z, z, z, key_padding_mask=hidden_rows, need_weights=False)[0]
        by_node = by_node + self.feed[0](self.norms[1](by_node))
        by_row = by_node.reshape(b, d, r, k).permute(0, 2, 1, 3).reshape(b * r, d, k)
        z = self.norms[2](by_row)
        by_row = by_row + self.nodes(z, z, z, need_weights=False)[0]
        by_row = by_row + self.feed[1](self.norms[3](by_row))
        return by_row.reshape(b, r, d, k)


class RowAttentionNet(nn.Module):
    """The encoder and heads of :class:`RowAttentionPolicy` (module docstring); ``d`` is fixed by the env."""

    def __init__(self, d: int, hidden: int = 32, heads: int = 4, blocks: int = 2) -> None:
        super().__init__()
        self.d = d
        self.embed = nn.Linear(3, hidden)
        self.blocks = nn.ModuleList([_Block(hidden, heads) for _ in range(blocks)])
        self.head = nn.Sequential(nn.Linear(hidden, hidden), nn.GELU(), nn.Linear(hidden, 2))
        self.critic = nn.Sequential(nn.Linear(hidden + 1, hidden), nn.Tanh())
        self.latent_dim_pi = 2 * d
        self.latent_dim_vf = hidden

    def nodes(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Node embeddings ``(B, d, hidden)`` and the budget share left ``(B, 1)``."""
        data, mask, filled, left = unpack_rows(x, self.d)
        weight = filled[:, :, None]
        count = weight.sum(dim=1, keepdim=True).clamp(min=1.0)
        mean = (data * weight).sum(dim=1, keepdim=True) / count
        sd = (((data - mean) ** 2 * weight).sum(dim=1, keepdim=True) / count).sqrt().clamp(min=1e-3)
        cells = torch.stack([(data - mean) / sd * weight, mask, left[:, :, None].expand_as(data)], dim=3)
        h = self.embed(cells)
        empty = filled < 0.5
        for block in self.blocks:
            h = block(h, empty)
        h = h.masked_fill(empty[:, :, None, None], float("-inf")).amax(dim=1)
        return h, left

    def forward_actor(self, x: torch.Tensor) -> torch.Tensor:
        h, _ = self.nodes(x)
        out = self.head(h)  # (B, d, 2): score, value
        return torch.cat([out[..., 0], out[..., 1]], dim=1)

    def forward_critic(self, x: torch.Tensor) -> torch.Tensor:
        h, left = self.nodes(x)
        return self.critic(torch.cat([h.mean(dim=1), left], dim=1))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h, left = self.nodes(x)
        out = self.head(h)
        return torch.cat([out[..., 0], out[..., 1]], dim=1), self.critic(torch.cat([h.mean(dim=1), left], dim=1))


class RowAttentionPolicy(ActorCriticPolicy):
    """SB3 actor-critic of :class:`RowAttentionNet`: Gaussian scores and values, one log-std for each kind.

    Use with ``PPO(RowAttentionPolicy, RowsVecEnv(id, B), policy_kwargs={"hidden": 32})``.
    """

    def __init__(self, observation_space: spaces.Space, action_space: spaces.Space, lr_schedule: Any,
                 hidden: int = 32, heads: int = 4, blocks: int = 2, value_init: float = 0.5, **kwargs: Any) -> None:
        if not (isinstance(action_space, spaces.Box) and action_space.shape[0] % 2 == 0):
            raise ValueError(f"RowAttentionPolicy plays RowsVecEnv's Box(-1, 1, (2 d,)); got {action_space}")
        self.hidden, self.heads, self.blocks, self.value_init = hidden, heads, blocks, value_init
        super().__init__(observation_space, action_space, lr_schedule, **kwargs)

    def _build_mlp_extractor(self) -> None:
        shape = self.action_space.shape
        assert shape is not None  # a Box, checked in __init__
        # SB3 declares an MlpExtractor; any module with latent_dim_pi/vf and the forward methods serves
        self.mlp_extractor = RowAttentionNet(shape[0] // 2, self.hidden, self.heads, self.blocks)  # type: ignore[assignment]

    def _build(self, lr_schedule: Any) -> None:
        super()._build(lr_schedule)
        self.action_net = nn.Identity()  # the means are the net's own, node by node
        self.log_std = nn.Parameter(torch.full((2,), float(self.log_std_init)))  # scores, values: shared by the nodes
        net = self.mlp_extractor
        assert isinstance(net, RowAttentionNet)
        final = net.head[-1]
        assert isinstance(final, nn.Linear)
        nn.init.orthogonal_(final.weight, gain=0.01)
        with torch.no_grad():
            final.bias.copy_(torch.tensor([0.0, self.value_init]))  # scores level, values at value_init
        # as SB3 builds it: optimizer_class is a concrete optimizer (Adam by default), which takes lr
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)  # type: ignore[call-arg]

    def _get_action_dist_from_latent(self, latent_pi: torch.Tensor) -> Any:
        d = latent_pi.shape[1] // 2
        return self.action_dist.proba_distribution(latent_pi, self.log_std.repeat_interleave(d))

    def _get_constructor_parameters(self) -> dict[str, Any]:
        return {**super()._get_constructor_parameters(), "hidden": self.hidden, "heads": self.heads,
                "blocks": self.blocks, "value_init": self.value_init}
