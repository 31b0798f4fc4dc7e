"""training/evaluate_seq2seq.py (decode and score a split file) and training/tune_beam_penalties.py (GNMT's α and β
by grid search on it), on a tiny G2P model trained for 10 steps: its outputs are partly right, and differ from cell to
cell of the grid."""

import json
import re
import shutil

import pytest
import sacrebleu
import torch

from conftest import exits_as_argparse_does
from hf_bahdanau import BahdanauConfig, BahdanauForConditionalGeneration
from training.evaluate_seq2seq import main as evaluate_main
from training.common.tokenization import train_tokenizer
from training.tune_beam_penalties import best_cell, check_penalties_supported
from training.tune_beam_penalties import main as tune_main

WORDS = {"abbe": ["AE1 B IY0", "AE0 B EY1"], "bout": ["B AW1 T"], "forbush": ["F AO1 R B UH2 SH"],
         "tab": ["T AE1 B"], "bet": ["B EH1 T"]}
GRID = ["--length_penalties", "0", "1", "3", "--coverage_penalties", "0", "0.5", "3"]


def save_tiny_model(folder, steps: int, preset: str = "rnnsearch") -> None:
    """A tiny ``preset`` model trained for ``steps`` AdamW steps on WORDS (their first pronunciations), with its
    tokenizer."""
    tokenizer = train_tokenizer([*WORDS, *(phonemes for variants in WORDS.values() for phonemes in variants)],
                                kind="g2p")
    config = BahdanauConfig.from_preset(preset, vocab_size=len(tokenizer), embedding_size=8, hidden_size=16,
                                        attention_size=8, output_size=8, encoder_layers=1, decoder_layers=1)
    torch.manual_seed(0)
    model = BahdanauForConditionalGeneration(config)
    batch = tokenizer(list(WORDS), padding=True, return_tensors="pt")
    labels = tokenizer(text_target=[variants[0] for variants in WORDS.values()], padding=True,
                       return_tensors="pt")["input_ids"]
    labels[labels == tokenizer.pad_token_id] = -100
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-2)
    for _ in range(steps):
        model(**batch, labels=labels).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    model.generation_config.max_new_tokens = 8
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """{"model": a trained tiny model's folder, "validation": its 5-row file with references}."""
    root = tmp_path_factory.mktemp("penalties")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    save_tiny_model(root / "model", steps=10)
    (root / "validation.jsonl").write_text("".join(
        json.dumps({"source": word, "target": variants[0], "references": variants}) + "\n"
        for word, variants in WORDS.items()))
    yield {"model": root / "model", "validation": root / "validation.jsonl"}
    torch.set_num_threads(threads)


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)  # the bundled metrics, without Hub tries


def test_the_evaluation_scores_its_own_predictions_file_as_sacrebleu_does(files, tmp_path, capsys):
    metrics = evaluate_main(["--model_name_or_path", str(files["model"]), "--validation_file",
                             str(files["validation"]), "--num_beams", "3", "--length_penalty", "1",
                             "--length_penalty_style", "gnmt", "--coverage_penalty", "0.5", "--score_without_stress",
                             "--output_dir", str(tmp_path)])
    assert json.loads((tmp_path / "validation_results.json").read_text()) == metrics
    predictions = (tmp_path / "validation_predictions.txt").read_text().splitlines()
    targets = [variants[0] for variants in WORDS.values()]
    assert len(predictions) == 5 and 0 < metrics["bleu"] < 100  # partly right: the comparison below means something
    assert metrics["bleu"] == pytest.approx(sacrebleu.corpus_bleu(predictions, [targets]).score, abs=1e-9)
    assert metrics["chrf"] == pytest.approx(sacrebleu.corpus_chrf(predictions, [targets]).score, abs=1e-9)
    assert metrics["bleu_signature"] == f"nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:{sacrebleu.__version__}"
    assert metrics["chrf_signature"].startswith("nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|")
    wrong = sum(output not in variants for output, variants in zip(predictions, WORDS.values()))
    assert metrics["exact_match"] == pytest.approx(100 * sum(map(str.__eq__, predictions, targets)) / 5)
    assert metrics["wer"] == pytest.approx(100 * wrong / 5)
    stressless = [[variant.translate(str.maketrans("", "", "012")) for variant in variants]
                  for variants in WORDS.values()]
    wrong_without_stress = sum(output.translate(str.maketrans("", "", "012")) not in variants
                               for output, variants in zip(predictions, stressless))
    assert metrics["wer_no_stress"] == pytest.approx(100 * wrong_without_stress / 5)
    assert metrics["generation"] == {"num_beams": 3, "max_new_tokens": 8, "length_penalty": 1.0,
                                     "length_penalty_style": "gnmt", "coverage_penalty": 0.5}
    assert metrics["num_samples"] == 5 and metrics["decode_seconds"] > 0

    error = exits_as_argparse_does(lambda: evaluate_main(["--model_name_or_path", str(files["model"]), "--output_dir",
                                                         str(tmp_path)]), "--validation_file", capsys)
    assert "error: Give exactly one of `--validation_file` and `--test_file`" in error
    error = exits_as_argparse_does(lambda: evaluate_main(["--model_name_or_path", str(files["model"]), "--test_file",
                                                         str(files["validation"]), "--coverage_penalty", "-0.1",
                                                         "--output_dir", str(tmp_path)]), "--coverage_penalty", capsys)
    assert "error: `--coverage_penalty` must be a number ≥ 0 (GNMT's β; 0 turns it off), got -0.1" in error
    error = exits_as_argparse_does(lambda: evaluate_main(["--model_name_or_path", str(files["model"]), "--test_file",
                                                         str(files["validation"]), "--update_model_card", "true",
                                                         "--max_samples", "2", "--output_dir", str(tmp_path)]),
                                   "--max_samples", capsys)
    assert "error: `--update_model_card` records scores on the whole split, and `--max_samples` 2 scores" in error
    error = exits_as_argparse_does(lambda: evaluate_main(["--model_name_or_path", str(tmp_path / "absent"),
                                                         "--test_file", str(files["validation"]), "--output_dir",
                                                         str(tmp_path)]), "--model_name_or_path", capsys)
    assert str(tmp_path / "absent") in error and "usage:" not in error


