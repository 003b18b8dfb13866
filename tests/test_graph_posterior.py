"""Exact graph posterior: BGe local scores and Koivisto's DP against independent references.

References: brute-force enumeration of every DAG for d <= 5 (weights = linear extensions x
parent-set prior x exp(total score), no DP); a loop-based textbook BGe (Kuipers, Moffa &
Heckerman 2014, marginal likelihoods of variable subsets with multivariate gamma functions and
plain determinants); a 1-variable marginal likelihood by numerical integration over the
Normal-Gamma prior; a 2-variable case computed by hand; scikit-learn's average precision.
pgmpy (1.1.2) and causal-learn have no BGe score, so pgmpy's Gaussian BIC serves only as a
large-sample check (BGe and BIC agree up to O(1) per parameter).
"""

import functools
import itertools
import math

import numpy as np
import pytest
from scipy import integrate
from scipy.special import multigammaln
from sklearn.metrics import average_precision_score

from causal_gym import scm
from causal_gym.graphs import dag_to_cpdag
from causal_gym.stats import _posterior_kernels as kernels
from causal_gym.stats import graph_posterior as gp

ATOL_DP = 1e-9


# ---------------------------------------------------------------------------------------------
# references
# ---------------------------------------------------------------------------------------------


def code_of(parents, j):
    """Parent-set code of node j written from the layout's definition."""
    return sum(1 << (i if i < j else i - 1) for i in parents)


@functools.cache
def enumerate_dags(d):
    """Every DAG on d nodes, its parent-set codes and its number of linear extensions.

    All choices of a parent set per node are built; a graph is kept when repeatedly removing
    its sources empties it. Cached per d (d = 5 has 16^5 candidates).
    """
    options = [np.array([m for m in range(1 << d) if not (m >> j) & 1]) for j in range(d)]
    choice = np.indices((1 << (d - 1),) * d).reshape(d, -1).T  # (candidates, d)
    full = np.stack([options[j][choice[:, j]] for j in range(d)], axis=1)
    a = ((full[:, None, :] >> np.arange(d)[None, :, None]) & 1).astype(np.int8)  # a[g, i, j]: i -> j
    alive = np.ones((len(a), d), dtype=bool)
    for _ in range(d):
        alive &= np.einsum("gi,gij->gj", alive.astype(np.int64), a.astype(np.int64)) > 0
    keep = ~alive.any(axis=1)
    dags, full = a[keep], full[keep]
    codes = np.stack([code_of_masks(full[:, j], j) for j in range(d)], axis=1)
    return dags, codes, linear_extensions(dags)


def code_of_masks(masks, j):
    """Vectorised code_of for d-bit masks without bit j."""
    low = masks & ((1 << j) - 1)
    return low | ((masks >> (j + 1)) << j)


def all_dags(d):
    return enumerate_dags(d)[0]


def linear_extensions(a):
    d = a.shape[1]
    count = np.zeros(len(a))
    for perm in itertools.permutations(range(d)):
        reordered = a[:, perm][:, :, perm]
        count += ~np.tril(reordered).any(axis=(1, 2))  # consistent: every edge goes forward
    return count


def log_weights(scores, prior="size"):
    """log of (linear extensions x prod_j rho_j x exp(total score)) for every DAG."""
    d = scores.shape[0]
    dags, codes, extensions = enumerate_dags(d)
    log_rho = np.zeros(d) if prior == "uniform" else np.array([-math.log(math.comb(d - 1, k)) for k in range(d)])
    sizes = dags.sum(axis=1)  # in-degrees
    return np.log(extensions) + (scores[np.arange(d), codes] + log_rho[sizes]).sum(axis=1)


def brute_force_marginals(scores, prior="size"):
    log_w = log_weights(scores, prior)
    w = np.exp(log_w - log_w.max())
    return np.einsum("g,gij->ij", w, enumerate_dags(scores.shape[0])[0]) / w.sum()


def textbook_bge(data, mask, j, parents, alpha_mu=1.0, alpha_w=None):
    """The BGe local score written plainly: log p(data_Y) - log p(data_P), loops and determinants."""
    n_rows, d = data.shape
    alpha_w = d + 2.0 if alpha_w is None else alpha_w
    t = alpha_mu * (alpha_w - d - 1) / (alpha_mu + 1)
    rows = [data[r] for r in range(n_rows) if mask is None or not mask[r, j]]
    n = len(rows)
    mean = sum(rows) / n if n else np.zeros(d)
    scatter = np.zeros((d, d))
    for x in rows:
        scatter += np.outer(x - mean, x - mean)
    prior_t = t * np.eye(d)
    r_post = prior_t + scatter + n * alpha_mu / (n + alpha_mu) * np.outer(mean, mean)

    def log_marginal(subset):
        subset = sorted(subset)
        size = len(subset)
        if size == 0:
            return 0.0
        t_y = prior_t[np.ix_(subset, subset)]
        r_y = r_post[np.ix_(subset, subset)]
        dof = alpha_w - d + size
        return (
            size / 2 * math.log(alpha_mu / (n + alpha_mu))
            + multigammaln((n + dof) / 2, size)
            - multigammaln(dof / 2, size)
            - size * n / 2 * math.log(math.pi)
            + dof / 2 * math.log(np.linalg.det(t_y))
            - (n + dof) / 2 * math.log(np.linalg.det(r_y))
        )

    return log_marginal(list(parents) + [j]) - log_marginal(parents)


def textbook_table(data, mask=None, **hyper):
    d = data.shape[1]
    out = np.empty((d, 1 << (d - 1)))
    for j in range(d):
        others = [i for i in range(d) if i != j]
        for size in range(d):
            for parents in itertools.combinations(others, size):
                out[j, code_of(parents, j)] = textbook_bge(data, mask, j, list(parents), **hyper)
    return out


