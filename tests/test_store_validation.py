"""What a new user, a corrupted store and an attacker met: episodes beyond a suite, a deleted run.json, a
hand-edited line, links planted in a shared run or report folder; each is refused up front with a message
that names the problem, and nothing is written."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from causal_gym.envs.arena.scenarios.formula import FORMULA_SCENARIOS
from causal_gym.eval.runner import RunConfig, run
from causal_gym.eval.store import RUN_FILE, RunStore

pytestmark = pytest.mark.usefixtures("isolated_cache")  # one fresh cache for the module (tests/conftest.py)


LAB = RunConfig(("CausaLab-3node-v0",), "causalab-systematic", instances=range(2))


def test_a_line_without_scores_does_not_crash_the_summary(tmp_path: Path) -> None:
    run(LAB, tmp_path / "run", progress=False)
    path = RunStore(tmp_path / "run").episodes_path
    lines = [json.loads(text) for text in path.read_text().splitlines()]
    del lines[1]["scores"], lines[1]["reward"]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    summary = run(LAB, tmp_path / "run", progress=False)
    assert summary.complete and summary.played == 0


def test_a_store_without_run_json_is_not_adopted(tmp_path: Path) -> None:
    run(LAB, tmp_path / "run", progress=False)
    (tmp_path / "run" / RUN_FILE).unlink()
    other = RunConfig(("CausaLab-3node-v0",), "causalab-random", instances=range(2))
    with pytest.raises(ValueError, match="no run.json"):
        run(other, tmp_path / "run", progress=False)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda line: {**line, "scores": [1, 2]}, "field 'scores' is a list"),
        (lambda line: {**line, "key": "CausaLab-3node-v0|test|9|0"}, "not an episode of this run"),
        (lambda line: [line], "not a JSON object"),
    ],
    ids=["wrong-type", "foreign-key", "not-an-object"],
)
def test_a_malformed_line_is_refused_naming_the_line(tmp_path: Path, edit, message) -> None:
    run(LAB, tmp_path / "run", progress=False)
    path = RunStore(tmp_path / "run").episodes_path
    lines = [json.loads(text) for text in path.read_text().splitlines()]
    lines[1] = edit(lines[1])
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(ValueError, match=message) as caught:
        run(LAB, tmp_path / "run", progress=False)
    assert "line 2" in str(caught.value) or "not an episode of this run" in str(caught.value)


@pytest.mark.parametrize(
    ("env_id", "size", "env_kwargs"),
    [("CausaLab-3node-v0", 50, {}), ("Heuresis-lg-v0", 32, {"d": 4, "n": 60}),
     ("CausalArena-formula-v0", len(FORMULA_SCENARIOS), {}), ("CausaLab-planner-3node-v0", 50, {})],
)
def test_episodes_beyond_a_suite_are_refused_before_any_line(tmp_path: Path, env_id, size, env_kwargs) -> None:
    config = RunConfig((env_id,), "random", instances=range(size + 10), env_kwargs=env_kwargs)
    with pytest.raises(ValueError, match=rf"cannot play instance {size + 9}.*out of range.*must be < {size}"):
        run(config, tmp_path / "run", progress=False)
    assert not RunStore(tmp_path / "run").episodes_path.exists() or not RunStore(
        tmp_path / "run").episodes_path.read_text()


@pytest.mark.parametrize("env_id", ["CausaLab-3node-v0", "Heuresis-lg-v0", "CausalArena-formula-v0",
                                    "CausalArena-formula-tools-v0", "CausaLab-planner-3node-v0",
                                    "HeuresisRepair-lg-v0"])
@pytest.mark.parametrize("options", ["test", ["instance", 0], 3])
def test_reset_options_that_are_not_a_dict_get_a_clear_error(env_id, options) -> None:
    import gymnasium as gym

    env = gym.make(env_id)
    with pytest.raises(ValueError, match="reset options must be a dict"):
        env.reset(seed=0, options=options)


# -- links planted in a run store or a report folder (issue 28, finding 9) ----------------------------------------------

VICTIM = b"precious data that belongs to someone else\n" * 32  # 1,408 bytes


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "victim.txt"
    victim.write_bytes(VICTIM)
    return victim


@pytest.mark.parametrize("name", [".lock", "episodes.jsonl", "run.json"])
def test_a_store_file_that_is_a_symlink_is_refused_before_anything_is_written(tmp_path: Path, name) -> None:
    victim = _victim(tmp_path)
    store = tmp_path / "run"
    store.mkdir()
    (store / name).symlink_to(victim)
    with pytest.raises(ValueError, match=rf"{name} is a symbolic link"):
        run(LAB, store, progress=False)
    assert victim.read_bytes() == VICTIM  # not truncated, not appended to
    assert sorted(p.name for p in store.iterdir()) == [name] and (store / name).is_symlink()  # nothing else written


def test_appending_through_a_symlink_planted_after_the_check_is_refused(tmp_path: Path) -> None:
    run(LAB, tmp_path / "run", progress=False)
    store = RunStore(tmp_path / "run")
    victim = _victim(tmp_path)
    store.episodes_path.unlink()
    store.episodes_path.symlink_to(victim)
    with pytest.raises(ValueError, match="is a symbolic link"):
        store.append({"key": "CausaLab-3node-v0|test|0|0", "status": "finished"})
    with pytest.raises(ValueError, match="is a symbolic link"):
        store.episodes()
    assert victim.read_bytes() == VICTIM


def test_a_hard_linked_episode_file_is_refused_for_writing(tmp_path: Path) -> None:
    victim = _victim(tmp_path)
    store = tmp_path / "run"
    store.mkdir()
    os.link(victim, store / "episodes.jsonl")
    with pytest.raises(ValueError, match="hard links"):
        run(LAB, store, progress=False)
    assert victim.read_bytes() == VICTIM


def test_a_fifo_as_lock_file_is_refused_without_blocking(tmp_path: Path) -> None:
    store = tmp_path / "run"
    store.mkdir()
    os.mkfifo(store / ".lock")
    outcome: list[BaseException | None] = []

    def take_lock() -> None:
        try:
            with RunStore(store).lock():
                outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 -- handed to the test thread
            outcome.append(exc)

    worker = threading.Thread(target=take_lock, daemon=True)
    worker.start()
    worker.join(timeout=30)  # an open() that blocks on the FIFO never returns
    assert outcome and isinstance(outcome[0], ValueError) and "not a regular file" in str(outcome[0])


def test_report_files_replace_a_planted_symlink_instead_of_writing_through_it(tmp_path: Path) -> None:
    pytest.importorskip("pandas")
    from causal_gym.eval.report import load_runs, report_tables, write_tables

    run(LAB, tmp_path / "run", progress=False)
    frame = load_runs(tmp_path / "run")
    out = tmp_path / "report"
    out.mkdir()
    victim = _victim(tmp_path)
    for name in ("report.md", "outcomes.csv", "episodes.csv"):
        (out / name).symlink_to(victim)
    written = write_tables(report_tables(frame), out, frame)
    assert victim.read_bytes() == VICTIM
    for name in ("report.md", "outcomes.csv", "episodes.csv"):
        assert out / name in written and not (out / name).is_symlink() and (out / name).stat().st_size > 0


# -- `causal-gym report DIR` on a received directory writes only into its output folder (issue 44, item 2) -------------


def _tree(root: Path) -> dict[str, bytes | str]:
    """Every path under ``root`` (links not followed) -> a file's bytes, a link's target or "dir"."""
    found: dict[str, bytes | str] = {}
    for folder, directories, files in os.walk(root):
        for name in directories + files:
            path = Path(folder) / name
            key = str(path.relative_to(root))
            found[key] = (f"-> {os.readlink(path)}" if path.is_symlink() else "dir" if path.is_dir()
                          else path.read_bytes())
    return found


def _received(tmp_path: Path, setting: str | None = None) -> Path:
    """A run directory as someone else could ship it: real episodes, optionally a forged CausaLab setting."""
    received = tmp_path / "received"
    run(LAB, received, progress=False)
    if setting is not None:
        path = RunStore(received).episodes_path
        lines = [json.loads(text) for text in path.read_text().splitlines()]
        for line in lines:
            line["record"]["final_info"]["instance"]["setting"] = setting
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return received


def test_a_setting_that_walks_out_of_the_report_folder_names_a_file_inside_it(tmp_path: Path, capsys) -> None:
    """The forged setting ``x/../../<anywhere>/pwned`` (with the ``x`` directory shipped, so the kernel can walk
    it) made the CausaLab figure land in <anywhere>; now it only names a file inside the report folder."""
    pytest.importorskip("pandas")
    pytest.importorskip("matplotlib")
    from causal_gym._files import name_part
    from causal_gym.cli import main

    anywhere = tmp_path / "anywhere"
    anywhere.mkdir()
    setting = "x/" + "../" * 40 + str(anywhere).lstrip("/") + "/pwned"
    received = _received(tmp_path, setting)
    (received / "report" / "causalab_trajectories_x").mkdir(parents=True)
    (received / "report" / "report.md").symlink_to(_victim(tmp_path))  # a file of the folder linked outside it
    before = _tree(tmp_path)
    assert main(["report", str(received), "--quiet"]) == 0
    after = _tree(tmp_path)
    changed = {path for path in after if before.get(path) != after[path]} | set(before) - set(after)
    assert changed and all(path.startswith("received/report/") for path in changed), sorted(changed)
    assert not list(anywhere.iterdir()) and (tmp_path / "victim.txt").read_bytes() == VICTIM
    figure = received / "report" / f"causalab_trajectories_{name_part(setting)}.png"
    assert figure.read_bytes().startswith(b"\x89PNG") and "/" not in name_part(setting)
    assert not (received / "report" / "report.md").is_symlink() and "CausaLab" in (received / "report" / "report.md").read_text()


@pytest.mark.parametrize("planted", ["link", "file", "link above"])
def test_a_report_folder_planted_in_a_received_directory_is_refused(tmp_path: Path, planted: str, capsys) -> None:
    """A received ``report`` that is a link to a victim's folder had its files replaced; now the report refuses
    it (a link, or a file, at ``report``, or a link in a folder above ``--out`` inside the received directory)
    and writes nothing anywhere."""
    pytest.importorskip("pandas")
    from causal_gym.cli import main

    received = _received(tmp_path)
    victims = tmp_path / "victims"
    victims.mkdir()
    _victim(victims).rename(victims / "report.md")
    out = []
    if planted == "link":
        (received / "report").symlink_to(victims)
    elif planted == "file":
        (received / "report").write_bytes(VICTIM)
    else:
        (received / "reports").symlink_to(victims)
        out = ["--out", str(received / "reports" / "mine")]
    before = _tree(tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        main(["report", str(received), "--quiet", *out])
    message = capsys.readouterr().err
    assert exit_info.value.code == 2 and ("a symbolic link" if planted != "file" else "not a directory") in message
    assert _tree(tmp_path) == before and (victims / "report.md").read_bytes() == VICTIM


def test_an_output_folder_swapped_for_a_link_after_it_was_opened_keeps_the_files(tmp_path: Path) -> None:
    """The race: the folder is held by descriptor, so replacing it by a link meanwhile redirects nothing."""
    from causal_gym._files import OutputFolder

    received = tmp_path / "received"
    (received / "report").mkdir(parents=True)
    victims = tmp_path / "victims"
    victims.mkdir()
    with OutputFolder(received / "report", within=[received]) as out:
        (received / "report").rename(received / "opened")
        (received / "report").symlink_to(victims)
        written = out.write("report.md", "mine")
        for name in ("../escaped.md", "..", "", "a\0b"):
            with pytest.raises(ValueError, match="not a file name"):
                out.write(name, "mine")
    assert written == received / "report" / "report.md"  # the name it was opened under
    assert (received / "opened" / "report.md").read_text() == "mine" and not list(victims.iterdir())
    assert not (tmp_path / "escaped.md").exists() and not (received / "escaped.md").exists()


def test_a_store_whose_plugin_code_changed_is_taken_over_only_while_nothing_of_it_finished(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    config = {"env_ids": ["CartPole-v1"], "agent": "mine:Agent"}
    store.initialize({**config, "code": {"mine:Agent": "a" * 64}}, version="0.1.0")
    store.append({"key": "CartPole-v1|-|0|0", "status": "failed"})
    # only a failed line (which the rerun plays anyway): the new code takes the store over
    store.initialize({**config, "code": {"mine:Agent": "b" * 64}}, version="0.1.0")
    assert json.loads((tmp_path / RUN_FILE).read_text())["config"]["code"] == {"mine:Agent": "b" * 64}
    store.append({"key": "CartPole-v1|-|0|0", "status": "finished"})
    with pytest.raises(ValueError, match=r"played by other code: mine:Agent changed .* new output directory"):
        store.initialize({**config, "code": {"mine:Agent": "c" * 64}}, version="0.1.0")
    assert json.loads((tmp_path / RUN_FILE).read_text())["config"]["code"] == {"mine:Agent": "b" * 64}
    with pytest.raises(ValueError, match="another configuration"):  # any other difference keeps its message
        store.initialize({**config, "agent": "other:Agent", "code": {"mine:Agent": "b" * 64}}, version="0.1.0")
