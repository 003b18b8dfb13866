"""A least-recently-used cache bounded by the bytes of the arrays it holds."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Protocol, TypeVar


class _Sized(Protocol):
    @property
    def nbytes(self) -> int: ...


T = TypeVar("T", bound=_Sized)


class ByteBoundedLRU:
    """Map keys to array-backed values, evicting the least recently used past ``max_bytes``.

    Values report their size through an ``nbytes`` attribute (numpy arrays and the small records
    of :mod:`causal_gym.stats.kci` do). A value larger than the whole budget is returned but not
    stored, so a cap of 0 turns caching off without changing any result.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = int(max_bytes)
        self.nbytes = 0
        self._items: OrderedDict[Hashable, _Sized] = OrderedDict()

    def __len__(self) -> int:
        return len(self._items)

    def get_or_compute(self, key: Hashable, compute: Callable[[], T]) -> T:
        """Return the cached value for ``key``, computing and storing it on a miss."""
        if key in self._items:
            self._items.move_to_end(key)
            return self._items[key]  # type: ignore[return-value]
        value = compute()
        size = int(value.nbytes)
        if size <= self.max_bytes:
            self._items[key] = value
            self.nbytes += size
            while self.nbytes > self.max_bytes:
                _, old = self._items.popitem(last=False)
                self.nbytes -= int(old.nbytes)
        return value
