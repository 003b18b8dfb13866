"""The pretraining-exposure check (paper Eq. 8, Fig. 15): hand cases, a loop reference, invariances, and the
ID/OOD split of the shipped checkpoint's declared prior, end to end through ``causal-gym reproduce arena``."""

from __future__ import annotations

import numpy as np
import pytest

from causal_gym.discovery.amortized import read_card
from causal_gym.envs.arena.analysis import exposure_scores
from causal_gym.envs.arena.families.tags import MECHANISM_TAGS, NOISE_TAGS, ROOT_FAMILIES
from causal_gym.envs.arena.graph_families import GRAPH_FAMILIES
from causal_gym.envs.arena.prior import EXPOSURE_AXES, declared_coverage

COVERAGE = {"graph_family": {"chain"}, "mechanism": {"lin"}}


def _rows(table: list[tuple[str, list[str], dict[str, float]]]) -> list[dict]:
    return [{"unit": f"u{k}", "method": method, "f1": f1, "graph_family": family, "mechanisms": mechanisms}
            for k, (family, mechanisms, scores) in enumerate(table) for method, f1 in scores.items()]


HAND = _rows([
    ("chain", ["lin"], {"m": 0.8, "a": 0.4, "b": 0.6}),
    ("chain", ["lin", "mult"], {"m": 0.6, "a": 0.5, "b": 0.5}),
    ("small_world", ["mult"], {"m": 0.2, "a": 0.4, "b": 0.4}),
    ("small_world", ["trig"], {"m": 0.3, "a": 0.1, "b": 0.3}),
])


def test_a_hand_case_gives_the_paper_relative_gains() -> None:
    family, mechanism, mean = exposure_scores(HAND, "m", COVERAGE, ["a", "b"], n_boot=50)
    # graph family: ID {chain}: m 0.7, a 0.45, b 0.55 -> ref 0.5; OOD {small_world}: m 0.25, ref (0.25 + 0.35) / 2
    assert family["f1_id"] == pytest.approx(0.7) and family["reference_id"] == pytest.approx(0.5)
    assert family["gain_id"] == pytest.approx(0.4)
    assert family["gain_ood"] == pytest.approx((0.25 - 0.3) / 0.3)
    # mechanism: OOD categories mult (units 2, 3) and trig (unit 4), macro-averaged
    assert mechanism["ood_categories"] == ["mult", "trig"]
    assert mechanism["f1_ood"] == pytest.approx((0.4 + 0.3) / 2)
    assert mechanism["reference_ood"] == pytest.approx(((0.45 + 0.1) / 2 + (0.45 + 0.3) / 2) / 2)
    assert mechanism["gap"] == pytest.approx(0.4 - (0.35 - 0.325) / 0.325)
    assert mean["gain_ood"] == pytest.approx(((0.25 - 0.3) / 0.3 + (0.35 - 0.325) / 0.325) / 2)
    assert mean["gap"] == pytest.approx((family["gap"] + mechanism["gap"]) / 2)
    for row in (family, mechanism, mean):
        for key in ("gain_ood", "gap"):
            low, high = row[f"{key}_interval"]
            assert low <= row[key] <= high


def _loop_reference(rows: list[dict], method: str, covered: set[str], reference: list[str], column: str) -> tuple:
    """F1 ID/OOD and gains by plain loops (the module uses weighted matrix products)."""
    scores: dict[str, dict[str, float]] = {}
    labels: dict[str, list[str]] = {}
    for row in rows:
        scores.setdefault(row["unit"], {})[row["method"]] = row["f1"]
        value = row[column]
        labels[row["unit"]] = [value] if isinstance(value, str) else value

    def side(name: str, inside: bool) -> float:
        categories = sorted({c for cs in labels.values() for c in cs if (c in covered) == inside})
        return float(np.mean([np.mean([scores[u][name] for u in labels if c in labels[u]]) for c in categories]))

    out = []
    for inside in (True, False):
        own, ref = side(method, inside), np.mean([side(r, inside) for r in reference])
        out += [own, (own - ref) / ref]
    return tuple(out)


