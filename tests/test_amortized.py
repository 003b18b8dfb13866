"""Amortized discovery: AlterNet's symmetries and statistics, the load/infer split, the shipped checkpoint and its card."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from amortized_checks import check_result_contract  # noqa: E402
from causal_gym.discovery import methods  # noqa: E402
from causal_gym.discovery.amortized import AmortizedResult, cache_options, default_checkpoint, load, read_card  # noqa: E402
from causal_gym.discovery.amortized.features import summary_features  # noqa: E402
from causal_gym.discovery.amortized.network import AlterNet, inputs, orient, pick_rows  # noqa: E402
from causal_gym.discovery.amortized.prior import PRIOR, draw  # noqa: E402
from causal_gym.metrics import edge_average_precision  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def net() -> AlterNet:
    torch.manual_seed(0)
    return AlterNet(width=16, heads=2, layers=1, relational=1, pair_width=8).eval()


def logits(net: AlterNet, x: np.ndarray, mask: np.ndarray | None = None, max_rows: int | None = 30) -> np.ndarray:
    with torch.no_grad():
        return net(inputs(x, mask, max_rows))[0].numpy()


def dataset(n: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A linear chain-ish dataset with a few intervened rows."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    mask = np.zeros((n, d), dtype=np.int8)
    mask[: n // 5, 0] = 1
    x[: n // 5, 0] = rng.uniform(-2, 2, n // 5)
    for j in range(1, d):
        x[:, j] += 0.8 * x[:, j - 1]
    return x, mask


# ---------------------------------------------------------------------------------------------
# the network
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n, d", [(12, 3), (50, 12), (80, 31)])
def test_any_n_and_d_gives_d_by_d_logits_with_masked_diagonal(net, n, d):
    out = logits(net, *dataset(n, d, d))
    assert out.shape == (d, d)
    assert (np.diag(out) < -1e3).all() and np.isfinite(out).all()


def test_permuting_variables_permutes_the_logits(net):
    x, mask = dataset(60, 8, 1)
    perm = np.random.default_rng(1).permutation(8)
    np.testing.assert_allclose(logits(net, x[:, perm], mask[:, perm]), logits(net, x, mask)[np.ix_(perm, perm)],
                               atol=1e-4)


def test_permuting_rows_leaves_the_logits_unchanged_also_when_rows_are_subsampled(net):
    x, mask = dataset(90, 6, 2)
    order = np.random.default_rng(2).permutation(90)
    np.testing.assert_allclose(logits(net, x[order], mask[order]), logits(net, x, mask), atol=1e-4)
    assert set(map(tuple, x[order][pick_rows(x[order], 30)])) == set(map(tuple, x[pick_rows(x, 30)]))


def test_subsampled_rows_are_spread_over_the_data_and_all_rows_when_few():
    x = np.random.default_rng(3).normal(size=(2000, 4))
    picked = pick_rows(x, 200)
    assert picked.size == 200 and np.unique(picked).size == 200
    # a random subsample: its column means are those of the data within sampling error, not its extremes
    assert np.all(np.abs(x[picked].mean(axis=0)) < 4 / np.sqrt(200))
    np.testing.assert_array_equal(pick_rows(x[:50], 200), np.arange(50))


def test_a_batch_equals_its_datasets_one_by_one(net):
    from causal_gym.discovery.amortized.network import Inputs

    items = [inputs(*dataset(40, 5, seed), 20) for seed in range(3)]
    with torch.no_grad():
        batched = net(Inputs.stack(items)).numpy()
        for k, item in enumerate(items):
            np.testing.assert_allclose(batched[k], net(item)[0].numpy(), atol=1e-4)


def test_the_mask_channel_changes_the_logits(net):
    x, mask = dataset(60, 5, 4)
    assert not np.allclose(logits(net, x, mask), logits(net, x, None), atol=1e-4)


def test_orient_keeps_pairs_above_the_threshold_pointing_the_likelier_way():
    p = np.array([[0.0, 0.6, 0.1], [0.2, 0.0, 0.15], [0.3, 0.2, 0.0]])
    # pairs: (0,1) 0.8 -> 0->1; (0,2) 0.4 -> none at 0.5; (1,2) 0.35 -> none
    np.testing.assert_array_equal(orient(p, 0.5), [[0, 1, 0], [0, 0, 0], [0, 0, 0]])
    np.testing.assert_array_equal(orient(p, 0.3), [[0, 1, 0], [0, 0, 0], [1, 1, 0]])


def _is_dag_by_dfs(a: np.ndarray) -> bool:
    """Independent of causal_gym.graphs: no pair both ways, and a depth-first search finds no back edge."""
    d = a.shape[0]
    if (a.astype(bool) & a.T.astype(bool)).any():
        return False
    state = [0] * d  # 0 new, 1 on the stack, 2 done

    def visit(v: int) -> bool:
        state[v] = 1
        for w in np.flatnonzero(a[v]):
            if state[w] == 1 or (state[w] == 0 and not visit(int(w))):
                return False
        state[v] = 2
        return True

    return all(state[v] == 2 or visit(v) for v in range(d))


def _adversarial_probabilities(rng: np.random.Generator) -> np.ndarray:
    """Random probabilities, some with near-tied 2-cycles and a strong cycle through every node."""
    d = int(rng.integers(3, 13))
    p = rng.random((d, d)) ** rng.choice([0.5, 1.0, 3.0])
    kind = rng.integers(3)
    if kind == 1:  # 2-cycles: both directions high and nearly equal
        for i, j in rng.integers(0, d, size=(d, 2)):
            p[i, j] = p[j, i] = 0.9
            p[i, j] += rng.choice([-1e-9, 0.0, 1e-9])
    elif kind == 2:  # one long cycle 0 -> 1 -> ... -> d-1 -> 0, each step likelier than its reverse
        for i in range(d):
            p[i, (i + 1) % d], p[(i + 1) % d, i] = rng.uniform(0.6, 1.0), rng.uniform(0.0, 0.3)
    np.fill_diagonal(p, 0.0)
    return p


def test_orient_returns_a_dag_with_the_thresholded_adjacencies():
    rng = np.random.default_rng(0)
    cyclic = 0
    for _ in range(600):
        p = _adversarial_probabilities(rng)
        threshold = float(rng.uniform(0.2, 1.2))
        raw, dag = orient(p, threshold, acyclic=False), orient(p, threshold)
        assert _is_dag_by_dfs(dag)
        np.testing.assert_array_equal(dag | dag.T, raw | raw.T)  # pairs are reoriented, never cut
        if _is_dag_by_dfs(raw):
            np.testing.assert_array_equal(dag, raw)
        else:
            cyclic += 1
            assert (dag != raw).any()
    assert cyclic > 100  # the adversarial draws did produce cycles


def test_orient_points_the_weakest_direction_of_a_cycle_the_other_way():
    # hand-checked: 0 -> 1 (.9), 1 -> 2 (.8), 2 -> 0 (.7), reverses .1, .15, .2, threshold .5:
    # 0 -> 1 and 1 -> 2 are kept, 2 -> 0 would close the cycle, so the pair points 0 -> 2
    p = np.array([[0.0, 0.9, 0.2], [0.1, 0.0, 0.8], [0.7, 0.15, 0.0]])
    np.testing.assert_array_equal(orient(p, 0.5, acyclic=False), [[0, 1, 0], [0, 0, 1], [1, 0, 0]])
    np.testing.assert_array_equal(orient(p, 0.5), [[0, 1, 1], [0, 0, 1], [0, 0, 0]])
    # with 1 -> 2 the weakest (.6 against 2 -> 0 at .7), the pair 1, 2 is the one reversed
    p[1, 2] = 0.6
    np.testing.assert_array_equal(orient(p, 0.5), [[0, 1, 0], [0, 0, 0], [1, 1, 0]])


# ---------------------------------------------------------------------------------------------
# the statistics, against independent computations
# ---------------------------------------------------------------------------------------------


def _residual(y: np.ndarray, z: np.ndarray) -> np.ndarray:
    design = np.column_stack([np.ones(len(y)), z])
    return y - design @ np.linalg.lstsq(design, y, rcond=None)[0]


def test_statistics_match_regressions_and_loops():
    x, mask = dataset(400, 5, 5)
    x[:, 3] = np.tanh(x[:, 2]) + 0.3 * np.random.default_rng(5).normal(size=400)
    node, pair = (t[0].numpy() for t in summary_features(torch.from_numpy(x)[None], torch.from_numpy(mask * 1.0)[None]))
    z = (x - x.mean(0)) / x.std(0)
    d = 5
    for i in range(d):
        rest = [k for k in range(d) if k != i]
        r2 = 1 - _residual(z[:, i], z[:, rest]).var() / z[:, i].var()
        assert node[i, 0] == pytest.approx(r2, abs=5e-3)  # the ridge shrinks it a little
        assert node[i, 3] == pytest.approx(mask[:, i].mean())
        for j in range(d):
            if i == j:
                continue
            others = [k for k in range(d) if k not in (i, j)]
            assert pair[i, j, 0] == pytest.approx(np.corrcoef(x[:, i], x[:, j])[0, 1], abs=1e-5)
            partial = np.corrcoef(_residual(z[:, i], z[:, others]), _residual(z[:, j], z[:, others]))[0, 1]
            assert pair[i, j, 1] == pytest.approx(partial, abs=5e-3)
            first = [abs(np.corrcoef(_residual(z[:, i], z[:, [k]]), _residual(z[:, j], z[:, [k]]))[0, 1]) for k in others]
            assert pair[i, j, 2] == pytest.approx(min([abs(np.corrcoef(x[:, i], x[:, j])[0, 1])] + first), abs=1e-5)
            assert pair[i, j, 6] == pytest.approx(np.corrcoef(z[:, i] ** 2, z[:, j])[0, 1], abs=1e-4)
            assert pair[i, j, 7] == pytest.approx(np.corrcoef(z[:, i], z[:, j] ** 2)[0, 1], abs=1e-4)
            # collider score of (i, j): the largest rise over k of |rho_ik| when conditioning on j
            rises = [abs(np.corrcoef(_residual(z[:, i], z[:, [j]]), _residual(z[:, k], z[:, [j]]))[0, 1])
                     - abs(np.corrcoef(z[:, i], z[:, k])[0, 1]) for k in others]
            assert pair[i, j, 16] == pytest.approx(max(0.0, max(rises)), abs=1e-5)
            rows = mask[:, i] == 1
            expected = np.corrcoef(x[rows, i], x[rows, j])[0, 1] if rows.sum() >= 3 else 0.0
            assert pair[i, j, 11] == pytest.approx(expected, abs=1e-4)
            assert pair[i, j, 14] == float(rows.sum() >= 3)


def test_a_collider_scores_on_the_side_of_its_causes():
    rng = np.random.default_rng(11)
    x = rng.normal(size=(3000, 3))
    x[:, 2] += x[:, 0] + x[:, 1]  # 0 -> 2 <- 1
    _, pair = summary_features(torch.from_numpy(x)[None], torch.zeros(1, 3000, 3, dtype=torch.float64))
    collider = pair[0, :, :, 16].numpy()
    # conditioning on 2 couples 0 and 1 (0.45 here); conditioning on a co-parent only sharpens a cause-effect
    # correlation (0.12 here)
    assert min(collider[0, 2], collider[1, 2]) > 0.3 > 0.15 > max(collider[2, 0], collider[2, 1], collider[0, 1])


def test_an_intervention_breaks_the_correlation_with_a_cause_not_with_an_effect():
    x, mask = dataset(2000, 3, 6)  # 0 -> 1 -> 2, node 0 intervened in a fifth of the rows
    _, pair = summary_features(torch.from_numpy(x)[None], torch.from_numpy(mask * 1.0)[None])
    assert pair[0, 0, 1, 11] > 0.4  # under do(x0), x0 still moves x1
    x2, mask2 = x.copy(), np.zeros_like(mask)
    x2[:, 0] = np.random.default_rng(9).normal(size=2000)
    x2[:, 1] = 0.8 * x2[:, 0] + np.random.default_rng(10).normal(size=2000)
    mask2[:400, 1] = 1
    x2[:400, 1] = np.random.default_rng(7).normal(size=400)
    x2[:, 2] = 0.8 * x2[:, 1] + np.random.default_rng(8).normal(size=2000)
    _, pair2 = summary_features(torch.from_numpy(x2)[None], torch.from_numpy(mask2 * 1.0)[None])
    assert abs(pair2[0, 1, 0, 11]) < 0.15 and pair2[0, 1, 2, 11] > 0.4  # do(x1) cuts x0, keeps x2


# ---------------------------------------------------------------------------------------------
# the method, the shipped checkpoint and its card
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def method():
    return load("alternet")


def test_amortized_methods_are_listed_and_also_run_through_discovery_run():
    assert methods(kind="amortized") == ("alternet", "cdfm", "avici")
    assert {"alternet", "pc"} <= set(methods(kind="batch"))
    with pytest.raises(ValueError, match="kind"):
        methods(kind="pretrained")


def test_the_result_contract_with_and_without_a_mask(method):
    x, mask = dataset(300, 6, 9)
    result = check_result_contract(method, x, "alternet")
    np.testing.assert_array_equal(result.graph, orient(result.probabilities, result.threshold))
    assert not (result.graph & result.graph.T).any()  # directed: no pair both ways
    p = result.probabilities
    assert result.extras["reversed_edges"] == int((result.graph.astype(bool) & (p < p.T)).sum())
    with_mask = method.run(x, mask)
    np.testing.assert_array_equal(with_mask.probabilities, method.infer(x, mask))
    assert not np.allclose(with_mask.probabilities, result.probabilities)


def test_discovery_run_of_alternet_is_a_loaded_network_paying_its_load_once():
    from causal_gym.discovery import amortized, run

    amortized._loaded.cache_clear()
    x, mask = dataset(200, 6, 8)
    reference = load("alternet", max_rows=100).run(x, mask)  # an independent load of the same checkpoint
    first, second = run("alternet", x, mask=mask, max_rows=100), run("alternet", x[::-1], max_rows=100)
    np.testing.assert_array_equal(first.graph, reference.graph)
    np.testing.assert_allclose(first.extras["probabilities"], reference.probabilities, atol=1e-6)
    assert first.extras["load_seconds"] > 0 and second.extras["load_seconds"] == 0.0
    assert first.options == {"checkpoint": None, "threshold": None, "max_rows": 100, "acyclic": True,
                             "invariance": True}
    raw = run("alternet", x, mask=mask, max_rows=100, acyclic=False)
    np.testing.assert_array_equal(raw.graph, orient(reference.probabilities, reference.threshold, acyclic=False))
    with pytest.raises(ValueError, match="threshold"):
        run("alternet", x, threshold=2.5)


def test_cache_keys_hold_the_digest_of_the_checkpoint_read(tmp_path):
    shipped = cache_options("alternet", {"threshold": None})
    copy = tmp_path / "alternet.pt"  # the digest covers the file's name and bytes
    copy.write_bytes(default_checkpoint().read_bytes())
    assert cache_options("alternet", {"checkpoint": str(copy), "threshold": None}) == shipped
    other = tmp_path / "other.pt"
    state = torch.load(default_checkpoint())
    state["threshold"] = 0.9
    torch.save(state, other)
    assert cache_options("alternet", {"checkpoint": str(other)})["checkpoint_sha256"] != shipped["checkpoint_sha256"]
    assert str(tmp_path) not in json.dumps(cache_options("alternet", {"checkpoint": str(other)}))
    # the acyclic orientation is part of the key, so no graph cached before it is served as its own
    assert shipped["acyclic"] is True and cache_options("alternet", {"acyclic": False})["acyclic"] is False


def test_one_load_serves_many_datasets(method):
    rng = np.random.default_rng(5)
    datasets = [rng.normal(size=(100, d)) for d in (4, 9, 4)]
    results = method.run_many(datasets)
    assert [r.probabilities.shape for r in results] == [(4, 4), (9, 9), (4, 4)]
    assert all(isinstance(r, AmortizedResult) and r.load_seconds == method.load_seconds for r in results)
    np.testing.assert_allclose(results[0].probabilities, method.infer(datasets[0]))
    # max_rows caps the rows the attention reads: the same as passing the rows pick_rows would pick
    x = rng.normal(size=(500, 5))
    capped = load("alternet", max_rows=30)
    a = capped.net(inputs(x, None, 30))
    b = capped.net(inputs(x[pick_rows(x, 30)], None, None))
    assert a.shape == b.shape  # the statistics still read every row, so the logits differ
    assert not torch.allclose(a, b)


def test_bad_input_is_a_clear_error(method):
    bad = np.random.default_rng(7).normal(size=(50, 4))
    bad[3, 1] = np.nan
    with pytest.raises(ValueError):
        method.infer(bad)
    constant = np.random.default_rng(7).normal(size=(50, 4))
    constant[:, 2] = 1.0
    with pytest.raises(ValueError, match="constant"):
        method.infer(constant)
    with pytest.raises(ValueError, match="mask"):
        method.infer(np.random.default_rng(8).normal(size=(50, 4)), np.ones((50, 3)))
    with pytest.raises(ValueError, match="threshold"):
        load("alternet", threshold=2.5)
    with pytest.raises(ValueError, match="max_rows"):
        load("alternet", max_rows=1)
    with pytest.raises(ValueError, match="amortized method"):
        load("not-a-method")


def test_shipped_checkpoint_is_small_and_has_its_card_and_curve():
    assert default_checkpoint().stat().st_size <= 25 * 2**20
    card = read_card()
    assert card["prior"] == PRIOR.to_dict() and card["arena_coverage"] == PRIOR.arena_coverage()
    state = torch.load(default_checkpoint())
    assert card["hyper"] == state["hyper"] and card["threshold"] == state["threshold"]
    assert card["max_rows"] == state["max_rows"] and card["steps"] > 0 and card["seed"] == 0
    assert card["command"].startswith("python examples/train_amortized.py")
    assert "DAG" in card["graph"]  # the card says how the returned graph is made
    with open(default_checkpoint().with_suffix(".curve.csv")) as handle:
        curve = list(csv.DictReader(handle))
    assert int(curve[-1]["step"]) == card["steps"] and int(curve[-1]["datasets_seen"]) == card["datasets_seen"]


def test_shipped_checkpoint_ranks_true_edges_well_above_chance_on_fresh_draws(method):
    # a ranking that knows nothing has an AUPRC near the edge density; evaluation-stream draws are
    # never training data (test_evaluation_seeds_never_reproduce_training_draws)
    aps, densities = [], []
    for seed in range(12):
        sample = draw(seed, d=10, n=500)
        aps.append(edge_average_precision(sample.graph, method.infer(sample.data, sample.mask)))
        densities.append(sample.graph.sum() / 90)
    assert np.mean(aps) > np.mean(densities) + 0.3, (np.mean(aps), np.mean(densities))


@pytest.mark.slow
def test_the_training_command_trains_resumes_and_writes_its_card(tmp_path):
    command = [sys.executable, str(ROOT / "examples" / "train_amortized.py"), "--out", str(tmp_path / "run"),
               "--steps", "4", "--eval-every", "2", "--dev-per-d", "2", "--width", "16", "--layers", "1",
               "--rows", "24", "--workers", "1"]
    first = subprocess.run(command + ["--max-minutes", "0"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=900)
    assert first.returncode == 0, first.stderr
    assert "rerun to resume" in first.stdout
    second = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert second.returncode == 0, second.stderr
    assert "resuming at step 1" in second.stdout
    card = json.loads((tmp_path / "run" / "alternet.card.json").read_text())
    assert card["steps"] == 4 and card["prior"] == PRIOR.to_dict() and set(card["cpu_hours"]) == {"trainer", "data_workers"}
    assert card["graph"] == read_card(default_checkpoint())["graph"]
    with open(tmp_path / "run" / "alternet.curve.csv") as handle:
        assert [int(r["step"]) for r in csv.DictReader(handle)] == [1, 2, 4]
    assert load("alternet", tmp_path / "run" / "alternet.pt").infer(np.random.default_rng(0).normal(size=(50, 3))).shape == (3, 3)
