"""The benchmark's declaration, read when causal_gym is imported (literals only: nothing heavy)."""

from causal_gym.envs.benchmark import AgentEntry, BenchmarkSpec, EnvEntry

SPEC = BenchmarkSpec(
    name="skeleton3",
    title="Three-variable skeletons",
    envs=(EnvEntry("Skeleton3-v0", "causal_gym_example_plugin.env:Skeleton3Env",
                   "Skeleton3 -- the skeleton of a random three-variable linear Gaussian DAG, in one answer",
                   small_kwargs={"n": 100}),),
    agents={"skeleton3-pcorr": AgentEntry("causal_gym_example_plugin.env:PartialCorrelationAgent",
                                          "Skeleton3: the pcorr method's skeleton")},
)
