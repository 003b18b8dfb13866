"""Private card packs (causal_gym.envs.arena.card_pack): a pack written here into tmp_path is played
end to end under a seal, in both arena modes; malformed, public or misplaced packs are refused.

References: the cards' own edge lists (written below, not read back from the env), mapped through
the final info's column order, and the data of the same pack played open.
"""

from __future__ import annotations

import copy
import json
import random
import re
from pathlib import Path

import numpy as np
import pytest

import causal_gym
from causal_gym.envs.arena.card_copies import copied_public_card, public_shapes
from causal_gym.envs.arena.card_pack import load_card_pack, public_cards
from causal_gym.envs.arena.env import CausalArenaEnv
from causal_gym.envs.arena.scenarios.formula import FORMULA_SCENARIOS
from causal_gym.envs.arena.tool_env import CausalArenaToolEnv
from causal_gym.harness import ToolError
from causal_gym.seal import OPEN, Seal

SECRET = "card-pack-test-secret-" + "c" * 24


def _uniform(name: str, unit: str, definition: str, low: float, high: float) -> dict:
    return {"name": name, "unit": unit, "definition": definition, "range": [low, high], "role": "input",
            "intervention": f"set {name}", "distribution": {"family": "uniform", "low": low, "high": high}}


CIRCUIT = {
    "name": "private_circuit", "domain": "circuits", "description": "one resistor on a bench supply per row",
    "variables": [
        _uniform("V", "V", "supply voltage", 2, 9),
        _uniform("R", "ohm", "resistance", 10, 90),
        {"name": "I", "unit": "A", "definition": "current", "range": [0, 1], "role": "formula",
         "intervention": None, "equation": "V / R", "law": "Ohm's law"},
        {"name": "P_read", "unit": "W", "definition": "power meter reading", "range": [0, 10], "role": "readout",
         "intervention": None, "equation": "V * I", "noise": {"family": "gaussian", "scale": 0.02}},
    ],
    "edges": [{"source": "V", "target": "I", "rationale": "voltage drives current"},
              {"source": "R", "target": "I", "rationale": "resistance limits it"},
              {"source": "V", "target": "P_read", "rationale": "power is voltage"},
              {"source": "I", "target": "P_read", "rationale": "times current"}],
}
TANK = {
    "name": "private_tank", "domain": "process", "description": "a draining tank, one steady state per row",
    "variables": [
        _uniform("q_in", "l/s", "inflow", 1, 5),
        _uniform("k_valve", "l/s/m^0.5", "valve coefficient", 0.5, 2),
        _uniform("area", "m^2", "tank cross-section", 1, 3),
        {"name": "h", "unit": "m", "definition": "steady level", "range": [0, 100], "role": "formula",
         "intervention": None, "equation": "(q_in / k_valve) ** 2", "law": "Torricelli outflow balance"},
        {"name": "volume", "unit": "m^3", "definition": "stored volume", "range": [0, 300], "role": "formula",
         "intervention": None, "equation": "h * area", "law": "prism volume"},
    ],
    "edges": [{"source": "q_in", "target": "h", "rationale": "more inflow raises the level"},
              {"source": "k_valve", "target": "h", "rationale": "a wider valve lowers it"},
              {"source": "h", "target": "volume", "rationale": "level times area"},
              {"source": "area", "target": "volume", "rationale": "area times level"}],
}


def _truth(card: dict) -> np.ndarray:
    names = [v["name"] for v in card["variables"]]
    a = np.zeros((len(names), len(names)), dtype=np.int8)
    for edge in card["edges"]:
        a[names.index(edge["source"]), names.index(edge["target"])] = 1
    return a


@pytest.fixture()
def pack(tmp_path: Path) -> Path:
    path = tmp_path / "private.json"
    path.write_text(json.dumps({"cards": [CIRCUIT, TANK]}))
    return path


