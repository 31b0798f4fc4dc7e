"""training/common/table_runs.py, the results tables' one runner, and the four tables it runs: each table's markdown from
the files real runs leave (the text the scripts wrote before they shared the runner), the grid run ``--jobs`` at a time
with ``--resume``, and the markdown columns and figure panels declared as data."""

import json
import threading
import time

import pytest

import training.common.table_runs as table_runs
from training import babi_table, image_text_table, translation_table, vqa_table
from training.common.table_runs import Cell, Column, Panel, Step, collect, markdown_table, plot_panels


def write(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))


def trainer_state(steps, minutes):
    return {"global_step": steps, "log_history": [{"loss": 1.0, "training_minutes": minutes / 2},
                                                  {"loss": 0.5, "training_minutes": minutes}, {"eval_loss": 0.4}]}


@pytest.fixture
def babi_runs(tmp_path):
    for task, error in ((1, 0.4), (2, 30.0)):
        folder = tmp_path / "memn2n-1k" / f"task{task}"
        write(folder / "all_results.json", {
            "predict_error": error, "train_runtime": 61.4, "predict_hop_1_on_support": 50.0,
            "predict_hop_2_on_support": 25.04, "predict_hop_3_on_support": 100.0, "predict_supports_covered": 75.0,
            "predict_accuracy": 100 - error})
    write(tmp_path / "memn2n-1k" / "task1" / "wall_seconds.json", {"seconds": 70.5, "exit_status": 0})
    write(tmp_path / "coattention-parallel-1k" / "task2" / "all_results.json",
          {"predict_error": 12.345, "train_runtime": 138.0})
    write(tmp_path / "lstm-1k" / "task1" / "run.log", "killed\n")  # never finished: no row
    return tmp_path


BABI_MARKDOWN = """\
| task | memn2n-1k | coattention-parallel-1k | paper PE LS RN 1k | paper PE LS RN 10k | paper 1 hop PE LS joint 1k | paper LSTM 1k |
| --- | --- | --- | --- | --- | --- | --- |
| 1 | 0.4 | – | 0 | 0 | 0.8 | 50 |
| 2 | 30.0 | 12.3 | 8.3 | 0.3 | 62 | 80 |
| 3 | – | – | 40.3 | 9.3 | 76.9 | 80 |
| mean (failed > 5%) | 15.2 (1 failed) | 12.3 (1 failed) | 16.2 (2 failed) | 3.2 (1 failed) | 46.6 (2 failed) | 70.0 (3 failed) |"""
BABI_HOPS = """\
| task | memn2n-1k: hop 1 / 2 / 3 on a supporting fact; all found |
| --- | --- |
| 1 | 50 / 25 / 100; 75 |
| 2 | 50 / 25 / 100; 75 |
| 3 | – |"""


def test_the_babi_tables_from_finished_runs(babi_runs, capsys):
    results_file = babi_runs / "docs" / "babi.json"
    babi_table.main(["--table_only", "--tasks", "1", "2", "3", "--output_dir", str(babi_runs),
                     "--results_file", str(results_file)])
    assert capsys.readouterr().out == f"{BABI_MARKDOWN}\n\n{BABI_HOPS}\n"
    written = json.loads(results_file.read_text())
    assert written["ours"] == {
        "memn2n-1k": {"1": {"error": 0.4, "seconds": 70.5, "hop_1_on_support": 50.0, "hop_2_on_support": 25.0,
                            "hop_3_on_support": 100.0, "supports_covered": 75.0, "train_seconds": 61},
                      "2": {"error": 30.0, "seconds": None, "hop_1_on_support": 50.0, "hop_2_on_support": 25.0,
                            "hop_3_on_support": 100.0, "supports_covered": 75.0, "train_seconds": 61}},
        "coattention-parallel-1k": {"2": {"error": 12.3, "seconds": None, "train_seconds": 138}}}
    assert written["paper"]["LSTM 1k"]["16"] == 77 and written["paper_all_20_tasks"]["LSTM 1k"] == "51.3 (20 failed)"


IMAGE_TEXT_MARKDOWN = """\
| task | attention | sequence accuracy % | CER % | longer: sequence accuracy % | longer: CER % | steps | training minutes |
| --- | --- | --- | --- | --- | --- | --- | --- |
| digits | none | 30.7 | 38.7 | – | – | – | – |
| digits | soft | 81.2 | 6.2 | 50.0 | 12.5 | 300 | 7.25 |
| words | hard | 1.0 | 70.0 | 0.0 | 80.0 | 1500 | 11.961 |"""


