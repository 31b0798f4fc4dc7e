"""What the attention scopes, hard attention and coverage cost against global soft attention, measured in one run.

    python benchmarks/attention_scope.py                      # both parts, benchmarks/results/attention_scope.json
    python benchmarks/attention_scope.py --part decode --repeats 3 --decode_vocab 8000

train: target tokens per second of a training step (forward + backward + fused Adam) at run_benchmarks.py's sizes
(vocab 8000, embedding 256, BiGRU 2 x 128, decoder 256, batch 64, sources of 20–40 tokens), for each base model with
each option; the variants of one base alternate in the same process, and the cost is global's tokens/s over the
variant's (< 1.3 is the target). decode: batch-1 greedy decoding of sources of S tokens, forced to S new tokens (the
work of global attention grows as S², that of a monotonic scan as S), with a G2P-sized vocabulary (100: at 8000 the
output projection dominates a step); ms per sentence, global and monotonic alternating. Medians over ``--repeats`` (with min–max).
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run_benchmarks as rb  # noqa: E402

from hf_bahdanau import BahdanauConfig, BahdanauForConditionalGeneration  # noqa: E402

BASES = ("rnnsearch", "luong-feed-lstm-general", "luong-general-nofeed")
OPTIONS = {
    "global": {},
    "local-m": dict(attention_scope="local-m"),
    "local-p": dict(attention_scope="local-p"),
    "monotonic": dict(attention_scope="monotonic"),
    "hard": dict(attention_mode="hard"),
    "coverage": dict(use_coverage=True, coverage_loss_weight=1.0),  # additive scores only
}
DECODE_LENGTHS = (25, 50, 100, 200, 400)


def build(base: str, **options) -> BahdanauForConditionalGeneration:
    overrides = {**rb.MODELS[base], **options}
    config = BahdanauConfig.from_preset(overrides.pop("preset"), **{**rb.SIZES, **overrides})
    torch.manual_seed(0)
    return BahdanauForConditionalGeneration(config)


def medians(measures: dict, repeats: int) -> dict[str, dict[str, float]]:
    """Run each measure once to warm up, then ``repeats`` rounds of all of them in turn (order reversed every other
    round); median, min and max of each."""
    for measure in measures.values():
        measure()
    runs = {name: [] for name in measures}
    for repeat in range(repeats):
        for name in list(measures)[::1 if repeat % 2 == 0 else -1]:
            runs[name].append(measures[name]())
    return {name: dict(median=statistics.median(values), min=min(values), max=max(values))
            for name, values in runs.items()}


def training_costs(repeats: int, train_batches: int) -> dict:
    batches = [rb.synthetic_batch(seed) for seed in range(train_batches)]
    results = {}
    for base in BASES:
        options = {name: option for name, option in OPTIONS.items()
                   if name != "coverage" or rb.MODELS[base].get("preset") in ("rnnsearch", "luong-concat")}
        models = {name: build(base, **option) for name, option in options.items()}
        speeds = medians({name: (lambda model=model: rb.train_tokens_per_second(model, batches))
                          for name, model in models.items()}, repeats)
        global_speed = speeds["global"]["median"]
        results[base] = {name: dict(tokens_per_s=speed, cost=global_speed / speed["median"])
                         for name, speed in speeds.items()}
        print(f"\n{base}: training tokens/s (cost = global / option; target < 1.3)")
        for name, row in results[base].items():
            speed = row["tokens_per_s"]
            print(f"  {name:10s} {speed['median']:8.0f} ({speed['min']:.0f}–{speed['max']:.0f})   x{row['cost']:.2f}")
    return results


@torch.no_grad()
def batch1_ms(model, length: int, sentences: int = 3) -> float:
    """ms per sentence of greedy decoding of sources of ``length`` tokens, ``length`` new tokens each."""
    model.eval()
    generator = torch.Generator().manual_seed(length)
    start = time.perf_counter()
    for _ in range(sentences):
        input_ids = torch.randint(3, model.config.vocab_size, (1, length), generator=generator)
        model.generate(input_ids=input_ids, attention_mask=torch.ones_like(input_ids), max_new_tokens=length,
                       min_new_tokens=length, do_sample=False)
    return (time.perf_counter() - start) / sentences * 1000


def decoding_times(repeats: int, vocab_size: int) -> dict:
    """Global attention against a monotonic model whose every step stops within the first ``SCAN_CHUNK`` positions
    from the previous one, as a trained model of a monotone task does (energy gain 0, bias +10: it stops where it
    is); an untrained monotonic model (bias −4) would run out of source at its first step and score nothing after."""
    models = {"global": build("rnnsearch", vocab_size=vocab_size),
              "monotonic": build("rnnsearch", vocab_size=vocab_size, attention_scope="monotonic")}
    with torch.no_grad():
        models["monotonic"].model.decoder.scope.energy_gain.zero_()
        models["monotonic"].model.decoder.scope.energy_bias.fill_(10.0)
    results = {}
    print(f"\nrnnsearch, vocabulary {vocab_size}: batch-1 greedy, S source tokens and S new tokens, ms per sentence "
          "(and per new token)")
    for length in DECODE_LENGTHS:
        times = medians({name: (lambda model=model: batch1_ms(model, length)) for name, model in models.items()},
                        repeats)
        results[length] = times
        row = "   ".join(f"{name} {t['median']:8.1f} ({t['median'] / length:.2f}/token)" for name, t in times.items())
        print(f"  S = {length:3d}   {row}   global / monotonic x{times['global']['median'] / times['monotonic']['median']:.2f}")
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=["train", "decode", "both"], default="both")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--train_batches", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--decode_vocab", type=int, default=100,
                        help="vocabulary of the decoding part (100: a G2P or transliteration model's)")
    parser.add_argument("--output", default=str(Path(__file__).resolve().parent / "results" / "attention_scope.json"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} threads, {args.repeats} repeats")
    output = Path(args.output)
    results = json.loads(output.read_text()) if output.is_file() else {}  # a part run alone keeps the other's
    run = dict(threads=args.threads, repeats=args.repeats, torch=torch.__version__)
    if args.part in ("train", "both"):
        results["train"] = dict(run, results=training_costs(args.repeats, args.train_batches))
    if args.part in ("decode", "both"):
        results["decode"] = dict(run, vocab_size=args.decode_vocab,
                                 results=decoding_times(args.repeats, args.decode_vocab))
    output.write_text(json.dumps(results, indent=1) + "\n")
    print(f"\nwritten: {args.output}")


if __name__ == "__main__":
    main()
