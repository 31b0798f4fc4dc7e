"""Length robustness (Bahdanau et al., 2015, figure 2): an attention model against a no-attention model trained
with the same budget on the same data, scored against source length.

The task is generated: a source is 5–60 random symbols; its target renames every symbol through a fixed lexicon,
in the same order (a word-for-word "translation"; ``--reverse`` reverses it too, a harder long-range reordering).
Without attention the whole source must pass through one fixed-size vector, so long sources should suffer; with
attention every output symbol can look up its source symbol.

    python -m training.length_robustness --output_dir outputs/length_robustness [--max_steps 600]

Writes ``length_robustness.json`` (exact match in percent and BLEU per source-length bin for each model, with parameter
counts and training time) and ``length_robustness.png`` (two panels: exact match and BLEU against source length).
"""

import json
import random
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import sacrebleu
import torch
from datasets import Dataset
from transformers import PreTrainedTokenizerFast, Seq2SeqTrainer, Seq2SeqTrainingArguments

from hf_bahdanau import BahdanauConfig, BahdanauForConditionalGeneration, DataCollatorWithRightPaddedLabels

from training.common.arguments import check_new_config, parse_arguments, parse_config_overrides
from training.common.tokenization import train_tokenizer

SYMBOLS = [f"{letter}{digit}" for letter in "abcdefgh" for digit in "01"]  # 16 source symbols
LEXICON = {symbol: symbol.upper() for symbol in SYMBOLS}  # each renamed: a target vocabulary of its own


@dataclass
class ExperimentArguments:
    presets: list[str] = field(default_factory=lambda: ["rnnsearch", "rnnencdec"],
                               metadata={"help": "Models to compare, each a preset with optional config overrides, "
                                                 "'preset:field=value,...' (e.g. rnnsearch:attention_scope=local-p)."})
    reverse: bool = field(default=False, metadata={"help": "Reverse the target as well as renaming it."})
    min_length: int = field(default=5)
    max_length: int = field(default=60)
    bin_width: int = field(default=10, metadata={"help": "Source-length bins of this width from min_length."})
    train_examples: int = field(default=20000)
    test_examples_per_bin: int = field(default=100)
    embedding_size: int = field(default=32)
    hidden_size: int = field(default=64)
    eval_batch_size: int = field(default=100)

    def __post_init__(self):
        check_models(self.presets, self, "--presets")


@dataclass
class LengthTrainingArguments(Seq2SeqTrainingArguments):
    """Seq2SeqTrainingArguments with defaults that keep both runs to a few CPU minutes."""

    output_dir: str = field(default="outputs/length_robustness")
    max_steps: int = field(default=500)
    learning_rate: float = field(default=3e-3)
    per_device_train_batch_size: int = field(default=64)
    max_grad_norm: float = field(default=1.0)
    logging_steps: float = field(default=100)
    save_strategy: str = field(default="no")
    report_to: None | str | list[str] = field(default="none")
    seed: int = field(default=0)


