"""The OpenEnv server (``causal-gym serve``) played by OpenEnv's own client, and attacked.

References: the run store of a direct ``causal-gym run`` of the same episodes with the same scripted
model (tests/test_integrations.py's), and, for the 256 concurrent sessions and the sealed episodes,
the same script played on an in-process :class:`ToolSession` of each episode. The session and seal
attacks of issue 44 and the capacity checks of issue 48 run against ``causal-gym serve`` in a process
of its own, through OpenEnv's client, raw WebSockets, raw HTTP and a raw TCP socket.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from types import SimpleNamespace

import pytest

pytest.importorskip("openenv.core")
pytest.importorskip("openai")
import uvicorn  # noqa: E402
import websockets  # noqa: E402
from openenv.core import GenericEnvClient  # noqa: E402

from causal_gym import cli  # noqa: E402
from causal_gym.cli import build_parser  # noqa: E402
from causal_gym.eval.report import load_runs  # noqa: E402
from causal_gym.eval.store import RunStore  # noqa: E402
from causal_gym.integrations.core import EpisodeRef, ToolSession, numeric_scores  # noqa: E402
from causal_gym.integrations.openenv import SESSION_TIMEOUT, make_app  # noqa: E402
from causal_gym.seal import OPEN, SEAL_ENV, Seal  # noqa: E402
from test_integrations import CAUSALAB, HEURESIS, direct_run, scripted  # noqa: E402

OBSERVATION_KEYS = {"text", "system_prompt", "tools", "last_turn", "scores", "failure"}


class Server:
    """``make_app`` served by uvicorn in a thread of this process."""

    def __init__(self, env_id, env_kwargs, **options):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        config = uvicorn.Config(make_app(env_id, env_kwargs, **{"seal": OPEN, **options}), host="127.0.0.1", port=self.port,
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


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def served(tmp_path, *flags, seal_env=None):
    """``causal-gym serve *flags`` in a process of its own (from ``tmp_path``, with ``CAUSAL_GYM_SEAL`` set to
    ``seal_env`` or unset), up and answering; yields its url, port and log (its stdout and stderr)."""
    port = free_port()
    log = tmp_path / f"serve-{port}.log"
    env = {key: value for key, value in os.environ.items() if key != SEAL_ENV}
    env.update({"PYTHONPATH": os.pathsep.join(sys.path), **({} if seal_env is None else {SEAL_ENV: seal_env})})
    with open(log, "wb") as stream:
        process = subprocess.Popen([sys.executable, "-m", "causal_gym.cli", "serve", "--port", str(port), *flags],
                                   cwd=tmp_path, env=env, stdout=stream, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(url + "/health", timeout=5).close()
                break
            except OSError:
                assert process.poll() is None, f"causal-gym serve exited: {log.read_text()}"
                assert time.monotonic() < deadline, "causal-gym serve did not start"
                time.sleep(0.3)
        yield SimpleNamespace(url=url, port=port, log=log, process=process)
    finally:
        process.terminate()
        process.wait(timeout=60)


def rpc(url, method, **params):
    """One JSON-RPC request to the server's HTTP MCP endpoint, as a raw HTTP client sends it."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    request = urllib.request.Request(url + "/mcp", data=body, headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def raw_websocket(port):
    """A WebSocket opened by hand on a TCP socket that then reads nothing, so it answers no ping."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                 f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode())
    assert sock.recv(4096).startswith(b"HTTP/1.1 101")
    return sock


async def try_reset(url, **row):
    """A fresh client's reset: its observation, or the exception that refused it (the client is closed)."""
    async with GenericEnvClient(base_url=url) as client:
        try:
            return await client.reset(**row)
        except Exception as exc:  # noqa: BLE001 -- the refusal is the result
            return exc


def capacity_refusal(result):
    return isinstance(result, RuntimeError) and "CAPACITY_REACHED" in str(result)


def test_the_serve_command_serves_the_env(tmp_path):
    with served(tmp_path, "--env", "Heuresis-lg-v0", "--env-kwargs", '{"d": 3, "n": 60}', "--max-sessions", "2") as server:
        result = asyncio.run(try_reset(server.url, instance=3, seed=5))
    session = ToolSession(EpisodeRef("Heuresis-lg-v0", 3, seed=5, env_kwargs={"d": 3, "n": 60}))
    assert result.observation["text"] == session.first_message and not result.done
    session.close()
    assert build_parser().parse_args(["serve", "--env", "x"]).session_timeout == SESSION_TIMEOUT == 60


