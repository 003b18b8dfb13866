"""SDCD, Stable Differentiable Causal Discovery (Nazaret, Hong, Azizi & Blei, AISTATS 2024), through ``sdcd``.

Each node ``j`` has its own MLP (one hidden layer of ``hidden`` sigmoid units) that outputs the mean
and variance of a Gaussian for ``x_j`` from all variables; the norm of the first-layer weights from
input ``i`` is the edge strength ``A[i, j]``. Training minimises the Gaussian negative
log-likelihood plus an L1 penalty on ``A`` and an L2 penalty on all weights, in two stages:

1. **Feature selection** without acyclicity: the pairs with ``A[i, j] > 0.2`` after this stage are
   the only ones stage 2 may use.
2. **DAG learning** on those pairs with the spectral acyclicity penalty ``gamma * rho(A)`` (the
   spectral radius, by power iteration: stable where the trace-exponential and log-determinant
   penalties overflow), ``gamma`` raised linearly and frozen once the graph at 0.01 is a DAG.

Both stages hold out 20% of the rows and stop early when that loss stops improving. Edges are
then taken in decreasing ``A`` down to ``threshold``, each kept unless it closes a cycle: a DAG.

Interventional data: rows are used through an intervention mask. A node's own likelihood term is
dropped in the rows where it is a target (its value there is set from outside, not by its
parents), which is how interventions orient edges; ``run("sdcd", data, mask=mask)`` passes it.

Wrapped, with these choices:

- **Budget.** The package's schedule is 2,000 epochs per stage (early stopping usually ends it
  sooner); CausalArena's Table 5 gives SDCD 193 s per graph on average, the slowest method of its
  menu. Our defaults are 1,000 epochs per stage with the same ``gamma`` reached at the end of stage 2
  (its per-epoch increment scaled by 2000 / ``stage2_epochs``): 18 CPU s at d = 10 and 30 at d = 30
  (n = 1000, one thread), where the package's schedule takes about 34 s at d = 10; on four arena
  datasets at d = 10 the mean F1 was 0.49 with ours, 0.52 with the package's and 0.27 with 300
  epochs per stage (few datasets: a rough guide). An optional ``max_seconds`` bounds the time:
  the package's loop has no time limit or callback, so the rows are served by a dataset that ends
  training once the budget is spent; the graph is then read from the model as it stands
  (``extras["stopped"] = "max_seconds"``), from stage 1's if stage 2 had not begun.
- **Randomness.** ``sdcd`` seeds Python's, numpy's and torch's global generators with 0 at every
  fit; their states are restored afterwards, so the caller's streams are untouched, and the result
  is deterministic (there is no ``seed`` option: the package would override it).
- **Output.** Its progress lines are swallowed (they go to stdout unconditionally).

Needs torch, ``sdcd`` (installed with ``--no-deps``: its metadata pins ``pandas<2``, ``numba<0.60``
and ``wandb<0.16``, none of which it needs here), pandas and ``wandb`` (imported by the package at
import time, never used: we do not log).
"""

from __future__ import annotations

import contextlib
import io
import random
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from causal_gym._validation import check_count, check_real
from causal_gym.discovery.result import MethodOutput

__all__ = ["sdcd"]

_PACKAGE_EPOCHS = 2000
"""The package's epochs per stage; stage 2's ``gamma`` increment is scaled to reach the same end value."""
_PACKAGE_GAMMA_INCREMENT = 0.005


class _BudgetSpent(Exception):
    """Raised by :class:`_TimedRows` to end the package's training loop at the time limit."""


def _timed_rows(x: Any, keep: Any, regimes: Any, deadline: float | None) -> Any:
    """The ``(x, mask, regime)`` rows the package trains on, served by a dataset that raises
    :class:`_BudgetSpent` once ``deadline`` (a ``time.monotonic()`` value) has passed."""
    import torch

    class _TimedRows(torch.utils.data.TensorDataset):
        def __getitems__(self, indices: list[int]) -> list[tuple[Any, ...]]:
            if deadline is not None and time.monotonic() >= deadline:
                raise _BudgetSpent
            return [self[i] for i in indices]

    return _TimedRows(x, keep, regimes)


