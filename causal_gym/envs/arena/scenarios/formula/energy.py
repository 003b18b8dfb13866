"""Energy systems: formula scenario cards (format: :mod:`causal_gym.envs.arena.grounded`)."""

from __future__ import annotations

from causal_gym.envs.arena.grounded import ScenarioSpec, edges_into

__all__ = ['SOLAR_PV']


SOLAR_PV: ScenarioSpec = {
    "name": "solar_pv",
    "domain": "energy systems",
    "description": "A rooftop photovoltaic array feeding a house and the grid; one row is one hour of operation "
    "with its monitoring-system readings.",
    "constants": {
        "a_sandia": {"value": -3.56, "unit": "1", "definition": "Sandia module temperature coefficient a"},
        "b_sandia": {"value": -0.075, "unit": "s/m", "definition": "Sandia wind coefficient b"},
        "dT_cell": {"value": 3.0, "unit": "K", "definition": "cell-to-module temperature difference at 1000 W/m^2"},
        "eta_ref": {"value": 0.2, "unit": "1", "definition": "module efficiency at 25 degC"},
        "gamma_T": {"value": -0.004, "unit": "1/K", "definition": "power temperature coefficient"},
        "eta_inv": {"value": 0.97, "unit": "1", "definition": "peak inverter efficiency"},
    },
    "variables": [
        {"name": "G_poa", "unit": "W/m^2", "definition": "plane-of-array irradiance", "range": [100, 1100],
         "role": "input", "intervention": None, "distribution": {"family": "uniform", "low": 200, "high": 1000}},
        {"name": "T_amb", "unit": "degC", "definition": "ambient temperature", "range": [-10, 45], "role": "input",
         "intervention": None, "distribution": {"family": "uniform", "low": 0, "high": 35}},
        {"name": "wind", "unit": "m/s", "definition": "wind speed at the array", "range": [0, 12], "role": "input",
         "intervention": None, "distribution": {"family": "uniform", "low": 0.5, "high": 8}},
        {"name": "A_array", "unit": "m^2", "definition": "array area", "range": [5, 50], "role": "input",
         "intervention": "add or remove modules", "distribution": {"family": "uniform", "low": 10, "high": 40}},
        {"name": "soiling", "unit": "1", "definition": "fraction of light lost to dirt", "range": [0, 0.2],
         "role": "input", "intervention": "wash the modules",
         "distribution": {"family": "uniform", "low": 0.0, "high": 0.1}},
        {"name": "P_inv_rated", "unit": "kW", "definition": "inverter rating", "range": [2, 10], "role": "input",
         "intervention": "install another inverter", "distribution": {"family": "uniform", "low": 3, "high": 6}},
        {"name": "house_load", "unit": "kW", "definition": "household consumption", "range": [0, 5],
         "role": "input", "intervention": "switch appliances on or off",
         "distribution": {"family": "uniform", "low": 0.3, "high": 3.0}},
        {"name": "T_cell", "unit": "degC", "definition": "cell temperature", "range": [0, 90], "role": "formula",
         "intervention": None,
         "equation": "T_amb + G_poa * exp(a_sandia + b_sandia * wind) + dT_cell * G_poa / 1000",
         "law": "Sandia module and cell temperature model"},
        {"name": "P_dc", "unit": "kW", "definition": "DC array power", "range": [0, 10], "role": "formula",
         "intervention": None,
         "equation": "eta_ref * A_array * G_poa * (1 - soiling) * (1 + gamma_T * (T_cell - 25)) / 1000",
         "law": "PVWatts DC power with a linear temperature coefficient"},
        {"name": "P_ac", "unit": "kW", "definition": "AC output of the inverter", "range": [0, 10],
         "role": "formula", "intervention": None, "equation": "P_inv_rated * tanh(eta_inv * P_dc / P_inv_rated)",
         "law": "inverter conversion with a smooth power limit at the rating"},
        {"name": "P_export", "unit": "kW", "definition": "power exported to the grid (negative: imported)",
         "range": [-5, 10], "role": "formula", "intervention": None, "equation": "P_ac - house_load",
         "law": "household power balance"},
        {"name": "T_back_reading", "unit": "degC", "definition": "back-of-module temperature sensor",
         "range": [-10, 95], "role": "readout", "intervention": None, "equation": "T_cell - dT_cell * G_poa / 1000",
         "noise": {"family": "gaussian", "scale": 2.0}},
        {"name": "PR_reading", "unit": "1", "definition": "performance ratio from the monitoring portal",
         "range": [0, 1.2], "role": "readout", "intervention": None,
         "equation": "P_ac * 1000 / (eta_ref * A_array * G_poa)",
         "noise": {"family": "gaussian", "scale": 0.02, "mode": "multiplicative"}},
    ],
    "edges": [
        *edges_into("T_cell", {
            "T_amb": "the module starts from ambient",
            "G_poa": "absorbed sunlight heats the cells",
            "wind": "wind cools the module"}),
        *edges_into("P_dc", {
            "G_poa": "more light, more current",
            "A_array": "more modules, more power",
            "soiling": "dirt blocks light",
            "T_cell": "hot cells lose voltage"}),
        *edges_into("P_ac", {"P_dc": "the inverter converts DC power",
                             "P_inv_rated": "the inverter limits output near its rating"}),
        *edges_into("P_export", {"P_ac": "generation flows out", "house_load": "the house uses part of it first"}),
        *edges_into("T_back_reading", {"T_cell": "the backsheet follows the cells",
                                       "G_poa": "cells run hotter than the backsheet under light"}),
        *edges_into("PR_reading", {
            "P_ac": "delivered energy",
            "A_array": "normalised by the array size",
            "G_poa": "and by the available sunlight"}),
    ],
}