def test_http_sessions_neither_lock_websocket_clients_out_nor_outlive_their_timeout(tmp_path):
    """Issue 44's lock-out: four sessions made over HTTP (``openenv/session/create``, no WebSocket) filled
    ``--max-sessions 4`` and every WebSocket client was refused, for good."""
    timeout = 3
    with served(tmp_path, "--env", "CausaLab-3node-v0", "--max-sessions", "4", "--session-timeout", str(timeout)) as server:
        ids = [rpc(server.url, "openenv/session/create")["result"]["session_id"] for _ in range(4)]
        fifth = rpc(server.url, "openenv/session/create")  # HTTP sessions have an allowance of their own
        assert "at capacity" in fifth["error"]["message"] and fifth["error"]["data"]["max_sessions"] == 4

        async def four_and_one_more():
            clients = [GenericEnvClient(base_url=server.url) for _ in range(5)]
            results = [await client.reset(instance=k) for k, client in enumerate(clients[:4])]
            results.append(await try_reset(server.url, instance=4))  # while the four hold their sessions
            await asyncio.gather(*(client.close() for client in clients))
            return results

        results = asyncio.run(four_and_one_more())
        assert all(not r.done for r in results[:4]) and capacity_refusal(results[4])
        # an HTTP session used now and then lives on; the idle ones are closed after the timeout
        deadline = time.monotonic() + 60
        while True:
            assert "support MCP" in rpc(server.url, "tools/list", session_id=ids[0])["error"]["message"]
            if "error" not in rpc(server.url, "openenv/session/create"):
                break
            assert time.monotonic() < deadline, "idle HTTP sessions were not closed"
            time.sleep(0.5)
        for _ in range(2):  # three places were free: the one just taken, two more, then the active session's
            assert "result" in rpc(server.url, "openenv/session/create")
        assert "at capacity" in rpc(server.url, "openenv/session/create")["error"]["message"]
        assert "Unknown session_id" in rpc(server.url, "tools/list", session_id=ids[1])["error"]["message"]
        assert "support MCP" in rpc(server.url, "tools/list", session_id=ids[0])["error"]["message"]
    assert "Traceback" not in server.log.read_text()


def test_a_websocket_client_that_stops_answering_loses_its_session(tmp_path):
    """A client whose socket stays open but which answers no ping (frozen, or gone behind a dead link)
    holds its session only until the keepalive gives up, within ``--session-timeout``."""
    with served(tmp_path, "--env", "CausaLab-3node-v0", "--max-sessions", "1", "--session-timeout", "3") as server:
        silent = raw_websocket(server.port)
        try:
            deadline = time.monotonic() + 60
            while not capacity_refusal(result := asyncio.run(try_reset(server.url))):  # its session exists
                assert time.monotonic() < deadline, f"the silent client never held its session: {result!r}"
                time.sleep(0.2)
            while capacity_refusal(result := asyncio.run(try_reset(server.url))):
                assert time.monotonic() < deadline, "the silent client kept its session"
                time.sleep(0.5)
            assert not result.done
        finally:
            silent.close()
    assert "Traceback" not in server.log.read_text()


def test_past_capacity_each_client_gets_a_session_or_openenv_capacity_error_and_the_log_stays_clean(tmp_path):
    """Issue 48: at capacity OpenEnv's client met a bare 1000 close, and every close logged a traceback.
    ``cap + 10`` clients at once (tests/test_openenv.py's slow test and benchmarks/openenv_capacity.py: 300)."""
    cap = 4
    with served(tmp_path, "--env", "CausaLab-3node-v0", "--max-sessions", str(cap)) as server:
        sessions, refusals, raw_close = asyncio.run(crowd(server.url, cap + 10, raw_at_capacity=True))
        # clients that leave abruptly: a TCP close with no WebSocket close, a close with no OpenEnv 'close'
        raw_websocket(server.port).close()

        async def plain_close():
            async with websockets.connect(server.url.replace("http", "ws") + "/ws") as ws:
                await ws.send(json.dumps({"type": "reset", "data": {"instance": 1}}))
                await ws.recv()

        asyncio.run(plain_close())
        time.sleep(1)
    assert (sessions, len(refusals)) == (cap, 10) and all(capacity_refusal(r) for r in refusals)
    assert raw_close.code == 1013 and "at capacity" in raw_close.reason  # after the refusal message
    log = server.log.read_text()
    assert not any(word in log for word in ("Traceback", "ERROR", "Exception")), log


