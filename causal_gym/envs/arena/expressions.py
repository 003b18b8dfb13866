"""A safe, vectorised expression mechanism: a node's value written as a formula over its parents.

Grounded CausalArena scenarios state each mechanism as text, ``"n * R * T / V"``, so that a
reader sees the scientific equation and the SCM executes exactly that equation. The text is
parsed with :mod:`ast` into a small whitelist and compiled to numpy closures; it is never passed
to ``eval``. Allowed:

- numbers (int or float literals; booleans, strings and complex numbers are not numbers here);
- names: the node's parents and its named constants, nothing else;
- ``+ - * / **``, unary ``-`` and ``+``; parentheses;
- calls to the functions below, positionally, with exactly their number of arguments.

=============================  ===============================================================
function                       meaning (numpy, elementwise)
=============================  ===============================================================
``exp(x)``, ``log(x)``         ``np.exp``, natural ``np.log``
``log10(x)``, ``sqrt(x)``      ``np.log10``, ``np.sqrt``
``sin(x)``, ``cos(x)``         radians
``tan(x)``, ``atan(x)``        ``np.tan``, ``np.arctan``
``tanh(x)``, ``abs(x)``        ``np.tanh``, ``np.abs``
``sigmoid(x)``                 logistic ``1 / (1 + exp(-x))`` (written through ``tanh``, so it
                               never overflows)
``pow(x, y)``                  ``x ** y``
``min(x, y)``, ``max(x, y)``   ``np.minimum``, ``np.maximum`` of two values
``clip(x, lo, hi)``            ``np.clip``
=============================  ===============================================================

Anything else -- attribute access, subscripts, comparisons, conditionals, lambdas, keyword
arguments, other functions, statements such as ``import`` -- is a ``ValueError`` naming the
construct. Values outside a function's domain (``log`` of a negative number) give NaN or
infinity without a warning; :func:`causal_gym.envs.arena.grounded.compile_scenario` checks that a
scenario's reference draw is finite and inside its declared ranges.

The mechanism (registered as ``"expression"``) has parameters::

    {"expression": "n * R * T / V", "parents": ["n", "T", "V"],
     "constants": {"R": 8.314462618}, "noise_mode": "exact"}

``parents`` names the node's parent columns in the order the SCM passes them (increasing node
index); the formula's free names must be exactly ``parents`` plus ``constants``. ``noise_mode``:

- ``"exact"``: ``X = f(pa)``; the node must receive zero noise (formula nodes; a nonzero draw is
  an error, so a mis-built SCM cannot silently jitter an equation);
- ``"additive"``: ``X = f(pa) + eps``;
- ``"multiplicative"``: ``X = f(pa) * exp(eps)`` (a gain error that keeps the sign of ``f``;
  log-normal scatter around ``f`` for Gaussian ``eps``).

A root is an expression with no parents: ``"300.0"`` with additive noise is a distribution
centred at 300. A ``ParameterShift`` multiplies ``f`` by its factor (stored as ``gain``).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from causal_gym._validation import check_real
from causal_gym.scm import register_mechanism

__all__ = ["FUNCTIONS", "NOISE_MODES", "Expression", "parse_expression", "expression_params"]

Evaluator = Callable[[Mapping[str, Any]], Any]


def _sigmoid(x: Any) -> Any:
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(x, dtype=float)))


FUNCTIONS: Mapping[str, tuple[int, Callable[..., Any]]] = {
    "exp": (1, np.exp),
    "log": (1, np.log),
    "log10": (1, np.log10),
    "sqrt": (1, np.sqrt),
    "sin": (1, np.sin),
    "cos": (1, np.cos),
    "tan": (1, np.tan),
    "atan": (1, np.arctan),
    "tanh": (1, np.tanh),
    "abs": (1, np.abs),
    "sigmoid": (1, _sigmoid),
    "pow": (2, np.power),
    "min": (2, np.minimum),
    "max": (2, np.maximum),
    "clip": (3, np.clip),
}
"""Whitelisted functions: name -> (number of arguments, numpy implementation)."""

NOISE_MODES: tuple[str, ...] = ("exact", "additive", "multiplicative")
"""How the expression mechanism combines ``f(pa)`` with the node's noise draw."""

_BINARY: Mapping[type, Callable[[Any, Any], Any]] = {
    ast.Add: np.add,
    ast.Sub: np.subtract,
    ast.Mult: np.multiply,
    ast.Div: np.divide,
    ast.Pow: np.power,
}
_UNARY: Mapping[type, Callable[[Any], Any]] = {ast.USub: np.negative, ast.UAdd: np.positive}
_FORBIDDEN: Mapping[type, str] = {
    ast.Attribute: "attribute access ('.')",
    ast.Subscript: "subscripts ('[...]')",
    ast.Lambda: "lambda",
    ast.Compare: "comparisons",
    ast.BoolOp: "'and'/'or'",
    ast.IfExp: "conditional expressions",
    ast.NamedExpr: "assignment expressions (':=')",
    ast.Starred: "starred arguments",
    ast.ListComp: "comprehensions",
    ast.GeneratorExp: "comprehensions",
    ast.SetComp: "comprehensions",
    ast.DictComp: "comprehensions",
    ast.List: "lists",
    ast.Tuple: "tuples",
    ast.Set: "sets",
    ast.Dict: "dicts",
    ast.JoinedStr: "f-strings",
    ast.Await: "await",
    ast.Yield: "yield",
    ast.YieldFrom: "yield",
}
_MAX_LENGTH = 2000
_MAX_DEPTH = 64
_ALLOWED_TEXT = "numbers, parent/constant names, + - * / **, unary -, and calls to " + ", ".join(FUNCTIONS)


