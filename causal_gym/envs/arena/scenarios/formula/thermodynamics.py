"""Thermodynamics: formula scenario cards (format: :mod:`causal_gym.envs.arena.grounded`)."""

from __future__ import annotations

from causal_gym.envs.arena.grounded import ScenarioSpec, edges_into
from causal_gym.envs.arena.scenarios.formula.constants import R_GAS

__all__ = ['GAS_CYLINDER', 'WALL_HEAT_LOSS']


GAS_CYLINDER: ScenarioSpec = {
    "name": "gas_cylinder",
    "domain": "thermodynamics",
    "description": "A steel cylinder with a locked piston holds nitrogen in a temperature bath; one row is one "
    "charge-and-measure cycle with its gauge, thermocouple and weighing readings.",
    "constants": {
        "R": R_GAS,
        "M_N2": {"value": 28.0134, "unit": "g/mol", "definition": "molar mass of nitrogen"},
        "cv_N2": {"value": 20.8, "unit": "J/(mol K)", "definition": "molar isochoric heat capacity of N2 (5R/2)"},
    },
    "variables": [
        {"name": "n_gas", "unit": "mol", "definition": "amount of nitrogen charged", "range": [0.5, 1.5],
         "role": "input", "intervention": "meter a set amount of gas into the cylinder",
         "distribution": {"family": "uniform", "low": 0.8, "high": 1.2}},
        {"name": "T_bath", "unit": "K", "definition": "bath temperature (the gas equilibrates to it)",
         "range": [273, 373], "role": "input", "intervention": "set the bath thermostat",
         "distribution": {"family": "uniform", "low": 285, "high": 345}},
        {"name": "V_cyl", "unit": "L", "definition": "gas volume fixed by the piston position", "range": [5, 15],
         "role": "input", "intervention": "lock the piston at a chosen position",
         "distribution": {"family": "uniform", "low": 8, "high": 12}},
        {"name": "P_amb", "unit": "kPa", "definition": "atmospheric pressure in the lab", "range": [90, 110],
         "role": "input", "intervention": None, "distribution": {"family": "uniform", "low": 96, "high": 104}},
        {"name": "r_bore", "unit": "mm", "definition": "inner radius of the cylinder", "range": [30, 70],
         "role": "input", "intervention": "use a cylinder of another bore",
         "distribution": {"family": "uniform", "low": 40, "high": 60}},
        {"name": "t_wall", "unit": "mm", "definition": "wall thickness of the cylinder", "range": [1.5, 5],
         "role": "input", "intervention": "use a cylinder with another wall gauge",
         "distribution": {"family": "uniform", "low": 2, "high": 4}},
        {"name": "gauge_gain", "unit": "1", "definition": "span factor of the Bourdon pressure gauge",
         "range": [0.8, 1.2], "role": "instrument", "intervention": "recalibrate the gauge span",
         "distribution": {"family": "uniform", "low": 0.9, "high": 1.1}},
        {"name": "tc_offset", "unit": "K", "definition": "zero offset of the thermocouple", "range": [-15, 15],
         "role": "instrument", "intervention": "re-reference the thermocouple cold junction",
         "distribution": {"family": "gaussian", "center": 0.0, "scale": 3.0}},
        {"name": "P_abs", "unit": "kPa", "definition": "absolute gas pressure", "range": [50, 600],
         "role": "formula", "intervention": None, "equation": "n_gas * R * T_bath / V_cyl",
         "law": "ideal gas law pV = nRT (J/L = kPa)"},
        {"name": "rho_gas", "unit": "g/L", "definition": "gas density", "range": [1, 6], "role": "formula",
         "intervention": None, "equation": "n_gas * M_N2 / V_cyl", "law": "density from amount and molar mass"},
        {"name": "U_int", "unit": "kJ", "definition": "internal energy of the gas", "range": [3, 10],
         "role": "formula", "intervention": None, "equation": "cv_N2 * n_gas * T_bath / 1000",
         "law": "internal energy of an ideal gas U = n cv T"},
        {"name": "sigma_hoop", "unit": "MPa", "definition": "hoop stress in the cylinder wall", "range": [0, 10],
         "role": "formula", "intervention": None, "equation": "(P_abs - P_amb) * r_bore / t_wall / 1000",
         "law": "thin-walled cylinder hoop stress (Barlow) sigma = dp r / t"},
        {"name": "P_gauge_reading", "unit": "kPa", "definition": "gauge (over-atmospheric) pressure read off the dial",
         "range": [0, 500], "role": "readout", "intervention": None,
         "equation": "gauge_gain * (P_abs - P_amb)", "noise": {"family": "gaussian", "scale": 2.0}},
        {"name": "T_tc_reading", "unit": "K", "definition": "thermocouple reading of the gas temperature",
         "range": [260, 390], "role": "readout", "intervention": None, "equation": "T_bath + tc_offset",
         "noise": {"family": "gaussian", "scale": 0.5}},
        {"name": "mass_reading", "unit": "g", "definition": "net gas mass from weighing the cylinder",
         "range": [15, 45], "role": "readout", "intervention": None, "equation": "n_gas * M_N2",
         "noise": {"family": "gaussian", "scale": 0.6}},
    ],
    "edges": [
        *edges_into("P_abs", {
            "n_gas": "more molecules in the same volume strike the wall more often",
            "T_bath": "hotter molecules carry more momentum to the wall",
            "V_cyl": "a larger volume spreads the same molecules thinner"}),
        *edges_into("rho_gas", {"n_gas": "more gas, more mass per litre", "V_cyl": "the same mass fills more litres"}),
        *edges_into("U_int", {"n_gas": "energy is extensive in the amount", "T_bath": "energy per mole grows with T"}),
        *edges_into("sigma_hoop", {
            "P_abs": "inner pressure pushes the wall outward",
            "P_amb": "outside pressure pushes back, only the difference loads the wall",
            "r_bore": "a wider bore gives the pressure more area per unit wall",
            "t_wall": "a thicker wall shares the load over more steel"}),
        *edges_into("P_gauge_reading", {
            "P_abs": "the gauge senses the inner pressure",
            "P_amb": "a Bourdon gauge reads relative to the atmosphere",
            "gauge_gain": "the span factor scales the dial reading"}),
        *edges_into("T_tc_reading", {
            "T_bath": "the thermocouple junction sits in the equilibrated gas",
            "tc_offset": "a cold-junction error shifts every reading"}),
        *edges_into("mass_reading", {"n_gas": "the scale weighs the charged gas"}),
    ],
}


