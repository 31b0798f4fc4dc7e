"""The encoder's padded-batch path against packing, measured in one run.

    python benchmarks/encoder_padding.py [--repeats 15]

Forward + backward of one bidirectional layer (embedding 256 -> 2 x 128) over the benchmark batch (64
sources of 20–40 tokens): ``RecurrentStack`` with ``lengths`` (with autograd on: one step loop for both
directions, no packing) against the same module's layers run on a ``pack_padded_sequence``, alternating,
medians in ms. The loss reads the outputs and the final states (for an LSTM the memory cells too), so every
path of the backward is timed.
"""

import argparse
import statistics
import time

import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from hf_bahdanau.modeling.recurrent import RecurrentStack


def forward_backward_ms(run, inputs: torch.Tensor) -> float:
    start = time.perf_counter()
    outputs, final = run(inputs)
    (outputs.sum() + sum(state.sum() for state in final if state is not None)).backward()
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    generator = torch.Generator().manual_seed(0)
    lengths = torch.randint(20, 41, (64,), generator=generator)
    inputs = torch.randn(64, int(lengths.max()), 256, generator=generator, requires_grad=True)
    for rnn_type in ("gru", "rnn", "lstm"):
        stack = RecurrentStack(rnn_type, 256, 128, num_layers=1, bidirectional=True)

        def unpacked(x):
            outputs, final = stack(x, lengths=lengths)
            return outputs[-1], final

        def packed(x):
            output, final = stack.layers[0](pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False))
            return pad_packed_sequence(output, batch_first=True)[0], final

        times = {"unpacked": [], "packed": []}
        for name, run in (("unpacked", unpacked), ("packed", packed)):
            forward_backward_ms(run, inputs)  # warm-up
        for repeat in range(args.repeats):
            for name, run in (("unpacked", unpacked), ("packed", packed))[::1 if repeat % 2 else -1]:
                times[name].append(forward_backward_ms(run, inputs))
        medians = {name: statistics.median(values) for name, values in times.items()}
        print(f"{rnn_type}: unpacked {medians['unpacked']:.1f} ms, packed {medians['packed']:.1f} ms "
              f"(fwd+bwd, medians of {args.repeats}); packed / unpacked x{medians['packed'] / medians['unpacked']:.2f}")


if __name__ == "__main__":
    main()
