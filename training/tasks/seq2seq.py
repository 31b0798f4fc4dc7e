"""The seq2seq task: train, evaluate and decode an RNN encoder–attention–decoder on text pairs, like transformers'
run_translation.py (``training/run_seq2seq.py`` runs it too).

    python -m training seq2seq training/configs/dates_rnnsearch.json            # the bundled main job
    python -m training seq2seq training/configs/dates_rnnsearch.json --max_steps 200 --output_dir outputs/try
    python -m training seq2seq --preset rnnsearch --config_overrides "hidden_size=256,attention_type=general" \\
        --train_file train.tsv --validation_file dev.tsv --test_file test.tsv --source_column de --target_column en \\
        --tokenizer_type bpe --tokenizer_vocab_size 8000 --do_train --do_eval --do_predict --predict_with_generate \\
        --num_beams 5 --output_dir outputs/my-model
    torchrun --nproc_per_node 2 -m training seq2seq ...                          # DDP (gloo on CPU)
    python -m training seq2seq ... --architecture transformer --transformer_parameters 2500000  # the baseline

`--architecture transformer` trains the model a user would pick instead, with the same data, tokenizer, Trainer,
metrics and generation settings: transformers' own MarianMTModel built from scratch (training/transformer_baseline.py;
`--config_overrides` then sets MarianConfig fields, and `--transformer_parameters N` or `--match_rnn_parameters
FOLDER` sizes d_model to a parameter count).

Arguments: `ModelArguments`, `DataTrainingArguments` below and every `Seq2SeqTrainingArguments` flag. A single
.json file of arguments may come first; flags after it override its values. `--max_train_minutes` stops training at a
budget of training minutes (evaluations not counted), for comparisons at the same wall-clock cost.

The output folder gets the model (safetensors, config, generation config), the tokenizer, `all_results.json`
(sacreBLEU, chrF, exact match in percent; alignment error rate when the data has field spans; `num_parameters`, the
learned ones), a training-curve PNG, alignment heat maps of the first evaluated sentences (and the encoder's
self-attention and embedding mixture when the model has them; RNNs only), `generated_predictions.txt` and the model
card.
"""

import json
import logging
import math
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import datasets
import numpy as np
import torch
from transformers import AutoConfig, AutoModelForSeq2SeqLM, MarianConfig, MarianMTModel, Seq2SeqTrainer

from hf_bahdanau import PRESETS, BahdanauConfig, BahdanauForConditionalGeneration, DataCollatorWithRightPaddedLabels
from hf_bahdanau.cli import MAX_NEW_TOKENS, check_new_tokens
from hf_bahdanau.families import find_family
from hf_bahdanau.modeling.collators import DataCollatorForCopying
from hf_bahdanau.modeling.copying import decode_with_copies, encode_with_copies
from hf_bahdanau.word_vectors import prepare_meta_embedding
from training.common.alignment_error import alignment_error_rate
from training.common.arguments import ReportArguments, TextModelArguments, check_new_config, parse_config_overrides
from training.common.data_files import SPANS, TEXT, TEXTS, Column, DataFileArguments, load_raw_splits, requested_splits
from training.common.driver import Report, Setup, Task
from training.common.figures import save_alignment_pictures, save_encoder_pictures
from training.common.metrics import load_metric
from training.common.streaming import TrainingStream, first_rows, open_stream
from training.common.token_batching import check_max_tokens
from training.common.tokenization import TOKENIZER_KINDS
from training.transformer_baseline import (
    check_generation_options, freeze_position_tables, learned_parameters, transformer_config,
)

logger = logging.getLogger(__name__)

TRUNCATED = "truncated"
REFERENCES = "references"  # a split's column of every accepted output per row: WER and PER are scored against it
ARCHITECTURES = {"rnn": "an hf_bahdanau RNN encoder–decoder (--preset)",
                 "transformer": "transformers' MarianMTModel from scratch, the baseline "
                                "(training/transformer_baseline.py)"}


