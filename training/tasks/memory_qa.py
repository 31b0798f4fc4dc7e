"""The memory-qa task: an end-to-end memory network (Sukhbaatar et al. 2015, MemN2N) on a bAbI-style task, or its LSTM
baseline without memory (``training/run_memory_qa.py`` runs it too).

    python -m training memory-qa training/configs/babi_memn2n.json                 # task 1, 1k, generated
    python -m training memory-qa training/configs/babi_memn2n.json --babi_task 3 --babi_size 10k
    python -m training memory-qa training/configs/babi_memn2n.json --config_overrides num_hops=1
    python -m training memory-qa training/configs/babi_memn2n.json --architecture lstm   # no memory: baseline
    python -m training memory-qa training/configs/babi_memn2n.json \\
        --train_file tasks_1-20_v1-2/en/qa2_two-supporting-facts_train.txt \\
        --test_file tasks_1-20_v1-2/en/qa2_two-supporting-facts_test.txt                # Facebook's own files

Data, the first that is given: --dataset_name (the Hub's facebook/babi_qa, e.g. --dataset_config_name en-qa1; needs
network); --train_file / --test_file in Facebook's bAbI text format; --babi_dir, a folder in Facebook's layout
(en/, en-10k/, as training/data/make_babi.py writes); else task --babi_task generated at run time by our own
generator (training/data/babi.py, seed --babi_seed), --babi_size 1k or 10k training questions and 1,000 test
questions. As in the paper, 10% of the training questions are held out for validation and a memory holds the 50 most
recent sentences (``training.common.babi_qa``, shared with the passage-qa task).

The model (--architecture memn2n, the default) is ``BahdanauMemoryNetworkForSequenceClassification`` with the paper's
PE LS RN options by default (``--config_overrides`` changes any ``BahdanauMemoryNetworkConfig`` field);
``--linear_start`` trains with linear start until the validation loss stops falling. The paper's optimisation (§4.2)
is ``training/configs/babi_memn2n_paper.json``: ``--optim sgd`` (no momentum), ``--loss_reduction sum`` (the loss
summed over each batch) and ``--lr_halving_epochs 25`` (0.01, halved every 25 epochs). --architecture lstm trains the
baseline without memory at the same budget: an LSTM reads the story's sentences and then the question as one text,
and its final state is classified (``BahdanauForSequenceClassification``, ``pooling_type="final_state"``). Both
answer from the answers seen in the data; the words are lower-cased and split at white space and punctuation.
(--architecture coattention, the story read as one passage, is the passage-qa task.)

The output folder gets the model (code included: loadable with trust_remote_code=True, with the
memory-question-answering pipeline), the tokenizer, all_results.json (accuracy, error, and how often each hop's
attention peaks on a supporting fact), predictions.txt, pictures of the hops of the first test questions, a page to
browse the test questions' hops (memory_explorer.html), run_arguments.json, the training curve and the model card.
"""

import logging
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import torch
from transformers import DataCollatorWithPadding

from hf_bahdanau import (
    BahdanauEncoderConfig, BahdanauForSequenceClassification, BahdanauMemoryNetworkConfig,
    BahdanauMemoryNetworkForSequenceClassification,
)
from hf_bahdanau.memory_training import LinearStartCallback
from hf_bahdanau.modeling.collators import DataCollatorForMemoryNetwork
from training.common.babi_qa import Architecture, BabiModelArguments, BabiTask
from training.common.driver import Setup
from training.common.metrics import in_percent
from training.common.trainer import LOSS_REDUCTIONS
from training.data.babi import BabiExample

logger = logging.getLogger(__name__)


def memory_rows(sentences: list[list[int]], question: list[int]) -> dict[str, list]:
    """memn2n: input_ids, the question; memory_ids, the kept sentences."""
    return {"input_ids": question, "memory_ids": sentences}


def one_text_rows(sentences: list[list[int]], question: list[int]) -> dict[str, list]:
    """lstm: input_ids, the kept sentences' words then the question's."""
    return {"input_ids": [token for sentence in sentences for token in sentence] + question}


ARCHITECTURES = {
    "memn2n": Architecture(
        BahdanauMemoryNetworkConfig,
        {"hidden_size": 20, "num_hops": 3, "sentence_encoding": "position_encoding", "temporal_encoding": True,
         "random_noise": 0.1, "weight_tying": "adjacent"},
        BahdanauMemoryNetworkForSequenceClassification, memory_rows,
        lambda tokenizer, memory_size: DataCollatorForMemoryNetwork(tokenizer.pad_token_id, memory_size)),
    "lstm": Architecture(
        BahdanauEncoderConfig,
        {"rnn_type": "lstm", "bidirectional": False, "embedding_size": 32, "hidden_size": 64,
         "pooling_type": "final_state", "problem_type": "single_label_classification"},
        BahdanauForSequenceClassification, one_text_rows,
        lambda tokenizer, memory_size: DataCollatorWithPadding(tokenizer)),
}


