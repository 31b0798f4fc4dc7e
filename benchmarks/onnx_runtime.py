"""ONNX Runtime decoding (hf-bahdanau-export + hf_bahdanau.onnx.runtime) against our PyTorch generate() and the
naive tutorial loop, measured in one run, taking turns.

    python benchmarks/onnx_runtime.py                       # benchmarks/results/<date>-onnx.json and a table
    python benchmarks/onnx_runtime.py --sentences 50        # quick look
    python benchmarks/onnx_runtime.py --model luong-feed-lstm-general   # an LSTM encoder and decoder

Sizes: run_benchmarks.py's (vocab 8000, embedding 256, bidirectional GRU encoder 2 x 128, decoder 256, additive
attention 256, maxout 256; random weights, seed 0; ``--model``: another of its MODELS, e.g. Luong's with LSTMs),
sources of 20–40 tokens, 30 new tokens. Batch 1, one thread
for everyone (``--batch1_threads``; a single sentence's operations are too small to share): greedy latency per
sentence over ``--sentences`` sources, as percentiles (p50, p90, p99), for ONNX Runtime fp32 and int8, PyTorch
generate() and the naive loop. The four take turns, each decoding ``--block`` (10) consecutive sources per turn, as
a deployed model serves one request after another with its weights in the CPU cache; the run also measures them
alternating sentence by sentence, where each model's ~30 MB of weights (four of them: more than this CPU's 32 MB
L3 cache) are evicted between its sentences. Batch 64, ``--threads`` threads: greedy and beam-5 sentences per
second, median of ``--repeats``. The share of outputs equal to generate()'s (and int8's to fp32's; with random
weights near-ties are common, so int8 quality is measured on a trained model, docs/performance.md). Exporters: the
same model's graphs from torch's TorchScript-based exporter (``dynamo=False``, the one before torch.export, which it
deprecates) against torch.export's, batch 1 in turns: encoder milliseconds per source, greedy milliseconds per
sentence, their ratios and the ONNX ``Loop`` nodes of each encoder graph.

``--profile`` measures nothing of the above: it prints where one decoder step of beam 5 at batch 64 (320 rows) spends
its time, from ONNX Runtime's own profiler: each operator's fastest of ``--profile_calls`` calls (the fastest,
because on a shared machine any operator may be preempted in a call) and its share of their sum, at ``--threads``
intra-op threads and at one.

    python benchmarks/onnx_runtime.py --profile --model luong-feed-lstm-general
"""

import argparse
import collections
import json
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from datetime import date
from pathlib import Path
from unittest import mock

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_benchmarks import MODELS, TARGET_STEPS, build_naive, build_ours, synthetic_batch  # noqa: E402

from hf_bahdanau.onnx.export import export_onnx, quantize_onnx  # noqa: E402
from hf_bahdanau.onnx.runtime import OnnxSeq2Seq  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def percentiles(milliseconds: list[float]) -> dict[str, float]:
    values = np.asarray(milliseconds)
    return {name: float(np.percentile(values, q)) for name, q in (("p50", 50), ("p90", 90), ("p99", 99))} | {
        "mean": float(values.mean())}


@torch.no_grad()
def batch1_latencies(decoders: dict, sources: list[tuple[torch.Tensor, torch.Tensor]],
                     block: int) -> tuple[dict[str, list[float]], dict[str, list]]:
    """Milliseconds per sentence of each decoder: the decoders take turns, each decoding ``block`` consecutive
    sources per turn."""
    times = {name: [] for name in decoders}
    outputs = {name: [] for name in decoders}
    for first in range(0, len(sources), block):
        for name, decode in decoders.items():
            for input_ids, attention_mask in sources[first:first + block]:
                start = time.perf_counter()
                outputs[name].append(decode(input_ids, attention_mask))
                times[name].append(1000 * (time.perf_counter() - start))
    return times, outputs


def ratios(batch1: dict[str, dict[str, float]]) -> dict[str, float]:
    return dict(ort_over_generate_p50=batch1["onnxruntime"]["p50"] / batch1["pytorch_generate"]["p50"],
                ort_over_naive_p50=batch1["onnxruntime"]["p50"] / batch1["naive_loop"]["p50"],
                int8_over_fp32_p50=batch1["onnxruntime_int8"]["p50"] / batch1["onnxruntime"]["p50"])


