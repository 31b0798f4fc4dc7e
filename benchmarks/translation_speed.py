"""Decoding speed of trained translation folders on a test file: an RNN in PyTorch and exported to ONNX Runtime
against the Transformer baseline (``run_seq2seq.py --architecture transformer``) in PyTorch, measured in one run.

    python benchmarks/translation_speed.py --rnn outputs/translation/de_en/rnnsearch \\
        --transformer outputs/translation/de_en/transformer --test_file training/data/de-en/test.jsonl
        # writes benchmarks/results/<date>-translation-speed.json and prints a table
    python benchmarks/translation_speed.py ... --onnx outputs/de-en-onnx   # an hf-bahdanau-export folder, not a new one

The first ``--sentences`` sources of the test file (``--source_column``), in the file's order, are decoded by each
backend at batch 1 and batch 64, greedy and beam 5 (``--max_new_tokens`` for all; no sampling), on ``--threads``
threads (torch and ONNX Runtime alike). One batch per setting warms each backend up, untimed; then the backends take
turns, each decoding all the sentences once per repeat, and the median of ``--repeats`` times gives sentences/s and
target tokens/s (the tokens each backend generated, EOS included). Ratios: each backend's sentences/s over the
Transformer's in the same setting (> 1: faster than the Transformer). Parameters: the learned ones
(training/transformer_baseline.py ``learned_parameters``; the ONNX graphs hold the RNN's).
"""

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
import hf_bahdanau  # noqa: E402, F401  (registers the Auto classes)
from training.transformer_baseline import learned_parameters  # noqa: E402

RESULTS = REPO / "benchmarks" / "results"
BATCH_SIZES, BEAMS = (1, 64), (1, 5)
TRANSFORMER = "transformer_pytorch"  # the backend the ratios divide by


@dataclass
class Backend:
    """A way to decode: ``generate(input_ids, attention_mask, num_beams, max_new_tokens)`` -> sequences [B, 1 + T]
    (int arrays, the start token first, finished rows padded); the tokenizer encodes its sources."""

    tokenizer: object
    generate: Callable[[np.ndarray, np.ndarray, int, int], np.ndarray]
    parameters: int


def pytorch_generate(model) -> Callable:
    """A Backend's ``generate``: ``model.generate()`` (evaluation mode, no gradients)."""
    model.eval()

    @torch.no_grad()
    def generate(input_ids, attention_mask, num_beams, max_new_tokens):
        return model.generate(input_ids=torch.from_numpy(input_ids), attention_mask=torch.from_numpy(attention_mask),
                              num_beams=num_beams, max_new_tokens=max_new_tokens, do_sample=False).numpy()

    return generate


def onnx_generate(model, tokenizer, threads: int, folder: Path | None) -> Callable:
    """A Backend's ``generate``: ONNX Runtime decoding of an RNN (hf_bahdanau.onnx, as ``hf-bahdanau-export``):
    ``folder`` when given, else ``model`` exported to a temporary folder."""
    from hf_bahdanau.onnx.export import export_onnx
    from hf_bahdanau.onnx.runtime import OnnxSeq2Seq

    if folder is None:
        folder = export_onnx(model, Path(tempfile.mkdtemp(prefix="translation_speed_onnx_")), tokenizer=tokenizer)
    runtime = OnnxSeq2Seq(folder, threads=threads)
    return lambda input_ids, attention_mask, num_beams, max_new_tokens: runtime.generate(
        input_ids, attention_mask, num_beams=num_beams, max_new_tokens=max_new_tokens).sequences


def generated_tokens(sequences: np.ndarray, eos_token_id: int) -> int:
    """Tokens generated over a batch [B, 1 + T]: each row's after the start token up to its first EOS included, or
    all T where it has none (only finished rows are padded: with pad, or with EOS where the pad id is 0)."""
    generated = sequences[:, 1:]
    ended = generated == eos_token_id
    return int(np.where(ended.any(1), ended.argmax(1) + 1, generated.shape[1]).sum())


