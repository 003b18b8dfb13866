"""Earth systems: formula scenario cards (format: :mod:`causal_gym.envs.arena.grounded`)."""

from __future__ import annotations

from causal_gym.envs.arena.grounded import ScenarioSpec, edges_into
from causal_gym.envs.arena.scenarios.formula.constants import DEG

__all__ = ['BAROMETRIC_STATION']


BAROMETRIC_STATION: ScenarioSpec = {
    "name": "barometric_station",
    "domain": "earth systems",
    "description": "Weather stations reduce their observed pressure to sea level; one row is one observation with "
    "the station's humidity and dew-point sensors.",
    "constants": {
        "R_d": {"value": 287.05, "unit": "J/(kg K)", "definition": "gas constant of dry air"},
        "deg": DEG,
    },
    "variables": [
        {"name": "z_stn", "unit": "m", "definition": "station height above sea level", "range": [0, 3000],
         "role": "input", "intervention": "site the station at another height",
         "distribution": {"family": "uniform", "low": 100, "high": 2500}},
        {"name": "dp_synoptic", "unit": "hPa", "definition": "pressure anomaly of the passing weather system",
         "range": [-50, 50], "role": "input", "intervention": None,
         "distribution": {"family": "uniform", "low": -30, "high": 30}},
        {"name": "lat_deg", "unit": "deg", "definition": "station latitude", "range": [0, 90], "role": "input",
         "intervention": "site the station at another latitude",
         "distribution": {"family": "uniform", "low": 0, "high": 70}},
        {"name": "T_air", "unit": "degC", "definition": "screen air temperature", "range": [-20, 40],
         "role": "input", "intervention": None, "distribution": {"family": "uniform", "low": -10, "high": 30}},
        {"name": "RH", "unit": "%", "definition": "relative humidity", "range": [5, 100], "role": "input",
         "intervention": None, "distribution": {"family": "uniform", "low": 20, "high": 95}},
        {"name": "p_stn", "unit": "hPa", "definition": "station pressure", "range": [680, 1080], "role": "formula",
         "intervention": None, "equation": "1013.25 * (1 - 2.25577e-5 * z_stn) ** 5.25588 + dp_synoptic",
         "law": "standard-atmosphere barometric formula plus the synoptic anomaly"},
        {"name": "g_eff", "unit": "m/s^2", "definition": "local gravity", "range": [9.77, 9.84], "role": "formula",
         "intervention": None,
         "equation": "9.780327 * (1 + 0.0053024 * sin(lat_deg * deg) ** 2 - 0.0000058 * sin(2 * lat_deg * deg) ** 2)"
         " - 3.086e-6 * z_stn",
         "law": "international gravity formula with the free-air correction"},
        {"name": "mirror_bias", "unit": "K", "definition": "dew-point offset of the chilled mirror from "
         "contamination since its last cleaning", "range": [-5, 5], "role": "instrument",
         "intervention": "clean and re-balance the mirror", "distribution": {"family": "uniform", "low": -4, "high": 4}},
        {"name": "e_vap", "unit": "hPa", "definition": "vapour pressure", "range": [0, 60], "role": "formula",
         "intervention": None, "equation": "RH / 100 * 6.112 * exp(17.62 * T_air / (243.12 + T_air))",
         "law": "relative humidity times the saturation pressure of the Magnus formula"},
        {"name": "SLP", "unit": "hPa", "definition": "pressure reduced to sea level", "range": [900, 1120],
         "role": "formula", "intervention": None,
         "equation": "p_stn * exp(g_eff * z_stn / (R_d * (T_air + 273.15 + 0.0065 * z_stn / 2)"
         " / (1 - 0.378 * e_vap / p_stn)))",
         "law": "hypsometric equation with layer-mean virtual temperature"},
        {"name": "rho_air", "unit": "kg/m^3", "definition": "moist air density", "range": [0.75, 1.4],
         "role": "formula", "intervention": None,
         "equation": "p_stn * 100 / (R_d * (T_air + 273.15)) * (1 - 0.378 * e_vap / p_stn)",
         "law": "ideal gas law for moist air"},
        {"name": "RH_sensor", "unit": "%", "definition": "capacitive humidity sensor reading", "range": [-5, 110],
         "role": "readout", "intervention": None, "equation": "RH", "noise": {"family": "gaussian", "scale": 4.0}},
        {"name": "dewpoint_reading", "unit": "degC", "definition": "chilled-mirror dew-point reading",
         "range": [-40, 40], "role": "readout", "intervention": None,
         "equation": "243.12 * log(e_vap / 6.112) / (17.62 - log(e_vap / 6.112)) + mirror_bias",
         "noise": {"family": "gaussian", "scale": 0.5}},
    ],
    "edges": [
        *edges_into("p_stn", {"z_stn": "less air above a higher station",
                              "dp_synoptic": "highs and lows add or remove air above the station"}),
        *edges_into("g_eff", {"lat_deg": "the Earth's rotation and shape raise gravity toward the poles",
                              "z_stn": "gravity weakens with height"}),
        *edges_into("e_vap", {"RH": "the fraction of saturation",
                              "T_air": "warm air has a higher saturation vapour pressure"}),
        *edges_into("SLP", {
            "p_stn": "the reduction starts from the station pressure",
            "z_stn": "a higher station adds a thicker air column",
            "g_eff": "stronger gravity makes the column heavier",
            "T_air": "a warm column is less dense",
            "e_vap": "moist air is lighter (virtual temperature)"}),
        *edges_into("rho_air", {"p_stn": "more pressure, denser air", "T_air": "warm air expands",
                                "e_vap": "water vapour is lighter than dry air"}),
        *edges_into("RH_sensor", {"RH": "the sensor's capacitance follows humidity"}),
        *edges_into("dewpoint_reading", {"e_vap": "the mirror fogs at the vapour pressure's dew point",
                                         "mirror_bias": "deposits on the mirror shift the temperature it fogs at"}),
    ],
}
