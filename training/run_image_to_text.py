#!/usr/bin/env python
"""Train and evaluate an image-to-text model (Xu et al. 2015, Show, Attend and Tell) on images of text.

    python training/run_image_to_text.py training/configs/digits_soft.json                  # digit strips, generated
    python training/run_image_to_text.py training/configs/digits_soft.json --attention hard_reinforce
    python training/run_image_to_text.py training/configs/words_soft.json                   # rendered words
    python training/run_image_to_text.py training/configs/digits_soft.json --dataset_name DIR/digits  # a folder
    python training/run_image_to_text.py training/configs/digits_soft.json --config_overrides hidden_size=256

Data, the first that is given: --dataset_name, a Hub dataset or a local image folder (an ``image`` and a
``text`` column: e.g. what training/data/make_image_text.py writes, or any imagefolder; its metadata.csv or
metadata.jsonl read as written: a text ``007`` stays ``007``); else the task --image_text_task generated at run
time: ``digits``, strips of 3–6 handwritten digits from scikit-learn's ``load_digits`` (source images split between
train, validation and test), or ``words``, words of the CMU dictionary rendered in six installed fonts
(training/data/make_image_text.py says more). The ``test_long`` split (digit strips of 7–8, words of 9–12
letters, longer than any in training) is scored too.

--attention picks the model: ``soft`` (the paper's soft attention), ``hard`` (hard attention trained by the
straight-through Gumbel-softmax), ``hard_reinforce`` (hard attention trained by REINFORCE, the paper's), ``none``
(no attention: the mean feature ā only initialises the LSTM, as Show and Tell's image only starts it). Every other
``BahdanauImageToTextConfig`` field (of its encoder or decoder, given flat) is a --config_overrides entry.
--max_train_minutes stops training at a budget.

The output folder gets the model (code included: loadable with trust_remote_code=True, with the image-to-text
pipeline), the image processor, the character tokenizer, all_results.json (sequence accuracy and character error
rate on validation, test and the longer test), predictions.txt, attention pictures of the first test images
(attention_<n>.png: each output character with its attention over the image), a page to browse the test images'
attention (image_explorer.html), the training curve and the model card.
"""

import json
import logging
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # `python training/run_image_to_text.py` puts training/ first
    sys.path.insert(0, str(REPO_ROOT))

import datasets  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from PIL import Image  # noqa: E402
from transformers import (  # noqa: E402
    AutoImageProcessor, AutoModelForImageTextToText, PreTrainedTokenizerFast, Seq2SeqTrainer,
    Seq2SeqTrainingArguments, set_seed,
)

from hf_bahdanau import BahdanauForImageToText, BahdanauImageProcessor, BahdanauImageToTextConfig  # noqa: E402
from hf_bahdanau.modeling.collators import DataCollatorForImageToText  # noqa: E402
from training.common.arguments import (  # noqa: E402
    ReportArguments, bad_arguments_exit, check_counts, check_new_config, parse_arguments, parse_config_overrides,
)
from training.data.make_babi import split_seed  # noqa: E402
from training.common.data_files import TEXT, Column, hold_out_validation, load_dataset_as_written  # noqa: E402
from training.data.make_image_text import COUNTS, GENERATORS, SPLITS  # noqa: E402
from training.common.loss_logging import LossPartsLogging  # noqa: E402
from training.common.metrics import in_percent  # noqa: E402
from training.common.metrics.g2p_error_rates.g2p_error_rates import edit_distance  # noqa: E402
from training.common.steps import (  # noqa: E402
    finish_run, pipeline_usage, setup_logging, train_and_evaluate, trainer_callbacks,
)
from training.common.tokenization import train_tokenizer  # noqa: E402
from training.common.training_clock import TrainingBudgetCallback  # noqa: E402

logger = logging.getLogger(__name__)

# --attention -> the config fields it sets (Xu et al.'s soft and hard attention; Show and Tell without attention)
ATTENTIONS = {
    "soft": {},
    "hard": {"attention_mode": "hard"},
    "hard_reinforce": {"attention_mode": "hard_reinforce", "reinforce_entropy_weight": 0.01},
    "none": {"attention_type": "none", "context_mode": "sutskever", "context_gate": False},
}
IMAGE_HEIGHTS = {"digits": 20, "words": 32}  # the generated tasks' image height


