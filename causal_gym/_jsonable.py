"""Conversion of records (numpy arrays and scalars, dataclasses, tuples) to plain JSON values."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["to_jsonable"]


def to_jsonable(value: Any) -> Any:
    """Return ``value`` as nested dicts/lists/str/int/float/bool/None that ``json.dumps`` accepts.

    Arrays become (nested) lists, numpy scalars Python scalars, dataclasses dicts (through their
    ``to_dict`` when they define one), mapping keys strings. Non-finite floats become None so the
    output is strict JSON. Anything else raises ``TypeError`` rather than being stringified, so a
    record never silently loses information.
    """
    # Exact built-in types first: records are mostly plain dicts, lists, strings and floats, and
    # every env step converts its result, so this path must not pay for the general checks.
    kind = type(value)
    if kind is str or kind is bool or kind is int or value is None:
        return value
    if kind is float:
        return value if math.isfinite(value) else None
    if kind is dict:
        return {k if type(k) is str else str(k): to_jsonable(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [to_jsonable(v) for v in value]
    return _convert(value)


def _convert(value: Any) -> Any:
    """:func:`to_jsonable` for everything but exact built-in dicts, lists, tuples and scalars."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.ndarray):
        return to_jsonable(value.tolist())
    if hasattr(value, "to_dict") and callable(value.to_dict):
        return to_jsonable(value.to_dict())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value) if isinstance(value, (set, frozenset)) else value
        return [to_jsonable(v) for v in items]
    raise TypeError(f"cannot convert {type(value).__name__} to JSON: {value!r}")
