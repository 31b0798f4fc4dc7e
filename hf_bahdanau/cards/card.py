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
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from os import PathLike
from pathlib import Path
from typing import Any

from huggingface_hub import EvalResult, ModelCard, ModelCardData

from hf_bahdanau.families import FAMILIES, CardWords, Family, Picture, family_for_task, find_family
from hf_bahdanau.families.words import Architecture

from .folder import parameter_count, pictures, read_json, split_metrics, training_arguments
from .transformer import BASELINES

TEMPLATE = Path(__file__).parent / "templates" / "model_card.md"
DEFAULT_LICENSE = "apache-2.0"  # a new card's, when none is given (a card written again keeps its own)
LICENSE_ID = re.compile(r"[a-z0-9][a-z0-9.+-]*")  # the Hub's licence ids: apache-2.0, gpl-2.0, cc-by-4.0, other
METRIC_NAMES = {
    "bleu": "BLEU", "sacrebleu": "BLEU", "chrf": "chrF", "exact_match": "Exact match", "loss": "Loss",
    "aer": "Alignment error rate", "alignment_error_rate": "Alignment error rate", "accuracy": "Accuracy",
    "f1": "F1", "precision": "Precision", "recall": "Recall", "gen_len": "Mean generated length",
    "wer": "Word error rate", "per": "Phoneme error rate",
    "wer_no_stress": "Word error rate, stress ignored", "per_no_stress": "Phoneme error rate, stress ignored",
    "error": "Error rate", "sequence_accuracy": "Sequence accuracy", "cer": "Character error rate",
}  # the words of the metrics several families report; a family's own: CardWords.metric_names
PACKAGE_TAG = "hf_bahdanau"  # the first tag of every hf_bahdanau family's card
REMOTE_CODE_TAG = "custom_code"  # the Hub's tag of a folder that carries its model's code (the last one)
LONG_INPUTS = "long_"  # "long_cer": on inputs longer than any in training (run_image_to_text.py's test_long split)
NOT_IN_MODEL_INDEX = ("loss", "gen_len")  # reported in the table, not quality metrics (also with LONG_INPUTS)
HYPERPARAMETERS = (
    "learning_rate", "per_device_train_batch_size", "per_device_eval_batch_size", "gradient_accumulation_steps",
    "num_train_epochs", "max_steps", "optim", "loss_reduction", "lr_scheduler_type", "warmup_steps", "warmup_ratio",
    "weight_decay", "max_grad_norm", "label_smoothing_factor", "seed", "generation_num_beams", "generation_max_length",
)
LOG_ROWS = 12
MODEL_ID_LINE = re.compile(r'^model_id = ".*"$', re.MULTILINE)
NOT_RECORDED = "Not recorded."
DATA_SECTION = re.compile(r"^### Data\n(.*?)^### ", re.MULTILINE | re.DOTALL)  # the template's data section

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

    task: a family's task (``hf_bahdanau.families``: "translation", "token-classification", ...) that fits the folder;
    default: the task of the folder's family (``families.find_family``).
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
    """The card of ``model_dir`` (write_model_card's arguments): every part the family of its config.json declares
    (``hf_bahdanau.families``), or a Transformer baseline's (``cards/transformer.py``)."""
    if license is not None:
        check_license(license)
    if task is not None:
        family_for_task(task)  # a ValueError naming the tasks there are
    config = read_json(model_dir / "config.json") or {}
    family = card_family(model_dir, config, task)
    task = family.task
    words = family.card
    if "auto_map" in config and family.card_head.__name__ not in config["auto_map"]:  # a folder with its code
        raise ValueError(f"`task={task!r}` loads with {family.card_head.__name__}, which the config's auto_map lacks "
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
        EvalResult(task_type=task, task_name=words.task_words, dataset_type=dataset_type,
                   dataset_name=dataset_name or "custom data", dataset_split=split, metric_type=name,
                   metric_name=metric_name(name, words), metric_value=round(value, 4))
        for split, metrics in splits.items() if split != "train"
        for name, value in metrics.items() if name.removeprefix(LONG_INPUTS) not in NOT_IN_MODEL_INDEX
    ]
    state = read_json(model_dir / "trainer_state.json")
    processor = read_json(model_dir / "preprocessor_config.json") or {}
    architecture = words.architecture(config, state)
    card_data = ModelCardData(
        model_name=model_name, library_name="transformers", license=license, language=language,
        tags=card_tags(family, config, processor, architecture.preset),
        datasets=[dataset_name] if dataset_name else None, base_model=base_model, pipeline_tag=words.pipeline_tag,
        metrics=sorted({result.metric_type for result in eval_results}) or None,
        eval_results=eval_results or None,
    )
    generation = read_json(model_dir / "generation_config.json") or {}
    examples = words.examples(model_dir, previous.examples if example_inputs is None else list(example_inputs))
    card_data.widget = words.widget(examples) or None
    example_files = {entry["src"] for entry in card_data.widget or () if "src" in entry}
    figures = [path for path in pictures(model_dir) if path not in example_files]
    sections = picture_sections(model_dir, words.pictures, words.explorer_page, figures)
    shown = {path for section in sections for path in section["files"]}
    usage_remote = words.usage(model_id, examples, generation, config, remote=True)
    usage_plugin = words.usage(model_id, examples, generation, config, remote=False)
    if usage_remote:  # the model needs its code: the plugin's usage starts by registering it
        usage_plugin = (f"import hf_bahdanau  # noqa: F401  (registers the {config['model_type']} model type)\n"
                        + usage_plugin)
    trained = f" trained on {dataset_name}" if dataset_name else ""
    log_headers, log_rows = training_log(state, words)
    return ModelCard.from_template(
        card_data, template_path=TEMPLATE,
        model_name=model_name,
        model_type=config["model_type"],
        summary=(words.summary or summary)(architecture, words.task_words, trained),
        architecture=architecture,
        parameters=parameter_count(model_dir),
        task_description=words.description(config, processor),
        results=[(split, metric_name(name, words), format_value(value))
                 for split, metrics in splits.items() if split != "train" for name, value in metrics.items()],
        results_note=words.results_note(splits) if words.results_note else "",
        picture_sections=sections,
        other_pictures=[path for path in figures if path not in shown],
        usage_plugin=usage_plugin,
        usage_remote=usage_remote,
        usage_pipeline=words.pipeline_usage(model_id, examples, generation, config) if words.pipeline_usage else "",
        dataset_text=dataset_text(dataset_name, dataset_description),
        hyperparameters=hyperparameters(training_args, state, splits.get("train", {})),
        log_headers=log_headers, log_rows=log_rows,
        versions=framework_versions(),
        limitations=words.limitations(config, processor),
    )


