"""Private card packs: scenario cards read from a JSON file outside the package, for sealed evaluations.

A seal (:mod:`causal_gym.seal`) keys how an instance is sampled; it cannot hide *what* the
instance is when its structure is public. The formula and semantic cards ship with the package
(their graphs are in :mod:`.scenarios`), and the real source is the Sachs table and bnlearn
structures: an agent that computes per-column quantiles of the data it is shown and matches
them to data drawn from every public card finds the card, hence the graph, whatever the seal. So
a sealed CausalArena env refuses those sources (:func:`check_sealable`) and plays either the
synthetic pool or a *private card pack*: cards in the format of :mod:`.grounded`, written by the
evaluator, kept where agents cannot read them, and passed as ``cards=PATH``. The seal then keys
their protocol seeds and column orders like every other stream.

Pack file: a JSON list of cards, or ``{"cards": [...]}``. Every card must compile
(:func:`~.grounded.compile_scenario`), names must be distinct, and no card may be a public one
of either library, whatever it is called: a card that computes what a public card computes, up
to names, the order of variables and constants, or has its graph, is refused, naming the public
card (:mod:`.card_copies` says how cards are compared), since a copied public card would be as
identifiable as the original. The check runs when the pack is loaded, before anything is played.
The file must lie outside the installed ``causal_gym`` package (where anyone with the package
could read it).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from causal_gym.envs.arena.card_copies import copied_public_card
from causal_gym.envs.arena.grounded import CompiledScenario, ScenarioSpec, compile_scenario

__all__ = ["CardPack", "load_card_pack", "public_cards", "check_sealable"]

_PACKAGE = Path(__file__).resolve().parents[2]  # the installed causal_gym directory


def public_cards(source: str) -> Mapping[str, ScenarioSpec]:
    """The card library shipped for ``source`` (``"formula"`` or ``"semantic"``)."""
    if source == "formula":
        from causal_gym.envs.arena.scenarios.formula import FORMULA_SCENARIOS

        return FORMULA_SCENARIOS
    from causal_gym.envs.arena.scenarios.semantic import SEMANTIC_SCENARIOS

    return SEMANTIC_SCENARIOS


def check_sealable(source: str, sealed: bool, pack: CardPack | None) -> None:
    """Refuse a seal on a source whose structures are public (module docstring).

    Raises
    ------
    ValueError
        For a sealed ``formula``, ``semantic`` or ``real`` source without a private pack; the
        message names what works.
    """
    if not sealed or source == "synthetic" or pack is not None:
        return
    what = ("the Sachs table and the bnlearn structures are public data with public graphs" if source == "real"
            else f"the {source} cards ship with the package, graphs included")
    raise ValueError(
        f"a seal cannot hide the {source} source: {what}, and the data an agent sees identify the instance "
        "(per-column quantiles match it to its card). Sealed evaluations play source='synthetic', or a private "
        "card pack with source='formula' or 'semantic' and cards=PATH (a JSON file of your own cards outside the "
        "package; causal_gym.envs.arena.card_pack), which the seal then keys; pass seal=causal_gym.seal.OPEN "
        "(--open on the command line) to play the public cards open"
    )


@dataclass(frozen=True, eq=False)
class CardPack:
    """A loaded pack; hashed by identity (one object per loaded file), shown by path and digest only.

    Attributes
    ----------
    path : str
        Where it was read from.
    digest : str
        SHA-256 of the file's bytes (16 hex characters), for run stores and cache keys.
    cards : mapping
        Card name -> card, in file order.
    """

    path: str
    digest: str
    cards: Mapping[str, ScenarioSpec] = field(repr=False)  # a repr names the pack, never its cards
    _compiled: dict[str, CompiledScenario] = field(repr=False)

    def compiled(self, name: str) -> CompiledScenario:
        """The compiled card ``name`` (compiled once, when the pack was loaded)."""
        return self._compiled[name]


def load_card_pack(path: str | os.PathLike[str]) -> CardPack:
    """Read, check and compile the pack at ``path`` (format in the module docstring).

    Raises
    ------
    ValueError
        For an unreadable file, bad JSON, a file inside the package, a malformed card, a repeated
        name or a public card.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise ValueError(f"cards must be the path of a JSON card pack, got {type(path).__name__}")
    where = Path(path)
    if where.resolve().is_relative_to(_PACKAGE):
        raise ValueError(f"the card pack {str(path)!r} lies inside the causal_gym package, where it is public; "
                         "keep private cards elsewhere")
    try:
        raw = where.read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot read the card pack {str(path)!r}: {exc.strerror}") from None
    try:
        content: Any = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"the card pack {str(path)!r} is not JSON: {exc}") from None
    cards = content.get("cards") if isinstance(content, dict) else content
    if not isinstance(cards, list) or not cards:
        raise ValueError(f"the card pack {str(path)!r} must hold a non-empty list of cards (or {{\"cards\": [...]}})")
    compiled: dict[str, CompiledScenario] = {}
    by_name: dict[str, ScenarioSpec] = {}
    for i, card in enumerate(cards):
        scenario = compile_scenario(card)  # raises ValueError on a malformed card
        name = scenario.metadata["name"]
        if name in by_name:
            raise ValueError(f"the card pack {str(path)!r} has two cards named {name!r}")
        copied = copied_public_card(card)
        if copied is not None:
            raise ValueError(f"card {i} ({name!r}) of the pack {str(path)!r} is a public card of causal_gym: {copied}; "
                             "a seal cannot hide it, so a private pack holds only cards of its own")
        compiled[name], by_name[name] = scenario, card
    return CardPack(str(path), hashlib.sha256(raw).hexdigest()[:16], by_name, compiled)
