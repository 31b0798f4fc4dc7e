"""training/run_ner.py and training/run_classification.py on small slices: what the output folder holds, labels read
from the data (tags, classes, label lists, numbers), metrics and predictions, and heads built on a seq2seq
checkpoint's encoder."""

import json
import math
from pathlib import Path

import huggingface_hub.repocard
import pytest
import torch
import transformers.utils.hub
from huggingface_hub import ModelCard
from transformers import AutoModelForSequenceClassification, AutoModelForTokenClassification, pipeline

from child_process import run_child

from conftest import exits_as_argparse_does
from hf_bahdanau import BahdanauConfig, BahdanauForConditionalGeneration, BahdanauForTokenClassification
from test_hub_push import RecordingHfApi
from training import run_classification, run_ner
from training.common.encoder_heads import HeadModelArguments, load_head, order_labels
from training.common.tokenization import train_tokenizer

REPO = Path(__file__).resolve().parents[1]
NER_DATA, HAN_DATA = REPO / "training" / "data" / "ner", REPO / "training" / "data" / "han"
TINY = "embedding_size=8,hidden_size=16"
SMALL_RUN = ["--max_train_samples", "64", "--max_eval_samples", "16", "--max_predict_samples", "16",
             "--num_train_epochs", "1", "--num_pictures", "1", "--logging_steps", "1"]

pytestmark = pytest.mark.usefixtures("one_thread")


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def assert_the_run_ends_by_naming_the_model(capfd, recwarn, output_dir: Path, task: str) -> None:
    """The last line says where the model is and how to use it, with code that runs as printed (it used to lack
    ``import transformers``); no data loader warned about pin_memory on CPU."""
    last_line = capfd.readouterr().out.strip().splitlines()[-1]
    assert last_line.startswith(f"The model is saved in {output_dir} ")
    usage = last_line.split("; use it with: ", 1)[1]
    assert usage.startswith(f'import hf_bahdanau, transformers; transformers.pipeline("{task}", model="{output_dir}"')
    exec(usage, {})
    assert not [warning for warning in recwarn if "pin_memory" in str(warning.message)]


def test_run_ner_small_run(tmp_path, capfd, recwarn):
    run_ner.main([str(REPO / "training/configs/ner_tagger.json"), "--output_dir", str(tmp_path),
                  "--config_overrides", TINY, *SMALL_RUN])
    assert_the_run_ends_by_naming_the_model(capfd, recwarn, tmp_path, "token-classification")
    files = {path.name for path in tmp_path.iterdir()}
    assert {"model.safetensors", "config.json", "tokenizer.json", "all_results.json", "predictions.txt",
            "attention_0.png", "training_curve.png", "README.md", "modeling_token_classification.py"} <= files
    config = json.loads((tmp_path / "config.json").read_text())
    tags = sorted({tag for split in ("train", "validation", "test") for row in read_jsonl(NER_DATA / f"{split}.jsonl")
                   for tag in row["ner_tags"]})
    assert tags == ["B-LOC", "B-MISC", "B-ORG", "B-PER", "I-LOC", "I-MISC", "I-ORG", "I-PER", "O"]
    assert [config["id2label"][str(i)] for i in range(len(tags))] == tags  # the label list comes from the data
    results = json.loads((tmp_path / "all_results.json").read_text())
    for key in ("eval_f1", "eval_precision", "eval_recall", "eval_accuracy", "eval_PER_f1", "predict_f1"):
        assert 0.0 <= results[key] <= 100.0, key  # in percent
    assert results["predict_samples"] == 16
    predictions = (tmp_path / "predictions.txt").read_text().splitlines()
    test_rows = read_jsonl(NER_DATA / "test.jsonl")[:16]
    assert [len(line.split()) for line in predictions] == [len(row["tokens"]) for row in test_rows]
    assert "token-classification" in (tmp_path / "README.md").read_text()

    tagger = pipeline("token-classification", model=str(tmp_path))
    assert type(tagger.model).__name__ == "BahdanauForTokenClassification"
    assert all(entity["entity"] in tags for entity in tagger(" ".join(test_rows[0]["tokens"])))


@pytest.mark.parametrize("hierarchical", ["true", "false"])
def test_run_classification_small_run(hierarchical, tmp_path, capfd, recwarn):
    run_classification.main([str(REPO / "training/configs/han_classifier.json"), "--output_dir", str(tmp_path),
                             "--config_overrides", TINY, "--hierarchical", hierarchical, *SMALL_RUN])
    assert_the_run_ends_by_naming_the_model(capfd, recwarn, tmp_path, "text-classification")
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["hierarchical"] is (hierarchical == "true")
    assert config["problem_type"] == "single_label_classification"
    assert sorted(config["label2id"]) == ["business", "politics", "sports", "weather"]
    if config["hierarchical"]:
        assert config["sentence_separator_token_id"] == json.loads((tmp_path / "tokenizer.json").read_text())[
            "model"]["vocab"]["."]
    results = json.loads((tmp_path / "all_results.json").read_text())
    assert {"eval_accuracy", "eval_f1", "predict_accuracy", "predict_f1"} <= set(results)
    predictions = (tmp_path / "predictions.txt").read_text().splitlines()
    assert len(predictions) == 16 and set(predictions) <= set(config["label2id"])
    assert (tmp_path / "attention_0.png").stat().st_size > 1000
    card = (tmp_path / "README.md").read_text()
    assert "text-classification" in card and "An RNN encoder, the encoder of the rnnsearch preset" in card
    assert "### What the pooling attended to" in card and "(attention_0.png)" in card
    assert config["model_type"] == "bahdanau-encoder" and "decoder_layers" not in config
    model = AutoModelForSequenceClassification.from_pretrained(tmp_path)
    assert model.config.hierarchical is config["hierarchical"]