def test_the_image_text_table_from_finished_runs(tmp_path, capsys):
    write(tmp_path / "digits" / "soft" / "all_results.json", {
        "predict_sequence_accuracy": 81.25, "predict_cer": 6.25, "predict_long_sequence_accuracy": 50.0,
        "predict_long_cer": 12.5, "predict_loss": 0.3})
    write(tmp_path / "digits" / "soft" / "trainer_state.json", trainer_state(300, 7.25))
    write(tmp_path / "digits" / "none" / "all_results.json", {"predict_sequence_accuracy": 30.66, "predict_cer": 38.71})
    write(tmp_path / "words" / "hard" / "all_results.json", {
        "predict_sequence_accuracy": 1.0, "predict_cer": 70.04, "predict_long_sequence_accuracy": 0.0,
        "predict_long_cer": 80.0})
    write(tmp_path / "words" / "hard" / "trainer_state.json", trainer_state(1500, 11.961))
    results_file = tmp_path / "image_text.json"
    image_text_table.main(["--table_only", "--output_dir", str(tmp_path), "--results_file", str(results_file)])
    assert capsys.readouterr().out == IMAGE_TEXT_MARKDOWN + "\n"
    assert json.loads(results_file.read_text())["digits"] == {
        "none": {"sequence_accuracy": 30.7, "cer": 38.7},
        "soft": {"sequence_accuracy": 81.2, "cer": 6.2, "long_sequence_accuracy": 50.0, "long_cer": 12.5,
                 "steps": 300, "train_minutes": 7.25}}


VQA_MARKDOWN = """\
| model | accuracy % | yes/no % | colour % | shape % | attention peak on the shape % (word / phrase / question level) | steps | training minutes |
| --- | --- | --- | --- | --- | --- | --- | --- |
| parallel | 97.3 | 96.5 | 99.9 | 99.4 | 14.7 / 52.7 / 91.3 | 1500 | 8.01 |
| image_only | 36.6 | 49.6 | 0.0 | 0.1 | – | – | – |
| question_only | 66.6 | – | 10.9 | – | – | 1500 | 1.722 |"""


def test_the_vqa_table_from_finished_runs(tmp_path, capsys, monkeypatch):
    overlaps = {"predict_shape_peak_overlap_word": 14.66, "predict_shape_peak_overlap_phrase": 52.7,
                "predict_shape_peak_overlap_question": 91.34}
    write(tmp_path / "parallel" / "all_results.json", {
        "predict_accuracy": 97.26, "predict_accuracy_yes_no": 96.5, "predict_accuracy_color": 99.94,
        "predict_accuracy_shape": 99.4, **overlaps})
    write(tmp_path / "parallel" / "trainer_state.json", trainer_state(1500, 8.01))
    write(tmp_path / "image_only" / "all_results.json", {  # no attention: its overlap is not shown
        "predict_accuracy": 36.6, "predict_accuracy_yes_no": 49.6, "predict_accuracy_color": 0.0,
        "predict_accuracy_shape": 0.1, **overlaps})
    write(tmp_path / "question_only" / "all_results.json", {"predict_accuracy": 66.6, "predict_accuracy_color": 10.9})
    write(tmp_path / "question_only" / "trainer_state.json", trainer_state(1500, 1.722))
    monkeypatch.setattr(vqa_table, "chance_on_shape", lambda: 0.1604)  # reads easy-VQA's test set
    results_file = tmp_path / "vqa.json"
    vqa_table.main(["--table_only", "--output_dir", str(tmp_path), "--results_file", str(results_file)])
    assert capsys.readouterr().out == (f"{VQA_MARKDOWN}\nA region picked at random overlaps the shape in 16.0% of "
                                       "the test questions.\n")
    written = json.loads(results_file.read_text())
    assert list(written) == ["parallel", "image_only", "question_only", "random_region_on_shape"]
    assert written["image_only"]["shape_peak_overlap"] == {"word": 14.7, "phrase": 52.7, "question": 91.3}
    assert written["random_region_on_shape"] == 16.0


TRANSLATION_MARKDOWN = """\
| model | test BLEU (beam 5) | chrF | tuned BLEU | chrF | α | β | words per output (tuned) | parameters | steps | training minutes |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
| rnnsearch | 20.1 | 45.7 | 21.1 | 46.0 | 0.6 | 0.2 | 2.3 | 6,884,512 | 4000 | 60.0 |
| transformer | 15.5 | – | – | – | – | – | – | 6,900,000 | 5000 | 60.0 |
| local-p | – | – | – | – | – | – | – | – | – | – |"""


