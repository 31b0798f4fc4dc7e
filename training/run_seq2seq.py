#!/usr/bin/env python
"""Train, evaluate and decode an RNN encoder–attention–decoder on text pairs, like transformers' run_translation.py.

    python training/run_seq2seq.py training/configs/dates_rnnsearch.json            # the bundled main job
    python training/run_seq2seq.py training/configs/dates_rnnsearch.json --max_steps 200 --output_dir outputs/try
    python training/run_seq2seq.py --preset rnnsearch --config_overrides "hidden_size=256,attention_type=general" \\
        --train_file train.tsv --validation_file dev.tsv --test_file test.tsv --source_column de --target_column en \\
        --tokenizer_type bpe --tokenizer_vocab_size 8000 --do_train --do_eval --do_predict --predict_with_generate \\
        --num_beams 5 --output_dir outputs/my-model
    torchrun --nproc_per_node 2 training/run_seq2seq.py ...                           # DDP (gloo on CPU)

Arguments: `ModelArguments`, `DataTrainingArguments` below and every `Seq2SeqTrainingArguments` flag. A single
.json file of arguments may come first; flags after it override its values.

The output folder gets the model (safetensors, config, generation config), the tokenizer, `all_results.json`
(sacreBLEU, chrF, exact match in percent; alignment error rate when the data has field spans), a training-curve
PNG, alignment heat maps of the first evaluated sentences, `generated_predictions.txt` and the model card.
"""

import ast
import copy
import json
import logging
import math
import os
import sys
from dataclasses import dataclass, field, fields
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # `python training/run_seq2seq.py` puts training/ first, not the repository
    sys.path.insert(0, str(REPO_ROOT))

import datasets  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import (  # noqa: E402
    AutoModelForSeq2SeqLM,
    AutoTokenizer,
    DataCollatorForSeq2Seq,
    HfArgumentParser,
    Seq2SeqTrainer,
    Seq2SeqTrainingArguments,
    set_seed,
)

from hf_bahdanau import PRESETS, BahdanauConfig, BahdanauForConditionalGeneration  # noqa: E402
from model_cards import write_model_card  # noqa: E402
from training.alignment_error import alignment_error_rate  # noqa: E402
from training.figures import TRAINING_CURVE, plot_training_curve, save_alignment_pictures  # noqa: E402
from training.hub_utils import CodeFilesCallback, push_output_dir  # noqa: E402
from training.metrics import load_metric  # noqa: E402
from training.tokenization import TOKENIZER_KINDS, train_tokenizer  # noqa: E402

logger = logging.getLogger(__name__)

FILE_FORMATS = (".csv", ".tsv", ".json", ".jsonl")
SPLITS = {"train": "train_file", "validation": "validation_file", "test": "test_file"}
TRUNCATED = "truncated"


@dataclass
class ModelArguments:
    """Which model and tokenizer: a saved one (`model_name_or_path`) or a new one (`preset` + overrides)."""

    model_name_or_path: str | None = field(
        default=None, metadata={"help": "A saved model folder or Hub id to start from (instead of --preset)."})
    preset: str | None = field(
        default=None, metadata={"help": f"Train a new model from this BahdanauConfig preset: {sorted(PRESETS)}."})
    config_overrides: str | None = field(
        default=None, metadata={"help": "Config fields for a new --preset model, e.g. "
                                        "'hidden_size=256,attention_type=general,dropout=0.2'."})
    tokenizer_name: str | None = field(
        default=None, metadata={"help": "A saved tokenizer (folder or Hub id). Default: the model's, or for a new "
                                        "model one trained on the training data."})
    tokenizer_type: str = field(
        default="char", metadata={"help": f"Kind of tokenizer to train when none is given: {list(TOKENIZER_KINDS)}."})
    tokenizer_vocab_size: int | None = field(
        default=None, metadata={"help": "Vocabulary size of a trained tokenizer (default: every char/word seen; "
                                        "8000 for bpe/unigram)."})
    lowercase: bool = field(default=False, metadata={"help": "Lower-case text in a trained tokenizer."})
    cache_dir: str | None = field(default=None, metadata={"help": "Where downloaded models and datasets are stored."})
    model_revision: str = field(default="main", metadata={"help": "Hub revision (branch, tag or commit)."})
    token: str | None = field(default=None, metadata={"help": "Hub token for private models and datasets."})
    trust_remote_code: bool = field(default=False, metadata={"help": "Allow code from model/dataset repositories."})
    torch_num_threads: int | None = field(
        default=None, metadata={"help": "CPU threads per process (torch.set_num_threads). Small RNNs train fastest "
                                        "with 1: their matrices are too small to share. Default: torch's choice."})

    def __post_init__(self):
        if (self.model_name_or_path is None) == (self.preset is None):
            raise ValueError("Give exactly one of `--model_name_or_path` (a saved model) and `--preset` (a new one: "
                             f"{sorted(PRESETS)}).")
        if self.preset is not None and self.preset not in PRESETS:
            raise ValueError(f"`--preset` must be one of {sorted(PRESETS)}, got {self.preset!r}.")
        if self.config_overrides is not None and self.model_name_or_path is not None:
            raise ValueError("`--config_overrides` configures a new model: use it with `--preset`, not with "
                             "`--model_name_or_path`.")
        if self.tokenizer_type not in TOKENIZER_KINDS:
            raise ValueError(f"`--tokenizer_type` must be one of {list(TOKENIZER_KINDS)}, got {self.tokenizer_type!r}.")


