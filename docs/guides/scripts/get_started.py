"""Get started: make an environment, play it in a loop, read the scores, and play it as an LLM would."""

import json

import gymnasium as gym

import causal_gym  # noqa: F401  (registers every id)
from causal_gym.agents import RandomAgent
from causal_gym.envs.registration import env_descriptions
from causal_gym.eval import rollout

print(f"{len(env_descriptions())} registered ids, e.g. {', '.join(list(env_descriptions())[:3])}")

# 1. The Gymnasium loop: random *valid* actions (the env's per-field masks), seeded end to end.
env = gym.make("Heuresis-lg-v0", d=4, n=60)  # a small instance: 4 variables, 60 rows
observation, info = env.reset(seed=0, options={"split": "test", "instance": 0})
env.action_space.seed(0)
steps = 0
terminated = truncated = False
while not (terminated or truncated):
    action = env.action_space.sample(mask=info["action_mask"])
    observation, reward, terminated, truncated, info = env.step(action)
    steps += 1
scores = info["scores"]
print(f"episode over after {steps} steps (terminated={terminated}, truncated={truncated}); "
      f"reward {reward:.3f} = adjacency F1 {scores['adjacency_f1']:.3f}, nSHD {scores['nshd']:.3f}")

# 2. What an LLM agent sends: JSON tool calls, converted to the same typed actions.
observation, info = env.reset(seed=0, options={"split": "test", "instance": 0})
print("tools:", ", ".join(spec["function"]["name"] for spec in env.unwrapped.tool_specs()))
for name, arguments in [("ci_test", {"x": "X0", "y": "X1", "cond": [], "test": "fisherz"}),
                        ("set_edge", {"x": "X0", "y": "X9", "relation": "none"}),  # no X9: an error message
                        ("submit", {})]:
    action = env.unwrapped.parse_tool_call(name, json.dumps(arguments))
    observation, reward, terminated, truncated, info = env.step(action)
    print(f"{name}: {observation['last_result'].splitlines()[0][:90]}")
print(f"submitted the complete graph: adjacency F1 {info['scores']['adjacency_f1']:.3f}")
env.close()

# 3. An agent object and a one-episode rollout with its record (what `causal-gym run` stores per line).
record = rollout(gym.make("CausaLab-4node-v0"), RandomAgent(seed=0), seed=0,
                 options={"split": "test", "instance": 0})
final = record.to_dict()["final_info"]
print(f"CausaLab-4node-v0, random agent: {record.to_dict()['steps']} steps, success={final['success']}")
