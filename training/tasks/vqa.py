"""The VQA task: visual question answering with co-attention (Lu et al. 2016) on images and questions
(``training/run_vqa.py`` runs it too).

    python -m training vqa training/configs/easy_vqa.json                             # easy-VQA, parallel
    python -m training vqa training/configs/easy_vqa.json --coattention alternating
    python -m training vqa training/configs/easy_vqa.json --coattention none --inputs question   # no image
    python -m training vqa training/configs/easy_vqa.json --dataset_name DIR                     # a folder

Data: --dataset_name, a Hub dataset or a local image folder (datasets' imagefolder; its metadata.csv or
metadata.jsonl read as written: an answer ``007`` stays ``007``) with ``image``, ``question`` and ``answer``
columns (and ``question_type``, for accuracy by type: what training/data/make_easy_vqa.py writes); without it,
easy-VQA (64×64 images of one coloured shape, 13 answers; MIT licence) read from the installed ``easy-vqa`` package
(``pip install easy-vqa``), validation carved out of its training images.

--coattention picks the co-attention form (``parallel``, ``alternating``, ``context``: image attention guided by the
question's mean, ``none``: means of both, a CNN with bag of words) and --inputs the baselines that read one input
(``question``, ``context`` = the image alone). Every other field of ``BahdanauVisualQuestionAnsweringConfig``'s
sub-configs (the image encoder's ``vision_config``, the question's ``text_config``) is a --config_overrides entry,
given flat (``hidden_size=256,cnn_channels=[32,64]``).

The output folder gets the model (code included: loadable with trust_remote_code=True, with the
visual-question-answering pipeline), the image processor, the word tokenizer, all_results.json (accuracy overall and
by question type on validation and test; on easy-VQA also how often the image attention's peak region lies on the
shape, per level), predictions.txt, pictures of both attentions for the first test questions
(coattention_<n>.png, with example_<n>.png), the training curve, the model card and run_arguments.json.
"""

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

import datasets
import numpy as np
import torch
from transformers import AutoConfig, AutoModelForVisualQuestionAnswering

from hf_bahdanau import (
    BahdanauForVisualQuestionAnswering, BahdanauImageProcessor, BahdanauVisualQuestionAnsweringConfig,
)
from hf_bahdanau.families.vqa import VQA_QUESTION
from hf_bahdanau.modeling.axes import CO_ATTENTIONS
from hf_bahdanau.modeling.collators import DataCollatorForVisualQuestionAnswering
from hf_bahdanau.modeling.configuration_coattention import CO_ATTENTION_INPUTS
from training.common.arguments import TaskModelArguments, check_new_config, parse_config_overrides
from training.common.data_files import TEXT, Column, hold_out_validation
from training.common.driver import Report, Setup, Task
from training.common.image_data import (
    ImageDataArguments, check_positive, first_rows, load_image_dataset, load_tokenizer_and_processor,
)
from training.common.metrics import in_percent
from training.common.steps import pipeline_usage

logger = logging.getLogger(__name__)

# An image as the pictures and the shape statistics read it: RGB at its own size, a 16-bit one (a 16-bit PNG, mode
# I;16) scaled to 8 bits as the model's processor scales it (PIL's own .convert("RGB") turns it white).
PICTURE_READER = BahdanauImageProcessor(num_channels=3, do_resize=False)


@dataclass
class VQAModelArguments(TaskModelArguments):
    """Which model."""

    coattention: str = field(default="parallel", metadata={"help": f"One of {CO_ATTENTIONS.allowed}."})
    inputs: str = field(default="both", metadata={"help": f"One of {list(CO_ATTENTION_INPUTS)}: a baseline reads "
                                                          "the question or the image (context) alone."})
    config_overrides: str | None = field(
        default=None, metadata={"help": "'field=value,...' of BahdanauVisualQuestionAnsweringConfig's sub-configs, "
                                        "given flat, e.g. 'hidden_size=256,question_levels=[\"word\"]'."})

    def __post_init__(self):
        super().__post_init__()
        # a bad field ends here, exit 2
        parse_config_overrides(self.config_overrides, BahdanauVisualQuestionAnsweringConfig)
        if self.model_name_or_path is None:  # and a bad value (of the flags or the overrides)
            check_new_config(lambda: new_config(self), self.config_overrides)


@dataclass
class VQADataArguments(ImageDataArguments):
    """Where the questions come from (default: easy-VQA from the installed easy-vqa package), and what to report."""

    question_column: str = field(default="question", metadata={"help": "Column with the questions."})
    answer_column: str = field(default="answer", metadata={"help": "Column with the answers."})
    question_type_column: str | None = field(default="question_type", metadata={
        "help": "A column of question types, for accuracy by type (ignored when the data have none)."})
    image_height: int = field(default=64, metadata={"help": "Images are resized to this height."})
    validation_images: int = field(default=400, metadata={"help": "easy-VQA: training images held out (with all their "
                                                                  "questions) for validation."})

    def used_columns(self) -> dict[str, Column]:
        """The text columns read from --dataset_name (as written: a number is its text)."""
        columns = {self.question_column: Column("question_column", TEXT), self.answer_column: Column("answer_column",
                                                                                                      TEXT)}
        if self.question_type_column is not None:
            columns[self.question_type_column] = Column("question_type_column", TEXT, required=False)
        return columns

    def __post_init__(self):
        check_positive(self, "image_height", "validation_images")
        super().__post_init__()


