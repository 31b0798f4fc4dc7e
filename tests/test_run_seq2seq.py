"""The seq2seq task (training/tasks/seq2seq.py, run by training/run_seq2seq.py), the parts that need no training:
arguments, data files, tokenisation, metrics."""

import json
import logging
import shlex
from pathlib import Path

import numpy as np
import pytest
from huggingface_hub import ModelCard
from transformers import EvalPrediction, Seq2SeqTrainingArguments

from conftest import exits_as_argparse_does
from hf_bahdanau.cli import main as translate_main

from training.common.arguments import parse_arguments, parse_config_overrides
from training.tasks.seq2seq import (
    DataTrainingArguments, ModelArguments, clip, load_model, load_raw_datasets, metrics_function, output_lengths,
    tokenize_split,
)
from training.common.tokenization import train_tokenizer

ROWS = [{"source": "le 3 mars 2015", "target": "2015-03-03"}, {"source": "3/14/15", "target": "2015-03-14"}]


def test_a_score_the_config_lacks_ends_while_parsing(capsys):
    from training.run_seq2seq import main

    error = exits_as_argparse_does(lambda: main(["--preset", "rnnsearch", "--train_file", "absent.jsonl",
                                                 "--config_overrides", "hidden_size=8,attention_type=bogus",
                                                 "--output_dir", "unused"]), "--config_overrides", capsys)
    assert ": error: `--config_overrides` 'hidden_size=8,attention_type=bogus': `attention_type` must be one of " \
           "['additive', " in error and error.endswith(", got 'bogus'.\n"), error


def test_config_overrides_are_typed_and_checked():
    assert parse_config_overrides("hidden_size=256, attention_type=general,bidirectional=false,dropout=0.2,"
                                  "encoder_hidden_size=None") == dict(
        hidden_size=256, attention_type="general", bidirectional=False, dropout=0.2, encoder_hidden_size=None)
    assert parse_config_overrides(None) == {}
    with pytest.raises(ValueError, match="BahdanauConfig fields .* got 'hiden_size=3'"):
        parse_config_overrides("hiden_size=3")
    with pytest.raises(ValueError, match="got 'hidden_size'"):
        parse_config_overrides("hidden_size")
    # a list in brackets keeps its commas: bare names or Python literals
    assert parse_config_overrides("meta_embedding_sources=[word,chars],dropout=0.1") == dict(
        meta_embedding_sources=["word", "chars"], dropout=0.1)
    assert parse_config_overrides("meta_embedding_sources=['word', 'pretrained'],pretrained_embedding_size=3") == dict(
        meta_embedding_sources=["word", "pretrained"], pretrained_embedding_size=3)


def test_overrides_reach_the_new_model_and_the_tokenizer_sets_the_vocabulary():
    tokenizer = train_tokenizer([row["source"] for row in ROWS], kind="char")
    model = load_model(ModelArguments(preset="luong-general", config_overrides="encoder_layers=1,decoder_layers=1,"
                                      "hidden_size=24,embedding_size=8,rnn_type=gru"), tokenizer)
    config = model.config
    assert (config.vocab_size, config.hidden_size, config.encoder_layers, config.rnn_type) == (len(tokenizer), 24, 1,
                                                                                                "gru")
    assert (config.attention_type, config.decoder_style) == ("general", "luong")  # from the preset
    assert (config.pad_token_id, config.eos_token_id, config.decoder_start_token_id) == (0, 2, 1)


def test_model_arguments_reject_bad_combinations():
    with pytest.raises(ValueError, match="exactly one of `--model_name_or_path`"):
        ModelArguments()
    with pytest.raises(ValueError, match="exactly one of"):
        ModelArguments(preset="rnnsearch", model_name_or_path="x")
    with pytest.raises(ValueError, match="`--preset` must be one of"):
        ModelArguments(preset="transformer")
    with pytest.raises(ValueError, match="use it with `--preset`"):
        ModelArguments(model_name_or_path="x", config_overrides="hidden_size=3")
    with pytest.raises(ValueError, match="`--tokenizer_type` must be one of \\['char', 'word', 'g2p', 'bpe', 'unigram'\\]"):
        ModelArguments(preset="rnnsearch", tokenizer_type="bytes")


