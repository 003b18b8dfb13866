"""The CPU bound that benchmarks/llm_concurrency.py prints beside the measured overhead (issue 32),
against cases worked out by hand."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from llm_concurrency import cpu_bound  # noqa: E402


def test_one_slot_adds_each_episodes_cpu_to_the_wall():
    # two episodes one after the other: 2 x (5 s of waiting + 10 ms of CPU)
    assert cpu_bound(1, 0.010, 1.0) == pytest.approx(1 - 10 / 10.02)


def test_when_only_starting_costs_cpu_the_last_slot_starts_c_starts_late():
    # c episodes start at once, s seconds each, one after the other: slot k's first request leaves
    # at (k + 1) s; its second episode starts when its first ends, s after the slot before's, so
    # nothing waits again and it needs s more: the last slot ends at (c + 1) s + 10
    c, s = 256, 0.002
    assert cpu_bound(c, s, 1.0, split=(1.0, 0.0, 0.0)) == pytest.approx(1 - 10 / (10 + (c + 1) * s))


def test_the_bound_grows_with_the_cpu_and_the_episodes_in_flight():
    by_cpu = [cpu_bound(64, cpu, 1.0) for cpu in (0.002, 0.005, 0.010)]
    by_slots = [cpu_bound(c, 0.005, 1.0) for c in (4, 16, 64, 256)]
    assert by_cpu == sorted(by_cpu) and by_slots == sorted(by_slots) and by_slots[0] > 0
