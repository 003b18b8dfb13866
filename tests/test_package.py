"""Package-level promises: importing causal_gym pulls no heavy dependency.

The import time itself is measured by benchmarks/import_time.py (no timing thresholds in tests).
"""

import subprocess
import sys


def _run(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout


def test_import_is_light():
    # Heavy stacks must load lazily: importing causal_gym may not pull torch, causal-learn, lingam or sklearn.
    out = _run(
        "import sys, causal_gym, causal_gym.graphs, causal_gym.metrics, causal_gym.scm, causal_gym.stats, "
        "causal_gym.discovery, causal_gym.agents, causal_gym.eval\n"
        "print(sorted(m for m in ('torch','causallearn','lingam','sklearn','ray','openai') if m in sys.modules))"
    )
    assert out.strip() == "[]"

