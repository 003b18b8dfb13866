"""Heuresis references and the on-disk cache: oracle, truth labels, floors, distance correlation,
the router's branch choice, BCA selection, and cache hit/miss/corruption/relocation."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from itertools import combinations

import numpy as np
import pytest

from causal_gym import _cache
from causal_gym.discovery import DeletionRecord
from causal_gym.envs.heuresis import references as refs
from causal_gym.envs.heuresis.instances import make_instance
from causal_gym.graphs import skeleton
from causal_gym.metrics import adjacency_scores


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(_cache.CACHE_ENV, str(tmp_path / "cache"))


# ---------------------------------------------------------------------------------------------
# cache
# ---------------------------------------------------------------------------------------------


def test_cache_hit_and_miss(tmp_path):
    calls = []

    def compute():
        calls.append(1)
        return {"values": np.arange(3.0), "n": np.int64(4)}

    key = {"kind": "t", "seed": [1, 2], "version": "v1"}
    first = _cache.cached(key, compute)
    second = _cache.cached(dict(reversed(list(key.items()))), compute)  # key order is irrelevant
    assert first == second == {"values": [0.0, 1.0, 2.0], "n": 4}
    assert len(calls) == 1
    _cache.cached({**key, "version": "v2"}, compute)
    assert len(calls) == 2
    files = list((tmp_path / "cache").iterdir())
    assert len(files) == 2 and all(f.suffix == ".json" for f in files)  # no temporary left behind


def test_cache_recovers_from_corrupt_entries(tmp_path):
    key = {"kind": "t", "version": "v1"}
    _cache.cached(key, lambda: {"x": 1})
    (path,) = (tmp_path / "cache").iterdir()
    for garbage in ('{"key": "tru', "[]", json.dumps({"key": "other", "payload": {"x": 5}})):
        path.write_text(garbage)
        assert _cache.cached(key, lambda: {"x": 2}) == {"x": 2}
        assert json.loads(path.read_text())["payload"] == {"x": 2}


def test_cache_dir_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(_cache.CACHE_ENV, str(tmp_path / "elsewhere"))
    assert _cache.cache_dir() == tmp_path / "elsewhere"
    _cache.cached({"k": 1}, lambda: {"v": 1})
    assert len(list((tmp_path / "elsewhere").iterdir())) == 1
    monkeypatch.delenv(_cache.CACHE_ENV)
    assert _cache.cache_dir() == _cache.Path.home() / ".cache" / "causal_gym"


def test_cache_rejects_non_mapping_results():
    with pytest.raises(ValueError, match="mapping"):
        _cache.cached({"k": 2}, lambda: [1, 2])


# -- entries and directories another user can write are not trusted (issue 44, item 5) -------------------------------

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="planting an entry owned by another user needs root")
TRUE, PLANTED = {"pc_kci_f1": 0.857}, {"pc_kci_f1": 0.0}


def _plant(path, how: str) -> None:
    """Replace the entry at ``path`` by one holding PLANTED under the same key, as another user could."""
    key = json.loads(path.read_text())["key"]
    path.unlink()
    forged = json.dumps({"key": key, "payload": PLANTED})
    if how == "a link":
        elsewhere = path.parent.parent / "forged.json"
        elsewhere.write_text(forged)
        path.symlink_to(elsewhere)
        return
    path.write_text(forged)
    if how == "owned by nobody":
        os.chown(path, 65534, 65534)
    else:
        path.chmod(0o666 if how == "world-writable" else 0o664)


@needs_root
@pytest.mark.parametrize("how", ["world-writable", "group-writable", "owned by nobody", "a link"])
def test_an_entry_another_user_could_write_is_recomputed_and_replaced(tmp_path, how):
    calls = []

    def compute():
        calls.append(1)
        return TRUE

    key = {"kind": "planted", "how": how, "version": "v1"}
    assert _cache.cached(key, compute) == TRUE and _cache.is_cached(key)
    (path,) = (tmp_path / "cache").iterdir()
    _plant(path, how)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert not _cache.is_cached(key)
        assert _cache.cached(key, compute) == TRUE and len(calls) == 2
    warned = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    if how == "a link":  # not followed: a miss like any other
        assert warned == []
    else:  # once per path and process, naming it
        assert len(warned) == 1 and f"does not trust {path}: " in warned[0], warned
    status = path.lstat()  # replaced by a trusted entry of this user, which hits again
    assert not path.is_symlink() and status.st_uid == os.geteuid() and status.st_mode & 0o022 == 0
    assert _cache.cached(key, compute) == TRUE and len(calls) == 2
    if how == "a link":
        assert json.loads((tmp_path / "forged.json").read_text())["payload"] == PLANTED  # not written through


@needs_root
@pytest.mark.parametrize("how", ["world-writable", "owned by nobody"])
def test_a_directory_another_user_could_write_is_neither_read_nor_written(tmp_path, how):
    calls = []

    def compute():
        calls.append(1)
        return TRUE

    key = {"kind": "planted-directory", "how": how, "version": "v1"}
    _cache.cached(key, compute)
    cache = tmp_path / "cache"
    (path,) = cache.iterdir()
    path.write_text(json.dumps({"key": json.loads(path.read_text())["key"], "payload": PLANTED}))
    if how == "owned by nobody":
        os.chown(cache, 65534, 65534)
    else:
        cache.chmod(0o777)
    with pytest.warns(RuntimeWarning, match=rf"does not trust {cache}:"):
        assert _cache.cached(key, compute) == TRUE
    assert _cache.cached({**key, "version": "v2"}, compute) == TRUE and len(calls) == 3
    assert sorted(cache.iterdir()) == [path]  # nothing stored where it would not be read back
    os.chown(cache, 0, 0)
    cache.chmod(0o700)
    assert _cache.cached(key, compute) == PLANTED  # the same entry, in a directory of this user's: trusted again


@needs_root
@pytest.mark.parametrize("how", ["owned by nobody", "world-writable", "world-writable directory"])
def test_a_planted_reference_does_not_reach_the_next_process(tmp_path, how):
    """The issue's attack end to end: PC-KCI's reference in one process, an entry planted by another user, the
    F1 the next process scores with (a plain script run from outside the repository)."""
    script = (
        "from causal_gym.envs.heuresis.instances import make_instance\n"
        "from causal_gym.envs.heuresis.references import pc_kci_reference, score_graph\n"
        "instance = make_instance('lg', 'dev', 0, d=5, n=200)\n"
        "print(score_graph(instance.hidden.dag, pc_kci_reference(instance).graph)['f1'])\n"
    )
    cache = tmp_path / "cache"
    environment = {**os.environ, _cache.CACHE_ENV: str(cache)}

    def score() -> tuple[float, str]:
        done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=environment, capture_output=True,
                              text=True, timeout=300, check=True)
        return float(done.stdout.split()[-1]), done.stderr

    truth, warned = score()
    assert truth > 0.0 and "does not trust" not in warned
    (path,) = cache.iterdir()
    entry = json.loads(path.read_text())
    assert '"label":"pc_kci"' in entry["key"]
    entry["payload"]["graph"] = np.zeros_like(entry["payload"]["graph"]).tolist()  # scores 0.0
    path.write_text(json.dumps(entry))
    if how == "owned by nobody":
        os.chown(path, 65534, 65534)
    else:
        (path if how == "world-writable" else cache).chmod(0o666 if how == "world-writable" else 0o777)
    again, warned = score()
    assert again == truth and "does not trust" in warned and str(path if how != "world-writable directory" else cache) in warned
    if how != "world-writable directory":  # replaced by the next process's own entry, which then hits
        replaced = path.stat().st_ino
        assert score() == (truth, "") and path.stat().st_ino == replaced


# ---------------------------------------------------------------------------------------------
# oracle, labels, floors on a hand-made case
# ---------------------------------------------------------------------------------------------


def _record(x, y, order):
    return DeletionRecord(x=x, y=y, cond=(), test="kci", pvalue=0.5, grade="weak", depth=0, order=order)


def test_restore_pairs_and_oracle_on_a_hand_made_case():
    # truth: 0 -> 1 -> 2 -> 3, 0 -> 3. PC kept 0 - 1 and 2 -> 3, deleted (0, 3) [wrong], (1, 2)
    # [wrong], (0, 2) [right], (1, 3) [right].
    truth = np.zeros((4, 4), dtype=np.int8)
    for i, j in ((0, 1), (1, 2), (2, 3), (0, 3)):
        truth[i, j] = 1
    pc_graph = np.zeros((4, 4), dtype=np.int8)
    pc_graph[0, 1] = pc_graph[1, 0] = 1
    pc_graph[2, 3] = 1
    log = tuple(_record(x, y, k) for k, (x, y) in enumerate(((0, 3), (1, 2), (0, 2), (1, 3))))
    wrong = np.array([bool(truth[r.x, r.y] or truth[r.y, r.x]) for r in log])
    ref = refs.PCReference(graph=pc_graph, deletion_log=log, wrong=wrong, n_tests=10, runtime=0.0)
    assert ref.wrong_pairs == [(0, 3), (1, 2)]
    oracle = refs.restore_pairs(pc_graph, ref.wrong_pairs)
    assert oracle[0, 3] == oracle[3, 0] == oracle[1, 2] == oracle[2, 1] == 1  # undirected
    assert oracle[2, 3] == 1 and oracle[3, 2] == 0  # the rest unchanged
    assert np.array_equal(skeleton(oracle), skeleton(truth))
    assert refs.score_graph(truth, oracle)["f1"] == 1.0
    assert refs.score_graph(truth, pc_graph)["f1"] == pytest.approx(2 * 1 * 0.5 / 1.5)


# ---------------------------------------------------------------------------------------------
# real instances (small)
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_instances():
    return [make_instance(family, "dev", i, d=6, n=200) for family in ("lg", "gauntlet") for i in range(3)]


def test_labels_equal_truth_adjacency_and_oracle_restores_exactly_them(small_instances):
    for inst in small_instances:
        ref = refs.pc_kci_reference(inst)
        dag = inst.hidden.dag
        true_pairs = {(i, j) for i, j in combinations(range(inst.d), 2) if dag[i, j] or dag[j, i]}
        assert {(r.x, r.y) for r, w in zip(ref.deletion_log, ref.wrong) if w} == {
            (r.x, r.y) for r in ref.deletion_log} & true_pairs
        oracle, scores = refs.oracle_graph(inst, ref)
        changed = {(i, j) for i, j in combinations(range(inst.d), 2)
                   if (oracle[i, j], oracle[j, i]) != (ref.graph[i, j], ref.graph[j, i])}
        assert changed == set(ref.wrong_pairs)
        pc = adjacency_scores(dag, ref.graph)
        assert scores["recall"] >= pc.recall
        assert scores["precision"] >= pc.precision  # every restored pair is a true edge
        # PC starts complete, so every pair missing from its output is in the log: the oracle
        # recovers every true edge.
        missing = {(i, j) for i, j in combinations(range(inst.d), 2) if not (ref.graph[i, j] or ref.graph[j, i])}
        assert missing == set(ref.deleted_pairs)
        assert scores["recall"] == 1.0


def test_floors_are_ordered(small_instances):
    for inst in small_instances:
        floors = refs.trivial_floors(inst, draws=5)
        assert floors["empty"] == 0.0
        assert floors["empty"] <= floors["pc_kci"] <= floors["oracle"]
        assert floors["random_restoration"] <= floors["oracle"]
        assert floors["complete"] == pytest.approx(
            2 * inst.hidden.dag.sum() / (inst.hidden.dag.sum() + inst.d * (inst.d - 1) / 2))


def test_pc_kci_reference_is_cached(small_instances, tmp_path):
    inst = small_instances[0]
    first = refs.pc_kci_reference(inst)
    files = list((tmp_path / "cache").iterdir())
    second = refs.pc_kci_reference(inst)
    assert len(list((tmp_path / "cache").iterdir())) == len(files)
    assert np.array_equal(first.graph, second.graph) and first.deletion_log == second.deletion_log
    assert second.runtime == first.runtime  # the cached run, not a new one


# ---------------------------------------------------------------------------------------------
# distance correlation and the router
# ---------------------------------------------------------------------------------------------


def _dcor_brute_force(x, y):
    n = len(x)
    a = [[abs(x[i] - x[j]) for j in range(n)] for i in range(n)]
    b = [[abs(y[i] - y[j]) for j in range(n)] for i in range(n)]

    def centre(m):
        rows = [sum(r) / n for r in m]
        cols = [sum(m[i][j] for i in range(n)) / n for j in range(n)]
        grand = sum(rows) / n
        return [[m[i][j] - rows[i] - cols[j] + grand for j in range(n)] for i in range(n)]

    A, B = centre(a), centre(b)

    def v(P, Q):
        return sum(P[i][j] * Q[i][j] for i in range(n) for j in range(n)) / n**2

    return (v(A, B) / (v(A, A) * v(B, B)) ** 0.5) ** 0.5


def test_distance_correlation_matches_brute_force():
    rng = np.random.default_rng(0)
    for _ in range(5):
        x = rng.normal(size=40)
        y = x**2 + 0.3 * rng.normal(size=40)
        assert refs.distance_correlation(x, y) == pytest.approx(_dcor_brute_force(x, y), rel=1e-10)
    assert refs.distance_correlation(x, 2 * x - 1) == pytest.approx(1.0)
    assert refs.distance_correlation(x, np.ones(40)) == 0.0
    with pytest.raises(ValueError):
        refs.distance_correlation(x, x[:5])


def test_distance_correlation_matches_the_dcor_package():
    dcor = pytest.importorskip("dcor")
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=100), rng.normal(size=100)
    assert refs.distance_correlation(x, np.sin(3 * x) + y) == pytest.approx(
        dcor.distance_correlation(x, np.sin(3 * x) + y), rel=1e-8)


def _chain_data(mapping, n=600, seed=0):
    """x -> m -> y: PC deletes (x, y) given m; the screen only sees the unconditional shape."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    m = mapping(x) + 0.2 * rng.normal(size=n)
    y = mapping(m) + 0.2 * rng.normal(size=n)
    z = rng.normal(size=n)  # an independent variable: deleted pairs that are not flagged
    return np.column_stack([x, m, y, z])


