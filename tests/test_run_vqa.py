"""training/run_vqa.py and its pieces: the VQA collator, accuracy by question type, the table, a user's own data read
exactly as written, and short runs of co-attention and of a baseline that write a folder the pipeline answers from."""

import json
import logging
import math
import re

import numpy as np
import pytest
from huggingface_hub import ModelCard
from PIL import Image

from conftest import exits_as_argparse_does
from hf_bahdanau import BahdanauImageProcessor
from hf_bahdanau.modeling.collators import DataCollatorForVisualQuestionAnswering
from training.run_vqa import main
from training.tasks.vqa import accuracy_metrics
from training.common.tokenization import train_tokenizer
from training.common.table_runs import markdown_table
from training.tables import vqa

QUESTIONS = ["what color is the shape?", "is there a circle?", "is there a \"quoted\" NA shape?"]
ANSWERS = ["red", "no", "yes"]
COLOURS = {"red": (200, 30, 30), "no": (30, 30, 200), "yes": (30, 200, 30)}


@pytest.fixture(scope="module")
def tokenizer():
    return train_tokenizer(QUESTIONS, kind="word")


def rows(count: int = 3) -> list[dict]:
    return [{"image": Image.new("RGB", (8 + 2 * index, 8), COLOURS[ANSWERS[index % 3]]),
             "question": QUESTIONS[index % 3], "answer": ANSWERS[index % 3],
             "question_type": "color" if index % 3 == 0 else "yes/no"} for index in range(count)]


def test_the_collator_pads_questions_and_images_and_reads_answers_and_types(tokenizer):
    collator = DataCollatorForVisualQuestionAnswering(
        BahdanauImageProcessor(num_channels=3, size={"height": 8}), tokenizer, {"no": 0, "red": 1, "yes": 2},
        question_type_column="question_type", question_types=["color", "yes/no"])
    batch = collator(rows())
    lengths = [len(tokenizer(question, add_special_tokens=False)["input_ids"]) for question in QUESTIONS]
    assert batch["input_ids"].shape == (3, max(lengths))
    assert batch["attention_mask"].sum(1).tolist() == lengths  # right-padded, no special tokens
    for row, length in enumerate(lengths):
        assert batch["input_ids"][row, :length].tolist() == tokenizer(QUESTIONS[row], add_special_tokens=False)[
            "input_ids"]
        assert (batch["input_ids"][row, length:] == tokenizer.pad_token_id).all()
    assert batch["pixel_values"].shape == (3, 3, 8, 12) and batch["pixel_mask"].sum((1, 2)).tolist() == [64, 80, 96]
    assert batch["labels"].tolist() == [1, 0, 2]
    assert batch["question_type_ids"].tolist() == [0, 1, 1]


@pytest.mark.parametrize("inputs, keys", [("question", {"input_ids", "attention_mask", "labels"}),
                                          ("context", {"pixel_values", "pixel_mask", "labels"})])
def test_a_baseline_s_batch_holds_only_the_input_it_reads(tokenizer, inputs, keys):
    collator = DataCollatorForVisualQuestionAnswering(
        BahdanauImageProcessor(num_channels=3, size={"height": 8}), tokenizer, {"no": 0, "red": 1, "yes": 2},
        inputs=inputs)
    unread = "image" if inputs == "question" else "question"
    assert set(collator([{key: value for key, value in row.items() if key != unread} for row in rows()])) == keys


@pytest.mark.parametrize("change, message", [
    (lambda row: dict(row, answer="green"), r"answer 'green' is not in `label2id` \(\['no', 'red', 'yes'\]\)"),
    (lambda row: dict(row, question="   "), r"`features\[0\]`'s question '   ' has no token"),
    (lambda row: {key: value for key, value in row.items() if key != "image"}, r"`features\[0\]` has no 'image'"),
])
def test_bad_rows_are_named(tokenizer, change, message):
    collator = DataCollatorForVisualQuestionAnswering(
        BahdanauImageProcessor(num_channels=3, size={"height": 8}), tokenizer, {"no": 0, "red": 1, "yes": 2})
    with pytest.raises(ValueError, match=message):
        collator([change(rows(1)[0])])
    with pytest.raises(ValueError, match=r"^`inputs` must be 'both', 'question' or 'context' \(the model config's "
                                         r"`text_config\.inputs`\), got 'image'\.$"):
        DataCollatorForVisualQuestionAnswering(None, tokenizer, inputs="image")
    with pytest.raises(ValueError, match="at least one question"):
        collator([])


