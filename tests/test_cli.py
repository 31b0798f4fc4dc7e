"""hf-bahdanau-translate: the console script decodes arguments or stdin and saves alignment pictures, without
transformers' progress bars; every command refuses a folder that holds no seq2seq model and has a whole-sentence
description in its --help."""

import os
import shutil
import subprocess
import sys

import pytest

from conftest import tiny_encoder_config, tiny_model
from hf_bahdanau import BahdanauForSequenceClassification, BahdanauForTokenClassification
from hf_bahdanau.cli import main as translate_main
from hf_bahdanau.modeling.translation import translate
from hf_bahdanau.explorer.page import main as explore_main
from hf_bahdanau.families import FAMILIES
from hf_bahdanau.averaging import main as average_main
from hf_bahdanau.cli import export_main
from training.common.tokenization import train_tokenizer

SENTENCES = ["le 3 mars 2015", "3/14/15", "Tuesday, 3 March 2015"]


@pytest.fixture(scope="module")
def saved_model(tmp_path_factory):
    tokenizer = train_tokenizer(SENTENCES + ["2015-03-03"], kind="char")
    model = tiny_model("rnnsearch", vocab_size=len(tokenizer))
    model.generation_config.max_new_tokens = 6
    folder = tmp_path_factory.mktemp("model")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder, model, tokenizer