@dataclass(frozen=True)
class Expression:
    """A parsed, whitelisted formula; call it with a mapping from names to values.

    Attributes
    ----------
    text : str
        The source text.
    names : frozenset of str
        The free names (variables and constants) the formula reads.
    """

    text: str
    names: frozenset[str]
    _evaluate: Evaluator = field(repr=False, compare=False)

    def __call__(self, values: Mapping[str, Any]) -> Any:
        """Evaluate elementwise (numpy broadcasting); every name in :attr:`names` must be given.

        Out-of-domain inputs give NaN or infinity silently (see the module docstring).
        """
        missing = sorted(self.names - set(values))
        if missing:
            raise ValueError(f"expression {self.text!r} needs values for {missing}")
        with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
            return self._evaluate(values)


def _reject(text: str, what: str) -> ValueError:
    return ValueError(f"expression {text!r}: {what} is not allowed; allowed are {_ALLOWED_TEXT}")


def _compile(node: ast.AST, text: str, names: set[str], depth: int = 0) -> Evaluator:
    """Turn one whitelisted AST node into a closure over a name -> value mapping."""
    if depth > _MAX_DEPTH:
        raise ValueError(f"expression {text[:40]!r} is nested more than {_MAX_DEPTH} levels deep")
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _reject(text, f"the literal {value!r}")
        number = float(value)
        return lambda env: number
    if isinstance(node, ast.Name):
        if node.id in FUNCTIONS:
            raise _reject(text, f"using the function name {node.id!r} as a value")
        names.add(node.id)
        key = node.id
        return lambda env: env[key]
    if isinstance(node, ast.BinOp):
        op = _BINARY.get(type(node.op))
        if op is None:
            raise _reject(text, f"the operator {type(node.op).__name__}")
        left, right = _compile(node.left, text, names, depth + 1), _compile(node.right, text, names, depth + 1)
        return lambda env: op(left(env), right(env))
    if isinstance(node, ast.UnaryOp):
        unary = _UNARY.get(type(node.op))
        if unary is None:
            raise _reject(text, f"the unary operator {type(node.op).__name__}")
        operand = _compile(node.operand, text, names, depth + 1)
        return lambda env: unary(operand(env))
    if isinstance(node, ast.Call):
        return _compile_call(node, text, names, depth)
    what = _FORBIDDEN.get(type(node), f"the construct {type(node).__name__}")
    raise _reject(text, what)


def _compile_call(node: ast.Call, text: str, names: set[str], depth: int) -> Evaluator:
    if isinstance(node.func, ast.Attribute):
        raise _reject(text, "attribute access ('.')")
    if not isinstance(node.func, ast.Name):
        raise _reject(text, "calling anything but a whitelisted function by name")
    name = node.func.id
    if name not in FUNCTIONS:
        raise _reject(text, f"calling {name!r}")
    if node.keywords:
        raise _reject(text, f"keyword arguments in {name}(...)")
    arity, function = FUNCTIONS[name]
    if len(node.args) != arity:
        raise ValueError(f"expression {text!r}: {name}() takes {arity} argument(s), got {len(node.args)}")
    args = [_compile(arg, text, names, depth + 1) for arg in node.args]
    return lambda env: function(*(arg(env) for arg in args))


def parse_expression(text: str) -> Expression:
    """Parse ``text`` into a whitelisted :class:`Expression` (cached per text).

    Raises
    ------
    ValueError
        If ``text`` is not a string, is empty or too long, is not a single Python expression, or
        uses anything outside the whitelist (the message names the construct).

    Examples
    --------
    >>> f = parse_expression("Vmax * S / (Km + S)")
    >>> sorted(f.names)
    ['Km', 'S', 'Vmax']
    >>> float(f({"Vmax": 2.0, "S": 3.0, "Km": 1.0}))
    1.5
    """
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"an expression must be a non-empty string, got {text!r}")
    if len(text) > _MAX_LENGTH:
        raise ValueError(f"expression is longer than {_MAX_LENGTH} characters")
    return _parse(text)


@lru_cache(maxsize=4096)
def _parse(text: str) -> Expression:
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError) as err:
        raise ValueError(f"expression {text!r} is not a single arithmetic expression: {err}") from err
    names: set[str] = set()
    evaluate = _compile(tree.body, text, names)
    return Expression(text, frozenset(names), evaluate)


def _check_identifier(name: object, what: str) -> str:
    if not isinstance(name, str) or not name.isidentifier() or name in FUNCTIONS:
        raise ValueError(f"{what} must be a Python identifier that is not a function name, got {name!r}")
    return name


