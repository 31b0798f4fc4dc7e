"""The training driver, ``python -m training TASK``: a new task is one file (docs/training.md's toy task, written into
a copy of ``training/``, trains, evaluates, writes its card and pictures and pushes through the driver with nothing
else edited), and what the driver promises every task: the task list, an unknown or broken task refused by name,
the shared flags, and the flags it checks for all."""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import huggingface_hub.repocard
import torch
import transformers.utils.hub
from huggingface_hub import ModelCard
from safetensors.torch import load_file
from transformers import AutoModelForSequenceClassification, AutoTokenizer, Seq2SeqTrainingArguments

import training.tasks
from child_process import SUBPROCESS_TIMEOUT, child_env, run_child
from conftest import exits_as_argparse_does
from test_hub_push import RecordingHfApi
from training.__main__ import main
from training.common.driver import best_restart, restart_metric
from training.tasks import task_names

pytestmark = pytest.mark.usefixtures("one_thread")

REPO = Path(__file__).resolve().parents[1]
SHARED_FLAGS = ("--num_pictures", "--language", "--dataset_description", "--license", "--model_name_or_path",
                "--config_overrides", "--max_train_minutes", "--torch_num_threads", "--num_restarts")
TOY_TEXTS = ["7 1 2 3 4 5", "1 2 3 4 5 6", "0 0 0 0 0 7"]
# A classification run of seconds: the bundled data, a tiny model, two steps.
TINY_CLASSIFICATION = ["classification", "training/configs/han_classifier.json", "--config_overrides",
                       "embedding_size=8,hidden_size=16,attention_size=8", "--max_train_samples", "32",
                       "--max_eval_samples", "8", "--max_predict_samples", "8", "--max_steps", "2",
                       "--per_device_train_batch_size", "8", "--eval_strategy", "no", "--logging_steps", "1",
                       "--num_pictures", "1", "--report_to", "none", "--disable_tqdm", "true"]

# Run from the copy (the folder of child.py comes first on sys.path): its driver, with the recorded Hub of
# test_hub_push.py installed, on the arguments after the first; print where `training` came from and the commits.
TRAIN_WITH_RECORDED_HUB = """
    import json
    import sys
    from pathlib import Path

    import huggingface_hub.repocard
    import transformers.utils.hub

    import training
    from test_hub_push import RecordingHfApi
    from training.__main__ import main

    hub = RecordingHfApi(Path(sys.argv[1]))
    transformers.utils.hub._hf_api = hub
    huggingface_hub.repocard.hf_hub_download = hub.download
    main(sys.argv[2:])
    print(json.dumps({"training": training.__file__,
                      "commits": [[commit.message, commit.paths, str(commit.snapshot)] for commit in hub.commits]}))
"""

CLASSIFY = """
    import json
    import sys

    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    folder, texts = sys.argv[1], json.loads(sys.argv[2])
    tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=True)
    model = AutoModelForSequenceClassification.from_pretrained(folder, trust_remote_code=True).eval()
    with torch.no_grad():
        logits = model(**tokenizer(texts, return_tensors="pt", padding=True)).logits
    print(json.dumps({"module": type(model).__module__, "logits": logits.tolist()}))
"""


def toy_task_source() -> str:
    """The task file of docs/training.md's "Add a task", exactly as written there."""
    blocks = re.findall(r"```python\n(.*?)```", (REPO / "docs" / "training.md").read_text(), re.DOTALL)
    (source,) = [block for block in blocks if "\nTASK = " in block]
    return source


def copy_training(root: Path) -> Path:
    """``training/`` copied into ``root`` without its bundled data folders (the toy task generates its data)."""
    data = REPO / "training" / "data"

    def left_out(folder: str, names: list[str]) -> list[str]:
        return [name for name in names if name == "__pycache__" or (Path(folder) == data and (data / name).is_dir())]

    shutil.copytree(REPO / "training", root / "training", ignore=left_out)
    return root


