#!/usr/bin/env python
"""Train and evaluate an end-to-end memory network (Sukhbaatar et al. 2015, MemN2N) on a bAbI-style task.

    python training/run_memory_qa.py training/configs/babi_memn2n.json                 # task 1, 1k, generated
    python training/run_memory_qa.py training/configs/babi_memn2n.json --babi_task 3 --babi_size 10k
    python training/run_memory_qa.py training/configs/babi_memn2n.json --config_overrides num_hops=1
    python training/run_memory_qa.py training/configs/babi_memn2n.json --architecture lstm   # no memory: baseline
    python training/run_memory_qa.py training/configs/babi_memn2n.json --architecture coattention \
        --learning_rate 0.003 --num_train_epochs 40 --config_overrides coattention=alternating  # question-passage
    python training/run_memory_qa.py training/configs/babi_memn2n.json \\
        --train_file tasks_1-20_v1-2/en/qa2_two-supporting-facts_train.txt \\
        --test_file tasks_1-20_v1-2/en/qa2_two-supporting-facts_test.txt                # Facebook's own files

Data, the first that is given: --dataset_name (the Hub's facebook/babi_qa, e.g. --dataset_config_name en-qa1; needs
network); --train_file / --test_file in Facebook's bAbI text format; --babi_dir, a folder in Facebook's layout
(en/, en-10k/, as training/data/make_babi.py writes); else task --babi_task generated at run time by our own
generator (training/data/babi.py, seed --babi_seed), --babi_size 1k or 10k training questions and 1,000 test
questions. As in the paper, 10% of the training questions are held out for validation and a memory holds the 50 most
recent sentences.

The model (--architecture memn2n, the default) is ``BahdanauMemoryNetworkForSequenceClassification`` with the paper's
PE LS RN options by default (``--config_overrides`` changes any ``BahdanauMemoryNetworkConfig`` field);
``--linear_start`` trains with linear start until the validation loss stops falling. --architecture lstm trains the baseline without
memory at the same budget: an LSTM reads the story's sentences and then the question as one text, and its final
state is classified (``BahdanauForSequenceClassification``, ``pooling_type="final_state"``). --architecture
coattention reads the question and the story as two texts (the story's kept sentences one after the other, as one
passage) with Lu et al.'s co-attention at the word, phrase and question levels (``BahdanauForTextPairClassification``,
the passage through a BiLSTM; ``coattention=alternating`` in --config_overrides for the alternating form). All answer
from the answers seen in the data; the words are lower-cased and split at white space and punctuation.

The output folder gets the model (code included: loadable with trust_remote_code=True, with the
memory-question-answering pipeline), the tokenizer, all_results.json (accuracy, error, and how often each hop's
attention peaks on a supporting fact), predictions.txt, pictures of the hops of the first test questions, a page to
browse the test questions' hops (memory_explorer.html), the training curve and the model card. A co-attention model's
folder has the passage-question-answering pipeline, each level's passage attention statistics (how often its peak
word lies in a supporting fact) and pictures of both texts' weights per level (coattention_<n>.png).
"""

import json
import logging
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # `python training/run_memory_qa.py` puts training/ first
    sys.path.insert(0, str(REPO_ROOT))

import datasets  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers  # noqa: E402
from transformers import (  # noqa: E402
    AutoModelForSequenceClassification, DataCollatorWithPadding, PreTrainedTokenizerFast, Trainer, TrainingArguments,
    set_seed,
)

from hf_bahdanau import (  # noqa: E402
    BahdanauEncoderConfig, BahdanauForSequenceClassification, BahdanauForTextPairClassification,
    BahdanauMemoryNetworkConfig, BahdanauMemoryNetworkForSequenceClassification, BahdanauTextCoAttentionConfig,
)
from hf_bahdanau.memory_training import LinearStartCallback  # noqa: E402
from hf_bahdanau.modeling.collators import DataCollatorForMemoryNetwork, DataCollatorForTextPairs  # noqa: E402
from training.common.arguments import (  # noqa: E402
    ReportArguments, bad_arguments_exit, check_new_config, parse_arguments, parse_config_overrides,
)
from training.data.babi import BabiExample, TASKS, generate_task, read_babi, task_file_name  # noqa: E402
from training.data.make_babi import SIZES, split_seed  # noqa: E402
from training.common.metrics import in_percent  # noqa: E402
from training.common.steps import (  # noqa: E402
    finish_run, pipeline_usage, setup_logging, train_and_evaluate, trainer_callbacks,
)