def _in_view(card: dict, final: dict, width: int) -> np.ndarray:
    """The card's graph in the slots the agent saw (the final info's column order)."""
    columns = final["columns"]
    out = np.zeros((width, width), dtype=np.int8)
    out[: len(columns), : len(columns)] = _truth(card)[np.ix_(columns, columns)]
    return out


@pytest.mark.parametrize("source", ["formula", "semantic"])
def test_a_private_pack_plays_sealed_in_submit_mode_and_the_seal_keys_it(pack: Path, source: str) -> None:
    env = CausalArenaEnv(source=source, cards=pack, seal=SECRET, n_obs=120)
    assert env.d == 5 and len(env.arena.instances) == 2  # the pack's largest card, the pack's cards
    for index, card in enumerate((CIRCUIT, TANK)):
        obs, info = env.reset(seed=0, options={"instance": index})
        assert set(info["instance"]) >= {"id"} and "unit" not in info["instance"] and "index" not in info["instance"]
        k = len(card["variables"])
        assert obs["variables"].tolist() == [1] * k + [0] * (5 - k)
        sealed = obs["data"].copy()
        _, reward, terminated, _, final = env.step(np.zeros((5, 5), dtype=np.int8))
        truth = _in_view(card, final, 5)
        assert np.array_equal(final["true_adjacency"], truth) and final["seal"] == Seal(SECRET).fingerprint
        assert final["unit"] == f"{source}/{card['name']}"
        assert final["factors"]["card_pack"] == load_card_pack(pack).digest
        env.reset(seed=0, options={"instance": index})
        _, reward, *_, final = env.step(truth)
        assert reward == 1.0 and final["status"] == "ok"
        # the seal keys the pack: open play and another secret show other data, the same secret the same
        assert not np.array_equal(CausalArenaEnv(source=source, cards=pack, seal=OPEN, n_obs=120).reset(
            seed=0, options={"instance": index})[0]["data"], sealed)
        again = CausalArenaEnv(source=source, cards=str(pack), seal=Seal(SECRET), n_obs=120)
        assert np.array_equal(again.reset(seed=0, options={"instance": index})[0]["data"], sealed)
        other = CausalArenaEnv(source=source, cards=pack, seal=SECRET[::-1], n_obs=120)
        assert not np.array_equal(other.reset(seed=0, options={"instance": index})[0]["data"], sealed)


def test_a_private_pack_plays_sealed_in_tools_mode_with_its_descriptions(pack: Path) -> None:
    env = CausalArenaToolEnv(source="semantic", cards=pack, seal=SECRET, n_obs=120, describe_variables=True,
                             menu=("pc", "ges", "gies", "fci", "random_regress", "direct_lingam", "dagma"))
    obs, info = env.reset(seed=0, options={"instance": 1})
    described = {entry["name"] for entry in info["variables"]}
    assert {v["name"] for v in TANK["variables"]} <= described  # the evaluator's own card texts
    # the agent's code cannot read the pack (the sandbox holds no host file)
    program = f"print(open({str(pack)!r}).read()[:200])"
    action = env.parse_tool_call("run_code", {"code": program})
    assert not isinstance(action, ToolError)
    obs, *_ = env.step(action)
    assert "Traceback" in obs["last_result"] and "Torricelli" not in obs["last_result"]
    action = env.parse_tool_call("submit", {"edges": "none"})
    assert not isinstance(action, ToolError)
    *_, terminated, truncated, final = env.step(action)
    assert terminated and np.array_equal(final["true_adjacency"], _in_view(TANK, final, 5))


