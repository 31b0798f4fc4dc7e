"""Model cards for saved hf_bahdanau models, written with ``huggingface_hub.ModelCard``.

    write_model_card("outputs/dates", task="translation", dataset_name="dates",
                     dataset_description="Generated multilingual dates -> ISO 8601", training_args=args.to_dict())

The metadata (``ModelCardData``) carries the license, language, tags, datasets, metrics, pipeline tag and a
``model-index`` of ``EvalResult`` entries; the text describes the architecture, results, alignment pictures,
usage with and without the hf_bahdanau package, training data, hyper-parameters and limitations. An image-to-text
model's examples are image files in its folder (``example_inputs=["example_0.png"]``), which the usage code reads.
"""

import json
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import metadata
from os import PathLike
from pathlib import Path
from typing import Any

from huggingface_hub import EvalResult, ModelCard, ModelCardData

from hf_bahdanau.modeling.axes import QUESTION_LEVELS

from .architecture import Architecture, describe
from .example_images import example_paths, folder_images
from .folder import parameter_count, pictures, read_json, split_metrics, training_arguments
from .transformer import (TRANSFORMER_MODEL_TYPES, TRANSFORMER_TAGS, describe_transformer, transformer_limitations,
                          transformer_summary, transformer_task_description, transformer_usage)
from .vqa import VQA_TAGS, vqa_examples, vqa_limitations, vqa_pipeline_usage, vqa_task_description, vqa_usage

TEMPLATE = Path(__file__).parent / "templates" / "model_card.md"
TASKS = {  # task -> (Auto class of its head, how the task reads in words)
    "translation": ("AutoModelForSeq2SeqLM", "Translation"),
    "token-classification": ("AutoModelForTokenClassification", "Token Classification"),
    "text-classification": ("AutoModelForSequenceClassification", "Text Classification"),
    "pointer-network": ("AutoModel", "Pointer Network"),
    "memory-question-answering": ("AutoModelForSequenceClassification", "Memory Question Answering"),
    "image-to-text": ("AutoModelForImageTextToText", "Image-to-Text"),
    "visual-question-answering": ("AutoModelForVisualQuestionAnswering", "Visual Question Answering"),
    "passage-question-answering": ("AutoModelForSequenceClassification", "Passage Question Answering"),
}
# model types that have one task; the others: "bahdanau"
MODEL_TYPES = {"bahdanau-pointer": "pointer-network", "bahdanau-memory": "memory-question-answering",
               "bahdanau-vqa": "visual-question-answering",
               "bahdanau-image-to-text": "image-to-text", "bahdanau-text-coattention": "passage-question-answering"}
# the tasks that are Hub pipeline tags (no Hub pipeline points or reads a memory)
PIPELINE_TAGS = ("translation", "token-classification", "text-classification", "image-to-text",
                 "visual-question-answering")
DEFAULT_LICENSE = "apache-2.0"  # a new card's, when none is given (a card written again keeps its own)
LICENSE_ID = re.compile(r"[a-z0-9][a-z0-9.+-]*")  # the Hub's licence ids: apache-2.0, gpl-2.0, cc-by-4.0, other
MEMORY_EXAMPLE = json.dumps({"memory": ["Mary moved to the bathroom.", "John went to the hallway."],
                             "question": "Where is Mary?"})
PASSAGE_EXAMPLE = json.dumps({"context": "Mary moved to the bathroom. John went to the hallway.",
                              "question": "Where is Mary?"})
METRIC_NAMES = {
    "bleu": "BLEU", "sacrebleu": "BLEU", "chrf": "chrF", "exact_match": "Exact match", "loss": "Loss",
    "aer": "Alignment error rate", "alignment_error_rate": "Alignment error rate", "accuracy": "Accuracy",
    "f1": "F1", "precision": "Precision", "recall": "Recall", "gen_len": "Mean generated length",
    "area_coverage": "Area coverage", "invalid_fraction": "Not a simple polygon",
    "wer": "Word error rate", "per": "Phoneme error rate",
    "wer_no_stress": "Word error rate, stress ignored", "per_no_stress": "Phoneme error rate, stress ignored",
    "error": "Error rate", "supports_covered": "Supporting facts all found by some hop's peak",
    "sequence_accuracy": "Sequence accuracy", "cer": "Character error rate",
    "accuracy_yes_no": "Accuracy, yes/no questions", "accuracy_color": "Accuracy, colour questions",
    "accuracy_shape": "Accuracy, shape questions",
    "shape_peak_overlap": "Image attention's peak region overlaps the shape",
    "shape_attention_mass": "Image attention on the regions overlapping the shape",
}
# a VQA model's attention statistics per question level (run_vqa.py): "shape_peak_overlap_word"
PER_LEVEL = re.compile(rf"(\w+?)_({'|'.join(QUESTION_LEVELS)})")
HOP_ON_SUPPORT = re.compile(r"hop_(\d+)_on_support")  # a memory network's hop statistics (run_memory_qa.py)
LEVEL_ON_SUPPORT = re.compile(r"(\w+)_peak_on_support")  # a co-attention model's passage attention per question level
LONG_INPUTS = "long_"  # "long_cer": on inputs longer than any in training (run_image_to_text.py's test_long split)
NOT_IN_MODEL_INDEX = ("loss", "gen_len")  # reported in the table, not quality metrics (also with LONG_INPUTS)
HYPERPARAMETERS = (
    "learning_rate", "per_device_train_batch_size", "per_device_eval_batch_size", "gradient_accumulation_steps",
    "num_train_epochs", "max_steps", "optim", "lr_scheduler_type", "warmup_steps", "warmup_ratio", "weight_decay",
    "max_grad_norm", "label_smoothing_factor", "seed", "generation_num_beams", "generation_max_length",
)
LOG_ROWS = 12
MODEL_ID_LINE = re.compile(r'^model_id = ".*"$', re.MULTILINE)
NOT_RECORDED = "Not recorded."
DATA_SECTION = re.compile(r"^### Data\n(.*?)^### ", re.MULTILINE | re.DOTALL)  # the template's data section
# the pictures of each output token's attention: (file names, heading, caption, alt text); other tasks: ALIGNMENTS
ALIGNMENTS = (re.compile("align"), "Alignments", "Soft alignments α_ij: one row per generated token, one column per "
              "source token (as in figure 3 of Bahdanau et al.).", "alignment")
