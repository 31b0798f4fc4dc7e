#!/usr/bin/env python
"""Train and evaluate a visual question answering model with co-attention (Lu et al. 2016) on images and questions.

    python training/run_vqa.py training/configs/easy_vqa.json                             # easy-VQA, parallel
    python training/run_vqa.py training/configs/easy_vqa.json --coattention alternating
    python training/run_vqa.py training/configs/easy_vqa.json --coattention none --inputs question   # no image
    python training/run_vqa.py training/configs/easy_vqa.json --dataset_name DIR                     # a folder

Data: --dataset_name, a Hub dataset or a local image folder (datasets' imagefolder; its metadata.csv or
metadata.jsonl read as written: an answer ``007`` stays ``007``) with ``image``, ``question`` and ``answer``
columns (and ``question_type``, for accuracy by type: what training/data/make_easy_vqa.py writes); without it,
easy-VQA (64×64 images of one coloured shape, 13 answers; MIT licence) read from the installed ``easy-vqa`` package
(``pip install easy-vqa``), validation carved out of its training images.

--coattention picks the co-attention form (``parallel``, ``alternating``, ``context``: image attention guided by the
question's mean, ``none``: means of both, a CNN with bag of words) and --inputs the baselines that read one input
(``question``, ``context`` = the image alone). Every other field of ``BahdanauVisualQuestionAnsweringConfig``'s
sub-configs (the image encoder's ``vision_config``, the question's ``text_config``) is a --config_overrides entry,
given flat (``hidden_size=256,cnn_channels=[32,64]``). --max_train_minutes stops training at a budget.

The output folder gets the model (code included: loadable with trust_remote_code=True, with the
visual-question-answering pipeline), the image processor, the word tokenizer, all_results.json (accuracy overall and
by question type on validation and test; on easy-VQA also how often the image attention's peak region lies on the
shape, per level), predictions.txt, pictures of both attentions for the first test questions
(coattention_<n>.png, with example_<n>.png), the training curve and the model card.
"""

import json
import logging
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # `python training/run_vqa.py` puts training/ first
    sys.path.insert(0, str(REPO_ROOT))

import datasets  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from transformers import (  # noqa: E402
    AutoImageProcessor, AutoModelForVisualQuestionAnswering, PreTrainedTokenizerFast, Trainer, TrainingArguments,
    set_seed,
)

from hf_bahdanau import (  # noqa: E402
    BahdanauForVisualQuestionAnswering, BahdanauImageProcessor, BahdanauVisualQuestionAnsweringConfig,
)
from hf_bahdanau.families.vqa import VQA_QUESTION  # noqa: E402
from hf_bahdanau.modeling.axes import CO_ATTENTIONS  # noqa: E402
from hf_bahdanau.modeling.configuration_coattention import CO_ATTENTION_INPUTS  # noqa: E402
from hf_bahdanau.modeling.collators import DataCollatorForVisualQuestionAnswering  # noqa: E402
from training.common.arguments import (  # noqa: E402
    ReportArguments, bad_arguments_exit, check_new_config, parse_arguments, parse_config_overrides,
)
from training.common.data_files import TEXT, Column, hold_out_validation, load_dataset_as_written  # noqa: E402
from training.common.metrics import in_percent  # noqa: E402
from training.common.steps import (  # noqa: E402
    finish_run, pipeline_usage, setup_logging, train_and_evaluate, trainer_callbacks,
)
from training.common.tokenization import train_tokenizer  # noqa: E402
from training.common.training_clock import TrainingBudgetCallback  # noqa: E402

logger = logging.getLogger(__name__)

SPLITS = ("train", "validation", "test")
# An image as the pictures and the shape statistics read it: RGB at its own size, a 16-bit one (a 16-bit PNG, mode
# I;16) scaled to 8 bits as the model's processor scales it (PIL's own .convert("RGB") turns it white).
PICTURE_READER = BahdanauImageProcessor(num_channels=3, do_resize=False)


@dataclass
class VQAModelArguments:
    """Which model."""

    coattention: str = field(default="parallel", metadata={"help": f"One of {CO_ATTENTIONS.allowed}."})
    inputs: str = field(default="both", metadata={"help": f"One of {list(CO_ATTENTION_INPUTS)}: a baseline reads "
                                                          "the question or the image (context) alone."})
    model_name_or_path: str | None = field(default=None, metadata={"help": "Fine-tune this saved model instead."})
    config_overrides: str | None = field(
        default=None, metadata={"help": "'field=value,...' of BahdanauVisualQuestionAnsweringConfig's sub-configs, "
                                        "given flat, e.g. 'hidden_size=256,question_levels=[\"word\"]'."})
    max_train_minutes: float | None = field(default=None, metadata={"help": "Stop training after this many minutes "
                                                                            "(evaluations not counted)."})
    torch_num_threads: int | None = field(default=None, metadata={"help": "torch.set_num_threads."})

    def __post_init__(self):
        # a bad field ends here, exit 2
        parse_config_overrides(self.config_overrides, BahdanauVisualQuestionAnsweringConfig)
        if self.model_name_or_path is None:  # and a bad value (of the flags or the overrides)
            check_new_config(lambda: new_config(self), self.config_overrides)


