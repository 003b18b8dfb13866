"""Named episode budgets (turns, CI tests, algorithm calls, wall time) with all-or-nothing charging.

A call that would take a budget past its limit is refused without charging anything; the
environment then answers it with an error result. A budget is *exhausted* once its use reaches its
limit, which is what moves an episode to its last turn.

Wall time is the one budget that is measured rather than charged: its use is the time since
:meth:`Budgets.start` by ``time.perf_counter``. It is therefore the only non-deterministic limit —
two runs of the same seed can be cut at different turns — and is off (``None``) by default.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

__all__ = ["WALL_TIME", "Budget", "Budgets"]

WALL_TIME = "wall_time"
"""Name of the wall-time budget, in seconds since the episode started."""


@dataclass
class Budget:
    """One limit and how much of it is used. ``limit=None`` means unlimited."""

    name: str
    limit: float | None
    used: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"a budget name must be a non-empty string, got {self.name!r}")
        if self.limit is not None and not (
            isinstance(self.limit, (int, float, np.integer, np.floating)) and self.limit >= 0
        ):
            raise ValueError(f"the limit of budget {self.name!r} must be None or a number >= 0, got {self.limit!r}")

    @property
    def remaining(self) -> float:
        """What is left (``inf`` when unlimited; never negative)."""
        return math.inf if self.limit is None else max(float(self.limit) - self.used, 0.0)

    @property
    def exhausted(self) -> bool:
        return self.limit is not None and self.used >= self.limit


class Budgets:
    """The budgets of one episode, in a fixed order.

    Parameters
    ----------
    limits : mapping of str to float or None
        Budget name -> limit (``None`` = unlimited), in the order reported by :meth:`remaining`
        and :meth:`fractions`. Do not include ``"wall_time"``: it is always added last.
    wall_time : float or None, default None
        Seconds allowed from :meth:`start`; ``None`` switches the limit off.

    Examples
    --------
    >>> b = Budgets({"turns": 3, "tests": 10})
    >>> b.charge("tests", 8), b.charge("tests", 5), b.remaining()["tests"]
    (True, False, 2.0)
    """

    def __init__(self, limits: Mapping[str, float | None], wall_time: float | None = None) -> None:
        if WALL_TIME in limits:
            raise ValueError(f"{WALL_TIME!r} is measured, not charged; give it as the wall_time argument")
        self._budgets = {name: Budget(name, limit) for name, limit in limits.items()}
        self._wall = Budget(WALL_TIME, wall_time)
        self._start = time.perf_counter()

    def start(self) -> None:
        """Restart the wall-time clock (the environment calls this at ``reset``)."""
        self._start = time.perf_counter()

    @property
    def names(self) -> tuple[str, ...]:
        """Budget names in reporting order; ``"wall_time"`` is last."""
        return (*self._budgets, WALL_TIME)

    def _all(self) -> list[Budget]:
        self._wall.used = time.perf_counter() - self._start
        return [*self._budgets.values(), self._wall]

    def _get(self, name: str) -> Budget:
        if name == WALL_TIME:
            raise ValueError(f"{WALL_TIME!r} cannot be charged; it is measured from the episode start")
        if name not in self._budgets:
            raise ValueError(f"unknown budget {name!r}; budgets are {', '.join(self._budgets)}")
        return self._budgets[name]

    def charge(self, name: str, amount: float) -> bool:
        """Use ``amount`` of budget ``name``; return False (charging nothing) if it would exceed the limit."""
        return self.charge_all({name: amount})

    def charge_all(self, costs: Mapping[str, float]) -> bool:
        """Charge several budgets at once, or none of them if any would exceed its limit."""
        budgets = []
        for name, amount in costs.items():
            if (
                isinstance(amount, bool)
                or not isinstance(amount, (int, float, np.integer, np.floating))
                or not amount >= 0
            ):
                raise ValueError(f"the cost for budget {name!r} must be a number >= 0, got {amount!r}")
            budgets.append((self._get(name), float(amount)))
        if any(b.limit is not None and b.used + amount > b.limit for b, amount in budgets):
            return False
        for b, amount in budgets:
            b.used += amount
        return True

    def limits(self) -> dict[str, float | None]:
        """Name -> limit (``None`` = unlimited)."""
        return {b.name: b.limit for b in self._all()}

    def used(self) -> dict[str, float]:
        """Name -> amount used (seconds so far for wall time)."""
        return {b.name: b.used for b in self._all()}

    def remaining(self) -> dict[str, float]:
        """Name -> amount left (``inf`` for unlimited budgets)."""
        return {b.name: b.remaining for b in self._all()}

    def fractions(self) -> np.ndarray:
        """Share of each budget left, in :attr:`names` order, as float32 in [0, 1] (1 when unlimited)."""
        return np.array(
            [1.0 if b.limit is None else (b.remaining / b.limit if b.limit > 0 else 0.0) for b in self._all()],
            dtype=np.float32,
        )

    def exhausted(self) -> list[str]:
        """Names of the budgets whose use has reached their limit."""
        return [b.name for b in self._all() if b.exhausted]