@dataclass
class ModelArguments(TextModelArguments):
    """Which model and tokenizer: a saved one (`model_name_or_path`) or a new one (`preset` + overrides, or
    `architecture="transformer"` + overrides)."""

    architecture: str = field(
        default="rnn", metadata={"help": f"The kind of new model: {ARCHITECTURES}."})
    preset: str | None = field(
        default=None, metadata={"help": f"Train a new RNN from this BahdanauConfig preset: {sorted(PRESETS)}."})
    config_overrides: str | None = field(
        default=None, metadata={"help": "Config fields for a new model: BahdanauConfig's for a --preset model, e.g. "
                                        "'hidden_size=256,attention_type=general,dropout=0.2'; MarianConfig's for "
                                        "--architecture transformer, e.g. 'encoder_layers=4,decoder_layers=4,"
                                        "encoder_attention_heads=8,decoder_attention_heads=8,dropout=0.2'."})
    transformer_parameters: int | None = field(
        default=None, metadata={"help": "--architecture transformer: choose d_model (a multiple of the heads; the "
                                        "feed-forward sizes 4·d_model unless overridden) so that the model has this "
                                        "many learned parameters, within 3 percent."})
    match_rnn_parameters: str | None = field(
        default=None, metadata={"help": "--architecture transformer: size d_model to the learned parameters of this "
                                        "saved model folder (e.g. the RNN it is compared with), within 3 percent."})
    tokenizer_type: str = field(
        default="char", metadata={"help": f"Kind of tokenizer to train when none is given: {list(TOKENIZER_KINDS)}."})
    tokenizer_vocab_size: int | None = field(
        default=None, metadata={"help": "Vocabulary size of a trained tokenizer (default: every char/word seen; "
                                        "8000 for bpe/unigram)."})

    def __post_init__(self):
        if self.architecture not in ARCHITECTURES:
            raise ValueError(f"`--architecture` must be one of {list(ARCHITECTURES)}, got {self.architecture!r}.")
        super().__post_init__()
        transformer = self.architecture == "transformer"
        if transformer and self.preset is not None:
            raise ValueError(f"`--preset {self.preset}` names an RNN, and `--architecture transformer` builds a "
                             "MarianMTModel: size it with `--config_overrides` (MarianConfig fields), "
                             "`--transformer_parameters` or `--match_rnn_parameters` instead.")
        if not transformer and (self.model_name_or_path is None) == (self.preset is None):
            raise ValueError("Give exactly one of `--model_name_or_path` (a saved model) and `--preset` (a new one: "
                             f"{sorted(PRESETS)}).")
        targets = [name for name, value in (("transformer_parameters", self.transformer_parameters),
                                            ("match_rnn_parameters", self.match_rnn_parameters)) if value is not None]
        if targets and (not transformer or self.model_name_or_path is not None):
            raise ValueError(f"`--{targets[0]}` sizes a new `--architecture transformer` model (without "
                             "`--model_name_or_path`).")
        if len(targets) > 1:
            raise ValueError("Give at most one of `--transformer_parameters` and `--match_rnn_parameters`.")
        if transformer and self.pretrained_vectors is not None:
            raise ValueError("`--pretrained_vectors` fills an RNN's meta-embedding; the Transformer has none.")
        if self.preset is not None and self.preset not in PRESETS:
            raise ValueError(f"`--preset` must be one of {sorted(PRESETS)}, got {self.preset!r}.")
        if self.config_overrides is not None and self.model_name_or_path is not None:
            raise ValueError("`--config_overrides` configures a new model: use it with `--preset` or `--architecture "
                             "transformer`, not with `--model_name_or_path`.")
        parse_config_overrides(self.config_overrides, MarianConfig if transformer else BahdanauConfig)
        if self.preset is not None:  # a bad value ends here too, exit 2
            check_new_config(lambda: new_rnn_config(self), self.config_overrides)
        if self.tokenizer_type not in TOKENIZER_KINDS:
            raise ValueError(f"`--tokenizer_type` must be one of {list(TOKENIZER_KINDS)}, got {self.tokenizer_type!r}.")