def linear_gaussian(d, n, seed, interventions=()):
    rng = np.random.default_rng(seed)
    dag = scm.erdos_renyi_dag(d, min(2.0, d - 1.0), rng=rng)
    model = scm.SCM.random(dag, "linear", rng=rng)
    return dag, model, model.sample(n, rng=rng, interventions=list(interventions))


def mixed_data(d, n_obs, n_per_target, seed):
    """Observational rows plus do(j) rows for every node; the mask marks the intervened cells."""
    dag, model, data = linear_gaussian(d, n_obs, seed)
    blocks, masks = [data], [np.zeros_like(data, dtype=bool)]
    rng = np.random.default_rng(seed + 1)
    for j in range(d):
        blocks.append(model.sample(n_per_target, rng=rng, interventions=[scm.HardDo(j, value=float(rng.normal()))]))
        m = np.zeros((n_per_target, d), dtype=bool)
        m[:, j] = True
        masks.append(m)
    return dag, np.vstack(blocks), np.vstack(masks)


# ---------------------------------------------------------------------------------------------
# the DP against enumeration of all DAGs
# ---------------------------------------------------------------------------------------------


def test_dag_enumeration_counts():
    # OEIS A003024: labelled DAGs on 1..5 nodes
    assert [len(all_dags(d)) for d in range(1, 6)] == [1, 3, 25, 543, 29281]


@pytest.mark.parametrize("d", [2, 3, 4, 5])
@pytest.mark.parametrize("prior", ["size", "uniform"])
def test_dp_equals_enumeration_on_arbitrary_scores(d, prior):
    scores = np.random.default_rng(10 * d + len(prior)).normal(scale=4.0, size=(d, 1 << (d - 1)))
    post = gp.edge_posterior(scores, parent_prior=prior)
    np.testing.assert_allclose(post.edge_probs, brute_force_marginals(scores, prior), atol=ATOL_DP, rtol=0)


@pytest.mark.parametrize("d", [3, 4, 5])
def test_dp_equals_enumeration_on_bge_scores_with_interventions(d):
    _, data, mask = mixed_data(d, 40, 5, seed=d)
    scores = gp.local_scores(data, mask)
    post = gp.edge_posterior(scores)
    np.testing.assert_allclose(post.edge_probs, brute_force_marginals(scores), atol=ATOL_DP, rtol=0)


def test_dp_equals_enumeration_with_max_parents():
    _, _, data = linear_gaussian(5, 60, seed=3)
    scores = gp.local_scores(data, max_parents=2)
    assert np.isneginf(scores[:, -1]).all() and np.isfinite(scores[:, 0]).all()
    post = gp.edge_posterior(scores)
    np.testing.assert_allclose(post.edge_probs, brute_force_marginals(scores), atol=ATOL_DP, rtol=0)


def test_dp_handles_scores_hundreds_of_nats_apart():
    # strongly dependent data: log-space sums must not underflow where a linear-space DP would
    scores = np.random.default_rng(0).normal(scale=400.0, size=(4, 8))
    post = gp.edge_posterior(scores)
    assert np.isfinite(post.edge_probs).all()
    np.testing.assert_allclose(post.edge_probs, brute_force_marginals(scores), atol=ATOL_DP, rtol=0)


def brute_force_entropies(scores, prior="size"):
    """``(H(order, G), H(G))`` by enumeration: each DAG's joint weight is ``prod beta``, once per linear extension."""
    log_w = log_weights(scores, prior)  # log(L(G) x prod beta)
    log_pair = log_w - np.log(enumerate_dags(scores.shape[0])[2])  # one (order, G) pair's log weight
    finite = np.isfinite(log_w)
    log_z = np.logaddexp.reduce(log_w[finite])
    p_dag = np.exp(log_w[finite] - log_z)
    joint = -(p_dag * (log_pair[finite] - log_z)).sum()  # each of G's L(G) pairs has probability w / Z
    seen = p_dag > 0
    return joint, -(p_dag[seen] * np.log(p_dag[seen])).sum()


@pytest.mark.parametrize("d", [2, 3, 4, 5])
def test_entropy_of_the_order_dag_posterior_equals_enumeration(d):
    scores = np.random.default_rng(70 + d).normal(scale=3.0, size=(d, 1 << (d - 1)))
    _, data, mask = mixed_data(d, 30, 4, seed=d + 70)
    for table in (scores, gp.local_scores(data, mask), gp.local_scores(data, mask, max_parents=1)):
        joint, dag = brute_force_entropies(table)
        post = gp.edge_posterior(table)
        assert float(post.entropy) == pytest.approx(joint, abs=1e-8)
        # H(G) = H(order, G) - E[log L(G)]: the order given the DAG is uniform over its linear extensions
        dags, _, extensions = enumerate_dags(d)
        log_w = log_weights(table)
        p_dag = np.exp(log_w - np.logaddexp.reduce(log_w))
        assert joint - dag == pytest.approx((p_dag * np.log(extensions)).sum(), abs=1e-8)
        assert 0.0 <= joint - dag <= math.log(math.factorial(d)) + 1e-9


def test_entropy_is_batched_and_log_d_factorial_plus_the_parent_sets_without_data():
    post = gp.edge_posterior(np.zeros((2, 3, 3, 4)), parent_prior="uniform")
    # no evidence, uniform rho: every (order, G) pair equally likely: d! orders x 2^(d(d-1)/2) DAGs each
    np.testing.assert_allclose(post.entropy, np.full((2, 3), math.log(6) + 3 * math.log(2)), atol=1e-12)
    far = np.random.default_rng(1).normal(scale=400.0, size=(4, 8))  # the log-space DP's members too
    assert float(gp.edge_posterior(far).entropy) == pytest.approx(brute_force_entropies(far)[0], abs=1e-7)


