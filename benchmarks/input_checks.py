"""What the input checks cost: the same model and inputs with every check on, and with the checks replaced by no-ops,
alternating in one process.

    python benchmarks/input_checks.py [--repeats 7] [--models rnnsearch luong-general-nofeed]

Every public forward checks its arguments (``hf_bahdanau/modeling/input_checks.py``: token ids in range, shapes, dtypes; and
``padding.check_attention_mask``: values 0/1, one run of ones per row). "Unchecked" replaces each check by a no-op
and the mask check by the bare layout the model needs anyway (lengths, where each row starts), so the ratio is the
price of the checks alone. The sizes are run_benchmarks.py's (vocab 8000, batch 64, sources of 20–40 tokens, 30 new
tokens); medians over ``--repeats``, and checked over unchecked (> 1: the checked run is faster; 1.00 = no cost).
"""

import argparse
import statistics
import sys
from contextlib import contextmanager
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run_benchmarks as rb  # noqa: E402

import hf_bahdanau  # noqa: E402
from hf_bahdanau.modeling import padding  # noqa: E402

CHECKS = ("check_token_ids", "check_embeddings", "check_class_labels", "check_one_source")


def bare_layout(attention_mask, shape, device, name="attention_mask") -> padding.PaddingLayout:
    """The layout ``check_attention_mask`` returns, without checking the mask."""
    if attention_mask is None:
        return padding.PaddingLayout(torch.ones(shape, dtype=torch.bool, device=device),
                                     torch.full((shape[0],), shape[1], device=device), None, False)
    mask = attention_mask.bool()
    lengths, starts = mask.sum(dim=1), mask.to(torch.uint8).argmax(dim=1)
    shifted, padded = torch.stack([(starts > 0).any(), (lengths < shape[1]).any()]).tolist()
    return padding.PaddingLayout(mask, lengths, starts if shifted else None, padded)


@contextmanager
def unchecked():
    """Every hf_bahdanau module's checks as no-ops (they are imported by name into each module)."""
    replaced = []
    for name, module in list(sys.modules.items()):
        if not name.startswith("hf_bahdanau"):
            continue
        for check in CHECKS:
            if hasattr(module, check):
                replaced.append((module, check, getattr(module, check)))
                setattr(module, check, lambda *args, **kwargs: None)
        if hasattr(module, "check_attention_mask"):
            replaced.append((module, "check_attention_mask", module.check_attention_mask))
            module.check_attention_mask = bare_layout
    try:
        yield
    finally:
        for module, check, function in replaced:
            setattr(module, check, function)


def checked_over_unchecked(measure, repeats: int, lower_is_better: bool) -> tuple[float, float, float]:
    times = {"checked": [], "unchecked": []}
    measure()
    for repeat in range(repeats):
        for side in ("checked", "unchecked")[::1 if repeat % 2 else -1]:
            if side == "checked":
                times[side].append(measure())
            else:
                with unchecked():
                    times[side].append(measure())
    checked, bare = (statistics.median(times[side]) for side in ("checked", "unchecked"))
    return checked, bare, bare / checked if lower_is_better else checked / bare


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=["rnnsearch", "luong-general-nofeed"], choices=list(rb.MODELS))
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--train_batches", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    train_batches = [rb.synthetic_batch(seed) for seed in range(args.train_batches)]
    batch = rb.synthetic_batch(1000)
    print(f"hf_bahdanau {hf_bahdanau.__version__}, torch {torch.__version__}, {args.threads} threads, "
          f"{args.repeats} repeats")
    for name in args.models:
        model = rb.build_ours(name)
        metrics = {
            "train_tokens_per_s": (lambda: rb.train_tokens_per_second(model, train_batches), False),
            "greedy_b64_sentences_per_s": (lambda: rb.decode_sentences_per_second(model, batch, 1), False),
            "beam5_b64_sentences_per_s": (lambda: rb.decode_sentences_per_second(model, batch, 5), False),
            "greedy_b1_ms_per_sentence": (lambda: rb.batch1_latency_ms(model, batch), True),
        }
        print(f"\n{name}")
        for key, (measure, lower_is_better) in metrics.items():
            checked, bare, ratio = checked_over_unchecked(measure, args.repeats, lower_is_better)
            print(f"  {key:28s} checked {checked:9.2f}   unchecked {bare:9.2f}   x{ratio:.3f}")


if __name__ == "__main__":
    main()