async def crowd(url, clients, raw_at_capacity=False):
    """``clients`` OpenEnv clients reset at once; those served play their episode to the end while the others
    are refused. Returns (episodes played, the refusals, and the close a raw client met at capacity)."""
    members = [GenericEnvClient(base_url=url, message_timeout_s=300) for _ in range(clients)]
    try:
        results = await asyncio.gather(*(m.reset(instance=k % 32) for k, m in enumerate(members)),
                                       return_exceptions=True)
        raw_close = None
        if raw_at_capacity:  # OpenEnv's refusal as a raw WebSocket client reads it: the message, then a 1013 close
            async with websockets.connect(url.replace("http", "ws") + "/ws") as raw:
                refusal = json.loads(await raw.recv())["data"]
                assert refusal["code"] == "CAPACITY_REACHED" and refusal["max_sessions"] == refusal["active_sessions"]
                await raw.send(json.dumps({"type": "reset", "data": {}}))
                with pytest.raises(websockets.ConnectionClosed) as closed:
                    await raw.recv()
                raw_close = closed.value.rcvd
        served_members = [(m, r) for m, r in zip(members, results) if not isinstance(r, BaseException)]

        async def finish(member, result, turn=0):
            while not result.done:
                result = await member.step(next_call(result.observation, turn))
                turn += 1
            return result

        ends = await asyncio.gather(*(finish(m, r) for m, r in served_members))
        assert all(end.observation["scores"] for end in ends)
        return len(ends), [r for r in results if isinstance(r, BaseException)], raw_close
    finally:
        await asyncio.gather(*(m.close() for m in members))


SECRET = "the secret of the sealed server tests"
SUMMARIZE = {"type": "call_tool", "tool_name": "summarize", "arguments": {}}


