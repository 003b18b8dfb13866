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

Two richer designs (:mod:`~causal_gym.envs.design.spec`, "Richer designs"):

- **Node costs** (``node_costs=``, the id's public costs, e.g. ``lg10-T5-costs``): each node's cost is
  one more input of its logit, so the policy can weigh what an experiment teaches against what it
  costs; relabelling the nodes with their costs still relabels the choice. The summary observation
  does not show the costs (they are fixed by the id), so the policy is told them once, like ``d``.
- **Batch designs** (``targets_per_step = k > 1``, ``action="multidiscrete"``: ``MultiDiscrete([d + 1,
  G] * k)``): the same logits over the ``1 + d G`` designs, and the ``k`` designs of a step are drawn
  from them without replacement (:class:`DistinctDesigns`, the Plackett-Luce distribution), so a
  batch never repeats a design (nor "observe") and its deterministic play is the ``k`` best designs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from gymnasium import spaces
from stable_baselines3.common.distributions import Distribution
from stable_baselines3.common.policies import ActorCriticPolicy
from torch import nn

__all__ = ["DistinctDesigns", "NodePairNet", "NodePairPolicy", "summary_graph"]

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

    costs: torch.Tensor

    def __init__(self, hidden: int = 64, values: int = 1, node_costs: Sequence[float] | None = None) -> None:
        super().__init__()
        self.values = values
        costs = torch.zeros(0) if node_costs is None else torch.as_tensor(node_costs, dtype=torch.float32)
        self.register_buffer("costs", costs, persistent=False)  # (d,) or empty: a constant of the id, not a weight
        self.first = nn.Sequential(nn.Linear(PAIR_INPUTS, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())
        self.second = nn.Sequential(nn.Linear(PAIR_INPUTS + 2 * hidden, hidden), nn.Tanh(),
                                    nn.Linear(hidden, hidden), nn.Tanh())
        self.node = nn.Linear(hidden + 2 + (node_costs is not None), values)
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
        inputs = [h, share[:, :, None], left[:, None, :].expand(-1, d, -1)]
        if self.costs.numel():
            if self.costs.numel() != d:
                raise ValueError(f"the policy was given {self.costs.numel()} node costs for observations of d = {d}")
            inputs.append(self.costs.to(h.dtype)[None, :, None].expand(b, -1, -1))
        nodes = self.node(torch.cat(inputs, dim=2))
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


class DistinctDesigns(Distribution):
    """``k`` distinct designs drawn in turn from one softmax over the ``1 + d G`` designs (Plackett-Luce).

    The logits are in the route's discrete order (``0``: observe; ``1 + i G + g``: node ``i`` at
    grid value ``g``); an action is the env's ``MultiDiscrete([d + 1, G] * k)`` point ``[t_1, g_1, ...,
    t_k, g_k]`` (``t = d``: observe). Sampling is the Gumbel top-``k`` (an exact draw without
    replacement, in order); the mode is the ``k`` largest logits; :meth:`log_prob` is the ordered
    draw's ``sum_m [l(a_m) - logsumexp(l over the designs not yet drawn)]``. The entropy of an ordered
    draw has no closed form: :meth:`entropy` is that of the first draw (PPO's entropy bonus).
    """

    def __init__(self, d: int, values: int, k: int) -> None:
        super().__init__()
        if not 1 <= k <= 1 + d * values:
            raise ValueError(f"{k} distinct designs per step need k <= 1 + d G = {1 + d * values}")
        self.d, self.values, self.k = d, values, k
        self.logits = torch.zeros(0)

    def proba_distribution_net(self, latent_dim: int) -> nn.Module:
        return nn.Identity()  # the logits are the policy's own

    def proba_distribution(self, action_logits: torch.Tensor) -> DistinctDesigns:
        self.logits = action_logits
        return self

    def codes(self, actions: torch.Tensor) -> torch.Tensor:
        """``(B, k)`` design indices of ``(B, 2k)`` actions (any grid index with ``t = d`` is observe)."""
        pairs = actions.long().reshape(-1, self.k, 2)
        target, grid = pairs[..., 0], pairs[..., 1]
        return torch.where(target >= self.d, 0, 1 + target * self.values + grid)

    def actions(self, codes: torch.Tensor) -> torch.Tensor:
        """The ``(B, 2k)`` actions of ``(B, k)`` design indices (inverse of :meth:`codes`)."""
        node = codes - 1
        target = torch.where(codes == 0, self.d, torch.div(node, self.values, rounding_mode="floor"))
        grid = torch.where(codes == 0, 0, node % self.values)
        return torch.stack([target, grid], dim=2).reshape(codes.shape[0], 2 * self.k)

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        codes = self.codes(actions)
        logits, total = self.logits, torch.zeros(self.logits.shape[0], dtype=self.logits.dtype, device=self.logits.device)
        for m in range(self.k):
            pick = codes[:, m:m + 1]
            total = total + logits.gather(1, pick)[:, 0] - torch.logsumexp(logits, dim=1)
            logits = logits.scatter(1, pick, -math.inf)  # drawn: out of the later draws
        return total

    def entropy(self) -> torch.Tensor:
        return torch.distributions.Categorical(logits=self.logits).entropy()

    def sample(self) -> torch.Tensor:
        gumbel = -torch.log(-torch.log(torch.rand_like(self.logits).clamp_min(1e-20)))
        return self.actions(torch.topk(self.logits + gumbel, self.k, dim=1).indices)

    def mode(self) -> torch.Tensor:
        return self.actions(torch.topk(self.logits, self.k, dim=1).indices)

    def actions_from_params(self, action_logits: torch.Tensor, deterministic: bool = False) -> torch.Tensor:
        self.proba_distribution(action_logits)
        return self.get_actions(deterministic=deterministic)

    def log_prob_from_params(self, action_logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        actions = self.actions_from_params(action_logits)
        return actions, self.log_prob(actions)


def _route(observation_space: spaces.Space, action_space: spaces.Space) -> tuple[int, int, int] | None:
    """``(d, G, k)`` of the route's spaces (``k = 0``: the ``Discrete`` action), None if they are not the route's."""
    width = observation_space.shape[0] if isinstance(observation_space, spaces.Box) and observation_space.shape else -1
    d = math.isqrt(max(width - 1, 0))
    if d < 2 or d * d + 1 != width:
        return None
    if isinstance(action_space, spaces.Discrete) and (int(action_space.n) - 1) % d == 0:
        return d, (int(action_space.n) - 1) // d, 0
    if isinstance(action_space, spaces.MultiDiscrete) and action_space.nvec.ndim == 1 and action_space.nvec.size % 2 == 0:
        pairs = action_space.nvec.reshape(-1, 2)
        if (pairs[:, 0] == d + 1).all() and (pairs[:, 1] == pairs[0, 1]).all():
            return d, int(pairs[0, 1]), len(pairs)
    return None


class NodePairPolicy(ActorCriticPolicy):
    """SB3 actor-critic whose action logits are :class:`NodePairNet`'s (no output layer on top).

    The observation must be the route's summary ``Box`` (``observation="summary"``), the action its
    ``Discrete(1 + d G)`` (``action="discrete"``) or, for batch designs, ``MultiDiscrete([d + 1, G] * k)``
    (``action="multidiscrete"``, played by :class:`DistinctDesigns`); ``d``, ``G`` and ``k`` are read
    from the spaces. ``node_costs``: the id's ``d`` node costs (module docstring), or None.
    """

    def __init__(self, observation_space: spaces.Space, action_space: spaces.Space, lr_schedule: Any,
                 hidden: int = 64, node_costs: Sequence[float] | None = None, **kwargs: Any) -> None:
        route = _route(observation_space, action_space)
        if route is None:
            raise ValueError("NodePairPolicy plays the route observation='summary' with action='discrete' (or "
                             f"'multidiscrete' for batch designs); got observations {observation_space} and actions {action_space}")
        self.d, self.values, self.batch = route
        if node_costs is not None:
            costs = [float(c) for c in node_costs]
            if len(costs) != self.d or not all(math.isfinite(c) and c >= 0 for c in costs):
                raise ValueError(f"node_costs must be {self.d} finite non-negative numbers, got {node_costs!r}")
            node_costs = tuple(costs)
        self.hidden, self.node_costs = hidden, node_costs
        super().__init__(observation_space, action_space, lr_schedule, **kwargs)

    def _build_mlp_extractor(self) -> None:
        net = NodePairNet(self.hidden, self.values, self.node_costs)
        net.latent_dim_pi = 1 + self.d * self.values  # one logit per design: observe, then each node at each value
        # SB3 declares an MlpExtractor; any module with latent_dim_pi/vf and the forward methods serves
        self.mlp_extractor = net  # type: ignore[assignment]

    def _build(self, lr_schedule: Any) -> None:
        super()._build(lr_schedule)
        self.action_net = nn.Identity()  # the logits are the net's own: node order never matters
        net = self.mlp_extractor
        assert isinstance(net, NodePairNet)
        if self.batch:
            self.action_dist = DistinctDesigns(self.d, self.values, self.batch)
        for head in (net.node, net.observe):
            nn.init.orthogonal_(head.weight, gain=0.01)
            nn.init.zeros_(head.bias)
        # as SB3 builds it: optimizer_class is a concrete optimizer (Adam by default), which takes lr
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)  # type: ignore[call-arg]

    def _get_action_dist_from_latent(self, latent_pi: torch.Tensor) -> Distribution:
        if isinstance(self.action_dist, DistinctDesigns):
            return self.action_dist.proba_distribution(latent_pi)
        return super()._get_action_dist_from_latent(latent_pi)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        return {**super()._get_constructor_parameters(), "hidden": self.hidden, "node_costs": self.node_costs}
