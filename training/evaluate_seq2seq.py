"""Decode one split file with a saved model folder (or an ensemble of folders) and score it as the seq2seq task does.

    python -m training.evaluate_seq2seq --model_name_or_path outputs/g2p --test_file data/g2p/test.jsonl \\
        --num_beams 5 --score_without_stress --output_dir outputs/g2p/eval-test
    python -m training.evaluate_seq2seq --model_name_or_path outputs/de-en --test_file test.jsonl --num_beams 5 \\
        --length_penalty 0.6 --length_penalty_style gnmt --coverage_penalty 0.2 --output_dir outputs/de-en/eval
    python -m training.evaluate_seq2seq --model_name_or_path outputs/g2p-seed0 --ensemble outputs/g2p-seed1 \\
        outputs/g2p-seed2 --test_file test.jsonl --num_beams 5 --output_dir outputs/g2p-ensemble3

The file (``--validation_file`` or ``--test_file``: .jsonl, .json, .csv or .tsv, read by training/common/data_files.py
as the seq2seq task reads it) has source and target columns, and optionally ``references`` (every accepted output of a
row: then WER and PER too). ``<output_dir>/<split>_results.json`` gets sacreBLEU and chrF (with their sacreBLEU
signatures), exact match, WER/PER (and without stress with ``--score_without_stress``), all in percent, the decoding
options used and the decoding time; ``<output_dir>/<split>_predictions.txt`` one output per line. Options not given
(beams, penalties, ``max_new_tokens``) are the model's generation config's. ``--update_model_card`` also writes the
scores into the folder's card (its model-index), e.g. after tuning the beam.
"""

import json
import logging
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import datasets
import numpy as np
import torch
from sacrebleu.metrics import BLEU, CHRF
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, EvalPrediction, HfArgumentParser

from hf_bahdanau.cards import write_model_card
from hf_bahdanau.cards.folder import read_json
from hf_bahdanau.cli import MAX_NEW_TOKENS, check_new_tokens
from hf_bahdanau.locations import check_model_location
from hf_bahdanau.modeling.copying import encode_with_copies
from hf_bahdanau.modeling.search import LENGTH_PENALTY_STYLES
from training.common.arguments import bad_arguments_exit, exit_on_bad_argument
from training.common.data_files import SPLITS, TEXT, TEXTS, Column, read_file
from training.tasks.seq2seq import REFERENCES, generated_texts, metrics_function

logger = logging.getLogger(__name__)

__all__ = ["DecodingArguments", "EvaluationDataArguments", "EvaluationModelArguments", "SplitEvaluation",
           "generate_ids", "load_model_and_tokenizer", "main", "record_in_model_card"]

CARD_SKIPS = ("decode_seconds", "samples_per_second")  # this machine's timing, not the model's quality
GENERATION_OPTIONS = ("num_beams", "max_new_tokens", "length_penalty", "length_penalty_style", "coverage_penalty")


@dataclass
class EvaluationModelArguments:
    """The model: a saved folder (or Hub id), and other folders that decode with it as an ensemble."""

    model_name_or_path: str = field(metadata={"help": "A saved model folder (with its tokenizer) or Hub id."})
    ensemble: list[str] | None = field(
        default=None, metadata={"help": "More model folders over the same vocabulary: decode with the mean of every "
                                        "model's probabilities (hf_bahdanau.ensemble; the tokenizer and the "
                                        "generation defaults are --model_name_or_path's)."})
    trust_remote_code: bool = field(default=False, metadata={"help": "Allow code from the model folder."})
    update_model_card: bool = field(
        default=False, metadata={"help": "Rewrite the card (README.md) of the --model_name_or_path folder with these "
                                         "scores as its results on the split (the training run's other results "
                                         "kept): a model alone, scored on the whole file."})
    torch_num_threads: int | None = field(
        default=None, metadata={"help": "CPU threads (torch.set_num_threads). Default: torch's choice."})

    def __post_init__(self):
        check_model_location(self.model_name_or_path, "--model_name_or_path")
        for name in self.ensemble or ():
            check_model_location(name, "--ensemble")
        if self.update_model_card and self.ensemble:
            raise ValueError(f"`--update_model_card` records one model's scores, and `--ensemble` {self.ensemble} "
                             "makes them an ensemble's: score the folder alone to update its card.")
        if self.update_model_card and not (Path(self.model_name_or_path) / "config.json").is_file():
            raise ValueError(f"`--update_model_card` rewrites a local model folder's card, and "
                             f"`--model_name_or_path` {self.model_name_or_path!r} is not a folder with a config.json.")
        if self.torch_num_threads is not None and self.torch_num_threads < 1:
            raise ValueError(f"`--torch_num_threads` must be a positive integer, got {self.torch_num_threads}.")


