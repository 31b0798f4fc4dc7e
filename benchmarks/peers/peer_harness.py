"""The measurements every peer runner makes, identical for each toolkit.

A runner (``fairseq_runner.py``, ...) is executed by its toolkit's own virtualenv python; it builds the
toolkit's model with the toolkit's own code and hands ``main`` a ``Peer``: how to turn one of our
batches into the toolkit's batch, the toolkit's training loss, and the toolkit's own search. This
module needs only torch, so it runs in every peer's virtualenv. The metrics mirror
``benchmarks/run_benchmarks.py``:

    train_tokens_per_s          non-padding target tokens / s of forward + backward + fused Adam step (one warm-up step)
    greedy_b64_sentences_per_s  the decode batch (64 sentences), greedy, at most 30 decoder steps
    beam5_b64_sentences_per_s   the same with beam 5
    greedy_b1_ms_per_sentence   8 sentences of the decode batch one at a time, greedy
    train_mflops_per_token      useful FLOPs: FlopCounterMode over forward + backward of each example of a
                                training batch alone, without padding, / its target tokens; with formulas
                                for the products torch's counter skips (``MISSING_FLOP_FORMULAS``)
    gemm_flops_per_s            fp32 GEMM throughput, measured right before each training measurement
    gemm_peak_share             per repeat: train_mflops_per_token x train_tokens_per_s / gemm_flops_per_s

The batches come from ``torch.save({"train": [batch, ...], "decode": batch}, path)`` with batches as
made by ``run_benchmarks.synthetic_batch`` (input_ids/attention_mask [B, S]; decoder_input_ids/labels
[B, T], labels -100 on padding), so every implementation sees the same tokens.
"""

import argparse
import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor
from torch.utils.flop_counter import FlopCounterMode

aten = torch.ops.aten

TARGET_STEPS, BEAMS, LATENCY_SENTENCES = 30, 5, 8


@dataclass
class Peer:
    """A toolkit's model and the three things the measurements need from the toolkit.

    prepare(batch) -> the toolkit's batch (done before any clock starts)
    loss(toolkit_batch) -> scalar training loss through the toolkit's own criterion
    decode(toolkit_batch, beams, max_steps) -> [B] lengths of the best hypotheses, through the toolkit's search
    """

    name: str
    version: str
    options: dict
    model: torch.nn.Module
    prepare: Callable[[dict], Any]
    loss: Callable[[Any], Tensor]
    decode: Callable[[Any, int, int], Tensor]
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Tokens:
    """Our batch in a toolkit's token ids: right-padded, content ids kept (below ``first_symbol`` -> ``first_symbol``).

    source [B, S], source_lengths [B], target_input [B, T] = (bos, y_1 .. y_{n-1}), target_output [B, T] = (y_1 .. y_n)
    """

    source: Tensor
    source_lengths: Tensor
    target_input: Tensor
    target_output: Tensor


def to_tokens(batch: dict, pad: int, bos: int, first_symbol: int) -> Tokens:
    """Map our ids (0 pad, 1 bos, content >= 3) onto a toolkit's (its specials below ``first_symbol``)."""
    source_mask = batch["attention_mask"].bool()
    target_mask = batch["labels"] != -100
    source = batch["input_ids"].clamp(min=first_symbol).masked_fill(~source_mask, pad)
    target_output = batch["labels"].clamp(min=first_symbol).masked_fill(~target_mask, pad)
    target_input = torch.cat([torch.full_like(target_output[:, :1], bos), target_output[:, :-1]], dim=1)
    target_input = target_input.masked_fill(~target_mask, pad)
    return Tokens(source, source_mask.sum(1), target_input, target_output)


def target_tokens(batch: dict) -> int:
    return int((batch["labels"] != -100).sum())


