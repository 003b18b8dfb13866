"""Turns at the interpreter for a threaded run's episode threads (causal_gym._turns, issue 32)."""

from __future__ import annotations

import threading
import time

import pytest

import causal_gym._turns as turns_module
from causal_gym._turns import Turns, taking_turns, waiting


def _in_thread(target) -> threading.Thread:
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


def test_waiting_outside_a_threaded_run_does_nothing():
    with waiting():
        with waiting():
            pass


def test_computing_sections_of_two_threads_do_not_overlap():
    turns, spans, lock = Turns(patience=60.0), [], threading.Lock()

    def episode() -> None:
        with taking_turns(turns):
            start = time.perf_counter()
            while time.perf_counter() - start < 0.02:  # compute, and make system calls that let go of the GIL
                time.sleep(0)
            with lock:
                spans.append((start, time.perf_counter()))

    threads = [_in_thread(episode) for _ in range(4)]
    for thread in threads:
        thread.join(30)
    spans.sort()
    assert len(spans) == 4
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(spans, spans[1:]))


def test_a_waiting_thread_lets_another_take_the_turn():
    turns, started, other_ran, done = Turns(patience=60.0), threading.Event(), threading.Event(), threading.Event()

    def waiter() -> None:
        with taking_turns(turns):
            with waiting():
                started.set()
                assert other_ran.wait(20), "the other thread never got the turn"
            done.set()

    def other() -> None:
        with taking_turns(turns):
            other_ran.set()

    first = _in_thread(waiter)
    assert started.wait(20)
    _in_thread(other).join(30)
    first.join(30)
    assert done.is_set() and not turns.held


def test_the_turn_goes_to_the_threads_in_the_order_they_asked():
    """A holder that gives the turn back and asks again at once (an episode thread between two
    requests does) comes after the threads already waiting: a plain lock lets it take the turn
    straight back, and with hundreds of threads some waited seconds (issue 32)."""
    turns, order, lock = Turns(patience=60.0), [], threading.Lock()
    assert turns.take()

    def waiter(name: str) -> None:
        assert turns.take()
        with lock:
            order.append(name)
        turns.give_back()

    threads = []
    for name in ("first", "second", "third"):
        threads.append(_in_thread(lambda name=name: waiter(name)))
        deadline = time.monotonic() + 20
        while len(turns._queue) < len(threads) and time.monotonic() < deadline:  # each asks before the next
            time.sleep(0.001)
    turns.give_back()
    assert turns.take()  # asks again at once: after the three waiting
    with lock:
        order.append("holder again")
    turns.give_back()
    for thread in threads:
        thread.join(30)
    assert order == ["first", "second", "third", "holder again"]
    assert not turns.held


def test_a_holder_that_blocks_without_waiting_stalls_the_others_for_patience_only():
    turns, other_ran = Turns(patience=0.2), threading.Event()

    def blocked_holder() -> None:
        with taking_turns(turns):
            assert other_ran.wait(20), "the other thread waited on a blocked holder"

    holder = _in_thread(blocked_holder)
    while not turns.held:
        time.sleep(0.001)
    def other() -> None:
        with taking_turns(turns):  # returns once the holder has had the turn for patience
            other_ran.set()

    _in_thread(other).join(30)
    holder.join(30)
    assert other_ran.is_set()


def test_the_turn_is_given_back_when_an_episode_raises_inside_waiting():
    turns = Turns(patience=60.0)

    def episode() -> None:
        with pytest.raises(RuntimeError):
            with taking_turns(turns):
                with waiting():
                    raise RuntimeError("the server went away")

    _in_thread(episode).join(30)
    assert not turns.held
    assert turns.take()  # free for the next episode at once
    turns.give_back()


def test_llm_episodes_give_up_their_turn_while_their_request_is_in_flight(tmp_path, monkeypatch):
    """The server holds every episode's first answer for HOLD seconds: agents that give up their turn
    while they wait send all first requests within that time; an agent that kept its turn during the
    round trip would hold the other episodes back until its own had ended (``PATIENCE`` is made a
    minute here, so nothing runs alongside a holder)."""
    pytest.importorskip("openai")
    from causal_gym.eval import RunConfig, RunStore, run
    from fake_openai_server import FakeOpenAIServer, delayed, tool_reply

    monkeypatch.setattr(turns_module, "PATIENCE", 60.0)
    episodes, hold, first_arrivals = 4, 3.0, []

    def responder(request: dict) -> dict:
        if not any(m["role"] == "assistant" for m in request["messages"]):
            first_arrivals.append(time.monotonic())
            return delayed(tool_reply(("summarize", {})), hold)
        return tool_reply(("submit", {}))

    with FakeOpenAIServer(responder=responder) as server:
        kwargs = {"model": "fake", "base_url": server.base_url, "api_key": "k", "tool_mode": "native"}
        config = RunConfig(("Heuresis-lg-v0",), "llm", agent_kwargs=kwargs, instances=range(episodes),
                           env_kwargs={"d": 4, "n": 60}, concurrency=episodes)
        summary = run(config, tmp_path / "run", progress=False)
    lines = RunStore(tmp_path / "run").episodes()
    assert summary.complete and all(line["status"] == "finished" for line in lines), [line["error"] for line in lines]
    assert len(first_arrivals) == episodes
    assert max(first_arrivals) - min(first_arrivals) < hold


def test_a_custom_agent_that_waits_in_waiting_lets_the_others_in(tmp_path, monkeypatch):
    """Four episodes whose agents meet inside ``causal_gym.agents.waiting()``: the run completes only if
    each waiting agent gives up its turn (``PATIENCE`` is a minute, so nothing runs alongside a holder)."""
    from causal_gym.eval import RunConfig, RunStore, run

    monkeypatch.setattr(turns_module, "PATIENCE", 60.0)
    monkeypatch.setenv("MEETING_AGENTS", "4")
    config = RunConfig(("Heuresis-lg-v0",), "runner_agents:MeetingAgent", instances=range(4),
                       env_kwargs={"d": 4, "n": 60}, concurrency=4)
    summary = run(config, tmp_path / "run", progress=False)
    lines = RunStore(tmp_path / "run").episodes()
    assert summary.complete, [line["error"] for line in lines]
