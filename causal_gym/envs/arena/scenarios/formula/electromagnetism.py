"""Electromagnetism: formula scenario cards (format: :mod:`causal_gym.envs.arena.grounded`)."""

from __future__ import annotations

from causal_gym.envs.arena.grounded import ScenarioSpec, edges_into
from causal_gym.envs.arena.scenarios.formula.constants import PI

__all__ = ['HEATER_CIRCUIT']


HEATER_CIRCUIT: ScenarioSpec = {
    "name": "heater_circuit",
    "domain": "electromagnetism",
    "description": "A nichrome heater coil powered from a bench supply through leads; one row is one coil build "
    "and operating point, with a clamp-meter current and a pyrometer temperature reading.",
    "constants": {
        "rho20": {"value": 1.10e-6, "unit": "ohm m", "definition": "nichrome resistivity at 20 degC"},
        "alpha_T": {"value": 4.0e-4, "unit": "1/K", "definition": "temperature coefficient of nichrome resistivity"},
        "pi": PI,
    },
    "variables": [
        {"name": "V_supply", "unit": "V", "definition": "bench supply voltage", "range": [5, 20], "role": "input",
         "intervention": "set the supply voltage", "distribution": {"family": "uniform", "low": 10, "high": 14}},
        {"name": "L_wire", "unit": "m", "definition": "heater wire length", "range": [0.5, 2], "role": "input",
         "intervention": "cut the coil to another length",
         "distribution": {"family": "uniform", "low": 0.8, "high": 1.5}},
        {"name": "d_wire", "unit": "mm", "definition": "heater wire diameter", "range": [0.2, 0.8], "role": "input",
         "intervention": "wind the coil from another wire gauge",
         "distribution": {"family": "uniform", "low": 0.3, "high": 0.5}},
        {"name": "T_amb", "unit": "degC", "definition": "ambient air temperature", "range": [10, 40],
         "role": "input", "intervention": "set the enclosure temperature",
         "distribution": {"family": "uniform", "low": 15, "high": 35}},
        {"name": "R_lead", "unit": "ohm", "definition": "resistance of leads and contacts", "range": [0.01, 0.5],
         "role": "input", "intervention": "swap the lead set",
         "distribution": {"family": "uniform", "low": 0.05, "high": 0.3}},
        {"name": "h_conv", "unit": "W/(m^2 K)", "definition": "convection coefficient around the coil",
         "range": [20, 120], "role": "input", "intervention": "set the cooling fan speed",
         "distribution": {"family": "uniform", "low": 30, "high": 90}},
        {"name": "R_heater", "unit": "ohm", "definition": "resistance of the heater wire", "range": [2, 30],
         "role": "formula", "intervention": None,
         "equation": "rho20 * (1 + alpha_T * (T_amb - 20)) * L_wire / (pi / 4 * (d_wire / 1000) ** 2)",
         "law": "Pouillet's law R = rho L / A with a linear temperature coefficient"},
        {"name": "I_loop", "unit": "A", "definition": "loop current", "range": [0, 5], "role": "formula",
         "intervention": None, "equation": "V_supply / (R_heater + R_lead)", "law": "Ohm's law for a series loop"},
        {"name": "P_heater", "unit": "W", "definition": "power dissipated in the coil", "range": [0, 60],
         "role": "formula", "intervention": None, "equation": "I_loop ** 2 * R_heater",
         "law": "Joule heating P = I^2 R"},
        {"name": "P_lead", "unit": "W", "definition": "power lost in leads and contacts", "range": [0, 5],
         "role": "formula", "intervention": None, "equation": "I_loop ** 2 * R_lead", "law": "Joule heating P = I^2 R"},
        {"name": "T_coil", "unit": "degC", "definition": "steady coil surface temperature", "range": [20, 1000],
         "role": "formula", "intervention": None,
         "equation": "T_amb + P_heater / (h_conv * pi * (d_wire / 1000) * L_wire)",
         "law": "Newton's law of cooling T = T_amb + P / (h A_surface)"},
        {"name": "I_reading", "unit": "A", "definition": "clamp-meter current reading", "range": [0, 6],
         "role": "readout", "intervention": None, "equation": "I_loop",
         "noise": {"family": "gaussian", "scale": 0.06, "mode": "multiplicative"}},
        {"name": "T_pyro_reading", "unit": "degC", "definition": "infrared pyrometer reading of the coil",
         "range": [0, 1200], "role": "readout", "intervention": None, "equation": "T_coil",
         "noise": {"family": "gaussian", "scale": 0.08, "mode": "multiplicative"}},
    ],
    "edges": [
        *edges_into("R_heater", {
            "T_amb": "resistivity rises with temperature",
            "L_wire": "a longer wire has more resistance",
            "d_wire": "a thicker wire has more cross-section"}),
        *edges_into("I_loop", {
            "V_supply": "voltage drives the current",
            "R_heater": "the coil limits the current",
            "R_lead": "lead resistance is in series"}),
        *edges_into("P_heater", {"I_loop": "dissipation grows with current squared", "R_heater": "at a given current"}),
        *edges_into("P_lead", {"I_loop": "the same current flows in the leads", "R_lead": "lead loss scales with R"}),
        *edges_into("T_coil", {
            "T_amb": "the coil sits above ambient",
            "P_heater": "more heat, hotter coil",
            "h_conv": "faster air carries heat away",
            "d_wire": "a thicker wire has more surface",
            "L_wire": "a longer wire has more surface"}),
        *edges_into("I_reading", {"I_loop": "the clamp senses the loop current"}),
        *edges_into("T_pyro_reading", {"T_coil": "the pyrometer sees the coil's radiance"}),
    ],
}