def test_the_tuner_fills_the_grid_picks_the_best_cell_and_stores_it(files, tmp_path, capsys):
    model = tmp_path / "model"
    shutil.copytree(files["model"], model)
    results = tune_main(["--model_name_or_path", str(model), "--validation_file", str(files["validation"]),
                         "--num_beams", "3", "--metric", "chrf", *GRID, "--write_generation_config",
                         "--output_dir", str(tmp_path / "tuning")])
    assert json.loads((tmp_path / "tuning" / "beam_penalties.json").read_text()) == results
    cells = [(cell["length_penalty"], cell["coverage_penalty"]) for cell in results["grid"]]
    assert cells == [(alpha, beta) for alpha in (0, 1, 3) for beta in (0, 0.5, 3)]
    scores = [cell["metrics"]["chrf"] for cell in results["grid"]]
    assert len(set(scores)) > 1  # else any cell would be "the best"
    best = results["best"]
    assert best == results["grid"][scores.index(max(scores))]  # the highest, the first of equals
    for cell in results["grid"]:
        assert cell["metrics"]["generation"] == {"num_beams": 3, "max_new_tokens": 8, "length_penalty_style": "gnmt",
                                                 "length_penalty": cell["length_penalty"],
                                                 "coverage_penalty": cell["coverage_penalty"]}
    table = capsys.readouterr().out.splitlines()
    assert table[0] == "| chrf: α \\ β | 0 | 0.5 | 3 |" and len(table[2:5]) == 3
    assert sum("**" in line for line in table[2:5]) == 1
    assert f"**{best['metrics']['chrf']:.2f}**" in table[2 + (0, 1, 3).index(best["length_penalty"])]

    stored = json.loads((model / "generation_config.json").read_text())
    assert (stored["num_beams"], stored["length_penalty"], stored["length_penalty_style"],
            stored["coverage_penalty"]) == (3, best["length_penalty"], "gnmt", best["coverage_penalty"])
    later = evaluate_main(["--model_name_or_path", str(model), "--validation_file", str(files["validation"]),
                           "--output_dir", str(tmp_path / "later")])  # no options: the stored ones
    assert later["generation"] == best["metrics"]["generation"]
    assert later["chrf"] == best["metrics"]["chrf"] and later["bleu"] == best["metrics"]["bleu"]


def test_an_error_rate_is_tuned_downwards():
    grid = [{"length_penalty": alpha, "coverage_penalty": 0.0, "metrics": {"wer": wer, "bleu": bleu}}
            for alpha, wer, bleu in ((0.0, 30.0, 10.0), (0.2, 20.0, 5.0), (0.4, 20.0, 50.0), (0.6, 40.0, 50.0))]
    assert best_cell(grid, "wer")["length_penalty"] == 0.2  # the lowest, the first of equals
    assert best_cell(grid, "bleu")["length_penalty"] == 0.4