@dataclass
class DataTrainingArguments(ReportArguments, DataFileArguments):
    """Which data, which columns, which lengths, and what to report."""

    streams = True  # --streaming trains on the training split as it is read (training/common/streaming.py)

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
        default=None, metadata={"help": f"Generation limit saved in the generation config, at most "
                                        f"{MAX_NEW_TOKENS:,}. Default: 1.5 x the longest training target."})
    num_beams: int | None = field(
        default=None, metadata={"help": "Beams for evaluation, prediction and the saved generation config."})
    overwrite_cache: bool = field(default=False, metadata={"help": "Re-tokenise instead of using the cache."})
    max_tokens_per_batch: int | None = field(
        default=None, metadata={"help": "Train on batches of at most this many tokens, padding included (rows x "
                                        "(longest source + longest target)), rows of like lengths together and the "
                                        "batches shuffled, instead of --per_device_train_batch_size rows. A row "
                                        "longer than it is an error. Evaluation keeps --per_device_eval_batch_size."})
    score_without_stress: bool = field(
        default=False, metadata={"help": "With a `references` column, also report WER and PER with the stress digits "
                                         "(0, 1, 2 ending a phoneme) removed on both sides: wer_no_stress and "
                                         "per_no_stress. Published CMUdict results are scored without stress."})

    def __post_init__(self):
        if self.dataset_name is None and not (self.train_file or self.validation_file or self.test_file):
            raise ValueError("Give `--dataset_name` or at least one of `--train_file`, `--validation_file`, "
                             "`--test_file`.")
        self.check_files()
        for name in ("max_source_length", "max_target_length", "max_new_tokens", "num_beams"):
            value = getattr(self, name)
            if value is not None and value < (2 if name.endswith("length") else 1):
                raise ValueError(f"`--{name}` must be a positive integer (lengths at least 2), got {value}.")
        check_new_tokens(self.max_new_tokens, "--max_new_tokens")
        if self.max_tokens_per_batch is not None:
            check_max_tokens(self.max_tokens_per_batch)
        super().__post_init__()

    def used_columns(self) -> dict[str, Column]:
        """Source and target text in every split; references and alignment spans where a split has them."""
        return {self.source_column: Column("source_column", TEXT), self.target_column: Column("target_column", TEXT),
                REFERENCES: Column(None, TEXTS, required=False),
                self.source_spans_column: Column("source_spans_column", SPANS, required=False),
                self.target_spans_column: Column("target_spans_column", SPANS, required=False)}


def load_raw_datasets(data_args: DataTrainingArguments, model_args: ModelArguments) -> datasets.DatasetDict:
    raw = load_raw_splits(data_args, model_args.cache_dir, model_args.token, model_args.trust_remote_code)
    if data_args.streaming:  # the training split is read as it is trained on
        raw["train"] = open_stream(data_args, model_args.cache_dir, model_args.token, model_args.trust_remote_code)
    scored = [split for split, dataset in raw.items() if split != "train" and REFERENCES in dataset.column_names]
    if data_args.score_without_stress and not scored:
        raise ValueError(f"`--score_without_stress` scores the `{REFERENCES}` column, but no validation or test split "
                         f"has one (splits: {list(raw)}).")
    return raw


def load_tokenizer(model_args: ModelArguments, train: datasets.Dataset | None, data_args: DataTrainingArguments):
    """The named or the model's tokenizer, else one trained on the training split's sources and targets."""
    texts = None if train is None else (text for column in (data_args.source_column, data_args.target_column)
                                        for text in train[column])
    return model_args.load_tokenizer(texts, "give `--train_file` or `--tokenizer_name`")


def is_recurrent(model) -> bool:
    """Whether ``model`` is one of our RNNs (else a transformers model such as the Marian baseline, which has none of
    their options: copy attention, alignment pictures, meta-embeddings, GNMT penalties)."""
    return find_family(model.config.to_dict()) is not None  # hf_bahdanau's families are RNNs


