"""The memory-qa and passage-qa tasks (training/tasks/memory_qa.py, passage_qa.py, their bAbI code in
training/common/babi_qa.py; training/run_memory_qa.py runs either) and hf_bahdanau.memory_training: the collator,
linear start, the data sources (generated, Facebook's files, the Hub's layout) and a short run that learns bAbI task 1
well above chance and writes a folder a user can load, answer with and read."""

import json
import logging
from pathlib import Path
from types import SimpleNamespace

import datasets
import pytest
from huggingface_hub import ModelCard
from transformers import PreTrainedTokenizerFast, pipeline

from conftest import exits_as_argparse_does
from hf_bahdanau import BahdanauMemoryNetworkConfig, BahdanauMemoryNetworkForSequenceClassification
from hf_bahdanau.memory_training import LinearStartCallback
from hf_bahdanau.modeling.collators import DataCollatorForMemoryNetwork
from training import run_memory_qa
from training.common import babi_qa
from training.data.babi import generate_task, read_babi, write_babi
from training.tasks import memory_qa

pytestmark = pytest.mark.usefixtures("one_thread")

REPO = Path(__file__).resolve().parents[1]


def test_collator_pads_right_and_keeps_the_most_recent_sentences():
    collator = DataCollatorForMemoryNetwork(pad_token_id=0, memory_size=2)
    batch = collator([{"input_ids": [5, 6], "memory_ids": [[1], [2, 3], [4, 4, 4]], "labels": 1},
                      {"input_ids": [7], "memory_ids": [], "labels": 0}])
    assert batch["input_ids"].tolist() == [[5, 6], [7, 0]] and batch["attention_mask"].tolist() == [[1, 1], [1, 0]]
    assert batch["memory_ids"].tolist() == [[[2, 3, 0], [4, 4, 4]], [[0, 0, 0], [0, 0, 0]]]
    assert batch["memory_attention_mask"].tolist() == [[[1, 1, 0], [1, 1, 1]], [[0, 0, 0], [0, 0, 0]]]
    assert batch["labels"].tolist() == [1, 0]
    with pytest.raises(ValueError, match=r"Feature 0 lacks \['memory_ids'\]"):
        collator([{"input_ids": [1]}])
    with pytest.raises(ValueError, match="`memory_size` must be a positive int or None, got 0"):
        DataCollatorForMemoryNetwork(memory_size=0)


def test_linear_start_ends_when_the_validation_loss_stops_falling():
    model = SimpleNamespace(config=SimpleNamespace(linear_start=True))
    callback = LinearStartCallback()
    for epoch, loss in ((1, 2.0), (2, 1.5), (3, 1.6)):
        state = SimpleNamespace(epoch=epoch)
        assert model.config.linear_start
        callback.on_evaluate(None, state, None, model=model, metrics={"eval_loss": loss})
    assert not model.config.linear_start and callback.ended_at_epoch == 3
    bounded = LinearStartCallback(max_epochs=2)
    model.config.linear_start = True
    bounded.on_epoch_end(None, SimpleNamespace(epoch=1.0), None, model=model)
    assert model.config.linear_start
    bounded.on_epoch_end(None, SimpleNamespace(epoch=2.0), None, model=model)
    assert not model.config.linear_start


def test_linear_start_with_patience_ends_after_that_many_evaluations_without_a_fall():
    """patience=3: a loss above the best twice, then a new best, resets the count; it ends at the third evaluation
    in a row without a fall (epoch 8), not at the first (epoch 3, as patience=1 would)."""
    model = SimpleNamespace(config=SimpleNamespace(linear_start=True))
    callback = LinearStartCallback(patience=3)
    for epoch, loss in enumerate((2.0, 1.5, 1.6, 1.7, 1.4, 1.4, 1.5, 1.6), start=1):
        callback.on_evaluate(None, SimpleNamespace(epoch=epoch), None, model=model, metrics={"eval_loss": loss})
        assert model.config.linear_start == (epoch < 8), epoch
    assert callback.ended_at_epoch == 8 and callback.state()["args"]["patience"] == 3
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="`patience` must be a positive int"):
            LinearStartCallback(patience=bad)