def run_cli(*args: str, stdin: str | None = None) -> list[str]:
    executable = shutil.which("hf-bahdanau-translate") or sys.executable
    prefix = [] if executable.endswith("hf-bahdanau-translate") else ["-m", "hf_bahdanau.cli"]
    done = subprocess.run([executable, *prefix, *args], input=stdin, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Loading weights" not in done.stderr  # transformers' progress bar, printed at every load unless turned off
    return done.stdout.splitlines()


def test_translations_of_arguments_and_stdin_equal_in_process_decoding(saved_model):
    folder, model, tokenizer = saved_model
    expected = [result.translation for result in translate(model, tokenizer, SENTENCES, num_beams=3)]
    assert run_cli(str(folder), *SENTENCES, "--num_beams", "3", "--batch_size", "2") == expected
    assert run_cli(str(folder), "--num_beams", "3", SENTENCES[0], "--batch_size", "2", *SENTENCES[1:]) == expected
    greedy = [result.translation for result in translate(model, tokenizer, SENTENCES)]
    assert run_cli(str(folder), stdin="\n".join(SENTENCES) + "\n\n") == greedy  # blank lines at the end are no input


@pytest.mark.parametrize("arguments, stdin, error", [
    (["3/14/15", " "], None, "argument 2 of the input is empty"),
    ([], "3/14/15\n\nle 3 mars\n", "line 2 of the input is empty"),
])
def test_an_empty_input_is_an_error_that_names_it(saved_model, arguments, stdin, error):
    folder, _, _ = saved_model
    done = subprocess.run([sys.executable, "-m", "hf_bahdanau.cli", str(folder), *arguments], input=stdin,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and error in done.stderr and not done.stdout


def test_a_missing_model_folder_is_an_error_at_once(tmp_path):
    done = subprocess.run([sys.executable, "-m", "hf_bahdanau.cli", str(tmp_path / "no-model"), "3/14/15"],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 2 and "is not a local folder" in done.stderr


def test_a_hub_name_that_cannot_be_loaded_is_one_error_line(tmp_path):
    """A name that can be a Hub id (and so is not refused before loading), offline and not in the cache: it ends as
    argparse ends a bad argument (exit status 2; it was 1)."""
    done = subprocess.run([sys.executable, "-m", "hf_bahdanau.cli", "nobody/no-such-model", "3/14/15"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")})
    assert done.returncode == 2 and not done.stdout
    assert done.stderr.startswith("hf-bahdanau-translate: error: cannot load `model` 'nobody/no-such-model': no such "
                                  "local folder, and from the Hub: ") and "Traceback" not in done.stderr


@pytest.mark.parametrize("option, value, error", [
    ("--num_beams", "0", "`num_beams` must be an int ≥ 1 (the beams of beam search; 1 = greedy search or sampling), "
                         "got 0."),
    ("--max_new_tokens", "0", "`max_new_tokens` must be an int ≥ 1 (the most tokens generated), got 0."),
    ("--batch_size", "0", "--batch_size must be a positive integer, got 0."),
    ("--max_new_tokens", str(10**9), "`--max_new_tokens` must be at most 10,000 tokens (beam search allocates tables "
                                     "that grow with it before it starts), got 1,000,000,000."),
])
def test_decoding_options_generate_would_refuse_end_as_argparse_does(saved_model, capsys, option, value, error):
    """The options are checked by generate()'s own rule (check_search_arguments), with its message, before the model
    is loaded."""
    folder, _, _ = saved_model
    with pytest.raises(SystemExit) as exit:
        translate_main([str(folder), "3/14/15", option, value])
    assert exit.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"hf-bahdanau-translate: error: {error}"


def test_a_pointer_network_is_refused_with_what_to_use_instead(tmp_path):
    from hf_bahdanau import BahdanauForPointerNetwork, BahdanauPointerConfig

    BahdanauForPointerNetwork(BahdanauPointerConfig(input_feature_size=2, hidden_size=8, embedding_size=4)
                              ).save_pretrained(tmp_path)
    done = subprocess.run([sys.executable, "-m", "hf_bahdanau.cli", str(tmp_path), "3/14/15"], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 1 and "is a pointer network" in done.stderr and "Traceback" not in done.stderr


def test_alignment_pictures_are_saved_and_their_paths_printed(saved_model, tmp_path):
    folder, model, tokenizer = saved_model
    lines = run_cli(str(folder), *SENTENCES[:2], "--alignments_dir", str(tmp_path / "pictures"))
    expected = [result.translation for result in translate(model, tokenizer, SENTENCES[:2])]
    assert [line.split("\t")[0] for line in lines] == expected
    paths = [line.split("\t")[1] for line in lines]
    assert paths == [str(tmp_path / "pictures" / f"alignment_{n}.png") for n in range(2)]
    for path in paths:
        with open(path, "rb") as picture:
            assert picture.read(8) == b"\x89PNG\r\n\x1a\n"


COMMANDS = {  # command: (main, the arguments after the model folder)
    "hf-bahdanau-translate": (translate_main, ["3/14/15"]),
    "hf-bahdanau-export": (export_main, ["{tmp_path}/onnx"]),
    "hf-bahdanau-explore": (explore_main, ["--input", "{tmp_path}/in.txt", "--output", "{tmp_path}/page.html"]),
}


@pytest.mark.parametrize("head", [BahdanauForTokenClassification, BahdanauForSequenceClassification],
                         ids=lambda head: head.__name__)
@pytest.mark.parametrize("command", COMMANDS)
def test_a_folder_of_another_head_is_refused_naming_what_it_holds(tmp_path, command, head):
    """AutoModelForSeq2SeqLM would load a tagger's or a classifier's folder with a randomly initialised decoder:
    every command refuses it before loading, in one line, and writes nothing."""
    tokenizer = train_tokenizer(SENTENCES, kind="char")
    head(tiny_encoder_config(num_labels=3, vocab_size=len(tokenizer))).save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    (tmp_path / "in.txt").write_text("3/14/15\n")
    main, arguments = COMMANDS[command]
    with pytest.raises(SystemExit) as exit:
        main([str(tmp_path / "model"), *(argument.format(tmp_path=tmp_path) for argument in arguments)])
    auto_class = "AutoModelFor" + head.__name__.removeprefix("BahdanauFor")
    refusal = (f"holds a {head.__name__} (load it with {auto_class}), not a seq2seq model: {command} reads folders of "
               "hf_bahdanau's BahdanauForConditionalGeneration (text in, text out) only.")
    if command == "hf-bahdanau-explore":  # it builds the page the folder's family declares (Family.explorer)
        family = {BahdanauForTokenClassification: "tagger", BahdanauForSequenceClassification: "classifier"}[head]
        with_pages = ", ".join(name for name, other in FAMILIES.items() if other.explorer is not None)
        refusal = (f"holds a {family} model, which has no explorer page; {command} explores the models of the "
                   f"families with one: {with_pages}.")
    assert exit.value.code == f"{command}: error: {str(tmp_path / 'model')!r} {refusal}"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["in.txt", "model"]


@pytest.mark.parametrize("main", [main for main, _ in COMMANDS.values()], ids=list(COMMANDS))
def test_every_help_describes_the_command_in_whole_sentences(main, capsys):
    with pytest.raises(SystemExit) as exit:
        main(["--help"])
    assert exit.value.code == 0
    paragraphs = capsys.readouterr().out.split("\n\n")
    assert paragraphs[0].startswith("usage: ") and paragraphs[2].startswith("positional arguments:")
    description = " ".join(paragraphs[1].split())
    assert len(description) > 40 and description.endswith("."), description


def test_a_model_of_another_library_is_refused_naming_its_type(tmp_path):
    """translate(), the export and the explorer read hf_bahdanau's config fields (attention_type, copy_attention)."""
    from transformers import T5Config

    T5Config(d_model=8, num_layers=1).save_pretrained(tmp_path)
    with pytest.raises(SystemExit) as exit:
        translate_main([str(tmp_path), "3/14/15"])
    assert exit.value.code == (f"hf-bahdanau-translate: error: {str(tmp_path)!r} holds a 't5' model, not an "
                               "hf_bahdanau one: hf-bahdanau-translate reads folders of hf_bahdanau's "
                               "BahdanauForConditionalGeneration (text in, text out) only.")


BAD_ARGUMENTS = {  # command: (main, arguments after the folders, the error line)
    "hf-bahdanau-translate": (translate_main, ["{attention_free}", "3/14/15", "--alignments_dir",
                                               "{tmp_path}/pictures"],
                              "`output_alignments=True` needs a model with attention; this one has "
                              "attention_type='none'."),
    "hf-bahdanau-export": (export_main, ["{model}", "{tmp_path}/onnx", "--opset", "99"],
                           "`opset` must be an integer from 18 to {highest_opset} (the installed onnx's newest), got "
                           "99."),
    "hf-bahdanau-average": (average_main, ["{model}", "{attention_free}", "--output_dir", "{tmp_path}/average"],
                            "checkpoint '{attention_free}': tensor 'model.decoder.attention.energy_proj.weight' is in "
                            "'{model}' but not in '{attention_free}'; only checkpoints of one model can be averaged."),
    "hf-bahdanau-explore": (explore_main, ["{model}", "--input", "{tmp_path}/in.txt", "--output",
                                           "{tmp_path}/page.html", "--page_size", "0"],
                            "--page_size must be a positive integer, got 0."),
}


@pytest.mark.parametrize("command", BAD_ARGUMENTS)
def test_a_bad_argument_is_one_error_line_and_exit_status_2(saved_model, tmp_path, capsys, command):
    """As argparse ends a command on a bad argument, also where the library refuses it after loading the model
    (hf-bahdanau-translate --alignments_dir of a model without attention printed a traceback before)."""
    onnx = pytest.importorskip("onnx")
    tokenizer = train_tokenizer(SENTENCES, kind="char")
    tiny_model("rnnencdec", vocab_size=len(tokenizer)).save_pretrained(tmp_path / "attention_free")
    tokenizer.save_pretrained(tmp_path / "attention_free")
    (tmp_path / "in.txt").write_text("3/14/15\n")
    names = dict(tmp_path=tmp_path, model=saved_model[0], attention_free=tmp_path / "attention_free",
                 highest_opset=onnx.defs.onnx_opset_version())
    main, arguments, error = BAD_ARGUMENTS[command]
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit:
        main([argument.format(**names) for argument in arguments])
    assert exit.value.code == 2
    stderr = capsys.readouterr().err
    assert "Traceback" not in stderr and stderr.splitlines()[-1] == f"{command}: error: {error.format(**names)}"
