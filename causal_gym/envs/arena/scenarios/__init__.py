"""Hand-written CausalArena scenario cards: formula-grounded (:mod:`.formula`) and semantic
(:mod:`.semantic`), compiled by :func:`causal_gym.envs.arena.grounded.compile_scenario`."""