def test_the_hub_layout_gives_the_examples_of_facebook_files(tmp_path):
    """facebook/babi_qa's story rows (statement and question lines with ids) become the same examples as the text
    file of the same stories."""
    stories = generate_task(2, 12, seed=3)
    write_babi(tmp_path / "qa2_two-supporting-facts_train.txt", stories)
    rows = []
    for story in stories:
        lines, line_id, written = {"id": [], "type": [], "text": [], "answer": [], "supporting_ids": []}, 0, 0
        ids = []
        for example in story:
            for statement in example.story[written:]:
                line_id += 1
                ids.append(line_id)
                for key, value in zip(lines, (str(line_id), 0, statement, "", [])):
                    lines[key].append(value)
            written, line_id = len(example.story), line_id + 1
            for key, value in zip(lines, (str(line_id), 1, example.question, example.answer,
                                          [str(ids[index]) for index in example.supporting_facts])):
                lines[key].append(value)
        rows.append({"story": lines})
    from_hub = babi_qa.from_hub_stories(datasets.Dataset.from_list(rows), task=2)
    from_file = read_babi(tmp_path / "qa2_two-supporting-facts_train.txt")
    assert from_hub == from_file and len(from_hub) == 12


def test_bad_arguments_are_named(capsys):
    with pytest.raises(ValueError, match="`--babi_size` must be '1k' or '10k', got '5k'"):
        babi_qa.BabiDataArguments(babi_size="5k")
    with pytest.raises(ValueError,
                       match=r"`--babi_task` must be one of \[1, 2, 3, .*, 20\] \(one or several\), or all, got 21\."):
        babi_qa.BabiDataArguments(babi_task=21)
    with pytest.raises(ValueError, match="Give both `--train_file` and `--test_file`"):
        babi_qa.BabiDataArguments(train_file="qa1_x_train.txt")
    with pytest.raises(ValueError, match="`--architecture` must be one of"):
        memory_qa.MemoryModelArguments(architecture="gru")
    for flags, message in ((["--architecture", "gru"], "`--architecture` must be one of ['memn2n', 'lstm'] "
                                                       "(coattention: the passage-qa task), got 'gru'."),
                           (["--num_pictures", "-2"], "`--num_pictures` must be 0 (none) or a positive number, got "
                                                      "-2.")):
        with pytest.raises(SystemExit):  # the message alone, as argparse does
            run_memory_qa.main([*flags, "--output_dir", "unused"])
        assert capsys.readouterr().err.endswith(f": error: {message}\n")


SHORT_RUN = ["training/configs/babi_memn2n.json", "--max_train_samples", "600", "--max_predict_samples", "200",
             "--num_train_epochs", "15", "--disable_tqdm", "true", "--num_pictures", "1", "--logging_steps", "5"]


def printed_usage(capsys) -> str:
    """The code of the run's last line, "... use it with: CODE"."""
    return capsys.readouterr().out.strip().splitlines()[-1].split("; use it with: ", 1)[1]


