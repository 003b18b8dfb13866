"""Method baselines for CausalArena's submit mode: one discovery-menu method answers the dataset.

How a method receives the data (our reading of the paper's "standardized tabular inputs")
------------------------------------------------------------------------------------------
The agent reads the exported split as one numeric table: the rows as exported, the real
variables only (``observation["variables"]``; padding slots dropped) in the view's fixed random
column order, each column z-scored over all rows of the split (mean 0, standard deviation 1),
and, for the mask-aware methods (:data:`causal_gym.discovery.INTERVENTIONAL_METHODS`) on an
``obs+int`` split, the binary intervention mask beside it. Every method gets the same table.
Why z-score: the answer should not depend on the units a scenario is written in (the formula
cards use physical units whose scales differ by up to four orders of magnitude), and scale-
dependent methods (NOTEARS, DAGMA, RandomRegress' Lasso) otherwise pick up the variance order
of simulated data rather than its causal structure (Reisach et al. 2021, "Beware of the
simulated DAG"). PC with Fisher-z, GES and GIES with the Gaussian BIC and DirectLiNGAM are
invariant to rescaling columns, so for them it changes nothing. ``standardize=False`` passes the
raw values. The graph is embedded back into the padded adjacency and submitted.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import numpy as np
from gymnasium import spaces

from causal_gym.harness.agent import TaskSpec

__all__ = ["WRAPPER_OPTIONS", "NOTEARS_MLP_SECONDS", "MethodAgent", "standardize_columns"]

NOTEARS_MLP_SECONDS = 3000.0
"""NOTEARS-MLP's own wall-time budget in the arena (``max_seconds``): below the paper's one hour per
unit, so a slow fit ends with its current graph (``usage()["stopped"] == "max_seconds"``) rather
than being killed as a timeout with no graph."""

WRAPPER_OPTIONS: Mapping[str, Mapping[str, Any]] = MappingProxyType({
    "ges_fast": MappingProxyType({"ridge": 1e-8}),
    "gies_fast": MappingProxyType({"ridge": 1e-8}),
    "xges": MappingProxyType({"ridge": 1e-8}),
    "notears_mlp": MappingProxyType({"max_seconds": NOTEARS_MLP_SECONDS}),
    "sdcd": MappingProxyType({"max_seconds": NOTEARS_MLP_SECONDS}),
})
"""The arena's wrapper defaults beyond the methods' own (the paper's Appendix B.4 "wrapper
defaults"), used by :class:`MethodAgent` and the tool env's menu. GES, GIES and XGES score with a
relative variance floor of 1e-8 (:mod:`causal_gym.discovery.bic_score`): grounded scenarios with
formula nodes computed exactly from their parents (8 of the first release's 20 cards) have
collinear data that would otherwise be refused; on the other 12 of those 20 the graphs equal those
without the floor. NOTEARS-MLP and SDCD get :data:`NOTEARS_MLP_SECONDS`."""


def standardize_columns(data: np.ndarray) -> np.ndarray:
    """Each column minus its mean, divided by its standard deviation (a constant column stays 0).

    Examples
    --------
    >>> standardize_columns(np.array([[1.0, 10.0], [3.0, 10.0]])).tolist()
    [[-1.0, 0.0], [1.0, 0.0]]
    """
    centred = data - data.mean(axis=0)
    scale = centred.std(axis=0)
    return centred / np.where(scale > 0, scale, 1.0)


class MethodAgent:
    """Submits the output of discovery method ``method`` (e.g. ``"pc"``, ``"gies_fast"``) with ``options``.

    ``usage()`` reports the method's wall and CPU seconds of the episode, the numerical
    RuntimeWarnings it raised (counted by :func:`causal_gym.discovery.run` instead of printed over the
    progress bars) and, for a method with a stopping rule of its own (NOTEARS-MLP), why it stopped
    (``"stopped"``, e.g. ``"max_seconds"`` for a graph returned at the time limit); the run store
    keeps it per unit, with ``method_code``, the digest of a method of your own's code
    (:attr:`causal_gym.discovery.Method.digest`).

    Parameters
    ----------
    method : str
        A name of :func:`causal_gym.discovery.methods` (or ``"cdfm"`` with ``checkpoint=``), a name given
        with :func:`causal_gym.discovery.register`, or an import path ``"package.module:function"`` of a
        method of your own (what worker processes import).
    standardize : bool
        Z-score the columns before the method sees them (default; see the module docstring).
    **options
        The method's options, over :data:`WRAPPER_OPTIONS`.
    """

    def __init__(self, method: str = "pc", standardize: bool = True, **options: Any) -> None:
        from causal_gym.discovery import check_method, resolve

        check_method(method, options)  # cdfm without a checkpoint fails here, saying how to get one
        if not isinstance(standardize, bool):
            raise ValueError(f"standardize must be True or False, got {standardize!r}")
        self.method, self.standardize = method, standardize
        self._method = resolve(method)
        self.options = {**WRAPPER_OPTIONS.get(method, {}), **options}
        self._usage: dict[str, Any] = {}

    def reset(self, task: TaskSpec) -> None:
        space = task.observation_space
        if not isinstance(space, spaces.Dict) or set(space.spaces) < {"data", "mask", "variables"}:
            raise ValueError(f"MethodAgent plays CausalArena's submit mode, not {task.env_id}")
        self._usage = {}

    def act(self, observation: Mapping[str, Any], info: Mapping[str, Any]) -> np.ndarray:
        from causal_gym.discovery import run

        real = np.flatnonzero(np.asarray(observation["variables"], dtype=bool))
        data = np.asarray(observation["data"], dtype=float)[:, real]
        if self.standardize:
            data = standardize_columns(data)
        mask = np.asarray(observation["mask"], dtype=bool)[:, real]
        extra = {"mask": mask} if self._method.interventional and mask.any() else {}
        wall, cpu = time.perf_counter(), time.process_time()
        result = run(self._method, data, **extra, **self.options)
        graph = result.graph
        self._usage = {"method": self.method, "method_seconds": time.perf_counter() - wall,
                       "method_cpu_seconds": time.process_time() - cpu, "standardized": self.standardize,
                       "numerical_warnings": dict(result.warnings)}
        if not self._method.builtin:
            self._usage["method_code"] = self._method.digest
        if "stopped" in result.extras:
            self._usage["stopped"] = result.extras["stopped"]
        width = len(observation["variables"])
        answer = np.zeros((width, width), dtype=np.int8)
        answer[np.ix_(real, real)] = graph
        return answer

    def usage(self) -> dict[str, Any]:
        """The method's wall and CPU seconds and numerical warnings in this episode (empty before it ran)."""
        return dict(self._usage)
