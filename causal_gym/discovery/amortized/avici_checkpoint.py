"""AVICI (Lorch et al. 2022), the amortized causal discovery network, behind our amortized interface.

Everything about the network is the ``avici`` package's own (JAX/haiku): its checkpoint format (a
folder holding ``kwargs.json`` and one or more pickled ``*.pkl`` model states, the last in name order
being read), its loader (``avici.utils.load.load_checkpoint``), its model (``InferenceModel`` around
``BaseModel``, wrapped by ``avici.AVICIModel``, whose call standardizes, stacks the intervention
indicators as the second channel and returns edge probabilities), and its decision threshold (0.5,
strict, as ``AVICIModel(..., return_probs=False)``). This module only finds the checkpoint on disk,
never on the network, and keeps the load apart from inference.

Two packaging facts shape the import. ``avici`` 1.0.7's metadata pins ``numpy<2``, ``pyarrow==10.0.1``
and ``tensorflow``, so it is installed with ``--no-deps`` beside jax 0.5 (its inference path imports
``jax.sharding.PositionalSharding``, deprecated in jax 0.6), dm-haiku, optax and deepdiff; and its ``__init__`` imports the
training buffer (``pyarrow.plasma``, gone since pyarrow 12) and simulation helpers that inference never
uses. So when ``import avici`` fails, the package's folder is registered without running its
``__init__`` and only the inference modules (``avici.pretrain``, ``avici.model``, ``avici.backbone``
for unpickling) are imported.

A checkpoint is a pickle: load only ones you trust (the package's own loader reads them the same way).

Orientation: the package's ``g[i, j] = 1`` is the edge ``i -> j`` (its simulators make ``x_j`` a
function of the ``i`` with ``g[i, j] = 1``, and ``AVICIModel`` returns ``[i, j]`` in that sense); its
intervention mask ``interv[r, j] = 1`` marks node ``j`` as a target in row ``r``. Both are ours, so
nothing is transposed.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import sys
import time
import types
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from causal_gym._validation import check_data
from causal_gym.discovery.amortized.digest import files_digest
from causal_gym.discovery.amortized.result import AmortizedResult

__all__ = ["CHECKPOINT_ENV", "PUBLISHED_CHECKPOINTS", "AVICIMethod", "checkpoint_folder", "import_avici", "ready",
           "require", "fingerprint"]

CHECKPOINT_ENV = "CAUSAL_GYM_AVICI_CHECKPOINT"
"""Environment variable naming the local checkpoint folder when ``load('avici')`` gets no path."""

PUBLISHED_CHECKPOINTS = ("neurips-linear", "neurips-rff", "neurips-grn", "scm-v0")
"""``avici.load_pretrained(download=...)`` names; each is a folder of the Hugging Face repo ``larslorch/avici``."""

COUNT_CHECKPOINTS = ("neurips-grn",)
"""Published checkpoints trained on gene-expression counts (the package standardizes counts differently)."""

_HOW_TO_GET_IT = (
    "download one of the package's published checkpoints (" + ", ".join(PUBLISHED_CHECKPOINTS) + "), e.g. "
    "`huggingface-cli download larslorch/avici --include 'scm-v0/*' --local-dir avici-checkpoints` or "
    "`avici.load_pretrained(download='scm-v0', cache_path=...)` on a machine with network access, then pass the "
    f"folder holding kwargs.json and the .pkl as load('avici', path) or set {CHECKPOINT_ENV} to it")

_INSTALL = ("the 'avici' amortized method needs the avici package and its inference dependencies: "
            "pip install 'jax>=0.5,<0.6' 'jaxlib>=0.5,<0.6' 'dm-haiku>=0.0.14' optax deepdiff && "
            "pip install --no-deps avici==1.0.7 (its metadata pins numpy<2 and tensorflow, which inference does not need)")


def checkpoint_folder(path: str | Path | None = None) -> Path:
    """The checkpoint folder: ``path``, else ``$CAUSAL_GYM_AVICI_CHECKPOINT``; it must hold ``kwargs.json`` and a ``.pkl``.

    Raises
    ------
    FileNotFoundError
        Saying where the published checkpoints are and how to point to one, when neither names such a folder.
    """
    chosen = path if path is not None else os.environ.get(CHECKPOINT_ENV) or None
    if chosen is None:
        raise FileNotFoundError(f"AVICI needs a local checkpoint folder and got none: {_HOW_TO_GET_IT}")
    folder = Path(chosen).expanduser().resolve()
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a folder: {_HOW_TO_GET_IT}")
    missing = [] if (folder / "kwargs.json").is_file() else ["kwargs.json"]
    if not any(".pkl" in p.name for p in folder.iterdir()):
        missing.append("a .pkl model state")
    if missing:
        raise FileNotFoundError(f"{folder} is not an AVICI checkpoint folder (no {' or '.join(missing)}): "
                                f"{_HOW_TO_GET_IT}")
    return folder


def import_avici() -> types.ModuleType:
    """The ``avici`` package with its inference modules imported (see the module docstring for why not always ``import avici``).

    Raises
    ------
    ImportError
        With the install command, when avici or jax/haiku/optax/deepdiff are missing.
    """
    try:
        import avici
    except ImportError:
        sys.modules.pop("avici", None)
        spec = importlib.util.find_spec("avici")
        if spec is None or spec.submodule_search_locations is None:
            raise ImportError(_INSTALL) from None
        avici = types.ModuleType("avici")  # the package's folder without its __init__ (training/plotting imports)
        avici.__path__ = list(spec.submodule_search_locations)
        avici.__spec__ = spec
        avici.__file__ = spec.origin
        sys.modules["avici"] = avici
    try:
        for name in ("avici.pretrain", "avici.model", "avici.backbone", "avici.utils.load"):
            importlib.import_module(name)
    except ImportError as err:
        raise ImportError(f"{_INSTALL} ({err})") from err
    return avici


def ready() -> bool:
    """Whether ``load('avici')`` can work without a path: the package imports and the variable names a checkpoint."""
    try:
        checkpoint_folder()
        import_avici()
    except (ImportError, FileNotFoundError):
        return False
    return True


def require(path: str | Path | None = None) -> Path:
    """The checkpoint folder ``load('avici', path)`` would open, checked before anything is loaded.

    The packages are found, not imported (importing jax takes seconds, and menus ask this when built).

    Raises
    ------
    FileNotFoundError
        No checkpoint configured (:func:`checkpoint_folder`).
    ImportError
        avici or jax is not installed.
    """
    folder = checkpoint_folder(path)
    if any(importlib.util.find_spec(name) is None for name in ("avici", "jax", "haiku")):
        raise ImportError(_INSTALL)
    return folder


def fingerprint(path: str | Path | None = None) -> str:
    """SHA-256 over the checkpoint's ``kwargs.json`` and model states: what a cache key holds instead
    of the folder, so a replaced checkpoint is a new key and no key carries the path."""
    folder = checkpoint_folder(path)
    return files_digest(sorted(p for p in folder.iterdir() if p.name == "kwargs.json" or ".pkl" in p.name))


class AVICIMethod:
    """An AVICI network from a local checkpoint folder (see :func:`checkpoint_folder`).

    ``threshold`` defaults to the package's 0.5 (``p > threshold`` is an edge). ``expects_counts``
    selects the package's standardizer (counts: log-CPM; else z-scores per column); None reads it
    from the folder name (True for ``neurips-grn``, the package's only count checkpoint). ``devices``
    is passed to the package's call (None: JAX's default backend); the call is not sharded, so any
    ``n`` works. The first call for each data shape includes JAX's compilation.
    """

    name = "avici"

    def __init__(self, path: str | Path | None = None, threshold: float = 0.5, expects_counts: bool | None = None,
                 devices: str | None = None) -> None:
        if not 0.0 < threshold < 1.0:
            raise ValueError(f"threshold must lie in (0, 1), got {threshold}")
        folder = checkpoint_folder(path)
        start = time.perf_counter()
        avici = import_avici()
        from avici.model import BaseModel, InferenceModel
        from avici.pretrain import AVICIModel
        from avici.utils.data_jax import jax_standardize_count_simple, jax_standardize_default_simple
        from avici.utils.load import load_checkpoint

        counts = folder.name in COUNT_CHECKPOINTS if expects_counts is None else bool(expects_counts)
        # avici.load_pretrained(checkpoint_dir=...) also asserts a kwargs.json in the folder's *parent*, which
        # the published layout lacks, and prints; so its steps are taken here with its own pieces.
        state, config = load_checkpoint(folder)
        network_kwargs = config["neural_net_kwargs"]
        network_kwargs = network_kwargs.get("model_kwargs", network_kwargs)  # older checkpoints nest them
        accepted = inspect.signature(InferenceModel).parameters
        model_kwargs = {k: v for k, v in config["inference_model_kwargs"].items() if k in accepted}
        inference_model = InferenceModel(**model_kwargs, model_class=BaseModel, model_kwargs=dict(network_kwargs))
        self.model = AVICIModel(params=state.params, model=inference_model, expects_counts=counts,
                                standardizer=jax_standardize_count_simple if counts else jax_standardize_default_simple)
        self.package_version = getattr(avici, "__version__", None) or _version("avici")
        self.folder = folder
        self.expects_counts = counts
        self.devices = devices
        self.threshold = float(threshold)
        self.load_seconds = time.perf_counter() - start

    def infer(self, data: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        """``(d, d)`` edge probabilities (``[i, j]`` for ``i -> j``, zero diagonal); ``mask[r, j]`` marks node
        ``j`` intervened on in row ``r`` (AVICI's second input channel)."""
        x = check_data(data, min_rows=2).astype(np.float32)
        interv = None
        if mask is not None:
            m = np.asarray(mask)
            if m.shape != x.shape:
                raise ValueError(f"mask must have the data's shape {x.shape}, got {m.shape}")
            if m.dtype != bool and not (np.issubdtype(m.dtype, np.integer) and np.isin(m, (0, 1)).all()):
                raise ValueError(f"mask must be boolean (or 0/1 integers), got dtype {m.dtype}")
            interv = m.astype(np.float32)  # a copy: the package rounds its mask in place
        p = np.array(self.model(x, interv=interv, devices=self.devices, shard_if_possible=False), dtype=float)
        np.fill_diagonal(p, 0.0)
        return p

    def run(self, data: np.ndarray, mask: np.ndarray | None = None) -> AmortizedResult:
        start = time.perf_counter()
        p = self.infer(data, mask)
        seconds = time.perf_counter() - start
        return AmortizedResult(self.name, p, (p > self.threshold).astype(np.int8), self.threshold, self.load_seconds,
                               seconds, extras={"interventional": mask is not None})

    def run_many(self, datasets: Sequence[np.ndarray],
                 masks: Sequence[np.ndarray | None] | None = None) -> list[AmortizedResult]:
        if masks is not None and len(masks) != len(datasets):
            raise ValueError(f"masks must be None or one per dataset ({len(datasets)}), got {len(masks)}")
        return [self.run(data, None if masks is None else masks[i]) for i, data in enumerate(datasets)]


def _version(package: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return None
