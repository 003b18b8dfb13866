"""What a GRPO trainer plays, without a model: TRL's environment class and dataset for a tool env.

TRL's `GRPOTrainer(environment_factory=..., train_dataset=...)` takes a class whose instances play
one episode each (`reset(**row)`, one method per tool, `get_reward()`) and a dataset of episode
rows; a scripted "model" below calls the tools the way TRL does after parsing a completion.
"""

import inspect

from causal_gym.integrations.trl import dataset, environment_class

ENV_ID, KWARGS = "Heuresis-lg-v0", {"d": 4, "n": 60}

# 1. TRL: the dataset rows and one episode of the environment class, as GRPO plays a rollout.
rows = dataset(ENV_ID, 2, env_kwargs=KWARGS)
print(f"{len(rows)} rows; columns {sorted(rows.column_names)}")
Episode = environment_class(ENV_ID, env_kwargs=KWARGS)
print("tools the model sees:", ", ".join(name for name, member in vars(Episode).items() if inspect.isfunction(member)
                                        and not name.startswith("_") and name not in ("reset", "get_reward")))
episode = Episode()
row = {key: value for key, value in rows[0].items() if key != "prompt"}
episode.reset(**row)  # the row's instance and seeds: the G rollouts of a GRPO group share them
for name, arguments in [("ci_test", {"x": "X0", "y": "X1", "cond": [], "test": "fisherz"}),
                        ("set_edge", {"x": "X0", "y": "X1", "relation": "forward"}),
                        ("submit", {})]:  # the ending call returns no result: the episode is over
    print(f"{name}({arguments}) ->", getattr(episode, name)(**arguments).replace("\n", " | ")[:110])
print(f"get_reward() = {episode.get_reward():.3f}; scores: adjacency F1 {episode.scores['adjacency_f1']:.3f}")