def train_tokens_per_second(peer: Peer, batches: list[dict]) -> float:
    """Target tokens per second of forward + backward + Adam step, after one warm-up step. Adam is torch's
    fused kernel, as in ``run_benchmarks.py`` for our models and the naive reference."""
    prepared = [peer.prepare(batch) for batch in batches]
    peer.model.train()
    optimizer = torch.optim.Adam(peer.model.parameters(), lr=1e-4, fused=True)

    def step(toolkit_batch: Any) -> None:
        peer.loss(toolkit_batch).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    step(prepared[0])
    start = time.perf_counter()
    for toolkit_batch in prepared:
        step(toolkit_batch)
    return sum(target_tokens(batch) for batch in batches) / (time.perf_counter() - start)


@torch.no_grad()
def decode_sentences_per_second(peer: Peer, batch: dict, beams: int, lengths: list[float]) -> float:
    peer.model.eval()
    toolkit_batch = peer.prepare(batch)
    start = time.perf_counter()
    hypothesis_lengths = peer.decode(toolkit_batch, beams, TARGET_STEPS)
    seconds = time.perf_counter() - start
    lengths.append(hypothesis_lengths.float().mean().item())
    return batch["input_ids"].shape[0] / seconds


@torch.no_grad()
def batch1_latency_ms(peer: Peer, batch: dict) -> float:
    peer.model.eval()
    sentences = []
    for row in range(LATENCY_SENTENCES):
        length = int(batch["attention_mask"][row].sum())
        one = {key: value[row:row + 1] for key, value in batch.items()}
        one["input_ids"], one["attention_mask"] = one["input_ids"][:, :length], one["attention_mask"][:, :length]
        sentences.append(peer.prepare(one))
    start = time.perf_counter()
    for toolkit_batch in sentences:
        peer.decode(toolkit_batch, 1, TARGET_STEPS)
    return (time.perf_counter() - start) / LATENCY_SENTENCES * 1000


def unpadded_examples(batch: dict) -> list[dict]:
    """Each example of a padded batch as a batch of its own, without padding."""
    examples = []
    for row in range(batch["input_ids"].shape[0]):
        source_length = int(batch["attention_mask"][row].sum())
        target_length = int((batch["labels"][row] != -100).sum())
        examples.append(dict(input_ids=batch["input_ids"][row:row + 1, :source_length],
                             attention_mask=batch["attention_mask"][row:row + 1, :source_length],
                             decoder_input_ids=batch["decoder_input_ids"][row:row + 1, :target_length],
                             labels=batch["labels"][row:row + 1, :target_length]))
    return examples


def accumulated_mm_flops(self_shape, a_shape, b_shape, *args, **kwargs) -> int:
    """C += A B with A [M, K], B [K, N]: 2 · M·N·K, as torch counts addmm."""
    return 2 * a_shape[0] * a_shape[1] * b_shape[1]


def rnn_layer_flops(input_shape, input_weight_shape, hidden_weight_shape, *args, **kwargs) -> int:
    """One fused RNN layer over a sequence: gates = W_ih x_t + W_hh h_{t-1} for every step.

    input [T, B, I] (or [B, T, I]), W_ih [G, I], W_hh [G, H] -> 2 · T·B · G · (I + H).
    """
    gates, inputs = input_weight_shape
    steps_times_batch = input_shape.numel() // inputs
    return 2 * steps_times_batch * gates * (inputs + hidden_weight_shape[1])


def rnn_layer_backward_flops(input_shape, input_weight_shape, hidden_weight_shape, *args, **kwargs) -> int:
    """Its backward: the gradients of x and h_{t-1} (one product each) and of W_ih and W_hh (one each)."""
    return 2 * rnn_layer_flops(input_shape, input_weight_shape, hidden_weight_shape)


# Matrix products torch's FlopCounterMode (2.13) has no formula for, so it counts them as 0: the in-place
# addmm_ (a weight gradient accumulated chunk by chunk) and the oneDNN RNN layer an unpacked nn.LSTM runs
# on CPU, batch of one included (packed rows of unequal lengths, and nn.GRU, run as mm/addmm per step,
# which torch counts).
MISSING_FLOP_FORMULAS = {aten.addmm_: accumulated_mm_flops, aten.mkldnn_rnn_layer: rnn_layer_flops,
                         aten.mkldnn_rnn_layer_backward: rnn_layer_backward_flops}