def test_the_tuner_tunes_wer_without_stress_on_the_references(files, tmp_path):
    results = tune_main(["--model_name_or_path", str(files["model"]), "--validation_file", str(files["validation"]),
                         "--num_beams", "3", "--metric", "wer_no_stress", "--length_penalties", "0", "3",
                         "--coverage_penalties", "0", "--output_dir", str(tmp_path)])
    rates = [cell["metrics"]["wer_no_stress"] for cell in results["grid"]]
    assert results["best"]["metrics"]["wer_no_stress"] == min(rates) and results["higher_is_better"] is False


@pytest.mark.parametrize("flags, message", [
    (["--coverage_penalties", "0", "-0.1"], r"`--coverage_penalties` must be finite numbers ≥ 0 \(GNMT's β\), got "
                                            r"-0.1 in \[0.0, -0.1\]"),
    (["--length_penalties", "nan"], r"`--length_penalties` must be finite numbers \(α\), got nan"),
    (["--length_penalties", "0", "0"], r"`--length_penalties` repeats a value: \[0.0, 0.0\]"),
    (["--metric", "accuracy"], r"`--metric` must be one of \['bleu', 'chrf', .*\], got 'accuracy'"),
    (["--coverage_penalty", "0.2"], r"`--coverage_penalty` 0.2: the tuner tries the values of `--coverage_penalties`"),
])
def test_bad_grids_and_options_end_as_argparse_does(files, tmp_path, capsys, flags, message):
    error = exits_as_argparse_does(lambda: tune_main(["--model_name_or_path", str(files["model"]), "--validation_file",
                                                     str(files["validation"]), "--num_beams", "3", *flags,
                                                     "--output_dir", str(tmp_path)]), flags[0], capsys)
    assert re.search(f"error: {message}", error), error
    assert not (tmp_path / "beam_penalties.json").exists()


def test_a_beam_of_one_is_refused_once_the_model_is_read(files, tmp_path, capsys):
    exits_as_argparse_does(lambda: tune_main(["--model_name_or_path", str(files["model"]), "--validation_file",
                                              str(files["validation"]), "--num_beams", "1", "--output_dir",
                                              str(tmp_path)]), "give `--num_beams` ≥ 2", capsys)
    assert not (tmp_path / "beam_penalties.json").exists()


def test_a_grid_value_that_is_no_number_is_refused_by_the_parser(files, tmp_path, capsys):
    with pytest.raises(SystemExit):
        tune_main(["--model_name_or_path", str(files["model"]), "--validation_file", str(files["validation"]),
                   "--coverage_penalties", "0", "high", "--output_dir", str(tmp_path)])
    assert "argument --coverage_penalties/--coverage-penalties: invalid float value: 'high'" in capsys.readouterr().err


def test_models_that_cannot_score_the_coverage_penalty_are_refused(files, tmp_path, capsys):
    save_tiny_model(tmp_path / "no-attention", steps=0, preset="rnnencdec")
    exits_as_argparse_does(lambda: tune_main(["--model_name_or_path", str(tmp_path / "no-attention"),
                                              "--validation_file", str(files["validation"]), "--num_beams", "3",
                                              "--coverage_penalties", "0", "0.2", "--output_dir", str(tmp_path)]),
                           "`--coverage_penalties` [0.0, 0.2]: the coverage penalty scores the attention weights, and "
                           "this model has none (attention_type='none')", capsys)
    error = exits_as_argparse_does(lambda: tune_main(["--model_name_or_path", str(files["model"]), "--ensemble",
                                                     str(files["model"]), "--validation_file", str(files["validation"]),
                                                     "--num_beams", "3", "--output_dir", str(tmp_path)]),
                                   "--coverage_penalties", capsys)
    assert "an ensemble takes no coverage penalty (each member has its own attention)" in error
    with pytest.raises(ValueError, match=r"Module decodes with transformers' beam search, which takes neither "
                                         r"length_penalty_style='gnmt' nor coverage_penalty"):
        check_penalties_supported(torch.nn.Module(), "gnmt", [0.0])
    check_penalties_supported(torch.nn.Module(), "transformers", [0.0])  # α alone: any model's beam search


