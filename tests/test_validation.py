"""Boundary validation: bad input raises a ValueError that names the problem; good input passes unchanged."""

import numpy as np
import pytest

from causal_gym._validation import check_adjacency, check_choice, check_data, check_node, check_node_set, check_range


def test_check_data_accepts_numeric_and_returns_float64_copy_semantics():
    X = np.arange(12, dtype=np.int32).reshape(4, 3) * np.array([1, 2, 3])
    out = check_data(X)
    assert out.dtype == np.float64 and out.flags.c_contiguous
    np.testing.assert_array_equal(out, X.astype(float))


@pytest.mark.parametrize(
    "bad, message",
    [
        (np.array([[1.0, np.nan], [2.0, 3.0], [4.0, 1.0]]), "NaN or infinite"),
        (np.array([[1.0, np.inf], [2.0, 3.0], [4.0, 1.0]]), "NaN or infinite"),
        (np.array([[1.0, 5.0], [2.0, 5.0], [3.0, 5.0]]), "constant column"),
        (np.ones((2, 2)) * [[1, 2], [3, 4]], "at least 3 rows"),
        (np.arange(5.0), "2-D"),
        (np.array([["a", "b"]] * 3), "real numbers"),
        (np.array([[True, False]] * 3), "real numbers"),
        (np.array([[1 + 1j, 2]] * 3), "real numbers"),
        (np.empty((5, 0)), "no columns"),
    ],
)
def test_check_data_rejects(bad, message):
    with pytest.raises(ValueError, match=message):
        check_data(bad)


def test_check_adjacency():
    A = np.array([[0, 1], [0, 0]])
    assert check_adjacency(A).dtype == np.int8
    with pytest.raises(ValueError, match="square"):
        check_adjacency(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="0 or 1"):
        check_adjacency(np.array([[0, 2], [0, 0]]))
    with pytest.raises(ValueError, match="self-loops"):
        check_adjacency(np.eye(3))
    with pytest.raises(ValueError, match=r"shape \(3, 3\)"):
        check_adjacency(A, d=3)


def test_check_node_and_sets():
    assert check_node(np.int64(2), 3) == 2
    for bad in (3, -1, 1.0, True, "0"):
        with pytest.raises(ValueError):
            check_node(bad, 3)
    assert check_node_set([3, 1], 5) == (1, 3)
    assert check_node_set(None, 5) == ()
    with pytest.raises(ValueError, match="repeated"):
        check_node_set([1, 1], 5)
    with pytest.raises(ValueError, match="tested variables"):
        check_node_set([0, 2], 5, exclude=(2, 4))
    with pytest.raises(ValueError, match="sequence"):
        check_node_set("12", 5)


def test_check_choice():
    assert check_choice("kci", ("fisherz", "kci"), "test") == "kci"
    with pytest.raises(ValueError, match="unknown test 'gsq'"):
        check_choice("gsq", ("fisherz", "kci"), "test")


def test_check_range():
    assert check_range((1, 2), "r") == (1.0, 2.0)
    assert check_range(np.array([0.5, 0.5]), "r") == (0.5, 0.5)
    # a set and a mapping have a length of two but no (low, high) order
    for bad in ({1, 2}, {0: 1, 1: 2}, "ab", (1, 2, 3), 3.0):
        with pytest.raises(ValueError, match=r"a \(low, high\) pair"):
            check_range(bad, "r")
    with pytest.raises(ValueError, match="low <= high"):
        check_range((2, 1), "r")
    with pytest.raises(ValueError, match=r"r\[0\]"):
        check_range((-1, 1), "r", minimum=0)
