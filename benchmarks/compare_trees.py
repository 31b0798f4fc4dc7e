"""Did a change slow the models down? Two checkouts of the code measured in alternation, one fresh process per
measurement, on the same machine in the same run.

    git worktree add /tmp/before <commit>
    python benchmarks/compare_trees.py /tmp/before . [--rounds 3]

Each process imports hf_bahdanau from its tree and measures, with run_benchmarks.py's sizes and functions, training
tokens/s, greedy batch-64 sentences/s and batch-1 greedy ms per sentence of ``rnnsearch`` and ``luong-general-nofeed``.
Prints the medians (min–max) of each tree and after / before (> 1: the second tree is faster).
"""

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

MODELS = ("rnnsearch", "luong-general-nofeed")
LOWER_IS_BETTER = {"batch1_ms"}

MEASURE = """
import json, sys
root = sys.argv[1]
sys.path[:0] = [root, root + "/benchmarks"]
import torch
torch.set_num_threads(2)
import run_benchmarks as rb
import hf_bahdanau
assert hf_bahdanau.__file__.startswith(root), hf_bahdanau.__file__
out = {}
for name in %r:
    model = rb.build_ours(name)
    batches = [rb.synthetic_batch(seed) for seed in range(4)]
    rb.train_tokens_per_second(model, batches[:1])  # warm-up
    out[name] = dict(train_tokens_per_s=rb.train_tokens_per_second(model, batches),
                     greedy_b64_sentences_per_s=rb.decode_sentences_per_second(model.eval(), batches[0], 1),
                     batch1_ms=rb.batch1_latency_ms(model.eval(), batches[0]))
print(json.dumps(out))
""" % (MODELS,)


def measure(tree: Path) -> dict:
    result = subprocess.run([sys.executable, "-c", MEASURE, str(tree)], capture_output=True, text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    trees = (args.before.resolve(), args.after.resolve())
    runs = {tree: [] for tree in trees}
    for _ in range(args.rounds):
        for tree in trees:
            runs[tree].append(measure(tree))
    for model in MODELS:
        print(model)
        for metric in runs[trees[0]][0][model]:
            before, after = ([run[model][metric] for run in runs[tree]] for tree in trees)
            old, new = statistics.median(before), statistics.median(after)
            ratio = old / new if metric in LOWER_IS_BETTER else new / old
            print(f"  {metric:28s} before {old:8.1f} ({min(before):.1f}–{max(before):.1f})   "
                  f"after {new:8.1f} ({min(after):.1f}–{max(after):.1f})   x{ratio:.3f}")


if __name__ == "__main__":
    main()