WALL_HEAT_LOSS: ScenarioSpec = {
    "name": "wall_heat_loss",
    "domain": "heat transfer",
    "description": "A wall panel in a guarded hot box between a heated room side and a climate chamber; one row "
    "is one steady-state test of a panel build.",
    "constants": {
        "R_si": {"value": 0.13, "unit": "m^2 K/W", "definition": "interior surface film resistance (ISO 6946)"},
    },
    "variables": [
        {"name": "T_in", "unit": "degC", "definition": "room-side air temperature", "range": [15, 27],
         "role": "input", "intervention": "set the hot-box heater setpoint",
         "distribution": {"family": "uniform", "low": 18, "high": 24}},
        {"name": "T_out", "unit": "degC", "definition": "chamber-side air temperature", "range": [-15, 15],
         "role": "input", "intervention": "set the climate chamber temperature",
         "distribution": {"family": "uniform", "low": -10, "high": 10}},
        {"name": "k_ins", "unit": "W/(m K)", "definition": "thermal conductivity of the insulation",
         "range": [0.02, 0.06], "role": "input", "intervention": "choose another insulation material",
         "distribution": {"family": "uniform", "low": 0.03, "high": 0.05}},
        {"name": "L_ins", "unit": "m", "definition": "insulation thickness", "range": [0.02, 0.2], "role": "input",
         "intervention": "build the panel with another thickness",
         "distribution": {"family": "uniform", "low": 0.05, "high": 0.15}},
        {"name": "A_wall", "unit": "m^2", "definition": "panel area", "range": [1, 5], "role": "input",
         "intervention": "test a panel of another size", "distribution": {"family": "uniform", "low": 2, "high": 4}},
        {"name": "h_out", "unit": "W/(m^2 K)", "definition": "exterior convection coefficient set by the wind fan",
         "range": [5, 40], "role": "input", "intervention": "set the chamber fan speed",
         "distribution": {"family": "uniform", "low": 10, "high": 30}},
        {"name": "R_total", "unit": "K/W", "definition": "total thermal resistance of the panel", "range": [0.1, 3],
         "role": "formula", "intervention": None, "equation": "(R_si + L_ins / k_ins + 1 / h_out) / A_wall",
         "law": "thermal resistances in series R = (R_si + L/k + 1/h) / A"},
        {"name": "Q_loss", "unit": "W", "definition": "steady heat flow through the panel", "range": [0, 200],
         "role": "formula", "intervention": None, "equation": "(T_in - T_out) / R_total",
         "law": "steady conduction Q = dT / R (Fourier's law)"},
        {"name": "T_si", "unit": "degC", "definition": "interior surface temperature", "range": [10, 27],
         "role": "formula", "intervention": None, "equation": "T_in - Q_loss * R_si / A_wall",
         "law": "temperature drop across the interior film dT = q R_si"},
        {"name": "U_value", "unit": "W/(m^2 K)", "definition": "thermal transmittance of the panel",
         "range": [0.1, 1.5], "role": "formula", "intervention": None, "equation": "1 / (R_total * A_wall)",
         "law": "U-value U = 1 / (R A)"},
        {"name": "q_reading", "unit": "W/m^2", "definition": "heat-flux plate reading on the panel",
         "range": [0, 60], "role": "readout", "intervention": None, "equation": "Q_loss / A_wall",
         "noise": {"family": "gaussian", "scale": 0.06, "mode": "multiplicative"}},
        {"name": "T_si_reading", "unit": "degC", "definition": "surface thermocouple reading", "range": [8, 29],
         "role": "readout", "intervention": None, "equation": "T_si", "noise": {"family": "gaussian", "scale": 0.5}},
    ],
    "edges": [
        *edges_into("R_total", {
            "L_ins": "thicker insulation adds conduction resistance",
            "k_ins": "a more conductive material lowers the resistance",
            "h_out": "stronger wind thins the exterior film",
            "A_wall": "a larger panel offers more parallel paths"}),
        *edges_into("Q_loss", {
            "T_in": "a warmer room drives more heat outward",
            "T_out": "a colder chamber steepens the gradient",
            "R_total": "resistance limits the flow"}),
        *edges_into("T_si", {
            "T_in": "the surface sits just below room temperature",
            "Q_loss": "more flow, larger drop across the interior film",
            "A_wall": "the same flow over more area is a smaller flux"}),
        *edges_into("U_value", {"R_total": "transmittance is the inverse resistance", "A_wall": "per unit area"}),
        *edges_into("q_reading", {"Q_loss": "the plate senses the local flux", "A_wall": "flux is flow per area"}),
        *edges_into("T_si_reading", {"T_si": "the thermocouple is taped to the interior surface"}),
    ],
}
