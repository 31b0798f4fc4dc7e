"""The memory network's optimisation as Sukhbaatar et al. 2015 (§4.2) train it, as options of the memory-qa task
(training/tasks/memory_qa.py, training/configs/babi_memn2n_paper.json): the loss summed over each batch
(``--loss_reduction sum``, ``TaskTrainer``'s ``loss_reduction``) by hand, the learning rate halved every 25 epochs
(``--lr_halving_epochs``) read from a run's log, plain SGD, and the bad values named."""

import json
import math
from pathlib import Path

import pytest
import torch
from torch.testing import assert_close
from transformers import Seq2SeqTrainingArguments, Trainer

from conftest import exits_as_argparse_does
from hf_bahdanau import BahdanauMemoryNetworkConfig, BahdanauMemoryNetworkForSequenceClassification
from hf_bahdanau.modeling.collators import DataCollatorForMemoryNetwork
from training import run_memory_qa
from training.common.trainer import TaskTrainer
from training.tasks import memory_qa

pytestmark = pytest.mark.usefixtures("one_thread")

REPO = Path(__file__).resolve().parents[1]
PAPER = "training/configs/babi_memn2n_paper.json"

QUESTIONS = [  # (question, memory sentences, answer); -100: a question the loss leaves out
    ([5, 6], [[1, 2], [3]], 0),
    ([7], [[4, 4, 2]], 2),
    ([6, 5, 7], [[1], [2, 3], [4]], 1),
    ([8], [[3, 1]], -100),
]


def trainer_for(loss_reduction: str, tmp_path) -> TaskTrainer:
    torch.manual_seed(0)
    config = BahdanauMemoryNetworkConfig(vocab_size=9, hidden_size=6, num_labels=3, memory_size=4, random_noise=0.0)
    model = BahdanauMemoryNetworkForSequenceClassification(config).double()
    args = Seq2SeqTrainingArguments(tmp_path, report_to="none", use_cpu=True)
    return TaskTrainer(model=model, args=args, loss_reduction=loss_reduction)


def features(rows) -> list[dict]:
    return [{"input_ids": question, "memory_ids": memory, "labels": answer} for question, memory, answer in rows]


def test_the_summed_loss_is_the_sum_of_each_questions_loss_and_its_gradient_the_count_times_the_means(tmp_path):
    collate = DataCollatorForMemoryNetwork(pad_token_id=0, memory_size=4)
    counted = sum(answer != -100 for *_, answer in QUESTIONS)
    losses = {}
    for reduction in ("mean", "sum"):
        trainer = trainer_for(reduction, tmp_path)
        model = trainer.model.train()
        loss = trainer.compute_loss(model, collate(features(QUESTIONS)), num_items_in_batch=torch.tensor(counted))
        loss.backward()
        losses[reduction] = (loss.detach(), [parameter.grad.clone() for parameter in model.parameters()])
    model = trainer.model
    alone = [torch.nn.functional.cross_entropy(model(**collate(features([row]))).logits, torch.tensor([row[2]]))
             for row in QUESTIONS if row[2] != -100]  # each question through the model by itself
    assert_close(losses["sum"][0], torch.stack(alone).sum().detach())
    assert_close(losses["mean"][0], losses["sum"][0] / counted)
    for summed, mean in zip(losses["sum"][1], losses["mean"][1]):
        assert_close(summed, counted * mean)
    model.eval()  # evaluation's loss stays the mean
    with torch.no_grad():
        evaluated = trainer.compute_loss(model, collate(features(QUESTIONS)), num_items_in_batch=torch.tensor(counted))
    assert_close(evaluated, losses["mean"][0])


def test_the_learning_rate_is_halved_every_25_epochs_and_the_optimiser_is_plain_sgd(tmp_path, monkeypatch):
    """The paper's config for 76 epochs of 2 optimizer steps (8 training questions, batches of 4): the logged
    learning rate of each epoch's steps is 0.01 · 0.5^⌊epoch / 25⌋; the first logged loss is a sum over 4 questions
    (the new model's answers near uniform: about 4 ln(answers))."""
    monkeypatch.chdir(REPO)
    run_memory_qa.main([PAPER, "--max_train_samples", "9", "--max_predict_samples", "4", "--num_train_epochs", "76",
                        "--per_device_train_batch_size", "4", "--logging_steps", "1", "--eval_strategy", "no",
                        "--linear_start", "false", "--num_pictures", "0", "--disable_tqdm", "true",
                        "--output_dir", str(tmp_path)])
    history = json.loads((tmp_path / "trainer_state.json").read_text())["log_history"]
    logged = {entry["step"]: entry["learning_rate"] for entry in history if "learning_rate" in entry}
    answers = len(json.loads((tmp_path / "config.json").read_text())["id2label"])
    assert history[0]["loss"] == pytest.approx(4 * math.log(answers), rel=0.2)
    assert len(logged) == 152
    for epoch, rate in ((0, 0.01), (24, 0.01), (25, 0.005), (50, 0.0025), (75, 0.00125)):
        for step in (2 * epoch, 2 * epoch + 1):  # the log after optimizer step s (0-based) is at step s + 1
            assert logged[step + 1] == pytest.approx(rate), (epoch, step)
    args = Seq2SeqTrainingArguments(tmp_path, **{key: value for key, value in json.loads(Path(PAPER).read_text())
                                                 .items() if key in ("optim", "learning_rate", "weight_decay")})
    optimizer_class, optimizer_kwargs = Trainer.get_optimizer_cls_and_kwargs(args)
    assert optimizer_class is torch.optim.SGD and optimizer_kwargs == {"lr": 0.01}  # torch's momentum: 0
    card = (tmp_path / "README.md").read_text()  # the card says the schedule and the loss that trained the model
    assert "- lr_scheduler_type: halved every 25 epochs\n" in card and "- loss_reduction: sum\n" in card
    assert "warmup" not in card


def test_the_schedule_by_hand():
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.01)
    schedule = memory_qa.halving_schedule(optimizer, steps_per_epoch=3, every_epochs=25)
    rates = []
    for _ in range(100 * 3):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        schedule.step()
    assert rates == pytest.approx([0.01 * 0.5 ** (step // 75) for step in range(300)])
    assert [rates[3 * epoch] for epoch in (0, 24, 25, 50, 75)] == pytest.approx([0.01, 0.01, 0.005, 0.0025,
                                                                                 0.00125])


@pytest.mark.parametrize("flags, message", [
    (["--loss_reduction", "bogus"], "`--loss_reduction` must be one of ['mean', 'sum'], got 'bogus'."),
    (["--lr_halving_epochs", "0"], "`--lr_halving_epochs` must be a positive number of epochs, got 0."),
])
def test_bad_optimisation_options_are_named(flags, message, capsys, tmp_path):
    error = exits_as_argparse_does(lambda: run_memory_qa.main([*flags, "--output_dir", str(tmp_path)]), flags[0],
                                   capsys)
    assert error.endswith(f": error: {message}\n")
    with pytest.raises(ValueError, match="`loss_reduction` must be one of"):
        TaskTrainer(model=trainer_for("mean", tmp_path).model, args=Seq2SeqTrainingArguments(tmp_path),
                    loss_reduction="bogus")