def test_random_tables_match_a_loop_reference_and_are_scale_free() -> None:
    gen = np.random.default_rng(3)
    families, mechanisms = ["chain", "tree", "small_world"], ["lin", "mult", "trig", "exp"]
    table = [(str(gen.choice(families)), sorted(gen.choice(mechanisms, size=gen.integers(1, 3), replace=False).tolist()),
              {m: float(gen.uniform(0.1, 0.9)) for m in "mab"}) for _ in range(40)]
    rows = _rows(table)
    coverage = {"graph_family": {"chain", "tree"}, "mechanism": {"lin", "exp"}}
    result = exposure_scores(rows, "m", coverage, ["a", "b"], n_boot=20)
    for row, column in zip(result, ("graph_family", "mechanisms")):
        f1_id, gain_id, f1_ood, gain_ood = _loop_reference(rows, "m", coverage[row["axis"]], ["a", "b"], column)
        assert (row["f1_id"], row["gain_id"], row["f1_ood"], row["gain_ood"]) == pytest.approx(
            (f1_id, gain_id, f1_ood, gain_ood))
    # relative gains do not change when every score is scaled; the same method as its reference gains nothing
    scaled = exposure_scores([{**r, "f1": 0.5 * r["f1"]} for r in rows], "m", coverage, ["a", "b"], n_boot=20)
    assert [r["gap"] for r in scaled] == pytest.approx([r["gap"] for r in result])
    twin = [{**r, "method": "c"} for r in rows if r["method"] == "m"]
    same = exposure_scores(rows + twin, "m", coverage, ["c"], n_boot=20)
    assert all(r["gain_ood"] == pytest.approx(0.0) and r["gap"] == pytest.approx(0.0) for r in same)


def test_units_missing_a_score_are_left_out_and_bad_calls_are_errors() -> None:
    failed = [{**r, "unit": "u9"} for r in _rows([("chain", ["lin"], {"m": 0.9, "a": None, "b": 0.1})])]
    rows = HAND + failed  # a unit whose reference run failed
    assert exposure_scores(rows, "m", COVERAGE, ["a", "b"], n_boot=5)[0]["n_units"] == 4
    assert exposure_scores(rows, "m", COVERAGE, ["a", "b"], n_boot=5)[0]["f1_id"] == pytest.approx(0.7)
    with pytest.raises(ValueError, match="reference must name methods other than"):
        exposure_scores(HAND, "m", COVERAGE, ["m", "a"])
    with pytest.raises(ValueError, match="no unit has"):
        exposure_scores(HAND, "m", COVERAGE, ["zzz"])
    with pytest.raises(ValueError, match="average replicates first"):
        exposure_scores(HAND + HAND, "m", COVERAGE, ["a"])
    only_inside = exposure_scores(HAND, "m", {"graph_family": {"chain", "small_world"}}, ["a"], n_boot=5)
    assert only_inside[0]["gain_ood"] is None and only_inside[-1]["axes"] == []


def test_the_shipped_card_declares_arena_tags_that_cover_what_its_training_draws_use() -> None:
    from causal_gym.discovery.amortized.prior import PRIOR, draw

    coverage = declared_coverage(read_card()["arena_coverage"])
    assert set(coverage) == set(EXPOSURE_AXES) == {"graph_family", "mechanism", "noise", "root"}
    assert coverage == declared_coverage(PRIOR.arena_coverage())  # the card is of the prior in the code
    assert coverage["graph_family"] == {"erdos_renyi", "scale_free", "small_world"} < set(GRAPH_FAMILIES)
    assert coverage["mechanism"] < set(MECHANISM_TAGS) and coverage["noise"] < set(NOISE_TAGS)
    assert coverage["root"] < set(ROOT_FAMILIES)
    # every graph family a training draw reports is an arena family it declares; so is its noise law
    for seed in range(12):
        info = draw(seed, stream="train", d=6, n=50).info
        assert info["graph_family"] in coverage["graph_family"] and info["noise"] in coverage["noise"]
    with pytest.raises(ValueError, match="unknown mechanism"):
        declared_coverage({**PRIOR.arena_coverage(), "mechanism": ["linear_additive", "telepathy"]})
    with pytest.raises(ValueError, match="exactly the axes"):
        declared_coverage({"graph_family": ["chain"]})


def test_reproduce_prints_the_exposure_of_alternet_from_its_episodes(tmp_path, capsys) -> None:
    from causal_gym.envs.arena.reproduce import main
    from causal_gym.eval.runner import run_plan

    output = main(["--quick", "--methods", "alternet,pc", "--families", "chain,small_world,collider_rich",
                   "--instances", "1", "--no-grounded", "--splits", "obs", "--out", str(tmp_path), "--quiet"],
                  runner=run_plan)
    assert "Pretraining exposure, synthetic obs, d = 10: alternet" in capsys.readouterr().out
    rows = [r for r in output["averaged"] if r["protocol"] == "obs"]
    assert all(r["mechanisms"] and r["noises"] and r["roots"] for r in rows)  # the SCM's tags reached the rows
    family = output["exposure"]["alternet"]["by_d"]["10"][0]
    assert family["id_categories"] == ["small_world"] and family["ood_categories"] == ["chain", "collider_rich"]
    expected = _loop_reference(rows, "alternet", {"small_world"}, ["pc"], "graph_family")
    assert (family["f1_id"], family["gain_id"], family["f1_ood"], family["gain_ood"]) == pytest.approx(expected)
    assert list(output["exposure"]["alternet"]["by_d"]) == ["10"]  # one d: no "all" copy of it
