"""hf_bahdanau.averaging: the mean of checkpoints' weights, the folder it writes, what it refuses, its command."""

from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

from hf_bahdanau.averaging import WEIGHTS_NAME, average_checkpoints, last_checkpoints, main
from tests.conftest import padded_batch, tiny_model
from training.common.tokenization import train_tokenizer

# not part of the averaged model: the Trainer's state, and a run's results, pictures and card
NOT_MODEL_FILES = ("optimizer.pt", "scheduler.pt", "trainer_state.json", "training_args.bin", "rng_state.pth",
                   "all_results.json", "generated_predictions.txt", "alignment_0.png", "README.md")
UNIT_ROUNDOFF = torch.finfo(torch.float32).eps / 2  # float32 rounds a real number x to within |x| 2^-24


def write_checkpoint(folder: Path, seed: int, **overrides) -> Path:
    """A Trainer-like checkpoint folder of a tiny model: the model, its tokenizer, the Trainer's and the run's files."""
    tiny_model(seed=seed, **overrides).save_pretrained(folder)
    train_tokenizer(["abcdefgh", "hgfedcba"], kind="char").save_pretrained(folder)
    for name in NOT_MODEL_FILES:
        (folder / name).write_bytes(b"not a model file")
    return folder


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("run")
    for step, seed in ((900, 1), (1000, 2), (80, 3)):
        write_checkpoint(run / f"checkpoint-{step}", seed)
    return run


def test_last_checkpoints_sort_by_step_as_a_number(run_dir, tmp_path):
    assert [path.name for path in last_checkpoints(run_dir, 2)] == ["checkpoint-900", "checkpoint-1000"]
    assert [path.name for path in last_checkpoints(run_dir, 3)] == ["checkpoint-80", "checkpoint-900",
                                                                   "checkpoint-1000"]
    with pytest.raises(ValueError, match=r"has 3 checkpoint-<step> folder\(s\) \['checkpoint-80', 'checkpoint-900', "
                                         r"'checkpoint-1000'\], fewer than the 4 asked for"):
        last_checkpoints(run_dir, 4)
    with pytest.raises(ValueError, match="`n` must be a positive integer .* got 0"):
        last_checkpoints(run_dir, 0)
    (tmp_path / "checkpoint-7").write_text("a file, not a folder")
    (tmp_path / "checkpoint-last").mkdir()
    with pytest.raises(ValueError, match=r"has 0 checkpoint-<step> folder\(s\) \[\]"):
        last_checkpoints(tmp_path, 1)


def test_the_average_is_the_mean_of_every_tensor_and_loads_as_a_model(run_dir, tmp_path):
    folders = last_checkpoints(run_dir, 3)
    output = average_checkpoints(folders, tmp_path / "average")
    checkpoints = [load_file(folder / WEIGHTS_NAME) for folder in folders]
    averaged = load_file(output / WEIGHTS_NAME)
    assert averaged.keys() == checkpoints[0].keys()
    assert not torch.equal(checkpoints[0]["lm_head.weight"], checkpoints[1]["lm_head.weight"])  # seeds differ
    for name, tensor in averaged.items():
        # the three float32 values sum exactly in float64, so exact is the mean up to float64's division
        exact = sum(checkpoint[name].double() for checkpoint in checkpoints) / 3
        assert tensor.dtype == torch.float32
        assert torch.all((tensor.double() - exact).abs() <= UNIT_ROUNDOFF * exact.abs()), name
    copied = {path.name for path in output.iterdir()}
    assert copied == {path.name for path in folders[-1].iterdir()} - set(NOT_MODEL_FILES)
    assert {"config.json", "generation_config.json", "tokenizer.json", "modeling_bahdanau.py"} <= copied

    model = AutoModelForSeq2SeqLM.from_pretrained(output).eval()
    for name, parameter in model.state_dict().items():
        assert torch.equal(parameter, averaged[name]), name
    assert len(AutoTokenizer.from_pretrained(output)) == len(AutoTokenizer.from_pretrained(folders[0]))
    input_ids, attention_mask = padded_batch()
    out = model.generate(input_ids=input_ids, attention_mask=attention_mask, num_beams=2, max_new_tokens=4)
    assert out.shape[0] == 3 and 2 <= out.shape[1] <= 5


