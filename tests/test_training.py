"""Learning: Seq2SeqTrainer trains small models on tasks they can only solve by attending, and the training script
(training/run_seq2seq.py) runs the main job, under torchrun, and resumes from a checkpoint exactly."""

import importlib
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from datasets import Dataset
from transformers import Seq2SeqTrainer, Seq2SeqTrainingArguments

from conftest import exits_as_argparse_does
from hf_bahdanau import BahdanauConfig, BahdanauForConditionalGeneration
from training.common.arguments import bad_arguments_exit

PAD, EOS, FIRST_SYMBOL, SYMBOLS = 0, 2, 3, 20


def reversal_pairs(count: int, seed: int) -> list[list[int]]:
    """Random sequences of 3–12 symbols; the target is the sequence reversed, then EOS."""
    rng = random.Random(seed)
    return [[rng.randrange(FIRST_SYMBOL, FIRST_SYMBOL + SYMBOLS) for _ in range(rng.randint(3, 12))]
            for _ in range(count)]


def collate(rows: list[dict]) -> dict[str, torch.Tensor]:
    source_length = max(len(row["input_ids"]) for row in rows)
    target_length = max(len(row["labels"]) for row in rows)
    input_ids = torch.tensor([row["input_ids"] + [PAD] * (source_length - len(row["input_ids"])) for row in rows])
    labels = torch.tensor([row["labels"] + [-100] * (target_length - len(row["labels"])) for row in rows])
    return dict(input_ids=input_ids, attention_mask=(input_ids != PAD).long(), labels=labels)


def exact_match(model, sources: list[list[int]]) -> float:
    batch = collate([dict(input_ids=source, labels=[]) for source in sources])
    generated = model.generate(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                               max_new_tokens=14).tolist()
    hits = 0
    for source, output in zip(sources, generated):
        output = output[1:]
        output = output[:output.index(EOS)] if EOS in output else output
        hits += output == source[::-1]
    return hits / len(sources)


@pytest.mark.slow
@pytest.mark.parametrize("preset, overrides", [
    ("rnnsearch", {}),
    ("luong-general", dict(encoder_layers=1, decoder_layers=1, rnn_type="gru", bidirectional=True)),
])
def test_trainer_learns_to_reverse_sequences(preset, overrides, tmp_path):
    torch.manual_seed(0)
    config = BahdanauConfig.from_preset(preset, vocab_size=FIRST_SYMBOL + SYMBOLS, embedding_size=32,
                                        hidden_size=64, attention_size=64, output_size=32, **overrides)
    model = BahdanauForConditionalGeneration(config)
    train = reversal_pairs(6000, seed=0)
    dataset = Dataset.from_dict(dict(input_ids=train, labels=[source[::-1] + [EOS] for source in train]))
    args = Seq2SeqTrainingArguments(
        output_dir=str(tmp_path), per_device_train_batch_size=64, learning_rate=3e-3, max_steps=400,
        lr_scheduler_type="linear", logging_steps=100, report_to=[], save_strategy="no", disable_tqdm=True, seed=0,
    )
    Seq2SeqTrainer(model=model, args=args, train_dataset=dataset, data_collator=collate).train()
    model.eval()
    held_out = [source for source in reversal_pairs(400, seed=1234) if source not in train][:300]
    assert exact_match(model, held_out) >= 0.95


# The training script, end to end (subprocesses, as a user runs it) ------------------------------------------

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "training" / "run_seq2seq.py"
MAIN_JOB = REPO / "training" / "configs" / "dates_rnnsearch.json"
TINY = ["--config_overrides", "embedding_size=16,hidden_size=32,attention_size=16,output_size=16,dropout=0.1"]
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1"}