def torchscript_export(model, folder: Path) -> Path:
    """``export_onnx`` through torch's TorchScript-based exporter: as on a torch without ``torch.export._patches``,
    whose import then fails, so that each graph falls back to it (the fallback's warning is expected here)."""
    with mock.patch.dict(sys.modules, {"torch.export._patches": None}), warnings.catch_warnings():
        warnings.filterwarnings("ignore", "torch.export cannot trace", UserWarning)
        return export_onnx(model, folder)


def exporter_comparison(model, folder: Path, sources: list[tuple[torch.Tensor, torch.Tensor]], block: int,
                        threads: int) -> dict:
    """Batch-1 encoder ms per source and greedy ms per sentence of ``folder``'s graphs (torch.export's) against the
    TorchScript-based exporter's, taking turns; their ratios (torch.export / TorchScript, p50), whether they decode
    the same tokens, and each encoder graph's ONNX ``Loop`` nodes."""
    import onnx

    folders = {"torch_export": folder,
               "torchscript": torchscript_export(model, Path(tempfile.mkdtemp(prefix="hf_bahdanau_onnx_ts_")))}
    runtimes = {name: OnnxSeq2Seq(path, threads=threads) for name, path in folders.items()}

    def encode(runtime: OnnxSeq2Seq) -> Callable:
        return lambda ids, mask: runtime.encode(ids.numpy(), mask.numpy())

    def greedy(runtime: OnnxSeq2Seq) -> Callable:
        return lambda ids, mask: runtime.generate(ids.numpy(), mask.numpy(), max_new_tokens=TARGET_STEPS
                                                  ).sequences[0, 1:].tolist()

    encoders = {name: encode(runtime) for name, runtime in runtimes.items()}
    decoders = {name: greedy(runtime) for name, runtime in runtimes.items()}
    for measured in (encoders, decoders):
        batch1_latencies(measured, sources[:5], 1)  # warm-up
    encode_times, _ = batch1_latencies(encoders, sources, block)
    greedy_times, outputs = batch1_latencies(decoders, sources, block)
    encode_ms = {name: percentiles(values) for name, values in encode_times.items()}
    greedy_ms = {name: percentiles(values) for name, values in greedy_times.items()}
    return dict(
        batch1_encode_ms=encode_ms, batch1_greedy_ms=greedy_ms,
        torch_export_over_torchscript_p50={
            "encode": encode_ms["torch_export"]["p50"] / encode_ms["torchscript"]["p50"],
            "greedy": greedy_ms["torch_export"]["p50"] / greedy_ms["torchscript"]["p50"]},
        same_tokens=float(np.mean([a == b for a, b in zip(outputs["torch_export"], outputs["torchscript"])])),
        encoder_loop_nodes={name: [node.op_type for node in onnx.load(str(path / "encoder.onnx")).graph.node]
                            .count("Loop") for name, path in folders.items()},
    )


def operator_profile(folder: Path, threads: int, rows_per_source: int, top_k: int, calls: int) -> dict[str, float]:
    """Milliseconds of each operator of ``folder``'s decoder step (the fastest of ``calls`` calls, largest first) on
    the benchmark's decode batch with ``rows_per_source`` rows per source (beam search's), fetching ``top_k``
    candidates per row as the search does."""
    import onnxruntime

    runtime = OnnxSeq2Seq(folder, threads=threads)
    batch = synthetic_batch(1000)
    encoded, state = runtime.encode(batch["input_ids"].numpy(), batch["attention_mask"].numpy())
    rows = np.repeat(np.arange(batch["input_ids"].shape[0]), rows_per_source)
    encoded = runtime._rows({name: value for name, value in encoded.items() if name in runtime.step_inputs}, rows)
    feeds = {"tokens": np.full(len(rows), 3, dtype=np.int64), "top_k": np.array(top_k, dtype=np.int64), **encoded,
             **runtime._rows(state, rows)}
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads, options.enable_profiling = threads, True
    options.profile_file_prefix = str(Path(tempfile.mkdtemp(prefix="hf_bahdanau_profile_")) / "step")
    session = onnxruntime.InferenceSession(str(folder / "decoder_step.onnx"), options,
                                           providers=["CPUExecutionProvider"])
    for _ in range(calls):
        session.run(["top_log_probs", "top_tokens", *runtime.next_state_names], feeds)
    times = collections.defaultdict(list)
    for event in json.loads(Path(session.end_profiling()).read_text()):
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
            times[f"{event['args']['op_name']} {event['name'].removesuffix('_kernel_time')}"].append(event["dur"] / 1e3)
    return dict(sorted(((name, min(values)) for name, values in times.items()), key=lambda item: -item[1]))


