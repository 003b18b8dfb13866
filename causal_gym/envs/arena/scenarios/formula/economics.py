"""Economics: formula scenario cards (format: :mod:`causal_gym.envs.arena.grounded`)."""

from __future__ import annotations

from causal_gym.envs.arena.grounded import ScenarioSpec, edges_into

__all__ = ['COBB_DOUGLAS_FIRM']


COBB_DOUGLAS_FIRM: ScenarioSpec = {
    "name": "cobb_douglas_firm",
    "domain": "economics",
    "description": "Manufacturing firms with Cobb-Douglas technology; one row is one firm-year with its factor "
    "inputs, factor costs, and revenue reported in a business survey.",
    "constants": {
        "alpha": {"value": 0.35, "unit": "1", "definition": "output elasticity of capital"},
        "scale": {"value": 0.1, "unit": "M$", "definition": "output units per unit of the production index"},
    },
    "variables": [
        {"name": "K_capital", "unit": "M$", "definition": "capital stock", "range": [1, 80], "role": "input",
         "intervention": "invest or divest", "distribution": {"family": "uniform", "low": 5, "high": 50}},
        {"name": "L_labor", "unit": "FTE", "definition": "employment", "range": [20, 600], "role": "input",
         "intervention": "hire or lay off", "distribution": {"family": "uniform", "low": 50, "high": 400}},
        {"name": "A_tfp", "unit": "1", "definition": "total factor productivity", "range": [0.5, 1.5],
         "role": "input", "intervention": "adopt a process technology",
         "distribution": {"family": "uniform", "low": 0.8, "high": 1.2}},
        {"name": "wage", "unit": "k$/FTE", "definition": "annual wage per worker", "range": [15, 60],
         "role": "input", "intervention": "negotiate the wage", "distribution": {"family": "uniform", "low": 25,
         "high": 45}},
        {"name": "r_rate", "unit": "1/yr", "definition": "rental rate of capital", "range": [0.02, 0.25],
         "role": "input", "intervention": None, "distribution": {"family": "uniform", "low": 0.05, "high": 0.15}},
        {"name": "Y_output", "unit": "M$", "definition": "value of output", "range": [0, 40], "role": "formula",
         "intervention": None, "equation": "scale * A_tfp * K_capital ** alpha * L_labor ** (1 - alpha)",
         "law": "Cobb-Douglas production function Y = A K^a L^(1-a)"},
        {"name": "MPL", "unit": "k$/FTE", "definition": "marginal product of labour", "range": [0, 100],
         "role": "formula", "intervention": None, "equation": "(1 - alpha) * Y_output / L_labor * 1000",
         "law": "marginal product of labour dY/dL = (1-a) Y / L"},
        {"name": "MPK", "unit": "1/yr", "definition": "marginal product of capital", "range": [0, 1],
         "role": "formula", "intervention": None, "equation": "alpha * Y_output / K_capital",
         "law": "marginal product of capital dY/dK = a Y / K"},
        {"name": "labor_cost", "unit": "M$", "definition": "wage bill", "range": [0, 30], "role": "formula",
         "intervention": None, "equation": "wage * L_labor / 1000", "law": "wage bill = w L"},
        {"name": "capital_cost", "unit": "M$", "definition": "capital rental cost", "range": [0, 10],
         "role": "formula", "intervention": None, "equation": "r_rate * K_capital", "law": "capital cost = r K"},
        {"name": "profit", "unit": "M$", "definition": "economic profit", "range": [-30, 20], "role": "formula",
         "intervention": None, "equation": "Y_output - labor_cost - capital_cost",
         "law": "profit = revenue - wage bill - capital cost"},
        {"name": "revenue_reported", "unit": "M$", "definition": "revenue reported in the survey", "range": [0, 50],
         "role": "readout", "intervention": None, "equation": "Y_output",
         "noise": {"family": "gaussian", "scale": 0.1, "mode": "multiplicative"}},
    ],
    "edges": [
        *edges_into("Y_output", {
            "A_tfp": "better technology, more output from the same inputs",
            "K_capital": "machines produce",
            "L_labor": "workers produce"}),
        *edges_into("MPL", {"Y_output": "output per worker at the margin", "L_labor": "diminishing returns to labour"}),
        *edges_into("MPK", {"Y_output": "output per unit of capital", "K_capital": "diminishing returns to capital"}),
        *edges_into("labor_cost", {"wage": "pay per worker", "L_labor": "times the workforce"}),
        *edges_into("capital_cost", {"r_rate": "cost per unit of capital", "K_capital": "times the stock"}),
        *edges_into("profit", {"Y_output": "revenue adds", "labor_cost": "wages subtract",
                               "capital_cost": "capital rent subtracts"}),
        *edges_into("revenue_reported", {"Y_output": "firms report their sales"}),
    ],
}
