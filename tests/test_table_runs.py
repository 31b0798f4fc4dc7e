"""training/common/table_runs.py, the results tables' one runner, the tables of training/tables/ and a grid of one's
own (``python -m training.tables TABLE``): each table's markdown from the files real runs leave (the text the scripts
wrote before they shared the runner), the grid run ``--jobs`` at a time with ``--resume``, each step through the
training driver, and the markdown columns and figure panels declared as data."""

import json
import subprocess
import sys
import threading
import time

import pytest

import training.common.table_runs as table_runs
from training.common.table_runs import Cell, Column, Grid, Panel, Setting, Step, collect, markdown_table, plot_panels
from training.tables import babi, image_text, load_table, table_names, translation, vqa
from training.tables import main as tables_main


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
| mean (failed > 5%) | 15.2 (1 of 2 failed) | 12.3 (1 of 1 failed) | 16.2 (2 of 3 failed) | 3.2 (1 of 3 failed) \
| 46.6 (2 of 3 failed) | 70.0 (3 of 3 failed) |"""
BABI_HOPS = """\
| task | memn2n-1k: hop 1 / 2 / 3 on a supporting fact; all found |
| --- | --- |
| 1 | 50 / 25 / 100; 75 |
| 2 | 50 / 25 / 100; 75 |
| 3 | – |"""


def test_the_babi_tables_from_finished_runs(babi_runs, capsys):
    results_file = babi_runs / "docs" / "babi.json"
    tables_main(["babi", "--table_only", "--tasks", "1", "2", "3", "--output_dir", str(babi_runs),
                 "--results_file", str(results_file)])
    assert capsys.readouterr().out == f"{BABI_MARKDOWN}\n\n{BABI_HOPS}\n"
    written = json.loads(results_file.read_text())
    assert written["ours"] == {
        "memn2n-1k": {"1": {"error": 0.4, "seconds": 70.5, "hop_1_on_support": 50.0, "hop_2_on_support": 25.0,
                            "hop_3_on_support": 100.0, "supports_covered": 75.0, "train_seconds": 61},
                      "2": {"error": 30.0, "seconds": None, "hop_1_on_support": 50.0, "hop_2_on_support": 25.0,
                            "hop_3_on_support": 100.0, "supports_covered": 75.0, "train_seconds": 61}},
        "coattention-parallel-1k": {"2": {"error": 12.3, "seconds": None, "train_seconds": 138}}}
    assert written["paper"]["LSTM 1k"]["16"] == 77 and written["paper_all_20_tasks"]["LSTM 1k"] == (
        "51.3 (20 of 20 failed)")



def test_a_joint_babi_run_gives_a_row_per_task_and_new_tasks_have_no_paper_figure(tmp_path, capsys):
    """joint-1k's one run (OUTPUT_DIR/joint-1k/) gives its row per task from all_results.json's *_task_N metrics, beside
    a per-task setting's runs; task 4, whose paper figures the table does not hold, shows "–" in the paper's columns,
    and each column's mean counts only the tasks it has."""
    per_task = {f"predict_{name}_task_{task}": value for task, values in ((1, (1.04, 90.0)), (4, (20.0, 40.0)))
                for name, value in (("error", values[0]), ("accuracy", 100 - values[0]),
                                    ("hop_1_on_support", values[1]), ("hop_2_on_support", 50.0),
                                    ("hop_3_on_support", 10.0), ("supports_covered", 60.0))}
    write(tmp_path / "joint-1k" / "all_results.json", {"predict_error": 10.5, "predict_hop_1_on_support": 65.0,
                                                       "train_runtime": 300.2, **per_task})
    write(tmp_path / "joint-1k" / "wall_seconds.json", {"seconds": 320.0, "exit_status": 0})
    write(tmp_path / "memn2n-paper-1k" / "task4" / "all_results.json", {"predict_error": 3.0, "train_runtime": 40.0})
    tables_main(["babi", "--table_only", "--settings", "memn2n-paper-1k", "joint-1k", "--tasks", "1", "4",
                 "--output_dir", str(tmp_path), "--results_file", str(tmp_path / "babi.json")])
    assert capsys.readouterr().out == """\
| task | memn2n-paper-1k | joint-1k | paper PE LS RN 1k | paper PE LS RN 10k | paper 1 hop PE LS joint 1k | paper LSTM 1k |
| --- | --- | --- | --- | --- | --- | --- |
| 1 | – | 1.0 | 0 | 0 | 0.8 | 50 |
| 4 | 3.0 | 20.0 | – | – | – | – |
| mean (failed > 5%) | 3.0 (0 of 1 failed) | 10.5 (1 of 2 failed) | 0.0 (0 of 1 failed) | 0.0 (0 of 1 failed) \
| 0.8 (0 of 1 failed) | 50.0 (1 of 1 failed) |

| task | joint-1k: hop 1 / 2 / 3 on a supporting fact; all found |
| --- | --- |
| 1 | 90 / 50 / 10; 60 |
| 4 | 40 / 50 / 10; 60 |
"""
    joint = {"seconds": 320.0, "train_seconds": 300, "hop_2_on_support": 50.0, "hop_3_on_support": 10.0,
             "supports_covered": 60.0}
    assert json.loads((tmp_path / "babi.json").read_text())["ours"] == {
        "memn2n-paper-1k": {"4": {"error": 3.0, "seconds": None, "train_seconds": 40}},
        "joint-1k": {"1": {"error": 1.0, "hop_1_on_support": 90.0, **joint},
                     "4": {"error": 20.0, "hop_1_on_support": 40.0, **joint}}}