logger = logging.getLogger(__name__)

PAD, UNK = "[PAD]", "[UNK]"
# --architecture -> (its config class, this script's defaults for a new one (memn2n: the paper's), its model class)
ARCHITECTURES = {
    "memn2n": (BahdanauMemoryNetworkConfig,
               {"hidden_size": 20, "num_hops": 3, "sentence_encoding": "position_encoding", "temporal_encoding": True,
                "random_noise": 0.1, "weight_tying": "adjacent"},
               BahdanauMemoryNetworkForSequenceClassification),
    "lstm": (BahdanauEncoderConfig,
             {"rnn_type": "lstm", "bidirectional": False, "embedding_size": 32, "hidden_size": 64,
              "pooling_type": "final_state", "problem_type": "single_label_classification"},
             BahdanauForSequenceClassification),
    "coattention": (BahdanauTextCoAttentionConfig,
                    {"hidden_size": 64, "attention_size": 64, "answer_hidden_size": 128, "context_encoder": "bilstm",
                     "context_hidden_size": 64, "coattention": "parallel"},
                    BahdanauForTextPairClassification),
}


@dataclass
class MemoryModelArguments:
    """Which model, and the options the paper trains it with."""

    architecture: str = field(default="memn2n", metadata={"help": f"One of {list(ARCHITECTURES)}: the memory network, "
                                                                  "the LSTM baseline without memory or the "
                                                                  "question-passage co-attention."})
    model_name_or_path: str | None = field(default=None, metadata={"help": "Fine-tune this saved model instead."})
    config_overrides: str | None = field(
        default=None, metadata={"help": "'field=value,...' of the model's config, e.g. 'num_hops=1,"
                                        "sentence_encoding=bag_of_words' (memn2n), 'hidden_size=64' (lstm) or "
                                        "'coattention=alternating' (coattention)."})
    linear_start: bool = field(default=True, metadata={"help": "memn2n: start without the hops' softmax, until the "
                                                               "validation loss stops falling (the paper's LS)."})
    linear_start_max_epochs: float | None = field(
        default=None, metadata={"help": "End linear start by this epoch at the latest (default: half the epochs)."})

    def __post_init__(self):
        if self.architecture not in ARCHITECTURES:
            raise ValueError(f"`--architecture` must be one of {list(ARCHITECTURES)}, got {self.architecture!r}.")
        parse_config_overrides(self.config_overrides, ARCHITECTURES[self.architecture][0])  # a bad field: exit 2
        if self.model_name_or_path is None:  # and a bad value
            check_new_config(lambda: new_config(self), self.config_overrides)


