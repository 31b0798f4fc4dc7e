"""The flags every training script shares (training.common.arguments.ReportArguments): one name, ``--num_pictures``, with
one default and one check in every script; the old names (``--num_attention_pictures``, ``--num_alignment_pictures``,
``--max_plots``), given as flags or as keys of a .json file of arguments, are read as it, with a FutureWarning."""

import importlib
import json
import warnings
from pathlib import Path

import pytest

from conftest import exits_as_argparse_does
from training.common import arguments, driver
from training.common.arguments import RENAMED_FLAGS, ReportArguments

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = [module for module in (importlib.import_module(f"training.{path.stem}")
                                 for path in sorted((REPO / "training").glob("run_*.py"))) if hasattr(module, "main")]
REQUIRED = {"training.run_seq2seq": ["--preset", "rnnsearch", "--train_file", "train.jsonl"]}  # the rest have defaults


class Parsed(Exception):
    """Raised with a script's parsed arguments, instead of reading any data."""


def parse(script, flags: list[str], monkeypatch, tmp_path, config: dict | None = None):
    """The data arguments ``script.main`` parses from ``flags`` (after a .json file of arguments ``config``), found
    by the script's own parse_arguments call; the script stops there."""
    def parse_and_stop(*args, **kwargs):
        raise Parsed(arguments.parse_arguments(*args, **kwargs))

    monkeypatch.setattr(driver, "parse_arguments", parse_and_stop)  # the tasks' (through their run_*.py shims)
    monkeypatch.setattr(script, "parse_arguments", parse_and_stop, raising=False)  # a script of its own
    argv = [*REQUIRED.get(script.__name__, []), *flags, "--output_dir", str(tmp_path / "out")]
    if config is not None:
        (tmp_path / "arguments.json").write_text(json.dumps(config))
        argv = [str(tmp_path / "arguments.json"), *argv]
    with pytest.raises(Parsed) as parsed:
        script.main(argv)
    (data_args,) = [parsed_arguments for parsed_arguments in parsed.value.args[0]
                    if isinstance(parsed_arguments, ReportArguments)]
    return data_args


def warning_for(old: str) -> str:
    return (f"`{old}` is deprecated and will be removed: use `--num_pictures` (in a .json file of arguments, the key "
            f"'num_pictures').")


def test_every_script_is_found():
    assert [script.__name__.removeprefix("training.") for script in SCRIPTS] == [
        "run_classification", "run_image_to_text", "run_memory_qa", "run_ner", "run_pointer", "run_seq2seq",
        "run_vqa"]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda script: script.__name__)
def test_every_script_reads_num_pictures_with_one_default(script, monkeypatch, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        assert parse(script, [], monkeypatch, tmp_path).num_pictures == 4
        assert parse(script, ["--num_pictures", "7"], monkeypatch, tmp_path).num_pictures == 7
        assert parse(script, ["--num_pictures=0"], monkeypatch, tmp_path).num_pictures == 0


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda script: script.__name__)
@pytest.mark.parametrize("old", sorted(RENAMED_FLAGS))
def test_an_old_picture_flag_is_read_as_num_pictures_with_a_warning(script, old, monkeypatch, tmp_path):
    with pytest.warns(FutureWarning) as caught:
        assert parse(script, [old, "2"], monkeypatch, tmp_path).num_pictures == 2
        assert parse(script, [f"{old}=3"], monkeypatch, tmp_path).num_pictures == 3
    assert [str(warning.message) for warning in caught] == [warning_for(old)] * 2


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda script: script.__name__)
def test_an_old_key_of_a_json_file_is_read_as_num_pictures(script, monkeypatch, tmp_path):
    with pytest.warns(FutureWarning) as caught:
        data_args = parse(script, [], monkeypatch, tmp_path, config={"max_plots": 1})
    assert data_args.num_pictures == 1 and [str(warning.message) for warning in caught] == [warning_for("--max_plots")]
    with pytest.warns(FutureWarning):  # a flag after the file overrides it, under either name
        assert parse(script, ["--num_pictures", "5"], monkeypatch, tmp_path,
                     config={"num_attention_pictures": 1}).num_pictures == 5


def test_the_warning_is_printed_once_per_process(monkeypatch, tmp_path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")  # Python's own filter for FutureWarning: once per place in the code
        for count in ("1", "2", "3"):
            assert parse(SCRIPTS[0], ["--max_plots", count], monkeypatch, tmp_path).num_pictures == int(count)
    assert [str(warning.message) for warning in caught] == [warning_for("--max_plots")]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda script: script.__name__)
@pytest.mark.parametrize("flag", ["--num_pictures", "--max_plots"])
def test_a_negative_picture_count_is_refused_under_the_new_name(script, flag, tmp_path, capsys):
    argv = [*REQUIRED.get(script.__name__, []), flag, "-1", "--output_dir", str(tmp_path)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        error = exits_as_argparse_does(lambda: script.main(argv), "--num_pictures", capsys)
    assert error.endswith(": error: `--num_pictures` must be 0 (none) or a positive number, got -1.\n")


def test_the_bundled_configs_use_the_new_name():
    old_keys = {flag.removeprefix("--") for flag in RENAMED_FLAGS}
    for config in sorted((REPO / "training" / "configs").glob("*.json")):
        assert not old_keys & set(json.loads(config.read_text())), config.name


def test_renaming_leaves_values_and_other_flags_alone():
    with pytest.warns(FutureWarning):
        assert arguments.rename_old_flags(["--dataset_description", "max_plots", "--max_plots=--x", "--max_plotsx",
                                           "2"]) == ["--dataset_description", "max_plots", "--num_pictures=--x",
                                                     "--max_plotsx", "2"]


def test_an_old_flag_with_dashes_is_renamed_too(monkeypatch, tmp_path):
    """HfArgumentParser reads --num-pictures as --num_pictures; so --max-plots, as before, still works."""
    with pytest.warns(FutureWarning) as caught:
        assert parse(SCRIPTS[0], ["--max-plots", "2"], monkeypatch, tmp_path).num_pictures == 2
        assert parse(SCRIPTS[0], ["--num-attention-pictures=3"], monkeypatch, tmp_path).num_pictures == 3
    assert [str(warning.message) for warning in caught] == [warning_for("--max_plots"),
                                                            warning_for("--num_attention_pictures")]
