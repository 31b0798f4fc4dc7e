"""training/tables/translation.py: each setting's arguments, and the table read back from a run's files."""

import json

import pytest

from hf_bahdanau import BahdanauConfig
from training.common.arguments import parse_config_overrides
from training.common.table_runs import plot_panels, validation_curve
from training.tables.translation import (
    CORPORA, GRID, SETTINGS, TABLE, cell, config_path, training_arguments, with_earlier_rows, with_minutes_of,
)


def main(argv):
    TABLE.main(argv)


def table(output_dir, corpus, settings):
    return TABLE.results(["--corpus", corpus, "--settings", *settings, "--output_dir", str(output_dir)])


def markdown(results):
    return TABLE.markdown(results, None)


def plot_curves(results, path, title):
    return plot_panels(results, GRID.panels, path, title, list(SETTINGS))


@pytest.mark.parametrize("corpus", list(CORPORA))
@pytest.mark.parametrize("setting", [name for name, overrides in SETTINGS.items() if overrides is not None])
def test_every_rnn_setting_is_its_configs_model_with_one_change(corpus, setting, tmp_path):
    arguments = training_arguments(corpus, setting, tmp_path / setting, tmp_path, max_train_minutes=None)
    config = json.loads(config_path(corpus, setting).read_text())
    overrides = arguments[arguments.index("--config_overrides") + 1] if SETTINGS[setting] else config["config_overrides"]
    assert overrides.startswith(config["config_overrides"])
    built = BahdanauConfig.from_preset(config["preset"], vocab_size=100, **parse_config_overrides(overrides))
    plain = BahdanauConfig.from_preset(config["preset"], vocab_size=100,
                                       **parse_config_overrides(config["config_overrides"]))
    changed = {key for key, value in built.to_dict().items() if plain.to_dict().get(key) != value}
    expected = set(parse_config_overrides(SETTINGS[setting])) if SETTINGS[setting] else set()
    assert changed == expected
    assert (config["source_column"], config["target_column"]) == CORPORA[corpus]


def test_the_transformer_is_sized_on_the_corpus_rnnsearch_run_and_budgets_pass_through(tmp_path):
    arguments = training_arguments("de_en", "transformer", tmp_path / "t", tmp_path, max_train_minutes=30)
    assert str(config_path("de_en", "transformer")).endswith("de_en_transformer.json")
    assert arguments[arguments.index("--match_rnn_parameters") + 1] == str(tmp_path / "de_en" / "rnnsearch")
    assert arguments[-2:] == ["--max_train_minutes", "30"]
    by_steps = training_arguments("de_en", "local-p", tmp_path / "l", tmp_path, max_train_minutes=None, max_steps=2526)
    assert by_steps[-2:] == ["--max_steps", "2526"] and "--max_train_minutes" not in by_steps


@pytest.mark.parametrize("budget, message", [(["--max_steps", "0"], "--max_steps must be a positive number of steps"),
                                             (["--max_train_minutes", "-1"], "--max_train_minutes must be > 0")])
def test_a_budget_that_trains_nothing_is_refused(budget, message, capsys):
    with pytest.raises(SystemExit):
        main(["--corpus", "de_en", "--settings", "local-p", *budget])
    assert message in capsys.readouterr().err


