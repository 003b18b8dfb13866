"""The evidence tools over one data table, shared by the working-graph envs that offer them.

Heuresis (:mod:`causal_gym.envs.heuresis.env`) and CausalArena's tool mode
(:mod:`causal_gym.envs.arena.tool_env`) give an agent the same tools, so that a tool reads and
computes the same in both benchmarks. They are Heuresis's evidence at three granularities
(paper §4.2):

- graph level -- ``run_algorithm``: one masked entry of an algorithm menu (each benchmark puts its
  own :class:`~causal_gym.harness.menu.Menu` behind the labels, :meth:`DataTools._menu_graph`; the
  labels, the field's choices and the tool's description follow from the menu's length);
- edge level -- ``ci_test`` and ``stability``: a CI test with a conditioning set of the agent's
  choice, and the share of "independent" verdicts over resamples;
- mechanism level -- ``summarize``, ``fit_parents``, ``probe_direction`` and ``run_code``.

The tool descriptions are the neutral prompt: they say what a tool computes and returns, never
when an algorithm or a test applies. Test results carry a verdict and a coarse strength grade
(:func:`causal_gym.stats.strength_grade`), never a raw p-value; the diagnostics of the mechanism
tools report effect sizes (R^2, kurtosis) and graded test outcomes.

The functions here are pure (data in, ``(text, data)`` out); an environment charges budgets and
keeps the per-episode state (the CI testers, the resampling stream) through the
:class:`DataTools` mixin.

Choices the paper leaves open
-----------------------------
- fits are out-of-fold: 5 interleaved folds (row ``i`` in fold ``i mod 5``), so R^2 of the
  linear and the nonlinear model are comparable and not inflated by flexibility;
- the nonlinear model is Gaussian-kernel ridge regression, squared bandwidth the median squared
  distance between rows (median heuristic), ridge ``lambda n_train`` with ``lambda`` the best of
  (1e-3, 1e-2, 1e-1) by out-of-fold error;
- grades of effect sizes: R^2 gain of the nonlinear fit < 0.01 "none", < 0.05 "slight",
  < 0.15 "clear", else "strong"; residual excess kurtosis ``|k| < 0.5`` "light", < 2 "moderate",
  else "heavy";
- constant noise scale: a Breusch-Pagan-style test (squared residuals regressed on the fitted
  values, the parents and their squares; ``n R^2`` against chi-square);
- normality of a marginal: the Jarque-Bera statistic against chi-square(2); ``summarize`` lists
  the 10 pairs with the largest ``|Pearson|`` (with their Spearman correlation);
- graded tests of a hypothesis (normality, constant scale) use the p-value bands of
  :func:`~causal_gym.stats.strength_grade`: "strong evidence against", "evidence against",
  "weak evidence against", "weakly consistent with", "consistent with";
- the direction probe fits both directions with the kernel ridge model and tests residual
  independence from the input with the unconditional KCI (HSIC) test.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import combinations
from typing import Any

import numpy as np

from causal_gym._validation import check_count, check_real
from causal_gym._workers import TimeLimitExceeded
from causal_gym.harness.menu import Menu, MenuEntry
from causal_gym.harness.sandbox import SandboxLimits, check_sandbox_options, run_code, sandbox_bounds, sandbox_in_use
from causal_gym.harness.tool_env import ERROR_PREFIX, ToolResult
from causal_gym.harness.toolbox import ActionField, Tool
from causal_gym.harness.working_graph import format_edge_list, variable_name

__all__ = [
    "CI_TESTS",
    "CODE_EXAMPLES",
    "ALPHA",
    "FOLDS",
    "RIDGE_GRID",
    "data_fields",
    "data_tools",
    "graph_text",
    "set_text",
    "ci_test",
    "stability",
    "summarize",
    "fit_parents",
    "probe_direction",
    "code_output",
    "DataTools",
]

CI_TESTS = ("fisherz", "kci")
"""CI tests offered by ``ci_test`` and ``stability``."""

ALPHA = 0.05
"""Significance level of every verdict (the level of the PC runs of the menu)."""

FOLDS = 5
"""Out-of-fold folds of ``fit_parents`` and ``probe_direction``."""

RIDGE_GRID = (1e-3, 1e-2, 1e-1)
"""Ridge strengths (times the training size) tried by the kernel ridge model."""

CODE_EXAMPLES = (
    "print(X.shape)",
    "print(np.round(X.mean(axis=0), 3))",
    "print(np.round(np.corrcoef(X, rowvar=False), 2))",
)
"""Programs that run on any data table: what masked sampling sends to ``run_code``."""

_GAIN_GRADES = ((0.01, "none"), (0.05, "slight"), (0.15, "clear"))
_TAIL_GRADES = ((0.5, "light"), (2.0, "moderate"))
_TOP_PAIRS = 10
_COUNT_WORDS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")


def data_fields(labels: Sequence[str]) -> tuple[ActionField, ...]:
    """Argument fields of the data tools beyond the working graph's ``x``, ``y``, ``relation``, ``edges``;
    ``labels`` are the menu's masked labels (:attr:`causal_gym.harness.menu.Menu.labels`)."""
    return (
        ActionField(
            "cond",
            "node_set",
            "A set of variables: the conditioning set of ci_test and stability, the candidate parents of x "
            "for fit_parents. Optional (empty by default).",
        ),
        ActionField("algorithm", "choice", "Label of an algorithm menu entry.", tuple(labels)),
        ActionField("test", "choice", "Conditional-independence test: Fisher-z or KCI.", CI_TESTS),
        ActionField(
            "code",
            "text",
            "A Python program. It sees X (the n x d data matrix as a float64 numpy array), n, d, np "
            "(numpy) and scipy; whatever it prints is returned.",
            examples=CODE_EXAMPLES,
        ),
    )


