"""CausalArena: executable SCMs under one observational/interventional protocol.

Reads bottom-up: :mod:`.graph_families`, :mod:`.families` (mechanism, root and noise families
registered into :mod:`causal_gym.scm`), :mod:`.synthetic` (factor configs -> ``ArenaSCM``),
:mod:`.audits`, :mod:`.pool` (the 1,000-configuration pool); :mod:`.expressions`,
:mod:`.grounded` and :mod:`.scenarios` (formula-grounded and semantic cards), :mod:`.card_pack`
(private cards read from a file, the only grounded instances a seal can hide) and
:mod:`.card_copies` (how a pack card is told from a public one by content); :mod:`.real`
(Sachs and Bayesian-network structures read from pip wheels); :mod:`.protocol` (splits and
suites), :mod:`.scoring` and :mod:`.analysis`; then the environments: :mod:`.catalogue` (the
instances of each source and how one is loaded), :mod:`.source` (what an env shows of a task and
how it scores an answer), :mod:`.env` (submit mode) and :mod:`.tool_env` (tools mode), whose ids
:mod:`.spec` declares.

Importing :mod:`.families` and :mod:`.expressions` registers the ``arena_*`` and ``expression``
families with :mod:`causal_gym.scm` (the generators import them), so a serialised arena SCM can be
read back with :meth:`causal_gym.scm.SCM.from_json` after ``import causal_gym.envs.arena.families,
causal_gym.envs.arena.expressions``. Importing the package itself imports nothing, so listing the
benchmark (:mod:`.spec`) stays light.
"""
