"""SDCD (causal_gym.discovery.sdcd) against the ``sdcd`` package driven the package's own way.

The reference builds its dataset from a label column with the package's
``create_intervention_dataset`` (observational rows labelled ``"obs"``, a targeted row by its
column's name), so our mask convention (a target's likelihood term dropped) is checked against
theirs, not against itself. Also: the caller's random streams are left as they were, the time limit
stops a long schedule, and bad options are refused.
"""

from __future__ import annotations

import contextlib
import io
import random

import numpy as np
import pytest

from causal_gym.discovery import run, supports_interventions
from causal_gym.graphs import is_dag

sdcd_package = pytest.importorskip("sdcd", reason="sdcd is installed with --no-deps (see causal_gym.discovery.sdcd)")
pd = pytest.importorskip("pandas")
torch = pytest.importorskip("torch")

EPOCHS = 40


def _data(seed: int, interventional: bool) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n, d = 300, 4
    x = np.zeros((n, d))
    mask = np.zeros((n, d), dtype=bool)
    if interventional:
        rows = rng.choice(n, size=120, replace=False)
        mask[rows, rng.integers(0, d, size=120)] = True
    mechanisms = (lambda: 0.0, lambda: np.tanh(2 * x[:, 0]), lambda: np.sin(x[:, 1]) + 0.5 * x[:, 0], lambda: 0.0)
    for j, mechanism in enumerate(mechanisms):  # in causal order; a target is set from outside (do)
        x[:, j] = mechanism() + 0.4 * rng.normal(size=n)
        x[mask[:, j], j] = rng.normal(size=int(mask[:, j].sum()))
    return (x - x.mean(0)) / x.std(0), mask


def _package_fit(x: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    from sdcd.models import SDCD
    from sdcd.utils import create_intervention_dataset

    frame = pd.DataFrame(x, columns=[str(j) for j in range(x.shape[1])])
    frame["perturbation_label"] = [str(int(np.flatnonzero(row)[0])) if row.any() else "obs" for row in mask]
    dataset = create_intervention_dataset(frame)
    with contextlib.redirect_stdout(io.StringIO()):
        model = SDCD()
        model.train(dataset, stage1_kwargs={"n_epochs": EPOCHS},
                    stage2_kwargs={"n_epochs": EPOCHS, "gamma_increment": 0.005 * 2000 / EPOCHS})
    return model.get_adjacency_matrix(), model.get_adjacency_matrix(threshold=False)


@pytest.mark.parametrize("seed, interventional", [(0, False), (1, True), (2, True)])
def test_sdcd_equals_the_package_on_its_own_dataset(seed, interventional):
    x, mask = _data(seed, interventional)
    graph, scores = _package_fit(x, mask)
    ours = run("sdcd", x, mask=mask if interventional else None, stage1_epochs=EPOCHS, stage2_epochs=EPOCHS)
    np.testing.assert_allclose(ours.extras["edge_scores"], scores * (1 - np.eye(4)), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(ours.graph, graph)
    assert is_dag(ours.graph) and ours.extras["stopped"] == "epochs"


def test_the_mask_changes_the_fit():
    x, mask = _data(1, True)
    with_mask = run("sdcd", x, mask=mask, stage1_epochs=EPOCHS, stage2_epochs=EPOCHS).extras["edge_scores"]
    without = run("sdcd", x, stage1_epochs=EPOCHS, stage2_epochs=EPOCHS).extras["edge_scores"]
    assert not np.allclose(with_mask, without)
    assert supports_interventions("sdcd")


def test_sdcd_leaves_the_callers_random_streams_alone():
    random.seed(11)
    np.random.seed(12)
    torch.manual_seed(13)
    expected = (random.random(), np.random.random(), torch.rand(1).item())
    random.seed(11)
    np.random.seed(12)
    torch.manual_seed(13)
    run("sdcd", _data(0, False)[0], stage1_epochs=5, stage2_epochs=5)
    assert (random.random(), np.random.random(), torch.rand(1).item()) == expected


def test_the_time_limit_ends_a_long_schedule_with_a_dag():
    x, _ = _data(0, False)
    result = run("sdcd", x, stage1_epochs=100_000, stage2_epochs=100_000, max_seconds=1.0)
    assert result.extras["stopped"] == "max_seconds"
    assert result.runtime < 60  # the schedule alone would run for hours
    assert is_dag(result.graph)


@pytest.mark.parametrize("options", [{"stage1_epochs": 0}, {"stage2_epochs": 1.5}, {"hidden": 0},
                                     {"threshold": 0.0}, {"max_seconds": -1.0}, {"seed": 1}])
def test_sdcd_rejects_bad_options(options):
    with pytest.raises(ValueError):
        run("sdcd", _data(0, False)[0], **options)
