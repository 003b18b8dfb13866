"""CDFM (Qiao et al. 2026), the released causal discovery foundation model, behind our amortized interface.

Everything about the network is the ``cdfm-base`` package's own: its checkpoint format (a folder
holding ``config.json`` and ``model.safetensors``), its loader, its preprocessing (z-scores per
column) and its calibrated threshold (a logistic function of the off-diagonal probabilities'
summary statistics whose coefficients the checkpoint's ``config.json`` carries, so the threshold
changes per dataset). This module only finds the checkpoint on disk, never on the network (a run
stays offline and reproducible), keeps the load apart from inference, and checks that the weights
cover the network (the package's loader only logs missing weights, which would leave them random).

Orientation: the package's graph head scores cause embedding ``i`` against effect embedding ``j``
in ``W[i, j]``, and its own metrics and edge lists read ``[i, j]`` as ``i -> j``: the same as ours,
so nothing is transposed.
"""

from __future__ import annotations

import importlib.util
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from causal_gym._validation import check_data
from causal_gym.discovery.amortized.digest import files_digest
from causal_gym.discovery.amortized.result import AmortizedResult

__all__ = ["CHECKPOINT_ENV", "RELEASED_CHECKPOINT", "CDFMMethod", "checkpoint_folder", "fingerprint", "ready",
           "require"]

CHECKPOINT_ENV = "CAUSAL_GYM_CDFM_CHECKPOINT"
"""Environment variable naming the local checkpoint folder when ``load('cdfm')`` gets no path."""

RELEASED_CHECKPOINT = "DMIRLAB/CDFM"
"""The released checkpoint on the Hugging Face Hub."""

_HOW_TO_GET_IT = (
    f"download the released checkpoint {RELEASED_CHECKPOINT} from the Hugging Face Hub (for example "
    f"`huggingface-cli download {RELEASED_CHECKPOINT} --local-dir cdfm-checkpoint`), then pass that folder as "
    f"load('cdfm', path) or set {CHECKPOINT_ENV} to it")


_NO_PACKAGE = ("the 'cdfm' amortized method needs the cdfm-base package: pip install cdfm-base (it comes with "
               "causal-gym[arena])")


def checkpoint_folder(path: str | Path | None = None) -> Path:
    """The checkpoint folder: ``path``, else ``$CAUSAL_GYM_CDFM_CHECKPOINT``; it must hold both files.

    Raises
    ------
    FileNotFoundError
        Saying where the released checkpoint is and how to point to it, when neither names a
        folder holding ``config.json`` and ``model.safetensors``.
    """
    chosen = path if path is not None else os.environ.get(CHECKPOINT_ENV) or None
    if chosen is None:
        raise FileNotFoundError(f"CDFM needs a local checkpoint folder and got none: {_HOW_TO_GET_IT}")
    folder = Path(chosen).expanduser().resolve()  # absolute, so the package never reads it as a Hub id
    missing = [name for name in ("config.json", "model.safetensors") if not (folder / name).is_file()]
    if missing:
        raise FileNotFoundError(f"{folder} is not a CDFM checkpoint folder (no {' or '.join(missing)}): "
                                f"{_HOW_TO_GET_IT}")
    return folder


def ready() -> bool:
    """Whether ``load('cdfm')`` can work without a path: the variable names a checkpoint and the package
    is installed (found, not imported: importing it imports torch, and menus ask this often)."""
    try:
        checkpoint_folder()
    except FileNotFoundError:
        return False
    return importlib.util.find_spec("cdfm") is not None


def require(path: str | Path | None = None) -> Path:
    """The checkpoint folder ``load('cdfm', path)`` would open, before anything is loaded.

    Raises
    ------
    FileNotFoundError
        No checkpoint configured (:func:`checkpoint_folder`).
    ImportError
        ``cdfm-base`` is not installed.
    """
    folder = checkpoint_folder(path)
    if importlib.util.find_spec("cdfm") is None:
        raise ImportError(_NO_PACKAGE)
    return folder