def test_bad_packs_are_refused_with_a_clear_error(tmp_path: Path) -> None:
    def write(content) -> Path:
        path = tmp_path / f"pack{len(list(tmp_path.iterdir()))}.json"
        path.write_text(content if isinstance(content, str) else json.dumps(content))
        return path

    public = copy.deepcopy(next(iter(FORMULA_SCENARIOS.values())))
    renamed = dict(copy.deepcopy(public), name="my_own_cylinder")  # same variables: still the public card
    disguised = _disguised(public, "attacker", random.Random(0))
    broken = dict(copy.deepcopy(CIRCUIT), edges=CIRCUIT["edges"][1:])  # V no longer a parent of I
    cases = [
        (tmp_path / "missing.json", "cannot read the card pack"),
        (write("{not json"), "is not JSON"),
        (write([]), "non-empty list of cards"),
        (write({"cards": [CIRCUIT, CIRCUIT]}), "two cards named 'private_circuit'"),
        (write([public]), "is a public card of causal_gym"),
        (write([renamed]), "is a public card of causal_gym"),
        (write([CIRCUIT, disguised]), r"card 1 \('mine'\) .* is a public card of causal_gym: .* 'gas_cylinder'"),
        (write([broken]), "private_circuit"),
        (Path(causal_gym.__file__), "inside the causal_gym package"),
    ]
    for path, message in cases:
        with pytest.raises(ValueError, match=message):
            CausalArenaEnv(source="formula", cards=path, seal=SECRET)
    good = write([CIRCUIT])
    for source in ("synthetic", "real"):
        with pytest.raises(ValueError, match="formula or semantic cards"):
            CausalArenaEnv(source=source, cards=good)
    with pytest.raises(ValueError, match="path of a JSON card pack"):
        CausalArenaEnv(source="formula", cards=3)  # type: ignore[arg-type]


# -- public cards in disguise (issue 44, item 1) ----------------------------------------------------------------------

PUBLIC = [(source, name) for source in ("formula", "semantic") for name in public_cards(source)]
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _renamed(card: dict, rng: random.Random) -> dict:
    """Every variable and constant renamed (names that say nothing), and the card too."""
    card = copy.deepcopy(card)
    old = [v["name"] for v in card["variables"]] + list(card.get("constants", {}))
    new = dict(zip(old, (f"q{rng.randrange(10 ** 6)}_{i}" for i in range(len(old)))))
    swap = lambda text: re.sub(r"[A-Za-z_]\w*", lambda m: new.get(m.group(), m.group()), text)  # noqa: E731
    for variable in card["variables"]:
        variable["name"] = new[variable["name"]]
        if "equation" in variable:
            variable["equation"] = swap(variable["equation"])
    card["edges"] = [{**edge, "source": new[edge["source"]], "target": new[edge["target"]]} for edge in card["edges"]]
    card["constants"] = {new[k]: v for k, v in card.get("constants", {}).items()}
    card["name"] = "mine"
    return card


def _one_coefficient(card: dict, rng: random.Random) -> dict:
    """One number changed by 10%: in an equation when there is one, else a named constant."""
    card = copy.deepcopy(card)
    with_numbers = [v for v in card["variables"] if "equation" in v and NUMBER.search(v["equation"])]
    if with_numbers:
        variable = rng.choice(with_numbers)
        variable["equation"] = NUMBER.sub(lambda m: repr(1.1 * float(m.group())), variable["equation"], count=1)
    else:
        constant = rng.choice(sorted(card["constants"]))
        card["constants"][constant] = {**card["constants"][constant], "value": 1.1 * card["constants"][constant]["value"]}
    return card


def _root(name: str) -> dict:
    return {"name": name, "unit": "1", "definition": "a quantity of my own", "range": [0, 1], "role": "input",
            "intervention": f"set {name}", "distribution": {"family": "uniform", "low": 0.2, "high": 0.8}}