def card_family(model_dir: Path, config: dict[str, Any], task: str | None) -> Family:
    """The family whose card ``model_dir`` gets: its config's (``find_family``), or the family of ``task`` that
    shares its model type (a tagger's folder saved by 0.1.0 carries the seq2seq head too); a ValueError naming what
    does not fit."""
    model_type = config.get("model_type")
    family = BASELINES.get(model_type) or find_family(config)
    if family is None:
        known = list(dict.fromkeys(other.model_type for other in FAMILIES.values()))
        raise ValueError(f"`model_dir` ({model_dir}) must hold a saved hf_bahdanau model (config.json of model_type "
                         f"{known}) or a Transformer baseline ({list(BASELINES)}).")
    if task is None:
        return family
    same_type = {other.task: other for other in reversed(FAMILIES.values()) if other.model_type == model_type}
    chosen = ({family.task: family} | same_type).get(task)
    if chosen is None:
        raise ValueError(f"`task={task!r}` does not fit the model in {model_dir} (model_type {model_type!r}).")
    return chosen


def card_tags(family: Family, config: dict[str, Any], processor: dict[str, Any], preset: str | None) -> list[str]:
    """The card's tags: a family's own (``CardWords.tags``) between those every hf_bahdanau card has, "hf_bahdanau"
    and the ``preset`` its config matches before, its task and "custom_code" after; a tag given twice is kept where
    it first appears. A Transformer baseline's are its own alone: transformers' model, no remote code."""
    own = family.card.own_tags(config, processor)
    if family.model_type in BASELINES:
        return own
    return list(dict.fromkeys([PACKAGE_TAG, *([preset] if preset else []), *own, family.task, REMOTE_CODE_TAG]))


def picture_sections(model_dir: Path, kinds: Sequence[Picture], explorer_page: str | None, figures: list[str]
                     ) -> list[dict[str, Any]]:
    """One section per kind of picture that ``figures`` hold: heading, caption (the first
    kind's naming the attention explorer page when the folder has it), alt text and files."""
    sections = []
    for index, kind in enumerate(kinds):
        caption = kind.caption
        if index == 0 and explorer_page and (model_dir / explorer_page).is_file():
            caption += f" `{explorer_page}` (open it in a browser) shows each token's attention over more test images."
        files = [path for path in figures if kind.files.search(path)]
        if files:
            sections.append({"heading": kind.heading, "caption": caption, "alt": kind.alt, "files": files})
    return sections


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


def set_model_id(card_path: str | PathLike, model_id: str) -> None:
    """Point the usage code of a written card at ``model_id`` (e.g. the Hub repository it is pushed to)."""
    path = Path(card_path)
    path.write_text(MODEL_ID_LINE.sub(f"model_id = {json.dumps(model_id)}", path.read_text()))


def summary(architecture: Architecture, task_words: str, trained: str) -> str:
    """The card's first sentence: what the model is, for which task, ``trained`` on what (" trained on dates")."""
    title = architecture.title
    model = title[0].upper() + title[1:] if architecture.family else f"{architecture.summary_noun}, {title}"
    return (f"{model}, for {task_words.lower()}{trained}; built with hf_bahdanau, which makes the classic "
            "RNN encoder–attention–decoder models first-class transformers models.")


def metric_name(name: str, words: CardWords | None = None) -> str:
    """The card's words for a metric key of all_results.json (without its split prefix): the family's own
    (``words.metric_names``), a longer-inputs split's ("long_cer"), or the shared METRIC_NAMES (else the key)."""
    own = words.metric_names(name) if words is not None and words.metric_names is not None else None
    if own is not None:
        return own
    if name.startswith(LONG_INPUTS):
        return f"{metric_name(name.removeprefix(LONG_INPUTS), words)}, longer inputs than in training"
    return METRIC_NAMES.get(name, name)


def format_value(value: float) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


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


def training_log(state: dict[str, Any] | None, words: CardWords | None = None) -> tuple[list[str], list[list[str]]]:
    """A table of trainer_state.json's log: the evaluation rows (with the last training loss before each), or the
    training-loss rows when there was no evaluation; at most LOG_ROWS rows, evenly spaced, the last one kept."""
    if not state or not state.get("log_history"):
        return [], []
    history = state["log_history"]
    evaluations = [entry for entry in history if "eval_loss" in entry]
    if evaluations:
        metrics = [key for key in evaluations[-1] if key.startswith("eval_") and not key.endswith(
            ("runtime", "samples_per_second", "steps_per_second"))]
        headers = ["Step", "Epoch", "Training loss", *(metric_name(key[5:], words) for key in metrics)]
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


