"""Train an intervention planner with Stable-Baselines3's PPO and compare it with a random planner.

`CausaLab-planner-4node-v0` asks which property to shift, and to what, under a budget of 3
interventions; a fixed estimator turns the data into a graph and the reward is its all-edge F1.
`make_sb3_env` gives SB3 a flat observation and a Discrete action; training reads the train
stream, the comparison plays held-out test episodes. A small run (about a minute on 2 cores); the
full one is `python examples/train_planner.py` (180k steps, results on the RL guide's page).
"""

import gymnasium as gym
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env

import causal_gym  # noqa: F401  (registers the ids)
from causal_gym.agents.rl import SB3Agent
from causal_gym.envs.causalab.planner import RandomPlanner
from causal_gym.envs.wrappers import make_sb3_env
from causal_gym.eval import rollout
from causal_gym.metrics import paired_bootstrap

ENV_ID, BUDGET, EPISODES = "CausaLab-planner-4node-v0", 3, 30
torch.set_num_threads(1)

venv = make_vec_env(lambda: make_sb3_env(ENV_ID, flatten=True, intervention_budget=BUDGET), n_envs=4, seed=0)
model = PPO("MlpPolicy", venv, n_steps=256, batch_size=256, learning_rate=3e-4, ent_coef=0.01,
            policy_kwargs={"net_arch": [64, 64]}, seed=0, device="cpu")
model.learn(12_288)
print(f"trained {model.num_timesteps} steps on {ENV_ID} (budget {BUDGET})")

wrapper = make_sb3_env(ENV_ID, flatten=True, intervention_budget=BUDGET)
env = gym.make(ENV_ID, intervention_budget=BUDGET)
scores = {}
for name, agent in {"PPO": SB3Agent(model, wrapper), "random": RandomPlanner(seed=0)}.items():
    records = [rollout(env, agent, seed=k, options={"split": "test", "instance": k}) for k in range(EPISODES)]
    scores[name] = [record.final_info["metrics"]["edge_f1"] for record in records]
    print(f"{name:>6}: mean all-edge F1 {sum(scores[name]) / EPISODES:.3f} on {EPISODES} held-out episodes")
difference, low, high = paired_bootstrap(scores["PPO"], scores["random"], seed=0)
print(f"PPO - random: {difference:+.3f} [{low:+.3f}, {high:+.3f}] (paired bootstrap 95%)")