def test_accuracy_by_question_type_by_hand():
    predictions, labels = np.array([0, 1, 2, 2, 1]), np.array([0, 1, 1, 2, 0])
    metrics = accuracy_metrics(predictions, labels, np.array([0, 0, 1, 1, 1]), ["color", "yes/no"])
    assert metrics == pytest.approx({"accuracy": 60.0, "accuracy_color": 100.0, "accuracy_yes_no": 100 / 3})  # %
    assert accuracy_metrics(predictions, labels, None, None) == {"accuracy": 60.0}


def test_the_table_reads_finished_runs(tmp_path):
    for setting, accuracy, steps in (("parallel", 96.0, 1500), ("bag_of_words", 85.3, 1400)):  # in percent
        folder = tmp_path / setting
        folder.mkdir()
        (folder / "all_results.json").write_text(json.dumps({
            "predict_accuracy": accuracy, "predict_accuracy_yes_no": 90.0, "predict_accuracy_color": 100.0,
            "predict_accuracy_shape": 50.0, "predict_shape_peak_overlap_question": 25.0,
            "predict_shape_peak_overlap_word": 12.5, "predict_shape_peak_overlap_phrase": 50.0}))
        (folder / "trainer_state.json").write_text(json.dumps({"global_step": steps, "log_history": [
            {"training_minutes": 3.5}, {"training_minutes": 7.25}]}))
    results = vqa.TABLE.results(["--output_dir", str(tmp_path), "--settings", "parallel", "alternating",
                                 "bag_of_words"])
    assert results["parallel"] == {"accuracy": 96.0, "accuracy_yes_no": 90.0, "accuracy_color": 100.0,
                                   "accuracy_shape": 50.0, "shape_peak_overlap": {"word": 12.5, "phrase": 50.0,
                                                                                  "question": 25.0},
                                   "steps": 1500, "train_minutes": 7.25}
    assert "alternating" not in results
    lines = markdown_table(results, vqa.GRID.labels, vqa.GRID.columns).splitlines()
    assert lines[2] == "| parallel | 96.0 | 90.0 | 100.0 | 50.0 | 12.5 / 50.0 / 25.0 | 1500 | 7.25 |"
    assert lines[3] == "| bag_of_words | 85.3 | 90.0 | 100.0 | 50.0 | – | 1400 | 7.25 |"  # no attention: no peak


def write_folder(root) -> None:
    """A user's own VQA data: an imagefolder with one metadata file per split, several questions per image."""
    for split in ("train", "test"):
        folder = root / split
        folder.mkdir(parents=True)
        records = []
        for index in range(12):
            answer = ANSWERS[index % 3]
            Image.new("RGB", (16, 16), COLOURS[answer]).save(folder / f"{index}.png")
            records += [{"file_name": f"{index}.png", "question": QUESTIONS[index % 3], "answer": answer,
                         "question_type": "color" if index % 3 == 0 else "yes/no"}]
        (folder / "metadata.jsonl").write_text("".join(json.dumps(record) + "\n" for record in records))


TINY = ["--do_train", "--do_eval", "--do_predict", "--max_steps", "6", "--per_device_train_batch_size", "8",
        "--per_device_eval_batch_size", "8", "--report_to", "none", "--logging_steps", "3", "--save_strategy", "no",
        "--disable_tqdm", "true", "--image_height", "16", "--config_overrides",
        "hidden_size=8,attention_size=8,answer_hidden_size=8,cnn_channels=[4,8],cnn_pool_sizes=[[2,2],[2,2]]"]