ATTENTION_PICTURES = {
    "image-to-text": (re.compile(r"attention_\d+\.png"), "Attention over the image", "Each output token's attention "
                      "α_t over the image's regions, drawn over the image: the brighter a region, the more weight it "
                      "gets (as in figures 2 and 3 of Xu et al.).", "attention"),
    "visual-question-answering": (re.compile(r"coattention_\d+\.png"), "Attention over the question and the image",
                                  "One test question per picture: at each level of the question (one row each), its "
                                  "words shaded by their weight a^q (white = the level's largest weight) and the "
                                  "image's regions by theirs a^v, drawn over the image (the brighter a region, the "
                                  "more weight it gets), as in figure 4 of Lu et al.", "co-attention"),
}
EXPLORER_PAGES = {"image-to-text": "image_explorer.html"}  # the attention explorer a training run writes


def write_model_card(
    model_dir: str | PathLike,
    *,
    task: str | None = None,
    results: dict[str, Any] | None = None,
    dataset_name: str | None = None,
    dataset_description: str | None = None,
    training_args: dict[str, Any] | None = None,
    language: str | list[str] | None = None,
    license: str | None = None,
    base_model: str | None = None,
    model_id: str | None = None,
    example_inputs: Sequence[str] | None = None,
) -> Path:
    """Write ``model_dir/README.md`` for the model saved there and return its path.

    task: a key of TASKS; default: the model type's one task (MODEL_TYPES), "translation" for model type "bahdanau".
    results: flat metrics as Trainer writes them (``{"eval_bleu": …, "predict_exact_match": …}``; the prefix names
    the split); default: ``all_results.json`` of the folder. license: the card's (a Hub license id); default: the
    folder's card's, else apache-2.0. training_args: ``TrainingArguments.to_dict()``; default:
    the folder's ``training_args.bin``. model_id: the name the usage code loads (default: ``hub_model_id`` of the
    training arguments, else the folder path). example_inputs: texts the usage code runs on; for
    ``task="memory-question-answering"``, JSON objects ``{"memory": [sentences], "question": text}``; for
    ``task="image-to-text"``, image files in ``model_dir`` named relative to it (default: its ``example_*.png``;
    ``[]``: none, the usage code then reads the user's own image).
    """
    model_dir = Path(model_dir)
    card = build_model_card(
        model_dir, task=task, results=results, dataset_name=dataset_name, dataset_description=dataset_description,
        training_args=training_args, language=language, license=license, base_model=base_model, model_id=model_id,
        example_inputs=example_inputs,
    )
    path = model_dir / "README.md"
    card.save(path)
    return path


def check_license(license: str) -> None:
    """A ValueError unless ``license`` reads as a Hub licence id."""
    if not LICENSE_ID.fullmatch(license):
        raise ValueError(f"`license` must be a Hub licence id (lowercase letters, digits, '.', '+', '-'; e.g. "
                         f"apache-2.0, gpl-2.0, other), got {license!r}.")


