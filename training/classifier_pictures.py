#!/usr/bin/env python
"""Attention pictures of saved classifiers (``run_classification.py``'s folders) on the same few test documents:
one PNG per model, a panel per document titled with the predicted and the true label.

    python -m training.classifier_pictures --model_dirs outputs/fortunes-flat outputs/fortunes-flat-self_attentive \\
        outputs/fortunes-flat-multi_dimensional outputs/fortunes-han --output_dir docs

The documents: the first ``--num_texts`` of ``--test_file`` (in file order) that every model's tokenizer makes at most
``--max_tokens`` tokens, so that every picture shows the same readable texts. Each model's picture is
``--output_dir/--file_name`` with {} = "flat_<pooling_type>" or "han_<pooling_type>" (e.g.
docs/fortunes_attention_flat_self_attentive.png), drawn by ``hf_bahdanau.pictures.plot_classifier_texts``.
"""

import json
from dataclasses import dataclass, field
from pathlib import Path

from transformers import AutoModelForSequenceClassification, AutoTokenizer, HfArgumentParser

import hf_bahdanau  # noqa: F401  (registers the Auto classes)
from hf_bahdanau.locations import check_model_location
from hf_bahdanau.pictures import plot_classifier_texts
from training.common.arguments import bad_arguments_exit, exit_on_bad_argument

REPO_ROOT = Path(__file__).resolve().parents[1]
FORTUNES_TEST = REPO_ROOT / "training" / "data" / "fortunes" / "test.jsonl"


@dataclass
class PictureArguments:
    """Which models, which documents, and where the pictures go."""

    model_dirs: list[str] = field(default_factory=list, metadata={
        "help": "Saved BahdanauForSequenceClassification folders (or Hub ids); one picture each."})
    test_file: Path = field(default=FORTUNES_TEST, metadata={"help": "A .jsonl file of documents."})
    text_column_name: str = field(default="text", metadata={"help": "Key of the text in each line."})
    label_column_name: str = field(default="label", metadata={"help": "Key of the true label in each line."})
    num_texts: int = field(default=4, metadata={"help": "How many documents each picture shows."})
    max_tokens: int = field(default=40, metadata={"help": "Longest document shown, in tokens (of every model)."})
    output_dir: Path = field(default=REPO_ROOT / "docs", metadata={"help": "Where the pictures go."})
    file_name: str = field(default="fortunes_attention_{}.png", metadata={
        "help": "Picture name; {} becomes flat_<pooling_type> or han_<pooling_type>."})
    dpi: int = field(default=80, metadata={"help": "Resolution of the saved pictures."})

    def __post_init__(self):
        if not self.model_dirs:
            raise ValueError("`--model_dirs` must name at least one saved classifier folder, got none.")
        for name in self.model_dirs:
            check_model_location(name, "--model_dirs")
        for argument, value, least in (("--num_texts", self.num_texts, 1), ("--max_tokens", self.max_tokens, 1),
                                       ("--dpi", self.dpi, 10)):
            if value < least:
                raise ValueError(f"`{argument}` must be at least {least}, got {value}.")
        if not Path(self.test_file).is_file():
            raise ValueError(f"`--test_file` {str(self.test_file)!r} is not a file.")
        if "{}" not in self.file_name:
            raise ValueError(f"`--file_name` must contain {{}} (the model's name), got {self.file_name!r}.")


def short_documents(rows: list[dict], tokenizers: list, column: str, count: int, max_tokens: int) -> list[dict]:
    """The first ``count`` rows whose ``column`` every tokenizer makes at most ``max_tokens`` tokens (specials
    included), in file order."""
    chosen = []
    for row in rows:
        if all(len(tokenizer(row[column])["input_ids"]) <= max_tokens for tokenizer in tokenizers):
            chosen.append(row)
            if len(chosen) == count:
                break
    return chosen


def picture_name(config) -> str:
    """"flat_<pooling_type>" or "han_<pooling_type>"."""
    return f"{'han' if config.hierarchical else 'flat'}_{config.pooling_type}"


def main(argv: list[str] | None = None) -> list[Path]:
    parser = HfArgumentParser(PictureArguments)
    (args,) = exit_on_bad_argument(parser, lambda: parser.parse_args_into_dataclasses(args=argv))
    with bad_arguments_exit(parser.prog):  # a ValueError of the folders or the file: exit 2
        models = [AutoModelForSequenceClassification.from_pretrained(name) for name in args.model_dirs]
        tokenizers = [AutoTokenizer.from_pretrained(name) for name in args.model_dirs]
        paths = [args.output_dir / args.file_name.format(picture_name(model.config)) for model in models]
        if len(set(paths)) != len(paths):
            raise ValueError(f"`--model_dirs` {args.model_dirs} give the same picture name twice "
                             f"({[path.name for path in paths]}): give models of different poolings or structures, "
                             "or run the script once per model.")
        lines = Path(args.test_file).read_text(encoding="utf-8").splitlines()
        rows = [json.loads(line) for line in lines if line.strip()]
        documents = short_documents(rows, tokenizers, args.text_column_name, args.num_texts, args.max_tokens)
        if not documents:
            raise ValueError(f"No document of `--test_file` {str(args.test_file)!r} has at most --max_tokens="
                             f"{args.max_tokens} tokens.")
    texts = [row[args.text_column_name] for row in documents]
    labels = [str(row[args.label_column_name]) for row in documents]
    args.output_dir.mkdir(parents=True, exist_ok=True)
    for model, tokenizer, path in zip(models, tokenizers, paths):
        plot_classifier_texts(model, tokenizer, texts, labels).savefig(path, dpi=args.dpi)
        print(f"{path}: {len(texts)} documents")
    return paths


if __name__ == "__main__":
    main()
