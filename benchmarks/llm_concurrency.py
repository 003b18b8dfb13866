"""LLM episodes in flight against one server: episodes/s and harness overhead vs ``concurrency``.

A local OpenAI-compatible server (the tests' scripted one, in a process of its own so that its
work does not count as the harness's) answers every request after a fixed latency (default 1 s):
four ``summarize`` calls, then ``submit``, so an episode waits 5 s on the server. The runner plays ``2 x concurrency`` such Heuresis episodes (d=4) with the LLM agent in
threads (``RunConfig(concurrency=c)``); the ideal wall time is ``2 x 5 s``. Reported per
concurrency: wall time, episodes/s, the harness overhead ``1 - ideal / wall`` (goal <= 5% at 256, issue 32),
the HTTP floor (below), the CPU time per episode of the harness process (user + system, all its threads) and of the server process,
its thread switches per episode,
and the resident memory added per in-flight episode (peak RSS during the run minus before, over c).

Each level also times the *HTTP floor*: the same number of conversations of ``TURNS`` requests,
with bodies the size of an episode's (the env's task text and tool schemas, a tool result per
turn), sent through the agent's own client (``openai``, one client per thread) from ``c`` threads,
with no env, agent or run store. It is what the OpenAI client and the server cost on this machine,
so ``overhead - floor`` is the harness's own share. The *asyncio floor* sends the same conversations
as ``c`` asyncio tasks through one ``AsyncOpenAI`` client: what a harness playing episodes as asyncio
tasks would pay for its HTTP instead (issue 48 measured it before choosing between the two: at 16 and
256 in flight it cost 1.5-2x the threads' CPU per conversation and 70% overhead at 256 against their
20%, so the episodes stay threads taking turns). The CPU of each floor per conversation is printed too.

The CPU per episode does not depend on the machine's load the way the overhead does. The episode
threads share one interpreter lock, so the harness cannot use more than about one core: once
``episodes x CPU per episode`` approaches the ideal wall time, the overhead is that CPU, and the
"harness cores" column (harness CPU / wall) says how close the run came to it. The "CPU bound"
column is the overhead a perfect scheduler would have with this run's harness CPU per episode
(:func:`cpu_bound`): what is left above it is lost to scheduling. It is a model, not a floor: some
of that CPU (system calls, numpy) runs outside the interpreter lock, so a run can come in under it.

Usage: python benchmarks/llm_concurrency.py [--latency 1.0] [--levels 1,4,16,32,64,256]
"""

from __future__ import annotations

import argparse
import heapq
import json
import multiprocessing
import os
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path

TESTS = str(Path(__file__).resolve().parents[1] / "tests")
sys.path.insert(0, TESTS)

from causal_gym.eval.runner import RunConfig, run  # noqa: E402

TURNS = 5


def _reply(request: dict) -> dict:
    from fake_openai_server import tool_reply

    calls = sum(1 for m in request["messages"] if m["role"] == "assistant")
    return tool_reply(("summarize", {})) if calls < TURNS - 1 else tool_reply(("submit", {}))


def _serve(latency: float, urls: multiprocessing.Queue) -> None:
    sys.path.insert(0, TESTS)
    from fake_openai_server import FakeOpenAIServer

    with FakeOpenAIServer(latency=latency, responder=_reply) as server:
        urls.put(server.base_url)
        threading.Event().wait()


def _floor_bodies() -> list[dict]:
    """The request bodies of one conversation: an episode's task text and tool schemas, growing by a
    tool call and a tool result (the size of a ``summarize`` answer) per turn."""
    import gymnasium as gym

    from causal_gym.harness.agent import task_spec

    env = gym.make("Heuresis-lg-v0", d=4, n=60)
    obs, _ = env.reset(seed=0)
    spec = task_spec(env)
    _, _, _, _, info = env.step(env.unwrapped.parse_tool_call("summarize", {}))
    result = str(info.get("result"))
    env.close()
    messages: list[dict] = [{"role": "system", "content": spec.description}, {"role": "user", "content": "Begin."}]
    bodies = []
    for turn in range(TURNS):
        bodies.append({"model": "fake", "messages": list(messages), "tools": list(spec.tool_specs)})
        call = {"id": f"call_{turn}", "type": "function", "function": {"name": "summarize", "arguments": "{}"}}
        messages += [{"role": "assistant", "content": None, "tool_calls": [call]},
                     {"role": "tool", "tool_call_id": call["id"], "content": result}]
    return bodies


