"""CausaLab world model: the hidden crystal SCM, the three crystals and the property manipulator.

Reads top-down: what the hidden mechanism is (:class:`LabSCM`), how one is drawn
(:func:`sample_lab_scm`), what the crystals are (:class:`Crystal`, :func:`prior_records`), how the
manipulator reacts to shift interventions and the hidden disturbance (:class:`Manipulator`), the
offline Golden chain (:func:`golden_records`) and finally everything one episode needs
(:class:`Setting`, :func:`make_episode`). There is no Gymnasium code here: the env plays on top.

The mechanism (spec ``shared/specs/causalab.md``)
-------------------------------------------------
Nodes are ``n - 1`` crystal properties from :data:`PROPERTIES` plus the target :data:`FREQ`.
Every non-frequency property is controllable; frequency never is. Each edge ``p -> x`` adds a
term to ``x``: ``c * p`` (linear) or ``c2 * p**2 + c1 * p`` (quadratic). The intercept of the
frequency is ``base_freq``; the intercept of a controllable node is its *exogenous term*, which
differs between crystals (for a root it is the node's value). Every value is rounded to 2
decimals (``numpy.round``) before its children use it. Nothing is clamped.

Random streams
--------------
Every draw comes from a ``numpy.random.Generator`` passed in by the caller; :func:`make_episode`
derives one independent child of ``SeedSequence(seed)`` per component (see its docstring), so an
episode is a pure function of ``(seed, setting)``.

The package keeps that order, one module per part: :mod:`.mechanism`, :mod:`.sampler`,
:mod:`.crystals`, :mod:`.hidden`, :mod:`.manipulator`, :mod:`.golden`, :mod:`.episodes`.
"""

from __future__ import annotations

from causal_gym.envs.causalab.world.crystals import Crystal, Record, draw_exogenous, prior_records
from causal_gym.envs.causalab.world.episodes import Episode, HiddenSpec, Setting, episode_from_scm, make_episode
from causal_gym.envs.causalab.world.golden import (
    GOLDEN_EMPTY_SHARE,
    GOLDEN_LENGTH_RULES,
    GOLDEN_ONE_PASS_SHARE,
    golden_records,
)
from causal_gym.envs.causalab.world.hidden import HiddenConfig, hidden_config, hidden_priority
from causal_gym.envs.causalab.world.manipulator import InterventionResult, Manipulator
from causal_gym.envs.causalab.world.mechanism import (
    DECOY_READINGS,
    FREQ,
    FREQ_LABEL,
    HIDDEN_VALUES,
    KINDS,
    MAX_TARGET,
    PROPERTIES,
    Coefficient,
    LabSCM,
)
from causal_gym.envs.causalab.world.sampler import sample_equations, sample_lab_graph, sample_lab_scm

__all__ = [
    "PROPERTIES",
    "FREQ",
    "FREQ_LABEL",
    "KINDS",
    "Coefficient",
    "DECOY_READINGS",
    "MAX_TARGET",
    "HIDDEN_VALUES",
    "LabSCM",
    "sample_lab_graph",
    "sample_equations",
    "sample_lab_scm",
    "Record",
    "Crystal",
    "draw_exogenous",
    "prior_records",
    "HiddenConfig",
    "hidden_priority",
    "hidden_config",
    "InterventionResult",
    "Manipulator",
    "golden_records",
    "GOLDEN_LENGTH_RULES",
    "GOLDEN_ONE_PASS_SHARE",
    "GOLDEN_EMPTY_SHARE",
    "HiddenSpec",
    "Setting",
    "Episode",
    "make_episode",
    "episode_from_scm",
]
