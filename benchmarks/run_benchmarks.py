"""Speed and memory of hf_bahdanau against the naive reference, measured in one run.

    python benchmarks/run_benchmarks.py                 # full run: table + benchmarks/results.json
    python benchmarks/run_benchmarks.py --repeats 1 --train_batches 3 --models rnnsearch   # quick look
    python benchmarks/run_benchmarks.py --peers          # plus every installed peer toolkit (peers/README.md)
    python benchmarks/run_benchmarks.py --decode_only --peers --rounds 25 --models luong-feed-lstm-general
                                                         # decoding only: generate(), ONNX Runtime, the peers

Sizes (those of the peers' comparison, docs/performance.md): vocab 8000, embedding 256, bidirectional
encoder 2 x 128, decoder 256, one layer each, batch 64, source 20–40 tokens, target 25–35.
Every figure is a median over ``--repeats`` runs (with min–max), ours and the naive reference
alternating in the same process, reported with our speed-up over it (> 1: ours is faster). Peak RSS of training is
measured in a fresh subprocess per implementation. The useful share of the GEMM peak is the
model's useful matmul FLOPs per target token (torch's FlopCounterMode over forward + backward of each
example alone, without padding, as for the peers: ``peers/peer_harness.py``) x tokens/s / the fp32 GEMM
FLOP/s measured right before that training repeat (median over repeats). Every implementation steps
with torch's fused Adam (needs torch >= 2.4 on CPU), the optimizer of Trainer's default ``adamw_torch_fused``.

``--decode_only`` trains nothing: it times each model's PyTorch generate(), the same model exported to ONNX and
decoded by ONNX Runtime (``hf_bahdanau.onnx``, the ``onnx`` extra) and each peer's own search (a worker process in
the peer's virtualenv, ``peer_decoding.py``, that keeps its model loaded) in interleaved rounds: each round runs every
implementation once per metric, in an order rotated round by round, after one unrecorded warm-up round. Metrics:
greedy and beam-5 over the 64-sentence decode batch (sentences/s) and over its first 8 sources one at a time
(ms per sentence), at most 30 new tokens, ``--threads`` threads for everyone. Reported: median and min–max over the
rounds, and each of ours over the fastest peer of the same run (by median), as the ratio of the medians and as the
median of the per-round ratios, which the machine's drift between rounds does not move.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peers  # noqa: E402
from peers.peer_harness import (  # noqa: E402
    gemm_flops_per_second, gemm_peak_shares, summarize, useful_flops_per_token,
)
from naive_bahdanau import NaiveBahdanau  # noqa: E402

from hf_bahdanau import BahdanauConfig, BahdanauForConditionalGeneration  # noqa: E402
from hf_bahdanau.onnx.runtime import OnnxSeq2Seq  # noqa: E402

VOCAB, BATCH, TARGET_STEPS = 8000, 64, 30
SIZES = dict(vocab_size=VOCAB, embedding_size=256, encoder_hidden_size=128, bidirectional=True, hidden_size=256,
             attention_size=256, output_size=256, encoder_layers=1, decoder_layers=1)
MODELS = {
    "rnnsearch": dict(preset="rnnsearch"),
    "luong-feed-gru-additive": dict(preset="luong-concat", rnn_type="gru", bridge="last"),
    "luong-feed-lstm-general": dict(preset="luong-general", rnn_type="lstm", bridge="last"),
    "luong-general-nofeed": dict(preset="luong-general", rnn_type="lstm", bridge="last", input_feeding=False),
}
LOWER_IS_BETTER = {"greedy_b1_ms_per_sentence", "beam5_b1_ms_per_sentence"}
METRICS = ("train_tokens_per_s", "greedy_b64_sentences_per_s", "beam5_b64_sentences_per_s", "greedy_b1_ms_per_sentence")
# --decode_only: metric -> (beams, "b64": the decode batch at once, sentences/s | "b1": one source at a time, ms)
DECODE_METRICS = {"greedy_b64_sentences_per_s": (1, "b64"), "beam5_b64_sentences_per_s": (5, "b64"),
                  "greedy_b1_ms_per_sentence": (1, "b1"), "beam5_b1_ms_per_sentence": (5, "b1")}
LATENCY_SENTENCES = 8
# Each peer runs a Luong-style decoder with input feeding: compared with our model of the same architecture.
LIKE_WITH_LIKE = {"opennmt": "luong-feed-gru-additive", "joeynmt": "luong-feed-gru-additive",
                  "fairseq": "luong-feed-lstm-general"}


def build_ours(name: str) -> BahdanauForConditionalGeneration:
    overrides = dict(MODELS[name])
    config = BahdanauConfig.from_preset(overrides.pop("preset"), **SIZES, **overrides)
    torch.manual_seed(0)
    return BahdanauForConditionalGeneration(config)


def build_naive() -> NaiveBahdanau:
    torch.manual_seed(0)
    return NaiveBahdanau(VOCAB, embedding_size=256, encoder_hidden_size=128, hidden_size=256, attention_size=256,
                         output_size=256)


def synthetic_batch(seed: int, batch_size: int = BATCH) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    source_lengths = torch.randint(20, 41, (batch_size,), generator=generator)
    target_lengths = torch.randint(25, 36, (batch_size,), generator=generator)
    input_ids = torch.randint(3, VOCAB, (batch_size, int(source_lengths.max())), generator=generator)
    attention_mask = (torch.arange(input_ids.shape[1])[None] < source_lengths[:, None]).long()
    targets = torch.randint(3, VOCAB, (batch_size, int(target_lengths.max())), generator=generator)
    target_mask = torch.arange(targets.shape[1])[None] < target_lengths[:, None]
    labels = targets.masked_fill(~target_mask, -100)
    decoder_input_ids = torch.cat([torch.ones(batch_size, 1, dtype=torch.long), targets[:, :-1]], dim=1)
    decoder_input_ids = decoder_input_ids.masked_fill(~torch.cat([torch.ones(batch_size, 1, dtype=torch.bool),
                                                                   target_mask[:, :-1]], 1), 0)
    return dict(input_ids=input_ids * attention_mask, attention_mask=attention_mask,
                decoder_input_ids=decoder_input_ids, labels=labels)


def loss_of(model, batch) -> torch.Tensor:
    if isinstance(model, NaiveBahdanau):
        return model(**batch)
    return model(**batch).loss


def train_tokens_per_second(model, batches: list[dict]) -> float:
    """Target tokens per second of forward + backward + Adam step, after one warm-up step.

    Adam is torch's fused kernel (what Trainer's default ``adamw_torch_fused`` runs); the naive reference and
    the peers (``peers/peer_harness.py``) step with the same optimizer."""
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4, fused=True)

    def step(batch: dict) -> None:
        loss_of(model, batch).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    step(batches[0])
    start = time.perf_counter()
    for batch in batches:
        step(batch)
    return sum(int((b["labels"] != -100).sum()) for b in batches) / (time.perf_counter() - start)


@torch.no_grad()
def search(model, input_ids: torch.Tensor, attention_mask: torch.Tensor, num_beams: int) -> None:
    """One greedy (``num_beams=1``) or beam search of ``model`` over the sources, at most TARGET_STEPS new tokens:
    ours through generate(), the naive reference through its own loops, an ``OnnxSeq2Seq`` through ONNX Runtime."""
    options = dict(num_beams=num_beams) | ({"early_stopping": True} if num_beams > 1 else {})
    if isinstance(model, NaiveBahdanau):
        if num_beams == 1:
            model.greedy(input_ids, attention_mask, TARGET_STEPS)
        else:
            model.beam_search(input_ids, attention_mask, num_beams, TARGET_STEPS)
    elif isinstance(model, OnnxSeq2Seq):
        model.generate(input_ids.numpy(), attention_mask.numpy(), max_new_tokens=TARGET_STEPS, **options)
    else:
        model.generate(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=TARGET_STEPS,
                       do_sample=False, **options)


def decode_sentences_per_second(model, batch: dict, num_beams: int) -> float:
    if isinstance(model, torch.nn.Module):
        model.eval()
    start = time.perf_counter()
    search(model, batch["input_ids"], batch["attention_mask"], num_beams)
    return batch["input_ids"].shape[0] / (time.perf_counter() - start)


def batch1_latency_ms(model, batch: dict, num_beams: int = 1, sentences: int = LATENCY_SENTENCES) -> float:
    """Milliseconds per sentence of searching the first ``sentences`` sources of ``batch`` one at a time."""
    if isinstance(model, torch.nn.Module):
        model.eval()
    ones = []
    for row in range(sentences):
        length = int(batch["attention_mask"][row].sum())
        ones.append((batch["input_ids"][row:row + 1, :length], batch["attention_mask"][row:row + 1, :length]))
    start = time.perf_counter()
    for input_ids, attention_mask in ones:
        search(model, input_ids, attention_mask, num_beams)
    return (time.perf_counter() - start) / sentences * 1000


def train_flops_per_token(model, batch: dict) -> float:
    return useful_flops_per_token(lambda example: loss_of(model, example), model, batch)


def peak_training_rss_mb(implementation: str, batches: int) -> float:
    """Peak RSS of a fresh process that trains ``implementation`` for a few batches.

    Read from /proc/self/status (VmHWM, Linux): ``getrusage``'s ru_maxrss survives exec, so in a child
    it reports at least the parent's RSS at the fork, i.e. the size this benchmark process had grown to.
    """
    code = (f"import sys; sys.argv=['x']; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
            "import run_benchmarks as rb, torch; torch.set_num_threads(2); "
            f"m = rb.build_naive() if {implementation!r} == 'naive' else rb.build_ours({implementation!r}); "
            f"rb.train_tokens_per_second(m, [rb.synthetic_batch(s) for s in range({batches})]); "
            "print(next(line for line in open('/proc/self/status') if line.startswith('VmHWM:')).split()[1])")
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return int(output.split()[-1]) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--train_batches", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--output", default=str(Path(__file__).parent / "results.json"))
    parser.add_argument("--peers", nargs="*", default=None, choices=peers.PEERS,
                        help="also measure these peer toolkits (no names: every installed one; see peers/README.md)")
    parser.add_argument("--decode_only", action="store_true",
                        help="no training: generate(), ONNX Runtime and the peers' searches in interleaved rounds")
    parser.add_argument("--rounds", type=int, default=10, help="--decode_only: the recorded rounds")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    peer_names = None if args.peers is None else (args.peers or peers.available_peers())
    if args.decode_only:
        if args.rounds < 1:
            parser.error(f"--rounds must be ≥ 1, got {args.rounds}")
        results = measure_decoding(args.models, peer_names or [], args.rounds, args.threads)
        Path(args.output).write_text(json.dumps(results, indent=2))
        print(f"results in {args.output}")
        return
    unmatched = [peer for peer in peer_names or () if LIKE_WITH_LIKE[peer] not in args.models]
    if unmatched:  # a peer runs between the repeats of the model it is compared with
        parser.error(f"--peers {' '.join(unmatched)} need their like-with-like models in --models: "
                     + ", ".join(f"{peer} -> {LIKE_WITH_LIKE[peer]}" for peer in unmatched))

    batches = [synthetic_batch(seed) for seed in range(args.train_batches)]
    decode_batch = synthetic_batch(1000)
    metrics = {
        "train_tokens_per_s": lambda m: train_tokens_per_second(m, batches),
        "greedy_b64_sentences_per_s": lambda m: decode_sentences_per_second(m, decode_batch, 1),
        "beam5_b64_sentences_per_s": lambda m: decode_sentences_per_second(m, decode_batch, 5),
        "greedy_b1_ms_per_sentence": lambda m: batch1_latency_ms(m, decode_batch),
    }
    naive = build_naive()
    results = dict(threads=args.threads, repeats=args.repeats, models={})
    naive_rss = peak_training_rss_mb("naive", 2)
    peer_runs = {name: [] for name in peer_names or ()}
    batches_file = Path(args.output).with_suffix(".batches.pt")
    if peer_runs:
        peers.save_batches(batches_file, batches, decode_batch)
    for name in args.models:
        ours = build_ours(name)
        measured = {key: {"ours": [], "naive": []} for key in metrics}
        gemm = []
        for _ in range(args.repeats):
            gemm.append(gemm_flops_per_second())  # right before our training measurement
            for key, measure in metrics.items():  # A/B alternating, same batches
                measured[key]["ours"].append(measure(ours))
                measured[key]["naive"].append(measure(naive))
            for peer in peer_runs:  # the peers in between, one run each per repeat
                if LIKE_WITH_LIKE[peer] == name:
                    peer_runs[peer].append(peers.run_peer(peer, batches_file, args.threads, args.train_batches, 1))
        row = {key: {side: summarize(values) for side, values in sides.items()} for key, sides in measured.items()}
        for key in row:  # speed-up over the naive reference: > 1 means ours is better
            row[key]["speedup"] = better_by(key, row[key]["ours"]["median"], row[key]["naive"]["median"])
        flops = train_flops_per_token(ours, batches[0])
        row["train_mflops_per_token"] = flops / 1e6
        row["gemm_flops_per_s"] = summarize(gemm)
        row["gemm_peak_share"] = gemm_peak_shares(flops, measured["train_tokens_per_s"]["ours"], gemm)
        ours_rss = peak_training_rss_mb(name, 2)
        row["peak_train_rss_mb"] = dict(ours=ours_rss, naive=naive_rss, ours_over_naive=ours_rss / naive_rss)
        results["models"][name] = row
        print_row(name, row)
    if peer_runs:
        results["peers"] = compare_with_peers(peer_runs, results["models"])
        results["ours_over_fastest_peer"] = compare_with_fastest_peer(results["peers"], results["models"])
        batches_file.unlink()
    Path(args.output).write_text(json.dumps(results, indent=2))
    gemm = [value for row in [*results["models"].values(), *results.get("peers", {}).values()]
            for value in row["gemm_flops_per_s"]["values"]]
    print(f"\nfp32 GEMM {min(gemm) / 1e9:.0f}–{max(gemm) / 1e9:.0f} GFLOP/s over the run ({args.threads} threads); "
          f"results in {args.output}")


class PeerWorker:
    """A peer's search in a process of its own virtualenv (``peer_decoding.py``), its model built once: calling it
    with (beams, "b64" | "b1") runs one timed search and returns its figure (sentences/s, ms per sentence)."""

    def __init__(self, name: str, batches_file: Path, threads: int) -> None:
        here = Path(__file__).resolve().parent
        self.name, self.errors = name, tempfile.TemporaryFile(mode="w+")
        self.process = subprocess.Popen(
            [str(peers.peer_python(name)), str(here / "peer_decoding.py"), name, "--batches", str(batches_file),
             "--threads", str(threads)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errors,
            text=True, env=os.environ | {"PYTHONPATH": str(here / "peers")})
        self.version = self._answer()["ready"]

    def _answer(self) -> dict:
        line = self.process.stdout.readline()
        if not line:
            self.errors.seek(0)
            raise RuntimeError(f"peer {self.name}'s decoding worker ended (exit {self.process.wait()}):\n"
                               f"{self.errors.read()[-4000:]}")
        return json.loads(line)

    def __call__(self, beams: int, batch: str) -> float:
        self.process.stdin.write(json.dumps(dict(beams=beams, batch=batch)) + "\n")
        self.process.stdin.flush()
        return self._answer()["value"]

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()
        self.errors.close()


def measure_decoding(models: list[str], peer_names: list[str], rounds: int, threads: int) -> dict:
    """``--decode_only``: every ``DECODE_METRICS`` figure of each model's generate() and ONNX Runtime decoder and
    of each peer's search, in ``rounds`` interleaved rounds after a warm-up round; see the module's docstring."""
    from hf_bahdanau.onnx.export import export_onnx

    decode_batch = synthetic_batch(1000)
    implementations = {}  # name -> (beams, batch kind) -> figure
    for name in models:
        model = build_ours(name).eval()
        folder = export_onnx(model, tempfile.mkdtemp(prefix=f"hf_bahdanau_{name}_"))
        runtimes = {f"{name} onnxruntime": OnnxSeq2Seq(folder, threads=threads),  # intra-op threads
                    # the batch as `threads` slices at once, one intra-op thread each (one slice at batch 1)
                    f"{name} onnxruntime batch_threads": OnnxSeq2Seq(folder, threads=1, batch_threads=threads)}
        for label, decoder in ((f"{name} generate()", model), *runtimes.items()):
            implementations[label] = lambda beams, kind, decoder=decoder: (
                decode_sentences_per_second(decoder, decode_batch, beams) if kind == "b64"
                else batch1_latency_ms(decoder, decode_batch, beams))
    batches_file = Path(tempfile.mkdtemp(prefix="hf_bahdanau_peers_")) / "batches.pt"
    peers.save_batches(batches_file, [], decode_batch)
    workers = [PeerWorker(name, batches_file, threads) for name in peer_names]
    implementations |= {worker.name: worker for worker in workers}
    measured = {label: {metric: [] for metric in DECODE_METRICS} for label in implementations}
    try:
        for round_index in range(rounds + 1):  # round 0 warms up
            for metric, (beams, kind) in DECODE_METRICS.items():
                labels = list(implementations)
                shift = round_index % len(labels)
                for label in labels[shift:] + labels[:shift]:
                    value = implementations[label](beams, kind)
                    if round_index:
                        measured[label][metric].append(value)
            if round_index:
                print(f"round {round_index}/{rounds}", flush=True)
    finally:
        for worker in workers:
            worker.close()
        batches_file.unlink()
    results = dict(threads=threads, rounds=rounds, torch=torch.__version__,
                   peers={worker.name: worker.version for worker in workers},
                   implementations={label: {metric: summarize(values) for metric, values in row.items()}
                                    for label, row in measured.items()})
    if workers:
        results["over_fastest_peer"] = compare_decoding(measured, [worker.name for worker in workers])
    print_decoding(results)
    return results


def compare_decoding(measured: dict[str, dict[str, list[float]]], peer_names: list[str]) -> dict:
    """For every metric, the fastest peer (best median) and each other implementation over it (> 1: better):
    ``of_medians``, and ``per_round``, the ratios of the figures measured in the same round (summarized)."""
    compared = {}
    for metric in DECODE_METRICS:
        medians = {label: summarize(row[metric])["median"] for label, row in measured.items()}
        fastest = max(peer_names, key=lambda peer: better_by(metric, medians[peer], 1.0))
        compared[metric] = dict(peer=fastest, peer_median=medians[fastest], ours={
            label: dict(of_medians=better_by(metric, medians[label], medians[fastest]),
                        per_round=summarize([better_by(metric, value, reference) for value, reference
                                             in zip(row[metric], measured[fastest][metric])]))
            for label, row in measured.items() if label not in peer_names})
    return compared


def print_decoding(results: dict) -> None:
    """The ``--decode_only`` table in Markdown: median [min–max] per implementation and metric, and under each of
    ours its median per-round ratio to the fastest peer."""
    compared = results.get("over_fastest_peer", {})
    print(f"\n{results['rounds']} rounds, {results['threads']} threads; ×: over the fastest peer, the median of "
          "the per-round ratios (> 1: better)\n")
    print("| implementation | " + " | ".join(DECODE_METRICS) + " |")
    print("| --- |" + " --- |" * len(DECODE_METRICS))
    for label, row in results["implementations"].items():
        cells = []
        for metric in DECODE_METRICS:
            figure = row[metric]
            cell = f"{figure['median']:.1f} [{figure['min']:.1f}–{figure['max']:.1f}]"
            if label in compared.get(metric, {}).get("ours", {}):
                cell += f" ×{compared[metric]['ours'][label]['per_round']['median']:.2f}"
            cells.append(cell)
        print(f"| {label} | " + " | ".join(cells) + " |")
    for metric, row in compared.items():
        print(f"fastest peer in {metric}: {row['peer']} ({row['peer_median']:.1f})")


def better_by(key: str, value: float, reference: float) -> float:
    """How many times ``value`` is better than ``reference`` for metric ``key`` (> 1: better)."""
    return reference / value if key in LOWER_IS_BETTER else value / reference


def compare_with_peers(peer_runs: dict[str, list[dict]], ours: dict) -> dict:
    """Each peer's medians over its runs, and our like-with-like model's ratio to it (> 1: ours is better).

    A peer runs between the repeats of its like-with-like model, so the naive reference measured in those repeats
    is its yardstick too: ``over_naive`` is the peer's speed-up over that naive median.
    """
    compared = {}
    for peer, runs in peer_runs.items():
        if not runs:
            continue
        window = ours[LIKE_WITH_LIKE[peer]]
        row = dict(version=runs[0]["version"], options=runs[0]["options"], compared_with=LIKE_WITH_LIKE[peer],
                   train_mflops_per_token=runs[0]["train_mflops_per_token"])
        for key in METRICS:
            row[key] = summarize([value for run in runs for value in run[key]["values"]])
            row[key]["ours_over_peer"] = better_by(key, window[key]["ours"]["median"], row[key]["median"])
            row[key]["over_naive"] = better_by(key, row[key]["median"], window[key]["naive"]["median"])
        row["gemm_flops_per_s"] = summarize([value for run in runs for value in run["gemm_flops_per_s"]["values"]])
        row["gemm_peak_share"] = summarize([value for run in runs for value in run["gemm_peak_share"]["values"]])
        compared[peer] = row
        print(f"\npeer {peer} {row['version']} (like-with-like: ours = {row['compared_with']}; "
              f"{100 * row['gemm_peak_share']['median']:.0f}% of GEMM peak)")
        for key in METRICS:
            print(f"  {key:28s} peer {row[key]['median']:9.1f} [{row[key]['min']:.1f}–{row[key]['max']:.1f}]   "
                  f"ours/peer x{row[key]['ours_over_peer']:.2f}   peer/naive x{row[key]['over_naive']:.2f}")
    return compared


def compare_with_fastest_peer(compared: dict, ours: dict) -> dict:
    """For every metric, the best peer and each of our models' ratio to it (> 1: ours is better), two ways.

    ``ours_over_peer`` divides medians measured minutes apart: a model and a peer of another architecture never
    share a time window, and this machine drifts by tens of percent within minutes. ``via_naive`` compares
    speed-ups over the naive reference measured in each one's own window instead: the best peer is the one with
    the largest ``over_naive``, and ours over it is our speed-up over naive divided by its. Like with like the
    naive median is the same on both sides, so the two ways agree.
    """
    summary = {}
    for key in METRICS:
        # the best raw figure: the highest throughput or the lowest latency
        fastest = max(compared, key=lambda peer: better_by(key, compared[peer][key]["median"], 1.0))
        best_over_naive = max(compared, key=lambda peer: compared[peer][key]["over_naive"])
        summary[key] = dict(
            peer=fastest, peer_median=compared[fastest][key]["median"],
            ours_over_peer={name: better_by(key, row[key]["ours"]["median"], compared[fastest][key]["median"])
                            for name, row in ours.items()},
            via_naive=dict(peer=best_over_naive, peer_over_naive=compared[best_over_naive][key]["over_naive"],
                           ours_over_peer={name: row[key]["speedup"] / compared[best_over_naive][key]["over_naive"]
                                           for name, row in ours.items()}))
        for label, ratios in (("fastest peer", summary[key]), ("via naive", summary[key]["via_naive"])):
            listed = ", ".join(f"{name} x{ratio:.2f}" for name, ratio in ratios["ours_over_peer"].items())
            print(f"  {label} in {key}: {ratios['peer']}; ours/peer: {listed}")
    return summary


def print_row(name: str, row: dict) -> None:
    print(f"\n{name}  (train {row['train_mflops_per_token']:.1f} MFLOP/token, "
          f"{100 * row['gemm_peak_share']['median']:.0f}% of GEMM peak)")
    for key in METRICS:
        ours, naive = row[key]["ours"], row[key]["naive"]
        print(f"  {key:28s} ours {ours['median']:9.1f} [{ours['min']:.1f}–{ours['max']:.1f}]   "
              f"naive {naive['median']:9.1f} [{naive['min']:.1f}–{naive['max']:.1f}]   speed-up x{row[key]['speedup']:.2f}")
    rss = row["peak_train_rss_mb"]
    print(f"  {'peak_train_rss_mb':28s} ours {rss['ours']:9.0f}   naive {rss['naive']:9.0f}   ours/naive x{rss['ours_over_naive']:.2f}")


if __name__ == "__main__":
    main()