@contextlib.contextmanager
def _global_generators_restored() -> Iterator[None]:
    """The package seeds ``random``, ``numpy.random`` and torch with 0; give the caller theirs back."""
    import torch

    python_state, numpy_state = random.getstate(), np.random.get_state()
    try:
        with torch.random.fork_rng(devices=[]):
            yield
    finally:
        random.setstate(python_state)
        np.random.set_state(numpy_state)


def _import_model() -> Any:
    try:
        from sdcd.models import SDCD
    except ImportError as error:
        raise ImportError("method 'sdcd' needs torch, pandas, wandb and sdcd: pip install 'causal-gym[arena]' "
                          "then pip install --no-deps sdcd==0.1.4") from error
    return SDCD


def sdcd(data: np.ndarray, mask: np.ndarray | None = None, *, stage1_epochs: int = 1000,
         stage2_epochs: int = 1000, hidden: int = 10, threshold: float = 0.1,
         max_seconds: float | None = None) -> MethodOutput:
    """SDCD (two stages, MLP per node, spectral acyclicity); a DAG (see the module docstring).

    Options
    -------
    stage1_epochs, stage2_epochs : int
        Most epochs of each stage (the package's 2,000; early stopping may end a stage sooner).
    hidden : int
        Hidden units of each node's MLP.
    threshold : float
        Smallest edge strength ``A[i, j]`` kept in the final DAG (the package's 0.1).
    max_seconds : float or None
        Wall-time budget of the whole fit; past it the current model's graph is used.

    Extras
    ------
    edge_scores : (d, d) float array
        ``A`` before thresholding (a ranking of every ordered pair).
    feature_mask : (d, d) int8 array
        The pairs stage 1 passed on to stage 2.
    stopped : str
        ``"epochs"`` (the schedule or early stopping ended both stages) or ``"max_seconds"``.
    """
    stage1_epochs = check_count(stage1_epochs, "stage1_epochs", 1)
    stage2_epochs = check_count(stage2_epochs, "stage2_epochs", 1)
    hidden = check_count(hidden, "hidden", 1)
    threshold = check_real(threshold, "threshold", 0.0, strict=True)
    if max_seconds is not None:
        max_seconds = check_real(max_seconds, "max_seconds", 0.0, strict=True)
    SDCD = _import_model()
    import torch

    n, d = data.shape
    dtype = torch.get_default_dtype()
    targets = np.zeros((n, d), dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    deadline = None if max_seconds is None else time.monotonic() + max_seconds
    rows = _timed_rows(torch.tensor(data, dtype=dtype), torch.tensor(~targets, dtype=dtype),
                       torch.tensor(targets.sum(1), dtype=torch.long), deadline)
    stage2 = {"n_epochs": stage2_epochs, "gamma_increment": _PACKAGE_GAMMA_INCREMENT * _PACKAGE_EPOCHS / stage2_epochs}
    stopped = "epochs"
    with _global_generators_restored(), contextlib.redirect_stdout(io.StringIO()):
        model = SDCD()  # seeds the global generators too
        try:
            model.train(rows, stage1_kwargs={"n_epochs": stage1_epochs}, stage2_kwargs=stage2,
                        model_kwargs={"dim_hidden": hidden})
        except _BudgetSpent:
            stopped = "max_seconds"
        # stage 2's model once it exists, else stage 1's; none when the budget ended before either
        fitted = model._model if model._model is not None else getattr(model, "_ps_model", None)
        scores = (np.zeros((d, d)) if fitted is None
                  else fitted.get_adjacency_matrix().detach().cpu().numpy().astype(np.float64))
    np.fill_diagonal(scores, 0.0)
    graph = SDCD.adjacency_dag_at_threshold(scores, threshold).astype(np.int8)
    feature_mask = getattr(model, "_mask", None)
    return MethodOutput(graph=graph, extras={
        "edge_scores": scores, "stopped": stopped,
        "feature_mask": (np.ones((d, d)) - np.eye(d) if feature_mask is None else feature_mask).astype(np.int8)})
