"""Mechanics and fluids: formula scenario cards (format: :mod:`causal_gym.envs.arena.grounded`)."""

from __future__ import annotations

from causal_gym.envs.arena.grounded import ScenarioSpec, edges_into
from causal_gym.envs.arena.scenarios.formula.constants import PI, DEG, G0

__all__ = ['SPRING_PROJECTILE', 'POISEUILLE_PIPE']


SPRING_PROJECTILE: ScenarioSpec = {
    "name": "spring_projectile",
    "domain": "mechanics",
    "description": "A spring launcher fires a ball across a level floor; one row is one shot with photogate, "
    "stopwatch and video readings.",
    "constants": {
        "eta": {"value": 0.85, "unit": "1", "definition": "fraction of spring energy passed to the ball"},
        "g": G0,
        "deg": DEG,
    },
    "variables": [
        {"name": "k_spring", "unit": "N/m", "definition": "spring constant", "range": [150, 450], "role": "input",
         "intervention": "fit another spring", "distribution": {"family": "uniform", "low": 200, "high": 400}},
        {"name": "x_comp", "unit": "m", "definition": "spring compression", "range": [0.03, 0.15],
         "role": "input", "intervention": "latch at another notch",
         "distribution": {"family": "uniform", "low": 0.05, "high": 0.12}},
        {"name": "m_ball", "unit": "kg", "definition": "ball mass", "range": [0.03, 0.2], "role": "input",
         "intervention": "load another ball", "distribution": {"family": "uniform", "low": 0.05, "high": 0.15}},
        {"name": "theta_deg", "unit": "deg", "definition": "launch elevation angle", "range": [10, 80],
         "role": "input", "intervention": "set the launcher angle",
         "distribution": {"family": "uniform", "low": 20, "high": 70}},
        {"name": "gate_gap", "unit": "m", "definition": "spacing of the two photogates at the muzzle",
         "range": [0.01, 0.06], "role": "instrument", "intervention": "move the photogates",
         "distribution": {"family": "uniform", "low": 0.02, "high": 0.04}},
        {"name": "v0", "unit": "m/s", "definition": "launch speed", "range": [1, 12], "role": "formula",
         "intervention": None, "equation": "sqrt(eta * k_spring * x_comp ** 2 / m_ball)",
         "law": "energy conservation eta k x^2 / 2 = m v^2 / 2"},
        {"name": "vx", "unit": "m/s", "definition": "horizontal velocity", "range": [0, 12], "role": "formula",
         "intervention": None, "equation": "v0 * cos(theta_deg * deg)",
         "law": "velocity decomposition vx = v cos(theta)"},
        {"name": "t_flight", "unit": "s", "definition": "time of flight", "range": [0, 2.5], "role": "formula",
         "intervention": None, "equation": "2 * v0 * sin(theta_deg * deg) / g",
         "law": "time of flight T = 2 v sin(theta) / g"},
        {"name": "range_x", "unit": "m", "definition": "horizontal range", "range": [0, 12], "role": "formula",
         "intervention": None, "equation": "vx * t_flight", "law": "uniform horizontal motion x = vx T"},
        {"name": "p_launch", "unit": "kg m/s", "definition": "launch momentum", "range": [0, 1.5],
         "role": "formula", "intervention": None, "equation": "m_ball * v0", "law": "momentum p = m v"},
        {"name": "gate_ms", "unit": "ms", "definition": "photogate transit time", "range": [1, 40],
         "role": "readout", "intervention": None, "equation": "1000 * gate_gap / v0",
         "noise": {"family": "gaussian", "scale": 0.3}},
        {"name": "stopwatch_s", "unit": "s", "definition": "hand-timed flight time", "range": [-0.3, 2.8],
         "role": "readout", "intervention": None, "equation": "t_flight", "noise": {"family": "gaussian",
         "scale": 0.06}},
        {"name": "landing_video_m", "unit": "m", "definition": "landing distance read from video",
         "range": [0, 15], "role": "readout", "intervention": None, "equation": "range_x",
         "noise": {"family": "gaussian", "scale": 0.1, "mode": "multiplicative"}},
    ],
    "edges": [
        *edges_into("v0", {
            "k_spring": "a stiffer spring stores more energy",
            "x_comp": "energy grows with compression squared",
            "m_ball": "the same energy moves a heavier ball slower"}),
        *edges_into("vx", {"v0": "speed sets both components",
                           "theta_deg": "a steeper shot has less horizontal speed"}),
        *edges_into("t_flight", {"v0": "faster shots rise higher", "theta_deg": "a steeper shot stays up longer"}),
        *edges_into("range_x", {"vx": "horizontal speed times time", "t_flight": "longer flight, more distance"}),
        *edges_into("p_launch", {"m_ball": "momentum is mass times speed", "v0": "and the speed"}),
        *edges_into("gate_ms", {"gate_gap": "wider gates take longer to cross", "v0": "faster balls cross sooner"}),
        *edges_into("stopwatch_s", {"t_flight": "the timer brackets the flight"}),
        *edges_into("landing_video_m", {"range_x": "the video shows where the ball lands"}),
    ],
}