def test_linear_dp_equals_the_log_dp_where_it_holds():
    # the design env's regime: d = 10, about 55 rows, a batch of episodes
    rng = np.random.default_rng(5)
    data = rng.normal(size=(12, 55, 10)) @ np.triu(rng.normal(scale=2.0, size=(10, 10)), 1) + rng.normal(size=(12, 55, 10))
    beta = gp.bge_local_scores(gp.BGeStats.from_data(data)) + gp.log_parent_prior(10)
    parent_set, log_z, held, _ = gp._linear_dp(beta, 10)
    assert held.all()
    reference, reference_z = gp._log_dp(beta, 10)
    np.testing.assert_allclose(parent_set, reference, atol=1e-11, rtol=0)
    np.testing.assert_allclose(log_z, reference_z, atol=1e-9, rtol=1e-13)


def test_linear_dp_over_several_kernel_chunks_equals_one_member_at_a_time():
    # 37 members at d = 10 cross the kernel's chunks (16 members); members 900+ nats apart are not held
    d = 10
    assert gp._DP_CHUNK_ENTRIES // (d << (d - 1)) < 37
    rng = np.random.default_rng(23)
    scales = np.where(np.arange(37) % 9 == 4, 1500.0, 3.0)
    beta = rng.normal(size=(37, d, 1 << (d - 1))) * scales[:, None, None] + gp.log_parent_prior(d)
    parent_set, log_z, held, _ = gp._linear_dp(beta, d)
    assert held.tolist() == (scales < 1000).tolist()
    reference, reference_z = gp._log_dp(beta, d)
    for k in range(37):
        alone = gp._linear_dp(beta[k : k + 1], d)
        np.testing.assert_array_equal(alone[2], held[k : k + 1])
        if held[k]:
            np.testing.assert_allclose(parent_set[k], alone[0][0], atol=1e-13, rtol=0)
            np.testing.assert_allclose(parent_set[k], reference[k], atol=1e-11, rtol=0)
            np.testing.assert_allclose(log_z[k], reference_z[k], rtol=1e-13)


def test_linear_dp_of_a_table_larger_than_the_cache_equals_the_log_dp():
    # d = 16: the kernel's sums over orders read each node's subset sums from a copy sorted by size
    d, n = 16, 1 << 15
    assert kernels._code_block(n, d, 1) < n
    rng = np.random.default_rng(8)
    beta = rng.normal(size=(1, d, n)) * 4 + gp.log_parent_prior(d)
    parent_set, log_z, held, entropy = gp._linear_dp(beta, d)
    assert held.all()
    reference, reference_z = gp._log_dp(beta, d)
    np.testing.assert_allclose(parent_set, reference, atol=1e-11, rtol=0)
    np.testing.assert_allclose(log_z, reference_z, rtol=1e-13)
    excluded = np.zeros(beta.shape, dtype=bool)
    np.testing.assert_allclose(entropy, gp._order_dag_entropy(beta, reference, reference_z, excluded), rtol=1e-10)


@pytest.mark.parametrize(("d", "cap"), [(6, None), (7, 2)])
def test_posterior_summary_equals_edge_posterior_and_best_dag(d, cap):
    # the one-pass path of the design env: the same numbers, bit for bit, and nothing left in its work arrays
    stats = [gp.BGeStats.from_data(data, mask) for data, mask in
             (mixed_data(d, 30, 2, seed)[1:] for seed in (1, 2))]
    batch = gp.BGeStats(*(np.stack([getattr(s, name) for s in stats]) for name in ("count", "mean", "scatter")))
    first = gp.posterior_summary(batch, max_parents=cap)
    scores = gp.bge_local_scores(batch, max_parents=cap)
    post = gp.edge_posterior(scores)
    np.testing.assert_array_equal(first[0], post.edge_probs)
    np.testing.assert_array_equal(first[1], post.entropy)
    np.testing.assert_array_equal(first[2], gp.best_dag(scores))
    kept = [x.copy() for x in first]
    alone = gp.posterior_summary(stats[1], max_parents=cap, parent_prior="uniform")
    np.testing.assert_array_equal(alone[0], gp.edge_posterior(scores[1], parent_prior="uniform").edge_probs)
    for x, y in zip(first, kept):
        np.testing.assert_array_equal(x, y)


def test_principal_logdets_equal_slogdet_of_every_sub_matrix():
    # the principal-minor kernel against numpy's determinant of each sub-matrix, sizes 1..7
    rng = np.random.default_rng(24)
    for m in range(1, 8):
        a = rng.normal(size=(3, m, m + 2))
        r = a @ np.swapaxes(a, -1, -2) + 0.5 * np.eye(m)
        logdet = gp._principal_logdets(r)
        assert logdet.shape == (3, 1 << m)
        for subset in range(1 << m):
            members = [k for k in range(m) if (subset >> k) & 1]
            expected = np.linalg.slogdet(r[:, members][:, :, members])[1] if members else np.zeros(3)
            np.testing.assert_allclose(logdet[:, subset], expected, rtol=1e-12, atol=1e-12)


def test_a_batch_mixing_spreads_takes_the_log_dp_where_the_linear_one_underflows():
    rng = np.random.default_rng(1)
    scores = np.stack([rng.normal(scale=scale, size=(4, 8)) for scale in (4.0, 900.0, 1.0, 2000.0)])
    held = gp._linear_dp(scores + gp.log_parent_prior(4), 4)[2]
    assert held.tolist() == [True, False, True, False]  # 900 nats and more apart: exp underflows
    post = gp.edge_posterior(scores)
    for k in range(4):
        np.testing.assert_allclose(post.edge_probs[k], brute_force_marginals(scores[k]), atol=ATOL_DP, rtol=0)