def measure(backends: dict[str, Backend], sentences: Sequence[str], batch_sizes: Sequence[int] = BATCH_SIZES,
            beams: Sequence[int] = BEAMS, repeats: int = 3, max_new_tokens: int = 128) -> list[dict]:
    """One row per backend × batch size × beams: {"backend", "batch_size", "num_beams", "sentences_per_s",
    "tokens_per_s", "tokens", "seconds"} (median seconds over ``repeats``; the backends take turns in each repeat,
    after one untimed batch each)."""
    if not sentences or repeats < 1:
        raise ValueError(f"`sentences` must be non-empty and `repeats` ≥ 1, got {len(sentences)} and {repeats}.")
    encoded = {}
    for name, backend in backends.items():
        for batch_size in batch_sizes:
            batches = [backend.tokenizer(list(sentences[start:start + batch_size]), padding=True, return_tensors="np")
                       for start in range(0, len(sentences), batch_size)]
            encoded[name, batch_size] = [(batch["input_ids"].astype(np.int64),
                                          batch["attention_mask"].astype(np.int64)) for batch in batches]
    rows = []
    for batch_size in batch_sizes:
        for num_beams in beams:
            def run(name: str, batches) -> int:
                generate, eos = backends[name].generate, backends[name].tokenizer.eos_token_id
                return sum(generated_tokens(generate(ids, mask, num_beams, max_new_tokens), eos)
                           for ids, mask in batches)

            for name in backends:  # warm-up, untimed
                run(name, encoded[name, batch_size][:1])
            seconds, tokens = {name: [] for name in backends}, {}
            for _ in range(repeats):
                for name in backends:
                    start = time.perf_counter()
                    tokens[name] = run(name, encoded[name, batch_size])
                    seconds[name].append(time.perf_counter() - start)
            for name in backends:
                median = statistics.median(seconds[name])
                rows.append({"backend": name, "batch_size": batch_size, "num_beams": num_beams,
                             "sentences_per_s": len(sentences) / median, "tokens_per_s": tokens[name] / median,
                             "tokens": tokens[name], "seconds": median})
    return rows


def with_ratios(rows: list[dict], reference: str = TRANSFORMER) -> list[dict]:
    """Each row with ``over_transformer``: its sentences/s over ``reference``'s in the same setting (None without)."""
    baseline = {(row["batch_size"], row["num_beams"]): row["sentences_per_s"] for row in rows
                if row["backend"] == reference}
    return [{**row, "over_transformer": (row["sentences_per_s"] / baseline[row["batch_size"], row["num_beams"]]
                                         if (row["batch_size"], row["num_beams"]) in baseline else None)}
            for row in rows]


def markdown_table(rows: list[dict], parameters: dict[str, int]) -> str:
    lines = ["| backend | parameters | batch | search | sentences/s | target tokens/s | × Transformer |",
             "| --- | ---: | ---: | --- | ---: | ---: | ---: |"]
    for row in rows:
        ratio = "—" if row["over_transformer"] is None else f"{row['over_transformer']:.2f}"
        search = "greedy" if row["num_beams"] == 1 else f"beam {row['num_beams']}"
        lines.append(f"| {row['backend']} | {parameters[row['backend']]:,} | {row['batch_size']} | {search} | "
                     f"{row['sentences_per_s']:.1f} | {row['tokens_per_s']:.0f} | {ratio} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rnn", type=Path, required=True, help="a trained hf_bahdanau seq2seq folder")
    parser.add_argument("--transformer", type=Path, required=True, help="a trained Transformer baseline folder")
    parser.add_argument("--onnx", type=Path, help="the RNN exported with hf-bahdanau-export (default: export it now)")
    parser.add_argument("--test_file", type=Path, required=True, help="a .jsonl file of sources")
    parser.add_argument("--source_column", default="source")
    parser.add_argument("--sentences", type=int, default=256)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max_new_tokens", type=int, default=128)
    parser.add_argument("--output", type=Path, default=RESULTS / f"{date.today()}-translation-speed.json")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    with args.test_file.open() as lines:
        sentences = [json.loads(line)[args.source_column] for line in lines if line.strip()][:args.sentences]
    rnn, transformer = (AutoModelForSeq2SeqLM.from_pretrained(folder) for folder in (args.rnn, args.transformer))
    rnn_tokenizer, transformer_tokenizer = (AutoTokenizer.from_pretrained(f) for f in (args.rnn, args.transformer))
    backends = {
        "rnn_pytorch": Backend(rnn_tokenizer, pytorch_generate(rnn), learned_parameters(rnn)),
        "rnn_onnxruntime": Backend(rnn_tokenizer, onnx_generate(rnn, rnn_tokenizer, args.threads, args.onnx),
                                   learned_parameters(rnn)),
        TRANSFORMER: Backend(transformer_tokenizer, pytorch_generate(transformer), learned_parameters(transformer)),
    }
    rows = with_ratios(measure(backends, sentences, repeats=args.repeats, max_new_tokens=args.max_new_tokens))
    parameters = {name: backend.parameters for name, backend in backends.items()}
    report = dict(command=" ".join(sys.argv), torch=torch.__version__, threads=args.threads,
                  sentences=len(sentences), repeats=args.repeats, max_new_tokens=args.max_new_tokens,
                  folders={"rnn": str(args.rnn), "onnx": str(args.onnx) if args.onnx else "exported now",
                           "transformer": str(args.transformer)},
                  parameters=parameters, rows=rows)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(markdown_table(rows, parameters))
    print(f"written to {args.output}")


if __name__ == "__main__":
    main()
