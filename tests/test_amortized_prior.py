"""The amortized network's declared training prior: what a draw holds, and seed streams that keep evaluation
draws apart from training draws by construction."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from causal_gym.discovery.amortized.prior import PRIOR, STREAMS, draw, stream_sequence
from causal_gym.graphs import is_dag

ROOT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------------------------------------


def test_prior_draws_are_dags_from_the_declared_categories_with_consistent_masks():
    for seed in range(12):
        sample = draw(seed, stream="train")
        info, (n, d) = sample.info, sample.data.shape
        assert PRIOR.d[0] <= d <= PRIOR.d[1] and PRIOR.n[0] <= n <= PRIOR.n[1] and is_dag(sample.graph)
        assert info["graph_family"] in PRIOR.graphs and info["mechanism"] in PRIOR.mechanisms
        assert info["noise"] in PRIOR.noises and np.isfinite(sample.data).all()
        assert sample.mask.shape == (n, d) and sample.mask.sum(axis=1).max() <= 1
        if info["interventional"]:
            assert sample.mask.sum() == info["intervened_rows"]
            assert set(np.flatnonzero(sample.mask.any(axis=0))) <= set(info["target_pool"])
        else:
            assert not sample.mask.any()
    np.testing.assert_array_equal(draw(3).data, draw(3).data)
    with pytest.raises(ValueError, match="stream"):
        draw(0, stream="test")
    with pytest.raises(ValueError, match="seed"):
        draw(-1)


def test_an_intervened_node_takes_values_independent_of_its_parents():
    sample = draw(5, d=8, n=3000, interventional=True)
    for j in np.flatnonzero(sample.mask.any(axis=0)):
        parents = np.flatnonzero(sample.graph[:, j])
        rows = sample.mask[:, j] == 1
        for p in parents:
            assert abs(np.corrcoef(sample.data[rows, p], sample.data[rows, j])[0, 1]) < 4 / np.sqrt(rows.sum())


def test_evaluation_seeds_never_reproduce_training_draws():
    # by construction: a draw's seed sequence is (seed, stream), so two streams never share one
    states = {stream: {tuple(stream_sequence(s, stream).generate_state(4)) for s in range(2000)} for stream in STREAMS}
    assert all(len(v) == 2000 for v in states.values())
    assert not states["eval"] & states["train"] and not states["eval"] & states["dev"] and not states["train"] & states["dev"]
    # and in the data: no evaluation draw equals any training draw of the same shape
    train = {draw(s, stream="train", d=5, n=100).data.tobytes() for s in range(300)}
    assert not any(draw(s, d=5, n=100).data.tobytes() in train for s in range(300))


def _training_script():
    spec = importlib.util.spec_from_file_location("train_amortized", ROOT / "examples" / "train_amortized.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_training_loop_draws_from_the_training_stream_only():
    pytest.importorskip("torch")
    from causal_gym.discovery.amortized.network import inputs

    script = _training_script()
    arrays, _ = script.make_batch(range(4), d=6, n=150, rows=40)
    for k in range(4):
        np.testing.assert_array_equal(arrays["graph"][k], draw(k, stream="train", d=6, n=150).graph)
        expected = inputs(draw(k, stream="train", d=6, n=150).data, draw(k, stream="train", d=6, n=150).mask, 40)
        np.testing.assert_allclose(arrays["pair"][k], expected.pair[0].numpy(), atol=1e-6)
    assert not np.array_equal(arrays["rows"][0], inputs(draw(0, d=6, n=150).data, None, 40).rows[0].numpy())
    # every step's shape is a pure function of (seed, step), inside the declared training ranges
    shapes = [script.step_shape(0, t) for t in range(200)]
    assert shapes == [script.step_shape(0, t) for t in range(200)] and shapes != [script.step_shape(1, t) for t in range(200)]
    assert all(5 <= d <= 50 and PRIOR.n[0] <= n <= PRIOR.n[1] and 4 <= b <= 32 for d, n, b in shapes)