def _menu_text(labels: Sequence[str]) -> str:
    """``run_algorithm``'s description, counting the menu's entries (in words up to twelve)."""
    n = len(labels)
    count = _COUNT_WORDS[n - 1] if n <= len(_COUNT_WORDS) else str(n)
    if n == 1:
        return (f"Run the only entry of a menu of one causal-discovery algorithm on the data and return its output "
                f"graph as an edge list. The entry is labelled {labels[0]}; which algorithm it is is not revealed.")
    return (f"Run one entry of a menu of {count} causal-discovery algorithms on the data and return its output "
            f"graph as an edge list. The entries are labelled {labels[0]} to {labels[-1]}; which algorithm hides "
            "behind which label is fixed within the episode and not revealed.")


def data_tools(n_resamples: int, labels: Sequence[str]) -> tuple[Tool, ...]:
    """The data tools, in their action-index order (``set_edge`` and ``submit`` come before them);
    ``labels`` are the menu's masked labels, which ``run_algorithm``'s description counts."""
    return (
        Tool(
            "run_algorithm",
            _menu_text(labels),
            ("algorithm",),
            ("algorithm",),
            "algorithm_calls",
        ),
        Tool(
            "ci_test",
            f"Test whether x and y are independent given the variables in cond (Fisher-z or KCI, level "
            f"{ALPHA}). Returns the verdict ('independent' or 'dependent') and a coarse strength grade of the "
            "evidence. Costs 1 test.",
            ("x", "y", "cond", "test"),
            ("x", "y", "test"),
            "tests",
        ),
        Tool(
            "stability",
            f"Repeat a ci_test on {n_resamples} random subsamples of the rows and return the share of "
            f"'independent' verdicts. Costs {n_resamples} tests.",
            ("x", "y", "cond", "test"),
            ("x", "y", "test"),
            "tests",
            n_resamples,
        ),
        Tool(
            "summarize",
            "Per-variable summary of the data: mean, standard deviation, skewness, excess kurtosis, a graded "
            "normality test and quantiles, followed by the most correlated pairs (Pearson and Spearman).",
        ),
        Tool(
            "fit_parents",
            f"Explain variable x by the variables in cond as candidate parents. Returns the out-of-fold R^2 "
            f"({FOLDS} folds) of a linear fit and of a nonlinear (Gaussian-kernel ridge) fit and graded residual "
            "diagnostics: linearity (the nonlinear R^2 gain), constant noise scale, and tail weight of the "
            "residuals.",
            ("x", "cond"),
            ("x",),
        ),
        Tool(
            "probe_direction",
            "Additive-noise direction probe for the pair x, y: regress each on the other (Gaussian-kernel "
            "ridge, out-of-fold) and test whether the residuals are independent of the input (HSIC). Returns a "
            "graded preference for x -> y, y -> x or neither.",
            ("x", "y"),
            ("x", "y"),
        ),
        Tool(
            "run_code",
            "Run a short Python program on the data in an isolated process (numpy and scipy available; no "
            "network, no files outside a scratch directory, limited time and memory). Returns what it prints.",
            ("code",),
            ("code",),
        ),
    )