def build_model_card(model_dir: Path, *, task: str | None, results: dict[str, Any] | None, dataset_name: str | None,
                     dataset_description: str | None, training_args: dict[str, Any] | None,
                     language: str | list[str] | None, license: str | None, base_model: str | None,
                     model_id: str | None, example_inputs: Sequence[str] | None) -> ModelCard:
    if license is not None:
        check_license(license)
    if task is not None and task not in TASKS:
        raise ValueError(f"`task` must be one of {list(TASKS)}, got {task!r}.")
    config = read_json(model_dir / "config.json")
    model_type = (config or {}).get("model_type")
    baseline = model_type in TRANSFORMER_MODEL_TYPES  # transformers' own Transformer, the RNNs' baseline
    if model_type not in ("bahdanau", *MODEL_TYPES) and not baseline:
        raise ValueError(f"`model_dir` ({model_dir}) must hold a saved hf_bahdanau model (config.json of model_type "
                         f"{['bahdanau', *MODEL_TYPES]}) or a Transformer baseline ({list(TRANSFORMER_MODEL_TYPES)}).")
    task = task or MODEL_TYPES.get(model_type, "translation")
    if (MODEL_TYPES.get(model_type, task) != task or (model_type == "bahdanau" and task in MODEL_TYPES.values())
            or (baseline and task != "translation")):
        raise ValueError(f"`task={task!r}` does not fit the model in {model_dir} (model_type {model_type!r}).")
    auto_class, task_name = TASKS[task]
    if not baseline and auto_class not in config.get("auto_map", {}):
        raise ValueError(f"`task={task!r}` loads with {auto_class}, which the config's auto_map lacks "
                         f"({sorted(config.get('auto_map', {}))}): save a model with that head.")
    if results is None:
        results = read_json(model_dir / "all_results.json") or {}
    if training_args is None:
        training_args = training_arguments(model_dir) or {}
    previous = previous_card(model_dir)
    language = language or previous.language
    license = license or previous.license or DEFAULT_LICENSE
    dataset_name = dataset_name or previous.dataset_name
    dataset_description = dataset_description or previous.dataset_description
    model_id = model_id or training_args.get("hub_model_id") or str(model_dir)
    model_name = model_id.rstrip("/").split("/")[-1]
    splits = split_metrics(results)
    dataset_type = dataset_name or "custom"

    eval_results = [
        EvalResult(task_type=task, task_name=task_name, dataset_type=dataset_type,
                   dataset_name=dataset_name or "custom data", dataset_split=split, metric_type=name,
                   metric_name=metric_name(name), metric_value=round(value, 4))
        for split, metrics in splits.items() if split != "train"
        for name, value in metrics.items() if name.removeprefix(LONG_INPUTS) not in NOT_IN_MODEL_INDEX
    ]
    state = read_json(model_dir / "trainer_state.json")
    architecture = describe_transformer(config) if baseline else describe(config, task, state)
    if baseline:
        tags = list(TRANSFORMER_TAGS)
    elif task == "memory-question-answering":
        tags = ["hf_bahdanau", "memory-network", "attention", task, "custom_code"]
    elif task == "passage-question-answering":
        tags = ["hf_bahdanau", "co-attention", "attention", task, "custom_code"]
    elif task == "visual-question-answering":
        tags = ["hf_bahdanau", VQA_TAGS[config["coattention"]], "vision", task, "custom_code"]
    elif task == "image-to-text":
        tags = ["hf_bahdanau", "show-attend-and-tell", "rnn",
                "attention" if config["attention_type"] != "none" else "no-attention", config["rnn_type"], "vision",
                task, "custom_code"]
    else:
        tags = ["hf_bahdanau", "rnn", "attention" if config.get("attention_type") != "none" else "no-attention",
                config["rnn_type"], task, "custom_code"]
    if architecture.preset:
        tags.insert(1, architecture.preset)
    card_data = ModelCardData(
        model_name=model_name, library_name="transformers", license=license, language=language, tags=tags,
        datasets=[dataset_name] if dataset_name else None, base_model=base_model,
        pipeline_tag=task if task in PIPELINE_TAGS else None,
        metrics=sorted({result.metric_type for result in eval_results}) or None,
        eval_results=eval_results or None,
    )
    generation = read_json(model_dir / "generation_config.json") or {}
    processor = read_json(model_dir / "preprocessor_config.json") or {}
    given = previous.examples if example_inputs is None else list(example_inputs)
    if task == "image-to-text":
        examples = example_images(model_dir, given)
        card_data.widget = [{"src": name} for name in examples] or None
    elif task == "visual-question-answering":
        examples = vqa_examples(model_dir, given)
        card_data.widget = [{"src": item["image"], "text": item["question"]} for item in examples] or None
    else:
        default = {"memory-question-answering": MEMORY_EXAMPLE, "passage-question-answering": PASSAGE_EXAMPLE}.get(
            task, "An example input.")
        examples = list(given or [default])
        if task == "memory-question-answering":
            memory_example(examples[0])  # checked before anything is written
        if task == "passage-question-answering":
            passage_example(examples[0])
        card_data.widget = [{"text": text} for text in examples]
    names, heading, caption, alt = ATTENTION_PICTURES.get(task, ALIGNMENTS)
    page = EXPLORER_PAGES.get(task)
    if page and (model_dir / page).is_file():
        caption += f" `{page}` (open it in a browser) shows each token's attention over more test images."
    figures = [path for path in pictures(model_dir) if path not in example_files(task, examples)]
    log_headers, log_rows = training_log(state)
    return ModelCard.from_template(
        card_data, template_path=TEMPLATE,
        model_name=model_name,
        model_type=model_type,
        summary=(transformer_summary(architecture, task_name, f" trained on {dataset_name}" if dataset_name else "")
                 if baseline else summary(task, architecture, dataset_name)),
        architecture=architecture,
        parameters=parameter_count(model_dir),
        task_description=transformer_task_description() if baseline else task_description(task, config, processor),
        results=[(split, metric_name(name), format_value(value))
                 for split, metrics in splits.items() if split != "train" for name, value in metrics.items()],
        results_note=results_note(task, splits),
        alignment_heading=heading, alignment_caption=caption, alignment_alt=alt,
        alignment_pictures=[path for path in figures if names.search(path)],
        other_pictures=[path for path in figures if not names.search(path)],
        usage_plugin=(transformer_usage(model_id, examples, generate_kwargs(generation)) if baseline else
                      usage(task, auto_class, model_id, examples, generation, config, remote=False)),
        usage_remote="" if baseline else usage(task, auto_class, model_id, examples, generation, config, remote=True),
        usage_pipeline=(vqa_pipeline_usage(model_id, examples) if task == "visual-question-answering" else
                        pipeline_usage(model_id, examples, generation) if has_custom_pipeline(config, task) else ""),
        dataset_text=dataset_text(dataset_name, dataset_description),
        hyperparameters=hyperparameters(training_args, state, splits.get("train", {})),
        log_headers=log_headers, log_rows=log_rows,
        versions=framework_versions(),
        limitations=transformer_limitations(config) if baseline else limitations(task, config, processor),
    )


