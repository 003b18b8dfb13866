"""Integrity in practice: a sealed split, and an agent's program trying to read what it must not.

A seal (a secret) keys every instance stream, so the truth of a sealed instance cannot be
regenerated from the published seeds; the code tool runs agent programs in an OS-level sandbox.
"""

import json
import subprocess
import tempfile
from pathlib import Path

import gymnasium as gym

import causal_gym
from causal_gym.seal import Seal

# 1. A seal file (mode 600), and the same instance index open and sealed: different data.
path = Path(tempfile.mkdtemp()) / "leaderboard.seal"
fingerprint = subprocess.run(["causal-gym", "seal", "new", str(path)], capture_output=True, text=True, check=True)
print(f"seal file mode {oct(path.stat().st_mode & 0o777)}; fingerprint of {len(fingerprint.stdout.strip())} hex digits")
kwargs = {"d": 4, "n": 60}
options = {"split": "test", "instance": 0}
open_env = gym.make("Heuresis-lg-v0", **kwargs, seal=causal_gym.seal.OPEN)
sealed_env = gym.make("Heuresis-lg-v0", **kwargs, seal=Seal.from_file(path))
_, open_info = open_env.reset(seed=0, options=options)
_, sealed_info = sealed_env.reset(seed=0, options=options)
print("open instance:", open_info["instance"])
print("sealed instance id is opaque:", sorted(sealed_info["instance"]), "index shown:", "index" in sealed_info["instance"])
summaries = []
for env in (open_env, sealed_env):  # what an agent reads of the data: the summarize tool
    observation, *_ = env.step(env.unwrapped.parse_tool_call("summarize", "{}"))
    summaries.append(observation["last_result"])
print("the agent's summary of the data is the same open and sealed:", summaries[0] == summaries[1])
assert summaries[0] != summaries[1]

# 2. An agent's program in the code tool: computing is allowed, reaching outside is not.
program = """
import os, socket
print("numpy sum", __import__("numpy").arange(4).sum())
for probe in ("/etc/passwd", os.path.expanduser("~/.cache/causal_gym")):
    print(probe, "visible" if os.path.exists(probe) else "absent")
try:
    socket.create_connection(("127.0.0.1", 22), timeout=1)
    print("network: connected")
except OSError as error:
    print("network: refused", type(error).__name__)
"""
action = sealed_env.unwrapped.parse_tool_call("run_code", json.dumps({"code": program}))
observation, *_ = sealed_env.step(action)
print(observation["last_result"])
open_env.close()
sealed_env.close()
