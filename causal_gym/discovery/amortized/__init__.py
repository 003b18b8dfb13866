"""Amortized (pretrained) discovery: load a network once, then infer edge probabilities per dataset.

A batch method (:func:`causal_gym.discovery.run`) pays its whole cost per dataset; an amortized one
pays a load once and a forward pass per dataset, so results keep ``load_seconds`` apart from
``infer_seconds``. The output is a probability per ordered pair (``probabilities[i, j]`` for
``i -> j``), so AUPRC, thresholds and calibration are available; ``graph`` thresholds it.

=============  =================================================================================
name           method
=============  =================================================================================
``alternet``   our AVICI-style network (:mod:`.network`), trained on the declared prior of
               :mod:`.prior` by ``examples/train_amortized.py``; the checkpoint and its training
               card ship here. ``run(data, mask)`` feeds an intervention mask as its second channel
``cdfm``       the released CDFM network (Qiao et al. 2026) through the ``cdfm-base`` package
               (:mod:`.cdfm_checkpoint`); its checkpoint (Hugging Face ``DMIRLAB/CDFM``) is not
               shipped: pass its folder as ``path`` or set ``CAUSAL_GYM_CDFM_CHECKPOINT``. Its
               default threshold is the checkpoint's calibrated one, per dataset
``avici``      AVICI (Lorch et al. 2022) through the ``avici`` package (:mod:`.avici_checkpoint`);
               its published checkpoints (``avici.load_pretrained`` names, Hugging Face
               ``larslorch/avici``) are not shipped: pass a folder as ``path`` or set
               ``CAUSAL_GYM_AVICI_CHECKPOINT``. Threshold 0.5 as the package's; ``run(data, mask)``
               feeds an intervention mask as AVICI's second channel
=============  =================================================================================

:func:`available_methods` lists those that load without a ``path`` on this machine. :func:`alternet`
and :func:`cdfm` are the same networks as methods of :func:`causal_gym.discovery.run` (so menus and
the arena's submit mode offer them); ``cdfm`` is listed there only when its checkpoint is configured.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from causal_gym._validation import check_choice, check_data
from causal_gym.discovery.amortized import avici_checkpoint
from causal_gym.discovery.amortized.avici_checkpoint import AVICIMethod
from causal_gym.discovery.amortized.avici_checkpoint import ready as avici_ready
from causal_gym.discovery.amortized.cdfm_checkpoint import CDFMMethod, fingerprint, require
from causal_gym.discovery.amortized.cdfm_checkpoint import ready as cdfm_ready
from causal_gym.discovery.amortized.digest import files_digest
from causal_gym.discovery.amortized.result import AmortizedResult
from causal_gym.discovery.result import MethodOutput

__all__ = ["AmortizedMethod", "AmortizedResult", "AlterNetMethod", "CDFMMethod", "AVICIMethod", "AMORTIZED_METHODS",
           "load", "available_methods", "default_checkpoint", "alternet", "cdfm", "avici", "cache_options"]


class AmortizedMethod(Protocol):
    """What an amortized method offers after :func:`load`."""

    name: str
    threshold: float
    load_seconds: float

    def infer(self, data: np.ndarray) -> np.ndarray:
        """``(d, d)`` edge probabilities for one ``(n, d)`` dataset, zero diagonal."""
        ...

    def run(self, data: np.ndarray) -> AmortizedResult:
        """:meth:`infer` timed and thresholded."""
        ...

    def run_many(self, datasets: Sequence[np.ndarray]) -> list[AmortizedResult]:
        """:meth:`run` on each of ``k`` datasets, one load for all."""
        ...


def default_checkpoint() -> Path:
    """The shipped checkpoint (its card is ``alternet.card.json`` beside it)."""
    return Path(str(resources.files(__package__) / "alternet.pt"))


class AlterNetMethod:
    """:class:`.network.AlterNet` from a checkpoint: columns z-scored, statistics from every row,
    attention over at most ``max_rows`` rows (:func:`.network.pick_rows`).

    ``threshold`` (default: the checkpoint's, chosen on its dev set) applies to ``p_ij + p_ji``: a
    pair above it is an edge pointing the likelier way (:func:`.network.orient`), so the graph has
    no undirected edges. With ``acyclic`` (the default) a pair whose likelier way would close a
    directed cycle points the other way (a greedy acyclic orientation, strongest directions first),
    so the graph is a DAG with the same adjacencies; ``extras["reversed_edges"]`` counts those pairs
    and ``probabilities`` stay as the network gave them. ``max_rows`` (default: the rows it trained on) trades attention cost
    (quadratic in rows) for information; the statistics read every row whatever it is.

    With ``invariance`` (the default) and a mask that marks interventions, each adjacent pair with an
    intervened endpoint points the way the network's log-odds plus the likelihood evidence of the
    intervened rows favour (:func:`.invariance.direction_evidence`: GIES's principle, that an
    intervention leaves the other nodes' mechanisms unchanged); ``extras["invariance_turned"]``
    counts the pairs it turned against the network's likelier way. Without a mask, or with one that
    marks nothing, the graph is the same whatever ``invariance`` is.
    """

    name = "alternet"

    def __init__(self, path: str | Path | None = None, threshold: float | None = None,
                 max_rows: int | None = None, acyclic: bool = True, invariance: bool = True) -> None:
        import torch

        from causal_gym.discovery.amortized.network import AlterNet

        if threshold is not None and not 0.0 < threshold < 2.0:
            raise ValueError(f"threshold must lie in (0, 2) (it applies to p_ij + p_ji), got {threshold}")
        if max_rows is not None and max_rows < 2:
            raise ValueError(f"max_rows must be None or at least 2, got {max_rows}")
        start = time.perf_counter()
        state = torch.load(Path(path) if path is not None else default_checkpoint(), map_location="cpu")
        self.net = AlterNet(**state["hyper"])
        self.net.load_state_dict(state["weights"])
        self.net.eval()
        self.threshold = float(state["threshold"]) if threshold is None else float(threshold)
        self.max_rows = int(state["max_rows"]) if max_rows is None else max_rows
        self.acyclic = bool(acyclic)
        self.invariance = bool(invariance)
        self.load_seconds = time.perf_counter() - start

    def infer(self, data: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        import torch

        from causal_gym.discovery.amortized.network import inputs

        x = check_data(data)
        if mask is not None:
            mask = np.asarray(mask)
            if mask.shape != x.shape or not np.isin(mask, (0, 1)).all():
                raise ValueError(f"mask must be a 0/1 array of the data's shape {x.shape}, got shape {mask.shape}")
        with torch.no_grad():
            logits = self.net(inputs(x, mask, self.max_rows))[0]
        p = torch.sigmoid(logits).numpy().astype(float)
        np.fill_diagonal(p, 0.0)
        return p

    def run(self, data: np.ndarray, mask: np.ndarray | None = None) -> AmortizedResult:
        from causal_gym.discovery.amortized.invariance import direction_evidence
        from causal_gym.discovery.amortized.network import direction_weights, orient

        start = time.perf_counter()
        p = self.infer(data, mask)
        evidence = None
        if self.invariance and mask is not None and np.asarray(mask).any():  # parents from the network's DAG
            evidence = direction_evidence(data, mask, orient(p, self.threshold))
        graph = orient(p, self.threshold, self.acyclic, evidence)
        seconds = time.perf_counter() - start
        w = direction_weights(p, self.threshold, evidence)
        edges = graph.astype(bool)
        return AmortizedResult(self.name, p, graph, self.threshold, self.load_seconds, seconds,
                               {"reversed_edges": int((edges & (w < w.T)).sum()),
                                "invariance_turned": int((edges & (p < p.T) & (w > w.T)).sum())})

    def run_many(self, datasets: Sequence[np.ndarray], masks: Sequence[np.ndarray | None] | None = None) -> list[AmortizedResult]:
        masks = [None] * len(datasets) if masks is None else list(masks)
        if len(masks) != len(datasets):
            raise ValueError(f"{len(datasets)} datasets but {len(masks)} masks")
        return [self.run(data, mask) for data, mask in zip(datasets, masks)]


AMORTIZED_METHODS: dict[str, type] = {"alternet": AlterNetMethod, "cdfm": CDFMMethod, "avici": AVICIMethod}

_READY = {"cdfm": cdfm_ready, "avici": avici_ready}
"""Methods without a shipped checkpoint: whether each can load without a ``path`` here."""


def available_methods() -> tuple[str, ...]:
    """The amortized methods that :func:`load` can open without a ``path`` here: ``alternet`` (shipped),
    ``cdfm`` when ``cdfm-base`` is installed and ``CAUSAL_GYM_CDFM_CHECKPOINT`` names a checkpoint, and
    ``avici`` when ``avici`` imports and ``CAUSAL_GYM_AVICI_CHECKPOINT`` names one. Defaults that run
    every amortized method should run these, not all of :data:`AMORTIZED_METHODS`."""
    return tuple(name for name in AMORTIZED_METHODS if name not in _READY or _READY[name]())


def load(name: str, path: str | Path | None = None, **options: Any) -> AmortizedMethod:
    """Load amortized method ``name`` once (default ``path``: its shipped checkpoint, or for ``cdfm`` the
    environment variable, ``CAUSAL_GYM_CDFM_CHECKPOINT`` or ``CAUSAL_GYM_AVICI_CHECKPOINT``); then call ``run``/``run_many``."""
    name = check_choice(name, tuple(AMORTIZED_METHODS), "amortized method")
    method: AmortizedMethod = AMORTIZED_METHODS[name](path, **options)
    return method


def read_card(path: str | Path | None = None) -> dict[str, Any]:
    """The training card beside a checkpoint (prior, steps, seed, wall time, data seen)."""
    checkpoint = Path(path) if path is not None else default_checkpoint()
    return dict(json.loads(checkpoint.with_suffix(".card.json").read_text()))


@lru_cache(maxsize=8)
def _loaded(name: str, path: str | None, digest: str | None, options: tuple[tuple[str, Any], ...]) -> AmortizedMethod:
    # keyed by the checkpoint's content digest too: a checkpoint replaced in place is loaded again
    return load(name, path, **dict(options))


def _as_output(name: str, path: str | None, digest: str | None, data: np.ndarray, *args: Any,
               keep: tuple[str, ...] = (), **options: Any) -> MethodOutput:
    """Run amortized method ``name`` loaded once per process (checkpoint and options) as a batch method's output.

    The first call pays ``load_seconds``; later ones report 0 there. ``extras``: ``probabilities``
    (``[i, j]`` for ``i -> j``), ``threshold`` (the one this dataset got), ``load_seconds``,
    ``infer_seconds``, and the result's own extras named in ``keep``.
    """
    misses = _loaded.cache_info().misses
    method = _loaded(name, path, digest, tuple(sorted(options.items())))
    loaded_now = _loaded.cache_info().misses > misses
    result = method.run(data, *args)
    extras = {k: result.extras[k] for k in keep}
    return MethodOutput(graph=result.graph, extras={
        "probabilities": result.probabilities, "threshold": result.threshold, **extras,
        "load_seconds": result.load_seconds if loaded_now else 0.0, "infer_seconds": result.infer_seconds})


def alternet(data: np.ndarray, mask: np.ndarray | None = None, *, checkpoint: str | None = None,
             threshold: float | None = None, max_rows: int | None = None, acyclic: bool = True,
             invariance: bool = True) -> MethodOutput:
    """AlterNet as a method of :func:`causal_gym.discovery.run`, so menus and the arena's submit mode
    can offer it like any batch method.

    Loaded once per process and option set. ``mask`` (``mask[r, j]``: node ``j`` intervened on in row
    ``r``) is its second input channel. The graph is a DAG (:func:`.network.orient`). ``extras``:
    ``probabilities`` (``[i, j]`` for ``i -> j``), ``threshold``, ``reversed_edges`` (pairs pointing
    against their likelier way to avoid a cycle), ``invariance_turned`` (pairs the intervened rows
    turned), ``load_seconds`` (0 after the first call), ``infer_seconds``.

    Parameters
    ----------
    checkpoint : str, optional
        A checkpoint path (default: the shipped one, :func:`default_checkpoint`).
    threshold : float, optional
        Pairs with ``p_ij + p_ji`` above it are edges; default the checkpoint's.
    max_rows : int, optional
        Rows the attention stack reads (quadratic cost); default the checkpoint's training rows.
    acyclic : bool, default True
        Orient the thresholded pairs into a DAG (:func:`.network.orient`); False returns the
        thresholded graph, each pair pointing its likelier way, which can hold directed cycles.
    invariance : bool, default True
        Orient the pairs at intervened nodes by the intervened rows' likelihood as well
        (:class:`AlterNetMethod`); changes nothing on observational data.
    """
    path = default_checkpoint() if checkpoint is None else Path(checkpoint)
    return _as_output("alternet", None if checkpoint is None else str(checkpoint), files_digest([path]), data, mask,
                      keep=("reversed_edges", "invariance_turned"),
                      threshold=None if threshold is None else float(threshold), max_rows=max_rows,
                      acyclic=bool(acyclic), invariance=bool(invariance))


def cdfm(data: np.ndarray, *, checkpoint: str | None = None, threshold: float | None = None) -> MethodOutput:
    """CDFM as a method of :func:`causal_gym.discovery.run`, loaded once per process, checkpoint and threshold.

    Without ``checkpoint`` the folder is ``$CAUSAL_GYM_CDFM_CHECKPOINT``
    (:func:`.cdfm_checkpoint.checkpoint_folder`); without either it raises FileNotFoundError saying
    how to get one. Both directions above the threshold read as ``i -- j``. ``extras`` as
    the ``alternet`` function's, the threshold being the one this dataset got, and ``calibrated``.

    Parameters
    ----------
    checkpoint : str, optional
        A local checkpoint folder (``config.json`` + ``model.safetensors``).
    threshold : float, optional
        A fixed edge-probability threshold in (0, 1); None uses the checkpoint's calibrated one per dataset.
    """
    folder = require(checkpoint)
    return _as_output("cdfm", str(folder), fingerprint(folder), data, keep=("calibrated",),
                      threshold=None if threshold is None else float(threshold))


def avici(data: np.ndarray, mask: np.ndarray | None = None, *, checkpoint: str | None = None,
          threshold: float = 0.5) -> MethodOutput:
    """AVICI as a method of :func:`causal_gym.discovery.run`, loaded once per process, checkpoint and threshold.

    Without ``checkpoint`` the folder is ``$CAUSAL_GYM_AVICI_CHECKPOINT``
    (:func:`.avici_checkpoint.checkpoint_folder`); without either it raises FileNotFoundError saying
    how to get one. ``mask`` (``mask[r, j]``: node ``j`` intervened on in row ``r``) is AVICI's second
    input channel. Both directions above the threshold read as ``i -- j``. ``extras`` as the ``alternet`` function's.

    Parameters
    ----------
    checkpoint : str, optional
        A local checkpoint folder (``kwargs.json`` + the pickled model state); load only trusted ones.
    threshold : float, default 0.5
        The package's: edge probability above which ``i -> j`` is an edge.
    """
    folder = avici_checkpoint.require(checkpoint)
    return _as_output("avici", str(folder), avici_checkpoint.fingerprint(folder), data, mask,
                      threshold=float(threshold))


def cache_options(method: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` as a cache key of a run of ``method`` should hold them: a checkpoint the run reads
    from a path or an environment variable becomes its content digest (``"checkpoint_sha256"``).

    So a cached graph is never one of another checkpoint that later sat at the same path or
    variable, and no cache key carries a path. AlterNet's key holds the digest of the
    checkpoint it reads, the shipped one included (a retrained checkpoint is a different method),
    and ``acyclic`` and ``invariance`` (default True both), so no graph cached before the acyclic
    orientation or the interventional one is served as theirs.
    Other methods' options are returned unchanged, so their keys stay the ones they always were.
    """
    out = dict(options)
    if method == "cdfm":
        out["checkpoint_sha256"] = fingerprint(out.pop("checkpoint", None))
    elif method == "avici":
        out["checkpoint_sha256"] = avici_checkpoint.fingerprint(out.pop("checkpoint", None))
    elif method == "alternet":
        path = out.pop("checkpoint", None)
        out["checkpoint_sha256"] = files_digest([Path(path) if path is not None else default_checkpoint()])
        out["acyclic"] = bool(out.get("acyclic", True))
        out["invariance"] = bool(out.get("invariance", True))
    return out