def run_script(*args: str, launcher: tuple[str, ...] = ()) -> str:
    done = subprocess.run([*(launcher or (sys.executable,)), str(SCRIPT), str(MAIN_JOB), *args], cwd=REPO, env=ENV,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    return done.stdout + done.stderr


@pytest.mark.slow
def test_main_job_learns_dates_and_writes_a_complete_model_folder(tmp_path):
    output = tmp_path / "dates"
    run_script("--output_dir", str(output), "--max_steps", "250", "--eval_strategy", "no", "--warmup_steps", "10",
               "--max_eval_samples", "100", "--max_predict_samples", "300", "--disable_tqdm", "true")
    results = json.loads((output / "all_results.json").read_text())
    assert results["predict_samples"] == 300 and results["eval_samples"] == 100
    assert results["predict_exact_match"] >= 70, results  # 250 of the main job's 1000 steps (it reaches >= 99)
    assert results["predict_bleu"] > 80 and results["predict_chrf"] > 85
    assert 0 <= results["predict_alignment_error_rate"] < 50  # percent
    expected = {"model.safetensors", "config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
                "README.md", "training_curve.png", "all_results.json", "generated_predictions.txt",
                *(f"alignment_{n}.png" for n in range(4))}
    assert expected <= {path.name for path in output.iterdir()}
    assert len((output / "generated_predictions.txt").read_text().splitlines()) == 300
    generation = json.loads((output / "generation_config.json").read_text())
    assert generation["max_new_tokens"] == 17 and "max_length" not in generation  # 1.5 x 11 tokens, no clash
    card = (output / "README.md").read_text()
    assert "alignment_0.png" in card and "exact_match" in card

    translations = subprocess.run(
        [sys.executable, "-m", "hf_bahdanau.cli", str(output), "Tuesday, 3 March 2015", "le 14 juillet 1989"],
        env=ENV, capture_output=True, text=True, timeout=300, check=True).stdout.splitlines()
    assert len(translations) == 2 and all(len(text) == 10 and text.count("-") == 2 for text in translations)


@pytest.mark.slow
def test_torchrun_two_processes_train_and_predict_every_row_once(tmp_path):
    output = tmp_path / "ddp"
    log = run_script("--output_dir", str(output), *TINY, "--max_steps", "6", "--eval_strategy", "no",
                     "--max_train_samples", "200", "--max_eval_samples", "13", "--max_predict_samples", "13",
                     "--per_device_eval_batch_size", "4", "--num_pictures", "1", "--disable_tqdm", "true",
                     launcher=(sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2"))
    assert "Process rank 1, world size 2" in log and "Process rank 0, world size 2" in log
    results = json.loads((output / "all_results.json").read_text())
    assert results["predict_samples"] == 13 and results["eval_samples"] == 13
    assert len((output / "generated_predictions.txt").read_text().splitlines()) == 13
    state = json.loads((output / "trainer_state.json").read_text())
    assert state["global_step"] == 6 and state["train_batch_size"] == 64
    assert (output / "model.safetensors").exists() and (output / "alignment_0.png").exists()


@pytest.mark.slow
def test_resuming_from_a_checkpoint_gives_the_uninterrupted_weights_and_losses(tmp_path):
    from safetensors.torch import load_file

    common = [*TINY, "--max_steps", "20", "--save_strategy", "steps", "--save_steps", "10", "--logging_steps", "5",
              "--eval_strategy", "no", "--do_eval", "false", "--do_predict", "false", "--max_train_samples", "640",
              "--per_device_train_batch_size", "16", "--disable_tqdm", "true"]
    whole, resumed = tmp_path / "whole", tmp_path / "resumed"
    run_script("--output_dir", str(whole), *common)
    shutil.copytree(whole / "checkpoint-10", resumed / "checkpoint-10")  # the run "stopped" after step 10
    run_script("--output_dir", str(resumed), *common, "--resume_from_checkpoint", str(resumed / "checkpoint-10"))

    def losses(folder):
        history = json.loads((folder / "trainer_state.json").read_text())["log_history"]
        return {entry["step"]: entry["loss"] for entry in history if "loss" in entry}

    # Exactly: resuming restores the weights (copied into the model's own tensors), the optimizer's moments, the data
    # order and the dropout RNG, and both runs use this machine's kernels on the same inputs, so steps 11-20 compute
    # the same bits. Any difference is a state that was not restored.
    assert losses(resumed)[15] == losses(whole)[15]
    assert losses(resumed)[20] == losses(whole)[20]
    expected, got = load_file(whole / "model.safetensors"), load_file(resumed / "model.safetensors")
    assert expected.keys() == got.keys()
    for name in expected:
        assert torch.equal(got[name], expected[name]), name
    start = load_file(whole / "checkpoint-10" / "model.safetensors")
    assert any(not torch.equal(start[name], expected[name]) for name in expected), "steps 11-20 changed nothing"


def bad_data_arguments(tmp_path: Path) -> dict[str, tuple[list[str], str]]:
    """{script: (its arguments, one naming a column, file or split the data lacks; what the error must name)}."""
    text_pairs = tmp_path / "pairs.jsonl"
    text_pairs.write_text("".join(json.dumps({"source": s, "target": t}) + "\n" for s, t in [("ab", "ba")] * 4))
    tagged = tmp_path / "tagged.jsonl"
    tagged.write_text(json.dumps({"tokens": ["a", "b"], "ner_tags": ["O", "O"], "label": "x"}) + "\n")
    story = tmp_path / "qa1_x_test.txt"
    story.write_text("1 Mary moved to the bathroom.\n")
    images = tmp_path / "images" / "train"
    images.mkdir(parents=True)
    (images / "metadata.csv").write_text("file_name,text\n")
    output = ["--output_dir", str(tmp_path / "run")]
    training = [*output, "--do_train", "--report_to", "none"]
    model = tmp_path / "model"
    model.mkdir()
    return {
        "run_seq2seq": ([*training, "--preset", "rnnsearch", "--train_file", str(text_pairs), "--source_column",
                         "fr"], "`--source_column` 'fr' is not a column of the train data"),
        "run_pointer": ([*training, "--train_file", str(text_pairs)], "'input_features' is not a column"),
        "run_ner": ([*training, "--train_file", str(tagged), "--text_column_name", "words"],
                    "`--text_column_name` 'words' is not a column"),
        "run_classification": ([*training, "--train_file", str(tagged), "--text_column_name", "words"],
                               "`--text_column_name` 'words' is not a column"),
        "run_memory_qa": ([*training, "--train_file", str(story), "--test_file", str(story)],
                          f"`--train_file` {story} holds 0 question(s)"),
        "run_image_to_text": ([*training, "--dataset_name", str(images.parent)],
                              f"`--dataset_name` '{images.parent}' cannot be read: Instruction \"train\" corresponds "
                              "to no data!"),
        "run_vqa": ([*training, "--dataset_name", str(tmp_path / "absent")],
                    f"`--dataset_name` '{tmp_path / 'absent'}' is neither a local dataset folder nor a Hub dataset"),
        "evaluate_seq2seq": ([*output, "--model_name_or_path", str(model), "--test_file", str(text_pairs),
                              "--source_column", "fr"], "`--source_column` 'fr' is not a column"),
        "tune_beam_penalties": ([*output, "--model_name_or_path", str(model), "--validation_file", str(text_pairs),
                                 "--source_column", "fr"], "`--source_column` 'fr' is not a column"),
    }


@pytest.mark.parametrize("script", ["run_seq2seq", "run_pointer", "run_ner", "run_classification", "run_memory_qa",
                                    "run_image_to_text", "run_vqa", "evaluate_seq2seq", "tune_beam_penalties"])
def test_bad_data_arguments_end_as_argparse_does(script, tmp_path, capsys):
    """A column, file or split the data lacks is found while reading it, after parsing: it used to print a traceback
    before the ValueError; now every script ends as argparse ends on a bad flag (exit 2, the message, no traceback)
    and trains nothing."""
    arguments, named = bad_data_arguments(tmp_path)[script]
    main = importlib.import_module(f"training.{script}").main
    error = exits_as_argparse_does(lambda: main(arguments), named, capsys)
    assert ": error: " + named in error.splitlines()[-1]  # the message, the last line (datasets' progress above it)
    assert not (tmp_path / "run").exists()


def test_a_bug_in_a_scripts_setup_keeps_its_traceback():
    """Only a ValueError is a bad argument; any other exception is a bug and propagates as it is."""
    with pytest.raises(KeyError, match="bug"), bad_arguments_exit():
        raise KeyError("bug")


def test_a_bad_argument_found_in_setup_keeps_its_traceback_at_debug_level(caplog, capsys):
    with caplog.at_level("DEBUG", logger="training.common.arguments"), pytest.raises(SystemExit) as caught, \
            bad_arguments_exit("run_x.py"):
        raise ValueError("`--source_column` 'fr' is not a column")
    assert caught.value.code == 2
    assert capsys.readouterr().err == "run_x.py: error: `--source_column` 'fr' is not a column\n"
    assert caplog.records[-1].exc_info[0] is ValueError


@pytest.mark.parametrize("script, arguments", [
    ("run_seq2seq", ["--preset", "rnnsearch", "--train_file", "absent.jsonl"]),
    ("run_ner", ["--train_file", "absent.jsonl"]),
    ("run_classification", ["--train_file", "absent.jsonl"]),
    ("run_pointer", []),
    ("run_memory_qa", []),
    ("run_memory_qa", ["--architecture", "lstm"]),
    ("run_memory_qa", ["--architecture", "coattention"]),
    ("run_image_to_text", []),
    ("run_vqa", []),
])
@pytest.mark.parametrize("override, message", [
    ("hidden_size=-3", "`hidden_size` must be a positive integer, got -3."),
    ("hidden_size=big", "`hidden_size` must be an int, got 'big' (str)."),
])
def test_bad_config_override_values_end_while_parsing(script, arguments, override, message, tmp_path, capsys):
    """A value the config refuses used to end when the model was built, after the data was read (a traceback); now
    the config is built once while parsing: the data (here a file that does not exist) is never read."""
    main = importlib.import_module(f"training.{script}").main
    error = exits_as_argparse_does(lambda: main([*arguments, "--config_overrides", override, "--output_dir",
                                                 str(tmp_path / "run")]), "--config_overrides", capsys)
    assert error.endswith(f": error: `--config_overrides` {override!r}: {message}\n"), error


@pytest.mark.parametrize("script, arguments, flag", [
    ("run_seq2seq", ["--preset", "rnnsearch", "--train_file", "absent.jsonl", "--max_new_tokens"], "--max_new_tokens"),
    ("run_seq2seq", ["--preset", "rnnsearch", "--train_file", "absent.jsonl", "--generation_max_length"],
     "--generation_max_length"),
    ("run_image_to_text", ["--generation_max_length"], "--generation_max_length"),
    ("evaluate_seq2seq", ["--model_name_or_path", ".", "--test_file", "absent.jsonl", "--max_new_tokens"],
     "--max_new_tokens"),
    ("tune_beam_penalties", ["--model_name_or_path", ".", "--validation_file", "absent.jsonl", "--max_new_tokens"],
     "--max_new_tokens"),
])
def test_a_generation_length_beyond_the_bound_ends_while_parsing(script, arguments, flag, tmp_path, capsys):
    """10**9 tokens used to run out of memory in beam search's tables; the bound (hf_bahdanau.cli.MAX_NEW_TOKENS,
    the same for the commands) is checked with the other flags, before any data or model is read."""
    main = importlib.import_module(f"training.{script}").main
    error = exits_as_argparse_does(lambda: main([*arguments, str(10**9), "--output_dir", str(tmp_path)]), flag,
                                   capsys)
    assert error.endswith(f": error: `{flag}` must be at most 10,000 tokens (beam search allocates tables that grow "
                          "with it before it starts), got 1,000,000,000.\n"), error


def test_the_generation_length_bound_is_inclusive():
    from hf_bahdanau.cli import MAX_NEW_TOKENS, check_new_tokens

    check_new_tokens(MAX_NEW_TOKENS, "--max_new_tokens")
    check_new_tokens(None, "--max_new_tokens")
    with pytest.raises(ValueError, match=r"^`--max_new_tokens` must be at most 10,000 tokens .*, got 10,001\.$"):
        check_new_tokens(MAX_NEW_TOKENS + 1, "--max_new_tokens")


@pytest.mark.parametrize("script, split", [("evaluate_seq2seq", "--test_file"),
                                           ("tune_beam_penalties", "--validation_file")])
def test_a_model_folder_without_a_model_ends_as_argparse_does(script, split, tmp_path, capsys):
    """A folder (or Hub id) holding no tokenizer or model used to end in transformers' traceback."""
    (tmp_path / "pairs.jsonl").write_text(json.dumps({"source": "ab", "target": "ba"}) + "\n")
    (tmp_path / "empty").mkdir()
    main = importlib.import_module(f"training.{script}").main
    error = exits_as_argparse_does(lambda: main(["--model_name_or_path", str(tmp_path / "empty"), split,
                                                 str(tmp_path / "pairs.jsonl"), "--output_dir", str(tmp_path / "out")]),
                                   "--model_name_or_path", capsys)
    assert f": error: `--model_name_or_path` '{tmp_path / 'empty'}': cannot load a seq2seq model and its tokenizer: " \
           in error and error.count("\n") == 1, error


@pytest.mark.parametrize("script, flag", [("length_robustness", "--presets"), ("coverage_demo", "--models")])
@pytest.mark.parametrize("model, message", [
    ("rnnsearch:hidden_size=-3", "`hidden_size` must be a positive integer, got -3."),
    ("bogus", "`preset` must be one of ['rnnencdec', "),
])
def test_a_bad_model_of_a_comparison_ends_while_parsing(script, flag, model, message, tmp_path, capsys):
    """It used to end in a traceback once the models listed before it had trained."""
    main = importlib.import_module(f"training.{script}").main
    error = exits_as_argparse_does(lambda: main([flag, "rnnsearch", model, "--output_dir", str(tmp_path / "out")]),
                                   flag, capsys)
    assert f": error: `{flag}` {model!r}: {message}" in error, error
    assert not (tmp_path / "out").exists()