@dataclass
class MemoryDataArguments(ReportArguments):
    """Where the stories come from, and what to report."""

    dataset_name: str | None = field(default=None, metadata={"help": "A Hub dataset in facebook/babi_qa's layout."})
    dataset_config_name: str | None = field(default=None, metadata={"help": "e.g. en-qa1, en-10k-qa3."})
    train_file: str | None = field(default=None, metadata={"help": "Training stories, Facebook's bAbI text format."})
    test_file: str | None = field(default=None, metadata={"help": "Test stories, Facebook's bAbI text format."})
    babi_dir: str | None = field(default=None, metadata={"help": "A folder in Facebook's layout (en/, en-10k/)."})
    babi_task: int = field(default=1, metadata={"help": f"The task of --babi_dir or of the generator: {list(TASKS)}."})
    babi_size: str = field(default="1k", metadata={"help": "1k or 10k training questions."})
    babi_seed: int = field(default=0, metadata={"help": "Seed of the generator (without files)."})
    validation_split_percentage: int = field(default=10, metadata={"help": "Training questions held out, in %."})
    max_train_samples: int | None = field(default=None, metadata={"help": "Use only the first N training questions "
                                                                          "(before the validation ones are held out)."})
    max_predict_samples: int | None = field(default=None, metadata={"help": "Use only the first N test questions."})
    memory_size: int = field(default=50, metadata={"help": "The most recent sentences a memory holds."})
    language: list[str] | None = field(default_factory=lambda: ["en"], metadata={"help": "For the model card."})
    dataset_description: str | None = field(default=None, metadata={"help": "One line on the data for the card."})
    license: str | None = field(default=None, metadata={"help": "The model card's license, a Hub license id "
                                                              "(default: apache-2.0; your data's may oblige another)."})
    validation_file: str | None = None  # the model card's list of files: validation is held out of --train_file

    def __post_init__(self):
        if self.babi_size not in ("1k", "10k"):
            raise ValueError(f"`--babi_size` must be '1k' or '10k', got {self.babi_size!r}.")
        if self.babi_task not in TASKS:
            raise ValueError(f"`--babi_task` must be one of {list(TASKS)}, got {self.babi_task}.")
        if bool(self.train_file) != bool(self.test_file):
            raise ValueError("Give both `--train_file` and `--test_file` (Facebook's bAbI text files), or neither.")
        if not 0 < self.validation_split_percentage < 100:
            raise ValueError(f"`--validation_split_percentage` must be in (0, 100), got "
                             f"{self.validation_split_percentage}.")
        for name in ("memory_size", "max_train_samples", "max_predict_samples"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ValueError(f"`--{name}` must be a positive number, got {getattr(self, name)}.")
        super().__post_init__()


def load_examples(data_args: MemoryDataArguments) -> tuple[list[BabiExample], list[BabiExample], str]:
    """(training questions, test questions, a line on where they come from), cut to --max_train_samples and
    --max_predict_samples. Fewer than 2 training questions (one is held out for validation) or no test question is a
    ValueError naming where they come from, before any training."""
    task, size = data_args.babi_task, data_args.babi_size
    if data_args.dataset_name:
        hub = datasets.load_dataset(data_args.dataset_name, data_args.dataset_config_name)
        examples = {split: from_hub_stories(hub[split], task) for split in ("train", "test")}
        sources = {split: f"`--dataset_name` {data_args.dataset_name} ({data_args.dataset_config_name}) split "
                          f"{split!r}" for split in examples}
        description = f"{data_args.dataset_name} ({data_args.dataset_config_name})"
    elif data_args.train_file:
        sources = {"train": f"`--train_file` {data_args.train_file}", "test": f"`--test_file` {data_args.test_file}"}
        examples = {"train": read_babi(data_args.train_file, task), "test": read_babi(data_args.test_file, task)}
        description = f"bAbI files {Path(data_args.train_file).name}, {Path(data_args.test_file).name}"
    elif data_args.babi_dir:
        folder = Path(data_args.babi_dir) / ("en" if size == "1k" else "en-10k")
        files = {split: folder / task_file_name(task, split) for split in ("train", "test")}
        sources = {split: f"`--babi_dir` file {file}" for split, file in files.items()}
        examples = {split: read_babi(file, task) for split, file in files.items()}
        description = f"bAbI task {task} from {folder}"
    else:
        layout = "en" if size == "1k" else "en-10k"
        examples = {split: [example for story in generate_task(task, SIZES[layout][split],
                                                               split_seed(data_args.babi_seed, task, split))
                            for example in story] for split in ("train", "test")}
        sources = {split: f"the generated task {task}'s {split} split" for split in examples}
        description = (f"task {task} ({TASKS[task][0]}) of our bAbI-style generator (training/data/babi.py, seed "
                       f"{data_args.babi_seed}), {size} training questions")
    limits = {"train": ("max_train_samples", 2, "training needs at least 2 (one is held out for validation)"),
              "test": ("max_predict_samples", 1, "testing needs at least 1")}
    for split, (limit, needed, need) in limits.items():
        count = len(examples[split])
        examples[split] = examples[split][:getattr(data_args, limit)]
        if len(examples[split]) < needed:
            cut = f" ({len(examples[split])} after `--{limit}`)" if len(examples[split]) < count else ""
            raise ValueError(f"{sources[split]} holds {count} question(s){cut}: {need}, each a line 'ID question<TAB>"
                             "answer<TAB>supporting IDs' after the statements of its story.")
    return examples["train"], examples["test"], description


def from_hub_stories(rows: datasets.Dataset, task: int) -> list[BabiExample]:
    """facebook/babi_qa's rows (one story each: ``story`` with ``id``, ``type`` 0 statement / 1 question, ``text``,
    ``answer``, ``supporting_ids``) -> one example per question, as ``read_babi`` gives them."""
    examples = []
    for row in rows:
        story = row["story"]
        statements, index_of = [], {}
        for line_id, kind, text, answer, supports in zip(story["id"], story["type"], story["text"], story["answer"],
                                                         story["supporting_ids"]):
            if kind == 0:
                index_of[str(line_id)] = len(statements)
                statements.append(text)
            else:
                examples.append(BabiExample(task, list(statements), text, answer,
                                            sorted(index_of[str(support)] for support in supports)))
    return examples


def words_of(text: str) -> list[str]:
    """The words the tokenizer makes of a text (lower-cased, split at white space and punctuation)."""
    return [word for word, _ in pre_tokenizers.Whitespace().pre_tokenize_str(text.lower())]


def build_tokenizer(examples: list[BabiExample], answers: list[str]) -> PreTrainedTokenizerFast:
    """A word-level tokenizer of every word of the training stories and questions, and each answer as one token
    (a list answer "apple,milk" too), so that the answers are words of the vocabulary (the paper's W^T = C^K)."""
    vocabulary = sorted({word for example in examples for text in [*example.story, example.question]
                         for word in words_of(text)} | {answer.lower() for answer in answers})
    tokenizer = Tokenizer(models.WordLevel({word: index for index, word in enumerate([PAD, UNK, *vocabulary])},
                                           unk_token=UNK))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token=PAD, unk_token=UNK)