def example_files(task: str, examples: list) -> set[str]:
    """The files of the folder that are example inputs, not figures: an image-to-text card's or a VQA card's images."""
    if task == "image-to-text":
        return set(examples)
    if task == "visual-question-answering":
        return {item["image"] for item in examples}
    return set()


@dataclass
class PreviousCard:
    """What was given when the folder's card was last written: writing it again without them keeps them."""

    examples: list[str] | None = None  # None: no card; []: a card without examples
    language: str | list[str] | None = None
    license: str | None = None
    dataset_name: str | None = None
    dataset_description: str | None = None


def previous_card(model_dir: Path) -> PreviousCard:
    """The example inputs (``widget``), languages, license and dataset of the card already in ``model_dir``, if any."""
    path = model_dir / "README.md"
    if not path.is_file():
        return PreviousCard()
    card = ModelCard.load(path)
    metadata = card.data.to_dict()
    widget = metadata.get("widget") or []
    dataset_name = (metadata.get("datasets") or [None])[0]
    data_section = DATA_SECTION.search(card.text)
    description = data_section.group(1).strip() if data_section else ""
    if dataset_name:
        description = description.removeprefix(f"**{dataset_name}**.").strip()
    return PreviousCard(  # a text example is the widget's "text", an image's its "src", a VQA example's both
        examples=[json.dumps({"image": entry["src"], "question": entry["text"]}, ensure_ascii=False)
                  if {"src", "text"} <= set(entry) else entry.get("text", entry.get("src")) for entry in widget
                  if isinstance(entry, dict) and isinstance(entry.get("text", entry.get("src")), str)],
        language=metadata.get("language"), license=metadata.get("license"), dataset_name=dataset_name,
        dataset_description=description if description and description != NOT_RECORDED else None,
    )


def results_note(task: str, splits: dict[str, dict[str, float]]) -> str:
    """What to read when BLEU says little: outputs shorter than BLEU's 4-grams (gen_len counts <s> and </s>)."""
    lengths = [metrics["gen_len"] - 2 for metrics in splits.values() if "gen_len" in metrics]
    if task != "translation" or not lengths or min(lengths) >= 4:
        return ""
    return (f"The outputs are short (about {min(lengths):.3g} tokens on average): BLEU counts matching n-grams up to "
            "4 tokens, so it is near 0 or meaningless for them; read exact match and chrF.")


def set_model_id(card_path: str | PathLike, model_id: str) -> None:
    """Point the usage code of a written card at ``model_id`` (e.g. the Hub repository it is pushed to)."""
    path = Path(card_path)
    path.write_text(MODEL_ID_LINE.sub(f"model_id = {json.dumps(model_id)}", path.read_text()))


def summary(task: str, architecture: Architecture, dataset_name: str | None) -> str:
    trained = f" trained on {dataset_name}" if dataset_name else ""
    title = architecture.title
    model = title[0].upper() + title[1:] if architecture.family else f"An RNN encoder–decoder, {title}"
    return (f"{model}, for {TASKS[task][1].lower()}{trained}; built with hf_bahdanau, which makes the classic "
            "RNN encoder–attention–decoder models first-class transformers models.")