def test_router_keeps_fisher_z_on_linear_data():
    result = refs.router_graph(_chain_data(lambda v: 0.8 * v), seed=0)
    assert result.branch == "pc_fisherz" and result.flagged_share < refs.ROUTER_TAU


def test_router_switches_to_kci_on_strongly_nonlinear_data():
    data = _chain_data(np.abs)  # |x| is uncorrelated with x: Fisher-z deletes, dCor sees it
    result = refs.router_graph(data, seed=0)
    assert result.branch == "pc_kci" and result.flagged_share >= refs.ROUTER_TAU
    assert (0, 1) in result.flagged
    from causal_gym.discovery import run

    assert np.array_equal(result.graph, run("pc", data, test="kci", alpha=refs.ALPHA).graph)


def test_router_subsample_is_capped_and_seeded():
    data = _chain_data(np.abs, n=900)
    assert refs.router_screen(data, [(0, 1), (2, 3)], 5) == refs.router_screen(data, [(0, 1), (2, 3)], 5)
    assert refs.router_screen(data, [], 5) == ("pc_fisherz", 0.0, ())


# ---------------------------------------------------------------------------------------------
# BCA selection and tables on synthetic rows
# ---------------------------------------------------------------------------------------------


def _row(family, f1s, oracle, wrong=1):
    return {
        "family": family, "n_wrong": wrong, "n_edges": 10,
        "menu": {label: {"f1": f1s.get(label, 0.5), "n_tests": 100, "runtime": 1.0} for label in refs.MENU},
        "oracle": {"f1": oracle},
        "router": {"f1": f1s.get("pc_kci", 0.5), "branch": "pc_kci"},
        "floors": {"empty": 0.0, "oracle": oracle},
    }