@pytest.mark.parametrize("q", [5, 6])
@pytest.mark.parametrize("upward", [False, True])
def test_subset_sums_equal_explicit_sums(upward, q):
    # spreads of thousands of nats (several bands) and excluded (-inf) entries; the kernel takes two
    # bits per pass, so an odd q ends with a single one
    rng = np.random.default_rng(21 + upward)
    x = rng.normal(scale=2000.0, size=(3, 1 << q))
    x[0, rng.choice(np.arange(1, 1 << q), size=20, replace=False)] = -np.inf
    x[:, 0] = np.abs(x[:, 0])  # keep each row's maximum finite
    expected = np.array([
        [np.logaddexp.reduce([row[p] for p in range(1 << q) if ((p & c) == p if not upward else (p & c) == c)])
         for c in range(1 << q)]
        for row in x
    ])
    np.testing.assert_allclose(gp._zeta(x, q, upward), expected, rtol=1e-13, atol=1e-9)


def test_batched_d12_posterior_equals_single():
    # a batch of two d = 12 tables takes the large-array path of the zeta transforms
    scores = np.random.default_rng(22).normal(scale=20.0, size=(2, 12, 1 << 11))
    batched = gp.edge_posterior(scores).edge_probs
    for b in range(2):
        np.testing.assert_allclose(batched[b], gp.edge_posterior(scores[b]).edge_probs, atol=1e-11)


def test_parent_set_posteriors_sum_to_one_and_give_the_marginals():
    scores = np.random.default_rng(1).normal(scale=3.0, size=(6, 32))
    post = gp.edge_posterior(scores)
    np.testing.assert_allclose(post.parent_set_probs.sum(axis=1), 1.0, atol=1e-12)
    masks = gp.parent_set_masks(6)
    for i, j in [(0, 1), (5, 2), (3, 4)]:
        assert post.edge_probs[i, j] == pytest.approx(post.parent_set_probs[j, (masks[j] >> i) & 1 == 1].sum(), abs=1e-12)
    assert np.all(post.edge_probs + post.edge_probs.T <= 1 + 1e-12)  # a DAG never has both i->j and j->i


def test_log_evidence_is_prior_weighted_likelihood():
    scores = np.random.default_rng(2).normal(size=(4, 8))
    expected = np.logaddexp.reduce(log_weights(scores)) - np.logaddexp.reduce(log_weights(np.zeros_like(scores)))
    assert gp.edge_posterior(scores).log_evidence == pytest.approx(expected, abs=1e-10)


def test_no_data_posterior_is_the_prior():
    # uniform rho and orders: i precedes j in half the orders, and given the order each allowed
    # edge is present in half the DAGs, so every edge has prior probability 1/4
    post = gp.edge_posterior(np.zeros((3, 4)), parent_prior="uniform")
    np.testing.assert_allclose(post.edge_probs, (1 - np.eye(3)) / 4, atol=1e-12)
    assert post.log_evidence == pytest.approx(0.0, abs=1e-12)


def test_batched_posterior_equals_one_at_a_time():
    scores = np.random.default_rng(3).normal(size=(2, 3, 5, 16))
    post = gp.edge_posterior(scores)
    assert post.edge_probs.shape == (2, 3, 5, 5)
    for a, b in itertools.product(range(2), range(3)):
        one = gp.edge_posterior(scores[a, b])
        np.testing.assert_allclose(post.edge_probs[a, b], one.edge_probs, atol=1e-13)
        assert post.log_evidence[a, b] == pytest.approx(one.log_evidence, abs=1e-12)


def test_permuting_variables_permutes_the_marginals():
    _, data, mask = mixed_data(6, 80, 10, seed=4)
    perm = np.random.default_rng(5).permutation(6)
    base = gp.edge_posterior(gp.local_scores(data, mask)).edge_probs
    permuted = gp.edge_posterior(gp.local_scores(data[:, perm], mask[:, perm])).edge_probs
    np.testing.assert_allclose(permuted, base[np.ix_(perm, perm)], atol=1e-10)


# ---------------------------------------------------------------------------------------------
# BGe local scores
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("d", [1, 2, 3, 5])
def test_bge_equals_textbook_formula(d):
    _, _, data = linear_gaussian(d, 30, seed=d)
    data = data + 1.5  # a non-zero mean exercises the prior-mean term
    np.testing.assert_allclose(gp.local_scores(data), textbook_table(data), rtol=1e-10, atol=1e-9)


def test_bge_equals_textbook_formula_with_mask_and_hyperparameters():
    _, data, mask = mixed_data(4, 25, 6, seed=7)
    hyper = {"alpha_mu": 2.5, "alpha_w": 9.0}
    np.testing.assert_allclose(
        gp.local_scores(data, mask, **hyper), textbook_table(data, mask, **hyper), rtol=1e-10, atol=1e-9
    )


def normal_gamma_marginal(x, alpha_mu, shape, rate):
    """log of the integral of prod N(x | mu, 1/lam) N(mu | 0, 1/(alpha_mu lam)) Gamma(lam | shape, rate)."""
    def integrand(mu, lam):
        log_density = (
            0.5 * x.size * math.log(lam / (2 * math.pi)) - 0.5 * lam * np.sum((x - mu) ** 2)
            + 0.5 * math.log(alpha_mu * lam / (2 * math.pi)) - 0.5 * alpha_mu * lam * mu**2
            + shape * math.log(rate) - math.lgamma(shape) + (shape - 1) * math.log(lam) - rate * lam
        )
        return math.exp(log_density)

    value, _ = integrate.dblquad(integrand, 1e-12, 60.0, -15.0, 15.0, epsabs=1e-14, epsrel=1e-10)
    return math.log(value)


