"""training/run_image_to_text.py and its pieces: the collator, the metrics, the time budget, the table, a short run."""

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from child_process import SUBPROCESS_TIMEOUT, child_env
from conftest import exits_as_argparse_does
from huggingface_hub import ModelCard
from transformers import TrainerControl, TrainerState, TrainingArguments

from hf_bahdanau import BahdanauImageProcessor
from hf_bahdanau.modeling.collators import DataCollatorForImageToText
from training.tables import image_text
from training.run_image_to_text import main
from training.tasks import image_to_text
from training.tasks.image_to_text import text_metrics
from training.common.tokenization import train_tokenizer
from training.common.training_clock import TrainingBudgetCallback


def test_the_collator_reads_images_and_pads_labels_with_minus_100():
    tokenizer = train_tokenizer(["0123456789"], kind="char")
    collator = DataCollatorForImageToText(BahdanauImageProcessor(size={"height": 4}), tokenizer)
    images = [np.full((4, 6), 255, dtype=np.uint8), np.zeros((8, 4), dtype=np.uint8)]
    batch = collator([{"image": images[0], "text": "407"}, {"image": images[1], "text": "9"}])
    assert batch["pixel_values"].shape == (2, 1, 4, 6)  # the second image: 8×4 resized to 4×2
    assert batch["pixel_mask"].tolist() == [[[1] * 6] * 4, [[1, 1, 0, 0, 0, 0]] * 4]
    assert torch.equal(batch["pixel_values"][0], torch.ones(1, 4, 6))  # (255/255 − 0.5) / 0.5
    assert torch.equal(batch["pixel_values"][1, :, :, :2], -torch.ones(1, 4, 2))
    ids = tokenizer.convert_tokens_to_ids(list("4079"))
    eos = tokenizer.eos_token_id
    assert batch["labels"].tolist() == [[ids[0], ids[1], ids[2], eos], [ids[3], eos, -100, -100]]
    assert "labels" not in collator([{"image": images[0]}])  # images alone: for generate()
    with pytest.raises(ValueError, match="no 'image' column"):
        collator([{"picture": images[0], "text": "1"}])
    with pytest.raises(ValueError, match="empty"):
        collator([])


def test_text_metrics_by_hand():
    # "4071" vs "407": one insertion; "12" vs "13": one substitution; "5" right -> CER 2 / (3 + 2 + 1); in percent
    metrics = text_metrics(["4071", "12", "5"], ["407", "13", "5"])
    assert metrics["sequence_accuracy"] == pytest.approx(100 / 3)
    assert metrics["cer"] == pytest.approx(200 / 6)


