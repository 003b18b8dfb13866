"""Amortized discovery: the network's symmetries, the load/infer split, the shipped checkpoint, the prior."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from causal_gym.discovery import methods  # noqa: E402
from causal_gym.discovery.amortized import AmortizedResult, default_checkpoint, load, read_card  # noqa: E402
from causal_gym.discovery.amortized.network import EdgeNet  # noqa: E402
from causal_gym.envs.arena.prior import PRIORS, draw  # noqa: E402
from causal_gym.graphs import is_dag  # noqa: E402
from causal_gym.metrics import edge_average_precision  # noqa: E402


@pytest.fixture(scope="module")
def net() -> EdgeNet:
    torch.manual_seed(0)
    return EdgeNet(width=16, heads=2, layers=2).eval()


def logits(net: EdgeNet, x: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return net(torch.as_tensor(x, dtype=torch.float32)[None])[0].numpy()


@pytest.mark.parametrize("n, d", [(7, 3), (50, 12), (20, 31)])
def test_any_n_and_d_gives_d_by_d_logits_with_masked_diagonal(net, n, d):
    out = logits(net, np.random.default_rng(d).normal(size=(n, d)))
    assert out.shape == (d, d)
    assert (np.diag(out) < -1e3).all() and np.isfinite(out).all()


def test_permuting_variables_permutes_the_logits(net):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(40, 8))
    perm = rng.permutation(8)
    base = logits(net, x)
    np.testing.assert_allclose(logits(net, x[:, perm]), base[np.ix_(perm, perm)], atol=1e-4)


def test_permuting_samples_leaves_the_logits_unchanged(net):
    rng = np.random.default_rng(2)
    x = rng.normal(size=(40, 6))
    np.testing.assert_allclose(logits(net, x[rng.permutation(40)]), logits(net, x), atol=1e-4)


def test_logits_are_not_symmetric_and_swapping_heads_transposes_them(net):
    # orientation: logits[i, j] = source(v_i) . target(v_j); exchanging the two heads is exactly a transpose
    x = np.random.default_rng(3).normal(size=(30, 5))
    base = logits(net, x)
    off = ~np.eye(5, dtype=bool)
    assert not np.allclose(base[off], base.T[off], atol=1e-3)
    swapped = EdgeNet(width=16, heads=2, layers=2).eval()
    state = net.state_dict()
    for part in ("weight", "bias"):
        state[f"source.{part}"], state[f"target.{part}"] = state[f"target.{part}"], state[f"source.{part}"]
    swapped.load_state_dict(state)
    np.testing.assert_allclose(logits(swapped, x), base.T, atol=1e-4)


def test_a_batch_equals_its_datasets_one_by_one(net):
    x = np.random.default_rng(4).normal(size=(3, 25, 6))
    with torch.no_grad():
        batched = net(torch.as_tensor(x, dtype=torch.float32)).numpy()
    for k in range(3):
        np.testing.assert_allclose(batched[k], logits(net, x[k]), atol=1e-4)


def test_amortized_methods_are_listed_and_also_run_through_discovery_run():
    assert methods(kind="amortized") == ("edgenet", "cdfm", "avici")
    assert {"edgenet", "pc"} <= set(methods(kind="batch"))
    with pytest.raises(ValueError, match="kind"):
        methods(kind="pretrained")


def test_discovery_run_of_edgenet_is_a_loaded_network_paying_its_load_once():
    from causal_gym.discovery import amortized, run

    amortized._loaded.cache_clear()
    rng = np.random.default_rng(8)
    x = rng.normal(size=(200, 6))
    x[:, 1] += 2 * x[:, 0]
    reference = load("edgenet", max_rows=100).run(x)  # an independent load of the same checkpoint
    first, second = run("edgenet", x, max_rows=100), run("edgenet", x[::-1], max_rows=100)
    np.testing.assert_array_equal(first.graph, reference.graph)
    np.testing.assert_allclose(first.extras["probabilities"], reference.probabilities, atol=1e-6)
    assert first.extras["load_seconds"] > 0 and second.extras["load_seconds"] == 0.0
    assert first.options == {"checkpoint": None, "threshold": 0.5, "max_rows": 100}
    with pytest.raises(ValueError, match="threshold"):
        run("edgenet", x, threshold=1.5)


@pytest.fixture(scope="module")
def method():
    return load("edgenet")


def test_shipped_checkpoint_is_small_and_has_a_card():
    assert default_checkpoint().stat().st_size <= 10 * 2**20
    card = read_card()
    assert card["prior"] == PRIORS[card["prior"]["name"]].to_dict()
    assert card["steps"] > 0 and card["datasets_seen"] == card["steps"] * card["batch"]


def test_one_load_serves_many_datasets(method):
    rng = np.random.default_rng(5)
    datasets = [rng.normal(size=(100, d)) for d in (4, 9, 4)]
    results = method.run_many(datasets)
    assert [r.probabilities.shape for r in results] == [(4, 4), (9, 9), (4, 4)]
    for r in results:
        assert isinstance(r, AmortizedResult)
        assert r.load_seconds == method.load_seconds and r.infer_seconds > 0
        assert ((r.probabilities >= 0) & (r.probabilities <= 1)).all() and not np.diag(r.probabilities).any()
        np.testing.assert_array_equal(r.graph, (r.probabilities > r.threshold).astype(np.int8))
    # inference is a pure function of the data: the same dataset twice gives the same probabilities
    np.testing.assert_allclose(results[0].probabilities, method.infer(datasets[0]))
    # max_rows reads the first rows only: the same as passing them
    capped = load("edgenet", max_rows=30)
    np.testing.assert_allclose(capped.infer(datasets[1]), method.infer(datasets[1][:30]), atol=1e-6)


def test_checkpoint_separates_a_strong_dependence_from_independence(method):
    # x -> y strongly, z independent of both: the pair (x, y) must outscore both pairs with z
    rng = np.random.default_rng(6)
    x = rng.uniform(-2, 2, size=400)
    data = np.column_stack([x, 2 * x + 0.3 * rng.uniform(-1, 1, size=400), rng.uniform(-2, 2, size=400)])
    p = method.infer(data)
    pair = p + p.T
    assert pair[0, 1] > max(pair[0, 2], pair[1, 2])


def test_bad_input_is_a_clear_error(method):
    bad = np.random.default_rng(7).normal(size=(50, 4))
    bad[3, 1] = np.nan
    with pytest.raises(ValueError):
        method.infer(bad)
    with pytest.raises(ValueError, match="threshold"):
        load("edgenet", threshold=1.5)
    with pytest.raises(ValueError, match="max_rows"):
        load("edgenet", max_rows=1)
    with pytest.raises(ValueError, match="amortized method"):
        load("not-a-method")


def test_prior_draws_are_dags_from_the_declared_categories():
    core, out = PRIORS["core"], PRIORS["out_of_prior"]
    assert not set(core.graph_families) & set(out.graph_families)
    assert not set(core.mechanisms) & set(out.mechanisms) and not set(core.noises) & set(out.noises)
    for seed in range(4):
        data, graph, config = draw(core, seed)
        assert core.d[0] <= graph.shape[0] <= core.d[1] and core.n[0] <= data.shape[0] <= core.n[1]
        assert data.shape[1] == graph.shape[0] and is_dag(graph)
        assert config.graph_family in core.graph_families and set(config.mechanisms) <= set(core.mechanisms)
        assert set(config.noises) <= set(core.noises)
    first, _, _ = draw(core, 0)
    np.testing.assert_array_equal(draw(core, 0)[0], first)


def test_shipped_checkpoint_ranks_true_edges_above_chance_in_its_prior(method):
    # a ranking that knows nothing has an AUPRC near the edge density; the card's training must beat that
    # on fresh in-prior datasets (seeds disjoint from training and dev) by a clear margin
    aps, densities = [], []
    for seed in range(30_000_000, 30_000_012):
        data, truth, _ = draw(PRIORS["core"], seed, d=10, n=500)
        if not truth.any():
            continue
        aps.append(edge_average_precision(truth, method.infer(data)))
        densities.append(truth.sum() / (10 * 9))
    assert np.mean(aps) > np.mean(densities) + 0.1, (np.mean(aps), np.mean(densities))