def test_bge_one_variable_is_the_normal_gamma_marginal_likelihood():
    x = np.array([[0.3], [-1.1], [0.8], [2.0]])
    # W ~ Wishart(alpha_w, 1/t) in one dimension is Gamma(alpha_w / 2, rate t / 2); d = 1: t = 1/2
    expected = normal_gamma_marginal(x[:, 0], 1.0, 3.0 / 2, 0.5 / 2)
    assert gp.local_scores(x)[0, 0] == pytest.approx(expected, rel=1e-7)


def test_bge_empty_parent_set_uses_the_marginal_wishart():
    # d = 3, alpha_w = 5, t = 1/2: node 2's empty-parent score is the 1-variable marginal with
    # alpha_w - d + 1 = 3 degrees of freedom (Kuipers et al.'s correction), from its unmasked rows
    rng = np.random.default_rng(8)
    data = rng.normal(size=(6, 3))
    mask = np.zeros((6, 3), dtype=bool)
    mask[[1, 4], 2] = True
    expected = normal_gamma_marginal(data[~mask[:, 2], 2], 1.0, 3.0 / 2, 0.5 / 2)
    assert gp.local_scores(data, mask)[2, 0] == pytest.approx(expected, rel=1e-7)


def test_bge_two_variables_by_hand():
    # rows (2, 0), (0, 1); d = 2, alpha_mu = 1, alpha_w = 4, t = 1/2, N = 2:
    # mean (1, 1/2), scatter [[2, -1], [-1, 1/2]], shrinkage 2/3 mean mean^T, so
    # R = [[19/6, -2/3], [-2/3, 7/6]], det R = 13/4.
    # log p(X, Y) = log(1/3) + log(Gamma_2(3) / Gamma_2(2)) - 2 log(pi) + 2 log det(T) - 3 log det R
    #             = log(1/3) + log(3) - 2 log(pi) + 2 log(1/4) - 3 log(13/4)
    # log p(X) = 1/2 log(1/3) + log(Gamma(5/2) / Gamma(3/2)) - log(pi) + 3/2 log(1/2) - 5/2 log R_XX
    data = np.array([[2.0, 0.0], [0.0, 1.0]])
    log_xy = -2 * math.log(math.pi) + 2 * math.log(0.25) - 3 * math.log(13 / 4)
    def log_single(r):
        return 0.5 * math.log(1 / 3) + math.log(1.5) - math.log(math.pi) + 1.5 * math.log(0.5) - 2.5 * math.log(r)
    log_x, log_y = log_single(19 / 6), log_single(7 / 6)
    expected = np.array([[log_x, log_xy - log_y], [log_y, log_xy - log_x]])
    np.testing.assert_allclose(gp.local_scores(data), expected, rtol=1e-12)


def test_bge_is_score_equivalent():
    d = 4
    _, _, data = linear_gaussian(d, 50, seed=9)
    scores = gp.local_scores(data)
    totals = {}
    dags, codes, _ = enumerate_dags(d)
    for g, code in zip(dags, codes):
        total = scores[np.arange(d), code].sum()
        totals.setdefault(dag_to_cpdag(g).tobytes(), []).append(total)
    assert len(totals) == 185  # Markov equivalence classes on 4 labelled nodes
    spread = [max(v) - min(v) for v in totals.values()]
    assert max(spread) < 1e-9
    class_scores = sorted(v[0] for v in totals.values())
    assert np.min(np.diff(class_scores)) > 1e-6  # different classes do score differently here


def test_bge_agrees_with_pgmpy_bic_at_large_n():
    pd = pytest.importorskip("pandas")
    structure_score = pytest.importorskip("pgmpy.estimators")
    _, _, data = linear_gaussian(3, 20_000, seed=11)
    ours = gp.local_scores(data)
    bic = structure_score.BICGauss(pd.DataFrame(data, columns=["a", "b", "c"]))
    names = ["a", "b", "c"]
    for j in range(3):
        others = [i for i in range(3) if i != j]
        base_bic = bic.local_score(names[j], [])
        for size in (1, 2):
            for parents in itertools.combinations(others, size):
                gain_bic = bic.local_score(names[j], [names[i] for i in parents]) - base_bic
                gain_bge = ours[j, code_of(parents, j)] - ours[j, 0]
                # both are log p(data) up to O(1) per parameter: measured gaps <= 0.4 nats on gains of 13k-22k
                assert abs(gain_bge - gain_bic) < 1.0, (j, parents, gain_bge, gain_bic)


# ---------------------------------------------------------------------------------------------
# interventional data
# ---------------------------------------------------------------------------------------------


def two_variable_rows(n_obs, n_do_x, n_do_y, seed):
    """X -> Y with Y = 1.5 X + noise; do(X) rows draw X anew, do(Y) rows set Y at random."""
    rng = np.random.default_rng(seed)
    n = n_obs + n_do_x + n_do_y
    x = rng.normal(size=n)
    y = 1.5 * x + 0.5 * rng.normal(size=n)
    x[n_obs:n_obs + n_do_x] = rng.normal(scale=2.0, size=n_do_x)
    y[n_obs:n_obs + n_do_x] = 1.5 * x[n_obs:n_obs + n_do_x] + 0.5 * rng.normal(size=n_do_x)
    y[n_obs + n_do_x:] = rng.normal(scale=2.0, size=n_do_y)
    mask = np.zeros((n, 2), dtype=bool)
    mask[n_obs:n_obs + n_do_x, 0] = True
    mask[n_obs + n_do_x:, 1] = True
    return np.column_stack([x, y]), mask


def test_observational_two_variables_are_symmetric():
    data, mask = two_variable_rows(200, 0, 0, seed=0)
    p = gp.edge_posterior(gp.local_scores(data, mask)).edge_probs
    assert p[0, 1] == pytest.approx(p[1, 0], abs=1e-9)
    assert p[0, 1] > 0.49  # strongly dependent: almost all mass on the two orientations