@dataclass
class ImageTextModelArguments:
    """Which model."""

    attention: str = field(default="soft", metadata={"help": f"One of {list(ATTENTIONS)}."})
    model_name_or_path: str | None = field(default=None, metadata={"help": "Fine-tune this saved model instead."})
    config_overrides: str | None = field(
        default=None, metadata={"help": "'field=value,...' of BahdanauImageToTextConfig, e.g. 'hidden_size=256,"
                                        "cnn_channels=[32,64],cnn_pool_sizes=[[2,2],[2,2]]'."})
    max_train_minutes: float | None = field(default=None, metadata={"help": "Stop training after this many minutes "
                                                                            "(evaluations not counted)."})
    torch_num_threads: int | None = field(default=None, metadata={"help": "torch.set_num_threads."})

    def __post_init__(self):
        if self.attention not in ATTENTIONS:
            raise ValueError(f"`--attention` must be one of {list(ATTENTIONS)}, got {self.attention!r}.")
        parse_config_overrides(self.config_overrides, BahdanauImageToTextConfig)  # a bad field ends here, exit 2
        if self.model_name_or_path is None:  # and a bad value
            check_new_config(lambda: new_config(self), self.config_overrides)


@dataclass
class ImageTextDataArguments(ReportArguments):
    """Where the images come from, and what to report."""

    dataset_name: str | None = field(default=None, metadata={"help": "A Hub dataset or a local folder with image "
                                                                      "and text columns."})
    dataset_config_name: str | None = None
    image_text_task: str = field(default="digits", metadata={"help": f"Without --dataset_name, the task generated at "
                                                                     f"run time: {sorted(GENERATORS)}."})
    generation_seed: int = field(default=0, metadata={"help": "Seed of the generated task."})
    image_column: str = "image"
    text_column: str = "text"
    long_test_split: str | None = field(default="test_long", metadata={"help": "A split of longer inputs than in "
                                                                               "training, scored too (None: none)."})
    image_height: int | None = field(default=None, metadata={"help": "Images are resized to this height (default: "
                                                                     "the generated task's, else 32)."})
    max_train_samples: int | None = None
    max_eval_samples: int | None = None
    max_predict_samples: int | None = None
    explorer_examples: int = field(default=200, metadata={"help": "Test images on the explorer page."})
    language: list[str] | None = field(default_factory=lambda: ["en"], metadata={"help": "For the model card."})
    dataset_description: str | None = field(default=None, metadata={"help": "One line on the data for the card."})
    license: str | None = field(default=None, metadata={"help": "The model card's license, a Hub license id "
                                                              "(default: apache-2.0; your data's may oblige another)."})
    train_file: str | None = None  # the model card's list of files: the data are a dataset or generated
    validation_file: str | None = None
    test_file: str | None = None

    def __post_init__(self):
        if self.dataset_name is None and self.image_text_task not in GENERATORS:
            raise ValueError(f"`--image_text_task` must be one of {sorted(GENERATORS)}, got {self.image_text_task!r}.")
        for name in ("max_train_samples", "max_eval_samples", "max_predict_samples", "image_height"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ValueError(f"`--{name}` must be a positive number, got {getattr(self, name)}.")
        super().__post_init__()
        check_counts(self, "explorer_examples")


def load_splits(data_args: ImageTextDataArguments) -> tuple[datasets.DatasetDict, str]:
    """{train, validation, test[, test_long]} with image and text columns, and a line on where they come from."""
    limits = {"train": data_args.max_train_samples, "validation": data_args.max_eval_samples,
              "test": data_args.max_predict_samples, "test_long": data_args.max_predict_samples}
    if data_args.dataset_name:
        loaded = load_dataset_as_written(data_args.dataset_name, data_args.dataset_config_name,
                                         {data_args.text_column: Column("text_column", TEXT)})
        for split in ("train", "test"):
            if split not in loaded:
                raise ValueError(f"--dataset_name {data_args.dataset_name}: no {split!r} split (its splits: "
                                 f"{list(loaded)}).")
        if data_args.image_column not in loaded["train"].column_names:
            raise ValueError(f"--dataset_name {data_args.dataset_name}: no column {data_args.image_column!r} (its "
                             f"columns: {loaded['train'].column_names}); set --image_column.")
        splits = {}
        for split, name in (("train", "train"), ("validation", "validation"), ("test", "test"),
                            ("test_long", data_args.long_test_split)):
            if name in loaded:
                limit = limits[split]
                splits[split] = loaded[name] if limit is None else loaded[name].select(range(min(limit,
                                                                                                  len(loaded[name]))))
        if "validation" not in splits:
            splits["train"], splits["validation"] = hold_out_validation(splits["train"], 500,
                                                                        f"--dataset_name {data_args.dataset_name}")
        return datasets.DatasetDict(splits), f"{data_args.dataset_name}"
    task = data_args.image_text_task
    features = datasets.Features({data_args.image_column: datasets.Image(), data_args.text_column: datasets.Value(
        "string")})
    splits = {}
    for split in SPLITS:
        if split == "test_long" and data_args.long_test_split is None:
            continue
        count = COUNTS[task][split] if limits[split] is None else min(limits[split], COUNTS[task][split])
        pairs = GENERATORS[task](split, count, split_seed(data_args.generation_seed, task, split))
        splits[split] = datasets.Dataset.from_dict(
            {data_args.image_column: [Image.fromarray(image) for image, _ in pairs],
             data_args.text_column: [text for _, text in pairs]}, features=features)
    what = {"digits": "strips of handwritten digits (scikit-learn's load_digits, source images split by set)",
            "words": "CMU dictionary words rendered in six fonts (DejaVu, Liberation)"}[task]
    return datasets.DatasetDict(splits), (f"{what}, generated by training/data/make_image_text.py's generator "
                                          f"(seed {data_args.generation_seed}); test_long: longer than training")


def build_model(model_args: ImageTextModelArguments, tokenizer, processor) -> BahdanauForImageToText:
    """A new (or --model_name_or_path's) image-to-text model for this tokenizer and processor."""
    if model_args.model_name_or_path:
        return AutoModelForImageTextToText.from_pretrained(model_args.model_name_or_path)
    return BahdanauForImageToText(new_config(
        model_args, vocab_size=len(tokenizer), num_channels=processor.num_channels,
        pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        unk_token_id=tokenizer.unk_token_id, decoder_start_token_id=tokenizer.bos_token_id))


def new_config(model_args: ImageTextModelArguments, **data_fields) -> BahdanauImageToTextConfig:
    """A new model's config: this script's sizes, the data's fields (vocabulary, special ids, image channels),
    --attention's fields, then --config_overrides."""
    return BahdanauImageToTextConfig(**{
        "embedding_size": 64, "hidden_size": 256, "attention_size": 128, "output_size": 128, **data_fields,
        **ATTENTIONS[model_args.attention],
        **parse_config_overrides(model_args.config_overrides, BahdanauImageToTextConfig)})


def text_metrics(predictions: list[str], references: list[str]) -> dict[str, float]:
    """Sequence accuracy (the whole text right) and character error rate Σ d(p, r) / Σ |r| (Levenshtein distance),
    in percent."""
    accuracy = float(np.mean([prediction == reference for prediction, reference in zip(predictions, references)]))
    errors = sum(edit_distance(prediction, reference) for prediction, reference in zip(predictions, references))
    return in_percent({"sequence_accuracy": accuracy, "cer": errors / max(1, sum(map(len, references)))})


def main(argv: list[str] | None = None) -> None:
    model_args, data_args, training_args = parse_arguments(
        (ImageTextModelArguments, ImageTextDataArguments, Seq2SeqTrainingArguments),
        sys.argv[1:] if argv is None else argv, description=__doc__.split("\n")[0])
    setup_logging(training_args)
    if model_args.torch_num_threads is not None:
        torch.set_num_threads(model_args.torch_num_threads)
    set_seed(training_args.seed)
    training_args.remove_unused_columns = False  # the collator reads the image column
    with bad_arguments_exit():  # a ValueError of the data or the model built from the arguments: exit 2
        splits, description = load_splits(data_args)
        data_args.dataset_description = data_args.dataset_description or description
        if model_args.model_name_or_path:
            tokenizer = PreTrainedTokenizerFast.from_pretrained(model_args.model_name_or_path)
            processor = AutoImageProcessor.from_pretrained(model_args.model_name_or_path, trust_remote_code=True)
        else:
            tokenizer = train_tokenizer(splits["train"][data_args.text_column], kind="char")
            height = data_args.image_height or IMAGE_HEIGHTS.get(data_args.image_text_task, 32)
            processor = BahdanauImageProcessor(num_channels=1, size={"height": height})
        model = build_model(model_args, tokenizer, processor)
        longest = max(len(tokenizer(text)["input_ids"]) for text in
                      [*splits["train"][data_args.text_column], *splits.get("test_long", splits["test"])[
                          data_args.text_column]])
        model.generation_config.max_length = longest + 5  # the start token, the longest text and </s>, 4 more
        collator = DataCollatorForImageToText(processor, tokenizer, data_args.image_column, data_args.text_column)
        references = {}

        def compute_metrics(prediction) -> dict[str, float]:
            predictions = tokenizer.batch_decode(np.where(prediction.predictions < 0, tokenizer.pad_token_id,
                                                          prediction.predictions), skip_special_tokens=True)
            labels = np.where(prediction.label_ids < 0, tokenizer.pad_token_id, prediction.label_ids)
            references["last"] = predictions
            return text_metrics(predictions, tokenizer.batch_decode(labels, skip_special_tokens=True))

        callbacks = trainer_callbacks(processor)  # the tokenizer is the processing_class
        if model_args.max_train_minutes:
            callbacks.append(TrainingBudgetCallback(model_args.max_train_minutes))
        trainer = type("ImageToTextTrainer", (LossPartsLogging, Seq2SeqTrainer), {})(
            model=model, args=training_args, train_dataset=splits["train"], eval_dataset=splits["validation"],
            processing_class=tokenizer, data_collator=collator, compute_metrics=compute_metrics, callbacks=callbacks)

    def extra_metrics(split: str) -> dict[str, float]:
        if split != "predict" or "test_long" not in splits:
            return {}
        metrics = trainer.predict(splits["test_long"], metric_key_prefix="long").metrics
        return {f"predict_long_{name}": metrics[f"long_{name}"] for name in ("sequence_accuracy", "cer")}

    train_and_evaluate(trainer, training_args, {"train": splits["train"], "eval": splits["validation"],
                                                "predict": splits["test"]},
                       extra_metrics=extra_metrics, prediction_lines=lambda output: references.pop("last"))
    if not trainer.is_world_process_zero():
        return
    output_dir = Path(training_args.output_dir)
    processor.save_pretrained(output_dir)
    examples = save_attention_pictures(trainer.model, processor, tokenizer, splits["test"], data_args, output_dir)
    image = json.dumps(str(output_dir / examples[0]) if examples else "IMAGE.png")
    finish_run(trainer, training_args, data_args, task="image-to-text", metric="eval_sequence_accuracy",
               example_inputs=examples, usage=pipeline_usage(output_dir, f"({image})"))
    (output_dir / "run_arguments.json").write_text(json.dumps({"model": asdict(model_args), "data": asdict(data_args)},
                                                              indent=1))


@torch.no_grad()
def save_attention_pictures(model, processor, tokenizer, test: datasets.Dataset, data_args: ImageTextDataArguments,
                            output_dir: Path) -> list[str]:
    """``example_<n>.png`` and ``attention_<n>.png`` (each output character's attention over the image) for the first
    --num_pictures test images, ``image_explorer.html`` for the first --explorer_examples; returns the example files."""
    from hf_bahdanau.explorer import write_image_text_page
    from hf_bahdanau.pictures import cnn_stride, plot_image_attention

    model.eval()
    encoder = model.model.encoder
    stride = cnn_stride(model.config.encoder)
    rows = test.select(range(min(len(test), max(data_args.num_pictures, data_args.explorer_examples))))
    records, examples = [], []
    for index, row in enumerate(rows):
        image = row[data_args.image_column]
        inputs = processor(image, return_tensors="pt")
        generated = model.generate(**inputs, output_attentions=True, return_dict_in_generate=True)
        ids = generated.sequences[0, 1:].tolist()
        ids = ids[:ids.index(tokenizer.eos_token_id) + 1] if tokenizer.eos_token_id in ids else ids
        pixels = np.asarray(processor.to_image(image))
        grid = encoder.grid_size(*pixels.shape[:2])
        weights = (np.zeros((len(ids), grid[0] * grid[1])) if model.config.decoder.attention_type == "none" else
                   torch.cat([step[0][0, 0, :, :grid[0] * grid[1]] for step in generated.cross_attentions][:len(ids)])
                   .numpy())
        tokens = [tokenizer.convert_ids_to_tokens(token) for token in ids]
        prediction = tokenizer.decode(ids, skip_special_tokens=True)
        records.append(dict(image=pixels, reference=row[data_args.text_column], prediction=prediction, tokens=tokens,
                            weights=weights, grid=list(grid), stride=None if stride is None else list(stride)))
        if index < data_args.num_pictures:
            Image.fromarray(pixels).save(output_dir / f"example_{index}.png")
            examples.append(f"example_{index}.png")
            plot_image_attention(pixels, tokens, weights, grid, stride=stride,
                                 title=f"{prediction!r} (expected {row[data_args.text_column]!r})",
                                 path=output_dir / f"attention_{index}.png")
    if data_args.explorer_examples:  # 0: no page
        write_image_text_page(output_dir / "image_explorer.html", records[:data_args.explorer_examples],
                              title=data_args.dataset_description)
    return examples


if __name__ == "__main__":
    main()