def task_description(task: str, config: dict[str, Any], processor: dict[str, Any]) -> str:
    """What the model reads and outputs; processor: preprocessor_config.json (an image-to-text model's)."""
    if task == "visual-question-answering":
        return vqa_task_description(config, image_size_words(processor))
    if task == "image-to-text":
        return (f"It reads an image ({image_size_words(processor)}) into a grid of region annotations and generates "
                "its text token by token with `generate(pixel_values=…, pixel_mask=…)` (greedy or beam search; the "
                "image processor pads a batch of images of different widths and marks the real pixels in "
                "`pixel_mask`). With `output_attentions=True`, every step's attention over the regions is returned "
                "as `cross_attentions`; the shipped pipeline's `return_attentions=True` gives each token's weights "
                "over the image's own H' × W' grid.")
    if task == "pointer-network":
        return ("Its outputs are positions of its inputs (Vinyals et al., 2015): pointer id j + 1 points at input j "
                "and 0 ends the output. At each step the output distribution is the decoder's attention over the "
                "inputs and an end position; `generate()` (greedy or beam search, `forbid_repeats=True` to point at "
                "each input at most once) returns pointer ids after the start id 0.")
    if task == "translation":
        return ("It reads the source into annotations h_1..h_S and generates the output token by token with "
                "`generate()` (greedy or beam search); with attention, every step's soft alignment is returned as "
                "`cross_attentions` when `output_attentions=True`.")
    labels = config.get("id2label") or {}
    names = ", ".join(str(labels[key]) for key in sorted(labels, key=int)) if labels else "see config.json"
    if task == "memory-question-answering":
        return ("It reads a memory of sentences (a story, or any list of texts: a small knowledge base) and a question "
                f"about it, and picks the answer from a closed vocabulary of {len(labels)} answers: {names}. Each of "
                f"its {config['num_hops']} hops attends over the memory sentences; `output_attentions=True` returns "
                "one [batch, sentences] distribution per hop (the pipeline's `hop_attentions`, one list per hop with "
                "a weight per given sentence).")
    if task == "passage-question-answering":
        return (f"It reads a passage and a question about it, and picks the answer from a closed vocabulary of "
                f"{len(labels)} answers: {names}. At each level of the question ({', '.join(config['question_levels'])})"
                " the question and the passage attend to each other (co-attention); `output_attentions=True` returns "
                "both texts' weights per level (`question_attentions`, `context_attentions`), the pipeline's "
                "`return_attentions=True` the words and their weights.")
    unit = "each token" if task == "token-classification" else "the whole text"
    return f"A classification head labels {unit} with one of {len(labels)} labels: {names}."


def metric_name(name: str) -> str:
    """The card's words for a metric key of all_results.json (without its split prefix)."""
    if match := HOP_ON_SUPPORT.fullmatch(name):
        return f"Hop {match.group(1)} peaks on a supporting fact"
    if match := LEVEL_ON_SUPPORT.fullmatch(name):
        return f"The passage attention at the {match.group(1)} level peaks in a supporting fact"
    if (match := PER_LEVEL.fullmatch(name)) and match[1] in METRIC_NAMES:
        return f"{METRIC_NAMES[match[1]]}, {match[2]} level"
    if name.startswith(LONG_INPUTS):
        return f"{metric_name(name.removeprefix(LONG_INPUTS))}, longer inputs than in training"
    return METRIC_NAMES.get(name, name)


def format_value(value: float) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def has_custom_pipeline(config: dict[str, Any], task: str) -> bool:
    return task == "translation" and bool(config.get("custom_pipelines"))


def usage(task: str, auto_class: str, model_id: str, examples: list[str], generation: dict[str, Any],
          config: dict[str, Any], remote: bool) -> str:
    """Python code that loads the model and runs it on ``examples``, with the plugin or with remote code only."""
    trust = ", trust_remote_code=True" if remote else ""
    header = "" if remote else (f"import hf_bahdanau  # noqa: F401  (registers the {config['model_type']} model "
                                "type)\n")
    if task == "memory-question-answering":
        return header + memory_usage(model_id, examples[0], remote)
    if task == "passage-question-answering":
        return header + passage_usage(model_id, examples[0], remote)
    if task == "visual-question-answering":
        return header + vqa_usage(model_id, examples, config, remote)
    if task == "image-to-text":
        return header + image_usage(model_id, examples, generation, remote)
    if task == "pointer-network":
        return header + textwrap.dedent(f"""\
            import json

            import torch
            from transformers import AutoModel

            model_id = {json.dumps(model_id)}
            model = AutoModel.from_pretrained(model_id{trust})
            inputs = torch.tensor([json.loads({json.dumps(examples[0])})])  # [1, n, input_feature_size]
            pointers = model.generate(input_features=inputs, forbid_repeats=True)
            print([j - 1 for j in pointers[0, 1:].tolist() if j > 0])  # the input positions, in order""")
    if task != "translation":
        return header + textwrap.dedent(f"""\
            from transformers import pipeline

            model_id = {json.dumps(model_id)}
            classifier = pipeline({json.dumps(task)}, model=model_id{trust})
            print(classifier({json.dumps(examples)}))""")
    code = header + textwrap.dedent(f"""\
        from transformers import {auto_class}, AutoTokenizer

        model_id = {json.dumps(model_id)}
        tokenizer = AutoTokenizer.from_pretrained(model_id{trust})
        model = {auto_class}.from_pretrained(model_id{trust})
        inputs = tokenizer({json.dumps(examples)}, return_tensors="pt", padding=True)
        outputs = model.generate(**inputs, {generate_kwargs(generation)})
        print(tokenizer.batch_decode(outputs, skip_special_tokens=True))""")
    if remote or config.get("attention_type") == "none":
        return code
    return code + "\n\n" + textwrap.dedent(f"""\
        # the soft alignment of the first example as a heat map (needs matplotlib)
        from hf_bahdanau.modeling.alignments import alignments_from_generate
        from hf_bahdanau.pictures import plot_alignment

        out = model.generate(**inputs, {generate_kwargs(generation)}, output_attentions=True,
                             return_dict_in_generate=True)
        weights = alignments_from_generate(out, index=0, eos_token_id=tokenizer.eos_token_id)
        source = tokenizer.convert_ids_to_tokens(inputs["input_ids"][0][inputs["attention_mask"][0].bool()])
        target = tokenizer.convert_ids_to_tokens(out.sequences[0, 1:1 + len(weights)])
        plot_alignment(weights[:, :len(source)], source, target, path="alignment.png")""")


