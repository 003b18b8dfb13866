"""causal_gym: Gymnasium environments for causal discovery.

Importing the package registers every environment id with Gymnasium, so
``gym.make("Heuresis-wild-v0")`` works after ``import causal_gym`` (and
``gym.make("causal_gym:Heuresis-wild-v0")`` works without it). Heavy dependencies
(causal-learn, lingam, torch, ray, openai) are imported lazily by the functions that use them,
so ``import causal_gym`` stays fast.

Long first-time computations (an uncached Heuresis instance's PC-KCI reference) are announced on
the ``"causal_gym"`` logger at INFO. Until the application configures logging itself (a handler
on the root logger), those lines go to stderr; ``logging.getLogger("causal_gym").setLevel(
logging.WARNING)`` silences them.
"""

from __future__ import annotations

import logging

from causal_gym.envs.registration import register_envs

__version__ = "0.1.0"


def _default_log_handler() -> None:
    """stderr for the package's INFO lines while the root logger has no handler (no duplicates after)."""
    package = logging.getLogger(__name__)
    if package.handlers:
        return
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("causal_gym: %(message)s"))
    handler.addFilter(lambda record: not logging.getLogger().handlers)
    package.addHandler(handler)
    if package.level == logging.NOTSET:
        package.setLevel(logging.INFO)


_default_log_handler()
register_envs()

__all__ = ["__version__"]