def test_integer_buffers_are_copied_when_equal_and_refused_when_not(run_dir, tmp_path):
    folders = []
    for index, step in enumerate((7, 7, 8)):
        folder = tmp_path / f"checkpoint-{index}"
        folder.mkdir()
        save_file({"weight": torch.full((2,), float(index)), "step": torch.tensor([step]),
                   "mask": torch.tensor([True, False])}, folder / WEIGHTS_NAME, metadata={"format": "pt"})
        folders.append(folder)
    averaged = load_file(average_checkpoints(folders[:2], tmp_path / "out") / WEIGHTS_NAME)
    assert averaged["weight"].tolist() == [0.5, 0.5] and averaged["step"].tolist() == [7]
    assert averaged["mask"].tolist() == [True, False]
    with pytest.raises(ValueError, match=f"checkpoint '{folders[2]}': the torch.int64 buffer 'step' differs from the "
                                         f"one in '{folders[0]}'; integer and boolean buffers cannot be averaged"):
        average_checkpoints(folders, tmp_path / "out")


def test_checkpoints_of_different_models_and_folders_without_weights_are_refused(run_dir, tmp_path):
    first = run_dir / "checkpoint-80"
    wider = write_checkpoint(tmp_path / "wider", seed=0, hidden_size=20)
    with pytest.raises(ValueError, match=rf"checkpoint '{wider}': tensor '[\w.]+' is torch.float32 \[\d+(, \d+)*\], "
                                         rf"but torch.float32 \[\d+(, \d+)*\] in '{first}'"):
        average_checkpoints([first, wider], tmp_path / "out")

    tiny_model(seed=0).double().save_pretrained(tmp_path / "float64")
    with pytest.raises(ValueError, match=r"tensor '[\w.]+' is torch.float64 .* but torch.float32 "):
        average_checkpoints([first, tmp_path / "float64"], tmp_path / "out")

    (tmp_path / "fewer").mkdir()
    weights = load_file(first / WEIGHTS_NAME)
    dropped = sorted(weights)[0]
    save_file({name: tensor for name, tensor in weights.items() if name != dropped}, tmp_path / "fewer" / WEIGHTS_NAME)
    with pytest.raises(ValueError, match=f"tensor '{dropped}' is in '{first}' but not in '{tmp_path / 'fewer'}'"):
        average_checkpoints([first, tmp_path / "fewer"], tmp_path / "out")

    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match=f"checkpoint '{tmp_path / 'empty'}' has no model.safetensors"):
        average_checkpoints([first, tmp_path / "empty"], tmp_path / "out")
    with pytest.raises(ValueError, match="`folders` is empty"):
        average_checkpoints([], tmp_path / "out")
    with pytest.raises(ValueError, match="`output_dir` .* is one of the checkpoints"):
        average_checkpoints([first], first)
    assert not (tmp_path / "out").exists()  # nothing written by a refused call


def test_the_console_script_averages_the_last_checkpoints_or_the_given_ones(run_dir, tmp_path, capsys):
    main([str(run_dir), "--last", "2", "--output_dir", str(tmp_path / "last2")])
    assert capsys.readouterr().out.strip() == (f"Averaged 2 checkpoints (checkpoint-900, checkpoint-1000) into "
                                               f"{tmp_path / 'last2'}")
    named = [str(run_dir / "checkpoint-900"), str(run_dir / "checkpoint-1000")]
    main([*named, "--output_dir", str(tmp_path / "named")])
    for name, tensor in load_file(tmp_path / "last2" / WEIGHTS_NAME).items():
        assert torch.equal(tensor, load_file(tmp_path / "named" / WEIGHTS_NAME)[name]), name
    with pytest.raises(SystemExit):
        main([*named, "--last", "2", "--output_dir", str(tmp_path / "bad")])
    assert "--last 2 takes one run folder, got 2" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([str(run_dir), "--last", "9", "--output_dir", str(tmp_path / "bad")])
    assert "fewer than the 9 asked for" in capsys.readouterr().err


@pytest.mark.parametrize("last", ["0", "-2"])
def test_the_console_script_names_a_bad_last(run_dir, tmp_path, capsys, last):
    with pytest.raises(SystemExit):
        main([str(run_dir), "--last", last, "--output_dir", str(tmp_path / "bad")])
    assert f"--last must be a positive number of checkpoints, got {last}." in capsys.readouterr().err
