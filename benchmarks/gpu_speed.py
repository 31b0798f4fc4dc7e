"""Training and decoding speed on one device, in fp32 and bf16: our rnnsearch and luong-general at the peers' size
(run_benchmarks.py's SIZES) beside the installed peer toolkits (peers/) and transformers' MarianMTModel of about the
same parameter count (random weights), in one table. benchmarks/gpu_check.sh runs it on a machine with CUDA.

    python benchmarks/gpu_speed.py --output benchmarks/results/gpu.md            # on the CUDA device, 3 repeats
    python benchmarks/gpu_speed.py --device cpu --quick --output /tmp/dry.md     # a dry run on the CPU

The table goes to --output (markdown) and, with every value of every repeat, to the same path with ``.json``.
Every implementation is measured by peers/peer_harness.py's ``measure``, the peers' own measurements, on
run_benchmarks.py's batches: training target tokens/s (forward + backward + fused Adam step, one warm-up step),
greedy and beam-5 sentences/s on a batch of 64 and greedy ms per sentence one at a time, at most 30 decoder steps;
medians over --repeats rounds with their range. bf16 runs each loss and search under ``torch.autocast`` to
bfloat16 (the weights and the optimizer stay fp32). --quick is a dry run that shows that everything runs, and
measures nothing: one round of two training batches, our models and Marian with embeddings and states of 32,
Marian with one layer a side (the peers keep their size).
"""

import argparse
import json
import platform
import sys
import tempfile
import traceback
from pathlib import Path

import torch
import transformers
from transformers import MarianConfig, MarianMTModel

import peers
from peers.peer_harness import BEAMS, DTYPES, Peer, measure, on_device
from run_benchmarks import SIZES, synthetic_batch

from hf_bahdanau import BahdanauConfig, BahdanauForConditionalGeneration

PRESETS = ("rnnsearch", "luong-general")
QUICK_SIZES = dict(SIZES, embedding_size=32, encoder_hidden_size=16, hidden_size=32, attention_size=32, output_size=32)
HEADERS = {"train_tokens_per_s": "train tgt tok/s", "greedy_b64_sentences_per_s": "greedy b64 sent/s",
           "beam5_b64_sentences_per_s": f"beam-{BEAMS} b64 sent/s", "greedy_b1_ms_per_sentence": "batch-1 greedy ms"}
COLUMNS = ("implementation", "dtype", "parameters", *HEADERS.values())


def build_ours(preset: str, sizes: dict) -> BahdanauForConditionalGeneration:
    """Our model of ``preset`` at ``sizes`` (a config's fields), seed 0."""
    torch.manual_seed(0)
    return BahdanauForConditionalGeneration(BahdanauConfig.from_preset(preset, **sizes))


def parameter_count(model: torch.nn.Module) -> int:
    return sum(parameter.numel() for parameter in model.parameters())


def marian_config(d_model: int, vocab_size: int, parameters: int, max_layers: int = 6) -> MarianConfig:
    """A Transformer of width ``d_model`` (4 heads, feed-forward 4 × d_model, shared embeddings, no dropout) with
    the number of layers (the same on both sides, 1 to ``max_layers``) that brings its size closest to
    ``parameters``; our ids (pad 0, start 1, end 2) and no forced end token, as our models."""
    def config(layers: int) -> MarianConfig:
        return MarianConfig(vocab_size=vocab_size, d_model=d_model, encoder_layers=layers, decoder_layers=layers,
                            encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=4 * d_model,
                            decoder_ffn_dim=4 * d_model, max_position_embeddings=256, dropout=0.0,
                            attention_dropout=0.0, activation_dropout=0.0, pad_token_id=0, decoder_start_token_id=1,
                            eos_token_id=2, forced_eos_token_id=None)

    def size(layers: int) -> int:
        with torch.device("meta"):  # counts without allocating
            return parameter_count(MarianMTModel(config(layers)))

    return config(min(range(1, max_layers + 1), key=lambda layers: abs(size(layers) - parameters)))


def generation_peer(name: str, version: str, model: transformers.PreTrainedModel, device: torch.device) -> Peer:
    """A transformers encoder-decoder in the harness's terms: our batches as they are, on ``device``; the model's
    own loss (cross-entropy over ``labels``, -100 ignored); ``generate()``'s greedy and beam search."""
    model.to(device)
    pad = model.generation_config.pad_token_id

    def decode(batch: dict, beams: int, max_steps: int) -> torch.Tensor:
        options = dict(num_beams=beams, early_stopping=True) if beams > 1 else {}
        sequences = model.generate(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                                   max_new_tokens=max_steps, do_sample=False, **options)
        return (sequences[:, 1:] != pad).sum(1)  # tokens after the start token, up to the end token

    return Peer(name=name, version=version, options=model.config.to_diff_dict(), model=model,
                prepare=lambda batch: on_device(batch, device), loss=lambda batch: model(**batch).loss,
                decode=decode)


def table_row(implementation: str, dtype: str, parameters: int, measured: dict) -> dict:
    return dict(implementation=implementation, dtype=dtype, parameters=parameters,
                **{key: measured[key] for key in HEADERS}, mean_hypothesis_length=measured["mean_hypothesis_length"])


