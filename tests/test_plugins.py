"""A method developer's paths, run as they run them: scripts in a temporary directory that is not the
repository, a method module of their own on ``PYTHONPATH``, the example plug-in package installed
into a throw-away directory, and the plug-in guide's own snippets (docs/guides/evaluate-your-own.md) as plain scripts.

Each goes through the worker processes the library starts (the spawn pool of ``workers=2``, the
worker of a time-limited menu run), where a method or an agent is known only by what reaches it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]

PCORR = textwrap.dedent('''
    import numpy as np
    from scipy import stats


    def pcorr(data, *, mask=None, alpha=0.01):
        n, d = data.shape
        precision = np.linalg.inv(np.corrcoef(data, rowvar=False))
        partial = -precision / np.sqrt(np.outer(np.diag(precision), np.diag(precision)))
        z = np.arctanh(np.clip(partial, -0.999999, 0.999999)) * np.sqrt(n - d - 1)
        graph = (2 * stats.norm.sf(np.abs(z)) < alpha).astype(np.int8)
        np.fill_diagonal(graph, 0)
        return graph
''')

USER_SCRIPT = textwrap.dedent('''
    """phase 1: every use of the user's method and agents; phase 2: the same after the method was edited."""
    import json, sys, threading
    import gymnasium as gym
    import numpy as np
    import causal_gym
    from causal_gym import _workers, discovery
    from causal_gym.eval.runner import RunConfig, run
    from causal_gym.envs.heuresis.instances import make_instance
    from causal_gym.envs.heuresis.references import run_menu_entry
    from causal_gym.harness.menu import MenuEntry
    import mymethods

    phase, out = sys.argv[1], {}

    def star(data, *, mask=None):  # a method of this script's own: no worker can import it
        d = data.shape[1]
        graph = np.zeros((d, d), dtype=np.int8)
        graph[0, 1:] = 1
        return graph

    discovery.register("star", star)
    instance = make_instance("lg", "test", 0, d=5, n=200)
    # the time-limited worker of the menus (a limit, as the envs' default algorithm_time_limit=300 sets)
    for name in ("mymethods:pcorr", "star"):
        out[name] = np.asarray(run_menu_entry(instance, MenuEntry(name, name), time_limit=300)["graph"]).tolist()
    out["direct"] = {"mymethods:pcorr": mymethods.pcorr(instance.data).tolist(), "star": star(instance.data).tolist()}
    out["worker_used"] = bool(_workers.time_limited_worker_pids())
    # the tool envs' run_algorithm under their default time limit, both menus
    out["tool_results"] = []
    for env_id, kwargs in (("Heuresis-lg-v0", {"d": 5, "n": 200}), ("CausalArena-synthetic-tools-v0", {"d": 10})):
        env = gym.make(env_id, menu=["mymethods:pcorr", "star"], **kwargs)
        env.reset(seed=0)
        for label in env.unwrapped.menu.labels:
            observation, *_ = env.step(env.unwrapped.parse_tool_call("run_algorithm", json.dumps({"algorithm": label})))
            out["tool_results"].append(str(observation["last_result"]))
        env.close()
    # the runner's spawn pool, with the method by import path
    config = RunConfig(("CausalArena-synthetic-v0",), "arena-method", agent_kwargs={"method": "mymethods:pcorr"},
                       instances=(0, 20), env_kwargs={"d": 10, "split": "obs"}, workers=2)
    try:
        summary = run(config, "store", progress=False)
        lines = [json.loads(line) for line in open("store/episodes.jsonl")]
        out["runner"] = {"counts": summary.counts, "usage": [line["usage"] for line in lines]}
    except ValueError as err:
        out["runner"] = {"refused": str(err)}
    if phase == "1":
        # an agent defined in a notebook cell: a namespace that is not sys.modules["__main__"]
        cell = ("import numpy as np\\n"
                "class Submitter:\\n"
                "    def reset(self, task):\\n"
                "        pass\\n"
                "    def act(self, observation, info):\\n"
                "        width = len(observation['variables'])\\n"
                "        return np.ones((width, width), dtype=np.int8) - np.eye(width, dtype=np.int8)\\n")
        namespace = {"__name__": "__main__"}
        exec(cell, namespace)
        summary = run(RunConfig(("CausalArena-synthetic-v0",), namespace["Submitter"], instances=(0, 20),
                                env_kwargs={"d": 10, "split": "obs"}, workers=2), "notebook", progress=False)
        out["notebook"] = summary.counts

        class Locked:
            def __init__(self):
                self.lock = threading.Lock()
            def reset(self, task):
                pass
            def act(self, observation, info):
                return 0
        try:
            RunConfig(("CausalArena-synthetic-v0",), Locked(), workers=2)
        except ValueError as err:
            out["unsendable"] = str(err)
    print(json.dumps(out))
