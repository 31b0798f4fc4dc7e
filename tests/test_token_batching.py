"""Batches by tokens (training/common/token_batching.py, ``--max_tokens_per_batch``): every batch within the budget,
every training row once per epoch, the same batches for a seed and another order each epoch, less padding than
transformers' batches of rows, through ``TaskTrainer`` (one step per batch, Trainer's epochs reach the sampler) and
under torchrun (each batch trained once, by one of the two processes).

Run as a module (``python -m tests.test_token_batching OUTPUT``, under torchrun) it is the DDP test's worker."""

import json
import os
import subprocess
import sys
from pathlib import Path

import datasets
import numpy as np
import pytest
import torch
from transformers import Seq2SeqTrainingArguments
from transformers.trainer_pt_utils import LengthGroupedSampler

from tests.conftest import VOCAB, exits_as_argparse_does, tiny_model
from training.common.token_batching import TokenBatchSampler, padded_tokens, row_lengths
from training.common.trainer import TaskTrainer

REPO = Path(__file__).resolve().parents[1]
PAD, EOS = 0, 2
ROWS = 400


def skewed_lengths(rows: int = ROWS, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Source lengths of a long-tailed corpus (most rows short, a few ten times longer: 1 + exponential of mean 8,
    at most 60) and targets of about the same length, as in translation."""
    rng = np.random.default_rng(seed)
    source = np.minimum(1 + rng.exponential(8, rows).astype(np.int64), 60)
    return source, np.maximum(source + rng.integers(-2, 4, rows), 1)


def padding_fraction(batches, source: np.ndarray, target: np.ndarray) -> float:
    """The share of the padded tokens of ``batches`` (lists of rows) that are padding."""
    real = sum(int(source[rows].sum() + target[rows].sum()) for rows in batches)
    return 1 - real / sum(padded_tokens(source[rows], target[rows]) for rows in batches)


@pytest.mark.parametrize("num_processes", [1, 3])
def test_every_batch_fits_and_every_row_comes_once_per_epoch(num_processes):
    source, target = skewed_lengths()
    sampler = TokenBatchSampler(source, target, max_tokens_per_batch=256, seed=0, num_processes=num_processes)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        batches = [np.array(rows) for rows in sampler]
        assert len(batches) == len(sampler) and len(sampler) % num_processes == 0
        assert max(padded_tokens(source[rows], target[rows]) for rows in batches) <= 256
        assert sorted(np.concatenate(batches).tolist()) == list(range(ROWS))


def test_greedy_cuts_of_a_hand_made_corpus():
    # Sorted by (source, target): rows 3 (1+1), 0 (2+2), 2 (2+3), 1 (5+1), 4 (6+6). With 12 tokens: [3, 0, 2] is
    # 3 x (2 + 3) = 15 > 12, so [3, 0] (2 x 4 = 8); [2, 1] is 2 x (5 + 3) = 16 > 12, so [2] (5); [1] (6); [4] (12).
    sampler = TokenBatchSampler([2, 5, 2, 1, 6], [2, 1, 3, 1, 6], max_tokens_per_batch=12)
    assert sorted(map(sorted, sampler)) == [[0, 3], [1], [2], [4]]
    # Five processes: the batch of most rows, [3, 0], is split in two, and the five batches deal one to each.
    five = TokenBatchSampler([2, 5, 2, 1, 6], [2, 1, 3, 1, 6], max_tokens_per_batch=12, num_processes=5)
    assert sorted(five) == [[0], [1], [2], [3], [4]]


def test_a_seed_gives_the_same_batches_and_each_epoch_another_order():
    source, target = skewed_lengths()

    def epoch_batches(seed: int, epoch: int) -> list[list[int]]:
        sampler = TokenBatchSampler(source, target, max_tokens_per_batch=256, seed=seed)
        sampler.set_epoch(epoch)
        return list(sampler)

    assert epoch_batches(seed=0, epoch=0) == epoch_batches(seed=0, epoch=0)
    assert epoch_batches(seed=0, epoch=1) != epoch_batches(seed=0, epoch=0)
    assert epoch_batches(seed=1, epoch=0) != epoch_batches(seed=0, epoch=0)
    # another order, and rows of equal lengths change batches: not only the batches' order differs
    first, second = (set(map(tuple, map(sorted, epoch_batches(seed=0, epoch=e)))) for e in (0, 1))
    assert first != second


def test_less_padding_than_batches_of_rows_at_the_same_tokens_per_step():
    source, target = skewed_lengths()
    token_batches = list(TokenBatchSampler(source, target, max_tokens_per_batch=256, seed=0))
    rows_per_batch = round(ROWS / len(token_batches))  # the same batches per epoch: the same real tokens per step
    shuffled = np.random.default_rng(0).permutation(ROWS)
    plain = [shuffled[k:k + rows_per_batch] for k in range(0, ROWS, rows_per_batch)]
    grouped_order = list(LengthGroupedSampler(rows_per_batch, lengths=source.tolist(),
                                              generator=torch.Generator().manual_seed(0)))
    grouped = [np.array(grouped_order[k:k + rows_per_batch]) for k in range(0, ROWS, rows_per_batch)]
    fractions = [padding_fraction(batches, source, target) for batches in (token_batches, grouped, plain)]
    # Measured on this corpus (seeds 0): tokens 0.101, group_by_length (megabatches of 50 batches sorted by the
    # source alone) 0.305, plain 0.639; the bounds leave room for other seeds' draws, not for losing the ordering.
    assert fractions[0] < 0.13 and fractions[1] > 0.25 and fractions[2] > 0.55, fractions


@pytest.mark.parametrize("value", [0, -5, 2.5, True])
def test_a_bad_budget_is_refused(value):
    with pytest.raises(ValueError, match=r"`--max_tokens_per_batch` must be a positive number of tokens.*got"):
        TokenBatchSampler([3, 4], [3, 4], max_tokens_per_batch=value)


def test_a_row_longer_than_the_budget_is_refused_by_name():
    with pytest.raises(ValueError, match=r"`--max_tokens_per_batch` 10 is below the 13 tokens of training row 1 "
                                         r"\(source 6 \+ target 7\).*at least 13"):
        TokenBatchSampler([3, 6, 2], [3, 7, 2], max_tokens_per_batch=10)


def test_rows_each_alone_that_processes_cannot_share_evenly_are_refused():
    with pytest.raises(ValueError, match="3 training rows each fill a batch of their own, and 2 processes"):
        TokenBatchSampler([5, 5, 5], [5, 5, 5], max_tokens_per_batch=12, num_processes=2)
    with pytest.raises(ValueError, match="`num_processes` must be between 1 and the 2 training rows"):
        TokenBatchSampler([1, 1], [1, 1], max_tokens_per_batch=12, num_processes=3)


def test_row_lengths_follow_a_selection_and_refuse_a_stream():
    dataset = datasets.Dataset.from_dict({"input_ids": [[5, 6, 7], [5], [5, 6]]})
    assert row_lengths(dataset.select([2, 0, 1]), "input_ids").tolist() == [2, 3, 1]
    with pytest.raises(ValueError, match="got IterableDataset: leave out `--streaming`"):
        row_lengths(dataset.to_iterable_dataset(), "input_ids")


# Through TaskTrainer -------------------------------------------------------------------------------------------


def row_id_corpus(rows: int = 120) -> datasets.Dataset:
    """Row r's source starts with its number written in two tokens (so a batch's rows can be read back from
    ``input_ids``), then skewed-length filler; its target is as long; a ``references`` column the model does not
    read (dropped before the collator)."""
    source, target = skewed_lengths(rows, seed=1)
    first = 3
    base = VOCAB - first
    sources = [[first + r // base, first + r % base] + [first] * int(n) for r, n in enumerate(source)]
    targets = [[first + 1] * int(n) + [EOS] for n in target]
    return datasets.Dataset.from_dict({"input_ids": sources, "labels": targets,
                                       "references": [[f"row {r}"] for r in range(rows)]})


class RecordingCollator:
    """Pads a batch (source and labels to their longest) and records which rows it held and its padded tokens."""

    def __init__(self):
        self.batches: list[list[int]] = []
        self.padded: list[int] = []
        self.columns: set[str] = set()

    def __call__(self, features: list[dict]) -> dict[str, torch.Tensor]:
        base = VOCAB - 3
        self.columns.update(*features)
        self.batches.append([(f["input_ids"][0] - 3) * base + f["input_ids"][1] - 3 for f in features])
        source = max(len(f["input_ids"]) for f in features)
        target = max(len(f["labels"]) for f in features)
        self.padded.append(len(features) * (source + target))
        input_ids = torch.tensor([f["input_ids"] + [PAD] * (source - len(f["input_ids"])) for f in features])
        labels = torch.tensor([f["labels"] + [-100] * (target - len(f["labels"])) for f in features])
        return {"input_ids": input_ids, "attention_mask": (input_ids != PAD).long(), "labels": labels}


def token_trainer(output_dir, max_tokens: int = 200, collator=None, **arguments) -> TaskTrainer:
    arguments = {"save_strategy": "no", **arguments}
    args = Seq2SeqTrainingArguments(output_dir, report_to="none", use_cpu=True, disable_tqdm=True, learning_rate=1e-3,
                                    seed=0, **arguments)
    return TaskTrainer(model=tiny_model().train(), args=args, train_dataset=row_id_corpus(),
                       data_collator=collator or RecordingCollator(), max_tokens_per_batch=max_tokens)


def test_task_trainer_trains_one_step_per_token_batch_and_a_new_order_each_epoch(tmp_path):
    collator = RecordingCollator()
    trainer = token_trainer(tmp_path, collator=collator, num_train_epochs=2, logging_steps=1)
    batches_per_epoch = len(trainer.train_batches)
    trainer.train()
    assert trainer.state.global_step == 2 * batches_per_epoch  # Trainer counted its steps from the sampler
    assert max(collator.padded) <= 200
    assert collator.columns == {"input_ids", "labels"}  # `references`, which the model does not read, dropped
    epochs = collator.batches[:batches_per_epoch], collator.batches[batches_per_epoch:]
    assert len(collator.batches) == 2 * batches_per_epoch
    for epoch in epochs:
        assert sorted(row for batch in epoch for row in batch) == list(range(120))
    assert epochs[0] != epochs[1]  # Trainer's set_epoch reached the sampler
    expected = []
    for epoch in range(2):
        trainer.train_batches.set_epoch(epoch)
        expected += list(trainer.train_batches)
    assert collator.batches == expected
    learning_rates = [entry["learning_rate"] for entry in trainer.state.log_history if "learning_rate" in entry]
    assert len(learning_rates) == 2 * batches_per_epoch and learning_rates[-1] < learning_rates[0]  # linear decay


def test_resuming_in_the_second_epoch_trains_the_batches_the_whole_run_trains(tmp_path):
    whole_collator, resumed_collator = RecordingCollator(), RecordingCollator()
    whole = token_trainer(tmp_path / "whole", collator=whole_collator, num_train_epochs=2, save_strategy="steps",
                          save_steps=20)  # 16 batches an epoch: step 20 is the second epoch's fourth
    whole.train()
    resumed = token_trainer(tmp_path / "whole", collator=resumed_collator, num_train_epochs=2)
    resumed.train(resume_from_checkpoint=str(tmp_path / "whole" / "checkpoint-20"))
    assert resumed.state.global_step == whole.state.global_step == 32
    assert resumed_collator.batches == whole_collator.batches[20:]


def test_task_trainer_refuses_a_sampling_strategy_the_token_batches_replace(tmp_path):
    with pytest.raises(ValueError, match="leave out `--train_sampling_strategy group_by_length`"):
        token_trainer(tmp_path, train_sampling_strategy="group_by_length")


def test_the_seq2seq_flag_refuses_a_bad_budget_as_argparse_does(capsys):
    from training.__main__ import main

    error = exits_as_argparse_does(
        lambda: main(["seq2seq", "--preset", "rnnsearch", "--train_file", "training/data/dates/train.jsonl",
                      "--output_dir", "/nonexistent", "--max_tokens_per_batch", "0"]), "--max_tokens_per_batch",
        capsys)
    assert "must be a positive number of tokens" in error


@pytest.mark.slow
def test_the_seq2seq_task_trains_one_epoch_of_token_batches(tmp_path, caplog):
    from training.__main__ import main

    with caplog.at_level("INFO", logger="training.common.trainer"):
        main(["seq2seq", "training/configs/dates_rnnsearch.json", "--config_overrides",
              "embedding_size=16,hidden_size=32,attention_size=16,output_size=16", "--max_steps", "-1",
              "--num_train_epochs", "1", "--max_train_samples", "300", "--max_tokens_per_batch", "500",
              "--do_eval", "false", "--do_predict", "false", "--eval_strategy", "no", "--num_pictures", "0",
              "--disable_tqdm", "true", "--output_dir", str(tmp_path)])
    logged = [record.getMessage() for record in caplog.records if record.getMessage().startswith("Batches by")]
    batches = int(logged[0].split()[3])  # "Batches by tokens: N training batches of at most 500 tokens ..."
    state = json.loads((tmp_path / "trainer_state.json").read_text())
    # dates: rows of about 30 characters (source + target, EOS included): about 500 / 30 = 16 rows a batch, so about
    # 19 batches of the 300 rows; far from batches of --per_device_train_batch_size 64 rows (5 steps)
    assert 12 <= batches <= 30 and state["global_step"] == batches


# Under torchrun ------------------------------------------------------------------------------------------------


DDP_TOKENS = 190  # 17 batches of the row_id_corpus in one process: an odd count, which two must share
DDP_EPOCHS, DDP_SAVED_STEP = 2, 12  # 9 steps an epoch on each process: step 12 is the second epoch's third


def ddp_worker(output_dir: str, checkpoint: str | None = None) -> None:
    """One of the torchrun processes: a tiny model trained ``DDP_EPOCHS`` epochs on batches of ``DDP_TOKENS`` tokens,
    saved at step ``DDP_SAVED_STEP``, or resumed from ``checkpoint``; writes the rows of each batch this process
    trained, the global step and the sampler's batches of every epoch to OUTPUT/rank-K.json."""
    collator = RecordingCollator()
    trainer = token_trainer(output_dir, max_tokens=DDP_TOKENS, collator=collator, num_train_epochs=DDP_EPOCHS,
                            ddp_find_unused_parameters=False, save_strategy="steps", save_steps=DDP_SAVED_STEP)
    trainer.train(resume_from_checkpoint=checkpoint)
    all_batches = []
    for epoch in range(DDP_EPOCHS):
        trainer.train_batches.set_epoch(epoch)
        all_batches += list(trainer.train_batches)
    rank = trainer.args.process_index
    Path(output_dir, f"rank-{rank}.json").write_text(json.dumps({
        "batches": collator.batches, "global_step": trainer.state.global_step, "world_size": trainer.args.world_size,
        "all_batches": all_batches}))


