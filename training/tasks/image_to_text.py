"""The image-to-text task: Xu et al. 2015 (Show, Attend and Tell) on images of text (``training/run_image_to_text.py``
runs it too).

    python -m training image-to-text training/configs/digits_soft.json                  # digit strips, generated
    python -m training image-to-text training/configs/digits_soft.json --attention hard_reinforce
    python -m training image-to-text training/configs/words_soft.json                   # rendered words
    python -m training image-to-text training/configs/digits_soft.json --dataset_name DIR/digits  # a folder
    python -m training image-to-text training/configs/digits_soft.json --config_overrides hidden_size=256

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
``BahdanauImageToTextConfig`` field (of its encoder or decoder, given flat) is a --config_overrides entry. With
--model_name_or_path both change the loaded model's config: ``--attention hard_reinforce`` on a soft model warm-starts
REINFORCE from soft attention.

The output folder gets the model (code included: loadable with trust_remote_code=True, with the image-to-text
pipeline), the image processor, the character tokenizer, all_results.json (sequence accuracy and character error
rate on validation, test and the longer test), predictions.txt (the test images' texts), attention pictures of the
first test images (attention_<n>.png: each output character with its attention over the image), a page to browse
the test images' attention (image_explorer.html), the training curve, the model card and run_arguments.json.
"""

import json
from dataclasses import dataclass, field
from pathlib import Path

import datasets
import numpy as np
import torch
from PIL import Image
from transformers import AutoModelForImageTextToText

from hf_bahdanau import BahdanauForImageToText, BahdanauImageToTextConfig
from hf_bahdanau.modeling.collators import DataCollatorForImageToText
from training.common.arguments import TaskModelArguments, check_counts, check_new_config, parse_config_overrides
from training.common.data_files import TEXT, Column, hold_out_validation
from training.common.driver import Report, Setup, Task
from training.common.image_data import (
    ImageDataArguments, check_positive, first_rows, load_image_dataset, load_tokenizer_and_processor,
)
from training.common.metrics import in_percent
from training.common.metrics.g2p_error_rates.g2p_error_rates import edit_distance
from training.common.steps import pipeline_usage
from training.data.make_babi import split_seed
from training.data.make_image_text import COUNTS, GENERATORS, SPLITS

# --attention -> the config fields it sets (Xu et al.'s soft and hard attention; Show and Tell without attention)
ATTENTIONS = {
    "soft": {},
    "hard": {"attention_mode": "hard"},
    "hard_reinforce": {"attention_mode": "hard_reinforce", "reinforce_entropy_weight": 0.01},
    "none": {"attention_type": "none", "context_mode": "sutskever", "context_gate": False},
}
IMAGE_HEIGHTS = {"digits": 20, "words": 32}  # the generated tasks' image height


@dataclass
class ImageTextModelArguments(TaskModelArguments):
    """Which model."""

    attention: str | None = field(default=None, metadata={"help": (
        f"One of {list(ATTENTIONS)}: a new model's attention (default: soft); with --model_name_or_path, the loaded "
        f"model's new attention (default: as saved), e.g. hard_reinforce warm-started from a soft model.")})
    config_overrides: str | None = field(
        default=None, metadata={"help": "'field=value,...' of BahdanauImageToTextConfig, e.g. 'hidden_size=256,"
                                        "cnn_channels=[32,64],cnn_pool_sizes=[[2,2],[2,2]]'."})

    def __post_init__(self):
        super().__post_init__()
        if self.attention is not None and self.attention not in ATTENTIONS:
            raise ValueError(f"`--attention` must be one of {list(ATTENTIONS)}, got {self.attention!r}.")
        if self.model_name_or_path is not None and self.attention == "none":
            raise ValueError("`--attention none` with `--model_name_or_path` would drop the loaded model's attention "
                             "layers; train a new model (no --model_name_or_path) for it.")
        parse_config_overrides(self.config_overrides, BahdanauImageToTextConfig)  # a bad field ends here, exit 2
        if self.model_name_or_path is None:  # and a bad value
            check_new_config(lambda: new_config(self), self.config_overrides)


@dataclass
class ImageTextDataArguments(ImageDataArguments):
    """Where the images come from, and what to report."""

    image_text_task: str = field(default="digits", metadata={"help": f"Without --dataset_name, the task generated at "
                                                                     f"run time: {sorted(GENERATORS)}."})
    generation_seed: int = field(default=0, metadata={"help": "Seed of the generated task."})
    text_column: str = field(default="text", metadata={"help": "Column with the images' texts."})
    long_test_split: str | None = field(default="test_long", metadata={"help": "A split of longer inputs than in "
                                                                               "training, scored too (None: none)."})
    image_height: int | None = field(default=None, metadata={"help": "Images are resized to this height (default: "
                                                                     "the generated task's, else 32)."})
    explorer_examples: int = field(default=200, metadata={"help": "Test images on the explorer page."})

    def __post_init__(self):
        if self.dataset_name is None and self.image_text_task not in GENERATORS:
            raise ValueError(f"`--image_text_task` must be one of {sorted(GENERATORS)}, got {self.image_text_task!r}.")
        check_positive(self, "image_height")
        super().__post_init__()
        check_counts(self, "explorer_examples")