def test_bca_selection_and_headrooms():
    dev = [_row("lg", {"ges": 0.95, "pc_kci": 0.85}, 0.97), _row("lg", {"ges": 0.93, "pc_kci": 0.87}, 0.97),
           _row("wild", {"ges": 0.60, "pc_kci": 0.82}, 0.99), _row("wild", {"ges": 0.62, "pc_kci": 0.80}, 0.99)]
    bca_g, bca_phi = refs.best_chosen_algorithms(dev)
    assert bca_g == "pc_kci"  # (0.86 + 0.81) / 2 > (0.94 + 0.61) / 2
    assert bca_phi == {"lg": "ges", "wild": "pc_kci"}
    table = refs.reference_table(dev, dev)
    lg = table["families"]["lg"]
    assert lg["selection_headroom"][0] == pytest.approx(0.94 - 0.86)
    assert lg["repair_headroom"][0] == pytest.approx(0.97 - 0.94)
    assert table["families"]["wild"]["selection_headroom"] == [0.0, 0.0, 0.0]
    difficulty = refs.difficulty_table(dev)
    assert difficulty["wild"]["headroom"] == pytest.approx(0.99 - 0.81)


# ---------------------------------------------------------------------------------------------
# fidelity (slow): PC-KCI on the 32 test instances per family against the paper's Table 2
# ---------------------------------------------------------------------------------------------