def print_profile(folder: Path, threads: int, calls: int) -> None:
    """``--profile``: the step's operators at beam 5, batch 64, at ``threads`` intra-op threads and at one."""
    for count in sorted({threads, 1}, reverse=True):
        profile = operator_profile(folder, count, 5, 10, calls)
        total = sum(profile.values())
        print(f"decoder step, beam 5 at batch 64 (320 rows), {count} intra-op thread(s): {total:.2f} ms in "
              f"{len(profile)} operators (each the fastest of {calls} calls)")
        for name, milliseconds in list(profile.items())[:12]:
            print(f"  {milliseconds:7.3f} ms  {100 * milliseconds / total:5.1f}%  {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sentences", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch1_threads", type=int, default=1)
    parser.add_argument("--block", type=int, default=10, help="batch 1: sentences per decoder per turn")
    parser.add_argument("--model", default="rnnsearch", choices=sorted(MODELS),
                        help="run_benchmarks.py's model to export (the naive loop is always rnnsearch's)")
    parser.add_argument("--output", type=Path, default=RESULTS / f"{date.today()}-onnx.json")
    parser.add_argument("--profile", action="store_true", help="only where a batch-64 beam-5 step spends its time")
    parser.add_argument("--profile_calls", type=int, default=30)
    args = parser.parse_args()
    model, naive = build_ours(args.model).eval(), build_naive().eval()
    folder = Path(tempfile.mkdtemp(prefix="hf_bahdanau_onnx_"))
    export_onnx(model, folder)
    if args.profile:
        print_profile(folder, args.threads, args.profile_calls)
        return
    quantize_onnx(folder)
    torch.set_num_threads(args.batch1_threads)
    runtime = OnnxSeq2Seq(folder, threads=args.batch1_threads)
    runtime_int8 = OnnxSeq2Seq(folder, quantized=True, threads=args.batch1_threads)
    greedy = dict(max_new_tokens=TARGET_STEPS)
    decoders = {
        "onnxruntime": lambda ids, mask: runtime.generate(ids.numpy(), mask.numpy(), **greedy)
        .sequences[0, 1:].tolist(),
        "onnxruntime_int8": lambda ids, mask: runtime_int8.generate(ids.numpy(), mask.numpy(), **greedy)
        .sequences[0, 1:].tolist(),
        "pytorch_generate": lambda ids, mask: model.generate(input_ids=ids, attention_mask=mask, do_sample=False,
                                                             **greedy)[0, 1:].tolist(),
        "naive_loop": lambda ids, mask: naive.greedy(ids, mask, TARGET_STEPS)[0].tolist(),
    }
    batch = synthetic_batch(seed=1, batch_size=args.sentences)
    sources = [(batch["input_ids"][row:row + 1, :int(batch["attention_mask"][row].sum())],
                batch["attention_mask"][row:row + 1, :int(batch["attention_mask"][row].sum())])
               for row in range(args.sentences)]
    batch1_latencies(decoders, sources[:5], 1)  # warm-up
    times, outputs = batch1_latencies(decoders, sources, args.block)
    batch1 = {name: percentiles(values) for name, values in times.items()}
    alternating, _ = batch1_latencies(decoders, sources, 1)
    batch1_alternating = {name: percentiles(values) for name, values in alternating.items()}
    same = [a == b for a, b in zip(outputs["onnxruntime"], outputs["pytorch_generate"])]
    same_int8 = [a == b for a, b in zip(outputs["onnxruntime_int8"], outputs["onnxruntime"])]
    exporters = exporter_comparison(model, folder, sources, args.block, args.batch1_threads)

    torch.set_num_threads(args.threads)
    runtime = OnnxSeq2Seq(folder, threads=args.threads)
    runtime_int8 = OnnxSeq2Seq(folder, quantized=True, threads=args.threads)
    wide = synthetic_batch(seed=2, batch_size=64)
    throughput = {}
    for beams in (1, 5):
        options = dict(num_beams=beams, max_new_tokens=TARGET_STEPS) | ({"early_stopping": True} if beams > 1 else {})
        runs = {"onnxruntime": [], "onnxruntime_int8": [], "pytorch_generate": []}
        for _ in range(args.repeats):
            for name, run in (
                ("onnxruntime", lambda: runtime.generate(wide["input_ids"].numpy(), wide["attention_mask"].numpy(),
                                                         **options)),
                ("onnxruntime_int8", lambda: runtime_int8.generate(wide["input_ids"].numpy(),
                                                                   wide["attention_mask"].numpy(), **options)),
                ("pytorch_generate", lambda: model.generate(input_ids=wide["input_ids"],
                                                            attention_mask=wide["attention_mask"], do_sample=False,
                                                            **options)),
            ):
                start = time.perf_counter()
                with torch.no_grad():
                    run()
                runs[name].append(64 / (time.perf_counter() - start))
        throughput[f"{'greedy' if beams == 1 else 'beam5'}_b64_sentences_per_s"] = {
            name: float(np.median(values)) for name, values in runs.items()}

    report = dict(
        command=" ".join(sys.argv), model=args.model, torch=torch.__version__, threads=args.threads,
        batch1_threads=args.batch1_threads, sentences=args.sentences,
        batch1_block=args.block, batch1_greedy_ms=batch1, batch1_ratios=ratios(batch1),
        batch1_alternating_greedy_ms=batch1_alternating, batch1_alternating_ratios=ratios(batch1_alternating),
        ort_equals_generate=float(np.mean(same)), int8_equals_fp32=float(np.mean(same_int8)),
        batch64=throughput,
        batch64_ratios={key: {"ort_over_generate": row["onnxruntime"] / row["pytorch_generate"],
                              "int8_over_generate": row["onnxruntime_int8"] / row["pytorch_generate"]}
                        for key, row in throughput.items()},
        exporters=exporters,
    )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    for title, table in ((f"in turns of {args.block} sentences", batch1), ("alternating sentence by sentence",
                                                                          batch1_alternating)):
        print(f"batch-1 greedy, ms per sentence over {args.sentences} sources ({TARGET_STEPS} new tokens), {title}:")
        for name, row in table.items():
            print(f"  {name:18s} p50 {row['p50']:7.2f}  p90 {row['p90']:7.2f}  p99 {row['p99']:7.2f}")
        print("  ratios:", {key: round(value, 3) for key, value in ratios(table).items()})
    print(f"  ORT tokens = generate() tokens: {report['ort_equals_generate']:.1%}; int8 = fp32: "
          f"{report['int8_equals_fp32']:.1%}")
    for key, row in throughput.items():
        print(f"{key}: " + ", ".join(f"{name} {value:.1f}" for name, value in row.items()),
              {name: round(value, 2) for name, value in report["batch64_ratios"][key].items()})
    print("batch-1, torch.export's graphs against the TorchScript-based exporter's, p50 ms:",
          {kind: {name: round(row["p50"], 3) for name, row in exporters[f"batch1_{kind}_ms"].items()}
           for kind in ("encode", "greedy")}, "ratios:",
          {key: round(value, 3) for key, value in exporters["torch_export_over_torchscript_p50"].items()},
          "Loop nodes:", exporters["encoder_loop_nodes"], f"same tokens: {exporters['same_tokens']:.1%}")
    print(f"written to {args.output}")


if __name__ == "__main__":
    main()