# ---------------------------------------------------------------------------------------------
# texts
# ---------------------------------------------------------------------------------------------


def graph_text(graph: np.ndarray) -> str:
    """``"<k> edges (<a> directed, <b> undirected): X0 -> X1, ..."`` for a graph in the encoding."""
    undirected = int(np.count_nonzero(np.triu(graph & graph.T, 1)))
    total = int(np.count_nonzero(np.triu(graph | graph.T, 1)))
    return (
        f"{total} edge{'' if total == 1 else 's'} ({total - undirected} directed, {undirected} undirected): "
        f"{format_edge_list(graph) or 'none'}"
    )


def set_text(nodes: Sequence[int]) -> str:
    """``{X1, X4}`` for the nodes ``(1, 4)``; ``{}`` for none."""
    return "{" + ", ".join(variable_name(v) for v in nodes) + "}"


def _grade(value: float, grades: tuple[tuple[float, str], ...], top: str) -> str:
    return next((name for bound, name in grades if value < bound), top)


def _null_grade(pvalue: float, hypothesis: str) -> str:
    """A test of ``hypothesis`` graded in the bands of :func:`causal_gym.stats.strength_grade`."""
    from causal_gym.stats import GRADES, strength_grade

    words = dict(zip(GRADES, ("strong evidence against", "evidence against", "weak evidence against",
                              "weakly consistent with", "consistent with")))
    return f"{words[strength_grade(pvalue, ALPHA)]} {hypothesis}"


# ---------------------------------------------------------------------------------------------
# ci_test, stability, run_code
# ---------------------------------------------------------------------------------------------


def ci_test(tester: Any, x: int, y: int, cond: Sequence[int]) -> tuple[str, dict[str, Any]]:
    """One CI test at level :data:`ALPHA`: the verdict and its strength grade, never the p-value.

    ``tester`` is a :class:`causal_gym.stats.CITester` over the episode's data; keeping one per
    test and episode lets repeated calls share its kernels and residuals.

    Returns
    -------
    (str, dict)
        The text for the agent and the same verdict and grade for the record.
    """
    from causal_gym.stats import strength_grade, verdict

    pvalue = tester.pvalue(x, y, cond)
    outcome, grade = verdict(pvalue, ALPHA), strength_grade(pvalue, ALPHA)
    text = f"{variable_name(x)} and {variable_name(y)} given {set_text(cond)} ({tester.test} test): {outcome} ({grade})"
    data = {"x": variable_name(x), "y": variable_name(y), "cond": [variable_name(v) for v in cond],
            "test": tester.test, "verdict": outcome, "grade": grade}
    return text, data


def stability(
    data: np.ndarray, x: int, y: int, cond: Sequence[int], test: str, *, n_resamples: int, subsample: float, seed: int
) -> tuple[str, dict[str, Any]]:
    """Share of "independent" verdicts of one CI test over ``n_resamples`` random row subsamples.

    Each subsample holds ``subsample`` of the rows, drawn without replacement from ``seed``
    (:func:`causal_gym.stats.verdict_stability`).

    Returns
    -------
    (str, dict)
        The text for the agent and the share for the record.
    """
    from causal_gym.stats import verdict_stability

    share = verdict_stability(
        data, x, y, cond, test=test, alpha=ALPHA, n_resamples=n_resamples, fraction=subsample, seed=seed
    )
    text = (
        f"{variable_name(x)} and {variable_name(y)} given {set_text(cond)} ({test} test): 'independent' in "
        f"{share:.0%} of {n_resamples} subsamples of {subsample:.0%} of the rows"
    )
    result = {"x": variable_name(x), "y": variable_name(y), "cond": [variable_name(v) for v in cond], "test": test,
              "independent_share": round(float(share), 4), "n_resamples": n_resamples}
    return text, result


