"""``TaskTrainer`` (training/common/trainer.py), the one Trainer of every task: evaluation and prediction read the
split's rows in order under ``--train_sampling_strategy group_by_length`` (transformers groups evaluation batches by
length too, and the tasks read each row's references, copyable words and predictions file beside the predictions), on
both of its paths (a classifier's logits; a seq2seq model's ``generate()``); the split's ``split_columns`` are kept;
evaluation leaves the model's generation config as it found it; the loss's parts are logged beside the loss."""

import datasets
import numpy as np
import pytest
import torch
from transformers import Seq2SeqTrainer, Seq2SeqTrainingArguments, Trainer

from hf_bahdanau import BahdanauForSequenceClassification
from tests.conftest import VOCAB, tiny_encoder_config, tiny_model
from training.common.trainer import TaskTrainer

SOURCE_LENGTHS = [3, 9, 1, 7, 2, 8, 4, 6, 5, 9, 1, 3]  # lengths that a length-grouped sampler must reorder
ROWS = len(SOURCE_LENGTHS)


def split(task: str) -> datasets.Dataset:
    """Row i has a source of SOURCE_LENGTHS[i] tokens and a label that names it: the class i (classifier) or the
    two-token target [i + 4, 2] (seq2seq; 2 = EOS); its ``references`` column names it too."""
    labels = list(range(ROWS)) if task == "classifier" else [[row + 4, 2] for row in range(ROWS)]
    return datasets.Dataset.from_dict({"input_ids": [[5 + (n % (VOCAB - 6))] * n for n in SOURCE_LENGTHS],
                                       "labels": labels, "references": [[f"row {row}"] for row in range(ROWS)]})


def collate(features: list[dict]) -> dict[str, torch.Tensor]:
    longest = max(len(feature["input_ids"]) for feature in features)
    return {"input_ids": torch.tensor([f["input_ids"] + [0] * (longest - len(f["input_ids"])) for f in features]),
            "attention_mask": torch.tensor([[1] * len(f["input_ids"]) + [0] * (longest - len(f["input_ids"]))
                                            for f in features]),
            "labels": torch.tensor([feature["labels"] for feature in features])}


def row_numbers(task: str, label_ids: np.ndarray) -> list[int]:
    return list(label_ids if task == "classifier" else label_ids[:, 0] - 4)


def make_trainer(trainer_class, task: str, tmp_path, seen: list | None = None, **arguments):
    """``trainer_class`` over a tiny classifier or seq2seq model (which evaluates with ``generate()``); what
    ``compute_metrics`` sees goes to ``seen``."""
    if task == "classifier":
        torch.manual_seed(0)
        model = BahdanauForSequenceClassification(tiny_encoder_config(num_labels=ROWS))
    else:
        model = tiny_model()
        model.generation_config.max_new_tokens = 3

    def compute_metrics(prediction) -> dict:
        seen.append(row_numbers(task, prediction.label_ids))
        return {}

    arguments = {"per_device_eval_batch_size": 2, "train_sampling_strategy": "group_by_length", **arguments}
    args = Seq2SeqTrainingArguments(tmp_path, predict_with_generate=task == "seq2seq", report_to="none", use_cpu=True,
                                    **arguments)
    extra = {"split_columns": ("references", "source_oovs")} if trainer_class is TaskTrainer else {}
    return trainer_class(model=model, args=args, data_collator=collate,
                         compute_metrics=None if seen is None else compute_metrics, **extra)


def test_transformers_reorders_evaluation_under_group_by_length(tmp_path):
    """The behaviour TaskTrainer undoes: if transformers ever stops reordering, the order test proves nothing."""
    predicted = make_trainer(Trainer, "classifier", tmp_path).predict(split("classifier"))
    assert row_numbers("classifier", predicted.label_ids) != list(range(ROWS))