# Table 2 of the paper: mean wrong deletions of PC-KCI, share of instances with none.
PAPER_TABLE2 = {"lg": (2.4, 0.23), "anm": (1.4, 0.26), "hetero": (1.0, 0.39), "wild": (3.0, 0.05),
                "mixed": (1.2, 0.36), "gauntlet": (2.4, 0.09)}


@pytest.mark.slow
@pytest.mark.parametrize("family", list(PAPER_TABLE2))
def test_fidelity_pc_kci_difficulty_matches_table_2(family, monkeypatch):
    monkeypatch.delenv(_cache.CACHE_ENV)  # use (and fill) the shared cache: this is a long run
    rows = refs.collect_rows((family,), "test", labels=("pc_fisherz", "pc_kci"), progress=False)
    cell = refs.difficulty_table(rows)[family]
    wrong, zero = PAPER_TABLE2[family]
    # The fidelity goals: wrong deletions within 35% relative, zero-share within 12 points,
    # the oracle in the paper's .97-.99 band.
    assert 0.97 <= cell["f1_oracle"] <= 0.995
    assert abs(cell["wrong"] - wrong) <= 0.35 * wrong
    assert abs(cell["zero_share"] - zero) <= 0.12


@pytest.mark.slow
def test_the_published_best_chosen_algorithms_are_what_100_dev_instances_choose(monkeypatch):
    """The choice reports use by default (PUBLISHED_CHOICE) recomputed from scratch on the dev split."""
    monkeypatch.delenv(_cache.CACHE_ENV)  # the shared cache: 600 menu rows
    labels = refs.PUBLISHED_CHOICE["labels"]
    rows = refs.collect_rows(refs.FAMILIES, "dev", range(100), labels=labels, progress=False,
                             **refs.PUBLISHED_CHOICE["shape"])
    bca_g, bca_phi = refs.best_chosen_algorithms([{**row, "menu": {k: row["menu"][k] for k in labels}} for row in rows])
    assert bca_g == refs.PUBLISHED_CHOICE["bca_g"] and bca_phi == dict(refs.PUBLISHED_CHOICE["bca_phi"])


