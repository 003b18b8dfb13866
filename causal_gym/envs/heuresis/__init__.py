"""Heuresis: repair episodes over a working graph on anonymous data from six mechanism families.

Reads top-down: :mod:`.families` (what generates an instance), :mod:`.instances` (the instances and
their hidden record), :mod:`.references` (best chosen algorithms, ideal oracle, headroom, router).
"""

import importlib

_LAZY = {name: "causal_gym.envs.heuresis.env" for name in ("DEFAULT_BUDGETS", "REWARDS", "HeuresisEnv")}

__all__ = ["DEFAULT_BUDGETS", "REWARDS", "HeuresisEnv"]

def __getattr__(name: str) -> object:
    """The names above, imported on first use: importing the package (e.g. for its spec) stays light."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(__all__)