def memory_example(example: str) -> dict[str, Any]:
    """One example input of a memory network: a JSON object {"memory": [sentences], "question": text}."""
    try:
        item = json.loads(example)
    except (TypeError, json.JSONDecodeError):
        item = None
    if not (isinstance(item, dict) and set(item) == {"memory", "question"} and isinstance(item["memory"], list)
            and all(isinstance(sentence, str) for sentence in item["memory"]) and isinstance(item["question"], str)
            and item["question"].strip()):
        raise ValueError('`example_inputs` of a memory network must be JSON objects {"memory": [sentences], '
                         f'"question": text}}, got {example!r:.200}.')
    return item


def passage_example(example: str) -> dict[str, str]:
    """One example input of a passage question answerer: a JSON object {"context": text, "question": text}."""
    try:
        item = json.loads(example)
    except (TypeError, json.JSONDecodeError):
        item = None
    if not (isinstance(item, dict) and set(item) == {"context", "question"}
            and all(isinstance(text, str) and text.strip() for text in item.values())):
        raise ValueError('`example_inputs` of a passage question answerer must be JSON objects {"context": text, '
                         f'"question": text}}, got {example!r:.200}.')
    return item


def passage_usage(model_id: str, example: str, remote: bool) -> str:
    """The passage-question-answering pipeline answering ``example``'s question with its attentions: the one its
    folder ships (remote code), or with the plugin that pipeline's class."""
    item = passage_example(example)
    question = f"""\
        answered = answerer(context={json.dumps(item["context"], ensure_ascii=False)},
                            question={json.dumps(item["question"], ensure_ascii=False)}, return_attentions=True)
        print(answered["answer"], answered["score"])  # answered["attentions"]: per level, both texts' weights"""
    return answerer_usage(model_id, "pipeline_text_pair", "PassageQuestionAnsweringPipeline", question, remote)


def memory_usage(model_id: str, example: str, remote: bool) -> str:
    """A memory network answering ``example``'s question: through the pipeline its folder ships (remote code), or
    with the plugin through that pipeline's class, then each hop's attention as a heat map."""
    item = memory_example(example)
    question = f"""\
        memory = {json.dumps(item["memory"], ensure_ascii=False)}
        question = {json.dumps(item["question"], ensure_ascii=False)}
        answered = answerer(memory=memory, question=question)
        print(answered["answer"], answered["score"])  # and answered["hop_attentions"]: [hops][sentences]"""
    usage = answerer_usage(model_id, "pipeline_memory", "MemoryQuestionAnsweringPipeline", question, remote,
                           plugin_import="from hf_bahdanau.pictures import plot_memory_hops\n")
    if remote:
        return usage
    return usage + textwrap.dedent("""

        # each hop's attention over the memory sentences as a heat map (needs matplotlib)
        plot_memory_hops(memory, question, answered["hop_attentions"], answer=answered["answer"], path="hops.png")""")


def answerer_usage(model_id: str, module: str, pipeline_class: str, question: str, remote: bool,
                   plugin_import: str = "") -> str:
    """A question-answering pipeline of a sequence classifier answering (``question``, indented code): the one its
    folder ships (remote code), or with the plugin ``modeling.<module>.<pipeline_class>`` (and ``plugin_import``)."""
    if remote:
        return textwrap.dedent(f"""\
            from transformers import pipeline

            model_id = {json.dumps(model_id)}
            answerer = pipeline(model=model_id, trust_remote_code=True)
""") + textwrap.dedent(question)
    return textwrap.dedent(f"""\
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        from hf_bahdanau.modeling.{module} import {pipeline_class}
""") + plugin_import + textwrap.dedent(f"""
        model_id = {json.dumps(model_id)}
        model = AutoModelForSequenceClassification.from_pretrained(model_id)
        answerer = {pipeline_class}(model=model, tokenizer=AutoTokenizer.from_pretrained(model_id))
""") + textwrap.dedent(question)


def example_images(model_dir: Path, examples: Sequence[str] | None) -> list[str]:
    """The example images of an image-to-text card: ``examples`` (``[]``: none), or when None the folder's
    EXAMPLE_IMAGES; each a file in ``model_dir`` named relative to it (the usage code opens it there, or in the
    repository's download)."""
    if examples is None:
        examples = folder_images(model_dir, "an image-to-text")
    for name in examples:
        path = Path(name)
        if path.is_absolute() or ".." in path.parts or not (model_dir / path).is_file():
            raise ValueError(f"`example_inputs` of an image-to-text model must be image files in `model_dir` "
                             f"({model_dir}), named relative to it, got {name!r}.")
    return examples


