"""What a saved model folder tells about the model: config, size, results, training run, pictures.

Reads only plain files (``config.json``, safetensors headers, ``all_results.json``, ``trainer_state.json``);
``training_args.bin`` is unpickled with ``weights_only=True`` and only transformers'/accelerate's own classes
allowed, so writing a card never runs code from the folder.
"""

import importlib
import json
import math
import re
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open

SPLIT_PREFIXES = {"eval": "validation", "test": "test", "predict": "test", "train": "train"}
SIZED_SPLIT = re.compile(r"n(\d+)_(.+)")  # "n10_accuracy": the accuracy on the test set of inputs of size 10
# Trainer's bookkeeping, not a property of the model; and the parameter count run_seq2seq.py records (the card has it)
NOT_METRICS = ("runtime", "samples_per_second", "steps_per_second", "epoch", "total_flos", "samples", "num_parameters")
TRAINING_ARGS_MODULES = ("transformers.training_args", "transformers.trainer_utils", "transformers.trainer_pt_utils",
                         "accelerate.")


def read_json(path: Path) -> dict[str, Any] | None:
    return json.loads(path.read_text()) if path.is_file() else None


def parameter_count(model_dir: Path) -> int:
    """Number of stored parameters, from the safetensors headers (tied matrices are stored once)."""
    files = sorted(model_dir.glob("*.safetensors"))
    if not files:
        raise ValueError(f"`model_dir` ({model_dir}) holds no *.safetensors weights: save the model there first.")
    total = 0
    for path in files:
        with safe_open(path, framework="pt") as weights:
            for name in weights.keys():
                total += math.prod(weights.get_slice(name).get_shape())
    return total


def split_metrics(results: dict[str, Any]) -> dict[str, dict[str, float]]:
    """{"eval_bleu": 31.2, "predict_bleu": 30.9, "train_loss": 1.2} -> {"validation": {"bleu": 31.2},
    "test": {"bleu": 30.9}, "train": {"loss": 1.2}}; Trainer's timings and counters are dropped, a metric without a
    split prefix counts as a test result. A test set per input size (``run_pointer.py``'s "predict_n10_accuracy") is
    its own split, "test (n = 10)"."""
    splits: dict[str, dict[str, float]] = {}
    for key, value in results.items():
        prefix, _, name = key.partition("_")
        split = SPLIT_PREFIXES.get(prefix)
        if split is None:
            split, name = "test", key
        sized = SIZED_SPLIT.fullmatch(name)
        if sized:
            split, name = f"{split} (n = {sized[1]})", sized[2]
        if not isinstance(value, (int, float)) or isinstance(value, bool) or name.endswith(NOT_METRICS):
            continue
        splits.setdefault(split, {})[name] = value
    return splits


def training_arguments(model_dir: Path) -> dict[str, Any] | None:
    """The ``TrainingArguments`` that Trainer saved as ``training_args.bin``, as a dict, or None when there is none or
    it names classes other than transformers'/accelerate's (a script's own subclass, say)."""
    path = model_dir / "training_args.bin"
    if not path.is_file():
        return None
    names = torch.serialization.get_unsafe_globals_in_checkpoint(path)
    if not all(name.startswith(TRAINING_ARGS_MODULES) for name in names):
        return None
    classes = []
    for name in names:
        module, _, attribute = name.rpartition(".")
        classes.append(getattr(importlib.import_module(module), attribute))
    with torch.serialization.safe_globals(classes):
        return torch.load(path, weights_only=True).to_dict()


def pictures(model_dir: Path) -> list[str]:
    """The PNG files at the top of the folder (what ``push_to_hub`` ships with the card), by name."""
    return sorted(path.name for path in model_dir.glob("*.png"))