def test_the_translation_table_from_finished_runs(tmp_path, capsys):
    folder = tmp_path / "de_en" / "rnnsearch"
    write(folder / "all_results.json", {"predict_bleu": 20.123, "predict_chrf": 45.678, "eval_bleu": 18.0,
                                        "num_parameters": 6884512})
    write(folder / "tuned" / "test_results.json", {"bleu": 21.05, "chrf": 46.0, "bleu_signature": "nrefs:1"})
    write(folder / "tuned" / "test_predictions.txt", "Practice makes perfect.\n\nGood morning to you!\n")
    write(folder / "penalties" / "beam_penalties.json", {"best": {"length_penalty": 0.6, "coverage_penalty": 0.2}})
    write(folder / "trainer_state.json", {"global_step": 4000, "log_history": [
        {"eval_bleu": 12.345, "training_minutes": 15.04, "step": 1000},
        {"eval_bleu": 18.0, "training_minutes": 59.96, "step": 4000}]})
    write(tmp_path / "de_en" / "transformer" / "all_results.json", {"predict_bleu": 15.5, "eval_bleu": 14.0,
                                                                    "num_parameters": 6900000})
    write(tmp_path / "de_en" / "transformer" / "trainer_state.json", {"global_step": 5000, "log_history": [
        {"eval_bleu": 10.0, "training_minutes": 30.0, "step": 2500}, {"step": 5000, "training_minutes": 60.01}]})
    write(tmp_path / "de_en" / "local-p" / "all_results.json", {"eval_bleu": 1.54})  # stopped before its test
    translation_table.main(["--corpus", "de_en", "--settings", "rnnsearch", "transformer", "local-p", "--table_only",
                            "--output_dir", str(tmp_path), "--docs_dir", str(tmp_path / "docs")])
    assert capsys.readouterr().out == TRANSLATION_MARKDOWN + "\n"
    assert json.loads((tmp_path / "docs" / "translation_de_en.json").read_text())["transformer"] == {
        "bleu": 15.5, "parameters": 6900000, "steps": 5000, "training_minutes": 60.01,
        "validation_bleu_by_minutes": [[30.0, 10.0], [60.0, 14.0]],
        "validation_bleu_by_steps": [[2500, 10.0], [5000, 14.0]]}
    assert (tmp_path / "docs" / "translation_de_en_bleu.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def recorded_scripts(monkeypatch):
    """run_script replaced by a recorder: each call's (script, arguments), 0.05 s each, exit status 0 and the
    finished mark a real run leaves."""
    calls = []

    def fake_script(script, arguments, folder):
        calls.append((script.name, arguments))
        time.sleep(0.05)
        write(folder / "wall_seconds.json", {"seconds": 0.05, "exit_status": 0})
        return 0.05, 0

    monkeypatch.setattr(table_runs, "run_script", fake_script)
    return calls


def test_resume_skips_the_finished_runs_of_every_table(tmp_path, recorded_scripts, capsys, monkeypatch):
    """--resume, once only for the translation pipeline, now for every table: the runs whose folder says they
    finished are not run again; each script's arguments are its setting's."""
    monkeypatch.setattr(vqa_table, "chance_on_shape", lambda: 0.16)
    write(tmp_path / "parallel" / "wall_seconds.json", {"seconds": 400.0, "exit_status": 0})
    write(tmp_path / "alternating" / "wall_seconds.json", {"seconds": 9.0, "exit_status": 1})  # failed: runs again
    vqa_table.main(["--settings", "parallel", "alternating", "image_only", "--resume", "--output_dir", str(tmp_path),
                    "--results_file", str(tmp_path / "vqa.json")])
    assert sorted(recorded_scripts) == [  # the table's default --jobs runs them side by side, in either order
        ("run_vqa.py", [str(vqa_table.CONFIG), "--output_dir", str(tmp_path / setting), "--disable_tqdm", "true",
                        *vqa_table.SETTINGS[setting]]) for setting in ("alternating", "image_only")]
    assert f"parallel run_vqa.py: finished before (log: {tmp_path / 'parallel' / 'run.log'})" in capsys.readouterr().out
    recorded_scripts.clear()
    babi_table.main(["--settings", "1hop-1k", "--tasks", "13", "--output_dir", str(tmp_path / "babi"),
                     "--results_file", str(tmp_path / "babi.json")])  # no --resume: every run
    babi_table.main(["--settings", "1hop-1k", "--tasks", "13", "--resume", "--output_dir", str(tmp_path / "babi"),
                     "--results_file", str(tmp_path / "babi.json")])
    folder = str(tmp_path / "babi" / "1hop-1k" / "task13")
    assert recorded_scripts == [("run_memory_qa.py", [str(babi_table.CONFIG), "--babi_task", "13", "--output_dir",
                                                      folder, "--disable_tqdm", "true", "--num_pictures", "2",
                                                      "--config_overrides", "num_hops=1"])]


def test_jobs_runs_that_many_at_a_time(tmp_path, monkeypatch):
    running, most = [0], [0]
    lock = threading.Lock()

    def counting(cell, resume=False):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.1)
        with lock:
            running[0] -= 1
        return int(cell.name)

    monkeypatch.setattr(table_runs, "run_cell", counting)
    assert table_runs.run_grid([Cell((number,), tmp_path, ()) for number in range(5)], 2) == [0, 1, 2, 3, 4]
    assert most[0] == 2


