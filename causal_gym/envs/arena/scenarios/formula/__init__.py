"""Formula-grounded scenario cards: named scientific equations with instruments and readouts.

Each card (format: :mod:`causal_gym.envs.arena.grounded`) anchors its mechanisms in textbook
equations -- the formula nodes are exact given their parents -- and puts randomness only on the
inputs (experimental settings, sample-to-sample variation), on instrument properties (zero
offsets, gains) and on readouts. Design rules kept by every card here:

- no formula node is an affine function of a single parent, so no variable is a relabelling of
  another (the near-copy audit of Appendix A.2 would flag it, and it carries no causal content);
- readouts either combine a physical quantity with an instrument property or carry a noise level
  typical of the instrument, so no pair of columns correlates at 0.99 or more on the reference draw;
- input ranges are chosen so that every formula stays inside its physical validity domain
  (laminar flow, positive biomass, no saturation) on the whole input box.

Units are written in each record; equations are in those units (conversion factors appear as
numbers in the equation text).
"""

from __future__ import annotations

from causal_gym.envs.arena.grounded import ScenarioSpec
from causal_gym.envs.arena.scenarios.formula import (
    astronomy,
    biology,
    chemistry,
    earth,
    economics,
    electromagnetism,
    energy,
    materials,
    mechanics,
    optics,
    thermodynamics,
)

__all__ = ["FORMULA_SCENARIOS"]

_FIRST_RELEASE = (
    thermodynamics.GAS_CYLINDER,
    thermodynamics.WALL_HEAT_LOSS,
    electromagnetism.HEATER_CIRCUIT,
    biology.IV_BOLUS_PK,
    mechanics.SPRING_PROJECTILE,
    astronomy.SATELLITE_ORBIT,
    biology.ENZYME_ASSAY,
    chemistry.ARRHENIUS_CSTR,
    biology.FISHERY_SCHAEFER,
    optics.THIN_LENS_CAMERA,
    mechanics.POISEUILLE_PIPE,
    economics.COBB_DOUGLAS_FIRM,
    energy.SOLAR_PV,
    earth.BAROMETRIC_STATION,
)

_LIBRARY = (
    materials.CANTILEVER_BEAM,
    materials.CONCRETE_CURING,
    materials.ROTATING_SHAFT_FATIGUE,
    optics.FIBRE_LINK,
    optics.GRATING_SPECTROMETER,
    electromagnetism.DC_MOTOR_DRIVE,
    electromagnetism.DISTRIBUTION_TRANSFORMER,
    thermodynamics.COUNTERFLOW_EXCHANGER,
    chemistry.DANIELL_CELL,
    chemistry.GAS_FIRED_FURNACE,
    earth.GRAVEL_BED_RIVER,
    energy.WIND_TURBINE,
    astronomy.TRANSITING_EXOPLANET,
    biology.CHEMOSTAT_CULTURE,
    mechanics.EMERGENCY_BRAKING,
    mechanics.PUMPED_PIPELINE,
)
"""The second release: 16 cards of 19-25 variables (materials and structures first, a domain the first
release lacked)."""

FORMULA_SCENARIOS: dict[str, ScenarioSpec] = {spec["name"]: spec for spec in _FIRST_RELEASE + _LIBRARY}
"""The formula-grounded cards by name, the first release's 14 first (their instance indices are kept), then
the second release."""
