"""Could ``generate(custom_generate=<callable>)`` replace our overrides of ``_sample`` / ``_beam_search``? Measured in one run.

    python benchmarks/custom_generate.py [--calls 300]

transformers (5.20.2 and later) runs generate()'s preparation and then ``custom_generate(model, input_ids,
logits_processor=…, stopping_criteria=…, generation_config=…, **model_kwargs)``. The prototype ``ours`` is such a
callable running our loops (``search.FastSearchMixin``). On a tiny model (the tests' sizes: vocab 40, batch 3), this
alternates ``--calls`` generate() calls through generate()'s dispatch to our overrides and through ``ours``, for
greedy search and beam search (3 beams), and prints the median microseconds per call, whether both return the same
tokens (and beam scores), and whether a ``streamer`` reaches the loop.
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
import transformers
from transformers.generation.streamers import BaseStreamer

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from conftest import padded_batch, tiny_model  # noqa: E402

from hf_bahdanau.modeling.search import FastSearchMixin  # noqa: E402


def ours(model, input_ids, logits_processor, stopping_criteria, generation_config, synced_gpus=False, streamer=None,
         **model_kwargs):
    """The prototype: our loop for greedy and beam search, as a ``custom_generate`` callable."""
    loop = FastSearchMixin._beam_search if generation_config.num_beams > 1 else FastSearchMixin._sample
    extra = {} if generation_config.num_beams > 1 else {"streamer": streamer}
    return loop(model, input_ids, logits_processor, stopping_criteria, generation_config, synced_gpus=synced_gpus,
                **extra, **model_kwargs)


class Recorder(BaseStreamer):
    """A streamer that counts the token batches it is given."""

    def __init__(self):
        self.puts = 0

    def put(self, value):
        self.puts += 1

    def end(self):
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    torch.set_num_threads(1)
    model = tiny_model("rnnsearch")
    input_ids, mask = padded_batch()
    print(f"transformers {transformers.__version__}, torch {torch.__version__}, {args.calls} calls each")
    for name, num_beams in (("greedy", 1), ("beam 3", 3)):
        options = dict(input_ids=input_ids, attention_mask=mask, max_new_tokens=10, num_beams=num_beams,
                       return_dict_in_generate=True, output_scores=True)
        times = {"overrides": [], "custom_generate": []}
        with torch.no_grad():
            dispatched = model.generate(**options)
            custom = model.generate(**options, custom_generate=ours)
            for _ in range(args.calls):
                for route, extra in (("overrides", {}), ("custom_generate", {"custom_generate": ours})):
                    start = time.perf_counter()
                    model.generate(**options, **extra)
                    times[route].append(time.perf_counter() - start)
        same = torch.equal(dispatched.sequences, custom.sequences) and (
            num_beams == 1 or torch.equal(dispatched.sequences_scores, custom.sequences_scores))
        medians = {route: statistics.median(values) * 1e6 for route, values in times.items()}
        print(f"{name}: overrides {medians['overrides']:.0f} µs, custom_generate {medians['custom_generate']:.0f} µs "
              f"({medians['custom_generate'] / medians['overrides'] - 1:+.1%}); same outputs: {same}")
    with torch.no_grad():
        for route, extra in (("overrides", {}), ("custom_generate", {"custom_generate": ours})):
            streamer = Recorder()
            model.generate(input_ids=input_ids[:1], max_new_tokens=5, min_new_tokens=5, streamer=streamer, **extra)
            print(f"streamer with {route}: {streamer.puts} token batches")


if __name__ == "__main__":
    main()