@dataclass
class DataTrainingArguments:
    """Which data, which columns, which lengths, and what to report."""

    dataset_name: str | None = field(default=None, metadata={"help": "A dataset on the Hub (needs network)."})
    dataset_config_name: str | None = field(default=None, metadata={"help": "Its configuration name."})
    train_file: str | None = field(default=None, metadata={"help": "Training data: .csv, .tsv, .json or .jsonl."})
    validation_file: str | None = field(default=None, metadata={"help": "Evaluation data (--do_eval)."})
    test_file: str | None = field(default=None, metadata={"help": "Test data (--do_predict)."})
    source_column: str = field(default="source", metadata={"help": "Column with the source text."})
    target_column: str = field(default="target", metadata={"help": "Column with the target text."})
    source_spans_column: str = field(
        default="source_spans", metadata={"help": "Column of {field: [start, end]} source character spans; with "
                                                  "--target_spans_column the alignment error rate is reported."})
    target_spans_column: str = field(
        default="target_spans", metadata={"help": "Column of {field: [start, end]} target character spans."})
    max_source_length: int | None = field(
        default=None, metadata={"help": "Longest source in tokens (EOS included). Longer sources are truncated and "
                                        "counted in a warning. Default: no limit."})
    max_target_length: int | None = field(
        default=None, metadata={"help": "Longest target in tokens, the same way. Default: no limit."})
    max_new_tokens: int | None = field(
        default=None, metadata={"help": "Generation limit saved in the generation config. Default: 1.5 x the "
                                        "longest training target."})
    num_beams: int | None = field(
        default=None, metadata={"help": "Beams for evaluation, prediction and the saved generation config."})
    max_train_samples: int | None = field(default=None, metadata={"help": "Use only the first N training rows."})
    max_eval_samples: int | None = field(default=None, metadata={"help": "Use only the first N evaluation rows."})
    max_predict_samples: int | None = field(default=None, metadata={"help": "Use only the first N test rows."})
    preprocessing_num_workers: int | None = field(default=None, metadata={"help": "Processes for tokenisation."})
    overwrite_cache: bool = field(default=False, metadata={"help": "Re-tokenise instead of using the cache."})
    num_alignment_pictures: int = field(
        default=4, metadata={"help": "Save alignment heat maps of the first N test (else validation) sentences."})
    language: list[str] | None = field(default=None, metadata={"help": "Languages of the data, for the model card."})
    dataset_description: str | None = field(default=None, metadata={"help": "One line on the data for the card."})

    def __post_init__(self):
        if self.dataset_name is None and not any(getattr(self, name) for name in SPLITS.values()):
            raise ValueError("Give `--dataset_name` or at least one of `--train_file`, `--validation_file`, "
                             "`--test_file`.")
        for name in SPLITS.values():
            path = getattr(self, name)
            if path is not None and Path(path).suffix not in FILE_FORMATS:
                raise ValueError(f"`--{name}` must end in one of {list(FILE_FORMATS)}, got {path!r}.")
        for name in ("max_source_length", "max_target_length", "max_new_tokens", "num_beams"):
            value = getattr(self, name)
            if value is not None and value < (2 if name.endswith("length") else 1):
                raise ValueError(f"`--{name}` must be a positive integer (lengths at least 2), got {value}.")