def load_model(model_args: ModelArguments, tokenizer):
    if model_args.model_name_or_path is not None:
        model = AutoModelForSeq2SeqLM.from_pretrained(
            model_args.model_name_or_path, cache_dir=model_args.cache_dir, revision=model_args.model_revision,
            token=model_args.token, trust_remote_code=model_args.trust_remote_code)
        if len(tokenizer) > model.get_input_embeddings().num_embeddings:
            model.resize_token_embeddings(len(tokenizer))
        if is_recurrent(model) and model_args.architecture == "transformer":
            raise ValueError(f"`--architecture transformer` with `--model_name_or_path "
                             f"{model_args.model_name_or_path}`, which holds an hf_bahdanau RNN: leave "
                             "`--architecture` out to go on training it, or start a new Transformer without it.")
        if is_recurrent(model):
            prepare_meta_embedding(model, tokenizer, model_args.pretrained_vectors)
        else:
            freeze_position_tables(model)
        return model
    if model_args.architecture == "transformer":
        return new_transformer(model_args, tokenizer)
    config = new_rnn_config(model_args, vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                            bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                            decoder_start_token_id=tokenizer.bos_token_id, unk_token_id=tokenizer.unk_token_id)
    model = BahdanauForConditionalGeneration(config)
    prepare_meta_embedding(model, tokenizer, model_args.pretrained_vectors)
    logger.info("New %s model: %s parameters", model_args.preset, f"{model.num_parameters():,}")
    return model


def new_rnn_config(model_args: ModelArguments, **tokenizer_fields) -> BahdanauConfig:
    """A new --preset model's config: the preset, the tokenizer's fields (vocabulary, special ids), then
    --config_overrides."""
    return BahdanauConfig.from_preset(model_args.preset, **{
        **tokenizer_fields, **parse_config_overrides(model_args.config_overrides)})


def new_transformer(model_args: ModelArguments, tokenizer) -> MarianMTModel:
    """A MarianMTModel from scratch over ``tokenizer`` (``transformer_config``), sized to ``--transformer_parameters``
    or to the learned parameters of the ``--match_rnn_parameters`` folder when given."""
    target, argument = model_args.transformer_parameters, "--transformer_parameters"
    if model_args.match_rnn_parameters is not None:
        reference = AutoConfig.from_pretrained(model_args.match_rnn_parameters,
                                               trust_remote_code=model_args.trust_remote_code)
        with torch.device("meta"):
            target = learned_parameters(AutoModelForSeq2SeqLM.from_config(reference))
        argument = f"--match_rnn_parameters {model_args.match_rnn_parameters}"
    config = transformer_config(len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                                bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                                overrides=parse_config_overrides(model_args.config_overrides, MarianConfig),
                                parameters=target, argument=argument)
    model = MarianMTModel(config)
    sizes = (f"d_model {config.d_model}, {config.encoder_layers}+{config.decoder_layers} layers, "
             f"{config.encoder_attention_heads}/{config.decoder_attention_heads} heads, feed-forward "
             f"{config.encoder_ffn_dim}/{config.decoder_ffn_dim}")
    count = learned_parameters(model)
    if target is None:
        logger.info("New Marian-architecture Transformer (%s): %s learned parameters", sizes, f"{count:,}")
    else:
        logger.info("New Marian-architecture Transformer (%s): %s learned parameters, target %s (%+.1f%%)", sizes,
                    f"{count:,}", f"{target:,}", 100 * (count / target - 1))
    return model


def check_positions(model, tokenized: dict[str, datasets.Dataset]) -> None:
    """ValueError where a training sequence or the generation limit runs past a Transformer's position table."""
    limit = model.config.max_position_embeddings
    longest = {name: max((len(ids) for split in tokenized.values() for ids in split[column]), default=0)
               for name, column in (("source", "input_ids"), ("target", "labels"))}
    longest["generated"] = model.generation_config.max_new_tokens or 0
    too_long = {name: length for name, length in longest.items() if length > limit}
    if too_long:
        raise ValueError(f"The Transformer has positions for {limit} tokens, and the longest {too_long} are longer: "
                         "raise max_position_embeddings in `--config_overrides` or set `--max_source_length`, "
                         "`--max_target_length`, `--max_new_tokens`.")


