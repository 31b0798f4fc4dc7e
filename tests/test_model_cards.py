"""Model cards: metadata round-trips through ``ModelCard.load``, the model-index holds exactly the given results,
the pictures it shows exist, and the usage code it prints runs, with and without hf_bahdanau."""

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy
import pytest
import torch
from huggingface_hub import ModelCard
from transformers import Seq2SeqTrainingArguments

from child_process import child_env, run_script
from conftest import tiny_config, tiny_encoder_config
from hf_bahdanau import BahdanauForConditionalGeneration, BahdanauForTokenClassification
from hf_bahdanau.pictures import plot_alignment
from hf_bahdanau.cards import set_model_id, write_model_card
from hf_bahdanau.cards.architecture import describe
from training.common.tokenization import train_tokenizer

pytestmark = pytest.mark.usefixtures("one_thread")

EXAMPLES = ["3 March 2015", "le 14 juillet 1789"]
RESULTS = {"eval_bleu": 81.25, "eval_exact_match": 0.75, "eval_aer": 0.125, "eval_loss": 0.5, "eval_runtime": 2.0,
           "eval_samples_per_second": 50.0, "predict_bleu": 80.5, "predict_exact_match": 0.7, "train_loss": 0.9,
           "train_runtime": 60.0, "epoch": 3.0}
MODEL_INDEX = {  # (split, metric type, value) that RESULTS must give: no loss, timings or training metrics
    ("validation", "bleu", 81.25), ("validation", "exact_match", 0.75), ("validation", "aer", 0.125),
    ("test", "bleu", 80.5), ("test", "exact_match", 0.7)}
LOG_STEPS = 40


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)


def picture_links(text: str) -> list[str]:
    return re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)


def tokenizer_and_model(seed: int = 0):
    tokenizer = train_tokenizer(EXAMPLES + ["2015-03-03", "1789-07-14"], kind="char")
    model = BahdanauForConditionalGeneration(tiny_config("rnnsearch", vocab_size=len(tokenizer))).eval()
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():  # decisive logits: generations then agree across processes
        for parameter in model.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator))
    return tokenizer, model


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """A folder as the training script leaves it: weights, tokenizer, results, trainer state and args, pictures."""
    folder = tmp_path_factory.mktemp("card") / "dates-rnnsearch"
    tokenizer, model = tokenizer_and_model()
    model.generation_config.num_beams = 3
    model.generation_config.max_new_tokens = 12
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    (folder / "all_results.json").write_text(json.dumps(RESULTS))
    history = [dict(step=step, epoch=step / 10, loss=3.0 - step / 20, learning_rate=1e-3) for step in
               range(1, LOG_STEPS + 1)]
    history += [dict(step=step, epoch=step / 10, eval_loss=2.0 - step / 40, eval_bleu=float(step), eval_runtime=1.0)
                for step in range(5, LOG_STEPS + 1, 5)]
    (folder / "trainer_state.json").write_text(json.dumps(dict(
        log_history=history, train_batch_size=32, global_step=LOG_STEPS, epoch=LOG_STEPS / 10)))
    torch.save(Seq2SeqTrainingArguments(output_dir=str(folder), learning_rate=0.003, seed=7, report_to="none",
                                        generation_num_beams=3), folder / "training_args.bin")
    plot_alignment(torch.softmax(torch.randn(4, 5), -1), list("3 Mar"), list("2015"), path=folder / "alignment_0.png")
    plot_alignment(torch.softmax(torch.randn(3, 3), -1), list("abc"), list("cba"), path=folder / "training_curve.png")
    (folder / "checkpoint-10").mkdir()
    (folder / "checkpoint-10" / "alignment_0.png").write_bytes((folder / "alignment_0.png").read_bytes())
    return folder


