"""Our decoding in generate() against transformers' own, measured in one run.

    python benchmarks/search.py [--repeats 5] [--models rnnsearch luong-feed-lstm-general]

The same model and inputs as run_benchmarks.py (random weights, vocab 8000, batch 64 sources of 20–40 tokens,
30 new tokens), through ``generate()``, alternating; medians, and ours over the alternative (> 1: ours is better):
- our greedy and beam search loops (hf_bahdanau/modeling/search.py) against transformers' ``GenerationMixin._sample`` /
  ``_beam_search``: greedy sentences/s at batch 64, beam-5 sentences/s at batch 64, batch-1 greedy ms per sentence;
- one encoded source per source in beam search (its beams share it) against transformers' copy per beam
  (``GenerationMixin._expand_inputs_for_generation``), both with our loops: beam-5 sentences/s at batch 64.
Then the output rows that differ: untrained models tie scores to the last bit, where either search may keep
either hypothesis (tests/test_search.py and tests/test_generation.py check equality on decisive models).
"""

import argparse
import statistics
import sys
from contextlib import contextmanager
from pathlib import Path

import torch
from transformers import GenerationMixin

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run_benchmarks as rb  # noqa: E402

from hf_bahdanau import BahdanauForConditionalGeneration  # noqa: E402

SEARCH_METHODS = ("_sample", "_beam_search", "_gather_beams")
EXPANSION = ("_expand_inputs_for_generation",)


@contextmanager
def transformers_version(names: tuple[str, ...]):
    """generate() with transformers' own ``GenerationMixin`` methods ``names`` instead of ours."""
    ours = {name: BahdanauForConditionalGeneration.__dict__.get(name) for name in names}
    for name in names:
        setattr(BahdanauForConditionalGeneration, name, GenerationMixin.__dict__[name])
    try:
        yield
    finally:
        for name, method in ours.items():
            if method is None:
                delattr(BahdanauForConditionalGeneration, name)
            else:
                setattr(BahdanauForConditionalGeneration, name, method)


def ours_over_theirs(measure, model, names: tuple[str, ...], repeats: int, lower_is_better: bool) -> tuple:
    """Medians of ``measure(model)`` with ours and with transformers' ``names``, alternating, and their ratio."""
    times = {"ours": [], "transformers": []}
    measure(model)
    for repeat in range(repeats):
        for side in ("ours", "transformers")[::1 if repeat % 2 else -1]:
            if side == "ours":
                times[side].append(measure(model))
            else:
                with transformers_version(names):
                    times[side].append(measure(model))
    ours, theirs = (statistics.median(times[side]) for side in ("ours", "transformers"))
    return ours, theirs, theirs / ours if lower_is_better else ours / theirs


@torch.no_grad()
def differing_rows(model, batch: dict, num_beams: int, names: tuple[str, ...]) -> int:
    options = dict(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], num_beams=num_beams,
                   max_new_tokens=rb.TARGET_STEPS, do_sample=False)
    ours = model.generate(**options)
    with transformers_version(names):
        reference = model.generate(**options)
    if ours.shape != reference.shape:
        return batch["input_ids"].shape[0]
    return int((ours != reference).any(dim=1).sum())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=list(rb.MODELS), choices=list(rb.MODELS))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    batch = rb.synthetic_batch(1000)
    metrics = {
        "greedy_b64_sentences_per_s": lambda m: rb.decode_sentences_per_second(m, batch, 1),
        "beam5_b64_sentences_per_s": lambda m: rb.decode_sentences_per_second(m, batch, 5),
        "greedy_b1_ms_per_sentence": lambda m: rb.batch1_latency_ms(m, batch),
    }
    for name in args.models:
        model = rb.build_ours(name).eval()
        print(f"\n{name}")
        for key, measure in metrics.items():
            ours, theirs, ratio = ours_over_theirs(measure, model, SEARCH_METHODS, args.repeats,
                                                   key in rb.LOWER_IS_BETTER)
            print(f"  {key:28s} ours {ours:8.1f}   transformers' loop {theirs:8.1f}   x{ratio:.2f}")
        ours, theirs, ratio = ours_over_theirs(metrics["beam5_b64_sentences_per_s"], model, EXPANSION, args.repeats,
                                               False)
        label = "beam5, shared encoded source"
        print(f"  {label:28s} ours {ours:8.1f}   copy per beam      {theirs:8.1f}   x{ratio:.2f}")
        for num_beams in (1, 5):
            print(f"  rows differing from transformers' loop, {num_beams} beam(s): "
                  f"{differing_rows(model, batch, num_beams, SEARCH_METHODS)} of {batch['input_ids'].shape[0]}")
        print(f"  rows differing from the copy per beam, 5 beams: "
              f"{differing_rows(model, batch, 5, EXPANSION)} of {batch['input_ids'].shape[0]}")


if __name__ == "__main__":
    main()