@pytest.mark.slow
def test_a_task_is_one_file_that_trains_evaluates_writes_its_card_and_pushes_through_the_driver(tmp_path):
    repo = copy_training(tmp_path / "repo")
    (repo / "training" / "tasks" / "toy.py").write_text(toy_task_source())
    listed = subprocess.run([sys.executable, "-m", "training", "--help"], cwd=repo, env=child_env(tmp_path),
                            capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT)
    assert listed.returncode == 0 and "toy" in re.search(r"tasks: (.*)", listed.stdout)[1].split(", ")

    output = tmp_path / "toy"
    run = run_child(TRAIN_WITH_RECORDED_HUB, tmp_path, str(tmp_path / "hub"), "toy", "--do_train", "--do_eval",
                    "--do_predict", "--train_size", "128", "--eval_size", "16", "--learning_rate", "0.01",
                    "--max_steps", "16", "--per_device_train_batch_size", "8", "--logging_steps", "4",
                    "--num_pictures", "2", "--save_strategy", "steps", "--save_steps", "8", "--push_to_hub",
                    "--hub_model_id", "user/toy", "--hub_always_push", "true", "--report_to", "none",
                    "--disable_tqdm", "true", "--output_dir", str(output), name="repo",
                    PYTHONPATH=str(REPO / "tests"))
    assert Path(run["training"]).is_relative_to(repo)  # the copy's driver ran, with the one file added there

    losses = [entry["loss"] for entry in json.loads((output / "trainer_state.json").read_text())["log_history"]
              if "loss" in entry]
    assert len(losses) == 4
    results = json.loads((output / "all_results.json").read_text())
    assert 0 <= results["eval_accuracy"] <= 100 and results["predict_samples"] == 16
    predictions = (output / "predictions.txt").read_text().splitlines()
    assert len(predictions) == 16 and set(predictions) <= {"no 7", "has 7"}
    pictures = {"training_curve.png", "attention_0.png", "attention_1.png"}
    assert {path.name for path in output.glob("*.png")} == pictures
    card = (output / "README.md").read_text()
    assert "pipeline_tag: text-classification" in card and "type: accuracy" in card
    assert all(f"]({picture})" in card for picture in pictures)

    messages = [message for message, _, _ in run["commits"]]
    assert [message for message in messages if message.startswith("Training in progress")] == [
        "Training in progress, step 8", "Training in progress, step 16"]
    loadable = {"config.json", "model.safetensors", "tokenizer.json", "modeling_sequence_classification.py",
                "configuration_encoder_only.py"}
    assert all(loadable <= set(paths) for _, paths, _ in run["commits"]), messages  # every upload, checkpoints too
    last_message, last_paths, snapshot = run["commits"][-1]
    assert last_message == "End of training" and loadable | pictures | {"README.md"} <= set(last_paths)
    assert (Path(snapshot) / "README.md").read_text() == card

    loaded = run_child(CLASSIFY, tmp_path, snapshot, json.dumps(TOY_TEXTS), isolated=True, hide_package=True)
    assert loaded["module"].startswith("transformers_modules.")
    tokenizer = AutoTokenizer.from_pretrained(output)
    model = AutoModelForSequenceClassification.from_pretrained(output).eval()
    with torch.no_grad():
        expected = model(**tokenizer(TOY_TEXTS, return_tensors="pt", padding=True)).logits
    torch.testing.assert_close(torch.tensor(loaded["logits"]), expected)


@pytest.mark.parametrize("argv", [[], ["--help"]], ids=["no arguments", "--help"])
def test_the_driver_lists_every_task(argv, capsys):
    main(argv)
    listed = re.search(r"tasks: (.*)", capsys.readouterr().out)[1].split(", ")
    assert listed == task_names() and "classification" in listed
    assert task_names() == sorted(path.stem.replace("_", "-") for path in (REPO / "training" / "tasks").glob("*.py")
                                  if not path.stem.startswith("_"))


def test_an_unknown_task_exits_2_naming_the_tasks(capsys):
    error = exits_as_argparse_does(lambda: main(["no-such-task", "--do_train"]), "'no-such-task'", capsys)
    assert error.startswith("python -m training: error: ") and all(name in error for name in task_names())