def test_a_short_run_learns_task_1_and_saves_a_usable_model(tmp_path, monkeypatch, capsys):
    """600 generated task-1 questions, 15 epochs (about 10 s): test accuracy far above the 1/6 of guessing among the
    six places; the folder loads, answers through the pipeline, and holds the pictures, the page and the card; the
    last line's usage code runs as printed."""
    monkeypatch.chdir(REPO)
    run_memory_qa.main([*SHORT_RUN, "--output_dir", str(tmp_path)])
    usage = printed_usage(capsys)
    assert usage.startswith(f'import hf_bahdanau, transformers; transformers.pipeline(model="{tmp_path}", '
                            'trust_remote_code=True)(**{"memory": [')
    exec(usage, {})
    results = json.loads((tmp_path / "all_results.json").read_text())
    assert results["predict_samples"] == 200 and results["predict_accuracy"] > 50  # in percent, as every rate
    assert results["predict_error"] == pytest.approx(100 - results["predict_accuracy"])
    assert 0 <= results["predict_supports_covered"] <= 100 and "predict_hop_3_on_support" in results
    for name in ("hops_0.png", "memory_explorer.html", "README.md", "predictions.txt", "tokenizer.json"):
        assert (tmp_path / name).is_file(), name
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["linear_start"] is False  # linear start ended and the saved model has its softmax
    ended = json.loads((tmp_path / "trainer_state.json").read_text())["stateful_callbacks"]["LinearStartCallback"][
        "attributes"]["ended_at_epoch"]
    assert 0 < ended <= 7.5  # at the latest half the 15 epochs; the card says so
    assert (f"- **Linear start**: in training: the hops' softmax was left out (p_i = u^kᵀ m_i) for the first "
            f"{ended:g} epochs, then put back") in (tmp_path / "README.md").read_text()
    model = BahdanauMemoryNetworkForSequenceClassification.from_pretrained(tmp_path)
    assert isinstance(model.config, BahdanauMemoryNetworkConfig) and model.config.answer_token_ids is not None
    answerer = pipeline(model=str(tmp_path), trust_remote_code=True)
    story = ["Mary moved to the bathroom.", "John went to the hallway.", "Daniel went back to the garden.",
             "Sandra travelled to the kitchen."]
    assert answerer(memory=story, question="Where is Mary?")["answer"] in {"bathroom", "hallway", "garden",
                                                                           "kitchen", "office", "bedroom"}
    lines = (tmp_path / "predictions.txt").read_text().splitlines()
    assert len(lines) == 200


def test_the_lstm_baseline_reads_the_story_and_question_as_one_text(tmp_path, monkeypatch, capsys):
    """Its card's examples and the last line's usage code (which runs as printed) are such texts too."""
    monkeypatch.chdir(REPO)
    run_memory_qa.main([*SHORT_RUN[:4], "50", "--num_train_epochs", "1", "--architecture", "lstm",
                        "--disable_tqdm", "true", "--output_dir", str(tmp_path)])
    usage = printed_usage(capsys)
    assert usage.startswith('import hf_bahdanau, transformers; transformers.pipeline("text-classification", '
                            f'model="{tmp_path}", trust_remote_code=True)("')
    exec(usage, {})
    text = ModelCard.load(tmp_path / "README.md").data.widget[0]["text"]  # sentences, then the question: no JSON
    assert text.endswith("?") and not text.startswith("{") and text in usage
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["model_type"] == "bahdanau-encoder" and config["pooling_type"] == "final_state"
    assert json.loads((tmp_path / "all_results.json").read_text())["predict_samples"] == 50
    example = generate_task(1, 1, seed=0)[0][0]
    tokenizer = PreTrainedTokenizerFast.from_pretrained(tmp_path)
    row = babi_qa.features([example], tokenizer, [example.answer], memory_qa.ARCHITECTURES["lstm"].rows, 50)[0]
    words = sum(len(babi_qa.words_of(text)) for text in [*example.story, example.question])
    assert len(row["input_ids"]) == words and "memory_ids" not in row



