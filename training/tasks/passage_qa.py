"""The passage-qa task: question-passage co-attention (Lu et al. 2016) on a bAbI-style task, the story read as one
passage (``training/run_memory_qa.py --architecture coattention`` runs it too).

    python -m training passage-qa training/configs/babi_coattention.json            # task 1, 1k, generated
    python -m training passage-qa training/configs/babi_coattention.json --config_overrides coattention=alternating
    python -m training passage-qa training/configs/babi_coattention.json --babi_task 2

The data are the memory-qa task's (``training.common.babi_qa``: the Hub, Facebook's bAbI files, or our generator;
10% of the training questions held out for validation; the story's 50 most recent sentences kept). The model is
``BahdanauForTextPairClassification``: it reads the question and the story (the kept sentences one after the other,
as one passage, through a BiLSTM) as two texts with co-attention at the word, phrase and question levels
(``coattention=alternating`` in --config_overrides for the alternating form), and answers from the answers seen in
the data; the words are lower-cased and split at white space and punctuation.

The output folder gets the model (code included: loadable with trust_remote_code=True, with the
passage-question-answering pipeline), the tokenizer, all_results.json (accuracy, error, and per question level how
often the passage attention's peak word lies in a supporting fact), predictions.txt, pictures of both texts' weights
per level for the first test questions (coattention_<n>.png), run_arguments.json, the training curve and the card.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import torch

from hf_bahdanau import BahdanauForTextPairClassification, BahdanauTextCoAttentionConfig
from hf_bahdanau.modeling.collators import DataCollatorForTextPairs
from training.common.babi_qa import Architecture, BabiModelArguments, BabiTask
from training.common.metrics import in_percent


def passage_rows(sentences: list[list[int]], question: list[int]) -> dict[str, list]:
    """input_ids, the question; context_ids, the kept sentences' words one after the other; sentence_ends, each
    sentence's end in context_ids."""
    return {"input_ids": question, "context_ids": [token for sentence in sentences for token in sentence],
            "sentence_ends": np.cumsum([len(sentence) for sentence in sentences]).tolist()}


ARCHITECTURES = {
    "coattention": Architecture(
        BahdanauTextCoAttentionConfig,
        {"hidden_size": 64, "attention_size": 64, "answer_hidden_size": 128, "context_encoder": "bilstm",
         "context_hidden_size": 64, "coattention": "parallel"},
        BahdanauForTextPairClassification, passage_rows,
        lambda tokenizer, memory_size: DataCollatorForTextPairs(tokenizer.pad_token_id)),
}


@dataclass
class PassageModelArguments(BabiModelArguments):
    """Which model (coattention; --linear_start is the memory network's, read and unused, so that a memory-qa
    command or .json file with --architecture coattention runs here unchanged)."""

    architectures = ARCHITECTURES
    other_architectures = "memn2n, lstm: the memory-qa task"


class PassageQATask(BabiTask):
    """Train and evaluate question-passage co-attention (Lu et al. 2016) on a bAbI-style task, the story a passage."""

    name = "passage-qa"
    model_arguments = PassageModelArguments
    card_task = "passage-question-answering"

    def attention_statistics(self, dataset: datasets.Dataset) -> tuple[dict[str, float], list]:
        return coattention_statistics(self.trainer.model, dataset, self.collator,
                                      self.training_args.per_device_eval_batch_size)

    def save_pictures(self, output_dir: Path) -> None:
        if self.attention_weights is not None:
            save_coattention_pictures(output_dir, self.splits["predict"], self.attention_weights, self.tokenizer,
                                      self.questions.answers, self.trainer.model.config.question_levels,
                                      self.data_args.num_pictures)

    def pipeline_inputs(self, story: list[str], question: str) -> dict[str, Any]:
        return {"context": " ".join(story), "question": question}


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


TASK = PassageQATask
