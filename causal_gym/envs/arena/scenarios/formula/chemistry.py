"""Chemistry: formula scenario cards (format: :mod:`causal_gym.envs.arena.grounded`)."""

from __future__ import annotations

from causal_gym.envs.arena.grounded import ScenarioSpec, edges_into
from causal_gym.envs.arena.scenarios.formula.constants import R_GAS

__all__ = ['ARRHENIUS_CSTR']


ARRHENIUS_CSTR: ScenarioSpec = {
    "name": "arrhenius_cstr",
    "domain": "chemistry",
    "description": "A catalysed first-order reaction A -> B in a continuous stirred-tank reactor; one row is one "
    "steady-state run with an online analyser and the coolant temperature rise.",
    "constants": {
        "A_pre": {"value": 5.0e8, "unit": "L/(g min)", "definition": "pre-exponential factor per catalyst loading"},
        "Ea": {"value": 60000.0, "unit": "J/mol", "definition": "activation energy"},
        "R": R_GAS,
        "dH": {"value": 80.0, "unit": "kJ/mol", "definition": "heat released per mole converted"},
        "rho_cp": {"value": 4.0, "unit": "kJ/(L K)", "definition": "volumetric heat capacity of the feed"},
        "cp_w": {"value": 4.18, "unit": "kJ/(kg K)", "definition": "heat capacity of the coolant water"},
    },
    "variables": [
        {"name": "T_set", "unit": "K", "definition": "reactor temperature (controlled)", "range": [300, 380],
         "role": "input", "intervention": "change the temperature setpoint",
         "distribution": {"family": "uniform", "low": 320, "high": 350}},
        {"name": "V_reactor", "unit": "L", "definition": "liquid hold-up", "range": [20, 200], "role": "input",
         "intervention": "set the level controller", "distribution": {"family": "uniform", "low": 50, "high": 150}},
        {"name": "Q_feed", "unit": "L/min", "definition": "feed flow rate", "range": [1, 15], "role": "input",
         "intervention": "set the feed pump", "distribution": {"family": "uniform", "low": 2, "high": 10}},
        {"name": "C_A0", "unit": "mol/L", "definition": "feed concentration of A", "range": [0.2, 3],
         "role": "input", "intervention": "dilute the feed", "distribution": {"family": "uniform", "low": 0.5,
         "high": 2}},
        {"name": "w_cat", "unit": "g/L", "definition": "catalyst loading", "range": [0.5, 5], "role": "input",
         "intervention": "charge another catalyst amount", "distribution": {"family": "uniform", "low": 1, "high": 3}},
        {"name": "T_feed", "unit": "K", "definition": "feed temperature", "range": [290, 330], "role": "input",
         "intervention": "set the feed preheater", "distribution": {"family": "uniform", "low": 300, "high": 320}},
        {"name": "m_cool", "unit": "kg/s", "definition": "coolant mass flow", "range": [0.2, 3], "role": "input",
         "intervention": "set the coolant valve", "distribution": {"family": "uniform", "low": 0.5, "high": 2}},
        {"name": "k_rate", "unit": "1/min", "definition": "first-order rate constant", "range": [0.01, 3],
         "role": "formula", "intervention": None, "equation": "A_pre * w_cat * exp(-Ea / (R * T_set))",
         "law": "Arrhenius equation k = A exp(-Ea / RT)"},
        {"name": "tau", "unit": "min", "definition": "mean residence time", "range": [2, 100], "role": "formula",
         "intervention": None, "equation": "V_reactor / Q_feed", "law": "residence time tau = V / Q"},
        {"name": "X_A", "unit": "1", "definition": "conversion of A", "range": [0, 1], "role": "formula",
         "intervention": None, "equation": "k_rate * tau / (1 + k_rate * tau)",
         "law": "first-order CSTR design equation X = k tau / (1 + k tau)"},
        {"name": "C_A_out", "unit": "mol/L", "definition": "outlet concentration of A", "range": [0, 3],
         "role": "formula", "intervention": None, "equation": "C_A0 * (1 - X_A)", "law": "mole balance on A"},
        {"name": "F_B", "unit": "mol/min", "definition": "production rate of B", "range": [0, 30],
         "role": "formula", "intervention": None, "equation": "Q_feed * C_A0 * X_A", "law": "mole balance on B"},
        {"name": "Q_duty", "unit": "kW", "definition": "heat the coolant must remove", "range": [-40, 40],
         "role": "formula", "intervention": None,
         "equation": "(dH * F_B - rho_cp * Q_feed * (T_set - T_feed)) / 60",
         "law": "steady-state reactor energy balance"},
        {"name": "CA_analyser", "unit": "mol/L", "definition": "online analyser reading of the outlet",
         "range": [-0.3, 3.5], "role": "readout", "intervention": None, "equation": "C_A_out",
         "noise": {"family": "gaussian", "scale": 0.04}},
        {"name": "coolant_dT", "unit": "K", "definition": "coolant temperature rise", "range": [-30, 30],
         "role": "readout", "intervention": None, "equation": "Q_duty / (m_cool * cp_w)",
         "noise": {"family": "gaussian", "scale": 0.2}},
    ],
    "edges": [
        *edges_into("k_rate", {"T_set": "hotter, more molecules over the barrier",
                               "w_cat": "more catalyst sites, faster reaction"}),
        *edges_into("tau", {"V_reactor": "more hold-up, longer stay", "Q_feed": "faster feed, shorter stay"}),
        *edges_into("X_A", {"k_rate": "faster reaction, more conversion", "tau": "longer stay, more conversion"}),
        *edges_into("C_A_out", {"C_A0": "outlet scales with the feed", "X_A": "what is converted is gone"}),
        *edges_into("F_B", {"Q_feed": "more throughput", "C_A0": "richer feed", "X_A": "more converted"}),
        *edges_into("Q_duty", {
            "F_B": "each mole converted releases heat",
            "Q_feed": "the feed is heated to reactor temperature",
            "T_set": "a hotter reactor needs more feed heating",
            "T_feed": "a warmer feed needs less"}),
        *edges_into("CA_analyser", {"C_A_out": "the analyser samples the outlet"}),
        *edges_into("coolant_dT", {"Q_duty": "the coolant carries the duty", "m_cool": "more coolant, smaller rise"}),
    ],
}