def markdown(results: dict) -> str:
    """The table: one row per implementation and dtype, each metric's median [min–max] over the repeats."""
    lines = [f"Device: {results['device_name']} ({results['device']}); torch {results['torch']}, transformers "
             f"{results['transformers']}; medians [min–max] of {results['repeats']} round(s)"
             + (" (--quick: a dry run, sizes below the peers')" if results["quick"] else "") + ".", "",
             "| " + " | ".join(COLUMNS) + " |", "|" + " --- |" * len(COLUMNS)]
    for row in results["rows"]:
        cells = [row["implementation"], row["dtype"], f"{row['parameters'] / 1e6:.2f} M"]
        cells += [f"{row[key]['median']:.1f} [{row[key]['min']:.1f}–{row[key]['max']:.1f}]" for key in HEADERS]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"Marian: {results['marian']}.", *results["skipped"]]
    lines += [f"Failed: {failure}" for failure in results["failed"]]
    return "\n".join(lines) + "\n"


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu",
                        help="cpu, cuda or cuda:N (default: cuda when there is one)")
    parser.add_argument("--dtypes", nargs="+", choices=list(DTYPES), default=list(DTYPES))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--train_batches", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2, help="CPU threads (the CPU's work on any device)")
    parser.add_argument("--quick", action="store_true",
                        help="a dry run: 1 repeat, 2 training batches, width 32, Marian 1 + 1 layers")
    parser.add_argument("--output", required=True, help="the markdown table's path; the JSON goes beside it")
    args = parser.parse_args(argv)
    if torch.device(args.device).type == "cuda" and not torch.cuda.is_available():
        parser.error(f"--device {args.device}: torch {torch.__version__} sees no CUDA device; use --device cpu")
    if args.repeats < 1 or args.train_batches < 1:
        parser.error(f"--repeats {args.repeats} --train_batches {args.train_batches}: both must be at least 1")
    if args.quick:
        args.repeats, args.train_batches = 1, 2
    return args


def main(argv: list[str] | None = None) -> int:
    """Measure every implementation in every dtype; write the table; 1 if one of them failed, else 0."""
    args = parse_arguments(argv)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    sizes = QUICK_SIZES if args.quick else SIZES
    batches, decode_batch = [synthetic_batch(seed) for seed in range(args.train_batches)], synthetic_batch(1000)
    ours = {preset: build_ours(preset, sizes) for preset in PRESETS}
    marian = marian_config(sizes["hidden_size"], sizes["vocab_size"], parameter_count(ours["rnnsearch"]),
                           max_layers=1 if args.quick else 6)
    torch.manual_seed(0)
    implementations = {preset: generation_peer(preset, "hf_bahdanau", model, device) for preset, model in ours.items()}
    implementations["marian"] = generation_peer("marian", transformers.__version__, MarianMTModel(marian), device)
    results = dict(device=str(device), device_name=torch.cuda.get_device_name(device) if device.type == "cuda"
                   else platform.processor() or platform.machine(), torch=torch.__version__,
                   transformers=transformers.__version__, repeats=args.repeats, train_batches=args.train_batches,
                   quick=args.quick, sizes=sizes,
                   marian=(f"MarianMTModel, d_model {marian.d_model}, {marian.encoder_layers} + "
                           f"{marian.decoder_layers} layers, {marian.encoder_attention_heads} heads, feed-forward "
                           f"{marian.encoder_ffn_dim}, shared embeddings, random weights"),
                   rows=[], skipped=[], failed=[])
    installed = peers.available_peers()
    results["skipped"] += [f"Peer {name}: not installed under {peers.venv_root()} "
                                "(benchmarks/peers/install_peers.sh; HF_BAHDANAU_PEERS), skipped."
                                for name in peers.PEERS if name not in installed]
    with tempfile.TemporaryDirectory() as folder:
        batches_file = Path(folder) / "batches.pt"
        peers.save_batches(batches_file, batches, decode_batch)
        for dtype in args.dtypes:
            for name, implementation in implementations.items():
                implementation.autocast_dtype = DTYPES[dtype]
                label = f"{name} ({implementation.version})"
                try:
                    measured = measure(implementation, batches, decode_batch, args.repeats, count_flops=False)
                except Exception as error:  # a check reports every failure, then goes on with the others
                    traceback.print_exc()
                    results["failed"].append(f"{label} in {dtype}: {type(error).__name__}: {error}")
                    continue
                results["rows"].append(table_row(label, dtype, parameter_count(implementation.model), measured))
            for name in installed:
                try:
                    run = peers.run_peer(name, batches_file, args.threads, args.train_batches, args.repeats,
                                         device=str(device), dtype=dtype)
                except RuntimeError as error:  # its stderr's last lines
                    print(error, file=sys.stderr)
                    results["failed"].append(f"Peer {name} in {dtype}: {str(error).splitlines()[-1]}")
                    continue
                results["rows"].append(table_row(f"{name} {run['version']}", dtype, run["parameters"], run))
    output = Path(args.output)
    output.write_text(markdown(results))
    output.with_suffix(".json").write_text(json.dumps(results, indent=2))
    print(markdown(results))
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