def clip(ids: list[int], limit: int | None) -> list[int]:
    """The first `limit` tokens, the last (EOS) kept at the end."""
    return ids if limit is None or len(ids) <= limit else ids[: limit - 1] + ids[-1:]


def tokenize_split(dataset: datasets.Dataset, split: str, tokenizer, data_args: DataTrainingArguments,
                   main_process_first, copy_vocab_size: int | None = None) -> datasets.Dataset:
    """input_ids/attention_mask/labels; truncation only with --max_*_length, and every truncated row is counted.
    copy_vocab_size: the vocabulary size of a ``copy_attention`` model, whose rows also get ``copy_input_ids`` and
    ``source_oovs`` (``hf_bahdanau.modeling.copying``)."""

    def tokenize(batch):
        if copy_vocab_size is None:
            encoded = {"input_ids": tokenizer(batch[data_args.source_column])["input_ids"],
                       "labels": tokenizer(text_target=batch[data_args.target_column])["input_ids"]}
        else:
            encoded = dict(encode_with_copies(tokenizer, batch[data_args.source_column],
                                              batch[data_args.target_column], vocab_size=copy_vocab_size))
            encoded["copy_input_ids"] = [clip(ids, data_args.max_source_length) for ids in encoded["copy_input_ids"]]
        sources, targets = encoded["input_ids"], encoded["labels"]
        input_ids = [clip(ids, data_args.max_source_length) for ids in sources]
        labels = [clip(ids, data_args.max_target_length) for ids in targets]
        kept = {REFERENCES: batch[REFERENCES]} if REFERENCES in batch else {}
        return {"input_ids": input_ids, "attention_mask": [[1] * len(ids) for ids in input_ids], "labels": labels,
                **{key: value for key, value in encoded.items()
                   if key not in ("input_ids", "attention_mask", "labels")},
                **kept,
                TRUNCATED: [(len(a), len(b)) != (len(c), len(d))
                            for a, b, c, d in zip(input_ids, labels, sources, targets)]}

    if isinstance(dataset, datasets.IterableDataset):  # --streaming: tokenised as it is read, truncations not counted
        return dataset.map(tokenize, batched=True, remove_columns=dataset.column_names).remove_columns(TRUNCATED)
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


def metrics_function(tokenizer, copied_words=lambda: None, vocab_size: int | None = None,
                     accepted_outputs=lambda: None, score_without_stress: bool = False):
    """compute_metrics for predict_with_generate: sacreBLEU, chrF, exact match (all in percent), mean output length.
    copied_words(): the evaluated split's ``source_oovs`` for a ``copy_attention`` model, else None. accepted_outputs():
    its ``references`` column (every accepted output of each row, e.g. every pronunciation of a word), else None;
    with it, WER and PER against the closest reference (``g2p_error_rates``), in percent, and with
    ``score_without_stress`` also wer_no_stress and per_no_stress, stress digits removed on both sides."""
    bleu, chrf, exact_match = (load_metric(name) for name in ("sacrebleu", "chrf", "exact_match"))

    def compute_metrics(eval_prediction) -> dict[str, float]:
        predictions, labels = eval_prediction.predictions, eval_prediction.label_ids
        predictions = np.where(predictions != -100, predictions, tokenizer.pad_token_id)
        outputs = generated_texts(tokenizer, predictions, copied_words(), vocab_size)
        references = generated_texts(tokenizer, labels, copied_words(), vocab_size)
        metrics = {
            "bleu": bleu.compute(predictions=outputs, references=[[r] for r in references])["score"],
            "chrf": chrf.compute(predictions=outputs, references=[[r] for r in references])["score"],
            "exact_match": 100 * exact_match.compute(predictions=outputs, references=references)["exact_match"],
            "gen_len": float(np.mean(output_lengths(predictions, tokenizer.eos_token_id, tokenizer.pad_token_id))),
        }
        accepted = accepted_outputs()
        if accepted is not None:
            error_rates = load_metric("g2p_error_rates")
            rates = error_rates.compute(predictions=outputs, references=accepted)
            metrics.update(wer=100 * rates["wer"], per=100 * rates["per"])
            if score_without_stress:
                rates = error_rates.compute(predictions=outputs, references=accepted, ignore_stress=True)
                metrics.update(wer_no_stress=100 * rates["wer"], per_no_stress=100 * rates["per"])
        return metrics

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
    return {f"{prefix}_alignment_error_rate": 100 * rate}  # in percent, as every other metric here