@pytest.fixture(scope="module")
def card(model_dir):
    path = write_model_card(model_dir, dataset_name="dates", dataset_description="Generated dates in 4 languages.",
                            language=["en", "de", "fr"], model_id=str(model_dir), example_inputs=EXAMPLES)
    assert path == model_dir / "README.md"
    return ModelCard.load(path)


def test_metadata(card, model_dir):
    data = card.data
    assert data.library_name == "transformers"
    assert data.license == "apache-2.0"
    assert data.language == ["en", "de", "fr"]
    assert data.pipeline_tag == "translation"
    assert data.datasets == ["dates"]
    assert {"hf_bahdanau", "rnnsearch", "gru", "attention", "translation", "custom_code"} <= set(data.tags)
    assert data.metrics == ["aer", "bleu", "exact_match"]
    assert data.model_name == "dates-rnnsearch"


def test_model_index_holds_exactly_the_results(card):
    results = card.data.eval_results
    assert {(result.dataset_split, result.metric_type, result.metric_value) for result in results} == MODEL_INDEX
    assert len(results) == len(MODEL_INDEX)
    assert {(result.task_type, result.dataset_type, result.dataset_name) for result in results} == {
        ("translation", "dates", "dates")}
    assert {result.metric_name for result in results} == {"BLEU", "Exact match", "Alignment error rate"}


def copy_without_card(model_dir: Path, tmp_path: Path) -> Path:
    """The files of model_dir, without the card another test may have written there."""
    folder = tmp_path / "model"
    folder.mkdir()
    for path in model_dir.iterdir():
        if path.is_file() and path.name != "README.md":
            (folder / path.name).write_bytes(path.read_bytes())
    return folder


def test_results_argument_overrides_all_results_json(model_dir, tmp_path):
    folder = copy_without_card(model_dir, tmp_path)
    card = ModelCard(write_model_card(folder, results={"predict_chrf": 55.5}).read_text())
    assert [(r.dataset_split, r.metric_type, r.metric_value) for r in card.data.eval_results] == [
        ("test", "chrf", 55.5)]
    assert card.data.datasets is None  # no dataset named: the model-index says "custom data"
    assert card.data.eval_results[0].dataset_name == "custom data"


def test_text_describes_architecture_results_and_training(card, model_dir):
    text = card.text
    model = BahdanauForConditionalGeneration.from_pretrained(model_dir)
    assert f"**Parameters**: {model.num_parameters():,}" in text
    assert "rnnsearch preset (Bahdanau et al., 2015)" in text and "https://arxiv.org/abs/1409.0473" in text
    assert "bidirectional GRU, 8 units per direction" in text
    assert "additive (Bahdanau) score" in text and "attend with the previous state" in text
    assert "| validation | BLEU | 81.25 |" in text and "| test | Exact match | 0.7 |" in text
    assert "| validation | Loss | 0.5 |" in text and "runtime" not in text.lower()
    # hyper-parameters from training_args.bin and trainer_state.json
    for line in ("- learning_rate: 0.003", "- seed: 7", "- generation_num_beams: 3", "- total train batch size: 32",
                 f"- optimisation steps: {LOG_STEPS}", "- training loss, mean over the run: 0.9",
                 f"- training loss, last logged (step {LOG_STEPS}): 1"):
        assert line in text
    assert "- num_train_epochs: 3.0" in text  # epochs decided this run (no max_steps)
    assert "**dates**. Generated dates in 4 languages." in text
    # training log: one row per evaluation (8), each with the last training loss logged before it
    rows = [line for line in text.splitlines() if re.match(r"\| \d+ \| ", line)]
    assert len(rows) == LOG_STEPS // 5
    assert rows[-1] == f"| {LOG_STEPS} | 4 | 1 | 1 | {LOG_STEPS} |"  # step, epoch, train loss, eval loss, BLEU