''')


def _env(*paths: Path | str, **extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, paths)), **extra}


def _python(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def _last_json(result: subprocess.CompletedProcess) -> dict:
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_a_method_module_and_agents_of_your_own_work_in_every_worker(tmp_path):
    user = tmp_path / "user"
    user.mkdir()
    (user / "mymethods.py").write_text(PCORR)
    (user / "script.py").write_text(USER_SCRIPT)
    env = _env(user, ROOT, CAUSAL_GYM_CACHE=str(tmp_path / "cache"))

    first = _last_json(_python(["script.py", "1"], user, env))
    assert first["worker_used"]
    for name in ("mymethods:pcorr", "star"):  # the workers' graphs are the function's, computed here directly
        assert first[name] == first["direct"][name]
    assert len(first["tool_results"]) == 4
    assert all(re.match(r"Algorithm [AB] returned \d+ edge", text) for text in first["tool_results"]), first
    assert first["runner"]["counts"] == {"finished": 2}
    digests = {usage["method_code"] for usage in first["runner"]["usage"]}
    assert len(digests) == 1 and re.fullmatch(r"[0-9a-f]{64}", digests.pop())
    assert first["notebook"] == {"finished": 2}
    assert "cannot be sent to worker processes" in first["unsendable"] and "package.module:Factory" in first["unsendable"]

    # the user edits the method: the cached menu runs are not served for it, the run store is not resumed
    (user / "mymethods.py").write_text(PCORR.replace("return graph", "return np.zeros_like(graph)"))
    second = _last_json(_python(["script.py", "2"], user, env))
    assert np.count_nonzero(first["mymethods:pcorr"]) > 0
    assert second["mymethods:pcorr"] == second["direct"]["mymethods:pcorr"] == np.zeros((5, 5), int).tolist()
    assert second["star"] == first["star"]
    refusal = second["runner"]["refused"]
    assert "mymethods:pcorr changed" in refusal and "new output directory" in refusal


HEURESIS_SCRIPT = textwrap.dedent('''
    """mymethods:pcorr as a Heuresis baseline: its rows and its F1 - BCA_phi, on small instances."""
    import json
    from causal_gym.envs.heuresis.references import collect_rows, reference_table
    kwargs = dict(families=("lg",), d=5, n=200, labels=("ges",), workers=1, progress=False,
                  baselines=("mymethods:pcorr",))
    dev, test = collect_rows(split="dev", indices=range(2), **kwargs), collect_rows(split="test", indices=range(3), **kwargs)
    print(json.dumps({"test": test, "table": reference_table(dev, test)}))
