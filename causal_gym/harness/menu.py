"""An algorithm menu: the named discovery runs that ``run_algorithm`` offers behind masked labels.

Heuresis and CausalArena's tool mode both hide a menu of discovery algorithms behind labels
``A, B, ...`` whose assignment is shuffled per episode (:mod:`causal_gym.harness.data_tools`).
One :class:`Menu` type serves both, so the labels, the tool's choices and its description all
follow from the menu's length: adding a method is adding one :class:`MenuEntry`.

An entry's ``name`` is what records, final infos and reports call it (Heuresis's ``"pc_kci"``);
its ``method`` and ``options`` are what :func:`causal_gym.discovery.run` receives. Agents see
only the labels.

Examples
--------
>>> menu = Menu.of_methods(("pc", "ges_fast", "direct_lingam"))
>>> menu.labels, list(menu)
(('A', 'B', 'C'), ['pc', 'ges_fast', 'direct_lingam'])
>>> menu.slots([2, 0, 1])
{'A': 'direct_lingam', 'B': 'pc', 'C': 'ges_fast'}
>>> menu_labels(28)[-3:]
('Z', 'AA', 'AB')
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from causal_gym.discovery import Method

__all__ = ["MenuEntry", "Menu", "menu_labels"]

_LETTERS = 26


def menu_labels(n: int) -> tuple[str, ...]:
    """The first ``n`` masked labels: ``A .. Z``, then ``AA, AB, ...`` (spreadsheet-column order),
    so a menu of any length has distinct labels that say nothing about the entries."""
    labels = []
    for k in range(1, n + 1):
        label = ""
        while k:
            k, rest = divmod(k - 1, _LETTERS)
            label = chr(ord("A") + rest) + label
        labels.append(label)
    return tuple(labels)


@dataclass(frozen=True)
class MenuEntry:
    """One menu algorithm: its record name, the :func:`causal_gym.discovery.run` method and options.

    ``method`` is any method reference :func:`causal_gym.discovery.resolve` takes: a built-in or
    registered name, an import path ``"package.module:function"``, or a function. It is resolved
    when the entry is built (:attr:`resolved`), so the worker of a time-limited run receives the
    method itself, by reference, and needs no registration of its own.

    Raises
    ------
    ValueError
        An empty name, an unknown method, a method that cannot run here (``cdfm`` without a
        checkpoint: :func:`causal_gym.discovery.check_method`), or options that are not a mapping
        with string keys.
    """

    name: str
    method: str | Callable[..., Any]
    options: Mapping[str, Any] = field(default_factory=dict)
    resolved: Method = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        from causal_gym.discovery import check_method, resolve

        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"a menu entry needs a non-empty string name, got {self.name!r}")
        if not isinstance(self.options, Mapping) or not all(isinstance(k, str) for k in self.options):
            raise ValueError(f"options of menu entry {self.name!r} must be a mapping with string keys, "
                             f"got {self.options!r}")
        try:
            check_method(self.method, self.options)
        except ValueError as err:
            raise ValueError(f"menu entry {self.name!r}: {err}") from None
        except (FileNotFoundError, ImportError) as err:  # a method whose checkpoint is not configured here
            raise ValueError(f"menu entry {self.name!r} cannot run {self.method!r} here: {err}") from err
        object.__setattr__(self, "resolved", resolve(self.method))
        # frozen all the way down: a module-level menu is shared by every env built from it
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))

    def cache_parts(self) -> dict[str, Any]:
        """What a cache key of this entry's runs holds about the method: its name, and for a method of
        your own the digest of its code (:attr:`causal_gym.discovery.Method.digest`), so an edited
        method's runs are computed afresh. A built-in method's part is its name alone, the key it
        always had."""
        method = self.resolved
        return {"method": method.name} if method.builtin else {"method": method.name, "code": method.digest}


@dataclass(frozen=True, eq=False)
class Menu(Mapping[str, MenuEntry]):
    """An ordered menu of distinct entries; as a mapping, entry name -> :class:`MenuEntry`.

    ``labels`` has one masked label per entry (:func:`menu_labels`); :meth:`slots` assigns the
    entries to them in a drawn order. Equality is the mapping's (same names, same entries).

    Raises
    ------
    ValueError
        No entries, an entry that is not a :class:`MenuEntry`, or two entries with one name.
    """

    entries: tuple[MenuEntry, ...]
    _by_name: dict[str, MenuEntry] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        entries = tuple(self.entries)
        if not entries or not all(isinstance(e, MenuEntry) for e in entries):
            raise ValueError(f"a menu needs at least one MenuEntry, got {self.entries!r}")
        names = [e.name for e in entries]
        if len(set(names)) != len(names):
            raise ValueError(f"menu entries need distinct names, got {names}")
        object.__setattr__(self, "entries", entries)
        object.__setattr__(self, "_by_name", {e.name: e for e in entries})

    @classmethod
    def of_methods(cls, methods: Sequence[str], options: Mapping[str, Mapping[str, Any]] | None = None) -> Menu:
        """A menu whose entries are named by their methods (names or import paths), each with
        ``options.get(method, {})`` (CausalArena's shape: its wrapper defaults per method)."""
        if isinstance(methods, str) or not isinstance(methods, Sequence):
            raise ValueError(f"a menu's methods must be a sequence of method names, got {methods!r}")
        options = {} if options is None else options
        return cls(tuple(MenuEntry(m, m, options.get(m, {})) for m in methods))

    @property
    def labels(self) -> tuple[str, ...]:
        """The masked labels, one per entry, in order: the choices of ``run_algorithm``."""
        return menu_labels(len(self.entries))

    def slots(self, permutation: Sequence[int] | np.ndarray) -> dict[str, str]:
        """Label -> entry name, label ``i`` taking entry ``permutation[i]`` (one episode's masking)."""
        order = [int(k) for k in permutation]
        if sorted(order) != list(range(len(self.entries))):
            raise ValueError(f"permutation must order the {len(self.entries)} menu entries, got {order}")
        return {label: self.entries[k].name for label, k in zip(self.labels, order)}

    def __getitem__(self, name: str) -> MenuEntry:
        return self._by_name[name]

    def __iter__(self) -> Iterator[str]:
        return (e.name for e in self.entries)

    def __len__(self) -> int:
        return len(self.entries)
