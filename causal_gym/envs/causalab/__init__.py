"""CausaLab: a crystal laboratory with a hidden SCM, shift interventions on a manipulator crystal
and a held-out reactor crystal whose resonance frequency the agent predicts.

Reads top-down: :mod:`.world` (the hidden mechanism, crystals, manipulator, episodes),
:mod:`.suites` (the published settings and their seeded suites), :mod:`.loader` (the original
JSONL configs, for comparison runs), :mod:`.hypothesis` (the DSL), :mod:`.scoring` (metrics),
:mod:`.env` (the Gymnasium env) and :mod:`.baselines` (scripted agents).
"""

import importlib

_MODULES = {
    "causal_gym.envs.causalab.env": ("CausaLabEnv",),
    "causal_gym.envs.causalab.loader": ("LabConfig", "load_jsonl"),
    "causal_gym.envs.causalab.suites": ("SETTINGS", "EpisodeSpec", "suite", "train_episode", "train_seeds"),
    "causal_gym.envs.causalab.world": (
        "DECOY_READINGS", "FREQ", "FREQ_LABEL", "MAX_TARGET", "PROPERTIES", "Crystal", "Episode", "HiddenConfig",
        "HiddenSpec", "InterventionResult", "LabSCM", "Manipulator", "Record", "Setting", "episode_from_scm",
        "golden_records", "hidden_config", "make_episode", "prior_records", "sample_lab_scm",
    ),
}
_LAZY = {name: module for module, names in _MODULES.items() for name in names}

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


def __getattr__(name: str) -> object:
    """The names above, imported on first use: importing the package (e.g. for its spec) stays light."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(__all__)