def test_pictures_point_to_files_in_the_folder(card, model_dir):
    links = picture_links(card.text)
    assert links == ["alignment_0.png", "training_curve.png"]  # checkpoint folders are not shown
    for link in links:
        assert (model_dir / link).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def expected_translations(model_dir):
    tokenizer, model = tokenizer_and_model()
    inputs = tokenizer(EXAMPLES, return_tensors="pt", padding=True)
    with torch.no_grad():
        outputs = model.generate(**inputs, num_beams=3, max_new_tokens=12)
    return tokenizer.batch_decode(outputs, skip_special_tokens=True)


def test_usage_code_runs_with_the_package(card, tmp_path, expected_translations):
    plugin, remote, _ = python_blocks(card.text)
    assert "import hf_bahdanau" in plugin and "trust_remote_code" not in plugin
    output = run_script(plugin, tmp_path)
    assert len(output.splitlines()) == 1
    assert eval(output.splitlines()[0]) == expected_translations
    assert (tmp_path / "child" / "alignment.png").read_bytes()[:4] == b"\x89PNG"


def test_usage_code_runs_without_the_package(card, tmp_path, expected_translations):
    _, remote, with_pipeline = python_blocks(card.text)
    for code in (remote, with_pipeline):
        assert "hf_bahdanau" not in code and "trust_remote_code=True" in code
        output = run_script(code + "\nassert not [m for m in sys.modules if m.startswith('hf_bahdanau')]\n", tmp_path,
                            isolated=True, hide_package=True)
        assert "custom code" not in output  # no interactive trust prompt: every loader was given trust_remote_code
        result = eval(output.splitlines()[0])
        texts = result if code is remote else [record["translation_text"] for record in result]
        assert texts == expected_translations


def test_cli_and_set_model_id(model_dir, tmp_path):
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"eval_exact_match": 0.5}))
    command = [sys.executable, "-m", "hf_bahdanau.cards", str(model_dir), "--results", str(results), "--dataset_name",
               "dates", "--model_id", "org/dates-rnnsearch", "--language", "en"]
    done = subprocess.run(command, capture_output=True, text=True, env=child_env(tmp_path), timeout=120,
                          cwd=Path(__file__).parents[1])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(model_dir / "README.md")
    card = ModelCard.load(model_dir / "README.md")
    assert [(r.dataset_split, r.metric_type, r.metric_value) for r in card.data.eval_results] == [
        ("validation", "exact_match", 0.5)]
    assert card.data.model_name == "dates-rnnsearch" and card.data.language == ["en"]
    assert all('model_id = "org/dates-rnnsearch"' in block for block in python_blocks(card.text))

    set_model_id(model_dir / "README.md", "other/name")
    blocks = python_blocks((model_dir / "README.md").read_text())
    assert len(blocks) == 3 and all('model_id = "other/name"' in block for block in blocks)
    assert ModelCard.load(model_dir / "README.md").data.eval_results[0].metric_value == 0.5


def test_token_classification_card_and_usage(tmp_path):
    folder = tmp_path / "tagger"
    tokenizer = train_tokenizer(EXAMPLES, kind="word")
    labels = {0: "O", 1: "B-DAY", 2: "I-DAY"}
    torch.manual_seed(0)
    config = tiny_encoder_config("rnnsearch", vocab_size=len(tokenizer), id2label=labels,
                                 label2id={v: k for k, v in labels.items()})
    model = BahdanauForTokenClassification(config)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    card = ModelCard(write_model_card(folder, task="token-classification", results={"eval_f1": 0.9},
                                      example_inputs=EXAMPLES[:1]).read_text())
    assert card.data.pipeline_tag == "token-classification"
    assert [(r.task_type, r.metric_type, r.metric_value) for r in card.data.eval_results] == [
        ("token-classification", "f1", 0.9)]
    assert "3 labels: O, B-DAY, I-DAY" in card.text
    assert "**Decoder**" not in card.text and "**Encoder**" in card.text
    # an encoder without a decoder, named by the preset whose encoder it is; no generation among its limitations
    assert "An RNN encoder, the encoder of the rnnsearch preset (Bahdanau et al., 2015), for token classification" \
        in card.text
    assert "- Recurrent encoder: each text is read token by token" in card.text and "generation" not in card.text
    (folder / "attention_0.png").write_bytes(b"")
    card = ModelCard(write_model_card(folder, task="token-classification").read_text())
    assert "### Token attention\n" in card.text and "(attention_0.png)" in card.text
    plugin, remote = python_blocks(card.text)
    assert 'pipeline("token-classification"' in plugin and "trust_remote_code=True" in remote

    output = run_script(remote, tmp_path, isolated=True, hide_package=True)
    entities = eval(output.splitlines()[-1], {"np": numpy})[0]  # scores print as np.float32(…)
    words = EXAMPLES[0].split()
    assert [entity["word"] for entity in entities if entity["entity"] != "O"] == [
        word for word, label in zip(words, predicted_labels(model, tokenizer, EXAMPLES[0])) if label != "O"]


