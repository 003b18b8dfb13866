"""Rewrite a guide script's transcript: run ``NAME.py`` as a user would and keep what it prints in ``NAME.txt``.

Usage: python docs/guides/scripts/refresh.py NAME [NAME ...]   (from any directory)
"""

import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

for name in sys.argv[1:] or sys.exit(__doc__):
    with tempfile.TemporaryDirectory() as scratch:  # not the repository, as a user's directory
        done = subprocess.run([sys.executable, str(HERE / f"{name}.py")], capture_output=True, text=True,
                              cwd=scratch, check=False)
    if done.returncode:
        sys.exit(f"{name}.py failed:\n{done.stderr[-3000:]}")
    (HERE / f"{name}.txt").write_text(done.stdout)
    print(f"{name}.txt: {len(done.stdout.splitlines())} lines")