@dataclass
class EvaluationDataArguments:
    """The split file, its columns, how much of it, and where the results go."""

    output_dir: str = field(metadata={"help": "Where <split>_results.json and <split>_predictions.txt are written."})
    validation_file: str | None = field(default=None, metadata={"help": "A validation file (.jsonl/.json/.csv/.tsv)."})
    test_file: str | None = field(default=None, metadata={"help": "A test file, the same formats."})
    source_column: str = field(default="source", metadata={"help": "Column with the source text."})
    target_column: str = field(default="target", metadata={"help": "Column with the target text."})
    max_samples: int | None = field(default=None, metadata={"help": "Decode only the first N rows."})
    score_without_stress: bool = field(
        default=False, metadata={"help": "With a `references` column, also report WER and PER with the stress digits "
                                         "removed on both sides (wer_no_stress, per_no_stress), as the seq2seq task."})

    def __post_init__(self):
        if (self.validation_file is None) == (self.test_file is None):
            raise ValueError("Give exactly one of `--validation_file` and `--test_file` (the split to decode), got "
                             f"{self.validation_file!r} and {self.test_file!r}.")
        if self.max_samples is not None and self.max_samples < 1:
            raise ValueError(f"`--max_samples` must be a positive integer, got {self.max_samples}.")

    @property
    def split(self) -> str:
        return "validation" if self.validation_file is not None else "test"

    def read(self) -> datasets.Dataset:
        """The split's rows (its first ``--max_samples``), read as the seq2seq task reads them; a file without
        ``references`` with ``--score_without_stress`` is a ValueError."""
        argument = SPLITS[self.split]
        columns = {self.source_column: Column("source_column", TEXT),
                   self.target_column: Column("target_column", TEXT), REFERENCES: Column(None, TEXTS, required=False)}
        rows = read_file(getattr(self, argument), argument, columns)
        if self.score_without_stress and REFERENCES not in rows.column_names:
            raise ValueError(f"`--score_without_stress` scores the `{REFERENCES}` column, and `--{argument}` "
                             f"{getattr(self, argument)} has none (its columns: {rows.column_names}).")
        return rows if self.max_samples is None else rows.select(range(min(self.max_samples, len(rows))))


@dataclass
class DecodingArguments:
    """generate()'s options; those not given are the model's generation config's."""

    num_beams: int | None = field(default=None, metadata={"help": "Beams (1: greedy search)."})
    batch_size: int = field(default=32, metadata={"help": "Sources per generate() call (sorted by length)."})
    max_new_tokens: int | None = field(
        default=None, metadata={"help": f"Longest output in tokens, at most {MAX_NEW_TOKENS:,}."})
    length_penalty: float | None = field(
        default=None, metadata={"help": "The length penalty's exponent α: log P / |Y|^α, or with "
                                        "--length_penalty_style gnmt log P / ((5 + |Y|) / 6)^α (Wu et al. 2016)."})
    length_penalty_style: str | None = field(
        default=None, metadata={"help": f"{list(LENGTH_PENALTY_STYLES)}: transformers' |Y|^α or GNMT's."})
    coverage_penalty: float | None = field(
        default=None, metadata={"help": "GNMT's coverage penalty β ≥ 0: + β Σ_j log(min(Σ_t α_tj, 1)) (models with "
                                        "attention)."})

    def __post_init__(self):
        for name in ("num_beams", "batch_size", "max_new_tokens"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"`--{name}` must be a positive integer, got {value}.")
        check_new_tokens(self.max_new_tokens, "--max_new_tokens")
        if self.length_penalty_style is not None and self.length_penalty_style not in LENGTH_PENALTY_STYLES:
            raise ValueError(f"`--length_penalty_style` must be one of {list(LENGTH_PENALTY_STYLES)}, got "
                             f"{self.length_penalty_style!r}.")
        if self.coverage_penalty is not None and not self.coverage_penalty >= 0:
            raise ValueError(f"`--coverage_penalty` must be a number ≥ 0 (GNMT's β; 0 turns it off), got "
                             f"{self.coverage_penalty}.")

    def generation_options(self) -> dict:
        """The options given ({name: value}); generate() takes the rest from the generation config."""
        return {name: getattr(self, name) for name in GENERATION_OPTIONS if getattr(self, name) is not None}