def predicted_labels(model, tokenizer, text: str) -> list[str]:
    inputs = tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        ids = model(**inputs).logits[0].argmax(-1).tolist()
    return [model.config.id2label[i] for i, token in zip(ids, inputs["input_ids"][0]) if token != tokenizer.eos_token_id]


def test_bad_arguments(model_dir, tmp_path):
    with pytest.raises(ValueError, match="`task` must be one of"):
        write_model_card(model_dir, task="summarization")
    folder = tmp_path / "no-head"
    folder.mkdir()
    config = json.loads((model_dir / "config.json").read_text())
    del config["auto_map"]["AutoModelForSeq2SeqLM"]
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match=r"^`task='translation'` loads with AutoModelForSeq2SeqLM, which the config's "
                                         r"auto_map lacks \(\['AutoConfig', "):
        write_model_card(folder, task="translation")
    with pytest.raises(ValueError, match=re.escape(f"`task='text-classification'` does not fit the model in "
                                                   f"{model_dir} (model_type 'bahdanau').")):
        write_model_card(model_dir, task="text-classification")  # a classifier's folder has a model type of its own
    with pytest.raises(ValueError, match="`model_dir`"):
        write_model_card(tmp_path / "empty")


@dataclass
class ScriptArguments(Seq2SeqTrainingArguments):
    """A script's own subclass: its pickle names this test module, so the card does not unpickle it."""


def test_training_args_of_unknown_classes_are_not_unpickled(model_dir, tmp_path):
    folder = tmp_path / "copy"
    folder.mkdir()
    for path in model_dir.iterdir():
        if path.is_file():
            (folder / path.name).write_bytes(path.read_bytes())
    torch.save(ScriptArguments(output_dir=str(folder), learning_rate=0.125, report_to="none"),
               folder / "training_args.bin")
    text = write_model_card(folder).read_text()
    assert "learning_rate" not in text
    assert "- total train batch size: 32" in text  # trainer_state.json is still read
    text = write_model_card(folder, training_args={"learning_rate": 0.125, "hub_model_id": "org/x"}).read_text()
    assert "- learning_rate: 0.125" in text
    assert all('model_id = "org/x"' in block for block in python_blocks(text))


