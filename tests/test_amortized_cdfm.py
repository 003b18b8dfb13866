"""load('cdfm'): the released CDFM network through the cdfm-base package, on checkpoints made here.

The checkpoints are small networks of the package's own architecture with seeded random weights,
written in its format (config.json + model.safetensors). The references are the package's own
end-to-end ``CDFM.predict``, its documented index convention, and hand-computed thresholds.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

cdfm = pytest.importorskip("cdfm")
torch = pytest.importorskip("torch")

from amortized_checks import chain_datasets, check_result_contract  # noqa: E402
from causal_gym.discovery.amortized import available_methods, load  # noqa: E402
from causal_gym.discovery.amortized.cdfm_checkpoint import CHECKPOINT_ENV  # noqa: E402
from cdfm_checkpoints import CALIBRATION, write_checkpoint  # noqa: E402


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    return write_checkpoint(tmp_path_factory.mktemp("cdfm") / "ckpt", CALIBRATION)


@pytest.fixture(scope="module")
def method(checkpoint):
    return load("cdfm", checkpoint)


def datasets(k: int, n: int = 80, d: int = 5, seed: int = 0) -> list[np.ndarray]:
    return chain_datasets(k, n, d, seed)


def test_results_equal_the_package_predict_on_ten_datasets(checkpoint, method):
    reference = cdfm.CDFM.from_pretrained(str(checkpoint), device="cpu")
    off = ~np.eye(5, dtype=bool)
    edges = 0
    for x in datasets(10):
        ours, theirs = method.run(x), reference.predict(x)
        np.testing.assert_allclose(ours.probabilities[off], theirs.probabilities[off], rtol=0, atol=1e-9)
        assert ours.threshold == pytest.approx(theirs.threshold, abs=1e-12)
        np.testing.assert_array_equal(ours.graph, theirs.adjacency)
        edges += int(ours.graph.sum())
    assert 0 < edges < 10 * 20  # the comparison is not between empty (or full) graphs


def test_shapes_timing_and_zero_diagonal(method):
    result = check_result_contract(method, datasets(1, d=7)[0], "cdfm")
    assert result.extras["calibrated"] and np.isnan(method.threshold)


def test_a_planted_logit_at_0_1_reads_as_the_edge_0_to_1(checkpoint, monkeypatch):
    # The package's graph head documents W[b, i, j] as the edge i -> j, and its edge lists read
    # adjacency[i, j] as source i, target j; plant W itself and check nothing transposes it.
    method = load("cdfm", checkpoint, threshold=0.5)
    planted = torch.full((4, 4), -6.0)
    planted[0, 1], planted[2, 3] = 6.0, 6.0
    monkeypatch.setattr(method.model.inference, "forward", lambda embeddings: planted[None])
    result = method.run(datasets(1, d=4)[0])
    assert result.probabilities[0, 1] > 0.99 and result.probabilities[1, 0] < 0.01
    assert [edge[:2] for edge in cdfm.adjacency_to_edge_list(result.graph)] == [(0, 1), (2, 3)]


def test_permuting_columns_permutes_both_axes(method):
    # The architecture has no positional encoding, so a relabelling of variables relabels rows and columns.
    x = datasets(1, d=6, seed=3)[0]
    perm = np.array([3, 0, 5, 1, 4, 2])
    base, permuted = method.infer(x), method.infer(x[:, perm])
    np.testing.assert_allclose(permuted, base[np.ix_(perm, perm)], atol=1e-5)


def test_the_calibrated_threshold_is_the_logistic_of_its_features_by_hand(tmp_path):
    folder = write_checkpoint(tmp_path / "one", {"type": "linear", "coefficients": [-2.0, 4.0],
                                                 "feature_names": ["mean"]}, seed=1)
    result = load("cdfm", folder).run(datasets(1, d=6, seed=5)[0])
    off = ~np.eye(6, dtype=bool)
    by_hand = 1.0 / (1.0 + np.exp(-(-2.0 + 4.0 * result.probabilities[off].mean())))
    assert result.threshold == pytest.approx(by_hand, abs=1e-12)
    np.testing.assert_array_equal(result.graph, (result.probabilities > by_hand).astype(np.int8))


def test_a_fixed_threshold_replaces_the_calibrated_one(checkpoint):
    result = load("cdfm", checkpoint, threshold=0.3).run(datasets(1)[0])
    assert result.threshold == 0.3 and not result.extras["calibrated"]
    np.testing.assert_array_equal(result.graph, (result.probabilities > 0.3).astype(np.int8))
    for bad in (0.0, 1.0, -0.5):
        with pytest.raises(ValueError, match="threshold"):
            load("cdfm", checkpoint, threshold=bad)


def test_run_many_equals_run_one_by_one(method):
    data = datasets(4, seed=7)
    for many, one in zip(method.run_many(data), [method.run(x) for x in data]):
        np.testing.assert_array_equal(many.probabilities, one.probabilities)
        np.testing.assert_array_equal(many.graph, one.graph)
        assert many.threshold == one.threshold and many.load_seconds == one.load_seconds


def test_without_a_checkpoint_the_error_says_where_to_get_one(tmp_path, monkeypatch):
    monkeypatch.delenv(CHECKPOINT_ENV, raising=False)
    with pytest.raises(FileNotFoundError, match=f"DMIRLAB/CDFM.*{CHECKPOINT_ENV}"):
        load("cdfm")
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match="no model.safetensors"):
        load("cdfm", tmp_path)
    # a relative path that does not exist fails here; the package would take "a/b" for a Hub id and download
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match="DMIRLAB/CDFM"):
        load("cdfm", "someone/model")
    assert "cdfm" not in available_methods()


def test_the_environment_variable_points_to_the_checkpoint(checkpoint, method, monkeypatch):
    monkeypatch.setenv(CHECKPOINT_ENV, str(checkpoint))
    monkeypatch.delenv("CAUSAL_GYM_AVICI_CHECKPOINT", raising=False)
    assert available_methods() == ("alternet", "cdfm")
    x = datasets(1, seed=9)[0]
    np.testing.assert_array_equal(load("cdfm").run(x).probabilities, method.run(x).probabilities)


def test_missing_weights_or_calibration_are_refused(tmp_path):
    partial = write_checkpoint(tmp_path / "partial", None, drop="inference.final_bias")
    with pytest.raises(ValueError, match="lacks 1 of the network's weights"):
        load("cdfm", partial, threshold=0.5)
    uncalibrated = write_checkpoint(tmp_path / "uncalibrated", None)
    with pytest.raises(ValueError, match="no calibration_config"):
        load("cdfm", uncalibrated)
    assert load("cdfm", uncalibrated, threshold=0.5).run(datasets(1)[0]).threshold == 0.5
