"""Two reproductions small enough to read: CausaLab's Table 7 on one suite, and Heuresis's Table 2 on one
instance. Each is the command a user types; `--out` keeps the printed tables in a file."""

import subprocess
import tempfile
from pathlib import Path

out = Path(tempfile.mkdtemp())
for command in (
    "causal-gym reproduce causalab --settings 3node --instances 10 --workers 1 --quiet --out OUT/causalab",
    "causal-gym reproduce heuresis --difficulty-only --families lg --instances 1 --workers 1 --quiet",
):
    print("$", command)
    done = subprocess.run(command.replace("OUT", str(out)).split(), capture_output=True, text=True, check=True)
    print(done.stdout.strip(), "\n")
print("files under --out:", sorted(path.name for path in (out / "causalab").iterdir()))
