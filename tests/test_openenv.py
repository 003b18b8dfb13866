"""The OpenEnv server (``causal-gym serve``) played by OpenEnv's own client.

References: the run store of a direct ``causal-gym run`` of the same episodes with the same scripted
model (tests/test_integrations.py's), and, for the 256 concurrent sessions, the same script played on
an in-process :class:`ToolSession` of each episode.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

pytest.importorskip("openenv.core")
pytest.importorskip("openai")
import uvicorn  # noqa: E402
import websockets  # noqa: E402
from openenv.core import GenericEnvClient  # noqa: E402
from test_integrations import CAUSALAB, HEURESIS, direct_run, scripted  # noqa: E402

from causal_gym.integrations.core import EpisodeRef, ToolSession, numeric_scores  # noqa: E402
from causal_gym.integrations.openenv import make_app  # noqa: E402

OBSERVATION_KEYS = {"text", "system_prompt", "tools", "last_turn", "scores", "failure"}


class Server:
    """``make_app`` served by uvicorn in a thread of this process."""

    def __init__(self, env_id, env_kwargs, **options):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        config = uvicorn.Config(make_app(env_id, env_kwargs, **options), host="127.0.0.1", port=self.port,
                                log_level="warning", ws_ping_interval=None)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self):
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(timeout=30)


def next_call(observation, turn):
    """The scripted model's call at ``turn`` given the tools the observation offers."""
    call = scripted({"messages": [{"role": "assistant"}] * turn, "tools": observation["tools"]})
    function = call["message"]["tool_calls"][0]["function"]
    return {"type": "call_tool", "tool_name": function["name"], "arguments": json.loads(function["arguments"])}


async def play(client, row):
    """Play one episode with the scripted model: (observations, summed reward, final observation)."""
    result = await client.reset(**row)
    observations, total, turn = [result.observation], 0.0, 0
    while not result.done:
        result = await client.step(next_call(result.observation, turn))
        observations.append(result.observation)
        total += result.reward
        turn += 1
    return observations, total, result.observation


@pytest.mark.parametrize("env_id, kwargs", [HEURESIS, CAUSALAB])
def test_openenv_client_plays_the_episodes_of_a_direct_run(tmp_path, env_id, kwargs):
    lines, _ = direct_run(tmp_path, env_id, kwargs)

    async def main(url):
        async with GenericEnvClient(base_url=url) as client:
            return [await play(client, {"instance": k, "split": "test", "seed": 0}) for k in sorted(lines)]

    with Server(env_id, kwargs) as server:
        episodes = asyncio.run(main(server.url))
    for instance, (observations, total, final) in zip(sorted(lines), episodes):
        line = lines[instance]
        # the client saw the episode's opening as our agent sends it, and no more than the declared fields
        system, user = line["transcript"][:2]
        assert (observations[0]["system_prompt"], observations[0]["text"]) == (system["content"], user["content"])
        assert all(set(o) == OBSERVATION_KEYS for o in observations)
        assert all(o["scores"] == {} for o in observations[:-1])
        assert total == line["reward"] and final["scores"] == numeric_scores(line["scores"])


def test_openenv_refuses_bad_input_and_the_episode_goes_on():
    env_id, kwargs = CAUSALAB

    async def main(url):
        async with GenericEnvClient(base_url=url) as client:
            with pytest.raises(RuntimeError, match="plays CausaLab-3node-v0"):
                await client.reset(env_id="Heuresis-lg-v0", instance=0)
            with pytest.raises(RuntimeError, match="out of range"):
                await client.reset(instance=10**6)
            start = await client.reset(instance=1)
            bad = await client.step({"type": "call_tool", "tool_name": "intervene", "arguments": {"value": 1}})
            assert not bad.done and "property" in bad.observation["text"]
            good = await client.step(next_call(start.observation, 0))
            assert not good.done and not good.observation["text"].startswith("error")

    with Server(env_id, kwargs) as server:
        asyncio.run(main(server.url))
    with pytest.raises(ValueError, match="not a tool env|no 'submit' tool|not registered|No registered"):
        make_app("CartPole-v1")


def test_256_concurrent_sessions_in_one_process_are_independent_episodes():
    env_id, kwargs = CAUSALAB
    sessions = 256
    rows = [{"instance": i % 32, "repeat": i // 32, "seed": 7} for i in range(sessions)]

    async def main(url):
        clients = [GenericEnvClient(base_url=url, message_timeout_s=300) for _ in rows]
        await asyncio.gather(*(client.connect() for client in clients))
        try:
            starts = await asyncio.gather(*(client.reset(**row) for client, row in zip(clients, rows)))
            # every session is open at once: a 257th is refused at capacity, with the count
            async with websockets.connect(url.replace("http", "ws") + "/ws") as extra:
                refusal = json.loads(await extra.recv())["data"]
            assert (refusal["code"], refusal["active_sessions"]) == ("CAPACITY_REACHED", sessions)
            played = await asyncio.gather(*(play(client, row) for client, row in zip(clients, rows)))
        finally:
            await asyncio.gather(*(client.close() for client in clients))
        return starts, played

    with Server(env_id, kwargs, max_sessions=sessions) as server:
        starts, played = asyncio.run(main(server.url))
    assert len({start.observation["text"] for start in starts}) == 32  # one opening per instance
    for row, (observations, total, final) in zip(rows, played):
        session = ToolSession(EpisodeRef(env_id, row["instance"], seed=7, repeat=row["repeat"]))
        assert session.first_message == observations[0]["text"]
        turn = 0
        while not session.done:
            call = next_call({"tools": session.tools_now()}, turn)
            session.call(call["tool_name"], call["arguments"])
            turn += 1
        assert total == session.total_reward and final["scores"] == session.scores
        session.close()


def test_the_serve_command_serves_the_env():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "causal_gym.cli", "serve", "--env", "Heuresis-lg-v0", "--env-kwargs",
               '{"d": 3, "n": 60}', "--port", str(port), "--max-sessions", "2"]
    server = subprocess.Popen(command, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})

    async def main():
        async with GenericEnvClient(base_url=f"http://127.0.0.1:{port}") as client:
            return await client.reset(instance=3, seed=5)

    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                result = asyncio.run(main())
                break
            except ConnectionError:
                assert server.poll() is None and time.monotonic() < deadline, "causal-gym serve did not start"
                time.sleep(0.5)
    finally:
        server.terminate()
        server.wait(timeout=30)
    session = ToolSession(EpisodeRef("Heuresis-lg-v0", 3, seed=5, env_kwargs={"d": 3, "n": 60}))
    assert result.observation["text"] == session.first_message and not result.done
    session.close()


def test_a_failed_step_ends_the_episode_unscored_not_with_reward_zero():
    from openenv.core.env_server.mcp_types import CallToolAction
    from openenv.core.env_server.serialization import serialize_observation

    from causal_gym.integrations.openenv import ToolSessionEnvironment

    env_id, kwargs = HEURESIS
    environment = ToolSessionEnvironment(env_id, kwargs)
    environment.reset(instance=0)
    secret = "the true graph is X0 -> X1"

    def failing_step(action):
        raise RuntimeError(secret)

    environment.session.env.step = failing_step  # the scorer (or the machine) fails at submit
    for _ in range(2):  # and stays failed
        sent = serialize_observation(environment.step(CallToolAction(tool_name="submit", arguments={})))
        assert sent["done"] and sent["reward"] is None
        assert sent["observation"]["failure"].startswith("the env failed (RuntimeError)")
        assert secret not in json.dumps(sent) and sent["observation"]["scores"] == {}
    environment.close()