def _floor(base_url: str, c: int, bodies: list[dict]) -> float:
    """Wall seconds of ``2 c`` conversations of ``bodies`` sent from ``c`` threads through the agent's client."""
    from concurrent.futures import ThreadPoolExecutor

    from causal_gym.agents.llm import _http, _shared_client

    def conversation(_: int) -> None:
        client = _shared_client(base_url, "k", 60.0)
        for body in bodies:  # as LLMAgent._create sends and reads them
            json.loads(client.post("/chat/completions", cast_to=_http()[0].Response, body=body).content)

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=c) as pool:
        list(pool.map(conversation, range(2 * c)))
    return time.perf_counter() - start


def _async_floor(base_url: str, c: int, bodies: list[dict]) -> float:
    """As :func:`_floor`, with ``c`` asyncio tasks on one event loop sharing one ``openai.AsyncOpenAI`` client
    (what an episode-as-task harness would send through; a client per task costs several times more)."""
    import asyncio

    from openai import AsyncOpenAI

    from causal_gym.agents.llm import _http

    http = _http()[0]

    async def main() -> None:
        limits = http.Limits(max_connections=None, max_keepalive_connections=None)
        async with AsyncOpenAI(base_url=base_url, api_key="k", max_retries=0, timeout=60.0,
                               http_client=http.AsyncClient(limits=limits)) as client:
            slots = asyncio.Semaphore(c)

            async def conversation() -> None:
                async with slots:
                    for body in bodies:
                        json.loads((await client.post("/chat/completions", cast_to=http.Response, body=body)).content)

            await asyncio.gather(*(conversation() for _ in range(2 * c)))

    start = time.perf_counter()
    asyncio.run(main())
    return time.perf_counter() - start


