"""Docstrings read outside Sphinx: the same text as plain prose for ``--help``.

The docstrings use Sphinx's cross-reference roles (``:func:`run```, ``:mod:`~causal_gym.eval```)
and reStructuredText literals, which the docs site renders as links and code. A terminal does not:
:func:`plain_text` keeps the name a role points to and drops the markup, so a module docstring can
serve as a command's ``--help`` description without showing ``:func:``.
"""

from __future__ import annotations

import re

__all__ = ["ROLE", "plain_text", "role_title"]

ROLE = re.compile(r":(?:py:)?(?P<role>[a-z]+):`(?P<body>[^`]+)`")
"""A Sphinx role such as ``:class:`~causal_gym.seal.Seal``` (body: ``~causal_gym.seal.Seal``)."""

_TITLED = re.compile(r"^(?P<title>.*?)\s*<(?P<target>[^<>]+)>$")


def role_title(body: str) -> str:
    """What Sphinx shows for a role's body: an explicit title, else the target (``~``: its last part).

    Examples
    --------
    >>> role_title("~causal_gym.seal.Seal")
    'Seal'
    >>> role_title("the runner <causal_gym.eval.runner.run_plan>")
    'the runner'
    >>> role_title(".prefetch")
    'prefetch'
    """
    titled = _TITLED.match(body)
    if titled:
        return titled.group("title")
    if body.startswith("~"):
        return body[1:].rsplit(".", 1)[-1]
    return body.lstrip(".!")


def plain_text(text: str) -> str:
    """``text`` with Sphinx roles replaced by what they show and ````literal```` by ``literal``.

    Examples
    --------
    >>> plain_text("see :func:`causal_gym.eval.runner.run_plan` and ``--workers``")
    'see causal_gym.eval.runner.run_plan and --workers'
    >>> plain_text(":class:`~causal_gym.seal.Seal` keys the streams")
    'Seal keys the streams'
    """
    text = ROLE.sub(lambda match: role_title(match.group("body")), text)
    return re.sub(r"``([^`]+)``", r"\1", text)
