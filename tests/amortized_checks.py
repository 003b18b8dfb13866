"""What every amortized method's tests share: small chain datasets and the result contract.

The contract (shapes, dtype, zero diagonal, probabilities in [0, 1], timing fields, ``run`` equal
to ``infer``) is the interface's, so one function checks it for each wrapper.
"""

from __future__ import annotations

import numpy as np


def chain_datasets(k: int, n: int, d: int = 5, seed: int = 0) -> list[np.ndarray]:
    """``k`` Gaussian datasets with the chain ``X0 -> X1 -> X2`` (linear, then tanh) and independent rest."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(k):
        x = rng.normal(size=(n, d))
        x[:, 1] += 1.5 * x[:, 0]
        x[:, 2] = np.tanh(x[:, 1]) + 0.3 * rng.normal(size=n)
        out.append(x)
    return out


def check_result_contract(method, x: np.ndarray, name: str):  # noqa: ANN001, ANN201 -- any amortized method
    """``method.run(x)`` kept to the amortized interface; returns the result for method-specific checks."""
    d = x.shape[1]
    result = method.run(x)
    assert result.method == name and result.probabilities.shape == result.graph.shape == (d, d)
    assert result.graph.dtype == np.int8 and set(np.unique(result.graph)) <= {0, 1}
    assert np.all(np.diag(result.probabilities) == 0) and np.all(np.diag(result.graph) == 0)
    assert np.all((result.probabilities >= 0) & (result.probabilities <= 1))
    assert result.load_seconds == method.load_seconds > 0 and result.infer_seconds > 0
    np.testing.assert_array_equal(result.probabilities, method.infer(x))
    return result
