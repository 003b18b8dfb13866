"""The load / per-graph split (paper Table 4): the fit against closed forms, nested timings of a real process."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from causal_gym.envs.arena.load_split import balanced_sample, fit_load_split, nested_timings


def test_an_exact_line_is_recovered_and_noise_fits_the_closed_form() -> None:
    exact = [{"method": "m", "d": 10, "k": k, "seconds": 3.0 + 0.25 * k} for k in (4, 8, 16, 32)]
    fit, mean = fit_load_split(exact)
    assert (fit["t_fixed"], fit["t_graph"], fit["r2"]) == pytest.approx((3.0, 0.25, 1.0))
    assert mean["d"] == "mean" and mean["min_r2"] == pytest.approx(1.0)
    gen = np.random.default_rng(0)
    k = np.array([5.0, 10, 20, 40, 5, 10, 20, 40])
    t = 2.0 + 0.1 * k + gen.normal(0, 0.3, k.size)
    rows = [{"method": "m", "d": d, "k": int(a), "seconds": float(b)} for d in (10, 30) for a, b in zip(k, t * d / 10)]
    fits = fit_load_split(rows)
    slope = np.cov(k, t, bias=True)[0, 1] / k.var()  # ordinary least squares, written out
    intercept = t.mean() - slope * k.mean()
    r2 = 1 - ((t - intercept - slope * k) ** 2).sum() / ((t - t.mean()) ** 2).sum()
    assert (fits[0]["t_fixed"], fits[0]["t_graph"], fits[0]["r2"]) == pytest.approx((intercept, slope, r2))
    assert fits[1]["t_graph"] == pytest.approx(3 * slope)  # times scaled by 3 at d = 30
    assert fits[2]["t_graph"] == pytest.approx(2 * slope) and fits[2]["r2"] == pytest.approx(r2)
    with pytest.raises(ValueError, match="two distinct k"):
        fit_load_split(exact[:1])


def test_the_sample_is_seeded_and_sized() -> None:
    first = balanced_sample(6, 12, n=40)
    assert len(first) == 12 and all(x.shape == (40, 6) for x in first)
    again = balanced_sample(6, 12, n=40)
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    assert not np.array_equal(balanced_sample(6, 1, n=40, seed=1)[0], first[0])


def test_nested_runs_time_a_fresh_process_that_scores_k_graphs() -> None:
    rows = nested_timings("alternet", dims=(6,), ks=(1, 3), n=60, progress=False)
    assert [(r["d"], r["k"]) for r in rows] == [(6, 1), (6, 3)]
    for row in rows:
        # the wall time holds the process's own load and inferences, and more (interpreter, imports)
        assert 0 < row["load_seconds"] + row["infer_seconds"] < row["seconds"]
    with pytest.raises(ValueError, match="not an amortized method"):
        nested_timings("pc", dims=(6,), ks=(1, 2))


def test_the_worker_refuses_a_k_beyond_its_file(tmp_path) -> None:
    path = tmp_path / "data.npz"
    np.savez(path, np.zeros((5, 3)))
    done = subprocess.run([sys.executable, "-m", "causal_gym.discovery.amortized", "alternet", str(path), "2"],
                          capture_output=True, text=True)
    assert done.returncode != 0 and "K must lie in 1..1" in done.stderr
