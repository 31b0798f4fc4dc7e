"""Joint training on several bAbI tasks (``--babi_task 1 2``, or ``all``; training/common/babi_qa.py): one model
trained on the union of the tasks' training questions, each task's validation questions held out of its own, and the
error and hop statistics reported per task beside the overall ones."""

import json
from collections import Counter
from pathlib import Path

import pytest
from transformers import PreTrainedTokenizerFast

from conftest import exits_as_argparse_does
from hf_bahdanau import BahdanauMemoryNetworkForSequenceClassification
from hf_bahdanau.modeling.collators import DataCollatorForMemoryNetwork
from training import run_memory_qa
from training.common import babi_qa
from training.data.babi import TASKS, generate_task, task_file_name, write_babi
from training.tasks import memory_qa

pytestmark = pytest.mark.usefixtures("one_thread")

REPO = Path(__file__).resolve().parents[1]


def test_babi_task_takes_several_tasks_or_all():
    assert babi_qa.BabiDataArguments().tasks == [1]
    assert babi_qa.BabiDataArguments(babi_task=["2", "1"]).tasks == [2, 1]
    assert babi_qa.BabiDataArguments(babi_task=["all"]).tasks == list(TASKS)
    assert babi_qa.BabiDataArguments(babi_task=3).tasks == [3]  # one task from Python, as before
    for values, message in ((["1", "21"], "`--babi_task` must be one of"), (["x"], "got 'x'"),
                            (["all", "1"], "got 'all'"), (["2", "1", "2"], "`--babi_task` names task 2 twice")):
        with pytest.raises(ValueError, match=message):
            babi_qa.BabiDataArguments(babi_task=values)


@pytest.mark.parametrize("source, flags", [
    ("`--train_file`", ["--train_file", "qa1_train.txt", "--test_file", "qa1_test.txt"]),
    ("`--dataset_name`", ["--dataset_name", "facebook/babi_qa", "--dataset_config_name", "en-qa1"]),
])
def test_a_source_of_one_task_refuses_several_by_name(source, flags, tmp_path, capsys):
    error = exits_as_argparse_does(lambda: run_memory_qa.main(["--babi_task", "1", "2", *flags, "--output_dir",
                                                               str(tmp_path)]), "`--babi_task` 1 2", capsys)
    assert f"names several tasks, and {source} gives one task's questions" in error


def test_bad_task_numbers_are_refused_on_the_command_line(tmp_path, capsys):
    error = exits_as_argparse_does(lambda: run_memory_qa.main(["--babi_task", "1", "21", "--output_dir",
                                                               str(tmp_path)]), "`--babi_task`", capsys)
    assert f"must be one of {list(TASKS)} (one or several), or all, got '21'." in error


def test_a_babi_dir_without_a_task_s_files_is_named(tmp_path):
    (tmp_path / "en").mkdir()
    write_babi(tmp_path / "en" / task_file_name(1, "train"), generate_task(1, 4, seed=0))
    write_babi(tmp_path / "en" / task_file_name(1, "test"), generate_task(1, 2, seed=1))
    data_args = babi_qa.BabiDataArguments(babi_dir=str(tmp_path), babi_task=["1", "2"])
    missing = r"\['qa2_two-supporting-facts_train.txt', 'qa2_two-supporting-facts_test.txt'\]"
    with pytest.raises(ValueError, match=rf"`--babi_dir` .* lacks the files of `--babi_task` 1 2 in en/: {missing}"):
        babi_qa.read_questions(data_args)