def test_the_table_reads_test_scores_tuned_penalties_and_the_curve(tmp_path):
    folder = tmp_path / "de_en" / "rnnsearch"
    (folder / "tuned").mkdir(parents=True)
    (folder / "penalties").mkdir()
    (folder / "all_results.json").write_text(json.dumps({"predict_bleu": 20.123, "predict_chrf": 45.678,
                                                         "eval_bleu": 18.0, "num_parameters": 6884512}))
    (folder / "tuned" / "test_results.json").write_text(json.dumps({"bleu": 21.05, "chrf": 46.0,
                                                                    "bleu_signature": "nrefs:1|case:mixed"}))
    (folder / "tuned" / "test_predictions.txt").write_text("Practice makes perfect.\n\nGood morning to you!\n")
    (folder / "penalties" / "beam_penalties.json").write_text(json.dumps(
        {"best": {"length_penalty": 0.6, "coverage_penalty": 0.2}}))
    (folder / "trainer_state.json").write_text(json.dumps({"global_step": 4000, "log_history": [
        {"loss": 3.0, "training_minutes": 10.0}, {"eval_bleu": 12.345, "training_minutes": 15.04, "step": 1000},
        {"eval_bleu": 18.0, "training_minutes": 59.96, "step": 4000}, {"train_runtime": 3700.0}]}))
    results = table(tmp_path, "de_en", ["rnnsearch", "transformer"])  # the transformer has not run: no row
    assert results == {"rnnsearch": {
        "bleu": 20.12, "chrf": 45.68, "parameters": 6884512, "tuned_bleu": 21.05, "tuned_chrf": 46.0,
        "bleu_signature": "nrefs:1|case:mixed", "tuned_words_per_output": 2.33, "length_penalty": 0.6,
        "coverage_penalty": 0.2, "steps": 4000, "training_minutes": 59.96, "validation_bleu_by_minutes": [[15.0, 12.35], [60.0, 18.0]],
        "validation_bleu_by_steps": [[1000, 12.35], [4000, 18.0]]}}
    assert "| rnnsearch | 20.1 | 45.7 | 21.1 | 46.0 | 0.6 | 0.2 | 2.3 | 6,884,512 | 4000 | 60.0 |" in markdown(results)
    plot_curves(results, tmp_path / "curve.png", "de–en")
    (tmp_path / "de_en" / "transformer").mkdir()  # trained and validated, stopped before its test step
    (tmp_path / "de_en" / "transformer" / "all_results.json").write_text(json.dumps({"eval_bleu": 1.54}))
    assert table(tmp_path, "de_en", ["transformer"]) == {"transformer": {}}
    assert "| transformer | – | – | – | – | – | – | – | – | – | – |" in markdown({"transformer": {}})
    assert (tmp_path / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    option = {"validation_bleu_by_minutes": [[20.7, 2.32]], "validation_bleu_by_steps": [[2526, 2.32]]}
    by_minutes, by_steps = plot_curves({**results, "local-p": option}, tmp_path / "curve.png", "de–en").axes
    assert [line.get_label() for line in by_minutes.get_lines()] == ["rnnsearch"]  # an option trained by steps
    assert [line.get_label() for line in by_steps.get_lines()] == ["rnnsearch", "local-p"]
    assert list(by_steps.get_lines()[1].get_xdata()) == [2526]


def test_the_curve_ends_with_the_evaluation_after_training_when_steps_followed_the_last_one():
    history = {"global_step": 1189, "log_history": [
        {"eval_bleu": 0.389, "training_minutes": 13.0, "step": 500}, {"eval_bleu": 9.283, "training_minutes": 25.4,
                                                                      "step": 1000},
        {"loss": 4.6, "training_minutes": 27.8, "step": 1100}, {"step": 1189, "training_minutes": 30.019}]}
    assert validation_curve(history, {"eval_bleu": 12.58}, "bleu", "training_minutes") == [[13.0, 0.39], [25.4, 9.28],
                                                                                  [30.0, 12.58]]
    assert validation_curve(history, {"eval_bleu": 12.58}, "bleu", "step") == [[500, 0.39], [1000, 9.28], [1189, 12.58]]
    history["global_step"] = 1000  # the last evaluation was at the last step: all_results repeats it
    assert validation_curve(history, {"eval_bleu": 9.283}, "bleu", "training_minutes") == [[13.0, 0.39], [25.4, 9.28]]
    assert validation_curve({"global_step": 10, "log_history": [{"loss": 1.0, "training_minutes": 0.5}]},
                            {"eval_bleu": 0.2}, "bleu", "training_minutes") == [[0.5, 0.2]]  # no evaluation during training


def test_a_table_of_no_finished_run_is_refused_and_leaves_the_docs_alone(tmp_path, capsys):
    (tmp_path / "docs").mkdir()
    with pytest.raises(SystemExit):
        main(["--corpus", "de_en", "--table_only", "--output_dir", str(tmp_path / "runs"),
              "--docs_dir", str(tmp_path / "docs")])
    assert "no finished run of ['rnnsearch', 'transformer'] under" in capsys.readouterr().err
    assert list((tmp_path / "docs").iterdir()) == []


def test_a_new_setting_joins_the_docs_table_and_a_rerun_replaces_its_own_row(tmp_path, capsys):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "translation_de_en.json").write_text(json.dumps({"rnnsearch": {"bleu": 4.3}, "transformer": {"bleu": 2.2}}))
    for setting, bleu in (("local-m", 3.9), ("rnnsearch", 4.5)):
        (tmp_path / "runs" / "de_en" / setting).mkdir(parents=True)
        (tmp_path / "runs" / "de_en" / setting / "all_results.json").write_text(json.dumps({"predict_bleu": bleu}))
    main(["--corpus", "de_en", "--settings", "local-m", "--table_only", "--output_dir", str(tmp_path / "runs"),
          "--docs_dir", str(docs)])
    assert "kept from" in capsys.readouterr().out
    assert json.loads((docs / "translation_de_en.json").read_text()) == {
        "rnnsearch": {"bleu": 4.3}, "transformer": {"bleu": 2.2}, "local-m": {"bleu": 3.9}}
    main(["--corpus", "de_en", "--settings", "rnnsearch", "--table_only", "--output_dir", str(tmp_path / "runs"),
          "--docs_dir", str(docs)])
    table_rows = json.loads((docs / "translation_de_en.json").read_text())
    assert list(table_rows) == ["rnnsearch", "transformer", "local-m"] and table_rows["rnnsearch"] == {"bleu": 4.5}
    assert list(with_earlier_rows({"copy": {}}, {"coverage": {}, "rnnsearch": {}})) == ["rnnsearch", "coverage", "copy"]
    new_docs = tmp_path / "docs_60_minutes"  # not yet there: made, holding only this call's rows
    main(["--corpus", "de_en", "--settings", "local-m", "--table_only", "--output_dir", str(tmp_path / "runs"),
          "--docs_dir", str(new_docs)])
    assert json.loads((new_docs / "translation_de_en.json").read_text()) == {"local-m": {"bleu": 3.9}}


