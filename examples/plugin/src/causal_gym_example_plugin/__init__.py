"""A worked causal_gym plug-in: a discovery method (:mod:`.methods`) and a small benchmark (:mod:`.spec`,
:mod:`.env`), declared through causal_gym's entry points (see ``pyproject.toml``)."""

__version__ = "0.1.0"