def test_an_ensemble_of_a_model_with_itself_decodes_as_the_model(files, tmp_path):
    pytest.importorskip("hf_bahdanau.ensemble")
    flags = ["--validation_file", str(files["validation"]), "--num_beams", "3", "--length_penalty", "1"]
    alone = evaluate_main(["--model_name_or_path", str(files["model"]), *flags, "--output_dir", str(tmp_path / "one")])
    ensemble = evaluate_main(["--model_name_or_path", str(files["model"]), "--ensemble", str(files["model"]), *flags,
                              "--output_dir", str(tmp_path / "two")])
    assert ensemble["ensemble"] == [str(files["model"])]
    assert ((tmp_path / "two" / "validation_predictions.txt").read_text() ==
            (tmp_path / "one" / "validation_predictions.txt").read_text())


def test_a_transformer_gets_its_length_penalty_tuned_alone(files, tmp_path):
    """The baseline's beam search (transformers') takes α with its |Y|^α: the grid's style and β stay out of it."""
    from transformers import AutoTokenizer, MarianConfig, MarianMTModel

    tokenizer = AutoTokenizer.from_pretrained(files["model"])
    torch.manual_seed(0)
    model = MarianMTModel(MarianConfig(
        vocab_size=len(tokenizer), d_model=8, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
        decoder_attention_heads=2, encoder_ffn_dim=16, decoder_ffn_dim=16, max_position_embeddings=16,
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
        decoder_start_token_id=tokenizer.bos_token_id, forced_eos_token_id=tokenizer.eos_token_id))
    model.generation_config.max_new_tokens = 8
    model.save_pretrained(tmp_path / "transformer")
    tokenizer.save_pretrained(tmp_path / "transformer")
    results = tune_main(["--model_name_or_path", str(tmp_path / "transformer"), "--validation_file",
                         str(files["validation"]), "--num_beams", "2", "--length_penalty_style", "transformers",
                         "--length_penalties", "0", "1", "--coverage_penalties", "0", "--write_generation_config",
                         "--output_dir", str(tmp_path / "tuning")])
    assert [cell["metrics"]["generation"]["length_penalty"] for cell in results["grid"]] == [0.0, 1.0]
    stored = json.loads((tmp_path / "transformer" / "generation_config.json").read_text())
    assert stored["num_beams"] == 2 and stored["length_penalty"] == results["best"]["length_penalty"]
    assert "coverage_penalty" not in stored and "length_penalty_style" not in stored


def test_the_tuned_test_scores_replace_the_trained_ones_in_the_card(files, tmp_path):
    from huggingface_hub import ModelCard

    folder = tmp_path / "model"
    shutil.copytree(files["model"], folder)
    (folder / "all_results.json").write_text(json.dumps({"eval_bleu": 1.5, "predict_bleu": 2.5, "train_loss": 3.0}))
    metrics = evaluate_main(["--model_name_or_path", str(folder), "--test_file", str(files["validation"]),
                             "--num_beams", "3", "--update_model_card", "--output_dir", str(tmp_path / "test")])
    index = ModelCard.load(folder / "README.md").data.eval_results
    scores = {(result.dataset_split, result.metric_type): result.metric_value for result in index}
    assert scores[("validation", "bleu")] == 1.5  # what training measured on validation stays
    assert scores[("test", "bleu")] == round(metrics["bleu"], 4) != 2.5
    assert scores[("test", "chrf")] == round(metrics["chrf"], 4)
    assert {metric for split, metric in scores if split == "test"} == {"bleu", "chrf", "exact_match", "wer", "per"}


@pytest.mark.parametrize("flags, message", [
    (["--ensemble", "MODEL"], r"`--update_model_card` records one model's scores, and `--ensemble`"),
    (["--max_samples", "2"], r"`--update_model_card` records scores on the whole split, and `--max_samples` 2"),
])
def test_a_card_update_from_partial_or_shared_scores_is_refused(files, tmp_path, capsys, flags, message):
    flags = [str(files["model"]) if flag == "MODEL" else flag for flag in flags]
    error = exits_as_argparse_does(lambda: evaluate_main([
        "--model_name_or_path", str(files["model"]), "--test_file", str(files["validation"]), "--update_model_card",
        *flags, "--output_dir", str(tmp_path)]), "--update_model_card", capsys)
    assert re.search(message, error), error
    assert not (files["model"] / "README.md").exists()


def test_a_card_update_needs_a_local_folder(tmp_path, capsys):
    error = exits_as_argparse_does(lambda: evaluate_main([
        "--model_name_or_path", "org/name", "--test_file", "test.jsonl", "--update_model_card", "--output_dir",
        str(tmp_path)]), "--model_name_or_path", capsys)
    assert "`--model_name_or_path` 'org/name' is not a folder with a config.json" in error, error