def test_reports_use_the_published_choice_and_compute_only_the_instances_played(monkeypatch):
    """A report of a few default-shape episodes asks for no dev row (the 4-8 h a new user met)."""
    pd = pytest.importorskip("pandas")
    from causal_gym.envs.heuresis import report

    asked = []

    def fake_rows(families, split, indices, **kwargs):
        asked.append((tuple(families), split, tuple(indices)))
        menu = {label: {"f1": 0.5} for label in ("pc_fisherz", *refs.PUBLISHED_CHOICE["labels"])}
        return [{"family": f, "split": split, "index": i, "menu": menu, "oracle": {"f1": 0.9},
                 "floors": {name: 0.1 for name in report.FLOORS}} for f in families for i in indices]

    monkeypatch.setattr(refs, "collect_rows", fake_rows)
    frame = pd.DataFrame([{"benchmark": "heuresis", "status": "finished", "setting": "lg", "split": "test",
                           "instance": k, "unit": f"lg|test|{k}", "d": 10, "n": 600, "expected_degree": 2.0,
                           "seal": None} for k in (3, 5)])
    references = report.heuresis_references(frame)
    assert asked == [(("lg",), "test", (3, 5))]
    assert references.units["lg|test|3"]["bca_phi"] == "ges" and references.units["lg|test|5"]["bca_g"] == "pc_kci"
    with pytest.raises(ValueError, match="not published"):
        report.heuresis_references(frame.assign(d=4))