def parse_config_overrides(overrides: str | None) -> dict:
    """'hidden_size=256,attention_type=general,bidirectional=false' -> {"hidden_size": 256, ...}."""
    allowed = {config_field.name for config_field in fields(BahdanauConfig)}
    parsed = {}
    for item in filter(None, (overrides or "").split(",")):
        key, separator, text = item.partition("=")
        key = key.strip()
        if not separator or key not in allowed:
            raise ValueError(f"`--config_overrides` takes 'field=value,...' with BahdanauConfig fields "
                             f"{sorted(allowed)}, got {item!r}.")
        text = text.strip()
        literal = {"true": "True", "false": "False", "none": "None", "null": "None"}.get(text.lower(), text)
        try:
            parsed[key] = ast.literal_eval(literal)
        except (ValueError, SyntaxError):
            parsed[key] = text
    return parsed


def launched_on_cpu_only() -> bool:
    """Several processes (torchrun) and no accelerator: transformers runs DDP on CPU (gloo) only with use_cpu=True;
    without it every process would train alone."""
    accelerator = getattr(torch, "accelerator", None)
    has_accelerator = accelerator.is_available() if accelerator is not None else torch.cuda.is_available()
    return int(os.environ.get("WORLD_SIZE", "1")) > 1 and not has_accelerator


def parse_arguments(argv: list[str]) -> tuple[ModelArguments, DataTrainingArguments, Seq2SeqTrainingArguments]:
    """Flags, or a .json file of arguments followed by flags that override it. Under torchrun on a machine without
    an accelerator, ``--use_cpu true`` is implied (see `launched_on_cpu_only`)."""
    parser = HfArgumentParser((ModelArguments, DataTrainingArguments, Seq2SeqTrainingArguments))
    if argv and argv[0].endswith(".json"):
        argv = json_to_flags(json.loads(Path(argv[0]).read_text())) + argv[1:]
    if launched_on_cpu_only() and "--use_cpu" not in argv:
        argv = [*argv, "--use_cpu", "true"]
    return parser.parse_args_into_dataclasses(args=argv)


def json_to_flags(arguments: dict) -> list[str]:
    flags = []
    for key, value in arguments.items():
        values = value if isinstance(value, list) else [value]
        flags += [f"--{key}", *(json.dumps(v) if isinstance(v, dict) else str(v) for v in values)]
    return flags


def read_file(path: str, cache_dir: str | None) -> datasets.Dataset:
    """A .csv/.tsv file through the datasets csv builder; a .json (list of records or JSON lines) or .jsonl file
    through Python's json, which keeps strings as strings (pyarrow's JSON reader turns "2015-03-03" into a date)."""
    suffix = Path(path).suffix
    if suffix in (".csv", ".tsv"):
        options = {"delimiter": "\t"} if suffix == ".tsv" else {}
        return datasets.load_dataset("csv", data_files={"rows": path}, cache_dir=cache_dir, **options)["rows"]
    text = Path(path).read_text(encoding="utf-8")
    if text.lstrip().startswith("["):
        return datasets.Dataset.from_list(json.loads(text))
    return datasets.Dataset.from_list([json.loads(line) for line in text.splitlines() if line.strip()])


def load_raw_datasets(data_args: DataTrainingArguments, model_args: ModelArguments) -> datasets.DatasetDict:
    if data_args.dataset_name is not None:
        return datasets.load_dataset(data_args.dataset_name, data_args.dataset_config_name,
                                     cache_dir=model_args.cache_dir, token=model_args.token,
                                     trust_remote_code=model_args.trust_remote_code)
    raw = datasets.DatasetDict()
    for split, argument in SPLITS.items():
        path = getattr(data_args, argument)
        if path is not None:
            raw[split] = read_file(path, model_args.cache_dir)
    for split, dataset in raw.items():
        for argument in ("source_column", "target_column"):
            if getattr(data_args, argument) not in dataset.column_names:
                raise ValueError(f"`--{argument}` {getattr(data_args, argument)!r} is not a column of the {split} "
                                 f"data; its columns are {dataset.column_names}.")
    return raw


