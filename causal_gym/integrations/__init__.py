"""causal_gym's tool envs inside the LLM frameworks people already use.

- :mod:`causal_gym.integrations.inspect`: Inspect tasks (``inspect eval causal_gym/heuresis``);
- :mod:`causal_gym.integrations.verifiers`: a verifiers v1 taskset and harness (``vf-eval causal-gym-verifiers``);
- :mod:`causal_gym.integrations.trl`: classes for TRL's ``GRPOTrainer(environment_factory=...)``.

All three play episodes through one adapter core (:mod:`causal_gym.integrations.core`): the
env's own tool schemas, its converter from a tool call to the typed action, its result texts
and its final scores, under the same protocol as :class:`~causal_gym.agents.llm.LLMAgent`.
The frameworks are optional (``pip install 'causal-gym[inspect]'``, ``[verifiers]``,
``[trl]``) and imported only by their module. This layer sits beside :mod:`causal_gym.eval`:
above the agents, whose message handling it reuses, and below the CLI; like the other generic
code it names no benchmark, only public env ids.
"""