def test_data_arguments_reject_bad_files_and_lengths():
    with pytest.raises(ValueError, match="`--dataset_name` or at least one of"):
        DataTrainingArguments()
    with pytest.raises(ValueError, match="`--train_file` must end in one of \\['.csv', '.tsv', '.json', '.jsonl'\\]"):
        DataTrainingArguments(train_file="data.parquet")
    with pytest.raises(ValueError, match="`--max_source_length` must be a positive integer"):
        DataTrainingArguments(train_file="a.csv", max_source_length=1)


def test_a_json_file_of_arguments_with_flags_overriding_it(tmp_path):
    arguments = {"preset": "rnnsearch", "train_file": "t.jsonl", "do_train": True, "output_dir": "out",
                 "max_steps": 50, "language": ["en", "de"], "lr_scheduler_kwargs": {"power": 2.0}}
    path = tmp_path / "args.json"
    path.write_text(json.dumps(arguments))
    model_args, data_args, training_args = parse_arguments(
        (ModelArguments, DataTrainingArguments, Seq2SeqTrainingArguments), [str(path), "--max_steps", "7", "--do_train",
                                                                            "false"])
    assert (model_args.preset, data_args.train_file, data_args.language) == ("rnnsearch", "t.jsonl", ["en", "de"])
    assert (training_args.max_steps, training_args.do_train, training_args.output_dir) == (7, False, "out")
    assert training_args.lr_scheduler_kwargs == {"power": 2.0}


@pytest.mark.parametrize("corpus, license", [("de_en", "gpl-2.0"), ("bible_es_en", None)])
@pytest.mark.parametrize("model", ["rnnsearch", "transformer"])
def test_the_translation_configs_give_their_cards_the_datas_license(corpus, license, model):
    """The Ding sentences are GPL-2+, so the de-en models' cards say gpl-2.0; the public-domain Bibles leave the
    card's default (apache-2.0)."""
    config = Path(__file__).parents[1] / "training" / "configs" / f"{corpus}_{model}.json"
    _, data_args, _ = parse_arguments((ModelArguments, DataTrainingArguments, Seq2SeqTrainingArguments),
                                      [str(config)])
    assert data_args.license == license


def refused(argv: list[str], capsys) -> str:
    """What parse_arguments prints when it refuses ``argv``: it exits with status 2, as argparse does."""
    with pytest.raises(SystemExit) as exit_info:
        parse_arguments((ModelArguments, DataTrainingArguments, Seq2SeqTrainingArguments), argv)
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1, captured.err
    return captured.err


def test_a_bad_license_is_refused_before_training(capsys):
    error = refused(["--preset", "rnnsearch", "--train_file", "t.jsonl", "--output_dir", "out", "--license", "GPL 2"],
                    capsys)
    assert error.endswith(": error: `license` must be a Hub licence id (lowercase letters, digits, '.', '+', '-'; "
                          "e.g. apache-2.0, gpl-2.0, other), got 'GPL 2'.\n")