def load_model_and_tokenizer(model_args: EvaluationModelArguments):
    """(model in eval mode, tokenizer): one model, or with ``--ensemble`` a ``BahdanauEnsembleForConditionalGeneration``
    of ``--model_name_or_path`` and the ``--ensemble`` folders. A folder or Hub id that holds no model or tokenizer is
    a ValueError naming the argument, with transformers' reason on one line."""
    kwargs = {"trust_remote_code": model_args.trust_remote_code}
    try:
        tokenizer = AutoTokenizer.from_pretrained(model_args.model_name_or_path, **kwargs)
        if model_args.ensemble:
            from hf_bahdanau.ensemble import BahdanauEnsembleForConditionalGeneration

            model = BahdanauEnsembleForConditionalGeneration.from_pretrained([model_args.model_name_or_path,
                                                                              *model_args.ensemble], **kwargs)
        else:
            model = AutoModelForSeq2SeqLM.from_pretrained(model_args.model_name_or_path, **kwargs)
    except (OSError, ValueError) as error:  # no tokenizer or model files, a Hub id not found, another kind of model
        given = f"`--model_name_or_path` {model_args.model_name_or_path!r}" + (
            f" with `--ensemble` {model_args.ensemble}" if model_args.ensemble else "")
        raise ValueError(f"{given}: cannot load a seq2seq model and its tokenizer: {' '.join(str(error).split())}") \
            from None
    return model.eval(), tokenizer


@torch.no_grad()
def generate_ids(model, tokenizer, sources: Sequence[str], *, batch_size: int = 32, **generation_options) -> np.ndarray:
    """generate()'s sequences [N, T] for ``sources``, in their order, ``pad_token_id`` after each row's end (a
    ``copy_attention`` model's copies of words beyond the vocabulary are ids ≥ vocab_size: ``encode_with_copies``).
    The sources go to ``model.generate(input_ids=, attention_mask=, **generation_options)`` in batches of
    ``batch_size`` sorted by length (less padding); ``model``: a seq2seq model or anything with its generate() (an
    ensemble)."""
    copying = getattr(model.config, "copy_attention", False)
    order = sorted(range(len(sources)), key=lambda row: len(sources[row]))
    sequences = [None] * len(sources)
    for start in range(0, len(order), batch_size):
        rows = order[start:start + batch_size]
        texts = [sources[row] for row in rows]
        if copying:
            batch = encode_with_copies(tokenizer, texts, vocab_size=model.config.vocab_size,
                                       return_tensors="pt").model_inputs()
        else:
            batch = tokenizer(texts, padding=True, return_tensors="pt")
        inputs = {name: tensor.to(model.device) for name, tensor in batch.items() if name != "token_type_ids"}
        for row, sequence in zip(rows, model.generate(**inputs, **generation_options).cpu().numpy()):
            sequences[row] = sequence
    padded = np.full((len(sequences), max(map(len, sequences))), tokenizer.pad_token_id, dtype=np.int64)
    for row, sequence in enumerate(sequences):
        padded[row, :len(sequence)] = sequence
    return padded


class SplitEvaluation:
    """One split, decoded and scored under any generation options: ``evaluation(**options)`` returns (metrics,
    predictions). The metrics are the seq2seq task's ``metrics_function`` (sacreBLEU, chrF, exact match, WER/PER with
    references, in percent; its metric modules are loaded once, here) plus the sacreBLEU signatures of BLEU and chrF,
    the generation options in effect and the decoding time. The targets are scored as the seq2seq task scores them:
    tokenised and decoded again."""

    def __init__(self, model, tokenizer, rows: datasets.Dataset, data_args: EvaluationDataArguments,
                 decoding_args: DecodingArguments):
        self.model, self.tokenizer, self.decoding_args = model, tokenizer, decoding_args
        self.sources, targets = list(rows[data_args.source_column]), list(rows[data_args.target_column])
        self.copy_vocab_size = model.config.vocab_size if getattr(model.config, "copy_attention", False) else None
        if self.copy_vocab_size is None:
            labels, self.source_oovs = tokenizer(text_target=targets)["input_ids"], None
        else:  # the target's copies of source words get the ids the model outputs for them
            encoded = encode_with_copies(tokenizer, self.sources, targets, vocab_size=self.copy_vocab_size)
            labels, self.source_oovs = encoded["labels"], encoded.source_oovs
        self.label_ids = np.full((len(labels), max(map(len, labels))), -100, dtype=np.int64)
        for row, ids in enumerate(labels):
            self.label_ids[row, :len(ids)] = ids
        self.targets = generated_texts(tokenizer, self.label_ids, self.source_oovs, self.copy_vocab_size)
        references = list(rows[REFERENCES]) if REFERENCES in rows.column_names else None
        self.compute_metrics = metrics_function(tokenizer, lambda: self.source_oovs, self.copy_vocab_size,
                                                lambda: references, data_args.score_without_stress)

    def __call__(self, **generation_options) -> tuple[dict, list[str]]:
        """(metrics, predictions) with ``generation_options`` over the ``DecodingArguments``' options (None: drop
        the option, leaving it to the generation config)."""
        options = {name: value for name, value in {**self.decoding_args.generation_options(),
                                                   **generation_options}.items() if value is not None}
        started = time.perf_counter()
        sequences = generate_ids(self.model, self.tokenizer, self.sources,
                                 batch_size=self.decoding_args.batch_size, **options)
        seconds = time.perf_counter() - started
        metrics = self.compute_metrics(EvalPrediction(predictions=sequences, label_ids=self.label_ids))
        predictions = generated_texts(self.tokenizer, sequences, self.source_oovs, self.copy_vocab_size)
        for name, metric in (("bleu", BLEU()), ("chrf", CHRF())):  # the settings of metrics_function's sacreBLEU
            metric.corpus_score(predictions, [self.targets])
            metrics[f"{name}_signature"] = str(metric.get_signature())
        config = self.model.generation_config
        metrics.update(num_samples=len(self.sources), decode_seconds=seconds,
                       samples_per_second=len(self.sources) / seconds,
                       generation={name: options.get(name, getattr(config, name, None)) for name in GENERATION_OPTIONS})
        return metrics, predictions