def expression_params(
    expression: str,
    parents: Sequence[str],
    constants: Mapping[str, float] | None = None,
    noise_mode: str = "exact",
) -> dict[str, Any]:
    """Validated parameters of the ``"expression"`` mechanism.

    Parameters
    ----------
    expression : str
        The formula ``f`` over parent and constant names.
    parents : sequence of str
        Parent names in the column order of the SCM (increasing node index).
    constants : mapping of str to float, optional
        Named constants the formula reads (each must be used).
    noise_mode : {"exact", "additive", "multiplicative"}
        How the node's noise enters (module docstring).

    Returns
    -------
    dict
        JSON-ready parameters for :class:`causal_gym.scm.NodeSpec`.

    Raises
    ------
    ValueError
        On a rejected formula, a free name that is neither a parent nor a constant, a parent or
        constant the formula does not use, duplicate or clashing names, or an unknown noise mode.
    """
    parsed = parse_expression(expression)
    if isinstance(parents, (str, bytes)) or not isinstance(parents, Sequence):
        raise ValueError(f"parents must be a sequence of names, got {parents!r}")
    parent_names = [_check_identifier(p, "a parent name") for p in parents]
    if len(set(parent_names)) != len(parent_names):
        raise ValueError(f"parents has repeated names: {parent_names}")
    if constants is None:
        constants = {}
    if not isinstance(constants, Mapping):
        raise ValueError(f"constants must be a mapping of name -> number, got {constants!r}")
    values = {_check_identifier(k, "a constant name"): check_real(v, f"constant {k!r}") for k, v in constants.items()}
    clash = sorted(set(values) & set(parent_names))
    if clash:
        raise ValueError(f"names {clash} are both parents and constants")
    unknown = sorted(parsed.names - set(parent_names) - set(values))
    if unknown:
        raise ValueError(
            f"expression {expression!r} uses {unknown}, which are neither parents {parent_names} nor constants"
        )
    unused = sorted((set(parent_names) | set(values)) - parsed.names)
    if unused:
        raise ValueError(f"expression {expression!r} does not use {unused}; every parent and constant must appear")
    if noise_mode not in NOISE_MODES:
        raise ValueError(f"unknown noise_mode {noise_mode!r}; choose one of {', '.join(map(repr, NOISE_MODES))}")
    return {"expression": expression, "parents": parent_names, "constants": values, "noise_mode": noise_mode}


_KEYS = frozenset({"expression", "parents", "constants", "noise_mode"})


@lru_cache(maxsize=4096)
def _checked(
    expression: str, parents: tuple[str, ...], constants: tuple[tuple[str, float], ...], mode: str
) -> Expression:
    """Validate a parameter set once per distinct content (evaluation runs on every sample call)."""
    expression_params(expression, list(parents), dict(constants), mode)
    return parse_expression(expression)


@register_mechanism("expression")
class ExpressionMechanism:
    """``X = gain * f(pa)`` combined with the noise as ``noise_mode`` says (module docstring).

    ``sample_params`` takes the formula as configuration (``rng`` is unused: nothing is random
    about a stated equation), so ``SCM.random`` can build expression nodes too.
    """

    def sample_params(
        self,
        rng: np.random.Generator,
        n_parents: int,
        expression: str,
        parents: Sequence[str],
        constants: Mapping[str, float] | None = None,
        noise_mode: str = "exact",
    ) -> dict[str, Any]:
        params = expression_params(expression, parents, constants, noise_mode)
        if len(params["parents"]) != n_parents:
            raise ValueError(f"the node has {n_parents} parent(s) but 'parents' names {params['parents']}")
        return params

    def evaluate(self, params: Mapping[str, Any], parents: np.ndarray, noise: np.ndarray) -> np.ndarray:
        unknown = sorted(set(params) - _KEYS - {"gain"})
        if unknown:
            raise ValueError(f"expression parameters have unknown keys {unknown}")
        names = tuple(params["parents"])
        constants = params["constants"]
        expression = _checked(params["expression"], names, tuple(sorted(constants.items())), params["noise_mode"])
        if parents.shape[1] != len(names):
            raise ValueError(f"expression node got {parents.shape[1]} parent column(s) for parents {list(names)}")
        env: dict[str, Any] = dict(constants)
        env.update({name: parents[:, i] for i, name in enumerate(names)})
        rows = parents.shape[0]
        values = np.array(np.broadcast_to(expression(env), (rows,)), dtype=float)
        if "gain" in params:
            values = params["gain"] * values
        mode = params["noise_mode"]
        if mode == "exact":
            if np.any(np.asarray(noise) != 0.0):
                raise ValueError(f"exact expression node {params['expression']!r} received nonzero noise")
            return values
        if mode == "additive":
            return values + noise
        with np.errstate(over="ignore"):
            return values * np.exp(noise)

    def scale_params(self, params: Mapping[str, Any], factor: float) -> dict[str, Any]:
        """Multiply ``f`` by ``factor`` (a ParameterShift on an equation rescales its output)."""
        return {**params, "gain": float(factor) * params.get("gain", 1.0)}