def _disguised(card: dict, how: str, rng: random.Random) -> dict:
    """``card`` as someone passing it off as their own would write it."""
    card = _renamed(card, rng)
    if how != "renamed":
        rng.shuffle(card["variables"])
        rng.shuffle(card["edges"])
    if how in ("one coefficient", "attacker"):
        card = _one_coefficient(card, rng)
    if how == "attacker":  # ... and a variable that nothing uses
        card["variables"].insert(rng.randrange(len(card["variables"])), _root("unused"))
    if how == "algebra":  # a / b as a * b ** -1, a - b as a + -1 * b
        for variable in card["variables"]:
            if "equation" in variable:
                variable["equation"] = variable["equation"].replace(" / ", " * 1 / ").replace(" - ", " + -1 * ")
    children = {edge["source"] for edge in card["edges"]}
    readouts = [v["name"] for v in card["variables"] if "equation" in v and v["name"] not in children]
    if how == "fewer readouts":
        gone = set(rng.sample(readouts, len(readouts) * 2 // 5))
        card["variables"] = [v for v in card["variables"] if v["name"] not in gone]
        card["edges"] = [edge for edge in card["edges"] if edge["target"] not in gone]
        used = {name for v in card["variables"] if "equation" in v for name in re.findall(r"\w+", v["equation"])}
        card["constants"] = {k: v for k, v in card["constants"].items() if k in used}
    if how == "more readouts":
        for k, source in enumerate(rng.sample([v["name"] for v in card["variables"] if v["role"] != "readout"], 5)):
            card["variables"].append({"name": f"extra_{k}", "unit": "1", "definition": "another gauge",
                                      "range": [-1e12, 1e12], "role": "readout", "intervention": None,
                                      "equation": f"2 * {source}", "noise": {"family": "gaussian", "scale": 0.1}})
            card["edges"].append({"source": source, "target": f"extra_{k}", "rationale": "it reads it"})
    if how == "negligible inputs":  # every equation reads a new root, to no effect, so each looks new
        card["variables"].append(_root("dummy"))
        for variable in card["variables"]:
            if "equation" in variable:
                variable["equation"] = f"({variable['equation']}) + 1e-9 * dummy"
                card["edges"].append({"source": "dummy", "target": variable["name"], "rationale": "none to speak of"})
    return card


DISGUISES = ["renamed", "reordered", "one coefficient", "attacker", "algebra", "fewer readouts", "more readouts",
             "negligible inputs"]


@pytest.mark.parametrize("how", DISGUISES)
def test_every_public_card_is_refused_in_disguise(tmp_path: Path, how: str) -> None:
    """Each public card of both libraries, disguised, is refused when its pack is loaded, naming the card (a
    malformed disguise would be refused too, but not naming it)."""
    rng = random.Random(44)
    for source, name in PUBLIC:
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"cards": [CIRCUIT, _disguised(public_cards(source)[name], how, rng)]}))
        with pytest.raises(ValueError, match=rf"card 1 \('mine'\).* is a public card of causal_gym: .*the public "
                                             rf"{source} card {name!r}"):
            load_card_pack(path)


def test_distinct_cards_are_not_taken_for_copies() -> None:
    """No public card is a copy of another (each is compared with the library without itself), and neither are
    the cards written above: the test does not refuse what is merely of the same kind."""
    library = public_shapes()
    for source, name in PUBLIC:
        others = [(s, shape) for s, shape in library if shape.name != name]
        assert copied_public_card(public_cards(source)[name], others) is None, name
        assert copied_public_card(public_cards(source)[name]) is not None, name  # but itself is found
    for card in (CIRCUIT, TANK):
        assert copied_public_card(card) is None


@pytest.mark.parametrize("env_class", [CausalArenaEnv, CausalArenaToolEnv])
def test_a_disguised_public_card_is_refused_before_anything_is_played_under_a_seal(tmp_path: Path, env_class) -> None:
    card = _disguised(FORMULA_SCENARIOS["heater_circuit"], "attacker", random.Random(1))
    path = tmp_path / "private.json"
    path.write_text(json.dumps([card, TANK]))
    with pytest.raises(ValueError, match="public formula card 'heater_circuit'"):
        env_class(source="formula", cards=path, seal=SECRET)