def fingerprint(path: str | Path | None = None) -> str:
    """SHA-256 over the checkpoint's ``config.json`` and ``model.safetensors``: what a cache key holds
    instead of the folder, so a replaced checkpoint is a new key and no key carries the path."""
    folder = checkpoint_folder(path)
    return files_digest(folder / name for name in ("config.json", "model.safetensors"))


class CDFMMethod:
    """The released CDFM network from a local checkpoint folder (see :func:`checkpoint_folder`).

    ``threshold`` None uses the checkpoint's calibrated, per-dataset threshold (the paper's default);
    a number in (0, 1) fixes it. ``self.threshold`` is NaN in the calibrated case; each result
    carries the threshold it used.
    """

    name = "cdfm"

    def __init__(self, path: str | Path | None = None, threshold: float | None = None, device: str = "cpu") -> None:
        try:
            import cdfm
            import torch
        except ImportError as err:
            raise ImportError(_NO_PACKAGE) from err
        if threshold is not None and not 0.0 < threshold < 1.0:
            raise ValueError(f"threshold must be None (calibrated) or lie in (0, 1), got {threshold}")
        folder = checkpoint_folder(path)
        start = time.perf_counter()
        self.device = torch.device(device)
        self.model, self.config, calibration = cdfm.load_checkpoint(str(folder), self.device)
        _check_weights(self.model, folder / "model.safetensors")
        if threshold is None and calibration is None:
            raise ValueError(f"{folder / 'config.json'} has no calibration_config, so there is no calibrated "
                             "threshold: pass threshold=<a probability in (0, 1)>")
        self.calibration = calibration
        self.threshold = float("nan") if threshold is None else float(threshold)
        self.load_seconds = time.perf_counter() - start

    def logits(self, data: np.ndarray) -> np.ndarray:
        """``(d, d)`` edge logits (``[i, j]`` for ``i -> j``, zero diagonal), preprocessed as the package does."""
        import cdfm

        standardized, _, _, _ = cdfm.preprocess(check_data(data, min_rows=2))
        return np.asarray(cdfm.predict(self.model, standardized, self.device).logits, dtype=float)

    def infer(self, data: np.ndarray) -> np.ndarray:
        return _probabilities(self.logits(data))

    def threshold_for(self, logits: np.ndarray) -> float:
        """The threshold a dataset's logits get: the fixed one, else the checkpoint's calibration."""
        if not np.isnan(self.threshold):
            return self.threshold
        from cdfm import suggest_threshold

        assert self.calibration is not None  # checked at load
        return float(suggest_threshold(logits, weights=self.calibration["coefficients"],
                                       features=self.calibration["feature_names"]))

    def run(self, data: np.ndarray) -> AmortizedResult:
        start = time.perf_counter()
        logits = self.logits(data)
        p = _probabilities(logits)
        threshold = self.threshold_for(logits)
        seconds = time.perf_counter() - start
        return AmortizedResult(self.name, p, (p > threshold).astype(np.int8), threshold, self.load_seconds, seconds,
                               extras={"logits": logits, "calibrated": bool(np.isnan(self.threshold))})

    def run_many(self, datasets: Sequence[np.ndarray]) -> list[AmortizedResult]:
        return [self.run(data) for data in datasets]


def _probabilities(logits: np.ndarray) -> np.ndarray:
    # the package's own squashing (clipped so exp never overflows), diagonal zeroed as the protocol asks
    p = 1.0 / (1.0 + np.exp(-np.clip(logits, -50.0, 50.0)))
    np.fill_diagonal(p, 0.0)
    return p


def _check_weights(model: Any, weights: Path) -> None:
    from safetensors import safe_open

    with safe_open(str(weights), framework="pt") as handle:
        stored = set(handle.keys())
    missing = sorted(set(model.state_dict()) - stored)
    if missing:
        raise ValueError(f"{weights} lacks {len(missing)} of the network's weights (e.g. {missing[:3]}): it does "
                         "not match the architecture its config.json declares")