def image_usage(model_id: str, examples: list[str], generation: dict[str, Any], remote: bool) -> str:
    """An image-to-text model reading ``examples`` (files of its folder or repository): with remote code only through
    the Auto classes, with the plugin through the pipeline it ships, then the first image's attention picture."""
    imports = ("# pip install torch transformers pillow: the shipped image processor reads images with Pillow\n"
               "from PIL import Image\nfrom transformers import AutoImageProcessor, AutoModelForImageTextToText, "
               "AutoTokenizer" if remote else "from transformers import pipeline")
    load = (f"import os\n\nfrom huggingface_hub import snapshot_download\n{imports}\n\n"
            f"model_id = {json.dumps(model_id)}\n" + example_paths(examples))
    if remote:
        return load + textwrap.dedent(f"""\
            processor = AutoImageProcessor.from_pretrained(folder, trust_remote_code=True)
            tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=True)
            model = AutoModelForImageTextToText.from_pretrained(folder, trust_remote_code=True)
            inputs = processor([Image.open(path) for path in images], return_tensors="pt")  # pixel_values, pixel_mask
            outputs = model.generate(**inputs, {generate_kwargs(generation)})
            print(tokenizer.batch_decode(outputs, skip_special_tokens=True))
            # or the pipeline the model ships: pipeline(model=folder, trust_remote_code=True)(images)""")
    return load + textwrap.dedent(f"""\
        reader = pipeline(model=folder, trust_remote_code=True)  # the image-to-text pipeline the model ships
        print([read["generated_text"] for read in reader(images, {generate_kwargs(generation)})])

        # each output token's attention over the first image, drawn over it (needs matplotlib)
        from PIL import Image

        from hf_bahdanau.pictures import plot_image_attention

        image = reader.image_processor.to_image(Image.open(images[0]))  # resized, as the model reads it
        attention = reader(image, return_attentions=True, {generate_kwargs(generation)})[0]["attention"]
        plot_image_attention(image, attention["tokens"], attention["weights"], grid=attention["grid"],
                             path="attention.png")""")


def generate_kwargs(generation: dict[str, Any]) -> str:
    num_beams = generation.get("num_beams", 1)
    max_new_tokens = generation.get("max_new_tokens") or 64
    return f"num_beams={num_beams}, max_new_tokens={max_new_tokens}"


def pipeline_usage(model_id: str, examples: list[str], generation: dict[str, Any]) -> str:
    return textwrap.dedent(f"""\
        from transformers import pipeline

        model_id = {json.dumps(model_id)}
        translator = pipeline(model=model_id, trust_remote_code=True)
        print(translator({json.dumps(examples)}, {generate_kwargs(generation)}))""")


def dataset_text(dataset_name: str | None, dataset_description: str | None) -> str:
    if dataset_name is None and dataset_description is None:
        return NOT_RECORDED
    return " ".join(part for part in (f"**{dataset_name}**." if dataset_name else None, dataset_description) if part)


def hyperparameters(training_args: dict[str, Any], state: dict[str, Any] | None,
                    train_metrics: dict[str, float]) -> list[tuple[str, Any]]:
    """(name, value) for the recorded training choices: TrainingArguments (``num_train_epochs`` only when it, not
    ``max_steps``, decided the length of the run), then what trainer_state.json adds: steps, epochs, and the training
    loss both as the mean over the run (Trainer's ``train_loss``) and as last logged."""
    decided_by_steps = (training_args.get("max_steps") or -1) > 0
    rows = [(name, training_args[name]) for name in HYPERPARAMETERS
            if training_args.get(name) not in (None, "", -1) and not (name == "max_steps" and training_args[name] <= 0)
            and not (name == "num_train_epochs" and decided_by_steps)]
    if state:
        rows += [(name, state[key]) for name, key in (("total train batch size", "train_batch_size"),
                                                      ("optimisation steps", "global_step"),
                                                      ("epochs trained", "epoch")) if state.get(key) is not None]
    if "loss" in train_metrics:
        rows.append(("training loss, mean over the run", format_value(train_metrics["loss"])))
    logged = [entry for entry in (state or {}).get("log_history", []) if "loss" in entry]
    if logged:
        rows.append((f"training loss, last logged (step {logged[-1]['step']})", format_value(logged[-1]["loss"])))
    return rows


def training_log(state: dict[str, Any] | None) -> tuple[list[str], list[list[str]]]:
    """A table of trainer_state.json's log: the evaluation rows (with the last training loss before each), or the
    training-loss rows when there was no evaluation; at most LOG_ROWS rows, evenly spaced, the last one kept."""
    if not state or not state.get("log_history"):
        return [], []
    history = state["log_history"]
    evaluations = [entry for entry in history if "eval_loss" in entry]
    if evaluations:
        metrics = [key for key in evaluations[-1] if key.startswith("eval_") and not key.endswith(
            ("runtime", "samples_per_second", "steps_per_second"))]
        headers = ["Step", "Epoch", "Training loss", *(metric_name(key[5:]) for key in metrics)]
        rows = []
        for entry in evaluations:
            losses = [item["loss"] for item in history if "loss" in item and item["step"] <= entry["step"]]
            rows.append([str(entry["step"]), format_value(entry.get("epoch", "")),
                         format_value(losses[-1]) if losses else "—",
                         *(format_value(entry[key]) if key in entry else "—" for key in metrics)])
    else:
        headers = ["Step", "Epoch", "Training loss", "Learning rate"]
        rows = [[str(entry["step"]), format_value(entry.get("epoch", "")), format_value(entry["loss"]),
                 format_value(entry.get("learning_rate", ""))] for entry in history if "loss" in entry]
    if len(rows) > LOG_ROWS:
        stride = len(rows) / LOG_ROWS
        rows = [rows[int(i * stride)] for i in range(LOG_ROWS - 1)] + [rows[-1]]
    return headers, rows