def cpu_bound(concurrency: int, cpu_per_episode: float, latency: float, turns: int = TURNS,
              split: tuple[float, float, float] = (0.2, 0.6, 0.2)) -> float:
    """The overhead of ``2 x concurrency`` episodes in ``concurrency`` slots if the harness's only cost
    were ``cpu_per_episode`` seconds of one interpreter's time, served first come first served.

    Why: the episode threads share one interpreter, so a reply that arrives while others are being
    handled waits for them; the waits pile up when hundreds of episodes start at once and their
    replies come back together. ``split`` shares the CPU between an episode's start (env, prompt,
    first request), its ``turns`` replies (read, step, next request) and its end (scoring, the store
    line); the default is close to the per-function times of these episodes (about 2 of 10 ms before
    the first request, 1.5 after the last reply). Shares of 10-40% at either end put the bound at
    10-19% for 256 in flight and 10 ms per episode.

    >>> round(cpu_bound(1, 0.01, 1.0), 4) == round(1 - 10 / 10.02, 4)  # one slot: each episode adds its CPU
    True
    """
    start, per_turn, end = (share * cpu_per_episode for share in split)
    per_turn /= turns
    ready = [(0.0, slot, 0) for slot in range(concurrency)]  # (time, episode, replies read so far)
    heapq.heapify(ready)
    free, finished, next_episode = 0.0, 0.0, concurrency
    while ready:
        time_ready, episode, replies = heapq.heappop(ready)
        done = max(time_ready, free) + (start if replies == 0 else per_turn) + (end if replies == turns else 0.0)
        free = done
        if replies < turns:
            heapq.heappush(ready, (done + latency, episode, replies + 1))
        else:
            finished = max(finished, done)
            if next_episode < 2 * concurrency:
                heapq.heappush(ready, (done, next_episode, 0))
                next_episode += 1
    return 1 - 2 * turns * latency / finished


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _switches() -> int:
    """Thread switches of this process so far, voluntary and not (all its threads): the interpreter
    lock changing hands shows here, and depends less on the machine's load than the overhead does."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_nvcsw + usage.ru_nivcsw


def _cpu_seconds(pid: int | None = None) -> float:
    """User + system CPU seconds of this process (all threads), or of process ``pid`` (Linux's /proc)."""
    if pid is None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--levels", default="1,4,16,32,64,256")
    args = parser.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    urls: multiprocessing.Queue = multiprocessing.Queue()
    server = multiprocessing.Process(target=_serve, args=(args.latency, urls), daemon=True)
    server.start()
    base_url = urls.get(timeout=30)
    with tempfile.TemporaryDirectory() as tmp:
        kwargs = {"model": "fake", "base_url": base_url, "api_key": "k", "tool_mode": "native"}
        warm = RunConfig(("Heuresis-lg-v0",), "llm", agent_kwargs=kwargs, instances=range(2), env_kwargs={"d": 4, "n": 60})
        run(warm, Path(tmp) / "warm", progress=False)  # fill the reference cache and import everything once
        bodies = _floor_bodies()
        print(f"server latency {args.latency:g} s, {TURNS} replies per episode, 2 x concurrency episodes")
        print(f"{'concurrency':>11} {'episodes':>8} {'wall s':>8} {'ideal s':>8} {'ep/s':>7} {'overhead':>9} "
              f"{'CPU bound':>9} {'HTTP floor':>10} {'asyncio floor':>13} {'floor CPU ms/conv':>17} "
              f"{'asyncio ms/conv':>15} {'harness CPU ms/ep':>17} {'switches/ep':>11} {'harness cores':>13} "
              f"{'server CPU ms/ep':>16} {'MB/episode':>11}")
        for c in levels:
            before, peak, watcher_cpu, stop = _rss_mb(), [0.0], [0.0], threading.Event()

            def watch() -> None:
                while not stop.is_set():
                    peak[0] = max(peak[0], _rss_mb())
                    time.sleep(0.05)
                watcher_cpu[0] = time.thread_time()  # not the harness's: taken off its CPU below

            watcher = threading.Thread(target=watch, daemon=True)
            watcher.start()
            config = RunConfig(("Heuresis-lg-v0",), "llm", agent_kwargs=kwargs, instances=range(2),
                               repeats=c, env_kwargs={"d": 4, "n": 60}, concurrency=c)
            cpu, server_cpu, switches = _cpu_seconds(), _cpu_seconds(server.pid), _switches()
            start = time.perf_counter()
            summary = run(config, Path(tmp) / f"c{c}", progress=False)
            wall = time.perf_counter() - start
            cpu, server_cpu = _cpu_seconds() - cpu, _cpu_seconds(server.pid) - server_cpu
            switches = _switches() - switches
            stop.set()
            watcher.join()
            cpu -= watcher_cpu[0]
            if not summary.complete:
                from causal_gym.eval.store import RunStore

                errors = {line["error"] for line in RunStore(Path(tmp) / f"c{c}").episodes() if line["error"]}
                raise RuntimeError(f"concurrency {c}: {summary.counts}: {sorted(errors)[:3]}")
            ideal = 2 * TURNS * args.latency
            floor_cpu = _cpu_seconds()
            floor = _floor(base_url, c, bodies)
            floor_cpu = _cpu_seconds() - floor_cpu
            async_cpu = _cpu_seconds()
            async_floor = _async_floor(base_url, c, bodies)
            async_cpu = _cpu_seconds() - async_cpu
            print(f"{c:>11} {2 * c:>8} {wall:>8.2f} {ideal:>8.2f} {2 * c / wall:>7.2f} {1 - ideal / wall:>8.1%} "
                  f"{cpu_bound(c, cpu / (2 * c), args.latency):>9.1%} {1 - ideal / floor:>10.1%} "
                  f"{1 - ideal / async_floor:>13.1%} {1000 * floor_cpu / (2 * c):>17.1f} {1000 * async_cpu / (2 * c):>15.1f} "
                  f"{1000 * cpu / (2 * c):>17.1f} {switches / (2 * c):>11.0f} {cpu / wall:>13.2f} {1000 * server_cpu / (2 * c):>16.1f} "
                  f"{max(0.0, peak[0] - before) / c:>11.2f}")
    server.terminate()


if __name__ == "__main__":
    main()
