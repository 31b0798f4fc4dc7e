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

``--device cuda`` runs the model and the batches on that device (the clocks wait for its queued kernels; one
untimed repeat first, for kernel loading and cuDNN's algorithm choice; no FLOP count: torch's counter has no
formula for cuDNN's RNN kernels); ``--dtype bf16`` runs each loss and search under ``torch.autocast`` to bfloat16
(the weights and the optimizer stay fp32). The defaults, the CPU in fp32, measure as before these options.

The batches come from ``torch.save({"train": [batch, ...], "decode": batch}, path)`` with batches as
made by ``run_benchmarks.synthetic_batch`` (input_ids/attention_mask [B, S]; decoder_input_ids/labels
[B, T], labels -100 on padding), so every implementation sees the same tokens.
"""

import argparse
import contextlib
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
    autocast_dtype: torch.dtype | None = None

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def precision(self) -> contextlib.AbstractContextManager:
        """The context the loss and the search run in: autocast to ``autocast_dtype``, or none (the model's fp32)."""
        if self.autocast_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=self.autocast_dtype)


DTYPES = {"fp32": None, "bf16": torch.bfloat16}  # --dtype: the autocast dtype of each choice


def synchronize(device: torch.device) -> None:
    """Wait for ``device``'s queued kernels (CUDA runs them asynchronously), so that a clock read next counts them."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def on_device(tree: Any, device: torch.device) -> Any:
    """Every tensor of nested dicts, lists and tuples moved to ``device`` (a toolkit's batch)."""
    if isinstance(tree, Tensor):
        return tree.to(device)
    if isinstance(tree, dict):
        return {key: on_device(value, device) for key, value in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(on_device(value, device) for value in tree)
    return tree


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
        with peer.precision():
            loss = peer.loss(toolkit_batch)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    step(prepared[0])
    synchronize(peer.device)
    start = time.perf_counter()
    for toolkit_batch in prepared:
        step(toolkit_batch)
    synchronize(peer.device)
    return sum(target_tokens(batch) for batch in batches) / (time.perf_counter() - start)


@torch.no_grad()
def decode_sentences_per_second(peer: Peer, batch: dict, beams: int, lengths: list[float]) -> float:
    peer.model.eval()
    toolkit_batch = peer.prepare(batch)
    synchronize(peer.device)
    start = time.perf_counter()
    with peer.precision():
        hypothesis_lengths = peer.decode(toolkit_batch, beams, TARGET_STEPS)
    synchronize(peer.device)
    seconds = time.perf_counter() - start
    lengths.append(hypothesis_lengths.float().mean().item())
    return batch["input_ids"].shape[0] / seconds


def one_at_a_time(peer: Peer, batch: dict) -> list:
    """The first ``LATENCY_SENTENCES`` sources of ``batch`` alone, without padding, as the toolkit's batches."""
    sentences = []
    for row in range(LATENCY_SENTENCES):
        length = int(batch["attention_mask"][row].sum())
        one = {key: value[row:row + 1] for key, value in batch.items()}
        one["input_ids"], one["attention_mask"] = one["input_ids"][:, :length], one["attention_mask"][:, :length]
        sentences.append(peer.prepare(one))
    return sentences


@torch.no_grad()
def latency_ms(peer: Peer, sentences: list, beams: int) -> float:
    """Milliseconds per sentence of ``peer``'s search with ``beams`` beams over toolkit batches of one sentence."""
    synchronize(peer.device)
    start = time.perf_counter()
    with peer.precision():
        for toolkit_batch in sentences:
            peer.decode(toolkit_batch, beams, TARGET_STEPS)
    synchronize(peer.device)
    return (time.perf_counter() - start) / len(sentences) * 1000


def batch1_latency_ms(peer: Peer, batch: dict) -> float:
    peer.model.eval()
    return latency_ms(peer, one_at_a_time(peer, batch), beams=1)


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


def gemm_flops_per_second(size: int = 2048, seconds: float = 1.0, device: torch.device | str = "cpu") -> float:
    """The fp32 GEMM throughput of ``device`` now: square [size, size] products for ``seconds``."""
    device = torch.device(device)
    a, b = torch.randn(size, size, device=device), torch.randn(size, size, device=device)
    a @ b
    synchronize(device)
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        a @ b
        synchronize(device)
        count += 1
    return 2 * size**3 * count / (time.perf_counter() - start)


def gemm_peak_shares(flops_per_token: float, tokens_per_s: list[float], gemm_flops_per_s: list[float]) -> dict:
    """Useful FLOP/s over the GEMM throughput measured just before, repeat by repeat: this machine's speed
    drifts by tens of percent within minutes, so a share against one early GEMM measurement would drift with it."""
    if len(tokens_per_s) != len(gemm_flops_per_s):
        raise ValueError(f"one GEMM measurement per training repeat: got {len(gemm_flops_per_s)} for "
                         f"{len(tokens_per_s)} repeats")
    return summarize([flops_per_token * tokens / gemm for tokens, gemm in zip(tokens_per_s, gemm_flops_per_s)])


def measure(peer: Peer, batches: list[dict], decode_batch: dict, repeats: int, count_flops: bool = True) -> dict:
    """Every metric of ``peer`` on its device and in its precision, ``repeats`` rounds: {metric: ``summarize``d
    values}, ``mean_hypothesis_length`` and, with ``count_flops`` (on the CPU only: torch's FLOP counter has no
    formula for cuDNN's RNN kernels), ``train_mflops_per_token`` and ``gemm_peak_share``."""
    greedy_lengths, beam_lengths = [], []
    metrics = {
        "gemm_flops_per_s": lambda: gemm_flops_per_second(device=peer.device),  # right before each training
        "train_tokens_per_s": lambda: train_tokens_per_second(peer, batches),
        "greedy_b64_sentences_per_s": lambda: decode_sentences_per_second(peer, decode_batch, 1, greedy_lengths),
        "beam5_b64_sentences_per_s": lambda: decode_sentences_per_second(peer, decode_batch, BEAMS, beam_lengths),
        "greedy_b1_ms_per_sentence": lambda: batch1_latency_ms(peer, decode_batch),
    }
    if peer.device.type != "cpu":  # an untimed round first: CUDA loads its kernels, cuDNN picks its algorithms
        for run in metrics.values():
            run()
        greedy_lengths.clear()
        beam_lengths.clear()
    measured = {key: [] for key in metrics}
    for _ in range(repeats):
        for key, run in metrics.items():
            measured[key].append(run())
    result = {key: summarize(values) for key, values in measured.items()}
    result["mean_hypothesis_length"] = dict(greedy=statistics.mean(greedy_lengths), beam5=statistics.mean(beam_lengths))
    if count_flops and peer.device.type == "cpu":
        flops = train_flops_per_token(peer, batches[0])
        result["train_mflops_per_token"] = flops / 1e6
        result["gemm_peak_share"] = gemm_peak_shares(flops, measured["train_tokens_per_s"],
                                                     measured["gemm_flops_per_s"])
    return result


def main(build: Callable[[torch.device], Peer]) -> None:
    """Parse the runner's arguments, measure ``build(device)``'s peer and print one JSON object on stdout."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", required=True, help='torch.save({"train": [...], "decode": batch}) file')
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--train_batches", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cpu", help="where the model and the batches go: cpu, cuda, cuda:N")
    parser.add_argument("--dtype", choices=list(DTYPES), default="fp32",
                        help="bf16: the loss and the search under torch.autocast to bfloat16")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    data = torch.load(args.batches)
    if len(data["train"]) < args.train_batches:
        raise ValueError(f"--train_batches={args.train_batches} but {args.batches} holds {len(data['train'])}")
    batches, decode_batch = data["train"][:args.train_batches], data["decode"]

    torch.manual_seed(0)
    peer = build(device)
    peer.model.to(device)
    peer.autocast_dtype = DTYPES[args.dtype]
    result = dict(
        peer=peer.name, version=peer.version, torch=torch.__version__, threads=args.threads, device=str(device),
        dtype=args.dtype, repeats=args.repeats, train_batches=args.train_batches, options=peer.options,
        parameters=sum(p.numel() for p in peer.model.parameters()),
        **measure(peer, batches, decode_batch, args.repeats), notes=peer.notes,
    )
    print(json.dumps(result))