def code_output(
    code: str, data: np.ndarray, limits: SandboxLimits | None, sandbox: str = "auto"
) -> tuple[str, dict[str, Any], bool]:
    """Run an agent's program on ``data`` in the sandbox (:func:`causal_gym.harness.run_code`).

    Returns
    -------
    (str, dict, bool)
        What the program printed (with the error appended when it failed), the outcome for the
        record, and whether it succeeded.
    """
    result = run_code(code, data, limits, sandbox=sandbox)
    text = result.output if result.ok else f"{result.output}\n[error: {result.error}]".lstrip("\n")
    record = {"ok": result.ok, "error": result.error, "output_truncated": result.output_truncated,
              "sandbox": result.sandbox}
    return text or "(no output)", record, result.ok


# ---------------------------------------------------------------------------------------------
# summarize
# ---------------------------------------------------------------------------------------------


def _moments(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Column-wise mean, standard deviation, skewness and excess kurtosis (population moments)."""
    mean = values.mean(axis=0)
    centred = values - mean
    var = np.mean(centred**2, axis=0)
    skew = np.mean(centred**3, axis=0) / var**1.5
    kurt = np.mean(centred**4, axis=0) / var**2 - 3.0
    return mean, np.sqrt(var), skew, kurt


def _jarque_bera_pvalue(n: int, skew: np.ndarray, kurt: np.ndarray) -> np.ndarray:
    from scipy.stats import chi2

    return chi2.sf(n / 6.0 * (skew**2 + kurt**2 / 4.0), 2)


def _ranks(values: np.ndarray) -> np.ndarray:
    from scipy.stats import rankdata

    return rankdata(values, axis=0)


def summarize(data: np.ndarray) -> tuple[str, dict[str, Any]]:
    """Marginal statistics of every column and the most correlated pairs.

    Returns
    -------
    (str, dict)
        The text for the agent and the same numbers (rounded as shown) for the record.
    """
    n, d = data.shape
    mean, sd, skew, kurt = _moments(data)
    normal = _jarque_bera_pvalue(n, skew, kurt)
    quantiles = np.quantile(data, [0.0, 0.05, 0.25, 0.5, 0.75, 0.95, 1.0], axis=0)
    rows = []
    lines = [
        f"n = {n} rows, d = {d} variables; normality by the Jarque-Bera test.",
        "var    mean     sd   skew exkurt  normality                             min    q05    q25    q50    q75"
        "    q95    max",
    ]
    for j in range(d):
        grade = _null_grade(float(normal[j]), "normality")
        # rounded first, + 0.0 turns -0.0 into 0.0: a mean of -1e-17 reads the same as one of +1e-17
        values = tuple(round(float(v), 2) + 0.0 for v in (mean[j], sd[j], skew[j], kurt[j]))
        q = np.round(quantiles[:, j], 2) + 0.0
        row = {
            "variable": variable_name(j),
            **dict(zip(("mean", "sd", "skewness", "excess_kurtosis"), values)),
            "normality": grade,
            "quantiles": q.tolist(),
        }
        rows.append(row)
        numbers = "".join(f"{v:>7.2f}" for v in values)
        lines.append(f"{row['variable']:<4}{numbers}  {grade:<34}" + "".join(f"{v:>7.2f}" for v in q))
    pearson = np.corrcoef(data, rowvar=False)
    spearman = np.corrcoef(_ranks(data), rowvar=False)
    pairs = sorted(combinations(range(d), 2), key=lambda p: (-abs(pearson[p]), p))[:_TOP_PAIRS]
    top: list[dict[str, Any]] = [
        {
            "pair": [variable_name(i), variable_name(j)],
            "pearson": round(float(pearson[i, j]), 3) + 0.0,
            "spearman": round(float(spearman[i, j]), 3) + 0.0,
        }
        for i, j in pairs
    ]
    lines.append(f"Most correlated pairs (by |Pearson|, top {len(top)}):")
    lines += [f"- {a}, {b}: Pearson {t['pearson']:+.3f}, Spearman {t['spearman']:+.3f}"
              for t in top for a, b in [t["pair"]]]
    return "\n".join(lines), {"variables": rows, "top_pairs": top}


# ---------------------------------------------------------------------------------------------
# out-of-fold regression (fit_parents, probe_direction)
# ---------------------------------------------------------------------------------------------


def _sq_distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.maximum(np.sum(a**2, 1)[:, None] + np.sum(b**2, 1)[None, :] - 2.0 * a @ b.T, 0.0)


def _out_of_fold(features: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Out-of-fold predictions of a linear model and of Gaussian-kernel ridge regression.

    The squared kernel bandwidth is the median squared distance between rows of ``features``;
    the ridge is ``lambda * n_train`` with ``lambda`` from :data:`RIDGE_GRID` chosen by the total
    out-of-fold squared error. With no features both predict the training mean. BLAS runs on one
    thread (:func:`causal_gym.stats.kci.single_threaded_blas`): the matrices are a few hundred rows,
    where more threads gain little and stall badly on a shared machine.
    """
    from causal_gym.stats.kci import single_threaded_blas

    with single_threaded_blas():
        return _out_of_fold_fits(features, target)


def _out_of_fold_fits(features: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    from scipy.linalg import cho_factor, cho_solve

    n = target.shape[0]
    folds = np.arange(n) % FOLDS
    linear = np.empty(n)
    kernel = np.empty((len(RIDGE_GRID), n))
    if features.shape[1]:
        sq = _sq_distances(features, features)
        median = float(np.median(sq[np.triu_indices(n, 1)]))
        gram = np.exp(-sq / (2.0 * median)) if median > 0 else np.ones_like(sq)
    for k in range(FOLDS):
        test, train = folds == k, folds != k
        centre = target[train].mean()
        if not features.shape[1]:
            linear[test] = centre
            kernel[:, test] = centre
            continue
        design = np.column_stack([np.ones(train.sum()), features[train]])
        coef = np.linalg.lstsq(design, target[train], rcond=None)[0]
        linear[test] = coef[0] + features[test] @ coef[1:]
        inner = gram[np.ix_(train, train)]
        cross = gram[np.ix_(test, train)]
        for g, lam in enumerate(RIDGE_GRID):
            factor = cho_factor(inner + lam * train.sum() * np.eye(train.sum()))
            kernel[g, test] = centre + cross @ cho_solve(factor, target[train] - centre)
    best = int(np.argmin(np.sum((kernel - target) ** 2, axis=1)))
    return linear, kernel[best]


def _r2(target: np.ndarray, prediction: np.ndarray) -> float:
    total = float(np.sum((target - target.mean()) ** 2))
    return 1.0 - float(np.sum((target - prediction) ** 2)) / total


def _breusch_pagan_pvalue(residuals: np.ndarray, regressors: np.ndarray) -> float:
    """``n R^2`` of squared residuals on ``[1, regressors]`` against chi-square(#regressors)."""
    from scipy.stats import chi2

    sq = residuals**2
    design = np.column_stack([np.ones(len(sq)), regressors])
    fitted = design @ np.linalg.lstsq(design, sq, rcond=None)[0]
    return float(chi2.sf(len(sq) * _r2(sq, fitted), regressors.shape[1]))


def fit_parents(data: np.ndarray, child: int, parents: Sequence[int]) -> tuple[str, dict[str, Any]]:
    """How well ``parents`` explain ``child``, with graded residual diagnostics.

    The diagnostics are computed on the residuals of the better of the two out-of-fold fits.

    Returns
    -------
    (str, dict)
        The text for the agent and its numbers/grades for the record.
    """
    parents = list(parents)
    target = data[:, child]
    features = data[:, parents]
    linear, nonlinear = _out_of_fold(features, target)
    r2_linear, r2_nonlinear = _r2(target, linear), _r2(target, nonlinear)
    gain = r2_nonlinear - r2_linear
    best = "nonlinear" if gain > 0 else "linear"
    residuals = target - (nonlinear if best == "nonlinear" else linear)
    kurt = float(_moments(residuals[:, None])[3][0])
    name = variable_name(child)
    head = f"{name} given {set_text(parents) if parents else 'no parents'}"
    result: dict[str, Any] = {
        "child": name,
        "parents": [variable_name(p) for p in parents],
        "r2_linear": round(r2_linear, 3),
        "r2_nonlinear": round(r2_nonlinear, 3),
        "linearity": _grade(gain, _GAIN_GRADES, "strong") + " nonlinear gain",
        "residual_tails": _grade(abs(kurt), _TAIL_GRADES, "heavy"),
        "residual_excess_kurtosis": round(kurt, 2),
    }
    if parents:
        fitted = target - residuals
        regressors = np.column_stack([fitted, features, features**2])
        result["constant_noise_scale"] = _null_grade(_breusch_pagan_pvalue(residuals, regressors), "a constant scale")
    else:
        result["constant_noise_scale"] = "not applicable without parents"
    text = (
        f"{head}: out-of-fold R^2 linear {result['r2_linear']:.3f}, nonlinear {result['r2_nonlinear']:.3f} "
        f"(residuals of the {best} fit below).\n"
        f"- linearity: {result['linearity']} ({gain:+.3f} R^2)\n"
        f"- constant noise scale: {result['constant_noise_scale']}\n"
        f"- residual tails: {result['residual_tails']} (excess kurtosis {result['residual_excess_kurtosis']:.2f})"
    )
    return text, result


def probe_direction(data: np.ndarray, x: int, y: int) -> tuple[str, dict[str, Any]]:
    """Additive-noise direction probe: which regression leaves residuals independent of its input.

    Returns
    -------
    (str, dict)
        The graded preference for the agent and its parts for the record.
    """
    from causal_gym.stats import CITester, strength_grade, verdict

    fits = {}
    for cause, effect in ((x, y), (y, x)):
        _, prediction = _out_of_fold(data[:, [cause]], data[:, effect])
        residuals = data[:, effect] - prediction
        pvalue = CITester(np.column_stack([data[:, cause], residuals]), test="kci").pvalue(0, 1, ())
        fits[(cause, effect)] = (verdict(pvalue, ALPHA), strength_grade(pvalue, ALPHA))
    a, b = variable_name(x), variable_name(y)
    forward, backward = fits[(x, y)], fits[(y, x)]
    fit_forward, fit_backward = forward[0] == "independent", backward[0] == "independent"
    if fit_forward != fit_backward:
        (first, second), rejected = ((a, b), backward) if fit_forward else ((b, a), forward)
        preference = f"{first} -> {second} preferred (the reverse fit leaves {rejected[1]})"
    elif fit_forward:
        preference = "no preference: both fits leave residuals independent of the input"
    else:
        preference = "no preference: both fits leave residuals dependent on the input"
    text = (
        f"Direction probe {a}, {b}: {preference}.\n"
        f"- fit {a} -> {b}: residuals vs {a}: {forward[0]} ({forward[1]})\n"
        f"- fit {b} -> {a}: residuals vs {b}: {backward[0]} ({backward[1]})"
    )
    data_out = {
        "pair": [a, b],
        "preference": preference,
        "forward": {"verdict": forward[0], "grade": forward[1]},
        "backward": {"verdict": backward[0], "grade": backward[1]},
    }
    return text, data_out


# ---------------------------------------------------------------------------------------------
# the tool methods shared by the environments that offer this toolbox
# ---------------------------------------------------------------------------------------------


class DataTools:
    """Mixin for a :class:`~causal_gym.harness.working_graph_env.WorkingGraphEnv` that offers these
    tools over one data table.

    Heuresis and CausalArena's tool mode inherit it (before the env base), call
    :meth:`_configure_data_tools` with their tool arguments and their algorithm ``menu`` (a
    :class:`~causal_gym.harness.menu.Menu`, whose labels become ``run_algorithm``'s choices) and
    provide :meth:`_menu_graph`, the run of one menu entry; the env keeps ``_data``, ``_budgets``,
    ``_slots`` (label -> entry name, :meth:`Menu.slots` of a permutation drawn per episode),
    ``_testers`` (a dict), ``_summary`` (None until the first ``summarize``) and
    ``_resample_rng``. A menu run that is not cached yet and takes longer than
    ``algorithm_time_limit`` seconds is stopped: the call is charged and says so, and nothing is
    cached. The final info names the sandbox backend agent code ran under (``"sandbox"``;
    ``"process"`` means it was not isolated) and, in words, the host user, task and memory bounds
    that applied to each call (``"sandbox_bounds"``). ``_refusal`` lets an env reject nodes before any
    budget is charged (CausalArena's padding slots).
    """

    n_resamples: int
    menu: Menu
    # what the host env provides (see above), declared for the type checker
    _data: np.ndarray
    _slots: dict[str, str]
    _testers: dict[str, Any]
    _summary: tuple[str, dict[str, Any]] | None
    _resample_rng: np.random.Generator
    _declared_cost: Callable[[str], dict[str, float]]
    _affordable: Callable[[Mapping[str, float]], bool]

    def _configure_data_tools(
        self,
        n_resamples: int,
        subsample: float,
        sandbox_limits: SandboxLimits | None,
        sandbox: str,
        algorithm_time_limit: float | None,
        menu: Menu,
    ) -> None:
        """Validate and keep the tools' arguments (the rows of the envs' argument tables)."""
        if not isinstance(menu, Menu):
            raise ValueError(f"menu must be a causal_gym.harness.menu.Menu, got {menu!r}")
        self.menu = menu
        self.n_resamples = check_count(n_resamples, "n_resamples", 1)
        self.subsample = check_real(subsample, "subsample", 0.0, strict=True)
        if self.subsample >= 1:
            raise ValueError(f"subsample must be a share of the rows in (0, 1), got {subsample!r}")
        self.sandbox_limits, self.sandbox = check_sandbox_options(sandbox_limits, sandbox)
        self.algorithm_time_limit = (None if algorithm_time_limit is None
                                     else check_real(algorithm_time_limit, "algorithm_time_limit", 0.0, strict=True))

    def _tools(self) -> tuple[Tool, ...]:
        return data_tools(self.n_resamples, self.menu.labels)

    def _fields(self) -> tuple[ActionField, ...]:
        return data_fields(self.menu.labels)

    def _menu_graph(self, entry: MenuEntry) -> np.ndarray:
        """The output graph of menu entry ``entry`` on the episode's data, over the env's
        variables; a run that is not cached computes under ``self.algorithm_time_limit``
        (:func:`causal_gym._cache.cached`), raising :class:`~causal_gym._workers.TimeLimitExceeded`."""
        raise NotImplementedError

    def _refusal(self, *nodes: int) -> ToolResult | None:
        """An error ``ToolResult`` for nodes the env does not offer, else None (all are offered)."""
        return None

    def _tester(self, test: str) -> Any:
        from causal_gym.stats import CITester

        if test not in self._testers:
            self._testers[test] = CITester(self._data, test=test)
        return self._testers[test]

    def _tool_run_algorithm(self, algorithm: str) -> ToolResult:
        cost = self._declared_cost("run_algorithm")
        if not self._affordable(cost):
            return ToolResult("", cost=cost)
        try:
            graph = self._menu_graph(self.menu[self._slots[algorithm]])
        except TimeLimitExceeded as exc:
            return ToolResult(
                f"{ERROR_PREFIX}algorithm {algorithm} did not finish within the per-call time limit of "
                f"{exc.seconds:g} s, so it returned no graph; the call was charged",
                {"algorithm": algorithm, "timed_out": True, "time_limit": exc.seconds}, cost, ok=False,
            )
        return ToolResult(
            f"Algorithm {algorithm} returned {graph_text(graph)}",
            {"algorithm": algorithm, "edges": format_edge_list(graph)},
            cost,
        )

    def _tool_ci_test(self, x: int, y: int, cond: tuple[int, ...], test: str) -> ToolResult:
        cost = self._declared_cost("ci_test")
        refused = self._refusal(x, y, *cond)
        if refused is not None or not self._affordable(cost):
            return refused or ToolResult("", cost=cost)
        return ToolResult(*ci_test(self._tester(test), x, y, cond), cost)

    def _tool_stability(self, x: int, y: int, cond: tuple[int, ...], test: str) -> ToolResult:
        cost = self._declared_cost("stability")
        refused = self._refusal(x, y, *cond)
        if refused is not None or not self._affordable(cost):
            return refused or ToolResult("", cost=cost)
        seed = int(self._resample_rng.integers(2**63 - 1))
        return ToolResult(
            *stability(self._data, x, y, cond, test, n_resamples=self.n_resamples, subsample=self.subsample, seed=seed),
            cost,
        )

    def _tool_summarize(self) -> ToolResult:
        if self._summary is None:
            self._summary = summarize(self._data)
        return ToolResult(*self._summary)

    def _tool_fit_parents(self, x: int, cond: tuple[int, ...]) -> ToolResult:
        return self._refusal(x, *cond) or ToolResult(*fit_parents(self._data, x, cond))

    def _tool_probe_direction(self, x: int, y: int) -> ToolResult:
        return self._refusal(x, y) or ToolResult(*probe_direction(self._data, x, y))

    def _tool_run_code(self, code: str) -> ToolResult:
        text, data, ok = code_output(code, self._data, self.sandbox_limits, self.sandbox)
        return ToolResult(text, data, ok=ok)

    def _final_info(self) -> dict[str, Any]:
        return {"sandbox": sandbox_in_use(self.sandbox),
                "sandbox_bounds": sandbox_bounds(self.sandbox, self.sandbox_limits)}
