"""A local OpenAI-compatible chat-completions server that replays a script, for testing LLM agents.

The server (stdlib ``http.server`` in a daemon thread, on 127.0.0.1 and a free port) answers every
``POST .../chat/completions`` with the next item of its script — a completion with tool calls, a
text completion, or an HTTP error — and records each request (path, headers, raw body) so tests can
check what the client sent. When the script runs out it answers 400, which no client retries.

    with FakeOpenAIServer([tool_reply(("ci_test", {"x": "X0", "y": "X1"})), error_reply(500)]) as server:
        client = OpenAI(base_url=server.base_url, api_key="k")
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeOpenAIServer", "RecordedRequest", "delayed", "error_reply", "raw_text_reply", "text_reply", "tool_reply"]

_RAW_MARK = "\u0000raw content\u0000"  # stands for the bytes of a raw_text_reply in the JSON body


def _usage(usage: tuple[int, int] | None) -> dict[str, int] | None:
    if usage is None:
        return None
    return {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": usage[0] + usage[1]}


def tool_reply(*calls: tuple[str, Any], usage: tuple[int, int] | None = (10, 5), content: str | None = None) -> dict:
    """A completion with one tool call per ``(name, arguments)``; a dict is sent as JSON, a string as is
    (so malformed JSON can be scripted). ``usage`` is ``(prompt_tokens, completion_tokens)``."""
    tool_calls = [
        {"type": "function", "function": {"name": name, "arguments": a if isinstance(a, str) else json.dumps(a)}}
        for name, a in calls
    ]
    message = {"role": "assistant", "content": content, "tool_calls": tool_calls}
    return {"status": 200, "message": message, "finish_reason": "tool_calls", "usage": _usage(usage)}


def text_reply(content: str, usage: tuple[int, int] | None = (10, 5)) -> dict:
    """A completion whose message is plain text."""
    message = {"role": "assistant", "content": content}
    return {"status": 200, "message": message, "finish_reason": "stop", "usage": _usage(usage)}


def raw_text_reply(content: bytes, usage: tuple[int, int] | None = (10, 5)) -> dict:
    """A text completion whose content is these bytes, put into the JSON body unescaped (so bytes that
    are not UTF-8 can be scripted, as a server that passes a broken token through would send them)."""
    return {**text_reply(_RAW_MARK, usage), "raw": content}


def delayed(item: dict, seconds: float) -> dict:
    """``item`` answered after ``seconds`` (a slow server)."""
    return {**item, "delay": seconds}


def error_reply(status: int, message: str = "scripted failure", headers: Mapping[str, str] | None = None) -> dict:
    """An HTTP error with an OpenAI-style error body."""
    return {"status": status, "error": message, "headers": dict(headers or {})}


class _Server(ThreadingHTTPServer):
    """A listen backlog as deep as real servers' (uvicorn: 2048): http.server's default of 5 drops the
    connections of a burst of clients, which retry after a second (TCP's SYN timeout)."""

    request_queue_size = 2048


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it (header names lower-cased)."""

    path: str
    headers: dict[str, str]
    body: str

    @property
    def json(self) -> Any:
        return json.loads(self.body)


class FakeOpenAIServer:
    """Replays ``script`` (items from :func:`tool_reply`, :func:`text_reply`, :func:`error_reply`).

    Use as a context manager, or call :meth:`start` and :meth:`close`. ``requests`` lists every
    request received, failed ones included; ``served`` counts script items used. ``latency`` delays
    every answer; ``default`` answers once the script is used up; ``responder(request_json)`` replaces
    the script (for many concurrent conversations).
    """

    def __init__(
        self, script: Iterable[dict] = (), latency: float = 0.0, default: dict | None = None,
        responder: Callable[[dict], dict] | None = None,
    ) -> None:
        self.script = list(script)
        self.latency = latency
        self.default = default
        self.responder = responder
        self.requests: list[RecordedRequest] = []
        self.served = 0
        self._lock = threading.Lock()
        self._ids = itertools.count()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("the server is not running")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> FakeOpenAIServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            # as real servers do: connections kept open between requests, and each answer written in
            # one piece (headers and body in two writes could wait on a delayed ACK, 40 ms)
            protocol_version = "HTTP/1.1"
            wbufsize = -1
            disable_nagle_algorithm = True

            def do_POST(self) -> None:  # noqa: N802  (http.server's naming)
                body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode("utf-8")
                headers = {k.lower(): v for k, v in self.headers.items()}
                status, payload, headers, delay = server._respond(self.path, headers, body)
                if delay:
                    time.sleep(delay)
                raw = payload.pop("raw", None)
                data = json.dumps(payload).encode("utf-8")
                if raw is not None:
                    data = data.replace(json.dumps(_RAW_MARK).encode("utf-8")[1:-1], raw)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
                pass

        self._httpd = _Server(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._thread.join(timeout=5)
            self._httpd = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _respond(self, path: str, headers: dict[str, str], body: str) -> tuple[int, dict, dict[str, str], float]:
        with self._lock:
            self.requests.append(RecordedRequest(path, headers, body))
            if not path.endswith("/chat/completions"):
                return 404, {"error": {"message": f"no route {path}", "type": "not_found"}}, {}, 0.0
            if self.responder is not None:
                item = self.responder(json.loads(body))
            elif self.served >= len(self.script) and self.default is None:
                return 400, {"error": {"message": "fake server: script exhausted", "type": "invalid_request"}}, {}, 0.0
            else:
                item = self.script[self.served] if self.served < len(self.script) else self.default
            self.served += 1
            delay = self.latency + item.get("delay", 0.0)
            if item["status"] != 200:
                error = {"message": item["error"], "type": "scripted", "code": None}
                return item["status"], {"error": error}, item["headers"], delay
            model = json.loads(body).get("model", "fake")
            message = json.loads(json.dumps(item["message"]))
            for call in message.get("tool_calls") or []:
                call["id"] = f"call_{next(self._ids)}"
            payload = {
                "id": f"chatcmpl-{self.served}",
                "object": "chat.completion",
                "created": 0,
                "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": item["finish_reason"]}],
            }
            if item["usage"] is not None:
                payload["usage"] = item["usage"]
            if "raw" in item:
                payload["raw"] = item["raw"]
            return 200, payload, {}, delay