def features(examples: list[BabiExample], tokenizer, answers: list[str], architecture: str,
             memory_size: int) -> datasets.Dataset:
    """memn2n: input_ids (the question), memory_ids (the 50 most recent sentences); lstm: input_ids of the
    sentences then the question; coattention: input_ids (the question), context_ids (the sentences' words one after
    the other) and sentence_ends (each sentence's end in context_ids); labels; and the supporting facts as indices
    into the kept sentences."""
    label_of = {answer: index for index, answer in enumerate(answers)}
    rows = {"input_ids": [], "labels": [], "supporting_facts": []}
    if architecture == "memn2n":
        rows["memory_ids"] = []
    if architecture == "coattention":
        rows["context_ids"], rows["sentence_ends"] = [], []
    for example in examples:
        kept = example.story[-memory_size:]
        dropped = len(example.story) - len(kept)
        sentences = [tokenizer(sentence, add_special_tokens=False)["input_ids"] for sentence in kept]
        question = tokenizer(example.question, add_special_tokens=False)["input_ids"]
        if architecture == "memn2n":
            rows["input_ids"].append(question)
            rows["memory_ids"].append(sentences)
        elif architecture == "coattention":
            rows["input_ids"].append(question)
            rows["context_ids"].append([token for sentence in sentences for token in sentence])
            rows["sentence_ends"].append(np.cumsum([len(sentence) for sentence in sentences]).tolist())
        else:
            rows["input_ids"].append([token for sentence in sentences for token in sentence] + question)
        rows["labels"].append(label_of[example.answer])
        rows["supporting_facts"].append([index - dropped for index in example.supporting_facts if index >= dropped])
    return datasets.Dataset.from_dict(rows)


