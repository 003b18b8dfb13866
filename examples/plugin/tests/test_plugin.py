"""The plug-in's own CI: causal_gym's conformance checks on its benchmark and its method, and the
method against a case worked by hand."""

import numpy as np

from causal_gym import discovery
from causal_gym.testing import parametrize_with_checks
from causal_gym_example_plugin.spec import SPEC


@parametrize_with_checks(benchmarks=[SPEC], methods=["pcorr", "causal_gym_example_plugin.methods:partial_correlation_skeleton"])
def test_causal_gym_conformance(target, check):
    check(target)


def test_pcorr_finds_a_chain_and_moralizes_a_collider():
    rng = np.random.default_rng(0)
    e = rng.normal(size=(3000, 3))
    chain = np.column_stack([e[:, 0], e[:, 0] + e[:, 1], e[:, 0] + e[:, 1] + e[:, 2]])  # X0 -> X1 -> X2
    collider = np.column_stack([e[:, 0], e[:, 1], e[:, 0] + e[:, 1] + e[:, 2]])  # X0 -> X2 <- X1
    assert discovery.run("pcorr", chain).graph.tolist() == [[0, 1, 0], [1, 0, 1], [0, 1, 0]]
    # given X2, the collider's parents are dependent: partial correlation adds the moral edge
    assert discovery.run("pcorr", collider).graph.tolist() == [[0, 1, 1], [1, 0, 1], [1, 1, 0]]
