"""The pointer task (training/tasks/pointer.py, run as training/run_pointer.py) end to end: generated data or files,
training, the paper's metrics per test n, the pointing pictures, the model card, and the folder loading with
AutoModel; bad arguments refused by name."""

import json

import datasets
import pytest
import torch
from transformers import AutoModel

from child_process import run_script
from hf_bahdanau import BahdanauForPointerNetwork
from training import run_pointer
from training.tasks import pointer
from training.data.pointer_tasks import make_dataset

FAST = ["--hidden_size", "16", "--embedding_size", "8", "--per_device_train_batch_size", "32",
        "--per_device_eval_batch_size", "64", "--learning_rate", "0.003", "--logging_steps", "10",
        "--save_strategy", "no", "--report_to", "none", "--seed", "0"]


@pytest.mark.slow
def test_convex_hull_run_writes_a_model_with_metrics_card_and_pictures(tmp_path, capsys):
    run_pointer.main(["--task", "convex_hull", "--train_n", "4-6", "--eval_n", "5", "--test_n", "4,7",
                      "--train_size", "320", "--eval_size", "20", "--test_size", "20", "--max_steps", "20",
                      "--num_beams", "2", "--do_train", "--do_eval", "--do_predict", "--output_dir", str(tmp_path),
                      *FAST])
    usage = capsys.readouterr().out.strip().splitlines()[-1].split("; use it with: ", 1)[1]
    assert usage.startswith(f'import hf_bahdanau, torch, transformers; transformers.AutoModel.from_pretrained('
                            f'"{tmp_path}").generate(input_features=torch.tensor([[[')
    exec(usage, {})  # runs as printed, on the first test row
    results = json.loads((tmp_path / "all_results.json").read_text())
    for prefix in ("eval_", "predict_n4_", "predict_n7_"):
        assert 0 <= results[f"{prefix}accuracy"] <= 100 and 0 <= results[f"{prefix}invalid_fraction"] <= 100  # %
        assert 0 <= results[f"{prefix}area_coverage"] <= 100
    assert (tmp_path / "alignment_pointing_0.png").is_file() and (tmp_path / "alignment_pointing_1.png").is_file()
    card = (tmp_path / "README.md").read_text()
    assert "Pointer Network" in card
    assert "| test (n = 7) | Accuracy |" in card and "| test (n = 4) | Area coverage |" in card
    assert "dataset_split" not in card and "split: test (n = 7)" in card  # the model-index names the split
    assert "AutoModel.from_pretrained" in card and "forbid_repeats=True" in card
    model = AutoModel.from_pretrained(tmp_path)
    assert type(model) is BahdanauForPointerNetwork and model.config.input_feature_size == 2
    # the card's usage code, without the package: it prints the positions of the example's hull
    blocks = [block.split("```")[0] for block in card.split("```python\n")[1:]]
    (remote,) = [block for block in blocks if "trust_remote_code=True" in block and "hf_bahdanau" not in block]
    printed = run_script(remote, tmp_path, isolated=True, hide_package=True)
    example = json.loads(card.split('json.loads("')[1].split('")')[0].replace('\\"', '"'))
    with torch.no_grad():
        expected = model.generate(input_features=torch.tensor([example]), forbid_repeats=True)
    assert eval(printed.strip().splitlines()[-1]) == [j - 1 for j in expected[0, 1:].tolist() if j > 0]


@pytest.mark.slow
def test_sorting_from_files_learns_to_sort_four_numbers(tmp_path):
    """A few hundred steps are enough to sort 4 numbers far above chance (1 / 4! ≈ 4%)."""
    for split, size, seed in (("train", 4000, 0), ("test", 200, 1)):
        rows = make_dataset("sorting", 4, size, seed)
        (tmp_path / f"{split}.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    run_pointer.main(["--task", "sorting", "--train_file", str(tmp_path / "train.jsonl"), "--test_file",
                      str(tmp_path / "test.jsonl"), "--max_steps", "250", "--do_train", "--do_predict",
                      "--output_dir", str(tmp_path / "model"), "--hidden_size", "32", "--embedding_size", "16",
                      *FAST[4:]])
    results = json.loads((tmp_path / "model" / "all_results.json").read_text())
    assert results["predict_exact_match"] > 50  # in percent


@pytest.mark.parametrize("flags, named", [
    (["--task", "tsp"], "--task"),
    (["--task", "convex_hull", "--train_n", "2-5"], "--train_n"),
    (["--test_n", "5,x"], "--test_n"),
    (["--train_n", "9-5"], "--train_n"),
    (["--num_beams", "0"], "--num_beams"),
    (["--num_pictures", "-1"], "--num_pictures"),
])
def test_bad_arguments_are_refused_by_name(flags, named, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:  # the message alone, as argparse does
        run_pointer.main([*flags, "--output_dir", str(tmp_path), "--do_train"])
    assert exit_info.value.code == 2 and f": error: `{named}` must be " in capsys.readouterr().err


def test_predict_reads_pointer_ids_up_to_the_end():
    torch.manual_seed(0)
    model = pointer.load_model(pointer.PointerModelArguments(hidden_size=8, embedding_size=4), "sorting")
    rows = datasets.Dataset.from_list(make_dataset("sorting", (3, 5), 7, seed=2))
    predictions = pointer.predict(model, rows, pointer.PointerDataArguments(), batch_size=3)
    assert len(predictions) == 7
    for prediction, row in zip(predictions, rows):
        n = len(row["input_features"])
        assert prediction[-1] == 0 and len(set(prediction[:-1])) == len(prediction) - 1  # forbid_repeats
        assert all(1 <= pointer <= n for pointer in prediction[:-1])


def test_files_without_the_split_a_step_needs_are_refused_before_training(tmp_path, capsys):
    rows = make_dataset("sorting", 4, 8, seed=0)
    (tmp_path / "train.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    with pytest.raises(SystemExit) as exit_info:
        run_pointer.main(["--train_file", str(tmp_path / "train.jsonl"), "--do_train", "--do_eval",
                          "--output_dir", str(tmp_path / "model"), *FAST])
    assert exit_info.value.code == 2
    assert "--do_eval needs a validation split: give `--validation_file`" in capsys.readouterr().err
    assert not (tmp_path / "model").exists()