def build_model(model_args: MemoryModelArguments, tokenizer, answers: list[str], memory_size: int):
    """A new (or --model_name_or_path's) memory network or LSTM baseline over these answers."""
    labels = dict(id2label=dict(enumerate(answers)), label2id={answer: index for index, answer in enumerate(answers)})
    if model_args.model_name_or_path:
        return AutoModelForSequenceClassification.from_pretrained(model_args.model_name_or_path, **labels)
    data_fields = {"vocab_size": len(tokenizer), "pad_token_id": tokenizer.pad_token_id, **labels}
    if model_args.architecture == "memn2n":
        data_fields.update(memory_size=memory_size, answer_token_ids=tokenizer.convert_tokens_to_ids(
            [answer.lower() for answer in answers]))
    return ARCHITECTURES[model_args.architecture][2](new_config(model_args, **data_fields))


def new_config(model_args: MemoryModelArguments, **data_fields):
    """A new model's config for --architecture: this script's defaults for it, --linear_start (memn2n), the data's
    fields (vocabulary, pad id, answers; memn2n: the memory size and the answers' tokens), then --config_overrides."""
    config_class, defaults, _ = ARCHITECTURES[model_args.architecture]
    linear_start = {"linear_start": model_args.linear_start} if model_args.architecture == "memn2n" else {}
    return config_class(**{**defaults, **linear_start, **data_fields,
                           **parse_config_overrides(model_args.config_overrides, config_class)})


def compute_metrics(prediction) -> dict[str, float]:
    """Accuracy and error (the paper's measure), in percent."""
    accuracy = float((prediction.predictions.argmax(-1) == prediction.label_ids).mean())
    return in_percent({"accuracy": accuracy, "error": 1 - accuracy})


def hop_statistics(model, dataset: datasets.Dataset, collator, batch_size: int) -> tuple[dict[str, float], list]:
    """How often each hop's attention peaks on a supporting fact, and how often the hops' peaks cover all of a
    question's supporting facts (in percent); and each question's hop attentions [K, n] (for the pictures and the
    page)."""
    model.eval()
    peaks_on_support, covered, weights = [], [], []
    for start in range(0, len(dataset), batch_size):
        rows = dataset[start:start + batch_size]
        batch = collator([{"input_ids": ids, "memory_ids": memory} for ids, memory in
                          zip(rows["input_ids"], rows["memory_ids"])])
        with torch.no_grad():
            hops = torch.stack(model(**batch, output_attentions=True).attentions, dim=1)  # [B, K, M]
        peaks = hops.argmax(-1)
        for row, (supports, memory) in enumerate(zip(rows["supporting_facts"], rows["memory_ids"])):
            weights.append(hops[row, :, :len(memory)].tolist())
            if supports:
                peaks_on_support.append([int(peak) in supports for peak in peaks[row]])
                covered.append(set(supports) <= set(peaks[row].tolist()))
    on_support = np.array(peaks_on_support, dtype=float)
    statistics = {f"hop_{hop + 1}_on_support": float(on_support[:, hop].mean()) for hop in range(on_support.shape[1])}
    statistics["supports_covered"] = float(np.mean(covered))
    return in_percent(statistics), weights


