"""Physical constants shared by several formula cards (records of a card's ``constants``)."""

from __future__ import annotations

__all__ = ["R_GAS", "PI", "DEG", "G0"]

R_GAS = {"value": 8.314462618, "unit": "J/(mol K)", "definition": "molar gas constant"}
PI = {"value": 3.141592653589793, "unit": "1", "definition": "ratio of a circle's circumference to its diameter"}
DEG = {"value": 0.017453292519943295, "unit": "rad/deg", "definition": "radians per degree"}
G0 = {"value": 9.80665, "unit": "m/s^2", "definition": "standard gravity"}
