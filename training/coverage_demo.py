"""Coverage (Tu et al. 2016; See et al. 2017; Wu et al. 2016): does the decoder drop or repeat source words?

The task is generated: a source is a list of 25–40 symbols drawn from only four, so every symbol repeats many
times; its target renames every symbol (``length_robustness.LEXICON``), in order. An attention model that loses its
place in such a list skips a stretch or reads one twice.
The same model is trained with the same budget with and without ``use_coverage`` (and See et al.'s coverage loss),
then decoded with beam search, with and without GNMT's coverage penalty.

    python -m training.coverage_demo --output_dir outputs/coverage [--max_steps 600]

Writes ``coverage.json``: for each model and decoding, exact match (in percent), and the dropped and repeated symbols
summed over the test set (the deletions and insertions that turn each reference into its output), with the training
time.
"""

import difflib
import json
import random
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from training.common.arguments import parse_arguments
from training.length_robustness import (
    LEXICON, LengthTrainingArguments, check_models, tokenized_training_set, train_model,
)

SYMBOLS = sorted(LEXICON)[:4]


@dataclass
class CoverageArguments:
    models: list[str] = field(
        default_factory=lambda: ["rnnsearch", "rnnsearch:use_coverage=true,coverage_loss_weight=1.0"],
        metadata={"help": "Models to compare, 'preset[:field=value,...]'."})
    coverage_penalties: list[float] = field(default_factory=lambda: [0.0, 0.05, 0.2],
                                            metadata={"help": "β of generate(coverage_penalty=β) to decode with."})
    num_beams: int = field(default=5)
    min_length: int = field(default=25)
    max_length: int = field(default=40)
    train_examples: int = field(default=20000)
    test_examples: int = field(default=300)
    embedding_size: int = field(default=32)
    hidden_size: int = field(default=64)
    eval_batch_size: int = field(default=100)

    def __post_init__(self):
        check_models(self.models, self, "--models")


def make_pairs(count: int, lengths: tuple[int, int], seed: int) -> list[tuple[str, str]]:
    """(source, target) pairs over ``SYMBOLS``: the target renames the source, symbol by symbol."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(count):
        source = [rng.choice(SYMBOLS) for _ in range(rng.randint(*lengths))]
        pairs.append((" ".join(source), " ".join(LEXICON[symbol] for symbol in source)))
    return pairs


def dropped_and_repeated(prediction: list[str], reference: list[str]) -> tuple[int, int]:
    """The reference symbols the prediction leaves out (dropped) and the symbols it adds (repeated, as a decoder
    that reads a stretch twice does), from the edit operations that turn the reference into the prediction
    (``difflib``); a replaced stretch counts its surplus on either side, not its substitutions."""
    dropped = repeated = 0
    matcher = difflib.SequenceMatcher(a=reference, b=prediction, autojunk=False)
    for _, ref_start, ref_end, out_start, out_end in matcher.get_opcodes():
        dropped += max(0, (ref_end - ref_start) - (out_end - out_start))
        repeated += max(0, (out_end - out_start) - (ref_end - ref_start))
    return dropped, repeated


def score(model, tokenizer, pairs: list[tuple[str, str]], args: CoverageArguments, coverage_penalty: float) -> dict:
    predictions = []
    for start in range(0, len(pairs), args.eval_batch_size):
        inputs = tokenizer([source for source, _ in pairs[start:start + args.eval_batch_size]], return_tensors="pt",
                           padding=True)
        options = dict(coverage_penalty=coverage_penalty) if coverage_penalty else {}
        with torch.no_grad():
            generated = model.generate(**inputs, max_new_tokens=args.max_length + 2, num_beams=args.num_beams,
                                       **options)
        predictions += tokenizer.batch_decode(generated, skip_special_tokens=True)
    dropped = repeated = exact = 0
    for prediction, (_, reference) in zip(predictions, pairs):
        missing, extra = dropped_and_repeated(prediction.split(), reference.split())
        dropped, repeated = dropped + missing, repeated + extra
        exact += prediction.split() == reference.split()
    return {"exact_match": 100 * exact / len(pairs), "dropped": dropped, "repeated": repeated,
            "reference_symbols": sum(len(reference.split()) for _, reference in pairs)}


def main(argv: list[str] | None = None) -> dict:
    args, training_args = parse_arguments((CoverageArguments, LengthTrainingArguments),
                                          sys.argv[1:] if argv is None else argv, description=__doc__.split("\n")[0])
    output_dir = Path(training_args.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    lengths = (args.min_length, args.max_length)
    train_pairs = make_pairs(args.train_examples, lengths, seed=training_args.seed)
    test_pairs = make_pairs(args.test_examples, lengths, seed=10_000)
    tokenizer, train = tokenized_training_set(train_pairs)
    results = {"task": f"rename {args.min_length}-{args.max_length} symbols drawn from {len(SYMBOLS)}",
               "arguments": asdict(args), "max_steps": training_args.max_steps,
               "batch_size": training_args.per_device_train_batch_size, "models": {}}
    for name in args.models:
        model, seconds = train_model(name, tokenizer, train, args, training_args)
        results["models"][name] = {
            "parameters": model.num_parameters(), "train_seconds": round(seconds, 1),
            "decoding": {f"beam {args.num_beams}, coverage_penalty {penalty}":
                         score(model, tokenizer, test_pairs, args, penalty) for penalty in args.coverage_penalties},
        }
        print(name, json.dumps(results["models"][name]))
    (output_dir / "coverage.json").write_text(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