def test_the_generated_tasks_are_joined_and_each_holds_out_its_own_validation_questions():
    """--babi_task 1 2 from the generator: each task's first 50 training questions (--max_train_samples counts per
    task), 10% of each held out; the tests one task after the other; the answers of both."""
    joint = babi_qa.read_questions(babi_qa.BabiDataArguments(babi_task=["1", "2"], max_train_samples=50,
                                                             max_predict_samples=20))
    assert Counter(example.task for example in joint.train) == {1: 45, 2: 45}
    assert Counter(example.task for example in joint.validation) == {1: 5, 2: 5}
    assert [example.task for example in joint.test] == [1] * 20 + [2] * 20
    alone = {task: babi_qa.read_questions(babi_qa.BabiDataArguments(babi_task=[str(task)], max_train_samples=50,
                                                                    max_predict_samples=20)) for task in (1, 2)}
    for task, questions in alone.items():  # each task's split is the one it gets alone
        assert [example for example in joint.train if example.task == task] == questions.train
        assert [example for example in joint.validation if example.task == task] == questions.validation
    assert joint.answers == sorted(set(alone[1].answers) | set(alone[2].answers))


def test_a_joint_run_reports_each_task_on_its_own_questions(tmp_path, monkeypatch):
    """Two tasks of Facebook's layout (--babi_dir: generated stories, 24 and 12 test questions), one model: the
    training set holds both tasks' questions; predict_error_task_<n> is the error over task n's lines of
    predictions.txt, predict_error their question-weighted mean; each task's hop statistics are those of its test
    questions alone."""
    monkeypatch.chdir(REPO)
    for task, (train, test) in {1: (60, 24), 2: (40, 12)}.items():
        (tmp_path / "en").mkdir(exist_ok=True)
        for split, count, seed in (("train", train, 0), ("test", test, 1)):
            write_babi(tmp_path / "en" / task_file_name(task, split), generate_task(task, count, seed=seed))
    output = tmp_path / "run"
    run_memory_qa.main(["training/configs/babi_memn2n.json", "--babi_dir", str(tmp_path), "--babi_task", "1", "2",
                        "--num_train_epochs", "2", "--disable_tqdm", "true", "--num_pictures", "0",
                        "--output_dir", str(output)])
    results = json.loads((output / "all_results.json").read_text())
    questions = babi_qa.read_questions(babi_qa.BabiDataArguments(babi_dir=str(tmp_path), babi_task=["1", "2"]))
    assert Counter(example.task for example in questions.train) == {1: 54, 2: 36}
    assert results["train_samples"] == 90 and results["eval_samples"] == 10 and results["predict_samples"] == 36
    predicted = (output / "predictions.txt").read_text().splitlines()
    counts, errors = {}, {}
    for task in (1, 2):
        pairs = [(line, example.answer) for line, example in zip(predicted, questions.test) if example.task == task]
        counts[task] = len(pairs)
        errors[task] = 100 * sum(line != answer for line, answer in pairs) / len(pairs)
        assert results[f"predict_error_task_{task}"] == pytest.approx(errors[task])
        assert results[f"predict_accuracy_task_{task}"] == pytest.approx(100 - errors[task])
    assert counts == {1: 24, 2: 12}
    assert results["predict_error"] == pytest.approx((24 * errors[1] + 12 * errors[2]) / 36)
    assert results["eval_error"] == pytest.approx((6 * results["eval_error_task_1"] + 4 * results["eval_error_task_2"])
                                                  / 10)
    tokenizer = PreTrainedTokenizerFast.from_pretrained(output)  # one vocabulary and answer set over both tasks
    assert {"kitchen", "football"} <= set(tokenizer.get_vocab())
    model = BahdanauMemoryNetworkForSequenceClassification.from_pretrained(output)
    task_2 = babi_qa.features([example for example in questions.test if example.task == 2], tokenizer,
                              questions.answers, memory_qa.memory_rows, 50)
    rates, _ = memory_qa.hop_statistics(model, task_2, DataCollatorForMemoryNetwork(tokenizer.pad_token_id, 50), 256)
    assert rates == pytest.approx({name: results[f"predict_{name}_task_2"] for name in rates})
    assert {"predict_hop_1_on_support_task_1", "predict_supports_covered_task_1"} <= set(results)