def test_a_task_file_without_TASK_is_refused_naming_the_file(tmp_path, monkeypatch, capsys):
    (tmp_path / "half_done.py").write_text('"""A task file that does not define TASK yet."""\n')
    monkeypatch.setattr(training.tasks, "__path__", [*training.tasks.__path__, str(tmp_path)])
    monkeypatch.setattr(training.tasks, "half_done", None, raising=False)  # removed again with the import's module
    try:
        assert "half-done" in task_names()
        error = exits_as_argparse_does(lambda: main(["half-done", "--help"]), "training/tasks/half_done.py", capsys)
    finally:
        sys.modules.pop("training.tasks.half_done", None)
    assert "must define TASK" in error


def test_predict_with_generate_is_refused_for_a_task_that_does_not_generate(tmp_path, capsys):
    error = exits_as_argparse_does(
        lambda: main(["classification", "--predict_with_generate", "true", "--output_dir", str(tmp_path)]),
        "--predict_with_generate", capsys)
    assert "classification task" in error


@pytest.mark.parametrize("task", task_names())
def test_every_task_has_the_shared_flags(task, capsys):
    with pytest.raises(SystemExit) as caught:
        main([task, "--help"])
    assert caught.value.code == 0
    shown = capsys.readouterr().out
    assert shown.startswith(f"usage: python -m training {task} ")
    assert [flag for flag in SHARED_FLAGS if f"{flag} " not in shown] == []


@pytest.mark.parametrize("task", task_names())
@pytest.mark.parametrize("flag", ["--max_train_minutes", "--torch_num_threads"])
def test_every_task_refuses_a_budget_or_thread_count_of_0(task, flag, capsys):
    exits_as_argparse_does(lambda: main([task, flag, "0"]), flag, capsys)


@pytest.mark.slow
def test_restarts_keep_each_run_and_make_the_output_folder_the_best_by_validation(tmp_path, monkeypatch):
    hub = RecordingHfApi(tmp_path / "hub")
    monkeypatch.setattr(transformers.utils.hub, "_hf_api", hub)
    monkeypatch.setattr(huggingface_hub.repocard, "hf_hub_download", hub.download)
    monkeypatch.chdir(REPO)  # the config names the bundled data from the repository's root
    output = tmp_path / "out"
    main([*TINY_CLASSIFICATION, "--num_restarts", "3", "--seed", "5", "--push_to_hub", "--hub_model_id", "user/tiny",
          "--output_dir", str(output)])

    summary = json.loads((output / "restarts.json").read_text())
    folders = [output / f"restart-{k}" for k in range(3)]
    assert [entry["folder"] for entry in summary["restarts"]] == [folder.name for folder in folders]
    assert [entry["seed"] for entry in summary["restarts"]] == [5, 6, 7]
    assert [torch.load(folder / "training_args.bin", weights_only=False).seed for folder in folders] == [5, 6, 7]
    losses = [json.loads((folder / "eval_results.json").read_text())["eval_loss"] for folder in folders]
    assert [entry["eval_loss"] for entry in summary["restarts"]] == losses
    assert summary["metric_for_best_model"] == "eval_loss" and summary["greater_is_better"] is False
    chosen = summary["chosen"]
    assert losses[chosen] == min(losses) and len(set(losses)) == 3  # three different runs, the lowest loss chosen
    for folder in folders:  # each restart is a whole run
        assert {"model.safetensors", "README.md", "all_results.json", "predictions.txt", "attention_0.png",
                "training_curve.png", "run_arguments.json"} <= {path.name for path in folder.iterdir()}

    weights = [load_file(folder / "model.safetensors") for folder in folders]
    top = load_file(output / "model.safetensors")
    assert top.keys() == weights[chosen].keys()
    assert all(torch.equal(top[name], weights[chosen][name]) for name in top)
    assert all(any(not torch.equal(top[name], other[name]) for name in top)
               for k, other in enumerate(weights) if k != chosen)
    results = json.loads((folders[chosen] / "all_results.json").read_text())
    assert json.loads((output / "all_results.json").read_text()) == results
    card = ModelCard.load(output / "README.md")
    card_metrics = {(result.dataset_split, result.metric_type): result.metric_value
                    for result in card.data.eval_results}
    prefixes = {"validation": "eval", "test": "predict"}  # the card's split names for Trainer's prefixes
    assert card_metrics and card_metrics == {(split, name): round(results[f"{prefixes[split]}_{name}"], 4)
                                             for split, name in card_metrics}
    assert "user/tiny" in card.text and "restart-" not in card.text  # the card is the top folder's

    (push,) = hub.commits  # only the chosen run, from the top folder: no restart's checkpoints or folders
    assert push.message == "End of training" and "restarts.json" in push.paths
    assert not any(path.startswith("restart-") for path in push.paths)
    pushed = (Path(push.snapshot) / "model.safetensors").read_bytes()
    assert pushed == (folders[chosen] / "model.safetensors").read_bytes()