@pytest.mark.parametrize("argv, message", [
    (["--preset", "nope", "--train_file", "t.jsonl"], "`--preset` must be one of"),  # a dataclass's __post_init__
    (["--preset", "rnnsearch", "--train_file", "t.jsonl", "--max_steps", "0"], "`--max_steps` must be a positive "
                                                                               "number of steps, or -1"),
    (["--preset", "rnnsearch", "--train_file", "t.jsonl", "--num_pictures", "-1"],
     "`--num_pictures` must be 0 (none) or a positive number, got -1."),
    (["missing.json"], "The .json file of arguments 'missing.json' cannot be read: "),
])
def test_a_bad_argument_prints_its_message_alone_and_exits_with_2(argv, message, capsys):
    """As argparse does for an unknown flag: 'PROG: error: MESSAGE' on stderr, no traceback, exit status 2."""
    error = refused([*argv, "--output_dir", "out"] if argv[0] != "missing.json" else argv, capsys)
    assert f": error: {message}" in error and "Traceback" not in error


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".json", ".jsonl"])
def test_local_files_in_every_format_keep_text_as_text(suffix, tmp_path):
    path = tmp_path / f"train{suffix}"
    if suffix in (".csv", ".tsv"):
        separator, quote = (",", '"') if suffix == ".csv" else ("\t", "")  # a .tsv has no quoting
        path.write_text("\n".join([f"source{separator}target"] + [
            f'{quote}{row["source"]}{quote}{separator}{row["target"]}' for row in ROWS]) + "\n")
    elif suffix == ".json":
        path.write_text(json.dumps(ROWS))
    else:
        path.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    raw = load_raw_datasets(DataTrainingArguments(train_file=str(path), test_file=str(path)), ModelArguments(
        preset="rnnsearch"))
    assert set(raw) == {"train", "test"}
    assert raw["train"]["source"] == [row["source"] for row in ROWS]
    assert raw["train"]["target"] == ["2015-03-03", "2015-03-14"]  # strings, not dates