@pytest.mark.parametrize("family", ["lg", "anm", "hetero", "wild", "mixed", "gauntlet"])
def test_menu_ges_is_causallearns_ges_on_menu_instances(family):
    # The menu's GES is our incremental search; the references stay those of causal-learn's GES.
    from causal_gym.discovery import run
    from causal_gym.envs.heuresis.instances import make_instance

    for index in (0, 1):
        data = make_instance(family, "test", index).data
        assert np.array_equal(run("ges_fast", data).graph, run("ges", data).graph), f"{family} test {index}"


def test_foundation_baseline_rows_score_the_shipped_network_on_the_instance(small_instances, monkeypatch):
    from causal_gym.discovery.amortized import load

    monkeypatch.delenv("CAUSAL_GYM_CDFM_CHECKPOINT", raising=False)  # cdfm is a baseline only when configured

    inst = small_instances[0]
    row = refs.instance_row(inst.family, "dev", 0, d=6, n=200, labels=("pc_fisherz",), baselines=("alternet",))
    direct = load("alternet").run(inst.data).graph  # an independent load, the default threshold
    expected = adjacency_scores(inst.hidden.dag, direct)
    scores = row["baselines"]["alternet"]
    assert (scores["precision"], scores["recall"], scores["f1"]) == pytest.approx(
        (expected.precision, expected.recall, expected.f1))
    assert refs.instance_row(inst.family, "dev", 0, d=6, n=200, labels=("pc_fisherz",))["baselines"] == {}
    with pytest.raises(ValueError, match="unknown baseline"):
        refs.collect_rows(("lg",), "dev", range(1), d=6, n=200, labels=("pc_fisherz",), baselines=("cdfm",))


def test_the_table_reports_each_baseline_against_the_family_choice():
    rows = [_row("lg", {"ges": 0.95, "pc_kci": 0.85}, 0.97), _row("lg", {"ges": 0.93, "pc_kci": 0.87}, 0.97)]
    for row, f1 in zip(rows, (0.70, 0.81)):
        row["baselines"] = {"alternet": {"f1": f1}}
    cell = refs.reference_table(rows, rows)["families"]["lg"]["baselines"]["alternet"]
    assert cell["f1"][0] == pytest.approx(0.755)
    assert cell["residual_gain"][0] == pytest.approx(0.755 - 0.94)  # BCA_phi on lg is ges
