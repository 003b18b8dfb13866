"""The harness's CPU per episode against the field's: ``causal-gym run``, ``inspect eval`` and verifiers.

Each framework plays the same Heuresis d = 4 episodes (test instances 0..N-1) with its own command
line, against the same local OpenAI-compatible server (the tests' scripted one, in a process of its
own, answering at once): four ``summarize`` calls, then ``submit``, so an episode is 5 requests and
ends with the starting graph submitted (the same adjacency F1 in every framework, which is checked).

What is measured is the CPU (user + system) of each command's whole process tree (``RUSAGE_CHILDREN``:
the command and every process it waited for, verifiers' worker processes included), for ``--episodes``
episodes and for 2, and the difference divided by ``episodes - 2``: the per-episode cost, without the
start-up (imports, the env server, the log). Rounds alternate the commands so that a change of the
machine's load falls on all of them; the table gives the median and range over the rounds and the
ratio of each framework's median to ours. Goal (issue 48): ours <= 1/10 of the best of the others.

- ours: ``causal-gym run --agent llm`` (one episode at a time, in the command's process);
- Inspect: ``inspect eval causal_gym/heuresis`` through its ``openai-api`` provider;
- verifiers v1: ``eval causal-gym-verifiers`` (its env-server worker pool, the default);
- verifiers classic: ``vf-eval causal_gym_verifiers`` (its env server, the default).

A framework whose run loses episodes (an error instead of a score) is reported with the count.

Usage: python benchmarks/llm_harness_field.py [--episodes 32] [--rounds 3] [--only ours,inspect,...]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = str(ROOT / "tests")
TURNS = 5
ENV_KWARGS = {"d": 4, "n": 60}
FRAMEWORKS = ("ours", "inspect", "verifiers-v1", "verifiers-classic")


def _reply(request: dict) -> dict:
    from fake_openai_server import tool_reply

    calls = sum(1 for m in request["messages"] if m["role"] == "assistant")
    return tool_reply(("summarize", {})) if calls < TURNS - 1 else tool_reply(("submit", {}))


def _serve(urls: multiprocessing.Queue) -> None:
    sys.path.insert(0, TESTS)
    from fake_openai_server import FakeOpenAIServer

    with FakeOpenAIServer(responder=_reply) as server:
        urls.put(server.base_url)
        threading.Event().wait()


def _command(framework: str, episodes: int, base_url: str, out: Path) -> list[str]:
    kwargs = json.dumps(ENV_KWARGS)
    if framework == "ours":
        return ["causal-gym", "run", "--env", "Heuresis-lg-v0", "--agent", "llm", "--model", "fake", "--base-url",
                base_url, "--tool-mode", "native", "--agent-kwargs", '{"api_key": "k"}', "--env-kwargs", kwargs,
                "--episodes", str(episodes), "--out", str(out), "--quiet"]
    if framework == "inspect":
        return ["inspect", "eval", "causal_gym/heuresis", "-T", "family=lg", "-T", f"episodes={episodes}", "-T",
                f"env_kwargs={kwargs}", "--model", "openai-api/fake/fake", "-M", "strict_tools=false",
                "--log-dir", str(out), "--display", "none"]
    if framework == "verifiers-v1":
        return ["eval", "causal-gym-verifiers", "--env.taskset.gym-id", "Heuresis-lg-v0", "--env.taskset.episodes",
                str(episodes), "--env.taskset.env-kwargs", kwargs, "-m", "fake", "--client.base-url", base_url,
                "--client.api-key-var", "FAKE_API_KEY", "--no-push", "--no-rich", "-o", str(out)]
    if framework == "verifiers-classic":
        arguments = json.dumps({"gym_id": "Heuresis-lg-v0", "episodes": episodes, "env_kwargs": ENV_KWARGS})
        return ["vf-eval", "causal_gym_verifiers", "-a", arguments, "-n", str(episodes), "-r", "1", "-m", "fake",
                "-b", base_url, "-k", "FAKE_API_KEY", "-d", "-s", "-C", "causal_gym", "-o", str(out)]
    raise ValueError(framework)


def _scores(framework: str, out: Path) -> tuple[list[float], int]:
    """The adjacency F1 of each scored episode, and the number of episodes lost (an error, no score)."""
    if framework == "ours":
        lines = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
        return [line["scores"]["adjacency_f1"] for line in lines if line["scores"]], sum(not x["scores"] for x in lines)
    if framework == "inspect":
        from inspect_ai.log import read_eval_log

        (log_file,) = out.glob("*.eval")
        samples = read_eval_log(str(log_file)).samples or []
        scored = [s.scores["episode_scores"].value["adjacency_f1"] for s in samples if s.error is None and s.scores]
        return scored, len(samples) - len(scored)
    if framework == "verifiers-v1":
        (traces,) = out.glob("*/traces.jsonl")
        rows = [json.loads(line) for line in traces.read_text().splitlines() if line.strip()]
        rollouts = [t for row in rows for t in (row.get("traces") or [row])]
        scored = [t["info"]["causal_gym"]["scores"]["adjacency_f1"] for t in rollouts
                  if not t.get("errors") and "causal_gym" in (t.get("info") or {})]
        return scored, len(rollouts) - len(scored)
    (results,) = out.rglob("results.jsonl")
    rows = [json.loads(line) for line in results.read_text().splitlines() if line.strip()]
    scored = [row["causal_gym"]["scores"]["adjacency_f1"] for row in rows
              if not row.get("error") and "scores" in (row.get("causal_gym") or {})]
    return scored, len(rows) - len(scored)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _play(framework: str, episodes: int, base_url: str, tmp: Path) -> tuple[float, list[float], int]:
    out = Path(tempfile.mkdtemp(dir=tmp))
    environment = {**os.environ, "FAKE_BASE_URL": base_url, "FAKE_API_KEY": "k",
                   "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}
    before = _children_cpu()
    done = subprocess.run(_command(framework, episodes, base_url, out / "run"), cwd=out, env=environment,
                          capture_output=True, text=True)
    cpu = _children_cpu() - before
    if done.returncode != 0:
        raise RuntimeError(f"{framework} failed ({done.returncode}): {done.stderr[-3000:]}")
    scores, lost = _scores(framework, out / "run")
    shutil.rmtree(out, ignore_errors=True)
    return cpu, scores, lost


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", default=",".join(FRAMEWORKS))
    args = parser.parse_args()
    frameworks = [f for f in args.only.split(",") if f]
    urls: multiprocessing.Queue = multiprocessing.Queue()
    server = multiprocessing.Process(target=_serve, args=(urls,), daemon=True)
    server.start()
    base_url = urls.get(timeout=60)
    per_episode: dict[str, list[float]] = {f: [] for f in frameworks}
    results: dict[str, tuple[list[float], int]] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            _play("ours", 2, base_url, Path(tmp))  # the references' cache, once, for everyone
            for round_ in range(args.rounds):
                for framework in frameworks:
                    small, _, _ = _play(framework, 2, base_url, Path(tmp))
                    large, scores, lost = _play(framework, args.episodes, base_url, Path(tmp))
                    per_episode[framework].append((large - small) / (args.episodes - 2))
                    results[framework] = (scores, lost)
                    print(json.dumps({"round": round_, "framework": framework, "cpu_s_2": round(small, 2),
                                      f"cpu_s_{args.episodes}": round(large, 2),
                                      "ms_per_episode": round(1000 * per_episode[framework][-1], 1),
                                      "scored": len(scores), "lost": lost}), flush=True)
    finally:
        server.terminate()
    ours = statistics.median(per_episode["ours"]) if "ours" in per_episode else float("nan")
    print(f"\n{args.episodes} Heuresis d=4 episodes of {TURNS} requests, CPU of the process tree, "
          f"({args.episodes} - 2 episodes) / {args.episodes - 2}, {args.rounds} rounds")
    print(f"{'framework':>18} {'ms CPU per episode (median, range)':>36} {'x ours':>7} {'scored':>7} {'lost':>5} "
          f"{'mean adjacency F1':>18}")
    for framework, values in per_episode.items():
        median = statistics.median(values)
        scores, lost = results[framework]
        f1 = statistics.mean(scores) if scores else float("nan")
        print(f"{framework:>18} {f'{1000 * median:.1f} ({1000 * min(values):.1f}-{1000 * max(values):.1f})':>36} "
              f"{median / ours:>7.1f} {len(scores):>7} {lost:>5} {f1:>18.3f}")
    others = [statistics.median(v) for f, v in per_episode.items() if f != "ours"]
    if others and "ours" in per_episode:
        print(f"\nours / best of the others: {ours / min(others):.3f} (goal <= 0.1)")


if __name__ == "__main__":
    main()
