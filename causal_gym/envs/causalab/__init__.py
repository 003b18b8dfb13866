"""CausaLab: a crystal laboratory with a hidden SCM, shift interventions on a manipulator crystal
and a held-out reactor crystal whose resonance frequency the agent predicts.

Reads top-down: :mod:`.world` (the hidden mechanism, crystals, manipulator, episodes),
:mod:`.suites` (the published settings and their seeded suites), :mod:`.loader` (the original
JSONL configs, for comparison runs), :mod:`.hypothesis` (the DSL), :mod:`.scoring` (metrics),
:mod:`.env` (the Gymnasium env) and :mod:`.baselines` (scripted agents).
"""

from causal_gym.envs.causalab.env import CausaLabEnv
from causal_gym.envs.causalab.loader import LabConfig, load_jsonl
from causal_gym.envs.causalab.suites import SETTINGS, EpisodeSpec, suite, train_episode, train_seeds
from causal_gym.envs.causalab.world import (
    DECOY_READINGS,
    FREQ,
    FREQ_LABEL,
    MAX_TARGET,
    PROPERTIES,
    Crystal,
    Episode,
    HiddenConfig,
    HiddenSpec,
    InterventionResult,
    LabSCM,
    Manipulator,
    Record,
    Setting,
    episode_from_scm,
    golden_records,
    hidden_config,
    make_episode,
    prior_records,
    sample_lab_scm,
)

__all__ = [
    "CausaLabEnv",
    "PROPERTIES",
    "FREQ",
    "FREQ_LABEL",
    "DECOY_READINGS",
    "MAX_TARGET",
    "LabSCM",
    "sample_lab_scm",
    "Record",
    "Crystal",
    "prior_records",
    "HiddenConfig",
    "hidden_config",
    "InterventionResult",
    "Manipulator",
    "golden_records",
    "HiddenSpec",
    "Setting",
    "Episode",
    "make_episode",
    "episode_from_scm",
    "SETTINGS",
    "EpisodeSpec",
    "suite",
    "train_seeds",
    "train_episode",
    "LabConfig",
    "load_jsonl",
]