def test_missing_columns_are_named(tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    with pytest.raises(ValueError, match="`--source_column` 'de' is not a column of the train data; its columns are "
                                         "\\['source', 'target'\\]"):
        load_raw_datasets(DataTrainingArguments(train_file=str(path), source_column="de"),
                          ModelArguments(preset="rnnsearch"))


def test_clip_keeps_the_end_token():
    assert clip([5, 6, 7, 8, 2], 3) == [5, 6, 2]
    assert clip([5, 6, 2], 3) == [5, 6, 2] and clip([5, 6, 2], None) == [5, 6, 2]


def test_tokenisation_truncates_only_when_asked_and_says_how_often(caplog):
    from contextlib import nullcontext

    from datasets import Dataset

    tokenizer = train_tokenizer([row["source"] for row in ROWS] + [row["target"] for row in ROWS], kind="char")
    dataset = Dataset.from_list(ROWS)
    full = tokenize_split(dataset, "train", tokenizer, DataTrainingArguments(train_file="a.csv"),
                          lambda desc: nullcontext())
    assert full.column_names == ["input_ids", "attention_mask", "labels"]
    assert [len(ids) for ids in full["input_ids"]] == [15, 8] and [len(ids) for ids in full["labels"]] == [11, 11]
    assert full["labels"][0] == tokenizer(text_target="2015-03-03")["input_ids"]
    with caplog.at_level(logging.WARNING):
        clipped = tokenize_split(dataset, "train", tokenizer, DataTrainingArguments(
            train_file="a.csv", max_source_length=10, overwrite_cache=True), lambda desc: nullcontext())
    assert [len(ids) for ids in clipped["input_ids"]] == [10, 8]
    assert clipped["input_ids"][0][-1] == tokenizer.eos_token_id and clipped["attention_mask"][0] == [1] * 10
    assert "1 of 2 train examples were truncated to --max_source_length=10" in caplog.text


def test_metrics_decode_generations_and_score_them_in_percent(monkeypatch):
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
    texts = ["2015-03-03", "2015-03-14", "1999-12-31"]
    tokenizer = train_tokenizer(texts, kind="char")
    labels = tokenizer(text_target=texts, padding=True, return_tensors="np")["input_ids"]
    labels = np.where(labels == tokenizer.pad_token_id, -100, labels)
    predictions = tokenizer(["2015-03-03", "2015-03-41", "1999-12-31"], return_tensors="np")["input_ids"]
    predictions = np.concatenate([np.full((3, 1), tokenizer.bos_token_id), predictions], axis=1)
    metrics = metrics_function(tokenizer)(EvalPrediction(predictions=predictions, label_ids=labels))
    assert metrics["exact_match"] == pytest.approx(200 / 3)
    assert 0 < metrics["chrf"] < 100 and 0 < metrics["bleu"] <= 100
    assert metrics["gen_len"] == 12  # <s> + 10 characters + </s>


def test_mean_output_length_stops_at_the_first_end_token(monkeypatch):
    """transformers' beam search pads a batch's shorter rows with </s> when the pad id is 0; Trainer pads batches
    with -100. Each row counts <s> … </s> only."""
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
    tokenizer = train_tokenizer(["2015-03-03", "1999-12-31"], kind="char")
    bos, eos, pad = tokenizer.bos_token_id, tokenizer.eos_token_id, tokenizer.pad_token_id
    one, two = tokenizer.convert_tokens_to_ids(["1", "2"])
    predictions = np.array([[bos, one, eos, eos, eos, eos],     # beam search's </s> fill: 3 tokens
                            [bos, one, two, one, two, eos],     # the longest row: 6
                            [bos, two, eos, pad, pad, pad],     # greedy's pad fill: 3
                            [bos, one, two, eos, -100, -100]])  # Trainer's padding across batches: 4
    labels = np.array([[bos, one, eos, -100, -100, -100]] * 4)
    assert output_lengths(predictions, eos, pad).tolist() == [3, 6, 3, 4]
    assert metrics_function(tokenizer)(EvalPrediction(predictions=predictions, label_ids=labels))["gen_len"] == 4.0


def test_metrics_score_wer_and_per_against_every_accepted_output(monkeypatch):
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
    accepted = [["F AO1 R B UH2 SH"], ["AE1 B IY0", "AE0 B EY1"], ["B AW1 T"]]
    tokenizer = train_tokenizer([phonemes for row in accepted for phonemes in row], kind="g2p")
    labels = tokenizer(text_target=[row[0] for row in accepted], padding=True, return_tensors="np")["input_ids"]
    labels = np.where(labels == tokenizer.pad_token_id, -100, labels)
    # right; the second pronunciation; one substitution (T -> B) in 3 phonemes
    outputs = ["F AO1 R B UH2 SH", "AE0 B EY1", "B AW1 B"]
    predictions = tokenizer(outputs, padding=True, return_tensors="np")["input_ids"]
    metrics = metrics_function(tokenizer, accepted_outputs=lambda: accepted)(
        EvalPrediction(predictions=predictions, label_ids=labels))
    assert metrics["wer"] == pytest.approx(100 / 3)  # 1 of 3 words wrong
    assert metrics["per"] == pytest.approx(100 * 1 / (6 + 3 + 3))  # 1 edit over the closest references' 12 phonemes
    assert metrics["exact_match"] == pytest.approx(100 / 3)  # against the first pronunciation only
    assert "wer" not in metrics_function(tokenizer)(EvalPrediction(predictions=predictions, label_ids=labels))
    assert "wer_no_stress" not in metrics


def test_metrics_without_stress_forgive_stress_digits_only(monkeypatch):
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
    accepted = [["F AO1 R B UH2 SH"], ["AE1 B IY0", "AE0 B EY1"], ["B AW1 T"]]
    tokenizer = train_tokenizer([phonemes for row in accepted for phonemes in row] + ["UH0 AW0"], kind="g2p")
    labels = tokenizer(text_target=[row[0] for row in accepted], padding=True, return_tensors="np")["input_ids"]
    labels = np.where(labels == tokenizer.pad_token_id, -100, labels)
    # a stress digit wrong (UH2 -> UH0); right; a stress digit and a phoneme wrong (AW1 -> AW0, T -> B)
    outputs = ["F AO1 R B UH0 SH", "AE1 B IY0", "B AW0 B"]
    predictions = tokenizer(outputs, padding=True, return_tensors="np")["input_ids"]
    metrics = metrics_function(tokenizer, accepted_outputs=lambda: accepted, score_without_stress=True)(
        EvalPrediction(predictions=predictions, label_ids=labels))
    assert metrics["wer"] == pytest.approx(200 / 3) and metrics["wer_no_stress"] == pytest.approx(100 / 3)
    assert metrics["per"] == pytest.approx(100 * 3 / 12)  # UH0, AW0 and B are 3 edits over 6 + 3 + 3 phonemes
    assert metrics["per_no_stress"] == pytest.approx(100 * 1 / 12)  # only T -> B is left


def test_scoring_without_stress_needs_a_references_column(tmp_path, capsys):
    from training.run_seq2seq import main

    rows = "".join(json.dumps({"source": "abbe", "target": "AE1 B IY0"}) + "\n" for _ in range(4))
    (tmp_path / "train.jsonl").write_text(rows)
    (tmp_path / "test.jsonl").write_text(rows)
    exits_as_argparse_does(lambda: main([
        "--preset", "rnnsearch", "--train_file", str(tmp_path / "train.jsonl"), "--test_file",
        str(tmp_path / "test.jsonl"), "--do_train", "--do_predict", "--score_without_stress", "--output_dir",
        str(tmp_path / "out"), "--report_to", "none"]), "`--score_without_stress` scores the `references` column",
        capsys)


def test_a_short_run_logs_no_repeated_warnings_and_says_where_the_model_is(tmp_path, capfd, recwarn):
    """Evaluation in several batches used to warn "Both `max_new_tokens` … and `max_length` … seem to have been set"
    once per batch (Seq2SeqTrainer writes max_length=20 into the generation config), and every data loader warned
    about pin_memory on CPU; the run ends with one line naming the folder and how to use the model; the card carries
    --license."""
    from training.run_seq2seq import main

    rows = [{"source": f"{day} March 2015", "target": f"2015-03-{day:02d}"} for day in range(1, 29)]
    for split in ("train", "validation"):
        (tmp_path / f"{split}.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    output_dir = tmp_path / "model"
    main(["--preset", "rnnsearch", "--config_overrides", "embedding_size=8,hidden_size=16,attention_size=8",
          "--train_file", str(tmp_path / "train.jsonl"), "--validation_file", str(tmp_path / "validation.jsonl"),
          "--do_train", "--do_eval", "--predict_with_generate", "--max_steps", "3", "--logging_steps", "1",
          "--per_device_train_batch_size", "8", "--per_device_eval_batch_size", "8", "--eval_strategy", "steps",
          "--eval_steps", "2", "--save_strategy", "no", "--report_to", "none", "--output_dir", str(output_dir),
          "--num_pictures", "0", "--license", "mit"])
    out, err = capfd.readouterr()
    assert "seem to have been set" not in out + err
    assert not [warning for warning in recwarn if "pin_memory" in str(warning.message)]
    last_line = out.strip().splitlines()[-1]
    assert last_line.startswith(f"The model is saved in {output_dir} ")
    command = shlex.split(last_line.split("; use it with: ", 1)[1])  # runs as printed: the console script's main
    assert command == ["hf-bahdanau-translate", str(output_dir), "1 March 2015"]
    translate_main(command[1:])
    assert capfd.readouterr().out.strip()
    saved = json.loads((output_dir / "generation_config.json").read_text())
    assert saved["max_new_tokens"] == 17 and "max_length" not in saved  # 1.5 x the longest target (11 tokens)
    assert json.loads((output_dir / "config.json").read_text())["max_training_source_length"] == 14
    card = (output_dir / "README.md").read_text()
    assert "Local files: train.jsonl, validation.jsonl." in card and " trained on " not in card  # no dataset named
    assert ModelCard.load(output_dir / "README.md").data.license == "mit"  # --license


def test_a_split_with_references_reports_wer_and_per(tmp_path):
    from training.run_seq2seq import main

    words = {"abbe": ["AE1 B IY0", "AE0 B EY1"], "bout": ["B AW1 T"], "forbush": ["F AO1 R B UH2 SH"]}
    (tmp_path / "train.jsonl").write_text("".join(json.dumps({"source": word, "target": variant}) + "\n"
                                                  for word, variants in words.items() for variant in variants))
    (tmp_path / "test.jsonl").write_text("".join(
        json.dumps({"source": word, "target": variants[0], "references": variants}) + "\n"
        for word, variants in words.items()))
    output_dir = tmp_path / "model"
    main(["--preset", "rnnsearch", "--config_overrides", "embedding_size=8,hidden_size=16,attention_size=8",
          "--tokenizer_type", "g2p", "--train_file", str(tmp_path / "train.jsonl"), "--test_file",
          str(tmp_path / "test.jsonl"), "--do_train", "--do_predict", "--predict_with_generate", "--max_steps", "2",
          "--per_device_train_batch_size", "4", "--save_strategy", "no", "--report_to", "none",
          "--output_dir", str(output_dir), "--num_pictures", "0"])
    results = json.loads((output_dir / "all_results.json").read_text())
    predicted = (output_dir / "generated_predictions.txt").read_text().splitlines()
    wrong = sum(" ".join(output.split()) not in variants for output, variants in zip(predicted, words.values()))
    assert results["predict_wer"] == pytest.approx(100 * wrong / 3)
    assert 0 <= results["predict_per"] and (results["predict_per"] == 0) == (wrong == 0)


def test_a_run_with_the_coverage_loss_logs_it_beside_the_loss(tmp_path):
    from training.run_seq2seq import main

    rows = [{"source": f"{day} March 2015", "target": f"2015-03-{day:02d}"} for day in range(1, 17)]
    (tmp_path / "train.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    output_dir = tmp_path / "model"
    main(["--preset", "rnnsearch", "--config_overrides",
          "embedding_size=8,hidden_size=16,attention_size=8,use_coverage=True,coverage_loss_weight=0.5",
          "--train_file", str(tmp_path / "train.jsonl"), "--do_train", "--max_steps", "4", "--logging_steps", "2",
          "--per_device_train_batch_size", "8", "--save_strategy", "no", "--report_to", "none",
          "--output_dir", str(output_dir), "--num_pictures", "0"])
    history = json.loads((output_dir / "trainer_state.json").read_text())["log_history"]
    logged = [entry for entry in history if "loss" in entry]
    assert len(logged) == 2 and all(0 < entry["coverage_loss"] < entry["loss"] for entry in logged)
    assert json.loads((output_dir / "config.json").read_text())["coverage_loss_weight"] == 0.5


def test_a_training_budget_in_minutes_stops_the_run(tmp_path, capsys):
    """--max_train_minutes ends training at the first step past the budget, whatever --max_steps says: with a budget
    of 10⁻⁶ minutes (60 µs) the first step is already past it."""
    from training.run_seq2seq import main

    rows = [{"source": f"{day} March 2015", "target": f"2015-03-{day:02d}"} for day in range(1, 17)]
    (tmp_path / "train.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    arguments = ["--preset", "rnnsearch", "--config_overrides", "embedding_size=8,hidden_size=16,attention_size=8",
                 "--train_file", str(tmp_path / "train.jsonl"), "--do_train", "--max_steps", "50",
                 "--per_device_train_batch_size", "8", "--save_strategy", "no", "--report_to", "none",
                 "--output_dir", str(tmp_path / "model"), "--num_pictures", "0"]
    main([*arguments, "--max_train_minutes", "1e-6"])
    assert json.loads((tmp_path / "model" / "trainer_state.json").read_text())["global_step"] == 1
    for bad in ("0", "-1", "nan"):
        with pytest.raises(SystemExit):
            main([*arguments, "--max_train_minutes", bad])
        error = capsys.readouterr().err
        assert f"error: `--max_train_minutes` must be a positive number of minutes, got {float(bad)}." in error