@pytest.mark.parametrize("task", ["classifier", "seq2seq"])
def test_evaluate_and_predict_keep_the_rows_order_and_the_split_columns(task, tmp_path):
    seen = []
    trainer = make_trainer(TaskTrainer, task, tmp_path, seen)
    predicted = trainer.predict(split(task))
    assert row_numbers(task, predicted.label_ids) == list(range(ROWS))
    assert trainer.split_values == {"references": [[f"row {row}"] for row in range(ROWS)]}  # source_oovs: absent
    trainer.evaluate(split(task).remove_columns("references"))
    assert seen == [list(range(ROWS))] * 2  # what compute_metrics saw in predict, then in evaluate
    assert trainer.split_values == {}  # the evaluated split's, not the last one's
    assert trainer.args.train_sampling_strategy == "group_by_length"  # training still groups by length
    if task == "seq2seq":
        assert predicted.predictions.shape[0] == ROWS  # generated


def test_evaluation_leaves_the_generation_config_as_it_found_it(tmp_path):
    """transformers' Seq2SeqTrainer writes every default into the model's generation config after its first generated
    batch (max_length=20 among them, which clashes with max_new_tokens at every later generate(), and would be saved
    with the model); TaskTrainer's evaluation leaves the config it found."""
    for trainer_class, kept in ((Seq2SeqTrainer, False), (TaskTrainer, True)):
        trainer = make_trainer(trainer_class, "seq2seq", tmp_path, seen=[])  # with metrics to compute: it generates
        before = trainer.model.generation_config.to_dict()
        trainer.evaluate(split("seq2seq"))
        assert (trainer.model.generation_config.to_dict() == before) is kept, trainer_class.__name__


def test_the_loss_parts_are_logged_beside_the_loss(tmp_path):
    """A coverage model's ``coverage_loss``: its mean over the steps since the last log, as ``loss`` is logged."""
    trainer = make_trainer(TaskTrainer, "seq2seq", tmp_path, max_steps=4, logging_steps=2,
                           per_device_train_batch_size=4, save_strategy="no")
    trainer.model = trainer.model_wrapped = tiny_model(use_coverage=True, coverage_loss_weight=0.5)
    trainer.train_dataset = split("seq2seq")
    trainer.train()
    logged = [entry for entry in trainer.state.log_history if "loss" in entry]
    assert len(logged) == 2 and all(0 < entry["coverage_loss"] for entry in logged)


@pytest.mark.parametrize("trainer_class", [Seq2SeqTrainer, TaskTrainer])
def test_eval_loss_is_the_mean_over_rows_when_the_last_batch_is_partial(trainer_class, tmp_path):
    """12 rows in batches of 5: 5, 5 and 2. The loss of the classifier is a mean over its batch's rows, so the rows'
    mean is the batches' means weighted 5, 5, 2. Seq2SeqTrainer (accelerator.gather) weighs the last batch as a full
    one; TaskTrainer keeps Trainer's gather_for_metrics."""
    trainer = make_trainer(trainer_class, "classifier", tmp_path, per_device_eval_batch_size=5,
                           train_sampling_strategy="random")  # evaluation in the rows' order for both
    dataset = split("classifier")
    model = trainer.model.eval()
    batch_means, sizes = [], []
    with torch.no_grad():
        for start in range(0, ROWS, 5):
            rows = [dataset[index] for index in range(start, min(start + 5, ROWS))]
            batch_means.append(float(model(**collate(rows)).loss))
            sizes.append(len(rows))
    rows_mean = float(np.average(batch_means, weights=sizes))
    batches_mean = float(np.average(batch_means, weights=[5, 5, 5]))
    assert abs(rows_mean - batches_mean) > 1e-4  # the test tells them apart
    eval_loss = trainer.evaluate(dataset)["eval_loss"]
    expected = rows_mean if trainer_class is TaskTrainer else batches_mean
    assert eval_loss == pytest.approx(expected, rel=1e-5)  # float32 batch losses averaged in float32
    assert trainer.predict(dataset).metrics["test_loss"] == pytest.approx(expected, rel=1e-5)