def select_split(raw: datasets.DatasetDict, split: str, limit: int | None, flag: str) -> datasets.Dataset:
    if split not in raw:
        raise ValueError(f"{flag} needs a {split} split: give `--{SPLITS[split]}` (or a dataset that has one).")
    return raw[split] if limit is None else raw[split].select(range(min(limit, len(raw[split]))))


def load_tokenizer(model_args: ModelArguments, train: datasets.Dataset | None, data_args: DataTrainingArguments):
    name = model_args.tokenizer_name or model_args.model_name_or_path
    if name is not None:
        return AutoTokenizer.from_pretrained(name, cache_dir=model_args.cache_dir, revision=model_args.model_revision,
                                             token=model_args.token, trust_remote_code=model_args.trust_remote_code)
    if train is None:
        raise ValueError("Training a tokenizer needs training data: give `--train_file` or `--tokenizer_name`.")
    texts = (text for column in (data_args.source_column, data_args.target_column) for text in train[column])
    tokenizer = train_tokenizer(texts, kind=model_args.tokenizer_type, vocab_size=model_args.tokenizer_vocab_size,
                                lowercase=model_args.lowercase)
    logger.info("Trained a %s tokenizer with %d tokens on the training data", model_args.tokenizer_type,
                len(tokenizer))
    return tokenizer


def load_model(model_args: ModelArguments, tokenizer):
    if model_args.model_name_or_path is not None:
        model = AutoModelForSeq2SeqLM.from_pretrained(
            model_args.model_name_or_path, cache_dir=model_args.cache_dir, revision=model_args.model_revision,
            token=model_args.token, trust_remote_code=model_args.trust_remote_code)
        if len(tokenizer) > model.get_input_embeddings().num_embeddings:
            model.resize_token_embeddings(len(tokenizer))
        return model
    config = BahdanauConfig.from_preset(model_args.preset, **{
        "vocab_size": len(tokenizer), "pad_token_id": tokenizer.pad_token_id, "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id, "decoder_start_token_id": tokenizer.bos_token_id,
        **parse_config_overrides(model_args.config_overrides)})
    model = BahdanauForConditionalGeneration(config)
    logger.info("New %s model: %s parameters", model_args.preset, f"{model.num_parameters():,}")
    return model


def clip(ids: list[int], limit: int | None) -> list[int]:
    """The first `limit` tokens, the last (EOS) kept at the end."""
    return ids if limit is None or len(ids) <= limit else ids[: limit - 1] + ids[-1:]


def tokenize_split(dataset: datasets.Dataset, split: str, tokenizer, data_args: DataTrainingArguments,
                   main_process_first) -> datasets.Dataset:
    """input_ids/attention_mask/labels; truncation only with --max_*_length, and every truncated row is counted."""

    def tokenize(batch):
        sources = tokenizer(batch[data_args.source_column])["input_ids"]
        targets = tokenizer(text_target=batch[data_args.target_column])["input_ids"]
        input_ids = [clip(ids, data_args.max_source_length) for ids in sources]
        labels = [clip(ids, data_args.max_target_length) for ids in targets]
        return {"input_ids": input_ids, "attention_mask": [[1] * len(ids) for ids in input_ids], "labels": labels,
                TRUNCATED: [(len(a), len(b)) != (len(c), len(d))
                            for a, b, c, d in zip(input_ids, labels, sources, targets)]}

    with main_process_first(desc=f"{split} dataset tokenisation"):
        tokenized = dataset.map(tokenize, batched=True, remove_columns=dataset.column_names,
                                num_proc=data_args.preprocessing_num_workers,
                                load_from_cache_file=not data_args.overwrite_cache, desc=f"Tokenising {split}")
    truncated = sum(tokenized[TRUNCATED])
    if truncated:
        logger.warning("%d of %d %s examples were truncated to --max_source_length=%s / --max_target_length=%s "
                       "tokens.", truncated, len(tokenized), split, data_args.max_source_length,
                       data_args.max_target_length)
    return tokenized.remove_columns(TRUNCATED)


