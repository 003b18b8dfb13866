"""CDFM checkpoints made here, in the ``cdfm-base`` package's own format, for the tests that load one.

Small networks of the package's architecture with seeded random weights, saved as its loader reads
them (``config.json`` + ``model.safetensors``). Importing this module needs ``cdfm`` and torch:
test modules import it after their ``pytest.importorskip`` calls.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from cdfm.model.cdfm_model import CDFM as CDFMNetwork
from safetensors.torch import save_file

ARCHITECTURE = {"embed_dim": 16, "p_dim": 8, "nhead": 2, "dim_feedforward": 32, "num_inds": 4, "num_layers": 1,
                "num_blocks_of_embedding": 1}
FEATURES = ["mean", "std", "p25", "p50", "p75", "p90", "logD", "median_gap", "max_gap", "knee_T"]
CALIBRATION = {"type": "linear", "coefficients": [-2.0, 0.3, -0.2, 0.1, 4.0, 0.1, -0.1, 0.05, 0.2, -0.3, 0.1],
               "feature_names": FEATURES}
"""A calibration over all of the package's threshold features (the fixtures' default)."""


def write_checkpoint(folder: Path, calibration: dict | None, *, drop: str | None = None, seed: int = 0) -> Path:
    """A checkpoint folder in the package's format; logits spread (temperature 50, bias 0) so graphs are not empty."""
    torch.manual_seed(seed)
    network = CDFMNetwork(**ARCHITECTURE)
    with torch.no_grad():
        network.inference.log_temp.fill_(np.log(50.0))
        network.inference.final_bias.fill_(0.0)
    state = {k: v.contiguous() for k, v in network.state_dict().items() if k != drop}
    folder.mkdir(parents=True)
    save_file(state, str(folder / "model.safetensors"))
    config = dict(ARCHITECTURE)
    if calibration is not None:
        config["calibration_config"] = calibration
    (folder / "config.json").write_text(json.dumps(config))
    return folder
