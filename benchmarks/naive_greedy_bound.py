"""How far greedy decoding can beat the naive reference: its redundant work removed, measured in one run.

    python benchmarks/naive_greedy_bound.py [--repeats 9]

In greedy decoding the naive reference (``naive_bahdanau.py``) does one piece of work that our library does not:
it re-projects the keys U_a h_j at every step. Everything else it computes (GRU cell, attention, deep output, the
vocabulary product and its argmax) is the model itself. ``KeysProjectedOnce`` is the same loop with the keys
projected once per source, so its speed-up over naive bounds what any implementation of the same model on the same
kernels can gain over naive at greedy decoding. The three decode the benchmark's batch (64 sentences, 30 steps),
alternating; medians in sentences/s, ours = ``rnnsearch`` at the sizes of ``run_benchmarks.py``.
"""

import argparse
import statistics

import torch
from torch import Tensor

import run_benchmarks as rb
from naive_bahdanau import NaiveBahdanau


class KeysProjectedOnce(NaiveBahdanau):
    """The naive reference with U_a h_j computed once per source (in ``encode``) instead of at every step."""

    def encode(self, input_ids: Tensor, attention_mask: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        annotations, mask, s_0 = super().encode(input_ids, attention_mask)
        self.projected_keys = self.U_a(annotations)
        return annotations, mask, s_0

    def project_keys(self, annotations: Tensor) -> Tensor:
        return self.projected_keys


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    naive = rb.build_naive()
    keys_once = KeysProjectedOnce(rb.VOCAB, embedding_size=256, encoder_hidden_size=128, hidden_size=256,
                                  attention_size=256, output_size=256)
    keys_once.load_state_dict(naive.state_dict())
    implementations = {"naive": naive, "naive, keys projected once": keys_once,
                       "ours (rnnsearch)": rb.build_ours("rnnsearch")}
    batch = rb.synthetic_batch(1000)
    with torch.no_grad():
        same = torch.equal(*(model.greedy(batch["input_ids"], batch["attention_mask"], rb.TARGET_STEPS)
                             for model in (naive, keys_once)))
    print(f"keys projected once decodes the same tokens as naive: {same}")
    speeds = {name: [] for name in implementations}
    for _ in range(args.repeats):
        for name, model in implementations.items():
            speeds[name].append(rb.decode_sentences_per_second(model, batch, num_beams=1))
    naive_median = statistics.median(speeds["naive"])
    for name, values in speeds.items():
        median = statistics.median(values)
        print(f"{name:28s} {median:6.1f} sentences/s [{min(values):.1f}–{max(values):.1f}]  "
              f"x{median / naive_median:.2f} of naive")


if __name__ == "__main__":
    main()
