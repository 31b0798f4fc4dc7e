"""Evaluation and prediction read the split's rows in order under ``--train_sampling_strategy group_by_length``
(training/common/split_order.py): transformers groups evaluation batches by length too, and the scripts read each row's
references (WER, PER), copyable words and predictions file beside the predictions."""

import datasets
import numpy as np
import pytest
import torch
from transformers import DataCollatorForSeq2Seq, Seq2SeqTrainingArguments, Trainer

from tests.conftest import VOCAB, tiny_model
from training.run_seq2seq import GenerationConfigKeepingTrainer
from training.common.split_order import InOrderTrainer

SOURCE_LENGTHS = [3, 9, 1, 7, 2, 8, 4, 6, 5, 9, 1, 3]  # lengths that a length-grouped sampler must reorder


class TokenizerStub:
    """What DataCollatorForSeq2Seq and Trainer ask of a tokenizer: padding of input_ids and attention_mask."""

    model_input_names = ["input_ids", "attention_mask"]
    pad_token_id = 0
    padding_side = "right"

    def pad(self, features, return_tensors="pt", **kwargs):
        longest = max(len(feature["input_ids"]) for feature in features)
        ids = [feature["input_ids"] + [0] * (longest - len(feature["input_ids"])) for feature in features]
        mask = [[1] * len(feature["input_ids"]) + [0] * (longest - len(feature["input_ids"])) for feature in features]
        return {"input_ids": torch.tensor(ids), "attention_mask": torch.tensor(mask)}


def split() -> datasets.Dataset:
    """Row i has a source of SOURCE_LENGTHS[i] tokens and the two-token label [i + 4, 2] (2 = EOS), which names it."""
    return datasets.Dataset.from_dict({
        "input_ids": [[5 + (n % (VOCAB - 6))] * n for n in SOURCE_LENGTHS],
        "labels": [[row + 4, 2] for row in range(len(SOURCE_LENGTHS))],
    })


def make_trainer(trainer_class, tmp_path, seen: list):
    def compute_metrics(prediction):
        seen.append(prediction.label_ids[:, 0] - 4)
        return {}

    args = Seq2SeqTrainingArguments(tmp_path, per_device_eval_batch_size=2, train_sampling_strategy="group_by_length",
                             report_to="none", use_cpu=True)
    return trainer_class(model=tiny_model(), args=args, processing_class=TokenizerStub(),
                         data_collator=DataCollatorForSeq2Seq(TokenizerStub(), label_pad_token_id=-100),
                         compute_metrics=compute_metrics)


def test_transformers_reorders_evaluation_under_group_by_length(tmp_path):
    """The behaviour the mixin exists for: if transformers ever stops reordering, the tests below prove nothing."""
    predicted = make_trainer(Trainer, tmp_path, []).predict(split())
    assert list(predicted.label_ids[:, 0] - 4) != list(range(len(SOURCE_LENGTHS)))


@pytest.mark.parametrize("trainer_class", [InOrderTrainer, GenerationConfigKeepingTrainer])
def test_evaluate_and_predict_keep_the_rows_order(trainer_class, tmp_path):
    seen = []
    trainer = make_trainer(trainer_class, tmp_path, seen)
    rows = np.arange(len(SOURCE_LENGTHS))
    predicted = trainer.predict(split())
    trainer.evaluate(split())
    np.testing.assert_array_equal(predicted.label_ids[:, 0] - 4, rows)
    np.testing.assert_array_equal(seen[0], rows)  # what compute_metrics saw in predict
    np.testing.assert_array_equal(seen[1], rows)  # and in evaluate
    assert trainer.args.train_sampling_strategy == "group_by_length"  # training still groups by length