def test_run_classification_splits_at_every_separator_given_and_refuses_unknown_ones(tmp_path, capsys):
    """--sentence_separator takes several tokens (all saved in the config, in order); one the tokenizer lacks is
    refused by name before training."""
    arguments = [str(REPO / "training/configs/han_classifier.json"), "--config_overrides", TINY, *SMALL_RUN,
                 "--max_steps", "1", "--do_eval", "false", "--do_predict", "false", "--num_pictures", "0"]
    run_classification.main([*arguments, "--output_dir", str(tmp_path / "two"), "--sentence_separator", ".", "report"])
    vocab = json.loads((tmp_path / "two" / "tokenizer.json").read_text())["model"]["vocab"]
    config = json.loads((tmp_path / "two" / "config.json").read_text())
    assert config["sentence_separator_token_id"] == [vocab["."], vocab["report"]]  # the data has no "?"
    error = exits_as_argparse_does(lambda: run_classification.main([
        *arguments, "--output_dir", str(tmp_path / "bad"), "--sentence_separator", ".", "nope"]),
        "`--sentence_separator` must be tokens of the tokenizer (e.g. '.'): ['nope'] of ['.', 'nope'] are not", capsys)
    assert not (tmp_path / "bad").exists(), error


@pytest.mark.parametrize("script", [run_ner, run_classification])
def test_a_negative_picture_count_is_refused_by_name_and_0_writes_none(script, tmp_path, capsys):
    """A negative --num_pictures used to slice off the last texts ([:-1]); now it is refused before any data
    is read, as argparse refuses a bad flag; 0 means no pictures."""
    config = REPO / "training" / "configs" / ("ner_tagger.json" if script is run_ner else "han_classifier.json")
    with pytest.raises(SystemExit) as exit_info:
        script.main([str(config), "--output_dir", str(tmp_path), "--num_pictures", "-1"])
    assert exit_info.value.code == 2 and capsys.readouterr().err.endswith(
        ": error: `--num_pictures` must be 0 (none) or a positive number, got -1.\n")
    script.main([str(config), "--output_dir", str(tmp_path), "--config_overrides", TINY, *SMALL_RUN,
                 "--num_pictures", "0", "--max_steps", "1"])
    assert not list(tmp_path.glob("attention_*.png")) and (tmp_path / "README.md").is_file()