def halving_schedule(optimizer: torch.optim.Optimizer, steps_per_epoch: int,
                     every_epochs: int) -> torch.optim.lr_scheduler.LambdaLR:
    """The learning rate halved every ``every_epochs`` epochs of ``steps_per_epoch`` optimizer steps: epoch e trains
    at lr · 0.5^⌊e / every_epochs⌋ (Sukhbaatar et al. 2015, §4.2: 0.01, halved every 25 epochs)."""
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 0.5 ** (step // (every_epochs * steps_per_epoch)))


@dataclass
class MemoryModelArguments(BabiModelArguments):
    """Which model (memn2n or lstm), and the options the paper trains the memory network with."""

    architectures = ARCHITECTURES
    other_architectures = "coattention: the passage-qa task"

    loss_reduction: str = field(
        default="mean", metadata={"help": "The training loss over a batch's questions: mean (transformers' way) or "
                                          "sum (the paper's; its gradient, and the logged training loss, are the "
                                          "batch size times the mean's; eval_loss stays the mean)."})
    lr_halving_epochs: int | None = field(
        default=None, metadata={"help": "Halve the learning rate every N epochs (the paper: 25), instead of "
                                        "--lr_scheduler_type's schedule and warmup."})

    def __post_init__(self):
        super().__post_init__()
        if self.loss_reduction not in LOSS_REDUCTIONS:
            raise ValueError(f"`--loss_reduction` must be one of {list(LOSS_REDUCTIONS)}, got "
                             f"{self.loss_reduction!r}.")
        if self.lr_halving_epochs is not None and self.lr_halving_epochs < 1:
            raise ValueError(f"`--lr_halving_epochs` must be a positive number of epochs, got "
                             f"{self.lr_halving_epochs}.")


class MemoryQATask(BabiTask):
    """Train and evaluate an end-to-end memory network (Sukhbaatar et al. 2015, MemN2N) on a bAbI-style task."""

    name = "memory-qa"
    model_arguments = MemoryModelArguments
    card_task = "memory-question-answering"

    def setup(self) -> Setup:
        self.memory = self.model_args.architecture == "memn2n"
        if not self.memory:  # the baseline reads one text
            self.card_task = "text-classification"
        logging.getLogger("hf_bahdanau.memory_training").setLevel(  # when linear start ends
            logging.INFO if self.training_args.should_log else logging.WARNING)
        setup = super().setup()
        if self.memory and setup.model.config.linear_start:
            epochs = self.model_args.linear_start_max_epochs or self.training_args.num_train_epochs / 2
            setup.callbacks.append(LinearStartCallback(epochs, patience=self.model_args.linear_start_patience))
        setup.loss_reduction = self.model_args.loss_reduction
        if self.model_args.lr_halving_epochs:
            setup.lr_scheduler = partial(halving_schedule, every_epochs=self.model_args.lr_halving_epochs)
        return setup

    def training_choices(self) -> dict[str, Any]:
        choices = {"loss_reduction": self.model_args.loss_reduction}
        if self.model_args.lr_halving_epochs:
            choices["lr_scheduler_type"] = f"halved every {self.model_args.lr_halving_epochs} epochs"
            choices["warmup_steps"] = choices["warmup_ratio"] = None
        return choices

    def config_fields(self) -> dict[str, Any]:
        if not self.memory:
            return {}
        return {"memory_size": self.data_args.memory_size, "answer_token_ids": self.tokenizer.convert_tokens_to_ids(
            [answer.lower() for answer in self.questions.answers])}

    def attention_statistics(self, dataset: datasets.Dataset) -> tuple[dict[str, float], list] | None:
        if not self.memory:
            return None
        return hop_statistics(self.trainer.model, dataset, self.collator,
                              self.training_args.per_device_eval_batch_size)

    def save_pictures(self, output_dir: Path) -> None:
        if not self.memory or self.attention_weights is None:
            return
        if self.trainer.model.config.linear_start:
            logger.warning("Training ended in linear start (the hops have no softmax yet, so no weights over the "
                           "memory to draw): no hops_<n>.png and no memory_explorer.html. Train longer, or pass "
                           "--linear_start false.")
            return
        save_hop_pictures(output_dir, self.questions.test, self.attention_weights, self.data_args.memory_size,
                          self.data_args.num_pictures, self.data_args.dataset_description)

    def pipeline_inputs(self, story: list[str], question: str) -> str | dict[str, Any]:
        # memn2n: the memory-question-answering pipeline's keywords; the baseline: the sentences, then the question
        return {"memory": story, "question": question} if self.memory else " ".join([*story, question])


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


def save_hop_pictures(output_dir: Path, examples: list[BabiExample], hop_weights: list, memory_size: int,
                      count: int, title: str | None) -> None:
    """``hops_<n>.png`` for the first ``count`` test questions, and ``memory_explorer.html`` (titled ``title``) for all
    of them."""
    from hf_bahdanau.explorer import write_memory_page
    from hf_bahdanau.pictures import plot_memory_hops

    predictions = (output_dir / "predictions.txt").read_text().splitlines()
    records = []
    for example, weights, answer in zip(examples, hop_weights, predictions):
        kept = example.story[-memory_size:]
        dropped = len(example.story) - len(kept)
        records.append(dict(memory=kept, question=example.question, answer=answer, expected=example.answer,
                            supporting_facts=[index - dropped for index in example.supporting_facts
                                              if index >= dropped], hop_attentions=weights))
    for number, record in enumerate(records[:count]):
        plot_memory_hops(record["memory"], record["question"], record["hop_attentions"], answer=record["answer"],
                         expected=record["expected"], supporting_facts=record["supporting_facts"],
                         path=output_dir / f"hops_{number}.png")
    write_memory_page(records, output_dir / "memory_explorer.html", title=title)


TASK = MemoryQATask