def test_the_babi_paper_recipe_and_joint_settings_commands(tmp_path, recorded_scripts):
    """memn2n-paper-1k: the paper's config, the best of babi.RESTARTS restarts by validation error, per task;
    joint-1k: one run over all 20 tasks in OUTPUT_DIR/joint-1k/, whatever --tasks says."""
    tables_main(["babi", "--settings", "memn2n-paper-1k", "joint-1k", "--tasks", "4", "--jobs", "1", "--output_dir",
                 str(tmp_path), "--results_file", str(tmp_path / "babi.json")])
    configs = table_runs.REPO_ROOT / "training" / "configs"
    assert babi.RESTARTS == 3 and babi.TASKS == tuple(range(1, 21))
    assert recorded_scripts == [
        ["-m", "training", "memory-qa", str(configs / "babi_memn2n_paper.json"), "--output_dir",
         str(tmp_path / "memn2n-paper-1k" / "task4"), "--disable_tqdm", "true", "--num_pictures", "2", "--babi_task",
         "4", "--num_restarts", "3", "--metric_for_best_model", "error", "--greater_is_better", "false"],
        ["-m", "training", "memory-qa", str(configs / "babi_memn2n.json"), "--output_dir", str(tmp_path / "joint-1k"),
         "--disable_tqdm", "true", "--num_pictures", "2", "--babi_task", "all"]]


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
    tables_main(["image-text", "--table_only", "--output_dir", str(tmp_path), "--results_file", str(results_file)])
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
    monkeypatch.setattr(vqa, "chance_on_shape", lambda: 0.1604)  # reads easy-VQA's test set
    results_file = tmp_path / "vqa.json"
    tables_main(["vqa", "--table_only", "--output_dir", str(tmp_path), "--results_file", str(results_file)])
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
    tables_main(["translation", "--corpus", "de_en", "--settings", "rnnsearch", "transformer", "local-p",
                 "--table_only", "--output_dir", str(tmp_path), "--docs_dir", str(tmp_path / "docs")])
    assert capsys.readouterr().out == TRANSLATION_MARKDOWN + "\n"
    assert json.loads((tmp_path / "docs" / "translation_de_en.json").read_text())["transformer"] == {
        "bleu": 15.5, "parameters": 6900000, "steps": 5000, "training_minutes": 60.01,
        "validation_bleu_by_minutes": [[30.0, 10.0], [60.0, 14.0]],
        "validation_bleu_by_steps": [[2500, 10.0], [5000, 14.0]]}
    assert (tmp_path / "docs" / "translation_de_en_bleu.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def recorded_scripts(monkeypatch):
    """run_script replaced by a recorder: each call's python arguments (``-m MODULE ...``), 0.05 s each, exit status
    0 and the finished mark a real run leaves."""
    calls = []

    def fake_script(python_arguments, folder):
        calls.append(python_arguments)
        time.sleep(0.05)
        write(folder / "wall_seconds.json", {"seconds": 0.05, "exit_status": 0})
        return 0.05, 0

    monkeypatch.setattr(table_runs, "run_script", fake_script)
    return calls


def test_resume_skips_the_finished_runs_of_every_table(tmp_path, recorded_scripts, capsys, monkeypatch):
    """--resume, once only for the translation pipeline, now for every table: the runs whose folder says they
    finished are not run again; each run is its setting's task through the driver, with its config and arguments."""
    monkeypatch.setattr(vqa, "chance_on_shape", lambda: 0.16)
    write(tmp_path / "parallel" / "wall_seconds.json", {"seconds": 400.0, "exit_status": 0})
    write(tmp_path / "alternating" / "wall_seconds.json", {"seconds": 9.0, "exit_status": 1})  # failed: runs again
    tables_main(["vqa", "--settings", "parallel", "alternating", "image_only", "--resume", "--output_dir",
                 str(tmp_path), "--results_file", str(tmp_path / "vqa.json")])
    config = str(table_runs.REPO_ROOT / "training" / "configs" / "easy_vqa.json")
    assert sorted(recorded_scripts) == [  # the table's default --jobs runs them side by side, in either order
        ["-m", "training", "vqa", config, "--output_dir", str(tmp_path / "alternating"), "--disable_tqdm", "true",
         "--coattention", "alternating"],
        ["-m", "training", "vqa", config, "--output_dir", str(tmp_path / "image_only"), "--disable_tqdm", "true",
         "--coattention", "none", "--inputs", "context"]]
    assert f"parallel training vqa: finished before (log: {tmp_path / 'parallel' / 'run.log'})" in (
        capsys.readouterr().out)
    recorded_scripts.clear()
    for resume in ([], ["--resume"]):  # without --resume every run, then none
        tables_main(["babi", "--settings", "1hop-1k", "coattention-parallel-1k", "--tasks", "13", "--output_dir",
                     str(tmp_path / "babi"), "--results_file", str(tmp_path / "babi.json"), *resume])
    folder = tmp_path / "babi" / "{}" / "task13"
    config = str(table_runs.REPO_ROOT / "training" / "configs" / "babi_memn2n.json")
    assert sorted(recorded_scripts) == [
        ["-m", "training", "memory-qa", config, "--output_dir", str(folder).format("1hop-1k"), "--disable_tqdm",
         "true", "--num_pictures", "2", "--babi_task", "13", "--config_overrides", "num_hops=1"],
        ["-m", "training", "passage-qa", config, "--output_dir", str(folder).format("coattention-parallel-1k"),
         "--disable_tqdm", "true", "--num_pictures", "2", "--babi_task", "13", *babi.COATTENTION]]


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
        tables_main(["translation", "--corpus", "de_en", "--settings", "transformer", "local-m", "rnnsearch",
                     "--jobs", "2", "--output_dir", str(tmp_path / "runs"), "--docs_dir", str(tmp_path / "docs")])
    assert "no finished run of ['transformer', 'local-m', 'rnnsearch']" in capsys.readouterr().err
    steps = [(" ".join(arguments[1:3] if arguments[1] == "training" else arguments[1:2]),
              arguments[arguments.index("--output_dir") + 1]) for arguments in recorded_scripts]
    pipeline = (("training seq2seq", ""), ("training.tune_beam_penalties", "penalties"),
                ("training.evaluate_seq2seq", "tuned"))
    rnnsearch = tmp_path / "runs" / "de_en" / "rnnsearch"
    assert steps[:3] == [(module, str(rnnsearch / part)) for module, part in pipeline]  # the Transformer is sized on it
    assert sorted(steps[3:]) == sorted((module, str(tmp_path / "runs" / "de_en" / setting / part))
                                       for setting in ("transformer", "local-m") for module, part in pipeline)


def test_jobs_must_be_positive(capsys):
    with pytest.raises(SystemExit):
        tables_main(["image-text", "--jobs", "0", "--table_only"])
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


def test_a_step_and_its_cell_name_what_they_run(tmp_path):
    cell = babi.TABLE.cell(("memn2n-1k", 3), "memn2n-1k", tmp_path, "--x", "1", config="training/configs/x.json")
    assert cell.name == "memn2n-1k 3" and cell.steps[0].name == "training memory-qa"
    assert cell.steps == (Step(("training", "memory-qa"), (
        str(table_runs.REPO_ROOT / "training" / "configs" / "x.json"), "--output_dir", str(tmp_path), "--disable_tqdm",
        "true", "--num_pictures", "2", "--x", "1"), tmp_path),)


def test_the_docs_babi_tables_are_the_text_of_the_recorded_results():
    """docs/results.md's bAbI tables as the runner writes them from docs/babi_results.json (the real runs' rows)."""
    recorded = json.loads((table_runs.REPO_ROOT / "docs" / "babi_results.json").read_text())["ours"]
    results = {setting: {int(task): row for task, row in rows.items()} for setting, rows in recorded.items()}
    tasks = sorted({task for rows in results.values() for task in rows})  # the tasks run so far
    docs = (table_runs.REPO_ROOT / "docs" / "results.md").read_text()
    assert babi.errors_markdown(results, tasks) in docs
    assert babi.hop_markdown(results, tasks) in docs


TOY_TEXTS = [("the cat sat .", "animal"), ("a dog ran .", "animal"), ("stocks fell today .", "money"),
             ("the bank paid .", "money")]


def toy_grid(tmp_path):
    """A grid of one's own: two tiny classifiers trained 3 steps on a toy data set, a column per metric and a panel
    of the validation accuracy by steps."""
    files = []
    for split in ("train", "validation", "test"):
        write(tmp_path / f"{split}.jsonl", "".join(json.dumps({"text": text, "label": label}) + "\n"
                                                   for text, label in TOY_TEXTS * 4))
        files += [f"--{split}_file", str(tmp_path / f"{split}.jsonl")]
    grid = {
        "description": "Two tiny classifiers on four sentences",
        "task": "classification",
        "arguments": [*files, "--preset", "rnnsearch", "--tokenizer_type", "word", "--do_train", "--do_eval",
                      "--do_predict", "--max_steps", "3", "--eval_strategy", "steps", "--eval_steps", "2",
                      "--logging_steps", "1", "--report_to", "none", "--save_strategy", "no", "--num_pictures", "0"],
        "settings": {"h8": {"arguments": ["--config_overrides", "embedding_size=8,hidden_size=8"]},
                     "h16": {"arguments": ["--config_overrides", "embedding_size=8,hidden_size=16"]}},
        "metrics": ["accuracy", "f1"],
        "panels": [{"field": "validation_accuracy_by_steps", "xlabel": "training steps",
                    "ylabel": "validation accuracy %", "title": "{name}: by steps"}],
    }
    write(tmp_path / "toy_grid.json", grid)
    return tmp_path / "toy_grid.json"


def test_a_grid_of_ones_own_runs_through_the_driver_and_writes_the_table_results_and_figure(tmp_path, capsys):
    """``python -m training.tables GRID.json``: each setting is the task trained through ``python -m training``;
    the results JSON, the markdown and the figure (OUTPUT_DIR/results.json and .png) come from the runs' files."""
    grid, runs = toy_grid(tmp_path), tmp_path / "runs"
    finished = subprocess.run([sys.executable, "-m", "training.tables", str(grid), "--jobs", "2", "--output_dir",
                               str(runs)], cwd=table_runs.REPO_ROOT, capture_output=True, text=True, timeout=600)
    assert finished.returncode == 0, finished.stderr + (runs / "h8" / "run.log").read_text()
    results = json.loads((runs / "results.json").read_text())
    assert list(results) == ["h8", "h16"]
    for setting, row in results.items():
        metrics = json.loads((runs / setting / "all_results.json").read_text())
        assert json.loads((runs / setting / "config.json").read_text())["hidden_size"] == int(setting[1:])
        assert {key: row[key] for key in ("accuracy", "f1", "steps")} == {
            "accuracy": round(metrics["predict_accuracy"], 1), "f1": round(metrics["predict_f1"], 1), "steps": 3}
        assert [step for step, _ in row["validation_accuracy_by_steps"]] == [2, 3]  # during training, then after
        assert row["validation_accuracy_by_steps"][-1][1] == round(metrics["eval_accuracy"], 2)
        line = f"| {setting} | {row['accuracy']:.1f} | {row['f1']:.1f} | 3 | {row['train_minutes']} |"
        assert line in finished.stdout
    assert "| setting | accuracy | f1 | steps | training minutes |" in finished.stdout
    assert (runs / "results.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    tables_main([str(grid), "--resume", "--output_dir", str(runs), "--results_file", str(tmp_path / "again.json")])
    out = capsys.readouterr().out
    assert f"h16 training classification: finished before (log: {runs / 'h16' / 'run.log'})" in out
    assert json.loads((tmp_path / "again.json").read_text()) == results


def test_a_grid_is_data_and_a_bad_one_is_refused_with_what_is_allowed(tmp_path, capsys):
    assert table_names() == ["babi", "fortunes", "image-text", "translation", "vqa"]
    assert load_table("image_text") is image_text.TABLE and load_table("translation") is translation.TABLE
    fortunes = load_table("fortunes")  # a bundled grid of data alone: a setting per config
    runs = fortunes.cells(fortunes.parser().parse_args(["--output_dir", str(tmp_path)]))
    assert [(cell.key, step.module, step.arguments) for cell in runs for step in cell.steps] == [
        ((setting,), ("training", "classification"), (
            str(table_runs.REPO_ROOT / "training" / "configs" / f"fortunes_{setting}.json"), "--output_dir",
            str(tmp_path / setting), "--disable_tqdm", "true")) for setting in ("flat", "han")]
    grid = Grid.from_json(toy_grid(tmp_path))
    assert grid.name == "toy-grid" and grid.settings["h8"] == Setting(("--config_overrides",
                                                                       "embedding_size=8,hidden_size=8"))
    assert grid.panels[0].settings is None and grid.metrics == ("accuracy", "f1")
    write(tmp_path / "bad.json", {"settings": {"a": {"task": "classification"}}, "colums": []})
    with pytest.raises(ValueError, match=r"the keys of a grid must be among \[.*'columns'.*\], got \['colums'\]"):
        load_table(str(tmp_path / "bad.json"))
    write(tmp_path / "bad.json", {"settings": {"a": {"arguments": []}}})
    with pytest.raises(ValueError, match="The grid 'bad''s setting 'a' has no task"):
        load_table(str(tmp_path / "bad.json"))
    write(tmp_path / "bad.json", {"task": "vqa", "settings": {"a": {"argument": []}}})
    with pytest.raises(ValueError, match="unexpected keyword argument 'argument'"):
        load_table(str(tmp_path / "bad.json"))
    with pytest.raises(ValueError, match="The grid 'x''s jobs must be a positive number of runs, got 0"):
        Grid("x", "", {"a": Setting()}, task="vqa", jobs=0)
    with pytest.raises(SystemExit):
        tables_main(["nothing"])
    assert ("python -m training.tables: error: The table must be one of ['babi', 'fortunes', 'image-text', "
            "'translation', 'vqa'] or a grid's .json file, got 'nothing'.") in capsys.readouterr().err
    tables_main([])
    assert "tables: babi, fortunes, image-text, translation, vqa, or a grid's .json file" in capsys.readouterr().out