def load_splits(data_args: VQADataArguments) -> tuple[datasets.DatasetDict, str]:
    """{train, validation, test} with the image, question and answer columns, and a line on where they come from."""
    if data_args.dataset_name:
        loaded = load_image_dataset(data_args, data_args.used_columns())
        description = data_args.dataset_name
    else:
        from training.data.easy_vqa_data import load_easy_vqa

        loaded = load_easy_vqa(validation_images=data_args.validation_images)
        description = ("easy-VQA (64×64 images of one coloured shape, 13 answers; MIT licence), read from the "
                       "installed easy-vqa package; validation: questions about held-out training images")
    splits = {split: loaded[split] for split in ("train", "validation", "test") if split in loaded}
    if "validation" not in splits:
        splits["train"], splits["validation"] = hold_out_validation(splits["train"], 1000,
                                                                    f"--dataset_name {data_args.dataset_name}")
    limits = {"train": data_args.max_train_samples, "validation": data_args.max_eval_samples,
              "test": data_args.max_predict_samples}
    return datasets.DatasetDict({split: first_rows(rows, limits[split]) for split, rows in splits.items()}), description


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


def saved_answers(model_name_or_path: str | None, answers: list[str]) -> list[str]:
    """The answers a model is built with: the data's ``answers`` for a new model; a saved one keeps its own, in its
    order (its classifier's rows keep their meaning), and a ValueError names the data's answers it lacks."""
    if model_name_or_path is None:
        return answers
    id2label = AutoConfig.from_pretrained(model_name_or_path).id2label
    known = [id2label[index] for index in sorted(id2label)]
    missing = sorted(set(answers) - set(known))
    if missing:
        raise ValueError(f"`--model_name_or_path` {model_name_or_path} answers {len(known)} answers, and the data's "
                         f"{missing[:10]} ({len(missing)}) are not among them: train a new model (leave it out).")
    return known


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


class VQATask(Task):
    """Train and evaluate a visual question answering model with co-attention (Lu et al. 2016) on images and
    questions."""

    name = "vqa"
    model_arguments = VQAModelArguments
    data_arguments = VQADataArguments
    card_task = "visual-question-answering"
    metric = "eval_accuracy"

    def setup(self) -> Setup:
        data_args = self.data_args
        self.splits, description = load_splits(data_args)
        data_args.dataset_description = data_args.dataset_description or description
        self.types = question_types(self.splits, data_args)
        self.training_args.remove_unused_columns = False  # the collator reads the image, question and answer columns
        self.training_args.label_names = ["labels", "question_type_ids"] if self.types else ["labels"]
        self.tokenizer, self.processor = load_tokenizer_and_processor(
            self.model_args.model_name_or_path, self.splits["train"][data_args.question_column], "word",
            num_channels=3, height=data_args.image_height)
        answers = sorted({answer for rows in self.splits.values() for answer in rows[data_args.answer_column]})
        unseen = sorted(set(answers) - set(self.splits["train"][data_args.answer_column]))
        if unseen:
            logger.warning(f"{len(unseen)} answers of validation/test never occur in training (they count as wrong): "
                           f"{unseen[:10]}")
        model = build_model(self.model_args, self.tokenizer, saved_answers(self.model_args.model_name_or_path, answers))
        self.collator = DataCollatorForVisualQuestionAnswering(
            self.processor, self.tokenizer, model.config.label2id, data_args.image_column, data_args.question_column,
            data_args.answer_column, data_args.question_type_column if self.types else None, self.types,
            model.config.text_config.inputs)
        return Setup(model=model, processing_class=self.tokenizer,
                     datasets={"train": self.splits["train"], "eval": self.splits["validation"],
                               "predict": self.splits["test"]},
                     data_collator=self.collator, compute_metrics=self.compute_metrics, processors=(self.processor,))

    def compute_metrics(self, prediction) -> dict[str, float]:
        labels, type_ids = prediction.label_ids if self.types else (prediction.label_ids, None)
        return accuracy_metrics(prediction.predictions.argmax(-1), labels, type_ids, self.types)

    def prediction_lines(self, output) -> list[str]:
        return [self.trainer.model.config.id2label[int(index)] for index in output.predictions.argmax(-1)]

    def extra_metrics(self, split: str) -> dict[str, float]:
        if split != "predict" or self.data_args.dataset_name:
            return {}
        metrics = shape_attention_metrics(self.trainer.model, self.collator, self.splits["test"],
                                          self.training_args.per_device_eval_batch_size)
        return {f"predict_{name}": value for name, value in metrics.items()}

    def report(self) -> Report:
        output_dir = Path(self.training_args.output_dir)
        examples = save_attention_pictures(self.trainer.model, self.processor, self.tokenizer, self.splits["test"],
                                           self.data_args, output_dir)
        example = json.loads(examples[0]) if examples else {"image": "IMAGE.png", "question": VQA_QUESTION}
        image = json.dumps(str(output_dir / example["image"]) if examples else example["image"])
        question = json.dumps(example["question"], ensure_ascii=False)
        return Report(examples, pipeline_usage(output_dir, f"(image={image}, question={question})"))


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


TASK = VQATask
