"""The exported main-job model on the dates test set: ONNX Runtime fp32 and int8 against PyTorch generate().

    python training/run_seq2seq.py training/configs/dates_rnnsearch.json     # the main job: outputs/dates-rnnsearch
    python benchmarks/onnx_dates.py                                           # benchmarks/results/<date>-onnx-dates.json

For greedy and beam-5 decoding of the 1,000 test sentences: the share of outputs whose tokens equal generate()'s,
and the exact match of each backend against the references (int8's change in quality). Batch-1 greedy latency per
sentence (one thread, p50/p90/p99 over the test sentences) of ONNX Runtime fp32 and int8 and of generate().
"""

import argparse
import json
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
import hf_bahdanau  # noqa: E402, F401  (registers the Auto classes)
from hf_bahdanau.modeling.translation import translate  # noqa: E402
from hf_bahdanau.onnx.export import export_onnx, quantize_onnx  # noqa: E402
from hf_bahdanau.onnx.runtime import OnnxSeq2Seq  # noqa: E402


def latencies_ms(decode, texts: list[str]) -> dict[str, float]:
    times = []
    for text in texts:
        start = time.perf_counter()
        decode(text)
        times.append(1000 * (time.perf_counter() - start))
    return {name: float(np.percentile(times, q)) for name, q in (("p50", 50), ("p90", 90), ("p99", 99))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", type=Path, default=REPO / "outputs/dates-rnnsearch")
    parser.add_argument("--test_file", type=Path, default=REPO / "training/data/dates/test.jsonl")
    parser.add_argument("--output", type=Path, default=REPO / f"benchmarks/results/{date.today()}-onnx-dates.json")
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows = [json.loads(line) for line in args.test_file.open()]
    texts, references = [row["source"] for row in rows], [row["target"] for row in rows]
    model, tokenizer = AutoModelForSeq2SeqLM.from_pretrained(args.model), AutoTokenizer.from_pretrained(args.model)
    folder = export_onnx(model, Path(tempfile.mkdtemp(prefix="dates_onnx_")), tokenizer=tokenizer)
    quantize_onnx(folder)
    backends = {"pytorch": model, "onnxruntime": OnnxSeq2Seq(folder, threads=1),
                "onnxruntime_int8": OnnxSeq2Seq(folder, quantized=True, threads=1)}
    report = {"model": str(args.model), "sentences": len(texts), "torch": torch.__version__}
    for beams in (1, 5):
        outputs = {name: translate(backend, tokenizer, texts, num_beams=beams, batch_size=64)
                   for name, backend in backends.items()}
        report[f"beams_{beams}"] = {
            name: {"exact_match": float(np.mean([r.translation == ref for r, ref in zip(results, references)])),
                   "tokens_equal_generate": float(np.mean([r.target_tokens == p.target_tokens for r, p in
                                                           zip(results, outputs["pytorch"])]))}
            for name, results in outputs.items()}
    report["batch1_greedy_ms"] = {name: latencies_ms(lambda text: translate(backend, tokenizer, [text]), texts)
                                  for name, backend in backends.items()}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
