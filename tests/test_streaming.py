"""--streaming (training/common/streaming.py): a training file read as it is trained on, row by row as read_file reads
it, pass after pass in a seeded order, shared out among processes, resumed at the right example, and in memory that
does not grow with the corpus."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from accelerate.data_loader import prepare_data_loader
from safetensors.torch import load_file
from transformers import Seq2SeqTrainingArguments

from training.common.data_files import load_raw_splits, read_file, requested_splits
from training.common.streaming import TrainingStream, first_rows, open_stream
from training.tasks.classification import ClassificationDataArguments
from training.tasks.seq2seq import DataTrainingArguments

REPOSITORY = Path(__file__).resolve().parents[1]

# cells a reader could turn into something else: missing values, booleans, numbers, a quote that opens a field
TRICKY = ["nan", "null", "007", "true", '"quote', "2.50", "a b"]


def write_tricky(path: Path) -> None:
    rows = [{"source": text, "target": text[::-1]} for text in TRICKY]
    if path.suffix == ".jsonl":
        lines = [json.dumps(row) for row in rows] + ['{"source": 2.50, "target": "number"}']
        path.write_text("\n".join(lines) + "\n\n")  # a JSON number in a text column is its text, "2.50"
    elif path.suffix == ".tsv":
        path.write_text("source\ttarget\n\n" + "".join(f"{row['source']}\t{row['target']}\n" for row in rows))
    else:
        quoted = [{key: '"' + value.replace('"', '""') + '"' for key, value in row.items()} for row in rows]
        path.write_text("source,target\n" + "".join(f"{row['source']},{row['target']}\n" for row in quoted))


def training_args(tmp_path: Path, **values) -> Seq2SeqTrainingArguments:
    return Seq2SeqTrainingArguments(output_dir=str(tmp_path / "out"), use_cpu=True, report_to=[], **values)


@pytest.mark.parametrize("suffix", [".tsv", ".csv", ".jsonl"])
def test_a_streamed_file_holds_the_rows_read_file_reads(suffix, tmp_path):
    path = tmp_path / f"train{suffix}"
    write_tricky(path)
    data_args = DataTrainingArguments(train_file=str(path), streaming=True)
    whole = read_file(str(path), "train_file", data_args.used_columns())
    streamed = list(open_stream(data_args))
    assert streamed == [{"source": s, "target": t} for s, t in zip(whole["source"], whole["target"])]
    assert len(streamed) == len(TRICKY) + (suffix == ".jsonl")
    assert first_rows(open_stream(data_args), count=2)["source"] == whole["source"][:2]


def test_a_dataset_folder_streams_its_train_split_and_reads_the_others(tmp_path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    for split, count in (("train", 7), ("validation", 3)):
        (folder / f"{split}.jsonl").write_text("".join(json.dumps({"source": f"{split} {k}", "target": str(k)}) + "\n"
                                                       for k in range(count)))
    data_args = DataTrainingArguments(dataset_name=str(folder), streaming=True)
    assert [row["source"] for row in open_stream(data_args)] == [f"train {k}" for k in range(7)]
    raw = load_raw_splits(data_args)
    assert list(raw) == ["validation"] and raw["validation"]["target"] == ["0", "1", "2"]
    raw["train"] = open_stream(data_args)
    data_args.max_train_samples = 3
    splits = requested_splits(raw, data_args, training_args(tmp_path, do_train=True, max_steps=5))
    assert [row["target"] for row in splits["train"]] == ["0", "1", "2"]  # the stream's first rows


@pytest.mark.parametrize("text, message", [
    ("source\ttarget\n1\tone\n2\t\n", r"`--train_file` \S+ line 3, column 'target' \(`--target_column`\): the cell is "
                                      r"empty; it must be a non-empty string\."),
    ("source\ttarget\n1\tone\n2\ttwo\tthree\n", r"line 3 has 3 field\(s\) but the header \(line 1\) has 2"),
    ("source\tde\n1\tone\n", r"`--target_column` 'target' is not a column of the train data; its columns are "
                             r"\['source', 'de'\]"),
    ("source\ttarget\n", r"`--train_file` \S+ has no rows\."),
])
def test_a_bad_row_is_named_by_file_line_and_column(text, message, tmp_path):
    path = tmp_path / "train.tsv"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        list(open_stream(DataTrainingArguments(train_file=str(path), streaming=True)))


def test_streaming_is_refused_where_it_cannot_work(tmp_path):
    path = tmp_path / "train.json"
    path.write_text(json.dumps([{"source": "a", "target": "b"}]))
    with pytest.raises(ValueError, match=r"`--streaming` reads `--train_file` line by line: it must end in one of "
                                         r"\['.csv', '.tsv', '.jsonl'\], got '\S+train.json' \(write a .json list"):
        open_stream(DataTrainingArguments(train_file=str(path), streaming=True))
    data_args = DataTrainingArguments(test_file=str(path), streaming=True)
    with pytest.raises(ValueError, match="`--streaming` streams the training split: give `--train_file` or"):
        open_stream(data_args)
    for values in ({"do_train": True}, {"do_train": False, "max_steps": 5}):
        with pytest.raises(ValueError, match=r"`--streaming` .* needs `--do_train` and `--max_steps` > 0 \(got "
                                             rf"--do_train {values['do_train']}, --max_steps "):
            requested_splits({}, data_args, training_args(tmp_path, **values))
    with pytest.raises(ValueError, match="`--streaming` trains the seq2seq task on a stream; this task reads its data "
                                         "into memory: leave `--streaming` out."):
        load_raw_splits(ClassificationDataArguments(train_file=str(path), streaming=True))
    with pytest.raises(ValueError, match="`--shuffle_buffer_size` must be a positive number of examples, got 0."):
        TrainingStream(numbered_stream(tmp_path, 3), training_args(tmp_path), buffer_size=0)
    with pytest.raises(ValueError, match="leave `--dataloader_num_workers` at 0, got 2."):  # each would read it all
        TrainingStream(numbered_stream(tmp_path, 3), training_args(tmp_path, dataloader_num_workers=2), buffer_size=4)


def numbered_stream(tmp_path: Path, count: int):
    path = tmp_path / "numbers.tsv"
    path.write_text("source\ttarget\n" + "".join(f"{k}\tt{k}\n" for k in range(count)))
    return open_stream(DataTrainingArguments(train_file=str(path), streaming=True)).map(
        lambda row: {"id": int(row["source"])}, remove_columns=["source", "target"])


def first_ids(stream: TrainingStream, count: int) -> list[int]:
    rows = iter(stream)
    return [next(rows)["id"] for _ in range(count)]


def test_each_row_comes_once_per_pass_in_an_order_set_by_the_seed(tmp_path):
    rows = numbered_stream(tmp_path, 10)
    ids = first_ids(TrainingStream(rows, training_args(tmp_path, seed=3), buffer_size=4), 30)
    passes = [ids[k:k + 10] for k in (0, 10, 20)]
    assert all(sorted(one_pass) == list(range(10)) for one_pass in passes)
    assert passes[0] != list(range(10)) and passes[0] != passes[1] != passes[2]  # shuffled, anew each pass
    assert first_ids(TrainingStream(rows, training_args(tmp_path, seed=3), buffer_size=4), 30) == ids
    assert first_ids(TrainingStream(rows, training_args(tmp_path, seed=4), buffer_size=4), 30) != ids
    assert first_ids(TrainingStream(rows, training_args(tmp_path, seed=4, data_seed=3), buffer_size=4), 30) == ids


def test_processes_share_out_each_global_batch(tmp_path):
    """Under DDP (accelerate's prepare_data_loader, as Trainer calls it, dispatch_batches off) process k of 2 trains
    on the k-th half of each global batch of the one stream: every row once per pass, none twice."""
    args = training_args(tmp_path, seed=1)
    stream = TrainingStream(numbered_stream(tmp_path, 12), args, buffer_size=5)
    assert args.accelerator_config.dispatch_batches is False  # it would concatenate batches of unlike lengths
    order = first_ids(stream, 24)
    shares = []
    for process in range(2):
        loader = prepare_data_loader(torch.utils.data.DataLoader(stream, batch_size=3), num_processes=2,
                                     process_index=process, put_on_device=False, dispatch_batches=False)
        batches = iter(loader)
        shares.append([next(batches)["id"].tolist() for _ in range(4)])
    for step in range(4):  # global batch `step`: rows 6·step ... 6·step + 5 of the stream
        assert shares[0][step] + shares[1][step] == order[6 * step:6 * step + 6]
    assert sorted(sum(shares[0][:2] + shares[1][:2], [])) == list(range(12))  # the first pass, once each


def train_numbers(tmp_path: Path, output: str, *flags: str) -> dict[str, torch.Tensor]:
    """A tiny RNN trained 8 steps of 4 rows on a streamed 10-row file (3.2 passes), a checkpoint every 4 steps."""
    from training.run_seq2seq import main

    corpus = tmp_path / "train.tsv"
    if not corpus.exists():
        corpus.write_text("source\ttarget\n" + "".join(f"{k * 37}\t{k * 37:,}\n" for k in range(10)))
    main(["--preset", "rnnsearch", "--config_overrides", "hidden_size=16,embedding_size=8,dropout=0",
          "--train_file", str(corpus), "--streaming", "--shuffle_buffer_size", "4", "--do_train", "--max_steps", "8",
          "--per_device_train_batch_size", "4", "--learning_rate", "0.05", "--save_steps", "4", "--seed", "1",
          "--num_pictures", "0", "--report_to", "none", "--output_dir", str(tmp_path / output), *flags])
    return load_file(tmp_path / output / "model.safetensors")


@pytest.mark.slow
def test_a_resumed_run_trains_on_the_examples_the_uninterrupted_run_did(tmp_path):
    whole = train_numbers(tmp_path, "whole")
    resumed = train_numbers(tmp_path, "resumed", "--resume_from_checkpoint", str(tmp_path / "whole/checkpoint-4"))
    halfway = load_file(tmp_path / "whole/checkpoint-4/model.safetensors")
    for name in whole:  # the same examples in the same order through the same float32 operations
        torch.testing.assert_close(resumed[name], whole[name], rtol=1e-6, atol=1e-7)
    assert max((whole[name] - halfway[name]).abs().max() for name in whole) > 1e-2  # steps 5-8 moved the weights
    # Trainer would train steps 5-8 on the stream's first examples without skipping those the checkpoint saw:
    replayed = train_numbers(tmp_path, "replayed", "--resume_from_checkpoint", str(tmp_path / "whole/checkpoint-4"),
                             "--ignore_data_skip")
    assert max((whole[name] - replayed[name]).abs().max() for name in whole) > 1e-3


MEASURE = """
import json, resource, subprocess, sys
subprocess.run([sys.executable, "-m", "training", "seq2seq", *sys.argv[2:]], cwd=sys.argv[1], check=True,
               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(json.dumps({"peak_mib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""


def write_number_pairs(path: Path, count: int) -> None:
    """``count`` pairs "1234567" -> "1,234,567" (numbers below ten million), one a line."""
    with path.open("w") as file:
        file.write("source\ttarget\n")
        for k in range(count):
            number = k * 7919 % 10_000_000
            file.write(f"{number}\t{number:,}\n")


def peak_memory(tmp_path: Path, corpus: Path, *flags: str) -> float:
    """Peak resident memory (MiB) of a 5-step training run on ``corpus`` in a fresh process."""
    script = tmp_path / "measure.py"
    script.write_text(textwrap.dedent(MEASURE))
    argv = ["--preset", "rnnsearch", "--config_overrides", "hidden_size=32,embedding_size=16", "--train_file",
            str(corpus), "--do_train", "--max_steps", "5", "--per_device_train_batch_size", "32", "--num_pictures",
            "0", "--report_to", "none", "--save_strategy", "no", "--output_dir", str(tmp_path / "out"), *flags]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HOME": str(tmp_path / "hf_home"), "HF_HUB_OFFLINE": "1"}
    result = subprocess.run([sys.executable, str(script), str(REPOSITORY), *argv], env=env, capture_output=True,
                            text=True, timeout=900, check=True)
    return json.loads(result.stdout)["peak_mib"]


@pytest.mark.slow
def test_streaming_memory_does_not_grow_with_the_corpus(tmp_path):
    """Peak memory of a short run streamed from 200,000 and 2,000,000 pairs is the same within 5 % (27 MiB; read into
    memory, the 1.8 million more pairs would add about ten times the 66 MiB that 180,000 add), while a corpus read
    into memory grows with it: at 200,000 pairs it takes more than the stream of 2,000,000."""
    corpora = {}
    for count in (20_000, 200_000, 2_000_000):
        corpora[count] = tmp_path / f"pairs-{count}.tsv"
        write_number_pairs(corpora[count], count)
    streamed = {count: peak_memory(tmp_path, corpora[count], "--streaming") for count in (200_000, 2_000_000)}
    in_memory = {count: peak_memory(tmp_path, corpora[count]) for count in (20_000, 200_000)}
    print(f"peak resident memory (MiB): streamed {streamed}, in memory {in_memory}")
    assert abs(streamed[2_000_000] - streamed[200_000]) < 0.05 * streamed[200_000]
    assert in_memory[200_000] - in_memory[20_000] > 30  # measured: 542.5 -> 608.7 MiB
    assert streamed[2_000_000] < in_memory[200_000] - 30  # ten times the pairs, streamed: measured 549.9 MiB


def train_on_a_stream(tmp_path: Path, output: str, processes: int, rows_per_process: int) -> dict[str, torch.Tensor]:
    """3 steps of plain SGD (no dropout, no clipping) on a streamed 16-row file, under torchrun with ``processes``."""
    corpus = tmp_path / "train.tsv"
    if not corpus.exists():
        corpus.write_text("source\ttarget\n" + "".join(f"{k * 37}\t{k * 37:,}\n" for k in range(16)))
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(processes),
               "-m", "training", "seq2seq", "--preset", "rnnsearch", "--config_overrides",
               "hidden_size=16,embedding_size=8,dropout=0", "--train_file", str(corpus), "--streaming",
               "--shuffle_buffer_size", "5", "--do_train", "--max_steps", "3", "--per_device_train_batch_size",
               str(rows_per_process), "--optim", "sgd", "--learning_rate", "0.5", "--lr_scheduler_type", "constant",
               "--max_grad_norm", "1e9", "--save_strategy", "no", "--seed", "0", "--num_pictures", "0",
               "--report_to", "none", "--use_cpu", "true", "--output_dir", str(tmp_path / output)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HOME": str(tmp_path / "hf_home"), "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(command, cwd=REPOSITORY, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    return load_file(tmp_path / output / "model.safetensors")


@pytest.mark.slow
def test_two_processes_train_on_the_rows_one_process_trains_on_with_their_batches_together(tmp_path):
    two = train_on_a_stream(tmp_path, "two", processes=2, rows_per_process=4)
    one = train_on_a_stream(tmp_path, "one", processes=1, rows_per_process=8)
    half = train_on_a_stream(tmp_path, "half", processes=1, rows_per_process=4)  # other rows at each step
    # The same 8 rows each step, their token losses summed in another order (the all-reduce adds the halves): float32
    # sums of a few hundred terms differ by ~1e-7 of the gradient, and SGD moves the weights (~0.1) by 0.5 times it.
    for name in one:
        torch.testing.assert_close(two[name], one[name], rtol=0, atol=1e-5)
    assert max((one[name] - half[name]).abs().max() for name in one) > 1e-3