def test_a_sealed_server_chooses_each_episode_plays_it_once_and_keeps_its_scores(tmp_path):
    """Issue 44's replay: under a seal, a client reset one sealed instance again and again (split, instance and
    repeat in the reset row) and read its scores: the skeleton of sealed test instance 5 in 6 episodes."""
    env_id, kwargs = "Heuresis-lg-v0", {"d": 4, "n": 200}
    seal_file, out = tmp_path / "seal", tmp_path / "sealed-run"
    seal_file.write_text(SECRET)
    flags = ("--env", env_id, "--env-kwargs", json.dumps(kwargs), "--seal-file", str(seal_file), "--out", str(out),
             "--episodes", "4")
    probes = [f"X{x} -- X{y}" for x, y in itertools.combinations(range(4), 2)]

    async def attack(url):
        async with GenericEnvClient(base_url=url) as client:
            for row in ({"split": "test", "instance": 5, "repeat": 0}, {"instance": 5}, {"repeat": 1}, {"seed": 3},
                        {"split": "open"}, {"env_kwargs": "{}"}):
                with pytest.raises(RuntimeError, match="the server chooses each episode"):
                    await client.reset(**row)
            results = []
            for edges in [*probes[:2], None]:  # the skeleton probe: one pair per episode, from its scores
                results += [await client.reset(), await client.step(SUMMARIZE)]  # the data each episode shows
                if edges:
                    results.append(await client.step({"type": "call_tool", "tool_name": "submit",
                                                      "arguments": {"edges": edges}}))
            # the third is left unfinished: the next reset ends it as the env ends one whose agent stops
            results.append(await client.reset())  # and the fourth's client leaves: the server ends it
        async with GenericEnvClient(base_url=url) as client:
            with pytest.raises(RuntimeError, match="handed out all its episodes"):
                await client.reset()
        return results

    with served(tmp_path, *flags) as server:
        results = asyncio.run(attack(server.url))
        with pytest.raises(urllib.error.HTTPError, match="404"):  # no stateless HTTP episodes under a seal
            urllib.request.urlopen(urllib.request.Request(server.url + "/reset", data=b"{}", method="POST"))
    assert [r.done for r in results] == [False, False, True, False, False, True, False, False, False]
    assert all(r.reward is None and r.observation["scores"] == {} for r in results)  # nothing to read back

    # the plan's episodes, each once, as an in-process session of the same sealed episode plays them
    seal = Seal(SECRET)
    summaries = [results[k].observation["text"] for k in (1, 4, 7)]
    assert len(set(summaries)) == 3
    references = []
    for instance, edges in enumerate([*probes[:2], None, None]):
        session = ToolSession(EpisodeRef(env_id, instance, env_kwargs=kwargs), seal=seal)
        if instance < 3:
            assert session.call("summarize", {}) == summaries[instance]
        else:
            assert session.first_message == results[-1].observation["text"]
        session.call("submit", {"edges": edges}) if edges else session.finish()
        references.append(session)
    published = ToolSession(EpisodeRef(env_id, 0, env_kwargs=kwargs), seal=OPEN)
    assert published.call("summarize", {}) != summaries[0]  # sealed data, not the published instance 0
    published.close()
    lines = RunStore(out).episodes()
    keys = [f"{env_id}|test|{k}|0" for k in range(4)]
    assert sorted({line["key"] for line in lines}) == keys
    for key, reference in zip(keys, references):
        handed, final = [line for line in lines if line["key"] == key]  # marked when handed out, then final
        assert handed["status"] == "interrupted" and final["status"] == reference.record().status
        assert numeric_scores(final["scores"]) == reference.scores and final["reward"] == reference.total_reward
        assert final["seal"] == seal.fingerprint and final["agent"] == "openenv"
        reference.close()
    assert [line["status"] for line in RunStore(out).latest().values()] == ["finished"] * 2 + ["rescued"] * 2
    assert SECRET not in (out / "run.json").read_text() + (out / "episodes.jsonl").read_text()
    frame = load_runs(out)  # causal-gym report reads the store
    assert sorted(frame["instance"]) == [0, 1, 2, 3] and set(frame["seal"]) == {seal.fingerprint}

    # a restarted server resumes the store: nothing is handed out twice
    with served(tmp_path, *flags) as server:
        assert "handed out all its episodes" in str(asyncio.run(try_reset(server.url)))
    assert len(RunStore(out).episodes()) == len(lines)


def test_serve_refuses_a_seal_without_a_store_and_a_store_without_a_seal(tmp_path, monkeypatch, capsys):
    def refusal(*flags):
        with pytest.raises(SystemExit) as exited:
            cli.main(["serve", "--env", "CausaLab-3node-v0", *flags])
        assert exited.value.code == 2
        return capsys.readouterr().err

    monkeypatch.setenv(SEAL_ENV, SECRET)  # a seal in the environment makes the server sealed, not client-chosen
    assert "give it a run store and a number of episodes" in refusal()
    assert "give it a run store" in refusal("--out", str(tmp_path / "a"))
    monkeypatch.delenv(SEAL_ENV)
    assert "for a sealed server" in refusal("--out", str(tmp_path / "b"), "--episodes", "2")
    assert "for a sealed server" in refusal("--open", "--episodes", "2")
    assert "not in env_kwargs" in refusal("--env-kwargs", json.dumps({"seal": SECRET}))
    seal_file = tmp_path / "seal"
    seal_file.write_text(SECRET)
    sealed = ("--seal-file", str(seal_file), "--out", str(tmp_path / "c"))
    assert "session_timeout" in refusal(*sealed, "--episodes", "2", "--session-timeout", "0")
    assert "episodes" in refusal(*sealed, "--episodes", "0")
    assert not (tmp_path / "c" / "run.json").exists()  # nothing written for a refused configuration
    assert RunStore(tmp_path / "a").read_config() is None


@pytest.mark.slow
def test_300_clients_at_once_each_get_a_session_or_openenv_capacity_error(tmp_path):
    """Issue 48's crowd: 300 clients at the default cap of 256."""
    with served(tmp_path, "--env", "CausaLab-3node-v0") as server:
        sessions, refusals, _ = asyncio.run(crowd(server.url, 300))
    assert (sessions, len(refusals)) == (256, 44) and all(capacity_refusal(r) for r in refusals)
    assert "Traceback" not in server.log.read_text()


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
