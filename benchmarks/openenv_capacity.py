"""OpenEnv clients arriving at ``causal-gym serve`` at once: who gets a session, who a clear refusal.

Each scenario starts ``causal-gym serve`` in a process of its own and sends it ``--clients`` OpenEnv
clients (``GenericEnvClient``, one asyncio loop in this process), client ``k`` connecting ``k x
--stagger`` seconds after the first. A client connects, resets (instance ``k mod 32``) and makes a few
tool calls while the others arrive, then closes. Each client's outcome is one of:

- ``session``: it played;
- ``refused``: OpenEnv's capacity error (``CAPACITY_REACHED``) from its first call;
- ``bare close``: the socket closed before it read any reason (issue 48: 41 of 44 refusals at 300 clients);
- ``handshake failed``: the opening handshake timed out (the client's 10 s): the server's event loop
  did not answer in time (issue 48: 108 of 300 at ``--max-sessions 320`` on a loaded machine);
- anything else, by its exception.

Reported per scenario: the outcomes, the wall time, and the tracebacks in the server's log (each
normal close wrote one before). The reference in the same process is the same crowd with the bound
on env threads lifted (``--env-threads 100000``): the server as it ran before ``--env-threads``, whose
hundreds of runnable env threads starve the event loop. Env caches are warmed by one unreported pass
first, so both scenarios of a pair see the same cache.

Usage: python benchmarks/openenv_capacity.py [--clients 300] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from openenv.core import GenericEnvClient

ROOT = Path(__file__).resolve().parents[1]
OUTCOMES = ("session", "refused", "bare close", "handshake failed")


def _serve(env_id: str, env_kwargs: dict, flags: list[str], log: Path) -> tuple[subprocess.Popen, str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path])}
    with open(log, "wb") as stream:
        process = subprocess.Popen([sys.executable, "-m", "causal_gym.cli", "serve", "--env", env_id, "--env-kwargs",
                                    json.dumps(env_kwargs), "--port", str(port), *flags], env=environment,
                                   stdout=stream, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while True:
        try:
            urllib.request.urlopen(url + "/health", timeout=5).close()
            return process, url
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"causal-gym serve did not start: {log.read_text()}") from None
            time.sleep(0.3)


async def _client(url: str, k: int, stagger: float) -> str:
    await asyncio.sleep(k * stagger)
    client = GenericEnvClient(base_url=url, message_timeout_s=600)
    try:
        try:
            await client.connect()
        except ConnectionError as exc:
            return "handshake failed" if "handshake" in str(exc) else f"connect: {str(exc)[:60]}"
        result = await client.reset(instance=k % 32)
        for _ in range(3):  # a few calls (an empty submit: some envs refuse it, which is a call too)
            if result.done:
                break
            result = await client.step({"type": "call_tool", "tool_name": "submit", "arguments": {}})
        return "session"
    except RuntimeError as exc:
        return "refused" if "CAPACITY_REACHED" in str(exc) else f"error: {str(exc)[:60]}"
    except Exception as exc:  # noqa: BLE001 -- every outcome is counted
        name = type(exc).__name__
        return "bare close" if name.startswith("ConnectionClosed") else f"{name}: {str(exc)[:60]}"
    finally:
        await client.close()


def scenario(name: str, env_id: str, env_kwargs: dict, clients: int, max_sessions: int, stagger: float,
             flags: list[str], report: bool = True) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "serve.log"
        process, url = _serve(env_id, env_kwargs, ["--max-sessions", str(max_sessions), *flags], log)
        try:
            start = time.perf_counter()

            async def crowd() -> list[str]:
                return await asyncio.gather(*(_client(url, k, stagger) for k in range(clients)))

            outcomes = asyncio.run(crowd())
            wall = time.perf_counter() - start
        finally:
            process.terminate()
            process.wait(timeout=120)
        text = log.read_text()
    counts = collections.Counter(outcomes)
    row = {"scenario": name, **{o: counts.pop(o, 0) for o in OUTCOMES}, "other": dict(counts), "wall_s": wall,
           "log_tracebacks": text.count("Traceback")}
    if report:
        other = ", ".join(f"{v} {k}" for k, v in row["other"].items()) or "-"
        print(f"{name:<76} {row['session']:>7} {row['refused']:>7} {row['bare close']:>10} "
              f"{row['handshake failed']:>9} {row['wall_s']:>7.1f} {row['log_tracebacks']:>10}  {other}", flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=300)
    parser.add_argument("--quick", action="store_true", help="40 clients at a cap of 30 (a smoke run)")
    args = parser.parse_args()
    clients, cap = (40, 30) if args.quick else (args.clients, 256)
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    heavy = ("Heuresis-lg-v0", {"d": 6, "n": 400})
    light = ("CausaLab-3node-v0", {})
    unbounded = ["--env-threads", "100000"]
    for env_id, kwargs in (light, heavy):  # warm the env caches (references), unreported
        scenario("warm-up", env_id, kwargs, 32, 64, 0.0, [], report=False)
    print(f"{'scenario':<76} {'session':>7} {'refused':>7} {'bare close':>10} {'handshake':>9} {'wall s':>7} "
          f"{'tracebacks':>10}  other")
    scenario(f"{clients} at once, cap {cap}, {light[0]}", *light, clients, cap, 0.0, [])
    over = clients + clients // 15  # every client fits: none should be refused
    for label, flags in (("env threads unbounded (reference)", unbounded), ("default env threads", [])):
        scenario(f"{clients} over 20 ms each, cap {over}, Heuresis d=6: {label}", *heavy, clients, over, 0.02, flags)
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