def test_the_budget_stops_training_after_its_minutes_without_the_evaluations(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr("training.common.training_clock.time.perf_counter", lambda: now[0])
    budget, control = TrainingBudgetCallback(minutes=1), TrainerControl()
    args, state = TrainingArguments(output_dir="unused", report_to="none"), TrainerState()
    budget.on_train_begin(args, state, control)
    now[0] += 50
    budget.on_log(args, state, control, logs={"eval_runtime": 20.0})  # 50 s spent, 20 s of it evaluating
    now[0] += 35  # 85 − 20 = 65 s of training > 60
    budget.on_step_end(args, state, control)
    assert control.should_training_stop
    control = TrainerControl()
    budget.on_train_begin(args, state, control)
    now[0] += 59
    budget.on_step_end(args, state, control)
    assert not control.should_training_stop
    with pytest.raises(ValueError, match="minutes"):
        TrainingBudgetCallback(minutes=0)


def test_the_table_reads_finished_runs(tmp_path):
    folder = tmp_path / "digits" / "soft"
    folder.mkdir(parents=True)
    (folder / "all_results.json").write_text(json.dumps({
        "predict_sequence_accuracy": 81.25, "predict_cer": 6.25, "predict_long_sequence_accuracy": 50.0,
        "predict_long_cer": 12.5}))
    (folder / "trainer_state.json").write_text(json.dumps({"global_step": 300, "log_history": [
        {"loss": 1.0, "training_minutes": 3.5}, {"loss": 0.5, "training_minutes": 7.25}, {"eval_loss": 0.4}]}))
    results = image_text.TABLE.results(["--output_dir", str(tmp_path), "--tasks", "digits", "words", "--settings",
                                        "soft", "none"])
    assert results == {"digits": {"soft": {"sequence_accuracy": 81.2, "cer": 6.2, "long_sequence_accuracy": 50.0,
                                           "long_cer": 12.5, "steps": 300, "train_minutes": 7.25}}}
    assert image_text.TABLE.markdown(results, None).splitlines()[2] == (
        "| digits | soft | 81.2 | 6.2 | 50.0 | 12.5 | 300 | 7.25 |")


SHORT_RUN = ["--do_train", "--do_eval", "--do_predict", "--predict_with_generate", "--max_train_samples", "64",
             "--max_eval_samples", "8", "--max_predict_samples", "8", "--max_steps", "10",
             "--per_device_train_batch_size", "16", "--per_device_eval_batch_size", "8", "--report_to", "none",
             "--logging_steps", "5", "--save_strategy", "no", "--explorer_examples", "3", "--disable_tqdm", "true",
             "--config_overrides", "hidden_size=16,embedding_size=8,attention_size=8,output_size=8,cnn_channels=[4,8],"
                                   "cnn_pool_sizes=[[2,2],[2,2]],doubly_stochastic_weight=0.5"]


def printed_usage(capsys) -> str:
    """The code of the run's last line, "... use it with: CODE"."""
    return capsys.readouterr().out.strip().splitlines()[-1].split("; use it with: ", 1)[1]


def test_a_short_run_writes_the_folder(tmp_path, monkeypatch, capsys):
    """Ten steps on a few generated strips: the model, processor, tokenizer, metrics on the test and longer test
    strips, predictions, attention pictures, the explorer page and the card; the folder answers through the
    pipeline, and the last line's usage code runs as printed where the script ran (a relative --output_dir)."""
    monkeypatch.chdir(tmp_path)
    output = tmp_path / "run"
    main(["--output_dir", "run", "--num_pictures", "1", *SHORT_RUN])
    usage = printed_usage(capsys)
    assert usage == ('import hf_bahdanau, transformers; transformers.pipeline(model="run", trust_remote_code=True)'
                     '("run/example_0.png")')
    exec(usage, {})  # runs as printed, from where the script ran
    results = json.loads((output / "all_results.json").read_text())
    for name in ("eval_sequence_accuracy", "eval_cer", "predict_sequence_accuracy", "predict_cer",
                 "predict_long_sequence_accuracy", "predict_long_cer"):
        assert 0 <= results[name] and math.isfinite(results[name]), name
    assert len((output / "predictions.txt").read_text().splitlines()) == 8
    for name in ("model.safetensors", "preprocessor_config.json", "tokenizer.json", "attention_0.png",
                 "example_0.png", "image_explorer.html", "README.md", "training_curve.png"):
        assert (output / name).is_file(), name
    history = json.loads((output / "trainer_state.json").read_text())["log_history"]
    assert any("doubly_stochastic_loss" in entry for entry in history)  # logged beside the loss

    from transformers import pipeline
    reader = pipeline(model=str(output), trust_remote_code=True)
    record = reader(str(output / "example_0.png"), max_new_tokens=4)[0]
    assert isinstance(record["generated_text"], str)


def test_the_predictions_file_holds_one_line_per_test_image(tmp_path, monkeypatch):
    """predictions.txt held the longer test split's predictions (decoded for its own metrics after the test split's,
    they were the last ones kept): 3 lines here for 5 test images. Its lines are the test split's predictions."""
    monkeypatch.setitem(image_to_text.COUNTS, "digits", {"train": 64, "validation": 8, "test": 5, "test_long": 3})
    output = tmp_path / "run"
    main(["--output_dir", str(output), "--num_pictures", "0", *SHORT_RUN])
    results = json.loads((output / "all_results.json").read_text())
    assert results["predict_samples"] == 5 and "predict_long_cer" in results
    assert len((output / "predictions.txt").read_text().splitlines()) == 5


def test_a_run_that_would_score_logits_instead_of_generated_texts_is_refused_before_training(tmp_path, capsys):
    """Without --predict_with_generate the metrics got the logits and failed after training (a TypeError)."""
    flags = [flag for flag in SHORT_RUN if flag != "--predict_with_generate"]
    error = exits_as_argparse_does(lambda: main(["--output_dir", str(tmp_path / "run"), *flags]),
                                   "--predict_with_generate", capsys)
    assert error.endswith(": error: `--predict_with_generate` must be true for the image-to-text task, got false: it "
                          "scores the texts its model generates for the validation and test images.\n")
    assert not (tmp_path / "run").exists()


def test_a_soft_model_warm_starts_hard_attention_trained_by_reinforce(tmp_path, capsys):
    """--model_name_or_path of a soft-attention model with --attention hard_reinforce: the loaded weights go on
    training as hard attention by REINFORCE (at learning rate 0 they stay the soft model's while the baseline counts
    the 10 batches); --attention none, which would drop the loaded attention layers, is refused by name."""
    from safetensors.torch import load_file

    soft, hard = tmp_path / "soft", tmp_path / "hard"
    main(["--output_dir", str(soft), "--num_pictures", "0", *SHORT_RUN])
    main(["--output_dir", str(hard), "--num_pictures", "0", "--model_name_or_path", str(soft), "--attention",
          "hard_reinforce", "--learning_rate", "0", *SHORT_RUN])
    config = image_to_text.BahdanauImageToTextConfig.from_pretrained(hard)
    assert (config.attention_mode, config.reinforce_entropy_weight) == ("hard_reinforce", 0.01)
    soft_weights, hard_weights = load_file(soft / "model.safetensors"), load_file(hard / "model.safetensors")
    baseline = {name for name in hard_weights if "reinforce_baseline" in name}
    assert set(hard_weights) - baseline == set(soft_weights)
    assert all(torch.equal(hard_weights[name], soft_weights[name]) for name in soft_weights)
    assert int(next(hard_weights[name] for name in baseline if name.endswith("updates"))) == 10
    history = json.loads((hard / "trainer_state.json").read_text())["log_history"]
    assert any("reinforce_loss" in entry for entry in history)
    exits_as_argparse_does(lambda: main(["--output_dir", str(tmp_path / "none"), "--model_name_or_path", str(soft),
                                         "--attention", "none", *SHORT_RUN]), "--attention none", capsys)


def write_image_folder(root: Path, texts: dict[str, list[str]]) -> None:
    """An imagefolder with a metadata.csv per split: {split: its texts}."""
    import csv

    from PIL import Image

    for split, split_texts in texts.items():
        folder = root / split
        folder.mkdir(parents=True)
        with open(folder / "metadata.csv", "w", newline="") as file:
            writer = csv.writer(file)
            writer.writerow(["file_name", "text"])
            for index, text in enumerate(split_texts):
                Image.fromarray(np.full((8, 12), 40 * index, dtype=np.uint8)).save(folder / f"{index}.png")
                writer.writerow([f"{index}.png", text])


def test_digit_texts_of_a_metadata_csv_are_read_as_written(tmp_path):
    """A metadata.csv of digit strings (41, 007, 0: the digits task's own kind of text) went through pandas, which
    made them numbers 41, 7, 0: tokenizer training failed ('int' object is not iterable). They are texts as written,
    NA included."""
    from training.tasks.image_to_text import ImageTextDataArguments, load_splits

    texts = ["41", "007", "0", "NA"]
    write_image_folder(tmp_path / "data", {split: texts for split in ("train", "validation", "test")})
    splits, _ = load_splits(ImageTextDataArguments(dataset_name=str(tmp_path / "data")))
    assert {split: list(rows["text"]) for split, rows in splits.items()} == {
        split: texts for split in ("train", "validation", "test")}
    tokenizer = train_tokenizer(splits["train"]["text"], kind="char")
    assert tokenizer.decode(tokenizer("007")["input_ids"], skip_special_tokens=True) == "007"


@pytest.mark.parametrize("texts, message", [
    ({"train": ["41"], "test": ["7"]}, "the train split has 1 row(s); without a validation split it needs at least 2 "
                                       "(one is held out for validation)."),
    ({"train": ["41", "7"]}, "no 'test' split (its splits: ['train'])."),
], ids=["one training row", "no test split"])
def test_a_folder_too_small_to_split_or_without_a_test_split_is_named(tmp_path, texts, message):
    """One training row and no validation split used to fail in datasets' train_test_split (test_size=0); a folder
    without a test split in a KeyError."""
    from training.tasks.image_to_text import ImageTextDataArguments, load_splits

    write_image_folder(tmp_path / "data", texts)
    with pytest.raises(ValueError) as error:
        load_splits(ImageTextDataArguments(dataset_name=str(tmp_path / "data")))
    assert str(error.value) == f"--dataset_name {tmp_path / 'data'}: {message}"


def test_a_small_folder_without_validation_holds_one_row_out(tmp_path):
    from training.tasks.image_to_text import ImageTextDataArguments, load_splits

    write_image_folder(tmp_path / "data", {"train": ["1", "2", "3", "4"], "test": ["5"]})
    splits, _ = load_splits(ImageTextDataArguments(dataset_name=str(tmp_path / "data")))
    assert {split: len(rows) for split, rows in splits.items()} == {"train": 3, "validation": 1, "test": 1}
    assert sorted([*splits["train"]["text"], *splits["validation"]["text"]]) == ["1", "2", "3", "4"]


def test_no_pictures_means_a_card_without_example_images(tmp_path, capsys):
    """--num_pictures 0: no example or attention pictures, a card without a widget whose usage code reads the user's
    own image, and a last line that says so (it used to fail at ``examples[0]`` after training)."""
    output = tmp_path / "run"
    main(["--output_dir", str(output), "--num_pictures", "0", *SHORT_RUN])
    assert not list(output.glob("*_0.png")) and (output / "image_explorer.html").is_file()
    card = ModelCard.load(output / "README.md")
    assert "widget" not in card.data.to_dict() and "example_" not in card.text
    assert 'images = ["image.png"]  # your image: the model was saved without example images' in card.text
    assert printed_usage(capsys).endswith('trust_remote_code=True)("IMAGE.png")')


def test_no_explorer_examples_means_no_explorer_page(tmp_path):
    """--explorer_examples 0 (allowed: 0 means none) writes the pictures and no page (it raised after training)."""
    output = tmp_path / "run"
    main(["--output_dir", str(output), "--num_pictures", "1", *SHORT_RUN, "--explorer_examples", "0"])
    assert (output / "attention_0.png").is_file() and not (output / "image_explorer.html").exists()
    assert "image_explorer.html" not in (output / "README.md").read_text()


def test_a_bad_argument_from_the_command_line_prints_one_line_and_exits_with_2(tmp_path):
    """As argparse does for an unknown flag: no traceback, the message alone on stderr, exit status 2."""
    script = Path(__file__).parents[1] / "training" / "run_image_to_text.py"
    result = subprocess.run([sys.executable, str(script), "--num_pictures", "-1", "--output_dir", str(tmp_path)],
                            cwd=tmp_path, env=child_env(tmp_path), capture_output=True, text=True,
                            stdin=subprocess.DEVNULL, timeout=SUBPROCESS_TIMEOUT)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == ("run_image_to_text.py: error: `--num_pictures` must be 0 (none) or a positive number, "
                             "got -1.\n")