@pytest.mark.parametrize("n_do_x, n_do_y", [(0, 20), (20, 0), (200, 0), (0, 200)])
def test_interventions_orient_the_edge(n_do_x, n_do_y):
    data, mask = two_variable_rows(200, n_do_x, n_do_y, seed=1)
    p = gp.edge_posterior(gp.local_scores(data, mask)).edge_probs
    assert p[0, 1] > 0.9 and p[1, 0] < 0.1
    if n_do_x + n_do_y == 200:
        assert p[0, 1] > 1 - 1e-6


def test_more_do_rows_move_the_posterior_towards_the_truth():
    data, mask = two_variable_rows(100, 0, 40, seed=2)
    probs = [
        gp.edge_posterior(gp.local_scores(data[: 100 + k], mask[: 100 + k])).edge_probs[0, 1]
        for k in (0, 2, 5, 10, 40)
    ]
    assert probs[0] == pytest.approx(0.5, abs=0.01)
    assert probs[1] > probs[0] and np.all(np.diff(probs) >= 0)
    assert probs[-1] > 0.999


def test_intervened_rows_do_not_enter_the_target_scores():
    _, data, mask = mixed_data(5, 30, 8, seed=12)
    scores = gp.local_scores(data, mask)
    for j in range(5):
        changed = data.copy()
        rows = mask[:, j]
        changed[rows, j] = np.random.default_rng(j).normal(scale=10.0, size=rows.sum())
        new = gp.local_scores(changed, mask)
        np.testing.assert_array_equal(new[j], scores[j])
        assert not np.allclose(np.delete(new, j, axis=0), np.delete(scores, j, axis=0))


def test_nodes_that_saw_the_same_rows_share_one_table_and_keep_their_scores():
    # do(x1) and do(x3) rows: nodes 0, 2, 4 saw every row, 1 and 3 each lost their own
    _, _, data = linear_gaussian(5, 30, seed=4)
    mask = np.zeros_like(data, dtype=bool)
    mask[:5, 1] = mask[5:9, 3] = True
    observational = np.zeros_like(mask)
    stats = gp.BGeStats.from_data(np.stack([data, data]), np.stack([mask, observational]))
    kept, source = gp._distinct_nodes(stats)
    assert kept.tolist() == [0, 1, 3, 5] and source.tolist() == [0, 1, 0, 2, 0, 3, 3, 3, 3, 3]
    for b, m in enumerate((mask, observational)):  # each node's scores from its own rows alone
        for j in range(5):
            rows = ~m[:, j]
            alone = gp.local_scores(data[rows], np.zeros((rows.sum(), 5), dtype=bool))[j]
            np.testing.assert_allclose(gp.bge_local_scores(stats)[b, j], alone, rtol=1e-12, atol=1e-9)