def write_jsonl(path: Path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


@pytest.mark.parametrize("kind", ["multi_label", "regression"])
def test_run_classification_multi_label_and_regression(kind, tmp_path):
    texts = ["good food . slow service .", "great view .", "cold soup . rude staff .", "nice staff . good food ."]
    labels = ([["food", "service"], ["view"], ["food", "service"], ["food", "service"]] if kind == "multi_label"
              else [3.0, 5.0, 1.0, 4.5])
    data = write_jsonl(tmp_path / "data.jsonl", [dict(text=text, label=label) for text, label in zip(texts, labels)])
    output = tmp_path / "out"
    run_classification.main([
        "--train_file", data, "--validation_file", data, "--test_file", data, "--config_overrides", TINY,
        "--do_train", "--do_eval", "--do_predict", "--num_train_epochs", "1", "--output_dir", str(output),
        "--report_to", "none", "--num_pictures", "1", "--logging_steps", "1",
        *(["--do_regression"] if kind == "regression" else [])])
    config = json.loads((output / "config.json").read_text())
    results = json.loads((output / "all_results.json").read_text())
    predictions = (output / "predictions.txt").read_text().splitlines()
    assert len(predictions) == 4
    if kind == "multi_label":
        assert config["problem_type"] == "multi_label_classification"
        assert [config["id2label"][str(i)] for i in range(3)] == ["food", "service", "view"]
        assert {"eval_accuracy", "eval_f1"} <= set(results)
        assert all(set(line.split()) <= {"food", "service", "view"} for line in predictions)
    else:
        assert config["problem_type"] == "regression" and len(config["id2label"]) == 1
        # Trainer.predict ran the trained weights on these 4 texts as one padded batch: the same arithmetic on the same
        # inputs, bit for bit, printed to 6 significant digits
        values = _regression_outputs(output, texts)
        assert predictions == [f"{value:.6g}" for value in values]
        # evaluation scored the same rows in the same batch: the same float32 values. From their prints (each within
        # half a unit of its 6th digit, h) the mean squared error moves by ≤ Σ (2 |p − t| h + h²) / 4, and numpy's
        # float32 mean of the squares rounds within (4 + 2) ε of it.
        printed = [float(line) for line in predictions]
        half_units = [0.5 * 10.0 ** (math.floor(math.log10(abs(value))) - 5) for value in values]
        expected = sum((p - t) ** 2 for p, t in zip(printed, labels)) / 4
        tolerance = (sum(2 * abs(p - t) * h + h * h for p, t, h in zip(printed, labels, half_units)) / 4
                     + 6 * torch.finfo(torch.float32).eps * expected)
        assert abs(results["eval_mse"] - expected) <= tolerance


def _regression_outputs(folder: Path, texts: list[str]) -> list[float]:
    """The saved model's outputs for ``texts`` in one padded batch, as Trainer.predict makes it (one thread, as the
    script ran), with the weights copied out of the loaded file into fresh tensors like the trained ones (kernels may
    round differently at other memory alignments)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.data = parameter.data.clone()
        return model(**tokenizer(texts, padding=True, return_tensors="pt")).logits[:, 0].tolist()


def test_heads_start_from_a_seq2seq_checkpoint_and_keep_a_trained_label_order(tmp_path):
    rows = read_jsonl(NER_DATA / "train.jsonl")[:50]
    tokenizer = train_tokenizer((" ".join(row["tokens"]) for row in rows), kind="word")
    torch.manual_seed(0)
    seq2seq = BahdanauForConditionalGeneration(BahdanauConfig(vocab_size=len(tokenizer), embedding_size=8,
                                                              hidden_size=16))
    seq2seq.save_pretrained(tmp_path / "seq2seq")
    tokenizer.save_pretrained(tmp_path / "seq2seq")
    model_args = HeadModelArguments(model_name_or_path=str(tmp_path / "seq2seq"))
    labels = order_labels(model_args, ["B-PER", "I-PER", "O"])
    assert labels == ["B-PER", "I-PER", "O"]  # a seq2seq checkpoint has no labels of its own
    tagger = load_head(AutoModelForTokenClassification, BahdanauForTokenClassification, model_args, tokenizer, labels)
    assert tagger.config.id2label == {0: "B-PER", 1: "I-PER", 2: "O"}
    encoder, expected = tagger.model.encoder.state_dict(), seq2seq.model.encoder.state_dict()
    assert encoder.keys() == expected.keys() and all(torch.equal(encoder[k], expected[k]) for k in encoder)

    tagger.config.label2id = {"O": 0, "B-PER": 1, "I-PER": 2}  # a trained tagger with its own label order
    tagger.config.id2label = {0: "O", 1: "B-PER", 2: "I-PER"}
    tagger.save_pretrained(tmp_path / "tagger")
    assert order_labels(HeadModelArguments(model_name_or_path=str(tmp_path / "tagger")),
                        ["B-PER", "I-PER", "O"]) == ["O", "B-PER", "I-PER"]
    assert order_labels(HeadModelArguments(model_name_or_path=str(tmp_path / "tagger")),
                        ["B-LOC", "O"]) == ["B-LOC", "O"]  # other labels: the data's order, a new classifier


PUSHED_TAGGER_CHILD = """
    import json
    import sys

    from transformers import pipeline

    tag = pipeline("token-classification", model=sys.argv[1], trust_remote_code=True)
    print(json.dumps(dict(module=type(tag.model).__module__,
                          entities=[[e["entity"], e["word"], e["start"], e["end"]] for e in tag(sys.argv[2])])))
"""


@pytest.mark.slow
def test_run_ner_push_to_hub_uploads_a_loadable_repository(tmp_path, monkeypatch):
    hub = RecordingHfApi(tmp_path / "hub")
    monkeypatch.setattr(transformers.utils.hub, "_hf_api", hub)
    monkeypatch.setattr(huggingface_hub.repocard, "hf_hub_download", hub.download)
    output = tmp_path / "out"
    run_ner.main([str(REPO / "training/configs/ner_tagger.json"), "--output_dir", str(output),
                  "--config_overrides", TINY, *SMALL_RUN, "--push_to_hub", "--hub_model_id", "user/tiny-tagger"])
    repo = hub.repo("user/tiny-tagger")
    files = {path.name for path in repo.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "README.md", "attention_0.png",
            "modeling_token_classification.py", "pooling.py", "all_results.json"} <= files
    card = ModelCard.load(repo / "README.md")
    assert card.data.pipeline_tag == "token-classification" and "user/tiny-tagger" in card.text
    assert hub.commits[-1].message == "End of training"

    sentence = " ".join(read_jsonl(NER_DATA / "test.jsonl")[0]["tokens"])
    child = run_child(PUSHED_TAGGER_CHILD, tmp_path, str(repo), sentence, isolated=True, hide_package=True)
    assert child["module"].startswith("transformers_modules.")
    expected = pipeline("token-classification", model=str(output))(sentence)
    assert child["entities"] == [[e["entity"], e["word"], e["start"], e["end"]] for e in expected]
