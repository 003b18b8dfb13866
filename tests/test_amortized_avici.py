"""load('avici'): the AVICI network through the avici package, on checkpoints made here.

The checkpoints are small networks of the package's own architecture (``InferenceModel`` around
``BaseModel``) with seeded random weights, initialized by the package's ``Updater`` and written by its
``CheckpointingUpdater`` (``kwargs.json`` + ``checkpoint_*.pkl``). The references are the package's own
``load_pretrained(checkpoint_dir=...)`` model call, its documented index conventions, and
permutation equivariance (the architecture has no positional encoding over variables or rows).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from causal_gym.discovery.amortized.avici_checkpoint import CHECKPOINT_ENV, import_avici

try:
    import_avici()
except ImportError as err:
    pytest.skip(f"avici or its inference dependencies (jax 0.5, dm-haiku, optax, deepdiff) are missing: {err}",
                allow_module_level=True)

import jax  # noqa: E402
import optax  # noqa: E402
from avici.backbone import CheckpointingUpdater, Updater  # noqa: E402
from avici.model import BaseModel, InferenceModel  # noqa: E402
from avici.pretrain import load_pretrained  # noqa: E402

from amortized_checks import chain_datasets, check_result_contract  # noqa: E402
from causal_gym.discovery import methods  # noqa: E402
from causal_gym.discovery.amortized import available_methods, load  # noqa: E402

# Small, and with the logit bias at 0 and a cosine temperature e^2, so random weights spread
# probabilities on both sides of 0.5 (the package's defaults, bias -3, make nearly empty graphs).
NETWORK = {"layers": 1, "dim": 16, "key_size": 8, "num_heads": 2, "widening_factor": 2, "dropout": 0.0,
           "logit_bias_init": 0.0, "cosine_temp_init": 2.0}


def write_checkpoint(folder: Path, seed: int = 0) -> Path:
    """A checkpoint folder written by the package's own initializer and checkpointer."""
    inference_model_kwargs = {"train_p_obs_only": 0.0, "acyclicity": None, "acyclicity_pow_iters": 10,
                              "mask_diag": True}
    model = InferenceModel(**inference_model_kwargs, model_class=BaseModel, model_kwargs=dict(NETWORK))
    updater = Updater(net_init=model.net.init, loss_fn=model.loss, opt=optax.adam(1e-4), acyclicity_dual_lr=0.0,
                      acyclicity_inner_step=1, acyclicity_burnin=0, acyclicity_warmup=False)
    checkpointer = CheckpointingUpdater(updater, str(folder), save_kwargs={
        "inference_model_kwargs": inference_model_kwargs, "neural_net_kwargs": NETWORK})
    state = checkpointer.init(jax.random.PRNGKey(seed), np.zeros((8, 3, 2), dtype=np.float32))
    checkpointer.checkpoint(state, 1)
    return folder


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    folder = write_checkpoint(tmp_path_factory.mktemp("avici") / "ckpt")
    # the package's load_pretrained(checkpoint_dir=...) also asserts kwargs.json in the parent folder
    shutil.copy(folder / "kwargs.json", folder.parent / "kwargs.json")
    return folder


@pytest.fixture(scope="module")
def method(checkpoint):
    return load("avici", checkpoint)


@pytest.fixture(scope="module")
def reference(checkpoint):
    return load_pretrained(checkpoint_dir=str(checkpoint), expects_counts=False, verbose=False)


def datasets(k: int, n: int = 40, d: int = 5, seed: int = 0) -> list[np.ndarray]:
    return chain_datasets(k, n, d, seed)