def test_a_short_run_on_a_user_folder_writes_a_folder_the_pipeline_answers_from(tmp_path):
    """Six steps of parallel co-attention on an imagefolder whose questions hold quotes and the word NA: metrics by
    question type, predictions, pictures of both attentions, the card; the saved folder answers through its
    pipeline with both attentions."""
    write_folder(tmp_path / "data")
    output = tmp_path / "run"
    main(["--dataset_name", str(tmp_path / "data"), "--output_dir", str(output), "--num_pictures", "1", *TINY])
    results = json.loads((output / "all_results.json").read_text())
    for name in ("eval_accuracy", "predict_accuracy", "predict_accuracy_color", "predict_accuracy_yes_no"):
        assert 0 <= results[name] <= 100 and math.isfinite(results[name]), name
    assert not any("shape" in name for name in results)  # the shape statistics are easy-VQA's
    assert len((output / "predictions.txt").read_text().splitlines()) == 12
    for name in ("model.safetensors", "preprocessor_config.json", "tokenizer.json", "example_0.png",
                 "coattention_0.png", "README.md", "training_curve.png"):
        assert (output / name).is_file(), name
    assert "visual-question-answering" in (output / "README.md").read_text()

    from transformers import pipeline
    answerer = pipeline(model=str(output), trust_remote_code=True)
    record = answerer(image=str(output / "example_0.png"), question=QUESTIONS[2], return_attentions=True)
    assert record["answer"] in ANSWERS and 0 < record["score"] <= 1
    assert record["levels"] == ["word", "phrase", "question"] and record["grid_size"] == [4, 4]
    for weights in record["question_attentions"]:
        assert len(weights) == len(record["question_tokens"]) and math.isclose(sum(weights), 1, rel_tol=1e-5)
    for weights in record["image_attentions"]:
        assert np.asarray(weights).shape == (4, 4) and math.isclose(np.sum(weights), 1, rel_tol=1e-5)


def test_the_last_line_runs_as_printed_and_no_pictures_means_a_card_without_them(tmp_path, monkeypatch, capsys):
    """The printed usage names the example image by its path from where the script ran (a relative --output_dir),
    and runs; with --num_pictures 0 (which used to fail after training: the card asked for example_*.png) no
    picture is written, the card has no widget and its usage code reads the user's own image."""
    write_folder(tmp_path / "data")
    monkeypatch.chdir(tmp_path)
    for count in ("1", "0"):
        main(["--dataset_name", "data", "--output_dir", f"run{count}", "--num_pictures", count, *TINY])
        usage = capsys.readouterr().out.strip().splitlines()[-1].split("; use it with: ", 1)[1]
        if count == "1":
            question = json.dumps(QUESTIONS[0])
            assert usage == ('import hf_bahdanau, transformers; transformers.pipeline(model="run1", '
                             f'trust_remote_code=True)(image="run1/example_0.png", question={question})')
            exec(usage, {})
    assert usage.endswith('(image="IMAGE.png", question="What is in the image?")')
    assert not list((tmp_path / "run0").glob("*_0.png"))  # neither example_0.png nor coattention_0.png
    card = ModelCard.load(tmp_path / "run0" / "README.md")
    assert "widget" not in card.data.to_dict() and "example_" not in card.text
    assert card.text.count('images = ["image.png"]  # your image: the model was saved without example images') == 3
    assert card.text.count('questions = ["What is in the image?"]') == 3