def metrics_function(tokenizer):
    """compute_metrics for predict_with_generate: sacreBLEU, chrF, exact match (all in percent), mean output length."""
    bleu, chrf, exact_match = (load_metric(name) for name in ("sacrebleu", "chrf", "exact_match"))

    def compute_metrics(eval_prediction) -> dict[str, float]:
        predictions, labels = eval_prediction.predictions, eval_prediction.label_ids
        predictions = np.where(predictions != -100, predictions, tokenizer.pad_token_id)
        labels = np.where(labels != -100, labels, tokenizer.pad_token_id)
        outputs = [text.strip() for text in tokenizer.batch_decode(predictions, skip_special_tokens=True)]
        references = [text.strip() for text in tokenizer.batch_decode(labels, skip_special_tokens=True)]
        return {
            "bleu": bleu.compute(predictions=outputs, references=[[r] for r in references])["score"],
            "chrf": chrf.compute(predictions=outputs, references=[[r] for r in references])["score"],
            "exact_match": 100 * exact_match.compute(predictions=outputs, references=references)["exact_match"],
            "gen_len": float(np.mean(np.count_nonzero(predictions != tokenizer.pad_token_id, axis=1))),
        }

    return compute_metrics


def alignment_metrics(model, tokenizer, dataset: datasets.Dataset, data_args: DataTrainingArguments,
                      prefix: str) -> dict[str, float]:
    """`{prefix}_alignment_error_rate` when the split has both span columns and the model attends, else {}."""
    span_columns = (data_args.source_spans_column, data_args.target_spans_column)
    if model.config.attention_type == "none" or not set(span_columns) <= set(dataset.column_names):
        return {}
    rate, counted = alignment_error_rate(model, tokenizer, dataset[data_args.source_column],
                                         dataset[data_args.target_column], *(dataset[c] for c in span_columns))
    logger.info("%s alignment error rate %.4f over %d field tokens", prefix, rate, counted)
    return {f"{prefix}_alignment_error_rate": rate}


def evaluate_split(trainer, name: str, raw: datasets.Dataset, tokenized: datasets.Dataset, tokenizer,
                   data_args: DataTrainingArguments, training_args: Seq2SeqTrainingArguments) -> dict[str, float]:
    """Trainer metrics of one split (eval or predict), with the alignment error rate; saves predictions."""
    generation = {"num_beams": data_args.num_beams} if data_args.num_beams else {}
    if name == "eval":
        metrics = trainer.evaluate(metric_key_prefix="eval", **generation)
        predictions = None
    else:
        results = trainer.predict(tokenized, metric_key_prefix="predict", **generation)
        metrics, predictions = results.metrics, results.predictions
    metrics[f"{name}_samples"] = len(tokenized)
    if trainer.is_world_process_zero():
        metrics.update(alignment_metrics(trainer.model, tokenizer, raw, data_args, name))
        if predictions is not None and training_args.predict_with_generate:
            predictions = np.where(predictions != -100, predictions, tokenizer.pad_token_id)[: len(tokenized)]
            texts = [text.strip() for text in tokenizer.batch_decode(predictions, skip_special_tokens=True)]
            (Path(training_args.output_dir) / "generated_predictions.txt").write_text("\n".join(texts) + "\n")
    trainer.log_metrics(name, metrics)
    trainer.save_metrics(name, metrics)
    return metrics