POISEUILLE_PIPE: ScenarioSpec = {
    "name": "poiseuille_pipe",
    "domain": "fluid mechanics",
    "description": "Laminar flow of a particle-laden oil through a glass capillary under an applied pressure drop; "
    "one row is one run with a flowmeter and a timed collection.",
    "constants": {
        "mu_ref": {"value": 0.05, "unit": "Pa s", "definition": "oil viscosity at 40 degC"},
        "B_visc": {"value": 3000.0, "unit": "K", "definition": "Andrade temperature coefficient"},
        "rho_oil": {"value": 870.0, "unit": "kg/m^3", "definition": "oil density"},
        "pi": PI,
    },
    "variables": [
        {"name": "dP_kPa", "unit": "kPa", "definition": "applied pressure drop", "range": [1, 80], "role": "input",
         "intervention": "set the pressure regulator", "distribution": {"family": "uniform", "low": 5, "high": 50}},
        {"name": "r_mm", "unit": "mm", "definition": "capillary inner radius", "range": [0.3, 2], "role": "input",
         "intervention": "fit another capillary", "distribution": {"family": "uniform", "low": 0.5, "high": 1.5}},
        {"name": "L_m", "unit": "m", "definition": "capillary length", "range": [0.3, 3], "role": "input",
         "intervention": "cut the capillary", "distribution": {"family": "uniform", "low": 0.5, "high": 2.0}},
        {"name": "T_oil", "unit": "degC", "definition": "oil temperature", "range": [10, 70], "role": "input",
         "intervention": "set the oil bath", "distribution": {"family": "uniform", "low": 20, "high": 60}},
        {"name": "phi", "unit": "1", "definition": "particle volume fraction", "range": [0, 0.15], "role": "input",
         "intervention": "mix in a set particle fraction",
         "distribution": {"family": "uniform", "low": 0.0, "high": 0.1}},
        {"name": "t_coll", "unit": "s", "definition": "collection time of the timed sample", "range": [10, 200],
         "role": "instrument", "intervention": "time the collection",
         "distribution": {"family": "uniform", "low": 30, "high": 120}},
        {"name": "mu", "unit": "Pa s", "definition": "suspension viscosity", "range": [0.005, 0.5], "role": "formula",
         "intervention": None,
         "equation": "mu_ref * exp(B_visc * (1 / (T_oil + 273.15) - 1 / 313.15)) * (1 + 2.5 * phi)",
         "law": "Andrade viscosity-temperature law with Einstein's suspension correction"},
        {"name": "Q_flow", "unit": "mL/s", "definition": "volumetric flow rate", "range": [0, 10], "role": "formula",
         "intervention": None, "equation": "pi * (r_mm / 1000) ** 4 * dP_kPa * 1000 / (8 * mu * L_m) * 1e6",
         "law": "Hagen-Poiseuille law Q = pi r^4 dP / (8 mu L)"},
        {"name": "v_mean", "unit": "m/s", "definition": "mean flow velocity", "range": [0, 3], "role": "formula",
         "intervention": None, "equation": "Q_flow * 1e-6 / (pi * (r_mm / 1000) ** 2)", "law": "v = Q / (pi r^2)"},
        {"name": "Reynolds", "unit": "1", "definition": "Reynolds number", "range": [0, 2000], "role": "formula",
         "intervention": None, "equation": "rho_oil * v_mean * 2 * r_mm / 1000 / mu", "law": "Re = rho v D / mu"},
        {"name": "tau_wall", "unit": "Pa", "definition": "wall shear stress", "range": [0, 100], "role": "formula",
         "intervention": None, "equation": "dP_kPa * 1000 * (r_mm / 1000) / (2 * L_m)",
         "law": "force balance tau_w = dP r / (2 L)"},
        {"name": "P_hyd", "unit": "mW", "definition": "hydraulic power", "range": [0, 500], "role": "formula",
         "intervention": None, "equation": "Q_flow * dP_kPa", "law": "hydraulic power P = Q dP"},
        {"name": "Q_meter", "unit": "mL/s", "definition": "thermal flowmeter reading (calibrated at 40 degC, "
         "drifting 1.5%/K with the fluid temperature, reading low in particle-laden oil, with a zero "
         "instability of about 0.1 mL/s)", "range": [-0.6, 12],
         "role": "readout", "intervention": None, "equation": "Q_flow * (1 + 0.015 * (T_oil - 40)) * (1 - 2 * phi)",
         "noise": {"family": "gaussian", "scale": 0.1}},
        {"name": "V_collected", "unit": "mL", "definition": "volume collected in the timed sample",
         "range": [0, 1500], "role": "readout", "intervention": None, "equation": "Q_flow * t_coll",
         "noise": {"family": "gaussian", "scale": 0.03, "mode": "multiplicative"}},
    ],
    "edges": [
        *edges_into("mu", {"T_oil": "warm oil flows more easily", "phi": "particles thicken the suspension"}),
        *edges_into("Q_flow", {
            "r_mm": "flow grows with the fourth power of the radius",
            "dP_kPa": "the pressure drop drives the flow",
            "mu": "viscous resistance",
            "L_m": "a longer tube resists more"}),
        *edges_into("v_mean", {"Q_flow": "more flow, faster fluid", "r_mm": "the same flow in a wider tube is slower"}),
        *edges_into("Reynolds", {"v_mean": "inertia grows with speed", "r_mm": "and with diameter",
                                 "mu": "viscosity damps inertia"}),
        *edges_into("tau_wall", {"dP_kPa": "pressure force on the fluid column", "r_mm": "column cross-section",
                                 "L_m": "spread over a longer wall"}),
        *edges_into("P_hyd", {"Q_flow": "power is flow", "dP_kPa": "times pressure drop"}),
        *edges_into("Q_meter", {"Q_flow": "the meter senses the flow",
                                "T_oil": "a thermal meter's response depends on the fluid temperature",
                                "phi": "particles change the suspension's heat capacity the meter assumes"}),
        *edges_into("V_collected", {"Q_flow": "volume is flow", "t_coll": "times collection time"}),
    ],
}