def test_the_passage_qa_task_trains_co_attention_over_the_story_as_one_passage(tmp_path, monkeypatch, capsys):
    """python -m training passage-qa with its bundled config: the attention statistics per question level, a picture
    per test question asked for, the card's pipeline and examples (a passage and a question), and the usage code that
    runs as printed."""
    from training.__main__ import main

    monkeypatch.chdir(REPO)
    main(["passage-qa", "training/configs/babi_coattention.json", *SHORT_RUN[1:4], "50", "--num_train_epochs", "1",
          "--disable_tqdm", "true", "--num_pictures", "1", "--output_dir", str(tmp_path)])
    usage = printed_usage(capsys)
    assert usage.startswith(f'import hf_bahdanau, transformers; transformers.pipeline(model="{tmp_path}", '
                            'trust_remote_code=True)(**{"context": ')
    exec(usage, {})
    results = json.loads((tmp_path / "all_results.json").read_text())
    assert results["predict_samples"] == 50 and results["predict_error"] == pytest.approx(
        100 - results["predict_accuracy"])
    assert {f"predict_{level}_peak_on_support" for level in ("word", "phrase", "question")} <= set(results)
    assert sorted(path.name for path in tmp_path.glob("coattention_*.png")) == ["coattention_0.png"]
    assert json.loads((tmp_path / "config.json").read_text())["model_type"] == "bahdanau-text-coattention"
    assert ModelCard.load(tmp_path / "README.md").data.eval_results[0].task_type == "passage-question-answering"
    assert json.loads((tmp_path / "run_arguments.json").read_text())["model"]["architecture"] == "coattention"


@pytest.mark.parametrize("argv, task", [
    ([], "memory-qa"),
    (["--architecture", "lstm"], "memory-qa"),
    (["--architecture", "coattention"], "passage-qa"),
    (["--architecture=coattention", "--num_pictures", "2"], "passage-qa"),
    (["--architecture", "coattention", "--architecture", "memn2n"], "memory-qa"),  # the last one counts
    (["--architecture", "gru"], "memory-qa"),  # which says what is wrong with it
    (["{config}"], "memory-qa"),  # babi_memn2n.json: "architecture": "memn2n"
    (["{config}", "--architecture", "coattention"], "passage-qa"),
    (["{coattention}"], "passage-qa"),
    (["absent.json", "--architecture", "coattention"], "memory-qa"),  # whose parsing names the unreadable file
])
def test_run_memory_qa_runs_the_task_of_the_architecture(argv, task, tmp_path):
    """training/run_memory_qa.py trains --architecture coattention (a flag, or a .json file's key) as the passage-qa
    task, the others as the memory-qa task."""
    coattention = tmp_path / "coattention.json"
    coattention.write_text(json.dumps({"architecture": "coattention", "babi_task": 2}))
    paths = {"{config}": str(REPO / "training/configs/babi_memn2n.json"), "{coattention}": str(coattention)}
    assert babi_qa.architecture_task([paths.get(argument, argument) for argument in argv]) == task