def test_a_question_only_baseline_trains_and_answers_without_reading_the_image(tmp_path):
    write_folder(tmp_path / "data")
    output = tmp_path / "run"
    main(["--dataset_name", str(tmp_path / "data"), "--output_dir", str(output), "--num_pictures", "1",
          "--coattention", "none", "--inputs", "question", *TINY])
    assert not (output / "coattention_0.png").exists()  # nothing attends in a baseline
    from transformers import pipeline
    answerer = pipeline(model=str(output), trust_remote_code=True)
    image = Image.new("RGB", (16, 16), (0, 0, 0))
    first = answerer(image=image, question=QUESTIONS[1], top_k=3)
    second = answerer(image=Image.new("RGB", (16, 16), (255, 255, 255)), question=QUESTIONS[1], top_k=3)
    assert first == second  # the image is never read
    assert [answer["score"] for answer in first["answers"]] == sorted(
        (answer["score"] for answer in first["answers"]), reverse=True)


def keep_answers(root, change: dict[str, str | None]) -> None:
    """The folder's metadata with each answer of ``change`` replaced by its value, its rows dropped for None."""
    for metadata in root.glob("*/metadata.jsonl"):
        records = [json.loads(line) for line in metadata.read_text().splitlines()]
        records = [dict(record, answer=change.get(record["answer"], record["answer"])) for record in records]
        metadata.write_text("".join(json.dumps(record) + "\n" for record in records if record["answer"]))


def test_a_saved_model_trains_further_with_its_own_answers_and_names_those_it_lacks(tmp_path, capsys):
    """Data with fewer answers than a saved model's (e.g. cut by --max_train_samples) failed loading it with a
    traceback: its classifier had a row per answer it was trained with. It keeps its answers, in its order; an answer
    it lacks is a bad argument."""
    write_folder(tmp_path / "data")
    main(["--dataset_name", str(tmp_path / "data"), "--output_dir", str(tmp_path / "saved"), "--num_pictures", "0",
          *TINY])
    saved = json.loads((tmp_path / "saved" / "config.json").read_text())["id2label"]
    keep_answers(tmp_path / "data", {"no": None, "yes": None})  # red alone
    further = ["--dataset_name", str(tmp_path / "data"), "--model_name_or_path", str(tmp_path / "saved"),
               "--num_pictures", "0", *TINY]
    main([*further, "--output_dir", str(tmp_path / "further")])
    assert json.loads((tmp_path / "further" / "config.json").read_text())["id2label"] == saved
    keep_answers(tmp_path / "data", {"red": "green"})
    error = exits_as_argparse_does(lambda: main([*further, "--output_dir", str(tmp_path / "refused")]),
                                   "--model_name_or_path", capsys)
    assert error.endswith(f"answers 3 answers, and the data's ['green'] (1) are not among them: train a new model "
                          "(leave it out).\n"), error


def test_missing_columns_are_named(tmp_path, capsys):
    write_folder(tmp_path / "data")
    error = exits_as_argparse_does(lambda: main(["--dataset_name", str(tmp_path / "data"), "--output_dir",
                                                 str(tmp_path / "run"), "--question_column", "query", *TINY]),
                                   "--question_column", capsys)
    assert re.search(r": error: `--question_column` 'query' is not a column of the train data; its columns are "
                     r"\['file_name', 'question', 'answer', 'question_type'\] \(`--dataset_name` "
                     r".*train/metadata.jsonl \(train split\)\)\.$", error.splitlines()[-1]), error


NUMBER_ANSWERS = {  # a metadata file of count answers, and the answers as written
    "metadata.csv": ("file_name,question,answer\n" + "".join(f"{index}.png,how many shapes?,{answer}\n" for
                                                            index, answer in enumerate(["2", "007", "2.50", "NA"])),
                     {"2", "007", "2.50", "NA"}),
    "metadata.jsonl": ("".join(f'{{"file_name": "{index}.png", "question": "how many shapes?", "answer": {answer}}}\n'
                               for index, answer in enumerate(["2", '"two"', "2.50", "-0"])),
                       {"2", "two", "2.50", "-0"}),
}