''')


def test_a_method_module_gets_its_heuresis_baseline_row(tmp_path):
    from causal_gym.envs.heuresis.instances import make_instance
    from causal_gym.graphs import meek
    from causal_gym.metrics import adjacency_scores

    (tmp_path / "mymethods.py").write_text(PCORR)
    (tmp_path / "script.py").write_text(HEURESIS_SCRIPT)
    out = _last_json(_python(["script.py"], tmp_path, _env(tmp_path, ROOT, CAUSAL_GYM_CACHE=str(tmp_path / "cache"))))
    namespace: dict = {}
    exec(PCORR, namespace)  # the method computed here, on the instances, scored as Heuresis scores a graph
    f1 = [adjacency_scores(instance.hidden.dag, meek(namespace["pcorr"](instance.data))).f1
          for instance in (make_instance("lg", "test", k, d=5, n=200) for k in range(3))]
    assert [row["baselines"]["mymethods:pcorr"]["f1"] for row in out["test"]] == pytest.approx(f1)
    cell = out["table"]["families"]["lg"]
    phi = [row["menu"][cell["bca_phi"]]["f1"] for row in out["test"]]
    gain = cell["baselines"]["mymethods:pcorr"]["residual_gain"]
    assert gain[0] == pytest.approx(np.mean(np.subtract(f1, phi))) and gain[1] <= gain[0] <= gain[2]


def test_a_cycle_of_your_method_is_scored_as_the_arena_scores_cycles(tmp_path):
    """As the paper's methods' cycles: scored as they are (no SID), counted as 'ok with a cycle'."""
    (tmp_path / "cyclic.py").write_text(textwrap.dedent('''
        import numpy as np

        def around(data, *, mask=None):
            d = data.shape[1]
            graph = np.zeros((d, d), dtype=np.int8)
            graph[np.arange(d), (np.arange(d) + 1) % d] = 1  # X0 -> X1 -> ... -> X{d-1} -> X0
            return graph
    '''))
    result = _python(["-m", "causal_gym.cli", "reproduce", "arena", "--quick", "--methods", "cyclic:around",
                      "--families", "chain,tree", "--no-grounded", "--quiet", "--out", "runs", "--json", "out.json"],
                     tmp_path, _env(tmp_path, ROOT, CAUSAL_GYM_CACHE=str(tmp_path / "cache")))
    assert result.returncode == 0, result.stderr[-4000:]
    rows = json.loads((tmp_path / "out.json").read_text())["rows"]
    assert len(rows) == 2 and all(row["status"] == "ok" and row["cyclic"] for row in rows)
    assert all(row["f1"] is not None and row["sid"] is None for row in rows)
    assert re.search(r"cyclic:around/obs +ok 2, ok with a cycle 2", result.stdout)


@pytest.mark.slow
def test_reproduce_heuresis_prints_the_baseline_row_of_a_method_module(tmp_path):
    """The command as its user types it (a minute: PC-KCI at the paper's d = 10, n = 600)."""
    (tmp_path / "mymethods.py").write_text(PCORR)
    result = _python(["-m", "causal_gym.cli", "reproduce", "heuresis", "--quick", "--families", "lg", "--dev", "2",
                      "--test", "2", "--workers", "2", "--baselines", "mymethods:pcorr"], tmp_path,
                     _env(tmp_path, ROOT, CAUSAL_GYM_CACHE=str(tmp_path / "cache")))
    assert result.returncode == 0, result.stderr[-4000:]
    header = next(line for line in result.stdout.splitlines() if "mymethods:pcorr - BCA_phi" in line)
    row = result.stdout.splitlines()[result.stdout.splitlines().index(header) + 1]
    assert row.startswith("lg ") and len(re.findall(r"-?\d\.\d{3} \[", row)) == 3


RAY_SCRIPT = textwrap.dedent('''
    """The method by import path and an agent class of this script's own, played as Ray tasks."""
    import json
    import numpy as np
    import ray
    from causal_gym.eval.runner import RunConfig, run

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)  # one session for both runs

    class Complete:
        def reset(self, task):
            pass
        def act(self, observation, info):
            width = len(observation["variables"])
            return np.ones((width, width), dtype=np.int8) - np.eye(width, dtype=np.int8)

    counts = {}
    for name, agent, kwargs in (("method", "arena-method", {"method": "mymethods:pcorr"}), ("agent", Complete, {})):
        config = RunConfig(("CausalArena-synthetic-v0",), agent, agent_kwargs=kwargs, instances=(0, 20),
                           env_kwargs={"d": 10, "split": "obs"}, backend="ray", workers=2)
        counts[name] = run(config, name, progress=False).counts
    print(json.dumps(counts))
