"""A tour of one Heuresis episode: tool schemas, JSON tool calls, edits, submission and scores.

This is what an LLM agent does through tool calling, scripted so it runs without a model:

    python examples/heuresis_tour.py                 # wild family, d=10, n=600, test instance 0
    python examples/heuresis_tour.py --family lg --guided
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

import gymnasium as gym

import causal_gym  # noqa: F401  (registers the environment ids)


def main(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--family", default="wild")
    parser.add_argument("--guided", action="store_true")
    parser.add_argument("--instance", type=int, default=0)
    parser.add_argument("--d", type=int, default=10)
    parser.add_argument("--n", type=int, default=600)
    args = parser.parse_args(argv)

    env_id = f"Heuresis-{args.family}{'-guided' if args.guided else ''}-v0"
    env = gym.make(env_id, d=args.d, n=args.n)
    base = env.unwrapped
    observation, info = env.reset(seed=0, options={"split": "test", "instance": args.instance})
    print(f"{env_id}: tools {[spec['function']['name'] for spec in base.tool_specs()]}")
    print(f"budgets: {info['budgets_remaining']}\n")

    # The calls an LLM would send, as (name, JSON arguments). The last one is malformed on purpose:
    # it comes back as an error message and the episode goes on.
    calls = [
        ("run_algorithm", {"algorithm": "A"}),
        ("ci_test", {"x": "X0", "y": "X1", "cond": [], "test": "kci"}),
        ("fit_parents", {"x": "X1", "cond": ["X0"]}),
        ("probe_direction", {"x": "X0", "y": "X1"}),
        ("run_code", {"code": "print(np.round(np.corrcoef(X, rowvar=False)[0, :4], 2))"}),
        ("set_edge", {"x": "X0", "y": "X1", "relation": "forward"}),
        ("ci_test", '{"x": "X0", "y": "X0"'),
    ]
    for name, arguments in calls:
        action = base.parse_tool_call(name, arguments if isinstance(arguments, str) else json.dumps(arguments))
        observation, reward, terminated, truncated, info = env.step(action)
        print(f"> {name}({arguments})\n{observation['last_result'][:300]}\n")

    observation, reward, terminated, truncated, info = env.step(base.parse_tool_call("submit", {}))
    scores = info["scores"]
    print(f"submitted ({info['submission_source']}): reward {reward:.3f}, adjacency F1 {scores['adjacency_f1']:.3f}, "
          f"nSHD {scores['nshd']:.3f}; algorithm labels were {scores['algorithm_slots']}")
    return scores


if __name__ == "__main__":
    main()
