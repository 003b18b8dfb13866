"""Scripted designers: random, round-robin, observational-only, uncertainty heuristics and a greedy one-step lookahead.

Each implements the agent protocol (:class:`causal_gym.harness.agent.Agent`): ``reset(task)``
reads the setting from ``task.condition`` (``d``, ``value_bound``), ``act(observation, info)``
returns a point of the env's action box (:func:`~causal_gym.envs.design.batch.encode_action`).
They read only the observation.

- :class:`RandomDesigner`: a uniformly random node and a uniform value in ``[-value_bound,
  value_bound]`` (CAASL's random baseline).
- :class:`RoundRobinDesigner`: nodes ``0, 1, ..., d - 1`` in turn at ``+value_bound`` (then
  ``-value_bound`` on the next pass): every node intervened once as hard as the box allows.
- :class:`ObservationalDesigner`: an observational row every step (what experiments add over
  more passive data).
- :class:`UncertaintyDesigner`: the not-yet-targeted node whose edges the posterior is least sure
  of, ``sum_j min(p_kj, 1 - p_kj) + min(p_jk, 1 - p_jk)``, at ``+value_bound``: no lookahead, the
  posterior the env shows (``observe_posterior=True``: no evaluation of its own) or one it computes.
- :class:`CostAwareUncertaintyDesigner`: the same score net of the node's cost (a share ``settled``
  of it against the cost), observing where no node is worth its cost.
- :class:`GreedyDesigner`: for every candidate design (each node at each value of a grid, and
  "observe"), the expected value of the reward's quantity (``objective``) after one more row,
  estimated from ``samples`` posterior-predictive outcomes (a DAG drawn exactly from the
  posterior, then the row from the BGe predictive under that DAG); it plays the best
  candidate. Candidates see common random numbers. For ``objective="confidence"`` (the
  posterior's expected correct entries) and ``"information_gain"`` (minus the entropy over (order,
  DAG) pairs) this is the myopic Bayes-optimal design up to
  Monte-Carlo error, the strong heuristic a learned policy must match: it costs ``samples x
  (d x |grid| + 1)`` posterior evaluations per decision (168 at d = 10 by default), a policy one
  forward pass. ``"truth"`` pays agreement with the hidden graph, which the designer cannot see; under
  its own posterior the expected agreement after the row is ``sum_{i != j} E[p'^2 + (1 - p')^2]``
  (the true graph drawn from the updated posterior ``p'``), which it maximises instead.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from causal_gym._validation import check_choice, check_count, check_real
from causal_gym.envs.design.batch import encode_action
from causal_gym.harness.agent import TaskSpec
from causal_gym.stats.graph_posterior import (
    BGeStats,
    GraphPosterior,
    bge_local_scores,
    edge_posterior,
    expected_correct_entries,
    sample_dags,
    sample_predictive,
)

__all__ = ["Designer", "RandomDesigner", "RoundRobinDesigner", "ObservationalDesigner", "UncertaintyDesigner",
           "CostAwareUncertaintyDesigner", "GreedyDesigner", "GREEDY_OBJECTIVES", "observed_stats", "shortlist_samples"]

_EVALUATION_ENTRIES = 2**22
"""Local scores per posterior call of :class:`GreedyDesigner` (32 MB): all 168 candidates at d = 10 in one call,
16 at d = 16 (all 264 at once would hold over a GB of scores)."""

GREEDY_OBJECTIVES = ("confidence", "truth", "information_gain")
"""What :class:`GreedyDesigner` maximises (the env's reward modes; module docstring)."""


def _condition(task: TaskSpec, who: str) -> Mapping[str, Any]:
    condition = task.condition
    if condition.get("benchmark") != "design":
        raise ValueError(f"{who} plays the intervention-design envs, got a task with condition {dict(condition)}")
    return condition


def observed_stats(observation: Mapping[str, Any]) -> BGeStats:
    """BGe statistics of the rows an observation holds (intervened cells left out of their node's)."""
    filled = np.asarray(observation["filled"]).astype(bool)
    data = np.asarray(observation["data"], dtype=np.float64)[filled]
    mask = np.asarray(observation["intervention_mask"]).astype(bool)[filled]
    return BGeStats.from_data(data, mask)


class Designer:
    """Shared bookkeeping of the designers: the setting of the task and the step within the episode.

    A designer of one's own subclasses it and implements :meth:`designs` (as
    :class:`~causal_gym.envs.design.policy_designer.PolicyDesigner` does).

    A designer returns the ``k = targets_per_step`` designs of a step (:meth:`designs`); with
    ``k > 1`` its action is the ``(k, 2)`` box of a batch design. Node costs (``node_costs`` of the
    task) are known to it: :class:`GreedyDesigner` and :class:`CostAwareUncertaintyDesigner` weigh them,
    the others ignore them.
    """

    def reset(self, task: TaskSpec) -> None:
        condition = _condition(task, type(self).__name__)
        self.d, self.value_bound = int(condition["d"]), float(condition["value_bound"])
        cap = condition.get("max_parents")
        self.max_parents = None if cap is None else int(cap)
        self.k = int(condition.get("targets_per_step", 1))
        costs = condition.get("node_costs")
        self.costs = np.zeros(self.d) if costs is None else np.asarray(costs, dtype=np.float64)
        self.step = 0

    def act(self, observation: Mapping[str, Any], info: Mapping[str, Any]) -> np.ndarray:
        if not hasattr(self, "d"):
            raise RuntimeError(f"{type(self).__name__}.act() called before reset(task)")
        chosen = self.designs(observation)
        self.step += 1
        actions = [encode_action(target, value, self.d, self.value_bound) for target, value in chosen]
        return actions[0] if self.k == 1 else np.stack(actions)

    def designs(self, observation: Mapping[str, Any]) -> list[tuple[int | None, float]]:
        """The ``k`` designs ``(target or None to observe, value)`` of this step."""
        raise NotImplementedError


class RandomDesigner(Designer):
    """A uniformly random node at a uniform value (seeded per episode: ``SeedSequence([seed, episode])``)."""

    def __init__(self, seed: int = 0) -> None:
        self.seed = check_count(seed, "seed", 0)
        self._episode = 0

    def reset(self, task: TaskSpec) -> None:
        super().reset(task)
        self._rng = np.random.default_rng(np.random.SeedSequence([self.seed, self._episode]))
        self._episode += 1

    def designs(self, observation: Mapping[str, Any]) -> list[tuple[int | None, float]]:
        return [(int(self._rng.integers(self.d)), float(self._rng.uniform(-self.value_bound, self.value_bound)))
                for _ in range(self.k)]


class RoundRobinDesigner(Designer):
    """Nodes in turn at ``+value_bound``, the sign flipping on each pass over the nodes (a batch takes the next ``k``)."""

    def designs(self, observation: Mapping[str, Any]) -> list[tuple[int | None, float]]:
        out: list[tuple[int | None, float]] = []
        for i in range(self.k):
            sweep, node = divmod(self.step * self.k + i, self.d)
            out.append((node, self.value_bound * (1.0 if sweep % 2 == 0 else -1.0)))
        return out


class ObservationalDesigner(Designer):
    """An observational row every step."""

    def designs(self, observation: Mapping[str, Any]) -> list[tuple[int | None, float]]:
        return [(None, 0.0)] * self.k


class UncertaintyDesigner(Designer):
    """The not-yet-targeted node with the largest summed expected error of its edges, at ``+value_bound``.

    Reads ``edge_probs`` when the observation shows it (the env made with ``observe_posterior=True``:
    no posterior of its own), else computes the posterior of the rows (counted in
    :attr:`evaluations`). Once every node has been targeted, all are candidates again. Ties go to
    the smaller index.
    """

    def __init__(self) -> None:
        self.evaluations = 0

    def uncertainty(self, observation: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        """Per node: ``sum_j min(p_kj, 1 - p_kj) + min(p_jk, 1 - p_jk)``, and whether it counts as targeted.

        (All nodes count as untargeted again once every one has been targeted.)
        """
        if "edge_probs" in observation:
            p = np.asarray(observation["edge_probs"], dtype=np.float64)
        else:
            p = edge_posterior(bge_local_scores(observed_stats(observation), max_parents=self.max_parents)).edge_probs
            self.evaluations += 1
        error = np.minimum(p, 1.0 - p)
        np.fill_diagonal(error, 0.0)
        targeted = np.asarray(np.asarray(observation["intervention_mask"]).any(axis=0))
        if targeted.all():
            targeted[:] = False
        return error.sum(axis=0) + error.sum(axis=1), targeted

    def designs(self, observation: Mapping[str, Any]) -> list[tuple[int | None, float]]:
        uncertainty, targeted = self.uncertainty(observation)
        ranked = np.lexsort((np.arange(self.d), -uncertainty, targeted))  # untargeted first, then most uncertain
        return [(int(node), self.value_bound) for node in np.resize(ranked, self.k)]

    def rank(self, observation: Mapping[str, Any], targets: np.ndarray, values: np.ndarray) -> np.ndarray:
        """Candidates ranked as :meth:`designs` ranks nodes (untargeted first, then the most uncertain), for
        :class:`GreedyDesigner`'s ``proposer``: a node at ``+value_bound`` only, never "observe"."""
        uncertainty, targeted = self.uncertainty(observation)
        node = np.maximum(targets, 0)
        score = uncertainty[node] - np.where(targeted[node], 2.0 * self.d * self.d, 0.0)  # any untargeted first
        return np.where((targets >= 0) & (values == self.value_bound), score, -np.inf)


class CostAwareUncertaintyDesigner(UncertaintyDesigner):
    """The uncertainty heuristic net of node costs: ``settled x`` a node's uncertainty minus its cost, observing where no node is worth its cost.

    A node's uncertainty (:meth:`UncertaintyDesigner.uncertainty`) is what settling all of its
    edges would add to the posterior's expected correct entries; one row on it settles a share of
    that, ``settled``. A node is worth its cost where ``settled x uncertainty >= cost`` (an
    observational row is free and taken to add nothing); among those the designer takes the
    untargeted ones first, then the largest value net of the cost, ties to the smaller index, at
    ``+value_bound``, and observes when no node is worth its cost (a batch fills its places with
    the nodes worth their cost, then observational rows). The budget counts experiments, not
    costs, so it ranks by value minus cost, not value per unit of cost. With no costs it plays as
    :class:`UncertaintyDesigner` (batches of at most ``d`` designs).

    Parameters
    ----------
    settled : float, default 0.6
        The share of a node's uncertainty one row on it is taken to settle (chosen on dev SCMs
        0-99 of ``InterventionDesign-lg10-T5-costs-v0``; docs/results/design.md).
    """

    def __init__(self, settled: float = 0.6) -> None:
        super().__init__()
        self.settled = check_real(settled, "settled", 0.0)

    def designs(self, observation: Mapping[str, Any]) -> list[tuple[int | None, float]]:
        uncertainty, targeted = self.uncertainty(observation)
        net = self.settled * uncertainty - self.costs
        worth = net >= 0.0
        ranked = np.lexsort((np.arange(self.d), -net, targeted))  # untargeted first, then the most net value
        ranked = ranked[worth[ranked]][:self.k]
        chosen: list[tuple[int | None, float]] = [(int(node), self.value_bound) for node in ranked]
        return chosen + [(None, 0.0)] * (self.k - len(chosen))


class GreedyDesigner(Designer):
    """One-step lookahead on the expected posterior gain (see the module docstring).

    Parameters
    ----------
    samples : int, default 8
        Posterior-predictive outcomes per candidate.
    value_grid : sequence of float, default (-1, 1)
        Candidate values as fractions of ``value_bound``.
    observe : bool, default True
        Also consider an observational row.
    seed : int, default 0
        Seeds the draws (``SeedSequence([seed, episode, step])``).
    objective : {"confidence", "truth", "information_gain"}, default "confidence"
        The quantity whose expectation after the row it maximises (module docstring).
    proposer : object with ``reset(task)`` and ``rank(observation, targets, values)``, optional
        Values only the ``shortlist`` candidates the proposer ranks highest (``rank`` returns a
        score per candidate, higher first, ``-inf`` for one it would never play; ties go to the
        earlier candidate): ``shortlist x samples`` posterior evaluations per decision instead of
        all of them (plus any the proposer counts in its own ``evaluations``). :class:`UncertaintyDesigner` and
        :class:`~causal_gym.envs.design.policy_designer.PolicyDesigner` (a trained policy) rank.
    shortlist : int, optional
        How many candidates the proposer passes on (required with a proposer).
    """

    def __init__(self, samples: int = 8, value_grid: Sequence[float] = (-1.0, 1.0), observe: bool = True,
                 seed: int = 0, objective: str = "confidence", proposer: Any = None,
                 shortlist: int | None = None) -> None:
        if (proposer is None) != (shortlist is None):
            raise ValueError("proposer and shortlist go together: give both or neither")
        if proposer is not None and not (callable(getattr(proposer, "rank", None))
                                         and callable(getattr(proposer, "reset", None))):
            raise TypeError(f"a proposer has reset(task) and rank(observation, targets, values); got {proposer!r}")
        self.proposer = proposer
        self.shortlist = None if shortlist is None else check_count(shortlist, "shortlist", 1)
        self.objective = check_choice(objective, GREEDY_OBJECTIVES, "objective")
        self.samples = check_count(samples, "samples", 1)
        self.value_grid = np.array([check_real(v, "value_grid member", -1.0) for v in value_grid])
        if not self.value_grid.size or (self.value_grid > 1.0).any():
            raise ValueError("value_grid must hold fractions of value_bound in [-1, 1]")
        self.observe = bool(observe)
        self.seed = check_count(seed, "seed", 0)
        self._episode = 0
        self.evaluations = 0

    def reset(self, task: TaskSpec) -> None:
        super().reset(task)
        self._episode += 1
        if self.proposer is not None:
            self.proposer.reset(task)

    def candidates(self) -> tuple[np.ndarray, np.ndarray]:
        """``(targets, values)`` of every candidate design (target ``-1``: observe)."""
        targets = np.repeat(np.arange(self.d), self.value_grid.size)
        values = np.tile(self.value_grid * self.value_bound, self.d)
        if self.observe:
            targets, values = np.append(targets, -1), np.append(values, 0.0)
        return targets, values

    def expected_gains(self, observation: Mapping[str, Any], targets: np.ndarray | None = None,
                       values: np.ndarray | None = None) -> np.ndarray:
        """Monte-Carlo expectation of the objective's quantity after each candidate, ``(C,)``.

        ``targets`` and ``values`` (target ``-1``: observe) replace :meth:`candidates`, e.g. a
        shortlist a policy proposes; they see the same posterior DAG draws as the full set would.
        """
        stats = observed_stats(observation)
        rng = np.random.default_rng(np.random.SeedSequence([self.seed, self._episode, self.step]))
        dags = sample_dags(bge_local_scores(stats, max_parents=self.max_parents), self.samples, rng=rng)
        if targets is None or values is None:
            targets, values = self.candidates()
        outcomes = sample_predictive(stats, dags, targets, values, rng=rng)  # (K, C, d)
        k, c, d = outcomes.shape
        lead = (k, c)
        batch = BGeStats(np.broadcast_to(stats.count, lead + (d,)), np.broadcast_to(stats.mean, lead + (d, d)),
                         np.broadcast_to(stats.scatter, lead + (d, d, d)))
        intervened = np.broadcast_to(targets[:, None] == np.arange(d)[None, :], lead + (d,))
        after = batch.add_row(outcomes, np.ascontiguousarray(intervened))
        flat = [a.reshape(k * c, *a.shape[2:]) for a in (after.count, after.mean, after.scatter)]
        step = max(1, _EVALUATION_ENTRIES // (d << (d - 1)))  # posteriors per call: memory bounded at any d
        after_row = np.concatenate([
            _objective(edge_posterior(bge_local_scores(BGeStats(*(a[i:i + step] for a in flat)),
                                                       max_parents=self.max_parents)), self.objective)
            for i in range(0, k * c, step)])
        self.evaluations += k * c
        return after_row.reshape(k, c).mean(axis=0)

    def designs(self, observation: Mapping[str, Any]) -> list[tuple[int | None, float]]:
        """The best candidate by expected objective minus its node's cost; a batch takes the ``k`` best on distinct nodes.

        (Each candidate is valued as one more row on its own: for a batch, the top ``k`` of those
        values, a myopic stand-in for the joint choice; "observe" may repeat.)
        """
        targets, values = self.candidates()
        if self.proposer is not None:
            spent = getattr(self.proposer, "evaluations", 0)
            rank = np.asarray(self.proposer.rank(observation, targets, values), dtype=np.float64)
            self.evaluations += getattr(self.proposer, "evaluations", 0) - spent  # a posterior of its own counts too
            if rank.shape != targets.shape:
                raise ValueError(f"the proposer ranked {rank.shape} candidates, not {targets.shape}")
            kept = np.sort(np.argsort(-rank, kind="stable")[:self.shortlist])  # in the candidates' order
            targets, values = targets[kept], values[kept]
        return self.best_of(observation, targets, values)

    def best_of(self, observation: Mapping[str, Any], targets: np.ndarray,
                values: np.ndarray) -> list[tuple[int | None, float]]:
        """:meth:`designs` over the given candidates only (``targets``: node or ``-1`` to observe; ``values``)."""
        targets, values = np.asarray(targets, dtype=np.int64), np.asarray(values, dtype=np.float64)
        gains = (self.expected_gains(observation, targets, values)
                 - np.where(targets >= 0, self.costs[np.maximum(targets, 0)], 0.0))
        chosen: list[tuple[int | None, float]] = []
        for best in np.argsort(-gains, kind="stable"):
            target = int(targets[best])
            if target >= 0 and any(t == target for t, _ in chosen):
                continue
            chosen.append((None if target < 0 else target, float(values[best])))
            if len(chosen) == self.k:
                break
        return chosen


def shortlist_samples(d: int, shortlist: int, share: float = 0.1) -> int:
    """Samples per shortlisted design so that a decision of :class:`GreedyDesigner` with a ``shortlist`` costs at most
    ``share`` of full greedy's ``(2 d + 1) x 8`` posterior evaluations (at least one sample).

    >>> shortlist_samples(10, 2)  # 2 x 8 = 16 <= 168 / 10
    8
    """
    return max(1, math.floor((2 * d + 1) * 8 * share + 1e-9) // shortlist)


def _objective(posterior: GraphPosterior, objective: str) -> np.ndarray:
    """The quantity :class:`GreedyDesigner` maximises, for every posterior of a batch."""
    p = posterior.edge_probs
    if objective == "confidence":
        return np.asarray(expected_correct_entries(p))
    if objective == "information_gain":
        return -posterior.entropy
    off = ~np.eye(p.shape[-1], dtype=bool)
    return (p**2 + (1.0 - p) ** 2)[..., off].sum(axis=-1)