def torchrun_worker(*arguments: str) -> list[dict]:
    """Run ``ddp_worker`` in two processes under torchrun; what each wrote, by rank."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "-m",
                           "tests.test_token_batching", *arguments], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    return [json.loads(Path(arguments[0], f"rank-{rank}.json").read_text()) for rank in range(2)]


@pytest.mark.slow
def test_torchrun_two_processes_train_each_token_batch_once_and_resume_in_the_second_epoch(tmp_path):
    ranks = torchrun_worker(str(tmp_path / "whole"))
    assert [rank["world_size"] for rank in ranks] == [2, 2]
    all_batches = ranks[0]["all_batches"]
    one_process = TokenBatchSampler(*(row_lengths(row_id_corpus(), column) for column in ("input_ids", "labels")),
                                    max_tokens_per_batch=DDP_TOKENS)
    assert (len(one_process), len(all_batches)) == (17, 18 * DDP_EPOCHS)  # a batch split, so that none is repeated
    assert ranks[1]["all_batches"] == all_batches  # the same sampler on both
    assert ranks[0]["batches"] == all_batches[0::2] and ranks[1]["batches"] == all_batches[1::2]
    for epoch in range(DDP_EPOCHS):  # every row once an epoch: no batch repeated to even out the processes
        trained = [row for rank in ranks for batch in rank["batches"][9 * epoch:9 * epoch + 9] for row in batch]
        assert sorted(trained) == list(range(120))
    assert [rank["global_step"] for rank in ranks] == [9 * DDP_EPOCHS] * 2

    resumed = torchrun_worker(str(tmp_path / "resumed"), str(tmp_path / "whole" / f"checkpoint-{DDP_SAVED_STEP}"))
    for rank in range(2):  # the second epoch's batches, not the first's again
        assert resumed[rank]["batches"] == ranks[rank]["batches"][DDP_SAVED_STEP:]
        assert resumed[rank]["global_step"] == 9 * DDP_EPOCHS


if __name__ == "__main__":
    ddp_worker(*sys.argv[1:])
