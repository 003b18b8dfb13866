"""Astronomy: formula scenario cards (format: :mod:`causal_gym.envs.arena.grounded`)."""

from __future__ import annotations

from causal_gym.envs.arena.grounded import ScenarioSpec, edges_into
from causal_gym.envs.arena.scenarios.formula.constants import PI, DEG

__all__ = ['SATELLITE_ORBIT']


SATELLITE_ORBIT: ScenarioSpec = {
    "name": "satellite_orbit",
    "domain": "astronomy",
    "description": "Mission designs for small satellites in circular orbits around rocky planets; one row is one "
    "design with its ground-station Doppler and timing measurements.",
    "constants": {
        "G": {"value": 6.674e-11, "unit": "m^3/(kg s^2)", "definition": "gravitational constant"},
        "M_E": {"value": 5.972e24, "unit": "kg", "definition": "Earth mass"},
        "f0": {"value": 437.0, "unit": "MHz", "definition": "downlink carrier frequency"},
        "c_light": {"value": 299792.458, "unit": "km/s", "definition": "speed of light"},
        "pi": PI,
        "deg": DEG,
    },
    "variables": [
        {"name": "M_planet", "unit": "Earth masses", "definition": "planet mass", "range": [0.3, 3],
         "role": "input", "intervention": "design for another planet",
         "distribution": {"family": "uniform", "low": 0.5, "high": 2.0}},
        {"name": "rho_planet", "unit": "kg/m^3", "definition": "planet mean density", "range": [3000, 7000],
         "role": "input", "intervention": None, "distribution": {"family": "uniform", "low": 3500, "high": 6000}},
        {"name": "h_orbit", "unit": "km", "definition": "orbit altitude", "range": [200, 3000], "role": "input",
         "intervention": "choose the orbit altitude", "distribution": {"family": "uniform", "low": 300, "high": 2500}},
        {"name": "m_sat", "unit": "kg", "definition": "satellite mass", "range": [50, 1500], "role": "input",
         "intervention": "change the payload", "distribution": {"family": "uniform", "low": 100, "high": 1000}},
        {"name": "pass_angle", "unit": "deg", "definition": "angle between the velocity and the line of sight "
         "at the measured pass point", "range": [0, 90], "role": "instrument",
         "intervention": "schedule the measurement at another point of the pass",
         "distribution": {"family": "uniform", "low": 20, "high": 70}},
        {"name": "R_planet", "unit": "km", "definition": "planet radius", "range": [4000, 12000],
         "role": "formula", "intervention": None,
         "equation": "(3 * M_planet * M_E / (4 * pi * rho_planet)) ** (1 / 3) / 1000",
         "law": "radius of a uniform sphere R = (3M / 4 pi rho)^(1/3)"},
        {"name": "a_orbit", "unit": "km", "definition": "orbit radius", "range": [4000, 14000], "role": "formula",
         "intervention": None, "equation": "R_planet + h_orbit", "law": "orbit radius = planet radius + altitude"},
        {"name": "v_orb", "unit": "km/s", "definition": "circular orbital speed", "range": [3, 13],
         "role": "formula", "intervention": None,
         "equation": "sqrt(G * M_planet * M_E / (a_orbit * 1000)) / 1000", "law": "circular orbit v = sqrt(GM / a)"},
        {"name": "T_orb", "unit": "min", "definition": "orbital period", "range": [60, 200], "role": "formula",
         "intervention": None, "equation": "2 * pi * sqrt((a_orbit * 1000) ** 3 / (G * M_planet * M_E)) / 60",
         "law": "Kepler's third law T = 2 pi sqrt(a^3 / GM)"},
        {"name": "g_surface", "unit": "m/s^2", "definition": "surface gravity", "range": [4, 20],
         "role": "formula", "intervention": None, "equation": "G * M_planet * M_E / (R_planet * 1000) ** 2",
         "law": "Newton's law of gravitation g = GM / R^2"},
        {"name": "v_esc", "unit": "km/s", "definition": "surface escape velocity", "range": [5, 20],
         "role": "formula", "intervention": None, "equation": "sqrt(2 * G * M_planet * M_E / (R_planet * 1000)) / 1000",
         "law": "escape velocity v = sqrt(2GM / R)"},
        {"name": "E_orb", "unit": "GJ", "definition": "specific orbital energy times satellite mass",
         "range": [-60, 0], "role": "formula", "intervention": None,
         "equation": "-G * M_planet * M_E * m_sat / (2 * a_orbit * 1000) / 1e9",
         "law": "circular orbit energy E = -GMm / 2a"},
        {"name": "doppler_kHz", "unit": "kHz", "definition": "measured Doppler shift of the downlink",
         "range": [0, 20], "role": "readout", "intervention": None,
         "equation": "f0 * 1000 * v_orb * cos(pass_angle * deg) / c_light",
         "noise": {"family": "gaussian", "scale": 0.1}},
        {"name": "eclipse_min", "unit": "min", "definition": "eclipse duration per orbit from the sun-sensor log "
         "(orbit in the ecliptic plane, cylindrical shadow)", "range": [10, 120], "role": "readout",
         "intervention": None,
         "equation": "T_orb / pi * atan((R_planet / a_orbit) / sqrt(1 - (R_planet / a_orbit) ** 2))",
         "noise": {"family": "gaussian", "scale": 0.5}},
    ],
    "edges": [
        *edges_into("R_planet", {"M_planet": "more mass, bigger planet", "rho_planet": "denser planets are smaller"}),
        *edges_into("a_orbit", {"R_planet": "altitude is counted from the surface", "h_orbit": "the chosen altitude"}),
        *edges_into("v_orb", {"M_planet": "stronger gravity needs more speed", "a_orbit": "higher orbits are slower"}),
        *edges_into("T_orb", {"a_orbit": "larger orbits take longer", "M_planet": "stronger gravity, shorter period"}),
        *edges_into("g_surface", {"M_planet": "gravity grows with mass", "R_planet": "and falls with radius squared"}),
        *edges_into("v_esc", {"M_planet": "a deeper well needs more speed", "R_planet": "a larger radius, shallower"}),
        *edges_into("E_orb", {
            "M_planet": "a deeper well binds tighter",
            "m_sat": "energy scales with the satellite mass",
            "a_orbit": "higher orbits are less bound"}),
        *edges_into("doppler_kHz", {"v_orb": "the shift is proportional to speed",
                                    "pass_angle": "only the line-of-sight component shifts the carrier"}),
        *edges_into("eclipse_min", {
            "T_orb": "the shadow arc is a fixed fraction of a longer orbit",
            "R_planet": "a larger planet casts a wider shadow",
            "a_orbit": "a higher orbit crosses a narrower part of the shadow"}),
    ],
}