def test_what_decided_the_run_rounded_values_short_outputs_and_kept_examples(model_dir, tmp_path):
    """max_steps, not the default num_train_epochs, decided a run of steps; values in the model-index are rounded;
    BLEU is explained away for outputs shorter than its 4-grams; writing the card again keeps its example inputs,
    languages, license and dataset."""
    folder = copy_without_card(model_dir, tmp_path)
    torch.save(Seq2SeqTrainingArguments(output_dir=str(folder), max_steps=40, report_to="none"),
               folder / "training_args.bin")
    results = {"predict_bleu": 100.00000000000004, "predict_exact_match": 100.0, "predict_gen_len": 3.5}
    write_model_card(folder, results=results, example_inputs=["9. Mai 2001", "1/2/03"], language=["de", "fr"],
                     dataset_name="org/dates", dataset_description="Dates, written out.", license="gpl-2.0")
    card = ModelCard.load(folder / "README.md")
    assert "- max_steps: 40" in card.text and "num_train_epochs" not in card.text
    assert {r.metric_type: r.metric_value for r in card.data.eval_results} == {"bleu": 100.0, "exact_match": 100.0}
    assert "BLEU counts matching n-grams up to 4 tokens, so it is near 0 or meaningless" in card.text
    write_model_card(folder, results=results)  # again, without the examples
    again = ModelCard.load(folder / "README.md")
    assert [entry["text"] for entry in again.data.to_dict()["widget"]] == ["9. Mai 2001", "1/2/03"]
    assert '["9. Mai 2001", "1/2/03"]' in again.text
    assert again.data.language == ["de", "fr"] and again.data.datasets == ["org/dates"]
    assert again.data.license == "gpl-2.0"  # e.g. evaluate_seq2seq.py --update_model_card keeps the data's license
    for bad in ("", "Apache 2.0"):
        with pytest.raises(ValueError, match=f"`license` must be a Hub licence id .* got {bad!r}"):
            write_model_card(folder, license=bad)
    assert "**org/dates**. Dates, written out.\n" in again.text
    write_model_card(folder, results=results, dataset_description="New words.")  # a new description replaces it
    assert "**org/dates**. New words.\n" in ModelCard.load(folder / "README.md").text
    write_model_card(folder, results={"predict_bleu": 40.0, "predict_gen_len": 12.0})
    assert "meaningless" not in ModelCard.load(folder / "README.md").text  # long outputs: no note


@pytest.mark.parametrize("overrides, words", [
    (dict(), ["global: every source position", "soft: the context is the expectation"]),
    (dict(attention_scope="local-p", local_window=7), ["local-p (Luong)", "D = 7"]),
    (dict(attention_scope="monotonic"), ["monotonic (Raffel et al., 2017)"]),
    (dict(attention_mode="hard", use_coverage=True, coverage_loss_weight=0.5),
     ["hard: one source position per step", "reads the coverage c_ij", "coverage loss", "λ = 0.5"]),
    (dict(copy_attention=True), ["pointer-generator copying (See et al., 2017)", "(1 − p_gen)"]),
    (dict(attention_type="location_aware", location_filters=3, location_kernel_size=5, location_sharpening=2.0),
     ["location-aware (Chorowski et al., 2015)", "3 filters of width 5, sharpening β = 2.0)"]),
    (dict(attention_type="location_aware", location_smoothing=True),
     ["sharpening β = 1.0; smoothing: α_ij = σ(β e_ij) / Σ_k σ(β e_ik) in place of the softmax)"]),
])
def test_the_card_names_the_attention_scope_mode_and_coverage(overrides, words):
    architecture = describe(tiny_config("rnnsearch", **overrides).to_dict())
    attention = next(line for line in architecture.lines if line.startswith("**Attention**"))
    assert all(word in attention for word in words), attention


@pytest.mark.parametrize("preset, paper", [("luong-local-p", "Luong et al., 2015"),
                                           ("rnnsearch-monotonic", "Raffel et al., 2017")])
def test_the_new_presets_are_recognised_with_their_papers(preset, paper):
    architecture = describe(tiny_config(preset).to_dict())
    assert architecture.preset == preset and architecture.paper[0] == paper


def test_every_preset_names_its_paper():
    from hf_bahdanau import PRESETS
    from hf_bahdanau.cards.architecture import paper_of

    for preset in PRESETS:
        authors, title, url = paper_of(preset)
        assert authors.endswith(("2014", "2015", "2017")) and title and url.startswith("https://arxiv.org/abs/"), preset
    assert paper_of("rnnsearch-location")[0] == "Chorowski et al., 2015"
