"""Optics and waves: formula scenario cards (format: :mod:`causal_gym.envs.arena.grounded`)."""

from __future__ import annotations

from causal_gym.envs.arena.grounded import ScenarioSpec, edges_into
from causal_gym.envs.arena.scenarios.formula.constants import PI

__all__ = ['THIN_LENS_CAMERA']


THIN_LENS_CAMERA: ScenarioSpec = {
    "name": "thin_lens_camera",
    "domain": "optics",
    "description": "A camera on an optical rail photographs a back-lit test chart; one row is one exposure with its "
    "sensor signal and measured spot size.",
    "constants": {
        "pi": PI,
        "T_lens": {"value": 0.9, "unit": "1", "definition": "lens transmittance"},
        "k_sensor": {"value": 400.0, "unit": "DN/(lux s)", "definition": "sensor responsivity at base ISO"},
        "pixel_um": {"value": 4.0, "unit": "um", "definition": "pixel pitch"},
    },
    "variables": [
        {"name": "f_mm", "unit": "mm", "definition": "focal length", "range": [20, 120], "role": "input",
         "intervention": "mount another prime lens", "distribution": {"family": "uniform", "low": 35, "high": 85}},
        {"name": "d_obj", "unit": "mm", "definition": "object distance", "range": [120, 1000], "role": "input",
         "intervention": "slide the chart along the rail",
         "distribution": {"family": "uniform", "low": 200, "high": 600}},
        {"name": "N_stop", "unit": "1", "definition": "f-number", "range": [1.4, 16], "role": "input",
         "intervention": "set the aperture ring", "distribution": {"family": "uniform", "low": 2, "high": 11}},
        {"name": "lambda_nm", "unit": "nm", "definition": "illumination wavelength", "range": [400, 700],
         "role": "input", "intervention": "swap the colour filter",
         "distribution": {"family": "uniform", "low": 450, "high": 650}},
        {"name": "h_obj", "unit": "mm", "definition": "chart feature height", "range": [20, 250], "role": "input",
         "intervention": "mount another chart", "distribution": {"family": "uniform", "low": 50, "high": 200}},
        {"name": "t_exp", "unit": "ms", "definition": "exposure time", "range": [0.5, 40], "role": "input",
         "intervention": "set the shutter speed", "distribution": {"family": "uniform", "low": 1, "high": 20}},
        {"name": "L_chart", "unit": "cd/m^2", "definition": "chart luminance", "range": [50, 1500], "role": "input",
         "intervention": "dim the back-light", "distribution": {"family": "uniform", "low": 100, "high": 1000}},
        {"name": "iso_gain", "unit": "1", "definition": "sensor analogue gain (ISO / base ISO)", "range": [1, 8],
         "role": "instrument", "intervention": "set the ISO dial",
         "distribution": {"family": "uniform", "low": 1, "high": 4}},
        {"name": "d_img", "unit": "mm", "definition": "image distance", "range": [20, 300], "role": "formula",
         "intervention": None, "equation": "f_mm * d_obj / (d_obj - f_mm)",
         "law": "thin-lens equation 1/f = 1/do + 1/di"},
        {"name": "mag", "unit": "1", "definition": "lateral magnification", "range": [0, 1], "role": "formula",
         "intervention": None, "equation": "d_img / d_obj", "law": "magnification m = di / do"},
        {"name": "h_img", "unit": "mm", "definition": "image height of the feature", "range": [0, 150],
         "role": "formula", "intervention": None, "equation": "mag * h_obj", "law": "image height = m x object height"},
        {"name": "D_pupil", "unit": "mm", "definition": "entrance pupil diameter", "range": [2, 50],
         "role": "formula", "intervention": None, "equation": "f_mm / N_stop", "law": "f-number N = f / D"},
        {"name": "airy_um", "unit": "um", "definition": "Airy disk diameter", "range": [1, 40], "role": "formula",
         "intervention": None, "equation": "2.44 * lambda_nm / 1000 * N_stop * (1 + mag)",
         "law": "Airy disk d = 2.44 lambda N_w with working f-number N (1 + m)"},
        {"name": "E_img", "unit": "lux", "definition": "image-plane illuminance", "range": [0, 300],
         "role": "formula", "intervention": None,
         "equation": "pi * L_chart * T_lens / (4 * N_stop ** 2 * (1 + mag) ** 2)", "law": "camera equation"},
        {"name": "H_exp", "unit": "lux s", "definition": "photometric exposure", "range": [0, 5], "role": "formula",
         "intervention": None, "equation": "E_img * t_exp / 1000", "law": "exposure H = E t"},
        {"name": "signal_DN", "unit": "DN", "definition": "mean sensor signal on the bright patch",
         "range": [0, 4095], "role": "readout", "intervention": None, "equation": "k_sensor * iso_gain * H_exp",
         "noise": {"family": "gaussian", "scale": 0.05, "mode": "multiplicative"}},
        {"name": "spot_um", "unit": "um", "definition": "measured point-spread width", "range": [0, 50],
         "role": "readout", "intervention": None, "equation": "sqrt(airy_um ** 2 + pixel_um ** 2)",
         "noise": {"family": "gaussian", "scale": 1.0}},
    ],
    "edges": [
        *edges_into("d_img", {"f_mm": "a longer lens focuses farther back",
                              "d_obj": "near objects focus farther back"}),
        *edges_into("mag", {"d_img": "image distance stretches the image", "d_obj": "distant objects look smaller"}),
        *edges_into("h_img", {"mag": "the image is the object scaled", "h_obj": "taller features, taller images"}),
        *edges_into("D_pupil", {"f_mm": "pupil grows with focal length", "N_stop": "stopping down shrinks it"}),
        *edges_into("airy_um", {
            "lambda_nm": "longer waves diffract more",
            "N_stop": "a smaller aperture diffracts more",
            "mag": "close focus raises the working f-number"}),
        *edges_into("E_img", {
            "L_chart": "a brighter chart lights the image",
            "N_stop": "a smaller aperture passes less light",
            "mag": "close focus spreads the light (bellows factor)"}),
        *edges_into("H_exp", {"E_img": "exposure integrates illuminance", "t_exp": "over the shutter time"}),
        *edges_into("signal_DN", {"H_exp": "the sensor converts exposure to counts",
                                  "iso_gain": "analogue gain amplifies the counts"}),
        *edges_into("spot_um", {"airy_um": "diffraction blurs the point"}),
    ],
}
