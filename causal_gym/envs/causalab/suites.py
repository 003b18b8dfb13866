"""The published CausaLab settings and their seeded suites.

Every released JSONL suite of the paper has a named :class:`~.world.Setting` in :data:`SETTINGS`;
our suites are regenerated from seeds, never copied (the released files are for comparison only,
see :mod:`.loader`).

Seeds
-----
Episode ``index`` of a suite has SeedSequence entropy
``(master_seed, n_nodes, freq_parent, split_id, index)`` (:func:`episode_seed`). The setting
name is deliberately not part of it: settings over the same graph family (``n_nodes``,
``freq_parent``) get the same graphs, records and crystals, exactly as the released hidden,
quadratic, Golden and scaling suites reuse the base suite's graphs. The ``"test"`` split holds the
:data:`SUITE_SIZE` published-size episodes; ``"train"`` is an unbounded stream for RL
(:func:`train_seeds`, :func:`train_episode`). Distinct ``split_id`` values make the splits
disjoint by construction.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from itertools import count
from types import MappingProxyType

from causal_gym._validation import check_choice, check_count
from causal_gym.envs.causalab.world import Episode, HiddenSpec, Setting, make_episode

__all__ = [
    "MASTER_SEED",
    "SUITE_SIZE",
    "SPLITS",
    "SETTINGS",
    "EpisodeSpec",
    "episode_seed",
    "suite",
    "train_seeds",
    "train_episode",
]

MASTER_SEED = 2_605_260_290
"""Master seed of our suites: an arbitrary constant, fixed once and never tuned."""

SUITE_SIZE = 50
"""Episodes per published suite (the paper's 50 topologies per setting)."""

SPLITS = ("test", "train")
"""``test``: the fixed suites; ``train``: an unbounded stream disjoint from them."""


def _scaling(n_nodes: int, observations: tuple[int, ...], interventions: tuple[int, ...], mixed: int) -> dict[str, Setting]:
    """The observation/intervention grid ``XoYi`` (X prior records, Y interventions)."""
    grid = [(o, 0) for o in observations] + [(0, i) for i in interventions] + [(mixed, i) for i in interventions]
    return {f"{n_nodes}node-{o}o{i}i": Setting(n_nodes, n_prior_records=o, intervention_budget=i) for o, i in grid}


def _build_settings() -> dict[str, Setting]:
    out: dict[str, Setting] = {f"{n}node": Setting(n) for n in range(3, 8)}
    out["4node-quad"] = Setting(4, kind="quadratic")
    for k in (1, 2, 3):
        out[f"4node-hidden-n{k}"] = Setting(4, hidden=HiddenSpec(k))
    for label, v in (("pm0p5", 0.5), ("pm5", 5.0), ("pm50", 50.0)):
        out[f"4node-hidden-vrange-{label}"] = Setting(4, hidden=HiddenSpec(1, (-v, 0.0, v)))
    for k in (1, 2, 3):
        out[f"4node-hidden-freqnode-n{k}"] = Setting(4, hidden=HiddenSpec(k, freqnode=True))
    for n in (4, 6):
        out[f"{n}node-freqparent"] = Setting(n, freq_parent=True)
        out[f"{n}node-golden"] = Setting(n, golden=True)
    out.update(_scaling(4, (3, 6, 12, 24), (3, 6, 12, 24), 3))
    out.update(_scaling(6, (5, 10, 20), (5, 10, 20), 5))
    return out


SETTINGS: Mapping[str, Setting] = MappingProxyType(_build_settings())
"""Every published setting by name: ``{3..7}node``, ``4node-quad``, ``4node-hidden-n{1,2,3}``,
``4node-hidden-vrange-{pm0p5,pm5,pm50}``, ``4node-hidden-freqnode-n{1,2,3}``,
``{4,6}node-freqparent``, ``{4,6}node-golden`` and the scaling grids ``4node-XoYi``
(``{3,6,12,24}o0i``, ``0o{3,6,12,24}i``, ``3o{3,6,12,24}i``) and ``6node-XoYi``
(``{5,10,20}o0i``, ``0o{5,10,20}i``, ``5o{5,10,20}i``)."""


def _setting(name: str) -> Setting:
    return SETTINGS[check_choice(name, SETTINGS, "setting")]


def episode_seed(name: str, index: int, split: str = "test", master_seed: int = MASTER_SEED) -> tuple[int, ...]:
    """SeedSequence entropy ``(master_seed, n_nodes, freq_parent, split_id, index)`` of an episode.

    Raises
    ------
    ValueError
        Unknown setting or split, a negative index, or ``index >= SUITE_SIZE`` on ``"test"``.
    """
    setting = _setting(name)
    split_id = SPLITS.index(check_choice(split, SPLITS, "split"))
    index = check_count(index, "index", minimum=0)
    if split == "test" and index >= SUITE_SIZE:
        raise ValueError(f"index {index} is out of range for the test suite (valid: 0..{SUITE_SIZE - 1})")
    master = check_count(master_seed, "master_seed", minimum=0)
    return (master, setting.n_nodes, int(setting.freq_parent), split_id, index)


@dataclass(frozen=True)
class EpisodeSpec:
    """One suite entry: the setting name, its position, its seed and the setting itself."""

    name: str
    index: int
    seed: tuple[int, ...]
    setting: Setting

    def make(self) -> Episode:
        """Generate the episode (:func:`~.world.make_episode`)."""
        return make_episode(self.seed, self.setting)


def suite(name: str, master_seed: int = MASTER_SEED) -> list[EpisodeSpec]:
    """The :data:`SUITE_SIZE` test episodes of setting ``name``.

    Examples
    --------
    >>> specs = suite("4node-hidden-n1")
    >>> len(specs), specs[0].make().scm == suite("4node")[0].make().scm
    (50, True)
    """
    setting = _setting(name)
    return [EpisodeSpec(name, k, episode_seed(name, k, "test", master_seed), setting) for k in range(SUITE_SIZE)]


def train_seeds(name: str, start: int = 0, master_seed: int = MASTER_SEED) -> Iterator[tuple[int, ...]]:
    """Endless stream of train-split seeds of setting ``name`` from position ``start``."""
    start = check_count(start, "start", minimum=0)
    _setting(name)
    return (episode_seed(name, k, "train", master_seed) for k in count(start))


def train_episode(name: str, k: int, master_seed: int = MASTER_SEED) -> Episode:
    """Train-split episode ``k`` of setting ``name`` (disjoint from the test suite)."""
    return make_episode(episode_seed(name, k, "train", master_seed), _setting(name))