def output_lengths(predictions: np.ndarray, eos_token_id: int, pad_token_id: int) -> np.ndarray:
    """[N] tokens of each generated row up to and including its first ``eos_token_id``, pads not counted.
    transformers' beam search fills a batch's shorter rows with </s> when the pad id is 0, so counting non-pads would
    give every row the batch's longest length."""
    ended = np.cumsum(predictions == eos_token_id, axis=1)
    before_end = (ended == 0) | ((ended == 1) & (predictions == eos_token_id))
    return np.count_nonzero(before_end & (predictions != pad_token_id), axis=1)


def generated_texts(tokenizer, predictions: np.ndarray, source_oovs: list[list[str]] | None = None,
                    vocab_size: int | None = None) -> list[str]:
    """The decoded texts of generate()'s predictions or of labels (-100 where Trainer padded them); with
    ``source_oovs`` (a ``copy_attention`` model's), ids ≥ vocab_size are the rows' copied words."""
    predictions = np.where(predictions != -100, predictions, tokenizer.pad_token_id)
    if source_oovs is None:
        texts = tokenizer.batch_decode(predictions, skip_special_tokens=True)
    else:
        texts = decode_with_copies(tokenizer, predictions, source_oovs, vocab_size)
    return [text.strip() for text in texts]


class Seq2SeqTask(Task):
    """Train, evaluate and decode an RNN encoder–attention–decoder on text pairs, like transformers'
    run_translation.py."""

    name = "seq2seq"
    model_arguments = ModelArguments
    data_arguments = DataTrainingArguments
    card_task = "translation"
    generates = True
    split_columns = ("source_oovs", REFERENCES)  # the words a copy model may copy; every accepted output of a row
    predictions_file = "generated_predictions.txt"

    def setup(self) -> Setup:
        model_args, data_args, training_args = self.model_args, self.data_args, self.training_args
        logger.warning("Process rank %s, world size %s, device %s", training_args.process_index,
                       training_args.world_size, training_args.device)
        self.metric = "eval_exact_match" if training_args.predict_with_generate else None
        raw = load_raw_datasets(data_args, model_args)
        self.raw_splits = requested_splits(raw, data_args, training_args)
        stream = self.raw_splits.pop("train") if data_args.streaming else None
        if stream is not None:  # its first rows stand for it (a new tokenizer, the lengths) until it is trained on
            self.raw_splits["train"] = first_rows(stream)

        self.tokenizer = tokenizer = load_tokenizer(model_args, self.raw_splits.get("train", raw.get("train")),
                                                    data_args)
        model = load_model(model_args, tokenizer)
        self.recurrent = is_recurrent(model)
        self.copy_vocab_size = model.config.vocab_size if self.recurrent and model.config.copy_attention else None
        tokenized = {name: tokenize_split(split, name, tokenizer, data_args, training_args.main_process_first,
                                          self.copy_vocab_size)
                     for name, split in self.raw_splits.items()}
        set_generation_defaults(model, tokenized, data_args)
        if "train" in tokenized and self.recurrent:  # decoding warns about inputs longer than any trained on
            longest = max(len(ids) for ids in tokenized["train"]["input_ids"])
            model.config.max_training_source_length = max(longest, model.config.max_training_source_length or 0)
        if not self.recurrent:
            # MarianMTModel's loss is its batch's token mean, though its **kwargs take Trainer's num_items_in_batch:
            # Trainer would take it for a sum over that count and scale it by the processes under DDP, and not divide
            # it by --gradient_accumulation_steps. Declared as not taking the count, it is averaged as the mean it is.
            model.accepts_loss_kwargs = False
            check_positions(model, tokenized)
            generation_config = training_args.generation_config  # the Trainer's, when given, replaces the model's
            check_generation_options(model.generation_config if generation_config is None
                                     else Seq2SeqTrainer.load_generation_config(generation_config))
        if stream is not None:
            examples = tokenize_split(stream, "train", tokenizer, data_args, training_args.main_process_first,
                                      self.copy_vocab_size)
            tokenized["train"] = TrainingStream(examples, training_args, data_args.shuffle_buffer_size)
        compute_metrics = None
        if training_args.predict_with_generate:
            compute_metrics = metrics_function(tokenizer, lambda: self.trainer.split_values.get("source_oovs"),
                                               self.copy_vocab_size, lambda: self.trainer.split_values.get(REFERENCES),
                                               data_args.score_without_stress)
        collator = DataCollatorForCopying if self.copy_vocab_size else DataCollatorWithRightPaddedLabels  # right-padded
        return Setup(model=model, processing_class=tokenizer, datasets=tokenized,
                     data_collator=collator(tokenizer, model=model), compute_metrics=compute_metrics,
                     generate_kwargs={"num_beams": data_args.num_beams} if data_args.num_beams else {},
                     max_tokens_per_batch=data_args.max_tokens_per_batch)

    def prediction_lines(self, output) -> list[str] | None:
        if not self.training_args.predict_with_generate:
            return None
        return generated_texts(self.tokenizer, output.predictions, self.trainer.split_values.get("source_oovs"),
                               self.copy_vocab_size)

    def extra_metrics(self, split: str) -> dict[str, float]:
        if not self.recurrent:
            return {}
        return alignment_metrics(self.trainer.model, self.tokenizer, self.raw_splits[split], self.data_args, split)

    def report(self) -> Report:
        output_dir, data_args, model = Path(self.training_args.output_dir), self.data_args, self.trainer.model
        record_parameters(output_dir / "all_results.json", learned_parameters(model))
        pictured = self.raw_splits.get("predict", self.raw_splits.get("eval"))
        if pictured is not None and data_args.num_pictures and self.recurrent:
            sources = pictured[data_args.source_column][: data_args.num_pictures]
            if model.config.attention_type != "none":
                save_alignment_pictures(model, self.tokenizer, sources, output_dir, num_beams=data_args.num_beams or 1)
            save_encoder_pictures(model, self.tokenizer, sources, output_dir)
        examples = (pictured or self.raw_splits["train"])[data_args.source_column][:2] if self.raw_splits else []
        text = shlex.quote(examples[0]) if examples else "TEXT"
        usage = (f"hf-bahdanau-translate {shlex.quote(str(output_dir))} {text}" if self.recurrent else
                 "import transformers; transformers.AutoModelForSeq2SeqLM.from_pretrained("
                 f"{json.dumps(str(output_dir))})  # transformers' MarianMTModel")
        return Report(examples, usage)


def set_generation_defaults(model, tokenized: dict[str, datasets.Dataset], data_args: DataTrainingArguments) -> None:
    """The saved generation config's ``max_new_tokens`` (``--max_new_tokens``, else 1.5 x the longest training
    target) and ``num_beams`` (``--num_beams``), where given or known."""
    if data_args.max_new_tokens is not None:
        model.generation_config.max_new_tokens = data_args.max_new_tokens
    elif "train" in tokenized:
        longest_target = max(len(ids) for ids in tokenized["train"]["labels"])
        model.generation_config.max_new_tokens = math.ceil(1.5 * longest_target)
    if data_args.num_beams is not None:
        model.generation_config.num_beams = data_args.num_beams


def record_parameters(results_file: Path, count: int) -> None:
    """Add ``num_parameters`` (the learned ones) to ``all_results.json`` beside the scores."""
    results = json.loads(results_file.read_text()) if results_file.is_file() else {}
    results_file.parent.mkdir(parents=True, exist_ok=True)
    results_file.write_text(json.dumps({**results, "num_parameters": count}, indent=4, sort_keys=True) + "\n")


TASK = Seq2SeqTask