@pytest.mark.slow
def test_restarts_under_torchrun_train_each_run_on_both_processes_and_choose_once(tmp_path):
    output = tmp_path / "ddp"
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "-m", "training",
                           *TINY_CLASSIFICATION, "--num_restarts", "2", "--output_dir", str(output)],
                          cwd=REPO, env=child_env(tmp_path), capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT)
    assert done.returncode == 0, done.stderr[-3000:]
    folders = [output / "restart-0", output / "restart-1"]
    # 2 steps of 8 rows on each of 2 processes: one epoch of the 32 training rows, in each restart
    assert [json.loads((folder / "trainer_state.json").read_text())["epoch"] for folder in folders] == [1.0, 1.0]
    summary = json.loads((output / "restarts.json").read_text())
    losses = [json.loads((folder / "eval_results.json").read_text())["eval_loss"] for folder in folders]
    assert [entry["eval_loss"] for entry in summary["restarts"]] == losses
    assert losses[summary["chosen"]] == min(losses)
    chosen = folders[summary["chosen"]]
    assert (output / "model.safetensors").read_bytes() == (chosen / "model.safetensors").read_bytes()


@pytest.mark.parametrize("flags, named", [
    (["--num_restarts", "0"], "--num_restarts"),
    (["--num_restarts", "3", "--do_eval", "false"], "--do_eval"),
    (["--num_restarts", "3", "--do_train", "false"], "--do_train"),
    (["--num_restarts", "3", "--resume_from_checkpoint", "somewhere"], "--resume_from_checkpoint"),
], ids=["0 restarts", "without --do_eval", "without --do_train", "with --resume_from_checkpoint"])
def test_restarts_are_refused_by_name_where_they_cannot_choose(flags, named, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    error = exits_as_argparse_does(lambda: main([*TINY_CLASSIFICATION, *flags, "--output_dir", str(tmp_path)]),
                                   named, capsys)
    assert "--num_restarts" in error


@pytest.mark.parametrize("metric, greater_is_better, expected", [
    (None, None, ("eval_loss", False)), ("accuracy", None, ("eval_accuracy", True)),
    ("eval_f1", None, ("eval_f1", True)), ("eval_wer", False, ("eval_wer", False)),
    ("perplexity_loss", True, ("eval_perplexity_loss", True)),
])
def test_restarts_compare_by_transformers_best_model_metric(metric, greater_is_better, expected, tmp_path):
    arguments = Seq2SeqTrainingArguments(output_dir=str(tmp_path), metric_for_best_model=metric,
                                         greater_is_better=greater_is_better)
    assert restart_metric(arguments) == expected


@pytest.mark.parametrize("values, greater_is_better, best", [
    ([0.5, 0.2, 0.7], False, 1), ([0.5, 0.2, 0.7], True, 2), ([0.3, 0.3, 0.9], False, 0),
    ([float("nan"), 0.9, 0.4], False, 2), ([float("nan"), 0.1, 0.4], True, 2), ([float("nan")] * 2, False, 0),
])
def test_the_best_restart_is_the_first_best_and_never_a_diverged_one(values, greater_is_better, best):
    assert best_restart(values, greater_is_better) == best