def useful_flops_per_token(loss_of: Callable[[dict], Tensor], model: torch.nn.Module, batch: dict) -> float:
    """The matrix-product FLOPs of forward + backward per target token, counted on each example alone, so
    that work on padding (which a padded batch may or may not do) is not counted: the model's useful FLOPs."""
    model.train()
    with FlopCounterMode(display=False, custom_mapping=MISSING_FLOP_FORMULAS) as counter:
        for example in unpadded_examples(batch):
            loss_of(example).backward()
    model.zero_grad(set_to_none=True)
    return counter.get_total_flops() / target_tokens(batch)


def train_flops_per_token(peer: Peer, batch: dict) -> float:
    return useful_flops_per_token(lambda example: peer.loss(peer.prepare(example)), peer.model, batch)


def summarize(values: list[float]) -> dict:
    return dict(median=statistics.median(values), min=min(values), max=max(values), values=values)


def gemm_flops_per_second(size: int = 2048, seconds: float = 1.0) -> float:
    """The fp32 GEMM throughput now: square [size, size] products for ``seconds``."""
    a, b = torch.randn(size, size), torch.randn(size, size)
    a @ b
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        a @ b
        count += 1
    return 2 * size**3 * count / (time.perf_counter() - start)


def gemm_peak_shares(flops_per_token: float, tokens_per_s: list[float], gemm_flops_per_s: list[float]) -> dict:
    """Useful FLOP/s over the GEMM throughput measured just before, repeat by repeat: this machine's speed
    drifts by tens of percent within minutes, so a share against one early GEMM measurement would drift with it."""
    if len(tokens_per_s) != len(gemm_flops_per_s):
        raise ValueError(f"one GEMM measurement per training repeat: got {len(gemm_flops_per_s)} for "
                         f"{len(tokens_per_s)} repeats")
    return summarize([flops_per_token * tokens / gemm for tokens, gemm in zip(tokens_per_s, gemm_flops_per_s)])


def main(build: Callable[[], Peer]) -> None:
    """Parse the runner's arguments, measure ``build()``'s peer and print one JSON object on stdout."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", required=True, help='torch.save({"train": [...], "decode": batch}) file')
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--train_batches", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    data = torch.load(args.batches)
    if len(data["train"]) < args.train_batches:
        raise ValueError(f"--train_batches={args.train_batches} but {args.batches} holds {len(data['train'])}")
    batches, decode_batch = data["train"][:args.train_batches], data["decode"]

    torch.manual_seed(0)
    peer = build()
    greedy_lengths, beam_lengths = [], []
    metrics = {
        "gemm_flops_per_s": gemm_flops_per_second,  # right before each training measurement
        "train_tokens_per_s": lambda: train_tokens_per_second(peer, batches),
        "greedy_b64_sentences_per_s": lambda: decode_sentences_per_second(peer, decode_batch, 1, greedy_lengths),
        "beam5_b64_sentences_per_s": lambda: decode_sentences_per_second(peer, decode_batch, BEAMS, beam_lengths),
        "greedy_b1_ms_per_sentence": lambda: batch1_latency_ms(peer, decode_batch),
    }
    measured = {key: [] for key in metrics}
    for _ in range(args.repeats):
        for key, measure in metrics.items():
            measured[key].append(measure())
    flops = train_flops_per_token(peer, batches[0])
    result = dict(
        peer=peer.name, version=peer.version, torch=torch.__version__, threads=args.threads,
        repeats=args.repeats, train_batches=args.train_batches, options=peer.options,
        parameters=sum(p.numel() for p in peer.model.parameters()),
        **{key: summarize(values) for key, values in measured.items()},
        train_mflops_per_token=flops / 1e6,
        gemm_peak_share=gemm_peak_shares(flops, measured["train_tokens_per_s"], measured["gemm_flops_per_s"]),
        mean_hypothesis_length=dict(greedy=statistics.mean(greedy_lengths), beam5=statistics.mean(beam_lengths)),
        notes=peer.notes,
    )
    print(json.dumps(result))