def test_no_pictures_means_none_and_a_card_all_the_same(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    run_memory_qa.main([*SHORT_RUN[:4], "50", "--num_train_epochs", "1", "--disable_tqdm", "true",
                        "--num_pictures", "0", "--output_dir", str(tmp_path)])
    assert not list(tmp_path.glob("hops_*.png")) and (tmp_path / "memory_explorer.html").is_file()
    assert "memory-question-answering" in (tmp_path / "README.md").read_text()


def test_a_run_that_ends_in_linear_start_saves_its_model_without_hop_pictures(tmp_path, monkeypatch, caplog):
    """A model still in linear start has no softmax over the memory: no weights to draw, so the run says so and saves
    the model and card without hops_<n>.png or memory_explorer.html (it raised at the end before)."""
    monkeypatch.chdir(REPO)
    with caplog.at_level(logging.WARNING, logger=memory_qa.logger.name):
        run_memory_qa.main([*SHORT_RUN[:4], "50", "--num_train_epochs", "1", "--linear_start_max_epochs", "5",
                            "--eval_strategy", "no", "--disable_tqdm", "true", "--output_dir", str(tmp_path)])
    assert json.loads((tmp_path / "config.json").read_text())["linear_start"] is True
    assert not list(tmp_path.glob("hops_*.png")) and not (tmp_path / "memory_explorer.html").exists()
    assert (tmp_path / "README.md").is_file() and (tmp_path / "model.safetensors").is_file()
    assert "Training ended in linear start" in caplog.text


def test_the_babi_table_counts_errors_and_failed_tasks(tmp_path):
    """training/tables/babi.py's table from finished runs: error in %, the mean and the tasks over 5% error, beside the
    paper's figures for the same tasks; the hop table in %."""
    from training.tables import babi

    for task, error in ((1, 0.4), (2, 30.0)):  # all_results.json's rates are in percent
        folder = tmp_path / "memn2n-1k" / f"task{task}"
        folder.mkdir(parents=True)
        folder.joinpath("all_results.json").write_text(json.dumps({
            "predict_error": error, "train_runtime": 61.0, "predict_hop_1_on_support": 50.0,
            "predict_hop_2_on_support": 25.0, "predict_hop_3_on_support": 100.0, "predict_supports_covered": 75.0}))
    results = babi.TABLE.results(["--output_dir", str(tmp_path), "--settings", "memn2n-1k", "--tasks", "1", "2"])
    assert results["memn2n-1k"][2]["error"] == 30.0 and results["memn2n-1k"][1]["train_seconds"] == 61
    lines = babi.errors_markdown(results, [1, 2]).splitlines()
    assert lines[2].startswith("| 1 | 0.4 | 0 | 0 | 0.8 | 50 |") and lines[3].startswith("| 2 | 30.0 | 8.3 |")
    assert lines[-1].startswith("| mean (failed > 5%) | 15.2 (1 of 2 failed) | 4.2 (1 of 2 failed) |")
    assert babi.hop_markdown(results, [1, 2]).splitlines()[-1] == "| 2 | 50 / 25 / 100; 75 |"
    hopless = tmp_path / "coattention-parallel-1k" / "task1"  # a co-attention run has no hops: no hop table
    hopless.mkdir(parents=True)
    hopless.joinpath("all_results.json").write_text(json.dumps({"predict_error": 0.014, "train_runtime": 138.0}))
    hopless_results = babi.TABLE.results(["--output_dir", str(tmp_path), "--settings", "coattention-parallel-1k",
                                          "--tasks", "1"])
    assert babi.hop_markdown(hopless_results, [1]) == ""


STORY = "1 Mary moved to the bathroom.\n2 John went to the hallway.\n"
TWO_QUESTIONS = STORY + "3 Where is Mary?\tbathroom\t1\n4 Where is John?\thallway\t2\n"


@pytest.mark.parametrize("train, test, flags, message", [
    (TWO_QUESTIONS, STORY, [], "`--test_file` {test} holds 0 question(s): testing needs at least 1"),
    (STORY + "3 Where is Mary?\tbathroom\t1\n", STORY + "3 Where is John?\thallway\t2\n", [],
     "`--train_file` {train} holds 1 question(s): training needs at least 2 (one is held out for validation)"),
    (TWO_QUESTIONS, TWO_QUESTIONS, ["--max_train_samples", "1"],
     "`--train_file` {train} holds 2 question(s) (1 after `--max_train_samples`): training needs at least 2"),
], ids=["a test file without a question", "one training question", "cut to one training question"])
def test_too_few_questions_are_named_with_their_file_before_training(tmp_path, train, test, flags, message, capsys):
    """A test file without a question used to fail in hop_statistics after training (IndexError); one training
    question left nothing after the validation split (torch's sampler: num_samples=0)."""
    files = {"train": tmp_path / "qa1_x_train.txt", "test": tmp_path / "qa1_x_test.txt"}
    files["train"].write_text(train, encoding="utf-8")
    files["test"].write_text(test, encoding="utf-8")
    error = exits_as_argparse_does(lambda: run_memory_qa.main([
        "--train_file", str(files["train"]), "--test_file", str(files["test"]), "--do_train", "--output_dir",
        str(tmp_path / "run"), *flags]), message.format(**files), capsys)
    assert error.rstrip().endswith(", each a line 'ID question<TAB>answer<TAB>supporting IDs' after the statements "
                                     "of its story.")
    assert not (tmp_path / "run").exists()