def framework_versions() -> list[tuple[str, str]]:
    versions = []
    for name in ("hf_bahdanau", "transformers", "torch", "tokenizers", "datasets"):
        try:
            versions.append((name, metadata.version(name)))
        except metadata.PackageNotFoundError:
            continue
    return versions


def limitations(task: str, config: dict[str, Any], processor: dict[str, Any]) -> list[str]:
    lines = [
        "Recurrent encoder and decoder: each sequence is read token by token, so long inputs are slower than with a "
        "Transformer of the same size, and generation cannot be parallelised over time steps.",
        "Closed vocabulary: tokens absent from the tokenizer's training data become `<unk>`.",
        "The model knows only its training distribution; check it on your own data before relying on it.",
    ]
    if task == "memory-question-answering":
        return memory_limitations(config)
    if task == "image-to-text":
        return image_limitations(config, processor)
    if task == "visual-question-answering":
        return vqa_limitations(config, image_size_words(processor))
    if task == "passage-question-answering":
        return [f"Answers come from a closed answer vocabulary of {len(config.get('id2label') or {})} answers "
                "(`id2label`): a question whose answer is not among them still gets one of them.",
                "Closed vocabulary: words the tokenizer does not know become its unknown token.",
                "The co-attention weights are learned without being shown the supporting facts: they often, not "
                "always, peak on them.", lines[2]]
    if task == "pointer-network":
        lines[1] = ("It can only point at its own inputs, and its accuracy falls for more inputs than it was trained "
                    "on (Vinyals et al., 2015, table 1).")
    if task == "translation" and config.get("attention_type") == "none":
        lines.insert(0, "No attention: the whole source passes through a fixed-size vector, so quality drops on long "
                        "inputs (Cho et al., 2014; Bahdanau et al., 2015, figure 2).")
    elif task == "translation":
        lines.insert(0, "Attention weights are soft alignments learned without supervision: they usually, not "
                        "always, point at the source tokens a human would align.")
    if config.get("attention_type") == "location":
        lines.append(f"Location attention scores at most {config['max_source_positions']} source positions.")
    return lines


def memory_limitations(config: dict[str, Any]) -> list[str]:
    """What an end-to-end memory network cannot do, from its config."""
    lines = [f"Answers come from a closed answer vocabulary of {len(config.get('id2label') or {})} answers "
             "(`id2label`): a question whose answer is not among them still gets one of them.",
             "Closed vocabulary: words the tokenizer does not know become its unknown token."]
    if config["sentence_encoding"] == "bag_of_words":
        lines.append("Bag of words: a sentence is the sum of its words' embeddings, so word order within a sentence "
                     "is lost (\"John gave Mary the ball\" reads as \"Mary gave John the ball\").")
    else:
        lines.append("Position encoding keeps word order within a sentence only through fixed weights per position "
                     "and feature: the words are not read in sequence.")
    if config["temporal_encoding"]:
        lines.append(f"With temporal encoding it reads at most {config['memory_size']} sentences: the pipeline keeps "
                     "the most recent ones and drops the older ones (their attention is 0).")
    else:
        lines.append("Without temporal encoding the order of the sentences is not seen: questions about what "
                     "happened last cannot be told from the memory.")
    lines += ["Hop attention is learned without being shown the supporting facts: it often, not always, lands on "
              "them.",
              "The model knows only its training distribution; check it on your own data before relying on it."]
    return lines


def image_size_words(processor: dict[str, Any]) -> str:
    """How the image processor (preprocessor_config.json) sizes an image, in words."""
    size = processor.get("size") or {}
    if not processor or not processor.get("do_resize", True) or "height" not in size:
        return "at its own size"
    if "width" in size:
        return f"resized to {size['height']} × {size['width']} pixels"
    longest = f", at most {processor['max_width']} wide" if processor.get("max_width") else ""
    return f"resized to {size['height']} pixels high, keeping its aspect ratio{longest}"


def image_limitations(config: dict[str, Any], processor: dict[str, Any]) -> list[str]:
    """What the image-to-text model cannot do, from its config and its image processor's."""
    lines = []
    if config["attention_type"] != "none":
        lines.append("Attention weights over the regions are learned without supervision: they usually, not always, "
                     "fall on the part of the image a token reads.")
    if config["attention_type"] != "none" and not config.get("region_position_encoding"):
        lines.append("The region annotations carry no encoding of their position (`region_position_encoding=False`, "
                     "as in the paper): the decoder tells regions apart only by what they show and by its own state.")
    if config.get("backbone_config") is not None:
        lines.append("The vision backbone reads a padded batch as it is: the padding of a narrower image reaches its "
                     "real regions through the convolutions, so an image can read differently alone and in a batch.")
    lines += [f"Every image is {image_size_words(processor)}: text much smaller, larger or longer than in training, "
              "other fonts, hands or backgrounds read worse.",
              "Recurrent decoder: the text is generated token by token, so long texts take longer than with a "
              "Transformer decoder of the same size.",
              "Closed vocabulary: tokens absent from the tokenizer's training data become `<unk>`.",
              "The model knows only its training distribution; check it on your own images before relying on it."]
    return lines