@pytest.mark.parametrize("name", NUMBER_ANSWERS)
def test_answers_written_as_numbers_are_answers_by_their_text_as_written(tmp_path, name):
    """Count answers 2, 007, 2.50, NA in a metadata.csv (pandas made them 2, 7, 2.5 and a missing value) or JSON
    numbers among words in a metadata.jsonl (pyarrow refused the mix) are answers by their text as written: labels,
    predictions and the card read them so."""
    text, answers = NUMBER_ANSWERS[name]
    for split in ("train", "test"):
        folder = tmp_path / "data" / split
        folder.mkdir(parents=True)
        for index in range(4):
            Image.new("RGB", (16, 16), (40 * index, 0, 0)).save(folder / f"{index}.png")
        (folder / name).write_text(text)
    output = tmp_path / "run"
    main(["--dataset_name", str(tmp_path / "data"), "--output_dir", str(output), "--num_pictures", "1", *TINY])
    config = json.loads((output / "config.json").read_text())
    assert set(config["id2label"].values()) == answers
    assert set((output / "predictions.txt").read_text().split()) <= answers


def test_an_answer_that_is_not_text_is_named_with_its_file_split_and_line(tmp_path, capsys):
    for split in ("train", "test"):
        folder = tmp_path / "data" / split
        folder.mkdir(parents=True)
        Image.new("RGB", (16, 16)).save(folder / "0.png")
        (folder / "metadata.jsonl").write_text('{"file_name": "0.png", "question": "how many?", "answer": "2"}\n'
                                               '{"file_name": "0.png", "question": "which?", "answer": ["a"]}\n')
    error = exits_as_argparse_does(lambda: main(["--dataset_name", str(tmp_path / "data"), "--output_dir",
                                                 str(tmp_path / "run"), *TINY]), "--answer_column", capsys)
    assert error.splitlines()[-1].endswith(
        f": error: `--dataset_name` {tmp_path / 'data' / 'train' / 'metadata.jsonl'} (train split) line 2, column "
        "'answer' (`--answer_column`): the cell holds the list ['a']; it must be a non-empty string.")


def test_the_model_config_holds_the_tokenizer_s_special_ids_so_trainer_aligns_nothing(tokenizer, caplog):
    """Trainer used to log "The tokenizer has new PAD/BOS/EOS tokens that differ from the model config" for every
    new model: its config had no bos or eos id."""
    from transformers.trainer_utils import align_special_tokens

    from training.tasks.vqa import VQAModelArguments, build_model

    model = build_model(VQAModelArguments(), tokenizer, ANSWERS)
    text = model.config.get_text_config()  # the sub-config Trainer aligns: the question's
    assert text is model.config.text_config
    assert (text.pad_token_id, text.bos_token_id, text.eos_token_id) == (
        tokenizer.pad_token_id, tokenizer.bos_token_id, tokenizer.eos_token_id)
    with caplog.at_level(logging.WARNING):
        align_special_tokens(model, tokenizer)
    assert not [record for record in caplog.records if "PAD/BOS/EOS" in record.getMessage()]


def test_a_16_bit_example_picture_keeps_its_greys(tmp_path):
    """PIL's .convert("RGB") turned a 16-bit greyscale image (mode I;16, a 16-bit PNG) white; the example picture is
    now read as the model's processor reads it, at its own size: 32896 / 257 = 128, mid-grey."""
    from types import SimpleNamespace

    from training.tasks.vqa import save_attention_pictures

    image = Image.fromarray(np.full((6, 8), 32896, dtype=np.uint16))
    assert image.mode == "I;16"
    model = SimpleNamespace(config=SimpleNamespace(text_config=SimpleNamespace(inputs="question")),  # nothing to plot
                            eval=lambda: None)
    arguments = SimpleNamespace(num_pictures=1, image_column="image", question_column="question",
                                answer_column="answer")
    examples = save_attention_pictures(model, None, None, [{"image": image, "question": "what?", "answer": "grey"}],
                                       arguments, tmp_path)
    assert examples == ['{"image": "example_0.png", "question": "what?"}']
    saved = np.asarray(Image.open(tmp_path / "example_0.png"))
    assert saved.shape == (6, 8, 3) and (saved == 128).all()
