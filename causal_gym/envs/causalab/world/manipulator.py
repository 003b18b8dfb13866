"""The property manipulator: shift interventions on a crystal under the hidden disturbance."""


from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from causal_gym._validation import as_generator, check_real
from causal_gym.envs.causalab.world.crystals import _row_dict
from causal_gym.envs.causalab.world.hidden import HiddenConfig
from causal_gym.envs.causalab.world.mechanism import CHANGE_TOLERANCE, FREQ, LabSCM, _check_name, _exogenous_row


@dataclass(frozen=True)
class InterventionResult:
    """What one manipulator call did.

    Attributes
    ----------
    target : str
    requested : float
    values : mapping
        Every displayed node value after the call (hidden disturbance included).
    changed : tuple of str
        Nodes whose displayed value moved by more than 1e-6 (what the agent can see move).
    cost : int
        Intervention budget units used (always 1, even when the value repeats).
    chains : tuple of tuple of str, or None
        Oracle mode only: maximal paths to the frequency through nodes whose undisturbed value
        changed (the paper's Oracle control).
    """

    target: str
    requested: float
    values: Mapping[str, float]
    changed: tuple[str, ...]
    cost: int = 1
    chains: tuple[tuple[str, ...], ...] | None = None


class Manipulator:
    """The manipulator crystal under budgeted shift interventions.

    Setting controllable ``X`` to ``v``: a root's exogenous term becomes ``v``; a hybrid's becomes
    ``round(v - c, 2)`` with ``c`` its current undisturbed parent contribution, so ``X`` shows
    ``v`` now and keeps following its parents later. Exogenous terms persist, so interventions
    accumulate; every descendant is recomputed. With a :class:`HiddenConfig`, ``h`` (0 at the
    start) is redrawn after each intervention and the displayed values include it; the stored
    exogenous terms never do. Budget accounting is the env's: each call reports ``cost=1``.

    Parameters
    ----------
    scm : LabSCM
    exogenous : mapping
        Starting exogenous terms of the controllable nodes.
    hidden : HiddenConfig, optional
    rng : seed or Generator, optional
        Stream of the ``h`` draws; required with ``hidden`` and only then.
    oracle_chains : bool
        Also report the changed causal chains (:attr:`InterventionResult.chains`).
    """

    def __init__(
        self,
        scm: LabSCM,
        exogenous: Mapping[str, float],
        hidden: HiddenConfig | None = None,
        rng: np.random.Generator | int | np.random.SeedSequence | None = None,
        oracle_chains: bool = False,
    ) -> None:
        if (hidden is None) != (rng is None):
            raise ValueError("rng is the stream of the hidden draws: pass both hidden and rng, or neither")
        for node in () if hidden is None else hidden.affected:
            _check_name(node, scm.properties, "hidden affected node")
        self._scm = scm
        self._exogenous = _exogenous_row(scm, exogenous)
        self._hidden = hidden
        self._rng = None if rng is None else as_generator(rng)
        self._oracle = bool(oracle_chains)
        self._h = 0.0
        self._calls = 0
        self._true = scm.evaluate_rows(self._exogenous[None, :])[0]
        self._shown = self._display()

    def _display(self) -> np.ndarray:
        if self._hidden is None or self._h == 0.0:
            return self._true
        return self._scm.evaluate_rows(self._exogenous[None, :], self._hidden.offsets(self._h))[0]

    def _as_dict(self, row: np.ndarray) -> dict[str, float]:
        return {p: float(v) for p, v in zip(self._scm.properties, row)}

    @property
    def scm(self) -> LabSCM:
        return self._scm

    @property
    def values(self) -> dict[str, float]:
        """Displayed values (what the agent sees; free to read before any intervention)."""
        return self._as_dict(self._shown)

    @property
    def true_values(self) -> dict[str, float]:
        """Undisturbed values (ground truth; equal to :attr:`values` without hidden disturbance)."""
        return self._as_dict(self._true)

    @property
    def exogenous(self) -> dict[str, float]:
        """Current exogenous terms."""
        return _row_dict(self._scm, self._exogenous)

    @property
    def hidden_value(self) -> float:
        """Current hidden ``h`` (ground truth)."""
        return self._h

    @property
    def n_interventions(self) -> int:
        """Number of :meth:`intervene` calls so far."""
        return self._calls

    def intervene(self, node: str, value: float) -> InterventionResult:
        """Set controllable ``node`` to ``value`` (shift semantics) and return the new display.

        Raises
        ------
        ValueError
            If ``node`` is not controllable or ``value`` is not a finite number (the env turns
            these into invalid-action messages that cost nothing).
        """
        _check_name(node, self._scm.controllable, "intervention target")
        v = check_real(value, "value")
        hybrid = bool(self._scm.parents(node))
        # a hybrid keeps its (undisturbed) parent contribution: only the intercept moves
        term = round(v - self._scm.parent_contribution(node, self.true_values), 2) if hybrid else v
        self._exogenous[self._scm.controllable.index(node)] = term
        before_true, before_shown = self._true, self._shown
        self._true = self._scm.evaluate_rows(self._exogenous[None, :])[0]
        if self._hidden is not None:
            self._h = float(self._rng.choice(self._hidden.values))  # type: ignore[union-attr]
        self._shown = self._display()
        self._calls += 1
        moved = np.abs(self._shown - before_shown) > CHANGE_TOLERANCE
        chains = None
        if self._oracle:
            changed_true = {p for p, m in zip(self._scm.properties, np.abs(self._true - before_true) > CHANGE_TOLERANCE) if m}
            chains = _changed_chains(self._scm, changed_true)
        return InterventionResult(
            node,
            v,
            MappingProxyType(self.values),
            tuple(p for p, m in zip(self._scm.properties, moved) if m),
            1,
            chains,
        )


def _changed_chains(scm: LabSCM, changed: set[str]) -> tuple[tuple[str, ...], ...]:
    """Maximal directed paths ending at the frequency inside the changed nodes."""
    if FREQ not in changed:
        return ()
    starts = [p for p in scm.properties if p in changed and not any(q in changed for q in scm.parents(p))]

    def walk(path: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
        if path[-1] == FREQ:
            yield path
            return
        for child in scm.children(path[-1]):
            if child in changed:
                yield from walk((*path, child))

    return tuple(sorted(chain for s in starts for chain in walk((s,))))
