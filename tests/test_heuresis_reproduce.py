"""The printed Heuresis tables mark cells that rest on fewer instances than the paper's, so a
``--quick`` run is not read as a reproduction (and a full-size run is not marked)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from causal_gym.envs.heuresis import reproduce
from causal_gym.envs.heuresis.families import FAMILIES

LABELS = ("pc_fisherz", "pc_kci", "ges")


def _rows(split: str, n: int, rng: np.random.Generator) -> list[dict]:
    """Hand-built rows of the shape :func:`causal_gym.envs.heuresis.references.instance_row` returns."""
    rows = []
    for family in FAMILIES:
        for index in range(n):
            f1 = {label: float(rng.uniform(0.6, 0.95)) for label in LABELS}
            rows.append({
                "family": family, "split": split, "index": index, "n_edges": 10, "graph_prior": "er",
                "n_deleted": 30, "n_wrong": int(rng.integers(0, 4)),
                "menu": {label: {"precision": v, "recall": v, "f1": v, "nshd": 0.1, "runtime": 1.0, "n_tests": 50}
                         for label, v in f1.items()},
                "oracle": {"precision": 1.0, "recall": 1.0, "f1": 0.98, "nshd": 0.0},
                "floors": {"empty": 0.0, "complete": 0.4},
                "router": {"branch": "pc_fisherz", "flagged_share": 0.1, "precision": 0.8, "recall": 0.8,
                           "f1": f1["pc_fisherz"], "nshd": 0.1},
            })
    return rows


def _family_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if re.match(rf"({'|'.join(FAMILIES)}) ", line)]


@pytest.mark.parametrize(("n_dev", "n_test", "marked"), [(4, 4, True), (100, 32, False), (100, 5, True)])
def test_tables_mark_cells_on_too_few_instances(capsys, n_dev, n_test, marked):
    rng = np.random.default_rng(0)
    test_rows, dev_rows = _rows("test", n_test, rng), _rows("dev", n_dev, rng)
    reproduce.print_difficulty(test_rows)
    reproduce.print_references(dev_rows, test_rows)
    text = capsys.readouterr().out
    lines = _family_lines(text)
    assert len(lines) == 3 * len(FAMILIES)  # Tables 2, 3 and 11
    mark = reproduce.FEW_MARK
    assert all((mark in line) is marked for line in lines), text
    assert ("too few instances" in text) is marked
    if marked:
        assert f"{n_test} test (paper 32)" in text
        assert (f"{n_dev} dev (paper 100)" in text) is (n_dev < 100)
        # every "ours" cell of Table 2 carries the mark right before the paper's value
        table2 = lines[: len(FAMILIES)]
        assert all(line.count(f"{mark}|") == 3 for line in table2)