def main(argv: list[str] | None = None) -> None:
    model_args, data_args, training_args = parse_arguments(
        (MemoryModelArguments, MemoryDataArguments, TrainingArguments), sys.argv[1:] if argv is None else argv,
        description=__doc__.split("\n")[0])
    setup_logging(training_args)
    linear_start_log = logging.getLogger("hf_bahdanau.memory_training")  # when linear start ends
    linear_start_log.setLevel(logging.INFO if training_args.should_log else logging.WARNING)
    set_seed(training_args.seed)

    with bad_arguments_exit():  # a ValueError of the data or the model built from the arguments: exit 2
        train_examples, test_examples, description = load_examples(data_args)
        data_args.dataset_description = data_args.dataset_description or description
        held_out = max(1, len(train_examples) * data_args.validation_split_percentage // 100)
        order = np.random.default_rng(data_args.babi_seed).permutation(len(train_examples))
        validation_examples = [train_examples[index] for index in order[:held_out]]
        train_examples = [train_examples[index] for index in order[held_out:]]
        answers = sorted({example.answer for example in train_examples + validation_examples + test_examples})
        unseen = sum(example.answer not in {seen.answer for seen in train_examples} for example in test_examples)
        if unseen:
            logger.warning("%d test answers never occur in training: the model can hardly give them.", unseen)
        tokenizer = (build_tokenizer(train_examples, answers) if not model_args.model_name_or_path else
                     PreTrainedTokenizerFast.from_pretrained(model_args.model_name_or_path))
        model = build_model(model_args, tokenizer, answers, data_args.memory_size)
        splits = {name: features(examples, tokenizer, answers, model_args.architecture, data_args.memory_size)
                  for name, examples in (("train", train_examples), ("eval", validation_examples),
                                         ("predict", test_examples))}
        memory, pair = model_args.architecture == "memn2n", model_args.architecture == "coattention"
        collator = (DataCollatorForMemoryNetwork(tokenizer.pad_token_id, data_args.memory_size) if memory
                    else DataCollatorForTextPairs(tokenizer.pad_token_id) if pair
                    else DataCollatorWithPadding(tokenizer))
        callbacks = trainer_callbacks()
        if memory and model.config.linear_start:
            epochs = model_args.linear_start_max_epochs or training_args.num_train_epochs / 2
            callbacks.append(LinearStartCallback(epochs))
        trainer = Trainer(model=model, args=training_args, train_dataset=splits["train"], eval_dataset=splits["eval"],
                          processing_class=tokenizer, data_collator=collator, compute_metrics=compute_metrics,
                          callbacks=callbacks)
    statistics = {}

    def extra_metrics(split: str) -> dict[str, float]:
        if split != "predict" or not (memory or pair):
            return {}
        reader = hop_statistics if memory else coattention_statistics
        statistics["hops"] = reader(trainer.model, splits["predict"], collator,
                                    training_args.per_device_eval_batch_size)
        return {f"predict_{name}": value for name, value in statistics["hops"][0].items()}

    train_and_evaluate(trainer, training_args, splits, extra_metrics=extra_metrics,
                       prediction_lines=lambda output: [answers[index] for index in output.predictions.argmax(-1)])
    if not trainer.is_world_process_zero():
        return
    output_dir = Path(training_args.output_dir)
    kept = [(example.story[-data_args.memory_size:], example.question) for example in test_examples[:2]]
    if memory:  # the card's examples: what each pipeline reads (the baseline's: the sentences, then the question)
        examples = [json.dumps({"memory": story, "question": question}) for story, question in kept]
    elif pair:
        examples = [json.dumps({"context": " ".join(story), "question": question}) for story, question in kept]
    else:
        examples = [" ".join([*story, question]) for story, question in kept]
    if memory and "hops" in statistics and trainer.model.config.linear_start:
        logger.warning("Training ended in linear start (the hops have no softmax yet, so no weights over the memory to "
                       "draw): no hops_<n>.png and no memory_explorer.html. Train longer, or pass --linear_start false.")
    elif memory and "hops" in statistics:
        save_hop_pictures(output_dir, test_examples, statistics["hops"][1], answers, data_args)
    if pair and "hops" in statistics:
        save_coattention_pictures(output_dir, splits["predict"], statistics["hops"][1], tokenizer, answers,
                                  model.config.question_levels, data_args.num_pictures)
    task = "memory-question-answering" if memory else "passage-question-answering" if pair else "text-classification"
    call = (f"(**{examples[0]})" if memory or pair else f"({json.dumps(examples[0])})") if examples else "(...)"
    finish_run(trainer, training_args, data_args, task=task, metric="eval_accuracy", example_inputs=examples,
               usage=pipeline_usage(output_dir, call, task=None if memory or pair else task))
    (output_dir / "run_arguments.json").write_text(json.dumps({"model": asdict(model_args), "data": asdict(data_args)},
                                                              indent=1))


def coattention_statistics(model, dataset: datasets.Dataset, collator, batch_size: int) -> tuple[dict[str, float],
                                                                                              list]:
    """Per question level, how often the passage attention's peak word lies in a supporting fact (in percent); and
    each question's weights per level, (question [T], passage [N]) (for the pictures)."""
    model.eval()
    on_support, weights = [], []
    for start in range(0, len(dataset), batch_size):
        rows = dataset[start:start + batch_size]
        batch = collator([{"input_ids": ids, "context_ids": context} for ids, context in
                          zip(rows["input_ids"], rows["context_ids"])])
        with torch.no_grad():
            output = model(**batch, output_attentions=True)
        question, context = torch.stack(output.question_attentions, 1), torch.stack(output.context_attentions, 1)
        for row, (ids, passage, ends, supports) in enumerate(zip(rows["input_ids"], rows["context_ids"],
                                                                 rows["sentence_ends"], rows["supporting_facts"])):
            weights.append([(question[row, level, :len(ids)].tolist(), context[row, level, :len(passage)].tolist())
                            for level in range(question.shape[1])])
            if supports:
                sentences = np.searchsorted(ends, context[row, :, :len(passage)].argmax(-1).numpy(), side="right")
                on_support.append([int(sentence) in supports for sentence in sentences])
    peaks = np.array(on_support, dtype=float)
    return (in_percent({f"{level}_peak_on_support": peaks[:, index].mean()
                        for index, level in enumerate(model.config.question_levels)}), weights)


def save_coattention_pictures(output_dir: Path, dataset: datasets.Dataset, weights: list, tokenizer,
                              answers: list[str], levels: list[str], count: int) -> None:
    """``coattention_<n>.png`` for the first ``count`` test questions: the question's and the passage's weights, one
    row per question level (``plot_alignment``: white = 1, black = 0), with the predicted and the expected answer."""
    from matplotlib.figure import Figure

    from hf_bahdanau.pictures import plot_alignment

    predictions = (output_dir / "predictions.txt").read_text().splitlines()
    for number, (row, level_weights) in enumerate(zip(dataset.select(range(min(count, len(dataset)))), weights)):
        texts = [("question", tokenizer.convert_ids_to_tokens(row["input_ids"])),
                 ("passage", tokenizer.convert_ids_to_tokens(row["context_ids"]))]
        figure = Figure(figsize=(2 + 0.3 * len(texts[1][1]), 2 * (1.5 + 0.3 * len(levels))), layout="constrained")
        for index, (axes, (name, tokens)) in enumerate(zip(figure.subplots(2, 1), texts)):
            plot_alignment(np.array([pair[index] for pair in level_weights]), tokens, levels, ax=axes, title=name)
        figure.suptitle(f"answer: {predictions[number]} (expected: {answers[row['labels']]})")
        figure.savefig(output_dir / f"coattention_{number}.png", dpi=100)


def save_hop_pictures(output_dir: Path, examples: list[BabiExample], hop_weights: list, answers: list[str],
                      data_args: MemoryDataArguments) -> None:
    """``hops_<n>.png`` for the first --num_pictures test questions, and ``memory_explorer.html`` for all of them."""
    from hf_bahdanau.explorer import write_memory_page
    from hf_bahdanau.pictures import plot_memory_hops

    predictions = (output_dir / "predictions.txt").read_text().splitlines()
    records = []
    for example, weights, answer in zip(examples, hop_weights, predictions):
        kept = example.story[-data_args.memory_size:]
        dropped = len(example.story) - len(kept)
        records.append(dict(memory=kept, question=example.question, answer=answer, expected=example.answer,
                            supporting_facts=[index - dropped for index in example.supporting_facts
                                              if index >= dropped], hop_attentions=weights))
    for number, record in enumerate(records[:data_args.num_pictures]):
        plot_memory_hops(record["memory"], record["question"], record["hop_attentions"], answer=record["answer"],
                         expected=record["expected"], supporting_facts=record["supporting_facts"],
                         path=output_dir / f"hops_{number}.png")
    write_memory_page(records, output_dir / "memory_explorer.html", title=data_args.dataset_description)


if __name__ == "__main__":
    main()