def test_the_transformer_runs_after_rnnsearch_whatever_the_jobs(tmp_path, recorded_scripts, capsys):
    with pytest.raises(SystemExit):  # the recorded runs leave no results to tabulate
        translation_table.main(["--corpus", "de_en", "--settings", "transformer", "local-m", "rnnsearch", "--jobs",
                                "2", "--output_dir", str(tmp_path / "runs"), "--docs_dir", str(tmp_path / "docs")])
    assert "no finished run of ['transformer', 'local-m', 'rnnsearch']" in capsys.readouterr().err
    scripts = [(script, arguments[arguments.index("--output_dir") + 1]) for script, arguments in recorded_scripts]
    rnnsearch = tmp_path / "runs" / "de_en" / "rnnsearch"
    assert scripts[:3] == [("run_seq2seq.py", str(rnnsearch)), ("tune_beam_penalties.py", str(rnnsearch / "penalties")),
                           ("evaluate_seq2seq.py", str(rnnsearch / "tuned"))]  # the Transformer is sized on it
    assert sorted(scripts[3:]) == sorted((script, str(tmp_path / "runs" / "de_en" / setting / part))
                                         for setting in ("transformer", "local-m")
                                         for script, part in (("run_seq2seq.py", ""),
                                                              ("tune_beam_penalties.py", "penalties"),
                                                              ("evaluate_seq2seq.py", "tuned")))


def test_jobs_must_be_positive(capsys):
    with pytest.raises(SystemExit):
        image_text_table.main(["--jobs", "0", "--table_only"])
    assert "argument --jobs: must be a positive number of runs at a time, got 0" in capsys.readouterr().err


def test_the_results_nest_by_the_grids_keys_and_skip_unfinished_runs(tmp_path):
    cells = [Cell((task, setting), tmp_path / task / setting, ()) for task in ("a", "b") for setting in ("x", "y")]
    write(tmp_path / "a" / "y" / "score.json", {"score": 2})
    write(tmp_path / "b" / "x" / "score.json", {"score": 3})
    results = collect(cells, lambda folder: table_runs.read_json(folder / "score.json") or None)
    assert results == {"a": {"y": {"score": 2}}, "b": {"x": {"score": 3}}}
    assert markdown_table(results, ("task", "setting"), (Column("score", "score", "{:.2f}"),)) == (
        "| task | setting | score |\n| --- | --- | --- |\n| a | y | 2.00 |\n| b | x | 3.00 |")


@pytest.mark.parametrize("row, setting, expected", [
    ({"f": 1.26}, "s", "1.3"), ({"f": None}, "s", "–"), ({}, "s", "–"),
    ({"f": "7 (1 failed)"}, "s", "7 (1 failed)"), ({"f": {"word": 1.0, "phrase": 2.25}}, "s", "1.0 / 2.2"),
    ({"f": 1.0}, "blank", "–")])
def test_a_column_writes_its_fields_value_or_a_dash(row, setting, expected):
    assert Column("header", "f", blank_for=("blank",)).cell(setting, row) == expected


def test_a_figure_is_its_panels_with_a_colour_per_setting(tmp_path):
    results = {"b": {"curve": [[1, 2.0], [2, 3.0]]}, "a": {"curve": [[1, 1.0]]}, "c": {}}
    figure = plot_panels(results, (Panel("curve", "x", "y", "{name}: all"),), tmp_path / "f.png", "test", ["a", "b"])
    (ax,) = figure.axes
    assert [line.get_label() for line in ax.get_lines()] == ["b", "a"] and ax.get_title() == "test: all"
    assert [line.get_color() for line in ax.get_lines()] == ["C1", "C0"]
    assert (tmp_path / "f.png").is_file()


def test_a_step_and_its_cell_name_what_they_run():
    cell = table_runs.one_script(("memn2n-1k", 3), table_runs.REPO_ROOT / "out", "run_memory_qa.py", ["--x", "1"])
    assert cell.name == "memn2n-1k 3"
    assert cell.steps == (Step("run_memory_qa.py", ("--x", "1"), table_runs.REPO_ROOT / "out"),)


def test_the_docs_babi_tables_are_the_text_of_the_recorded_results():
    """docs/results.md's bAbI tables as the runner writes them from docs/babi_results.json (the real runs' rows)."""
    recorded = json.loads((table_runs.REPO_ROOT / "docs" / "babi_results.json").read_text())["ours"]
    results = {setting: {int(task): row for task, row in rows.items()} for setting, rows in recorded.items()}
    docs = (table_runs.REPO_ROOT / "docs" / "results.md").read_text()
    assert babi_table.markdown(results, list(babi_table.TASKS)) in docs
    assert babi_table.hop_markdown(results, list(babi_table.TASKS)) in docs
