"""A permutation-equivariant SB3 policy for the standard route's summary observation.

Needs the ``rl`` extra (torch, Stable-Baselines3); nothing else in causal_gym imports this module.

SB3's ``MlpPolicy`` reads ``observation="summary"`` (edge marginals, experiment shares, budget left:
:class:`~causal_gym.envs.design.batch.DesignInterface`) as an unstructured vector, so what it learns
about node 3 teaches it nothing about node 7. :class:`NodePairPolicy` reads the same vector as a
graph: every ordered pair ``(i, j)`` is embedded by one shared network from ``P(i -> j)``,
``P(j -> i)``, their expected errors, both nodes' experiment shares and the budget left; a node's
embedding is the mean of its pairs; a second round re-embeds each pair with both nodes' embeddings
(so a node sees its neighbours' uncertainty, which matters because an intervention moves all of a
target's descendants). Each node gets one logit per value of the route's ``value_grid``, the
"observe" action and the critic read the mean node embedding. Relabelling the nodes relabels the
logits and leaves the value unchanged, and one network plays any ``d``.

It is an architecture, not a feature: its input is the env's observation and nothing else, and it
trains with SB3's PPO as is (``PPO(NodePairPolicy, DesignSB3VecEnv(id, B, action="discrete",
observation="summary"))``, ``examples/train_design_sb3.py --policy pair``).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from gymnasium import spaces
from stable_baselines3.common.policies import ActorCriticPolicy
from torch import nn

__all__ = ["NodePairNet", "NodePairPolicy", "summary_graph"]

PAIR_INPUTS = 7
"""Inputs per ordered pair: both marginals, both expected errors, both shares, the budget left."""


def summary_graph(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(P, share, left)`` of a batch of summary vectors: ``(B, d, d)`` with a zero diagonal, ``(B, d)``, ``(B, 1)``.

    ``d`` is read from the width ``d (d - 1) + d + 1 = d^2 + 1``.

    Raises
    ------
    ValueError
        If the width is not ``d^2 + 1`` for an integer ``d >= 2``.
    """
    d = math.isqrt(x.shape[1] - 1)
    if d < 2 or d * d + 1 != x.shape[1]:
        raise ValueError(f"a summary observation has d (d - 1) + d + 1 entries; got width {x.shape[1]}")
    off = ~torch.eye(d, dtype=torch.bool, device=x.device)
    probs = torch.zeros(x.shape[0], d, d, dtype=x.dtype, device=x.device)
    probs[:, off] = x[:, : d * (d - 1)]
    return probs, x[:, d * (d - 1): d * d], x[:, d * d:]


class NodePairNet(nn.Module):
    """Two rounds of shared pair networks over the summary's graph; per-node logits and a value (module docstring)."""

    def __init__(self, hidden: int = 64, values: int = 1) -> None:
        super().__init__()
        self.values = values
        self.first = nn.Sequential(nn.Linear(PAIR_INPUTS, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())
        self.second = nn.Sequential(nn.Linear(PAIR_INPUTS + 2 * hidden, hidden), nn.Tanh(),
                                    nn.Linear(hidden, hidden), nn.Tanh())
        self.node = nn.Linear(hidden + 2, values)
        self.observe = nn.Linear(hidden + 1, 1)
        self.critic = nn.Sequential(nn.Linear(hidden + 1, hidden), nn.Tanh())
        self.latent_dim_pi = 0  # set by the policy: its number of actions
        self.latent_dim_vf = hidden

    def _nodes(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        probs, share, left = summary_graph(x)
        d = probs.shape[1]
        back = probs.transpose(1, 2)
        pairs = torch.stack([probs, back, torch.minimum(probs, 1 - probs), torch.minimum(back, 1 - back),
                             share[:, :, None].expand(-1, d, d), share[:, None, :].expand(-1, d, d),
                             left[:, :, None].expand(-1, d, d)], dim=3)
        off = (1.0 - torch.eye(d, dtype=x.dtype, device=x.device))[None, :, :, None]
        h = (self.first(pairs) * off).sum(dim=2) / (d - 1)
        both = torch.cat([pairs, h[:, :, None, :].expand(-1, d, d, -1), h[:, None, :, :].expand(-1, d, d, -1)], dim=3)
        h = (self.second(both) * off).sum(dim=2) / (d - 1)
        return h, share, left

    def _actor(self, h: torch.Tensor, share: torch.Tensor, left: torch.Tensor) -> torch.Tensor:
        b, d = h.shape[:2]
        nodes = self.node(torch.cat([h, share[:, :, None], left[:, None, :].expand(-1, d, -1)], dim=2))
        observe = self.observe(torch.cat([h.mean(dim=1), left], dim=1))
        return torch.cat([observe, nodes.reshape(b, d * self.values)], dim=1)

    def _critic(self, h: torch.Tensor, left: torch.Tensor) -> torch.Tensor:
        return self.critic(torch.cat([h.mean(dim=1), left], dim=1))

    def forward_actor(self, x: torch.Tensor) -> torch.Tensor:
        h, share, left = self._nodes(x)
        return self._actor(h, share, left)

    def forward_critic(self, x: torch.Tensor) -> torch.Tensor:
        h, _, left = self._nodes(x)
        return self._critic(h, left)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h, share, left = self._nodes(x)
        return self._actor(h, share, left), self._critic(h, left)


class NodePairPolicy(ActorCriticPolicy):
    """SB3 actor-critic whose action logits are :class:`NodePairNet`'s (no output layer on top).

    The action space must be the route's ``Discrete(1 + d G)`` (``action="discrete"``), the
    observation its summary ``Box`` (``observation="summary"``); ``G`` is read from both.
    """

    def __init__(self, observation_space: spaces.Space, action_space: spaces.Space, lr_schedule: Any,
                 hidden: int = 64, **kwargs: Any) -> None:
        width = observation_space.shape[0] if isinstance(observation_space, spaces.Box) else -1
        d = math.isqrt(max(width - 1, 0))
        if not (isinstance(action_space, spaces.Discrete) and d >= 2 and d * d + 1 == width
                and (int(action_space.n) - 1) % d == 0):
            raise ValueError("NodePairPolicy plays the route action='discrete', observation='summary'; got "
                             f"observations {observation_space} and actions {action_space}")
        self.hidden, self.values = hidden, (int(action_space.n) - 1) // d
        super().__init__(observation_space, action_space, lr_schedule, **kwargs)

    def _build_mlp_extractor(self) -> None:
        net = NodePairNet(self.hidden, self.values)
        net.latent_dim_pi = spaces.flatdim(self.action_space)  # Discrete(1 + d G): its n
        # SB3 declares an MlpExtractor; any module with latent_dim_pi/vf and the forward methods serves
        self.mlp_extractor = net  # type: ignore[assignment]

    def _build(self, lr_schedule: Any) -> None:
        super()._build(lr_schedule)
        self.action_net = nn.Identity()  # the logits are the net's own: node order never matters
        net = self.mlp_extractor
        assert isinstance(net, NodePairNet)
        for head in (net.node, net.observe):
            nn.init.orthogonal_(head.weight, gain=0.01)
            nn.init.zeros_(head.bias)
        # as SB3 builds it: optimizer_class is a concrete optimizer (Adam by default), which takes lr
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)  # type: ignore[call-arg]

    def _get_constructor_parameters(self) -> dict[str, Any]:
        return {**super()._get_constructor_parameters(), "hidden": self.hidden}