def interventional(n: int = 40, d: int = 5, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Rows 0..9 observational, then node 0 and node 3 set by intervention in blocks of ten rows."""
    x = datasets(1, n=n, d=d, seed=seed)[0]
    mask = np.zeros((n, d), dtype=bool)
    mask[10:20, 0] = True
    mask[20:30, 3] = True
    x[mask] = 2.0
    return x, mask


def test_results_equal_the_package_model_on_ten_datasets(method, reference):
    edges = 0
    for x in datasets(10):
        ours = method.run(x)
        theirs = np.asarray(reference(x.astype(np.float32)))
        np.testing.assert_allclose(ours.probabilities, theirs, rtol=0, atol=1e-6)  # no transpose, same diagonal 0
        np.testing.assert_array_equal(ours.graph, np.asarray(reference(x.astype(np.float32), return_probs=False)))
        edges += int(ours.graph.sum())
    assert 0 < edges < 10 * 20  # the comparison is not between empty (or full) graphs


def test_shapes_timing_and_zero_diagonal(method):
    result = check_result_contract(method, datasets(1, d=7)[0], "avici")
    assert result.threshold == method.threshold == 0.5


def test_the_edge_i_to_j_is_the_package_entry_i_j(method, monkeypatch):
    # The package's simulators make x_j a function of the i with g[i, j] = 1 (g[:, j] are j's parents);
    # plant the package's own output and check our [i, j] is its [i, j].
    planted = np.full((4, 4), 0.1, dtype=np.float32)
    planted[0, 1] = planted[2, 3] = 0.9
    monkeypatch.setattr(method, "model", lambda x, **_: planted.copy())
    result = method.run(datasets(1, d=4)[0])
    assert np.argwhere(result.graph).tolist() == [[0, 1], [2, 3]]


def test_permuting_columns_permutes_both_axes_and_rows_change_nothing(method):
    x = datasets(1, d=6, seed=3)[0]
    perm = np.array([3, 0, 5, 1, 4, 2])
    base = method.infer(x)
    np.testing.assert_allclose(method.infer(x[:, perm]), base[np.ix_(perm, perm)], atol=1e-5)
    rows = np.random.default_rng(0).permutation(len(x))
    np.testing.assert_allclose(method.infer(x[rows]), base, atol=1e-5)
    assert not np.allclose(base, base.T, atol=1e-3)  # the network is directed: a transpose would be caught


def test_the_threshold_is_strict_and_configurable(checkpoint, method):
    x = datasets(1, seed=4)[0]
    p = method.infer(x)
    for threshold in (0.3, 0.5, 0.7):
        result = load("avici", checkpoint, threshold=threshold).run(x)
        assert result.threshold == threshold
        np.testing.assert_array_equal(result.graph, (p > threshold).astype(np.int8))
    # a probability exactly at the threshold is not an edge (the package's `out > 0.5`)
    at = load("avici", checkpoint, threshold=float(np.float32(p[0, 1])))
    assert at.run(x).graph[0, 1] == 0
    for bad in (0.0, 1.0, -0.5):
        with pytest.raises(ValueError, match="threshold"):
            load("avici", checkpoint, threshold=bad)


def test_run_many_equals_run_one_by_one(method):
    data = datasets(4, seed=7)
    x, mask = interventional()
    data.append(x)
    masks = [None] * 4 + [mask]
    for many, one in zip(method.run_many(data, masks), [method.run(d, m) for d, m in zip(data, masks)]):
        np.testing.assert_array_equal(many.probabilities, one.probabilities)
        np.testing.assert_array_equal(many.graph, one.graph)
        assert many.load_seconds == one.load_seconds
    with pytest.raises(ValueError, match="one per dataset"):
        method.run_many(data, masks[:2])


def test_an_intervention_mask_is_the_package_second_channel(method, reference):
    x, mask = interventional()
    ours = method.run(x, mask)
    theirs = np.asarray(reference(x.astype(np.float32), interv=mask.astype(np.float32)))
    np.testing.assert_allclose(ours.probabilities, theirs, rtol=0, atol=1e-6)
    assert ours.extras["interventional"]
    observational = method.infer(x)
    assert np.abs(ours.probabilities - observational).max() > 1e-3  # the mask reaches the network
    # transposed or row-shuffled masks are other inputs to the package: ours must not match them
    shuffled = mask[np.random.default_rng(2).permutation(len(mask))]
    other = np.asarray(reference(x.astype(np.float32), interv=shuffled.astype(np.float32)))
    assert np.abs(ours.probabilities - other).max() > 1e-3
    np.testing.assert_array_equal(mask, interventional()[1])  # the caller's mask is not rounded in place
    with pytest.raises(ValueError, match="mask must have the data's shape"):
        method.run(x, mask.T)
    with pytest.raises(ValueError, match="boolean"):
        method.run(x, mask * 0.5)


def test_without_a_checkpoint_the_error_says_where_to_get_one(tmp_path, monkeypatch):
    monkeypatch.delenv(CHECKPOINT_ENV, raising=False)
    with pytest.raises(FileNotFoundError, match=f"larslorch/avici.*scm-v0.*{CHECKPOINT_ENV}"):
        load("avici")
    (tmp_path / "kwargs.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match="no a .pkl model state"):
        load("avici", tmp_path)
    with pytest.raises(FileNotFoundError, match="is not a folder"):
        load("avici", tmp_path / "absent")
    assert "avici" not in available_methods() and "avici" in methods(kind="amortized")


def test_the_environment_variable_points_to_the_checkpoint(checkpoint, method, monkeypatch):
    monkeypatch.setenv(CHECKPOINT_ENV, str(checkpoint))
    assert "avici" in available_methods()
    x = datasets(1, seed=9)[0]
    np.testing.assert_array_equal(load("avici").run(x).probabilities, method.run(x).probabilities)


def test_the_count_checkpoint_gets_the_package_count_standardizer(tmp_path):
    folder = write_checkpoint(tmp_path / "neurips-grn", seed=2)  # the published name of the count model
    shutil.copy(folder / "kwargs.json", tmp_path / "kwargs.json")
    counts = np.random.default_rng(3).poisson(5.0, size=(40, 5)).astype(float)
    method = load("avici", folder)
    assert method.expects_counts and not load("avici", folder, expects_counts=False).expects_counts
    theirs = load_pretrained(checkpoint_dir=str(folder), expects_counts=True, verbose=False)
    z_scored = load_pretrained(checkpoint_dir=str(folder), expects_counts=False, verbose=False)
    ours = method.infer(counts)
    np.testing.assert_allclose(ours, np.asarray(theirs(counts.astype(np.float32))), rtol=0, atol=1e-6)
    assert np.abs(ours - np.asarray(z_scored(counts.astype(np.float32)))).max() > 1e-3  # the choice matters


def test_avici_as_a_discovery_method_equals_the_package_and_is_listed_only_when_configured(checkpoint, reference,
                                                                                            monkeypatch):
    from causal_gym.discovery import check_method, run
    from causal_gym.discovery.amortized import cache_options
    from causal_gym.harness.menu import MenuEntry

    monkeypatch.delenv(CHECKPOINT_ENV, raising=False)
    assert "avici" not in methods()
    for build in (lambda: check_method("avici"), lambda: MenuEntry("avici", "avici"),
                  lambda: run("avici", datasets(1)[0])):
        with pytest.raises((FileNotFoundError, ValueError), match="larslorch/avici"):  # a menu wraps it in ValueError
            build()
    x, mask = interventional()
    out = run("avici", x, mask, checkpoint=str(checkpoint))
    theirs = np.asarray(reference(x.astype(np.float32), interv=mask.astype(np.float32)))
    np.testing.assert_allclose(out.extras["probabilities"], theirs, rtol=0, atol=1e-6)  # the mask reached the package
    np.testing.assert_array_equal(out.graph, (theirs > 0.5).astype(out.graph.dtype))
    monkeypatch.setenv(CHECKPOINT_ENV, str(checkpoint))
    assert "avici" in methods() and MenuEntry("avici", "avici").method == "avici"
    plain = run("avici", x)  # the folder from the variable, no mask
    np.testing.assert_allclose(plain.extras["probabilities"], np.asarray(reference(x.astype(np.float32))),
                               rtol=0, atol=1e-6)
    key = cache_options("avici", {"checkpoint": str(checkpoint)})
    assert str(checkpoint) not in repr(key) and key == cache_options("avici", {})  # content, not the path
