"""Speed and memory of hf_bahdanau against the naive reference, measured in one run.

    python benchmarks/run_benchmarks.py                 # full run: table + benchmarks/results.json
    python benchmarks/run_benchmarks.py --repeats 1 --train_batches 3 --models rnnsearch   # quick look
    python benchmarks/run_benchmarks.py --peers          # plus every installed peer toolkit (peers/README.md)

Sizes (those of the peers' comparison, docs/performance.md): vocab 8000, embedding 256, bidirectional
encoder 2 x 128, decoder 256, one layer each, batch 64, source 20–40 tokens, target 25–35.
Every figure is a median over ``--repeats`` runs (with min–max), ours and the naive reference
alternating in the same process, reported with our speed-up over it (> 1: ours is faster). Peak RSS of training is
measured in a fresh subprocess per implementation. The useful share of the GEMM peak is the
model's useful matmul FLOPs per target token (torch's FlopCounterMode over forward + backward of each
example alone, without padding, as for the peers: ``peers/peer_harness.py``) x tokens/s / the fp32 GEMM
FLOP/s measured right before that training repeat (median over repeats). Every implementation steps
with torch's fused Adam (needs torch >= 2.4 on CPU), the optimizer of Trainer's default ``adamw_torch_fused``.
"""

import argparse
import json
import subprocess
import sys
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

VOCAB, BATCH, TARGET_STEPS = 8000, 64, 30
SIZES = dict(vocab_size=VOCAB, embedding_size=256, encoder_hidden_size=128, bidirectional=True, hidden_size=256,
             attention_size=256, output_size=256, encoder_layers=1, decoder_layers=1)
MODELS = {
    "rnnsearch": dict(preset="rnnsearch"),
    "luong-feed-gru-additive": dict(preset="luong-concat", rnn_type="gru", bridge="last"),
    "luong-feed-lstm-general": dict(preset="luong-general", rnn_type="lstm", bridge="last"),
    "luong-general-nofeed": dict(preset="luong-general", rnn_type="lstm", bridge="last", input_feeding=False),
}
LOWER_IS_BETTER = {"greedy_b1_ms_per_sentence"}
METRICS = ("train_tokens_per_s", "greedy_b64_sentences_per_s", "beam5_b64_sentences_per_s", "greedy_b1_ms_per_sentence")
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
def decode_sentences_per_second(model, batch: dict, num_beams: int) -> float:
    model.eval()
    start = time.perf_counter()
    if isinstance(model, NaiveBahdanau):
        if num_beams == 1:
            model.greedy(batch["input_ids"], batch["attention_mask"], TARGET_STEPS)
        else:
            model.beam_search(batch["input_ids"], batch["attention_mask"], num_beams, TARGET_STEPS)
    else:
        beam_options = dict(num_beams=num_beams, early_stopping=True) if num_beams > 1 else {}
        model.generate(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                       max_new_tokens=TARGET_STEPS, do_sample=False, **beam_options)
    return batch["input_ids"].shape[0] / (time.perf_counter() - start)


@torch.no_grad()
def batch1_latency_ms(model, batch: dict, sentences: int = 8) -> float:
    model.eval()
    start = time.perf_counter()
    for row in range(sentences):
        length = int(batch["attention_mask"][row].sum())
        one = dict(input_ids=batch["input_ids"][row:row + 1, :length],
                   attention_mask=batch["attention_mask"][row:row + 1, :length])
        if isinstance(model, NaiveBahdanau):
            model.greedy(one["input_ids"], one["attention_mask"], TARGET_STEPS)
        else:
            model.generate(**one, max_new_tokens=TARGET_STEPS, do_sample=False)
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
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    peer_names = None if args.peers is None else (args.peers or peers.available_peers())
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