def make_pairs(count: int, lengths: tuple[int, int], seed: int, reverse: bool = False) -> list[tuple[str, str]]:
    """(source, target) pairs: source = random symbols, target = the source through LEXICON (reversed if asked)."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(count):
        source = [rng.choice(SYMBOLS) for _ in range(rng.randint(*lengths))]
        target = [LEXICON[symbol] for symbol in (reversed(source) if reverse else source)]
        pairs.append((" ".join(source), " ".join(target)))
    return pairs


def tokenized_training_set(pairs: list[tuple[str, str]]) -> tuple[PreTrainedTokenizerFast, Dataset]:
    """A word-level tokenizer trained on the (source, target) pairs, and the pairs tokenized (input_ids, labels)."""
    tokenizer = train_tokenizer([text for pair in pairs for text in pair], kind="word")

    def tokenize(batch):
        encoded = tokenizer(batch["source"])
        encoded["labels"] = tokenizer(batch["target"])["input_ids"]
        return encoded

    train = Dataset.from_dict({"source": [s for s, _ in pairs], "target": [t for _, t in pairs]})
    return tokenizer, train.map(tokenize, batched=True, remove_columns=["source", "target"])


def length_bins(args: ExperimentArguments) -> list[tuple[int, int]]:
    """[(5, 14), (15, 24), …]: inclusive source-length ranges covering min_length..max_length."""
    starts = range(args.min_length, args.max_length + 1, args.bin_width)
    return [(start, min(start + args.bin_width - 1, args.max_length)) for start in starts]


def new_config(name: str, args, **tokenizer_fields) -> BahdanauConfig:
    """The config of the model ``name`` ('preset' or 'preset:field=value,...'): the preset, the experiment's sizes
    (``args``' embedding_size, hidden_size, max_length), the tokenizer's fields, then the overrides."""
    preset, _, overrides = name.partition(":")
    return BahdanauConfig.from_preset(preset, **{
        "embedding_size": args.embedding_size, "hidden_size": args.hidden_size, "attention_size": args.hidden_size,
        "output_size": args.embedding_size, "max_source_positions": args.max_length + 1, **tokenizer_fields,
        **parse_config_overrides(overrides)})


def check_models(names: list[str], args, argument: str) -> None:
    """Each model's config built while the arguments are parsed (``check_new_config``): a bad preset or override
    ends there, naming ``argument`` and the model, not after the models before it have trained."""
    for name in names:
        check_new_config(lambda: new_config(name, args), name, argument)


def train_model(name: str, tokenizer, train: Dataset, args: ExperimentArguments,
                training_args: LengthTrainingArguments) -> tuple[BahdanauForConditionalGeneration, float]:
    """Train the model ``name`` ('preset' or 'preset:field=value,...'); returns it and the training seconds."""
    torch.manual_seed(training_args.seed)
    model = BahdanauForConditionalGeneration(new_config(name, args, vocab_size=len(tokenizer)))
    run_args = training_args.set_save(strategy="no")
    run_args.output_dir = str(Path(training_args.output_dir) / name.replace(":", "-").replace(",", "-"))
    trainer = Seq2SeqTrainer(model=model, args=run_args, train_dataset=train, processing_class=tokenizer,
                             data_collator=DataCollatorWithRightPaddedLabels(tokenizer, model=model))
    start = time.perf_counter()
    trainer.train()
    return model.eval(), time.perf_counter() - start


def score_by_length(model, tokenizer, tests: dict[tuple[int, int], list[tuple[str, str]]], batch_size: int) -> dict:
    """Greedy decoding of every test pair; exact match (in percent) and corpus BLEU (symbols as words) per length
    bin."""
    scores = {}
    for (low, high), pairs in tests.items():
        predictions = []
        for start in range(0, len(pairs), batch_size):
            sources = [source for source, _ in pairs[start:start + batch_size]]
            inputs = tokenizer(sources, return_tensors="pt", padding=True)
            with torch.no_grad():
                generated = model.generate(**inputs, max_new_tokens=high + 2, num_beams=1)
            predictions += tokenizer.batch_decode(generated, skip_special_tokens=True)
        references = [target for _, target in pairs]
        exact = 100 * sum(p.split() == r.split() for p, r in zip(predictions, references)) / len(pairs)
        bleu = sacrebleu.corpus_bleu(predictions, [references], tokenize="none").score
        scores[f"{low}-{high}"] = {"exact_match": exact, "bleu": bleu, "examples": len(pairs)}
    return scores


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for preset, result in results["models"].items():
        bins = list(result["by_length"])
        centres = [sum(map(int, name.split("-"))) / 2 for name in bins]
        for ax, metric in ((axes[0], "exact_match"), (axes[1], "bleu")):
            ax.plot(centres, [result["by_length"][name][metric] for name in bins], marker="o", label=preset)
    for ax, label in zip(axes, ("exact match (%)", "BLEU")):
        ax.set_xlabel("source length (symbols)")
        ax.set_ylabel(label)
        ax.set_ylim(0, 100)
        ax.grid(alpha=0.3)
        ax.legend()
    figure.suptitle("Same data, same budget: attention vs. a fixed-size summary")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def main(argv: list[str] | None = None) -> dict:
    args, training_args = parse_arguments((ExperimentArguments, LengthTrainingArguments),
                                          sys.argv[1:] if argv is None else argv, description=__doc__.split("\n")[0])
    output_dir = Path(training_args.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    lengths = (args.min_length, args.max_length)
    train_pairs = make_pairs(args.train_examples, lengths, seed=training_args.seed, reverse=args.reverse)
    tests = {}
    for index, (low, high) in enumerate(length_bins(args)):
        tests[(low, high)] = make_pairs(args.test_examples_per_bin, (low, high), seed=10_000 + index,
                                        reverse=args.reverse)
    tokenizer, train = tokenized_training_set(train_pairs)

    task = f"{'reverse and ' if args.reverse else ''}rename {args.min_length}-{args.max_length} random symbols"
    results = {"task": task, "arguments": asdict(args),
               "max_steps": training_args.max_steps, "batch_size": training_args.per_device_train_batch_size,
               "models": {}}
    for preset in args.presets:
        model, seconds = train_model(preset, tokenizer, train, args, training_args)
        results["models"][preset] = {
            "parameters": model.num_parameters(), "train_seconds": round(seconds, 1),
            "by_length": score_by_length(model, tokenizer, tests, args.eval_batch_size),
        }
        print(preset, json.dumps(results["models"][preset]))
    (output_dir / "length_robustness.json").write_text(json.dumps(results, indent=2))
    plot(results, output_dir / "length_robustness.png")
    return results


if __name__ == "__main__":
    main()