@dataclass
class VQADataArguments(ReportArguments):
    """Where the questions come from, and what to report."""

    dataset_name: str | None = field(default=None, metadata={"help": "A Hub dataset or a local folder with image, "
                                                                      "question and answer columns (default: easy-VQA "
                                                                      "from the installed easy-vqa package)."})
    dataset_config_name: str | None = None
    image_column: str = "image"
    question_column: str = "question"
    answer_column: str = "answer"
    question_type_column: str | None = field(default="question_type", metadata={
        "help": "A column of question types, for accuracy by type (ignored when the data have none)."})
    image_height: int = field(default=64, metadata={"help": "Images are resized to this height."})
    validation_images: int = field(default=400, metadata={"help": "easy-VQA: training images held out (with all their "
                                                                  "questions) for validation."})
    max_train_samples: int | None = None
    max_eval_samples: int | None = None
    max_predict_samples: int | None = None
    language: list[str] | None = field(default_factory=lambda: ["en"], metadata={"help": "For the model card."})
    dataset_description: str | None = field(default=None, metadata={"help": "One line on the data for the card."})
    license: str | None = field(default=None, metadata={"help": "The model card's license, a Hub license id "
                                                              "(default: apache-2.0; your data's may oblige another)."})
    train_file: str | None = None  # the model card's list of files: the data are a dataset or the package's
    validation_file: str | None = None
    test_file: str | None = None

    def used_columns(self) -> dict[str, Column]:
        """The text columns read from --dataset_name (as written: a number is its text)."""
        columns = {self.question_column: Column("question_column", TEXT), self.answer_column: Column("answer_column",
                                                                                                      TEXT)}
        if self.question_type_column is not None:
            columns[self.question_type_column] = Column("question_type_column", TEXT, required=False)
        return columns

    def __post_init__(self):
        for name in ("max_train_samples", "max_eval_samples", "max_predict_samples", "image_height",
                     "validation_images"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ValueError(f"`--{name}` must be a positive number, got {getattr(self, name)}.")
        super().__post_init__()


def load_splits(data_args: VQADataArguments) -> tuple[datasets.DatasetDict, str]:
    """{train, validation, test} with the image, question and answer columns, and a line on where they come from."""
    if data_args.dataset_name:
        loaded = load_dataset_as_written(data_args.dataset_name, data_args.dataset_config_name,
                                         data_args.used_columns())
        description = data_args.dataset_name
    else:
        from training.data.easy_vqa_data import load_easy_vqa

        loaded = load_easy_vqa(validation_images=data_args.validation_images)
        description = ("easy-VQA (64×64 images of one coloured shape, 13 answers; MIT licence), read from the "
                       "installed easy-vqa package; validation: questions about held-out training images")
    if "train" not in loaded:
        raise ValueError(f"--dataset_name {data_args.dataset_name}: no 'train' split (its splits: {list(loaded)}).")
    if data_args.image_column not in loaded["train"].column_names:
        raise ValueError(f"--dataset_name {data_args.dataset_name}: no column {data_args.image_column!r} (its "
                         f"columns: {loaded['train'].column_names}); set --image_column.")
    splits = {split: loaded[split] for split in SPLITS if split in loaded}
    if "validation" not in splits:
        splits["train"], splits["validation"] = hold_out_validation(splits["train"], 1000,
                                                                    f"--dataset_name {data_args.dataset_name}")
    if "test" not in splits:
        raise ValueError(f"--dataset_name {data_args.dataset_name}: no 'test' split (its splits: {list(loaded)}).")
    limits = {"train": data_args.max_train_samples, "validation": data_args.max_eval_samples,
              "test": data_args.max_predict_samples}
    for split, limit in limits.items():
        if limit is not None:
            splits[split] = splits[split].select(range(min(limit, len(splits[split]))))
    return datasets.DatasetDict(splits), description


def question_types(splits: datasets.DatasetDict, data_args: VQADataArguments) -> list[str] | None:
    """The question types in the data (sorted), or None when there is no --question_type_column."""
    column = data_args.question_type_column
    if column is None or any(column not in rows.column_names for rows in splits.values()):
        return None
    return sorted({kind for rows in splits.values() for kind in rows[column]})


def accuracy_metrics(predictions: np.ndarray, labels: np.ndarray, type_ids: np.ndarray | None,
                     types: list[str] | None) -> dict[str, float]:
    """accuracy, and accuracy_<type> per question type (spaces and slashes as _: "yes/no" -> accuracy_yes_no), in
    percent."""
    right = predictions == labels
    metrics = {"accuracy": right.mean()}
    for index, name in enumerate(types or []):
        chosen = type_ids == index
        if chosen.any():
            metrics[f"accuracy_{name.replace('/', '_').replace(' ', '_')}"] = right[chosen].mean()
    return in_percent(metrics)


def build_model(model_args: VQAModelArguments, tokenizer, answers: list[str]) -> BahdanauForVisualQuestionAnswering:
    """A new (or --model_name_or_path's) co-attention VQA model for this tokenizer and these answers (its config
    holds the tokenizer's pad, bos and eos ids, so Trainer finds nothing to align)."""
    labels = dict(id2label=dict(enumerate(answers)), label2id={answer: index for index, answer in enumerate(answers)})
    if model_args.model_name_or_path:
        return AutoModelForVisualQuestionAnswering.from_pretrained(model_args.model_name_or_path, **labels)
    return BahdanauForVisualQuestionAnswering(new_config(
        model_args, vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id, **labels))


def new_config(model_args: VQAModelArguments, **data_fields) -> BahdanauVisualQuestionAnsweringConfig:
    """A new model's config: the data's fields (vocabulary, special ids, answers), --coattention, --inputs, then
    --config_overrides."""
    return BahdanauVisualQuestionAnsweringConfig(**{
        **data_fields, "coattention": model_args.coattention, "inputs": model_args.inputs,
        **parse_config_overrides(model_args.config_overrides, BahdanauVisualQuestionAnsweringConfig)})


def main(argv: list[str] | None = None) -> None:
    model_args, data_args, training_args = parse_arguments(
        (VQAModelArguments, VQADataArguments, TrainingArguments),
        sys.argv[1:] if argv is None else argv, description=__doc__.split("\n")[0])
    setup_logging(training_args)
    if model_args.torch_num_threads is not None:
        torch.set_num_threads(model_args.torch_num_threads)
    set_seed(training_args.seed)
    with bad_arguments_exit():  # a ValueError of the data or the model built from the arguments: exit 2
        splits, description = load_splits(data_args)
        data_args.dataset_description = data_args.dataset_description or description
        types = question_types(splits, data_args)
        training_args.remove_unused_columns = False  # the collator reads the image, question and answer columns
        training_args.label_names = ["labels", "question_type_ids"] if types else ["labels"]
        if model_args.model_name_or_path:
            tokenizer = PreTrainedTokenizerFast.from_pretrained(model_args.model_name_or_path)
            processor = AutoImageProcessor.from_pretrained(model_args.model_name_or_path, trust_remote_code=True)
        else:
            tokenizer = train_tokenizer(splits["train"][data_args.question_column], kind="word")
            processor = BahdanauImageProcessor(num_channels=3, size={"height": data_args.image_height})
        answers = sorted({answer for rows in splits.values() for answer in rows[data_args.answer_column]})
        unseen = sorted(set(answers) - set(splits["train"][data_args.answer_column]))
        if unseen:
            logger.warning(f"{len(unseen)} answers of validation/test never occur in training (they count as wrong): "
                           f"{unseen[:10]}")
        model = build_model(model_args, tokenizer, answers)
        collator = DataCollatorForVisualQuestionAnswering(
            processor, tokenizer, model.config.label2id, data_args.image_column, data_args.question_column,
            data_args.answer_column, data_args.question_type_column if types else None, types,
            model.config.text_config.inputs)

        def compute_metrics(prediction) -> dict[str, float]:
            labels, type_ids = (prediction.label_ids if types else (prediction.label_ids, None))
            return accuracy_metrics(prediction.predictions.argmax(-1), labels, type_ids, types)

        callbacks = trainer_callbacks(processor)  # the tokenizer is the processing_class
        if model_args.max_train_minutes:
            callbacks.append(TrainingBudgetCallback(model_args.max_train_minutes))
        trainer = Trainer(model=model, args=training_args, train_dataset=splits["train"],
                          eval_dataset=splits["validation"], processing_class=tokenizer, data_collator=collator,
                          compute_metrics=compute_metrics, callbacks=callbacks)

    def extra_metrics(split: str) -> dict[str, float]:
        if split != "predict" or data_args.dataset_name:
            return {}
        metrics = shape_attention_metrics(trainer.model, collator, splits["test"],
                                          training_args.per_device_eval_batch_size)
        return {f"predict_{name}": value for name, value in metrics.items()}

    def prediction_lines(output) -> list[str]:
        return [model.config.id2label[int(index)] for index in output.predictions.argmax(-1)]

    train_and_evaluate(trainer, training_args, {"train": splits["train"], "eval": splits["validation"],
                                                "predict": splits["test"]},
                       extra_metrics=extra_metrics, prediction_lines=prediction_lines)
    if not trainer.is_world_process_zero():
        return
    output_dir = Path(training_args.output_dir)
    processor.save_pretrained(output_dir)
    examples = save_attention_pictures(trainer.model, processor, tokenizer, splits["test"], data_args, output_dir)
    example = json.loads(examples[0]) if examples else {"image": "IMAGE.png", "question": VQA_QUESTION}
    if examples:
        example["image"] = str(output_dir / example["image"])
    finish_run(trainer, training_args, data_args, task="visual-question-answering", metric="eval_accuracy",
               example_inputs=examples,
               usage=pipeline_usage(output_dir, f"(image={json.dumps(example['image'])}, "
                                                f"question={json.dumps(example['question'], ensure_ascii=False)})"))
    (output_dir / "run_arguments.json").write_text(json.dumps({"model": asdict(model_args), "data": asdict(data_args)},
                                                              indent=1))


@torch.no_grad()
def shape_attention_metrics(model, collator, test: datasets.Dataset, batch_size: int) -> dict[str, float]:
    """easy-VQA: per level, how often the image attention's peak region overlaps the shape
    (``shape_peak_overlap_<level>``) and the mean attention on regions that overlap it
    (``shape_attention_mass_<level>``), over the test questions (the shape: the pixels unlike the background); in
    percent."""
    from training.data.easy_vqa_data import peak_on_shape, shape_attention_mass, shape_mask

    if model.config.text_config.inputs == "question":
        return {}
    model.eval()
    levels = model.config.text_config.question_levels
    peaks: dict[str, list[bool]] = {level: [] for level in levels}
    masses: dict[str, list[float]] = {level: [] for level in levels}
    for start in range(0, len(test), batch_size):
        rows = test.select(range(start, min(start + batch_size, len(test))))
        batch = collator([dict(row) for row in rows])
        batch = {key: value.to(model.device) for key, value in batch.items()
                 if key not in ("labels", "question_type_ids")}
        output = model(**batch, output_attentions=True)
        for row_index, row in enumerate(rows):
            image = np.asarray(PICTURE_READER.to_image(row[collator.image_column]))
            mask = shape_mask(image)
            grid = tuple(output.grid_size[row_index].tolist())
            for level, weights in zip(levels, output.context_attentions):
                region_weights = weights[row_index, :grid[0] * grid[1]].float().cpu().numpy()
                peaks[level].append(peak_on_shape(region_weights, grid, mask))
                masses[level].append(shape_attention_mass(region_weights, grid, mask))
    metrics = {}
    for level in levels:
        metrics[f"shape_peak_overlap_{level}"] = float(np.mean(peaks[level]))
        metrics[f"shape_attention_mass_{level}"] = float(np.mean(masses[level]))
    return in_percent(metrics)


@torch.no_grad()
def save_attention_pictures(model, processor, tokenizer, test: datasets.Dataset, data_args: VQADataArguments,
                            output_dir: Path) -> list[str]:
    """``example_<n>.png`` (the image) and, for a model reading both inputs, ``coattention_<n>.png`` (each level's
    weights over the question's words and the image's regions) for the first --num_pictures test questions; returns
    the examples as the card's inputs, ``{"image": "example_<n>.png", "question": …}`` in JSON."""
    from hf_bahdanau.pictures import plot_vqa_example

    model.eval()
    examples = []
    for index in range(min(data_args.num_pictures, len(test))):
        row = test[index]
        image, question = PICTURE_READER.to_image(row[data_args.image_column]), row[data_args.question_column]
        image.save(output_dir / f"example_{index}.png")
        if model.config.text_config.inputs == "both":  # a baseline reading one input attends to nothing
            plot_vqa_example(model, processor, tokenizer, image, question, expected=row[data_args.answer_column],
                             path=output_dir / f"coattention_{index}.png")
        examples.append(json.dumps({"image": f"example_{index}.png", "question": question}))
    return examples


if __name__ == "__main__":
    main()
