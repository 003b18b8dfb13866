"""Reproduce CausaLab's Table 7 with the three scripted baselines on the published suites.

Usage
-----
    causal-gym reproduce causalab --quick      # 3node, 4node, 4node-freqparent; 10 instances each
    causal-gym reproduce causalab              # every published setting, 50 instances each
    causal-gym reproduce causalab --settings 4node,4node-quad --instances 20 --out runs/causalab

The baselines (:mod:`causal_gym.envs.causalab.baselines`, registry names ``causalab-observe``,
``causalab-random``, ``causalab-systematic``) play every instance of each setting's test suite
through :func:`causal_gym.eval.runner.run`, one run store per (agent, setting) under ``--out``
(default: a temporary directory removed afterwards; give ``--out`` to keep the stores, which
``causal-gym report`` reads and a rerun resumes). The table is
:func:`causal_gym.envs.causalab.report.causalab_agent_table`; the paper reports LLM agents only, so its
GPT-5-mini rows of the main suites are printed below ours as context, not as targets. A setting
without a registered id of its own plays through the id with its node count and
``setting=<name>`` (e.g. ``CausaLab-4node-v0`` with ``setting="4node-hidden-n2"``). The full run
(every setting x 50 instances x 3 agents) takes well under a minute on one core.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from causal_gym.envs.causalab.suites import SETTINGS, SUITE_SIZE

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "BASELINES",
    "QUICK_SETTINGS",
    "QUICK_INSTANCES",
    "PAPER_TABLE7",
    "env_for",
    "run_baselines",
    "print_table",
    "main",
]

BASELINES = ("causalab-observe", "causalab-random", "causalab-systematic")
"""Registry names of the scripted CausaLab agents, in print order."""

QUICK_SETTINGS = ("3node", "4node", "4node-freqparent")
"""Settings of ``--quick``."""

QUICK_INSTANCES = 10
"""Instances per setting of ``--quick`` (the full run plays the whole suite, :data:`SUITE_SIZE`)."""

# Table 7 of the paper, GPT-5-mini on the main suites: accuracy (share), root F1, all-edge F1, SHD,
# freq-edge F1, freq-weight F1.
PAPER_TABLE7 = {
    "3node": {"accuracy": 0.90, "root_f1": 0.727, "edge_f1": 0.889, "shd": 0.458, "freq_edge_f1": 0.907,
              "freq_weight_f1": 0.890},
    "4node": {"accuracy": 0.48, "root_f1": 0.559, "edge_f1": 0.793, "shd": 1.766, "freq_edge_f1": 0.812,
              "freq_weight_f1": 0.589},
    "5node": {"accuracy": 0.18, "root_f1": 0.413, "edge_f1": 0.697, "shd": 3.543, "freq_edge_f1": 0.687,
              "freq_weight_f1": 0.468},
    "6node": {"accuracy": 0.24, "root_f1": 0.379, "edge_f1": 0.628, "shd": 5.490, "freq_edge_f1": 0.679,
              "freq_weight_f1": 0.455},
    "7node": {"accuracy": 0.16, "root_f1": 0.353, "edge_f1": 0.519, "shd": 7.511, "freq_edge_f1": 0.585,
              "freq_weight_f1": 0.418},
}


def env_for(setting: str) -> tuple[str, dict[str, Any]]:
    """The env id and ``gym.make`` keyword arguments that play ``setting``.

    Examples
    --------
    >>> env_for("4node-quad")
    ('CausaLab-4node-quad-v0', {})
    >>> env_for("4node-hidden-n2")
    ('CausaLab-4node-v0', {'setting': '4node-hidden-n2'})
    """
    from causal_gym.envs.causalab.spec import SETTINGS_BY_ID

    if setting not in SETTINGS:
        raise ValueError(f"unknown CausaLab setting {setting!r}; choose from {', '.join(SETTINGS)}")
    own = [env_id for env_id, name in SETTINGS_BY_ID.items() if name == setting]
    if own:
        return own[0], {}
    return f"CausaLab-{SETTINGS[setting].n_nodes}node-v0", {"setting": setting}


def run_baselines(
    settings: Sequence[str],
    instances: int,
    out_dir: str | Path,
    agents: Sequence[str] = BASELINES,
    workers: int = 1,
    progress: bool = True,
) -> list[Path]:
    """Play ``agents`` on test instances ``0 .. instances - 1`` of every setting; one run store each.

    Returns
    -------
    list of Path
        The run stores, ``out_dir/<agent>/<setting>``, in (agent, setting) order.
    """
    from causal_gym.eval.runner import RunConfig, run

    if isinstance(instances, bool) or not isinstance(instances, int) or not 1 <= instances <= SUITE_SIZE:
        raise ValueError(f"instances must be an integer in 1..{SUITE_SIZE}, got {instances!r}")
    stores = []
    for agent in agents:
        for setting in settings:
            env_id, env_kwargs = env_for(setting)
            config = RunConfig((env_id,), agent, instances=range(instances), split="test", env_kwargs=env_kwargs,
                               workers=workers)
            store = Path(out_dir) / agent / setting
            run(config, store, progress=progress)
            stores.append(store)
    return stores


def print_table(stores: Sequence[Path]) -> pd.DataFrame:
    """Table 7 of the baselines' run stores, then the paper's GPT-5-mini rows of the settings present."""
    from causal_gym.envs.causalab.report import causalab_agent_table
    from causal_gym.eval.report import load_runs
    from causal_gym.tables import format_table

    table = causalab_agent_table(load_runs(*stores))
    print("\nTable 7 -- scripted baselines on the published suites (accuracy with a 95% bootstrap interval over "
          "episodes)")
    print(format_table(table))
    paper = [(s, PAPER_TABLE7[s]) for s in dict.fromkeys(table["setting"]) if s in PAPER_TABLE7]
    if paper:
        print("\nPaper, GPT-5-mini (Table 7; an LLM agent, context only)")
        names = list(paper[0][1])
        print(f"{'setting':9} " + " ".join(f"{name:>14}" for name in names))
        for setting, row in paper:
            print(f"{setting:9} " + " ".join(f"{row[name]:>14.3f}" for name in names))
    return table


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> None:
    """Parse ``argv`` (default: sys.argv), run the baselines and print the table."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help=f"{', '.join(QUICK_SETTINGS)} with {QUICK_INSTANCES} instances each")
    parser.add_argument("--settings", help="comma-separated settings (default: every published one; quick: "
                        f"{','.join(QUICK_SETTINGS)})")
    parser.add_argument("--instances", type=int, help=f"instances per setting (default {SUITE_SIZE}, quick "
                        f"{QUICK_INSTANCES})")
    parser.add_argument("--out", help="keep the run stores here (default: a temporary directory)")
    parser.add_argument("--workers", type=int, default=1, help="episodes at once (default 1: in this process)")
    parser.add_argument("--quiet", action="store_true", help="no progress output")
    args = parser.parse_args(argv)

    if args.settings:
        settings = tuple(filter(None, (s.strip() for s in args.settings.split(","))))
    else:
        settings = QUICK_SETTINGS if args.quick else tuple(SETTINGS)
    for setting in settings:
        env_for(setting)  # unknown names fail before any episode
    instances = args.instances if args.instances is not None else (QUICK_INSTANCES if args.quick else SUITE_SIZE)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="causalab-reproduce-") as scratch:
        stores = run_baselines(settings, instances, args.out or scratch, workers=args.workers, progress=not args.quiet)
        print_table(stores)
    where = f"; run stores in {args.out}" if args.out else ""
    print(f"\n{len(settings)} setting(s) x {instances} instance(s) x {len(BASELINES)} agents; "
          f"{time.perf_counter() - start:.0f} s{where}")


if __name__ == "__main__":
    main()