''')


def test_a_method_module_and_a_script_agent_play_on_ray(tmp_path):
    pytest.importorskip("ray")
    (tmp_path / "mymethods.py").write_text(PCORR)
    (tmp_path / "script.py").write_text(RAY_SCRIPT)
    out = _last_json(_python(["script.py"], tmp_path, _env(tmp_path, ROOT, CAUSAL_GYM_CACHE=str(tmp_path / "cache"))))
    assert out == {"method": {"finished": 2}, "agent": {"finished": 2}}


def test_a_missing_extra_stops_the_run_before_its_first_episode(tmp_path):
    blocked = ("import sys; sys.modules['openai'] = None; from causal_gym.cli import main; "
               "sys.exit(main(['run', '--env', 'Heuresis-lg-v0', '--agent', 'llm', '--episodes', '2', '--out', 'run', "
               "'--model', 'm', '--base-url', 'http://127.0.0.1:9/v1', '--env-kwargs', '{\"d\": 4, \"n\": 100}']))")
    result = _python(["-c", blocked], tmp_path, _env(ROOT))
    assert result.returncode == 2
    assert "agent 'llm' needs the package 'openai': pip install 'causal-gym[llm]'" in result.stderr
    assert not (tmp_path / "run" / "episodes.jsonl").exists()


@pytest.fixture(scope="module")
def installed_plugin(tmp_path_factory):
    """The example plug-in, installed as pip installs it (a wheel built from a copy of examples/plugin, its
    entry points in its dist-info) into a throw-away directory put on PYTHONPATH."""
    root = tmp_path_factory.mktemp("plugin")
    source = shutil.copytree(ROOT / "examples" / "plugin", root / "source")
    site = root / "site"
    result = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                             "--target", str(site), str(source)], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    work = root / "work"
    work.mkdir()
    return {"site": site, "work": work, "tests": source / "tests",
            "env": _env(site, ROOT, CAUSAL_GYM_CACHE=str(root / "cache"))}


def test_the_installed_plugin_is_listed_and_its_method_gets_a_row_and_paired_differences(installed_plugin):
    work, env = installed_plugin["work"], installed_plugin["env"]
    listing = _python(["-m", "causal_gym.cli", "list"], work, env)
    assert listing.returncode == 0 and re.search(r"^Skeleton3-v0 ", listing.stdout, re.M)

    result = _python(["-m", "causal_gym.cli", "reproduce", "arena", "--quick", "--methods", "pc,pcorr",
                      "--families", "chain,tree,layered", "--no-grounded", "--out", "runs", "--quiet",
                      "--json", "out.json"], work, env)
    assert result.returncode == 0, result.stderr[-4000:]
    assert re.search(r"^pcorr +obs +\d\.\d\d \(-\)", result.stdout, re.M)  # its row in Table 9's layout
    assert re.search(r"^pcorr on synthetic obs\n.*\n  PC +3 ", result.stdout, re.M)
    output = json.loads((work / "out.json").read_text())
    (paired,) = output["paired_differences"]
    # recomputed from the replicate-averaged rows: the mean of the per-unit differences over the shared units
    f1 = {(row["method"], row["unit"]): row["f1"] for row in output["averaged"]}
    units = sorted({unit for method, unit in f1 if method == "pcorr"})
    differences = [f1[("pcorr", unit)] - f1[("pc", unit)] for unit in units]
    assert paired["opponent"] == "pc" and paired["f1_units"] == 3 == len(differences)
    assert paired["f1_difference"] == pytest.approx(np.mean(differences))
    assert paired["f1_low"] <= paired["f1_difference"] <= paired["f1_high"]


def test_the_plugins_own_checker_tests_pass(installed_plugin):
    work = installed_plugin["work"]
    tests = shutil.copytree(installed_plugin["tests"], work / "tests")
    result = _python(["-m", "pytest", "-q", "-p", "no:cacheprovider", str(tests)], work, installed_plugin["env"])
    assert result.returncode == 0, result.stdout[-4000:]
    assert re.search(r"\b1[0-9] passed", result.stdout) and " failed" not in result.stdout


GUIDE = (ROOT / "docs" / "guides" / "evaluate-your-own.md").read_text()


def _guide_blocks(info: str) -> list[str]:
    return re.findall(rf"^```{re.escape(info)}\n(.*?)^```", GUIDE, flags=re.S | re.M)


def test_the_guides_plugin_snippets_run_as_plain_scripts(tmp_path, installed_plugin):
    scripts = _guide_blocks("python script")
    assert len(scripts) == 2
    for k, script in enumerate(scripts):
        path = tmp_path / f"snippet{k}.py"
        path.write_text(script)
        result = _python([str(path)], tmp_path, _env(ROOT, CAUSAL_GYM_CACHE=str(tmp_path / "cache")))
        assert result.returncode == 0, result.stderr[-4000:]
    assert "CausalArena-synthetic-v0" in result.stdout  # the agent's run summary
    (test,) = _guide_blocks("python test")
    (tmp_path / "test_readme_plugin.py").write_text(test)
    result = _python(["-m", "pytest", "-q", "-p", "no:cacheprovider", "test_readme_plugin.py"], tmp_path,
                     installed_plugin["env"])
    assert result.returncode == 0 and " passed" in result.stdout, result.stdout[-4000:]
