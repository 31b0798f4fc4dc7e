"""Inference options on a trained model: fp32, bf16 autocast and dynamic int8, for speed and quality.

    python benchmarks/inference_options.py --model_dir outputs/dates-rnnsearch \\
        --test_file training/data/dates/test.jsonl --source_column source --target_column target

Each option decodes the same test sentences greedily (batch 64, and batch 1 for latency). The table
gives sentences/s, batch-1 ms/sentence, exact match against the references, and the share of
sentences whose output is identical to fp32's (how much the option changes the model's behaviour).
Options alternate within each repeat, so drift on a shared machine affects all alike.

- bf16: ``torch.autocast("cpu", dtype=torch.bfloat16)`` around ``generate``; weights stay fp32.
- int8: ``torch.ao.quantization.quantize_dynamic`` on every ``nn.Linear`` (int8 weights,
  activations quantised per batch). The recurrent layers stay fp32: the decoder's step mode reads
  their weights directly.
"""

import argparse
import contextlib
import copy
import csv
import io
import json
import statistics
import time
from pathlib import Path

import torch
from torch import nn
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

import hf_bahdanau  # noqa: F401  registers the Auto classes


def read_rows(path: str) -> list[dict[str, str]]:
    """Rows of a csv, tsv, json (a list) or jsonl file, every value kept as the text it is in the file
    (``datasets``' json loader would turn "2015-03-03" into a timestamp)."""
    text = Path(path).read_text(encoding="utf-8")
    if path.endswith((".csv", ".tsv")):
        return list(csv.DictReader(io.StringIO(text), delimiter="\t" if path.endswith(".tsv") else ","))
    if text.lstrip().startswith("["):
        return json.loads(text)
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def decode(model, tokenizer, sources: list[str], batch_size: int, max_new_tokens: int, autocast) -> list[str]:
    outputs = []
    for start in range(0, len(sources), batch_size):
        batch = tokenizer(sources[start:start + batch_size], return_tensors="pt", padding=True)
        with torch.no_grad(), autocast():
            generated = model.generate(**batch, max_new_tokens=max_new_tokens, num_beams=1, do_sample=False)
        outputs += [text.strip() for text in tokenizer.batch_decode(generated, skip_special_tokens=True)]
    return outputs


def options(model: nn.Module) -> dict[str, tuple[nn.Module, object]]:
    int8 = torch.ao.quantization.quantize_dynamic(copy.deepcopy(model), {nn.Linear}, dtype=torch.qint8)
    return {
        "fp32": (model, contextlib.nullcontext),
        "bf16 autocast": (model, lambda: torch.autocast("cpu", dtype=torch.bfloat16)),
        "int8 dynamic (Linear)": (int8, contextlib.nullcontext),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--test_file", required=True, help="csv, tsv, json or jsonl")
    parser.add_argument("--source_column", default="source")
    parser.add_argument("--target_column", default="target")
    parser.add_argument("--num_examples", type=int, default=512)
    parser.add_argument("--latency_examples", type=int, default=16)
    parser.add_argument("--max_new_tokens", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--output", default=None, help="JSON file for the results (default: print only)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    rows = read_rows(args.test_file)[:args.num_examples]
    sources = [row[args.source_column] for row in rows]
    references = [row[args.target_column] for row in rows]

    tokenizer = AutoTokenizer.from_pretrained(args.model_dir)
    model = AutoModelForSeq2SeqLM.from_pretrained(args.model_dir).eval()
    variants = options(model)
    measured = {name: {"sent_per_s": [], "b1_ms": []} for name in variants}
    predictions = {}
    for _ in range(args.repeats):
        for name, (variant, autocast) in variants.items():
            start = time.perf_counter()
            predictions[name] = decode(variant, tokenizer, sources, 64, args.max_new_tokens, autocast)
            measured[name]["sent_per_s"].append(len(sources) / (time.perf_counter() - start))
            start = time.perf_counter()
            decode(variant, tokenizer, sources[:args.latency_examples], 1, args.max_new_tokens, autocast)
            measured[name]["b1_ms"].append((time.perf_counter() - start) / args.latency_examples * 1000)

    results = {}
    print(f"{'option':24s} {'greedy b64 sent/s':>18s} {'b1 ms/sent':>11s} {'exact match':>12s} {'same as fp32':>13s}")
    for name in variants:
        row = dict(
            sent_per_s=statistics.median(measured[name]["sent_per_s"]),
            b1_ms=statistics.median(measured[name]["b1_ms"]),
            exact_match=sum(p == r for p, r in zip(predictions[name], references)) / len(references),
            same_as_fp32=sum(p == q for p, q in zip(predictions[name], predictions["fp32"])) / len(references),
        )
        results[name] = row
        print(f"{name:24s} {row['sent_per_s']:18.1f} {row['b1_ms']:11.2f} {row['exact_match']:12.4f} "
              f"{row['same_as_fp32']:13.4f}")
    if args.output:
        Path(args.output).write_text(json.dumps(dict(model_dir=args.model_dir, examples=len(sources),
                                                     threads=args.threads, results=results), indent=2))


if __name__ == "__main__":
    main()