def load_splits(data_args: ImageTextDataArguments) -> tuple[datasets.DatasetDict, str]:
    """{train, validation, test[, test_long]} with image and text columns, and a line on where they come from."""
    limits = {"train": data_args.max_train_samples, "validation": data_args.max_eval_samples,
              "test": data_args.max_predict_samples, "test_long": data_args.max_predict_samples}
    if data_args.dataset_name:
        loaded = load_image_dataset(data_args, {data_args.text_column: Column("text_column", TEXT)})
        names = {"train": "train", "validation": "validation", "test": "test", "test_long": data_args.long_test_split}
        splits = {split: first_rows(loaded[name], limits[split]) for split, name in names.items() if name in loaded}
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
        saved = BahdanauImageToTextConfig.from_pretrained(model_args.model_name_or_path).to_dict()
        config = BahdanauImageToTextConfig(**{  # checked as a new config is
            **saved, **(ATTENTIONS[model_args.attention] if model_args.attention else {}),
            **parse_config_overrides(model_args.config_overrides, BahdanauImageToTextConfig)})
        return AutoModelForImageTextToText.from_pretrained(model_args.model_name_or_path, config=config)
    return BahdanauForImageToText(new_config(
        model_args, vocab_size=len(tokenizer), num_channels=processor.num_channels,
        pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        unk_token_id=tokenizer.unk_token_id, decoder_start_token_id=tokenizer.bos_token_id))


def new_config(model_args: ImageTextModelArguments, **data_fields) -> BahdanauImageToTextConfig:
    """A new model's config: this task's sizes, the data's fields (vocabulary, special ids, image channels),
    --attention's fields, then --config_overrides."""
    return BahdanauImageToTextConfig(**{
        "embedding_size": 64, "hidden_size": 256, "attention_size": 128, "output_size": 128, **data_fields,
        **ATTENTIONS[model_args.attention or "soft"],
        **parse_config_overrides(model_args.config_overrides, BahdanauImageToTextConfig)})


def text_metrics(predictions: list[str], references: list[str]) -> dict[str, float]:
    """Sequence accuracy (the whole text right) and character error rate Σ d(p, r) / Σ |r| (Levenshtein distance),
    in percent."""
    accuracy = float(np.mean([prediction == reference for prediction, reference in zip(predictions, references)]))
    errors = sum(edit_distance(prediction, reference) for prediction, reference in zip(predictions, references))
    return in_percent({"sequence_accuracy": accuracy, "cer": errors / max(1, sum(map(len, references)))})


class ImageToTextTask(Task):
    """Train and evaluate an image-to-text model (Xu et al. 2015, Show, Attend and Tell) on images of text."""

    name = "image-to-text"
    model_arguments = ImageTextModelArguments
    data_arguments = ImageTextDataArguments
    card_task = "image-to-text"
    metric = "eval_sequence_accuracy"
    generates = True

    def setup(self) -> Setup:
        data_args = self.data_args
        self.training_args.remove_unused_columns = False  # the collator reads the image column
        self.splits, description = load_splits(data_args)
        if not self.training_args.predict_with_generate:  # logits would reach the metrics, after training
            raise ValueError("`--predict_with_generate` must be true for the image-to-text task, got false: it scores "
                             "the texts its model generates for the validation and test images.")
        data_args.dataset_description = data_args.dataset_description or description
        self.tokenizer, self.processor = load_tokenizer_and_processor(
            self.model_args.model_name_or_path, self.splits["train"][data_args.text_column], "char", num_channels=1,
            height=data_args.image_height or IMAGE_HEIGHTS.get(data_args.image_text_task, 32))
        model = build_model(self.model_args, self.tokenizer, self.processor)
        longest = max(len(self.tokenizer(text)["input_ids"]) for text in
                      [*self.splits["train"][data_args.text_column],
                       *self.splits.get("test_long", self.splits["test"])[data_args.text_column]])
        model.generation_config.max_length = longest + 5  # the start token, the longest text and </s>, 4 more
        return Setup(model=model, processing_class=self.tokenizer,
                     datasets={"train": self.splits["train"], "eval": self.splits["validation"],
                               "predict": self.splits["test"]},
                     data_collator=DataCollatorForImageToText(self.processor, self.tokenizer, data_args.image_column,
                                                              data_args.text_column),
                     compute_metrics=self.compute_metrics, processors=(self.processor,))

    def decode(self, ids: np.ndarray) -> list[str]:
        """The texts of generated (or label) ids, -100 padding included."""
        return self.tokenizer.batch_decode(np.where(ids < 0, self.tokenizer.pad_token_id, ids),
                                           skip_special_tokens=True)

    def compute_metrics(self, prediction) -> dict[str, float]:
        return text_metrics(self.decode(prediction.predictions), self.decode(prediction.label_ids))

    def prediction_lines(self, output) -> list[str]:
        return self.decode(output.predictions)

    def extra_metrics(self, split: str) -> dict[str, float]:
        if split != "predict" or "test_long" not in self.splits:
            return {}
        metrics = self.trainer.predict(self.splits["test_long"], metric_key_prefix="long").metrics
        return {f"predict_long_{name}": metrics[f"long_{name}"] for name in ("sequence_accuracy", "cer")}

    def report(self) -> Report:
        output_dir = Path(self.training_args.output_dir)
        examples = save_attention_pictures(self.trainer.model, self.processor, self.tokenizer, self.splits["test"],
                                           self.data_args, output_dir)
        image = json.dumps(str(output_dir / examples[0]) if examples else "IMAGE.png")
        return Report(examples, pipeline_usage(output_dir, f"({image})"))


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


TASK = ImageToTextTask