def record_in_model_card(model_dir: Path, split: str, metrics: dict) -> Path:
    """Rewrite ``model_dir``'s card with ``metrics`` as its results on ``split`` ("validation" or "test"), in place
    of what training measured there (``all_results.json``'s ``eval_``/``predict_`` scores); returns the card's path."""
    prefix = {"validation": "eval", "test": "predict"}[split]
    trained = read_json(model_dir / "all_results.json") or {}
    results = {name: value for name, value in trained.items() if not name.startswith(f"{prefix}_")}
    results.update({f"{prefix}_{name}": value for name, value in metrics.items()
                    if isinstance(value, float) and name not in CARD_SKIPS})
    return write_model_card(model_dir, results=results)


def checked_arguments(parser: HfArgumentParser, argv: list[str]) -> tuple:
    """The model, data and decoding arguments of ``argv``; a ValueError where they contradict each other."""
    model_args, data_args, decoding_args = parser.parse_args_into_dataclasses(args=argv)
    if model_args.update_model_card and data_args.max_samples is not None:
        raise ValueError(f"`--update_model_card` records scores on the whole split, and `--max_samples` "
                         f"{data_args.max_samples} scores its first rows only: leave one of them out.")
    return model_args, data_args, decoding_args


def read_split_and_model(model_args: EvaluationModelArguments, data_args: EvaluationDataArguments) -> tuple:
    """What a decoding script does after parsing: logging, ``--torch_num_threads``, then the split's rows and the model
    with its tokenizer (a ValueError of the data or the model, a bad argument: exit 2)."""
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
    if model_args.torch_num_threads is not None:
        torch.set_num_threads(model_args.torch_num_threads)
    with bad_arguments_exit():
        rows = data_args.read()
        return (rows, *load_model_and_tokenizer(model_args))


def main(argv: list[str] | None = None) -> dict:
    """Decode and score the split; returns the metrics written to ``<output_dir>/<split>_results.json``."""
    parser = HfArgumentParser((EvaluationModelArguments, EvaluationDataArguments, DecodingArguments),
                              description=__doc__.split("\n")[0])
    model_args, data_args, decoding_args = exit_on_bad_argument(
        parser, lambda: checked_arguments(parser, sys.argv[1:] if argv is None else argv))
    rows, model, tokenizer = read_split_and_model(model_args, data_args)
    with bad_arguments_exit():  # a ValueError of the decoding arguments for this model: exit 2
        metrics, predictions = SplitEvaluation(model, tokenizer, rows, data_args, decoding_args)()
    metrics = {"model": model_args.model_name_or_path, "ensemble": model_args.ensemble,
               "file": getattr(data_args, SPLITS[data_args.split]), **metrics}
    output_dir = Path(data_args.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / f"{data_args.split}_results.json").write_text(json.dumps(metrics, indent=2) + "\n")
    (output_dir / f"{data_args.split}_predictions.txt").write_text("".join(line + "\n" for line in predictions))
    if model_args.update_model_card:
        record_in_model_card(Path(model_args.model_name_or_path), data_args.split, metrics)
    logger.info("%s: %s", data_args.split, {name: value for name, value in metrics.items()
                                            if isinstance(value, float)})
    print(f"BLEU {metrics['bleu']:.2f} ({metrics['bleu_signature']}), chrF {metrics['chrf']:.2f}; results in "
          f"{output_dir / f'{data_args.split}_results.json'}")
    return metrics


if __name__ == "__main__":
    main()