def test_node_intervened_everywhere_has_no_evidence():
    rng = np.random.default_rng(13)
    data = rng.normal(size=(10, 3))
    mask = np.zeros((10, 3), dtype=bool)
    mask[:, 1] = True
    np.testing.assert_allclose(gp.local_scores(data, mask)[1], 0.0, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# incremental and batched statistics
# ---------------------------------------------------------------------------------------------


def test_add_row_equals_from_data():
    _, data, mask = mixed_data(5, 20, 4, seed=14)
    stats = gp.BGeStats.from_data(data[:3], mask[:3])
    for r in range(3, len(data)):
        stats = stats.add_row(data[r], mask[r])
    full = gp.BGeStats.from_data(data, mask)
    for name in ("count", "mean", "scatter"):
        np.testing.assert_allclose(getattr(stats, name), getattr(full, name), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(gp.bge_local_scores(stats), gp.local_scores(data, mask), rtol=1e-10, atol=1e-9)


def test_empty_start_and_batched_rows():
    _, data, mask = mixed_data(4, 12, 3, seed=15)
    batch = np.stack([data, data[::-1] * 2.0])
    masks = np.stack([mask, mask[::-1]])
    stats = gp.BGeStats.from_data(batch[:, :0], masks[:, :0])
    assert np.all(stats.count == 0)
    for r in range(data.shape[0]):
        stats = stats.add_row(batch[:, r], masks[:, r])
    scores = gp.bge_local_scores(stats)
    np.testing.assert_allclose(scores[0], gp.local_scores(data, mask), rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(scores[1], gp.local_scores(data[::-1] * 2.0, mask[::-1]), rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(gp.local_scores(batch, masks), scores, rtol=1e-10, atol=1e-9)


def test_stats_are_frozen_copies():
    count, mean, scatter = np.ones(2), np.zeros((2, 2)), np.zeros((2, 2, 2))
    stats = gp.BGeStats(count, mean, scatter)
    assert count.flags.writeable
    with pytest.raises(ValueError):
        stats.count[0] = 5.0


# ---------------------------------------------------------------------------------------------
# predictions and scores
# ---------------------------------------------------------------------------------------------


def test_expected_correct_and_shd_equal_enumeration():
    d = 4
    scores = np.random.default_rng(16).normal(scale=2.0, size=(d, 8))
    p = gp.edge_posterior(scores).edge_probs
    guess = gp.bayes_optimal_graph(p)
    dags = all_dags(d)
    log_w = log_weights(scores)
    w = np.exp(log_w - log_w.max())
    w /= w.sum()
    off = ~np.eye(d, dtype=bool)
    correct = np.array([(g == guess)[off].sum() for g in dags])

    def skeleton_state(g):  # +1, -1 or 0 per pair
        return (g - g.T)[np.triu_indices(d, 1)]

    shd_values = np.array([(skeleton_state(g) != skeleton_state(guess)).sum() for g in dags])
    assert gp.expected_correct_entries(p) == pytest.approx(w @ correct, abs=1e-9)
    assert gp.expected_shd(p) == pytest.approx(w @ shd_values, abs=1e-9)


def test_bayes_optimal_graph_maximises_expected_correct_entries():
    p = gp.edge_posterior(np.random.default_rng(17).normal(scale=2.0, size=(5, 16))).edge_probs
    best = gp.expected_correct_entries(p)
    off = ~np.eye(5, dtype=bool)
    guess = gp.bayes_optimal_graph(p)
    assert best == pytest.approx(np.where(guess == 1, p, 1 - p)[off].sum())
    rng = np.random.default_rng(18)
    for _ in range(50):
        other = rng.integers(0, 2, size=(5, 5))
        assert np.where(other == 1, p, 1 - p)[off].sum() <= best + 1e-12


def test_posterior_scores_against_truth():
    dag, _, data = linear_gaussian(6, 400, seed=19)
    p = gp.edge_posterior(gp.local_scores(data)).edge_probs
    result = gp.posterior_scores(p, dag)
    off = ~np.eye(6, dtype=bool)
    guess = (p > 0.5).astype(int)
    assert result.auprc == pytest.approx(average_precision_score(dag[off], p[off]))
    tp = int((guess & dag).sum())
    f1 = 2 * tp / (guess.sum() + dag.sum()) if guess.sum() + dag.sum() else 1.0
    assert result.f1 == pytest.approx(f1)
    assert result.correct == int((guess == dag)[off].sum())
    assert 15 <= result.expected_correct <= 30 and result.expected_shd >= 0


def test_posterior_concentrates_with_interventional_data():
    dag, data, mask = mixed_data(5, 500, 300, seed=20)
    p = gp.edge_posterior(gp.local_scores(data, mask)).edge_probs
    result = gp.posterior_scores(p, dag)
    assert result.shd == 0 and result.expected_correct > 19.5


# ---------------------------------------------------------------------------------------------
# DAG samples, the best DAG and the predictive against enumeration and the scores
# ---------------------------------------------------------------------------------------------


def dag_keys(dags):
    """One integer per adjacency matrix (its bits), to match samples with the enumeration."""
    d = dags.shape[-1]
    return (dags.reshape(len(dags), -1).astype(np.int64) << np.arange(d * d)).sum(axis=1)


def test_sampled_dags_follow_the_enumerated_posterior():
    _, data, mask = mixed_data(3, 20, 3, seed=31)
    scores = gp.local_scores(data, mask)
    log_w = log_weights(scores)
    exact = np.exp(log_w - log_w.max())
    exact /= exact.sum()
    n = 100_000
    draws = gp.sample_dags(scores, n, rng=5)
    keys = dag_keys(all_dags(3))
    assert set(dag_keys(draws)) <= set(keys)  # every draw is a DAG of the enumeration
    counts = np.array([(dag_keys(draws) == key).sum() for key in keys]) / n
    np.testing.assert_array_less(np.abs(counts - exact), 5 * np.sqrt(exact * (1 - exact) / n) + 1e-3)


def test_sampled_edge_frequencies_equal_the_dp_marginals_d5():
    _, data, mask = mixed_data(5, 30, 2, seed=32)
    scores = gp.local_scores(data, mask)
    p = brute_force_marginals(scores)
    n = 40_000
    freq = gp.sample_dags(scores, n, rng=6).mean(axis=0)
    np.testing.assert_array_less(np.abs(freq - p), 5 * np.sqrt(p * (1 - p) / n) + 1e-3)


def test_sampled_dags_keep_max_parents():
    _, _, data = linear_gaussian(4, 40, seed=33)
    draws = gp.sample_dags(gp.local_scores(data, max_parents=1), 500, rng=7)
    assert draws.sum(axis=1).max() <= 1


@pytest.mark.parametrize("d", [3, 4, 5])
def test_best_dag_maximises_the_prior_weighted_score_over_all_dags(d):
    rng = np.random.default_rng(40 + d)
    scores = rng.normal(scale=3.0, size=(d, 1 << (d - 1)))
    dags, codes, _ = enumerate_dags(d)
    log_rho = np.array([-math.log(math.comb(d - 1, k)) for k in range(d)])
    total = (scores[np.arange(d), codes] + log_rho[dags.sum(axis=1)]).sum(axis=1)  # no linear extensions
    np.testing.assert_array_equal(gp.best_dag(scores), dags[np.argmax(total)])
    batch = np.stack([scores, scores[::-1], -scores])  # a batch: each member its own mode
    np.testing.assert_array_equal(gp.best_dag(batch), np.stack([gp.best_dag(member) for member in batch]))


def test_predictive_density_is_the_change_of_the_local_scores():
    d = 4
    _, data, mask = mixed_data(d, 20, 3, seed=34)
    dag = np.zeros((d, d), dtype=np.int8)
    dag[0, 1] = dag[0, 2] = dag[1, 2] = dag[2, 3] = 1
    stats = gp.BGeStats.from_data(data, mask)
    rows = np.array([[0.3, -1.2, 2.0, 0.5], [1.5, 0.0, -0.7, 3.0]])
    flags = np.array([[False] * 4, [False, True, False, False]])  # the second row is do(X1)
    got = gp.predictive_logpdf(stats, dag, rows, flags)
    for r in range(2):
        bigger, bigger_mask = np.vstack([data, rows[r]]), np.vstack([mask, flags[r]])
        expected = 0.0
        for j in range(d):
            parents = list(np.flatnonzero(dag[:, j]))
            expected += textbook_bge(bigger, bigger_mask, j, parents) - textbook_bge(data, mask, j, parents)
        assert got[r] == pytest.approx(expected, rel=1e-10, abs=1e-10)


def test_predictive_samples_have_the_moments_of_the_density():
    # chain 0 -> 1 -> 2 under do(X1 = 2): X2's draws follow p(x2 | x1 = 2, data), whose mean and
    # variance come from integrating exp(predictive_logpdf) over x2 (the samples' code path is not used)
    d = 3
    dag = np.zeros((d, d), dtype=np.int8)
    dag[0, 1] = dag[1, 2] = 1
    rng = np.random.default_rng(35)
    x0 = rng.normal(size=30)
    x1 = 0.8 * x0 + 0.5 * rng.normal(size=30)
    x2 = -1.2 * x1 + 0.4 * rng.normal(size=30)
    stats = gp.BGeStats.from_data(np.column_stack([x0, x1, x2]))
    n = 200_000
    rows = gp.sample_predictive(stats, dag[None], np.full(n, 1), np.full(n, 2.0), rng=8)[0]
    assert (rows[:, 1] == 2.0).all()
    grid = np.linspace(-12, 8, 40_001)
    probe = np.column_stack([np.zeros_like(grid), np.full_like(grid, 2.0), grid])
    only_x2 = np.zeros(probe.shape, dtype=bool)
    only_x2[:, :2] = True
    density = np.exp(gp.predictive_logpdf(stats, dag, probe, only_x2))
    step = grid[1] - grid[0]
    assert density.sum() * step == pytest.approx(1.0, abs=1e-6)
    mean = (grid * density).sum() * step
    var = ((grid - mean) ** 2 * density).sum() * step
    assert rows[:, 2].mean() == pytest.approx(mean, abs=4 * math.sqrt(var / n))
    assert rows[:, 2].var() == pytest.approx(var, rel=0.03)
    assert abs(np.corrcoef(rows[:, 0], rows[:, 2])[0, 1]) < 0.01  # X0 is cut off from X2 by do(X1)


# ---------------------------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------------------------


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="boolean"):
        gp.local_scores(np.zeros((4, 2)), mask=np.zeros((4, 2)))
    with pytest.raises(ValueError, match="NaN"):
        gp.local_scores(np.array([[np.nan, 1.0], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="alpha_w"):
        gp.local_scores(np.zeros((4, 3)), alpha_w=3.5)
    with pytest.raises(ValueError, match="columns"):
        gp.edge_posterior(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="empty parent set"):
        gp.edge_posterior(np.full((2, 2), -np.inf))
    with pytest.raises(ValueError, match="parent prior"):
        gp.edge_posterior(np.zeros((2, 2)), parent_prior="flat")
    with pytest.raises(ValueError, match="supports"):
        gp.local_scores(np.zeros((3, gp.MAX_NODES + 1)))
    with pytest.raises(ValueError, match="one dataset"):
        gp.sample_dags(np.zeros((2, 3, 4)), 5, rng=0)
    stats = gp.BGeStats.from_data(np.zeros((4, 2)))
    with pytest.raises(ValueError, match="DAG"):
        gp.predictive_logpdf(stats, np.ones((2, 2)) - np.eye(2), np.zeros((1, 2)))
    with pytest.raises(ValueError, match="targets"):
        gp.sample_predictive(stats, np.zeros((1, 2, 2)), np.array([2]), np.array([0.0]), rng=0)


# ---------------------------------------------------------------------------------------------
# a parent-set cap: scores of the small sets only, the DP to d = 20
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("d", "cap"), [(4, 0), (5, 1), (7, 2), (8, 3)])
def test_capped_scores_equal_the_all_sets_path_with_the_cap_applied(d, cap):
    # two algorithms: Cholesky of each small sub-matrix vs the principal-minor recursion over all sets
    _, data, mask = mixed_data(d, 30, 2, seed=d + cap)
    stats = gp.BGeStats.from_data(np.stack([data, 0.5 * data]), np.stack([mask, mask]))
    capped = gp.bge_local_scores(stats, max_parents=cap)
    size = np.array([bin(c).count("1") for c in range(1 << (d - 1))])
    every = gp.bge_local_scores(stats)
    assert np.array_equal(np.isneginf(capped), np.broadcast_to(size > cap, capped.shape))
    np.testing.assert_allclose(capped[..., size <= cap], every[..., size <= cap], atol=1e-9, rtol=0)


@pytest.mark.parametrize("d", [3, 4, 5])
@pytest.mark.parametrize("cap", [1, 2])
def test_capped_dp_equals_enumeration_with_interventions(d, cap):
    _, data, mask = mixed_data(d, 40, 5, seed=10 + d)
    scores = gp.local_scores(data, mask, max_parents=cap)
    post = gp.edge_posterior(scores)
    np.testing.assert_allclose(post.edge_probs, brute_force_marginals(scores), atol=ATOL_DP, rtol=0)
    # the prior's mass under the cap (cached) is the enumeration's too
    log_w = log_weights(np.where(np.isneginf(scores), -np.inf, 0.0))
    top = log_w.max()
    assert post.log_evidence == pytest.approx(
        np.log(np.exp(log_weights(scores) - top).sum()) - np.log(np.exp(log_w - top).sum()), abs=1e-9)


def test_a_capped_posterior_above_16_nodes_permutes_with_the_variables():
    d = 17
    _, data, mask = mixed_data(d, 40, 1, seed=3)
    post = gp.edge_posterior(gp.local_scores(data, mask, max_parents=2))
    perm = np.random.default_rng(0).permutation(d)
    moved = gp.edge_posterior(gp.local_scores(data[:, perm], mask[:, perm], max_parents=2))
    np.testing.assert_allclose(moved.edge_probs, post.edge_probs[np.ix_(perm, perm)], atol=1e-9)
    np.testing.assert_allclose(post.parent_set_probs.sum(axis=-1), 1.0, atol=1e-9)
    assert (post.edge_probs.sum(axis=0) <= 2 + 1e-9).all()  # at most 2 parents per node
    with pytest.raises(ValueError, match="parent-set cap"):
        gp.local_scores(data, mask)
    with pytest.raises(ValueError, match="parent-set cap"):
        gp.local_scores(data, mask, max_parents=gp.MAX_CAP + 1)