def test_a_retrained_row_keeps_the_minutes_of_its_machine_and_takes_the_new_scores(tmp_path, capsys):
    docs = tmp_path / "docs"
    docs.mkdir()
    earlier = {"steps": 705, "training_minutes": 30.03, "validation_bleu_by_minutes": [[20.7, 0.16], [30.0, 1.54]]}
    (docs / "translation_bible_es_en.json").write_text(json.dumps({"rnnsearch": {"bleu": 13.5},
                                                                   "transformer": earlier}))
    folder = tmp_path / "runs" / "bible_es_en" / "transformer"
    folder.mkdir(parents=True)
    (folder / "all_results.json").write_text(json.dumps({"predict_bleu": 1.3, "eval_bleu": 1.5}))
    (folder / "trainer_state.json").write_text(json.dumps({"global_step": 705, "log_history": [
        {"eval_bleu": 0.2, "training_minutes": 14.1, "step": 500}, {"step": 705, "training_minutes": 19.9}]}))
    main(["--corpus", "bible_es_en", "--settings", "transformer", "--table_only", "--keep_docs_minutes",
          "--output_dir", str(tmp_path / "runs"), "--docs_dir", str(docs)])
    rows = json.loads((docs / "translation_bible_es_en.json").read_text())
    assert rows["rnnsearch"] == {"bleu": 13.5}
    assert rows["transformer"] == {"bleu": 1.3, "steps": 705, "training_minutes": 30.03,
                                   "validation_bleu_by_minutes": [[20.7, 0.16], [30.0, 1.54]],
                                   "validation_bleu_by_steps": [[500, 0.2], [705, 1.5]]}
    with pytest.raises(ValueError, match="transformer trained 700 steps and its docs row 705; retrain it with "
                                         "--max_steps 705"):
        with_minutes_of({"steps": 700}, earlier, "transformer")
    (tmp_path / "runs" / "bible_es_en" / "rnnsearch").mkdir()
    (tmp_path / "runs" / "bible_es_en" / "rnnsearch" / "config.json").write_text("{}")  # the Transformer's size
    for budget, message in (([], "which trained 705 steps: add --max_steps 705"),
                            (["--max_steps", "700"], "add --max_steps 705")):
        with pytest.raises(SystemExit):  # refused before training
            main(["--corpus", "bible_es_en", "--settings", "transformer", "--keep_docs_minutes", *budget,
                  "--output_dir", str(tmp_path / "runs"), "--docs_dir", str(docs)])
        assert message in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--corpus", "bible_es_en", "--settings", "local-m", "--keep_docs_minutes", "--max_steps", "705",
              "--output_dir", str(tmp_path / "runs"), "--docs_dir", str(docs)])
    assert "which has no steps to retrain" in capsys.readouterr().err


def test_resume_runs_the_steps_from_the_first_unfinished_one(tmp_path, monkeypatch):
    """A pipeline stopped after training (as the Bible Transformer's was) goes on with tuning and test; a step that
    failed, or never finished, runs again with every step after it; without --resume all three run."""
    import training.common.table_runs as table_runs

    calls = []

    def fake_script(python_arguments, folder):
        calls.append(python_arguments[1])
        return 1.0, 0

    monkeypatch.setattr(table_runs, "run_script", fake_script)
    coverage = cell("de_en", "coverage", tmp_path, None, 2526, 200)
    folder = tmp_path / "de_en" / "coverage"
    assert [step.folder for step in coverage.steps] == [folder, folder / "penalties", folder / "tuned"]

    def finished(log_folder, status=0):
        log_folder.mkdir(parents=True, exist_ok=True)
        (log_folder / "wall_seconds.json").write_text(json.dumps({"seconds": 60.0, "exit_status": status}))

    finished(folder)
    assert table_runs.run_cell(coverage, resume=True) == 0
    assert calls == ["training.tune_beam_penalties", "training.evaluate_seq2seq"]
    calls.clear()
    finished(folder, status=1)  # training failed: all three again, even the tuning that had finished
    finished(folder / "penalties")
    table_runs.run_cell(coverage, resume=True)
    assert calls == ["training", "training.tune_beam_penalties", "training.evaluate_seq2seq"]
    calls.clear()
    finished(folder)
    table_runs.run_cell(coverage)  # no --resume
    assert calls == ["training", "training.tune_beam_penalties", "training.evaluate_seq2seq"]
    monkeypatch.undo()
    # a run that starts again removes the old mark while it runs, so a run killed half-way is not taken for finished
    probe = f"import pathlib; print('marked:', pathlib.Path({str(folder)!r}, 'wall_seconds.json').exists())"
    seconds, status = table_runs.run_script(["-c", probe], folder)
    assert (folder / "run.log").read_text() == "marked: False\n"
    assert status == 0 and json.loads((folder / "wall_seconds.json").read_text())["exit_status"] == 0