def main(argv: list[str] | None = None) -> None:
    model_args, data_args, training_args = parse_arguments(sys.argv[1:] if argv is None else argv)

    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S",
                        handlers=[logging.StreamHandler(sys.stdout)])
    log_level = training_args.get_process_log_level()
    logger.setLevel(log_level)
    datasets.utils.logging.set_verbosity(log_level)
    transformers.utils.logging.set_verbosity(log_level)
    transformers.utils.logging.enable_default_handler()
    transformers.utils.logging.enable_explicit_format()
    logger.warning("Process rank %s, world size %s, device %s", training_args.process_index,
                   training_args.world_size, training_args.device)
    set_seed(training_args.seed)
    if model_args.torch_num_threads is not None:
        torch.set_num_threads(model_args.torch_num_threads)

    raw = load_raw_datasets(data_args, model_args)
    raw_splits = {}
    if training_args.do_train:
        raw_splits["train"] = select_split(raw, "train", data_args.max_train_samples, "--do_train")
    if training_args.do_eval:
        raw_splits["eval"] = select_split(raw, "validation", data_args.max_eval_samples, "--do_eval")
    if training_args.do_predict:
        raw_splits["predict"] = select_split(raw, "test", data_args.max_predict_samples, "--do_predict")

    tokenizer = load_tokenizer(model_args, raw_splits.get("train", raw.get("train")), data_args)
    model = load_model(model_args, tokenizer)
    tokenized = {name: tokenize_split(split, name, tokenizer, data_args, training_args.main_process_first)
                 for name, split in raw_splits.items()}
    if data_args.max_new_tokens is not None:
        model.generation_config.max_new_tokens = data_args.max_new_tokens
    elif "train" in tokenized:
        model.generation_config.max_new_tokens = math.ceil(1.5 * max(len(ids) for ids in tokenized["train"]["labels"]))
    if data_args.num_beams is not None:
        model.generation_config.num_beams = data_args.num_beams
    # Seq2SeqTrainer writes every default into model.generation_config when it evaluates (max_length=20 among them,
    # which then clashes with max_new_tokens at every generate): the saved model gets the settings made here.
    generation_config = copy.deepcopy(model.generation_config)

    trainer = Seq2SeqTrainer(
        model=model,
        args=training_args,
        train_dataset=tokenized.get("train"),
        eval_dataset=tokenized.get("eval"),
        processing_class=tokenizer,
        data_collator=DataCollatorForSeq2Seq(tokenizer, model=model),
        compute_metrics=metrics_function(tokenizer) if training_args.predict_with_generate else None,
        callbacks=[CodeFilesCallback()],  # checkpoint pushes carry the model code too
    )
    output_dir = Path(training_args.output_dir)

    if training_args.do_train:
        train_result = trainer.train(resume_from_checkpoint=training_args.resume_from_checkpoint)
        trainer.model.generation_config = generation_config
        trainer.save_model()  # model, generation config, tokenizer
        metrics = {**train_result.metrics, "train_samples": len(tokenized["train"])}
        trainer.log_metrics("train", metrics)
        trainer.save_metrics("train", metrics)
        trainer.save_state()
        if trainer.is_world_process_zero() and any("loss" in entry for entry in trainer.state.log_history):
            plot_training_curve(trainer.state.log_history, output_dir / TRAINING_CURVE,
                                metric="eval_exact_match" if training_args.predict_with_generate else None)
        elif trainer.is_world_process_zero():
            logger.warning("No training curve: no loss was logged (training ran fewer than --logging_steps steps).")

    for name in ("eval", "predict"):
        if name in tokenized:
            evaluate_split(trainer, name, raw_splits[name], tokenized[name], tokenizer, data_args, training_args)

    if not trainer.is_world_process_zero():
        return
    pictured = raw_splits.get("predict", raw_splits.get("eval"))
    if pictured is not None and data_args.num_alignment_pictures and model.config.attention_type != "none":
        sources = pictured[data_args.source_column][: data_args.num_alignment_pictures]
        save_alignment_pictures(trainer.model, tokenizer, sources, output_dir, num_beams=data_args.num_beams or 1)
    if training_args.do_train:
        dataset_name = data_args.dataset_name or Path(data_args.train_file).parent.name
        write_model_card(output_dir, task="translation", dataset_name=dataset_name,
                         dataset_description=data_args.dataset_description, training_args=training_args.to_dict(),
                         language=data_args.language, example_inputs=(pictured or raw_splits["train"])[
                             data_args.source_column][:2])
    if training_args.push_to_hub:  # the finished folder, real card included (instead of trainer.push_to_hub)
        push_output_dir(output_dir, training_args.hub_model_id or output_dir.name, token=training_args.hub_token,
                        private=training_args.hub_private_repo, revision=training_args.hub_revision)


if __name__ == "__main__":
    main()
