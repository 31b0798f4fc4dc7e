"""training.common.tokenization: special-token ids, round trips, offsets and word ids for every tokenizer kind."""

import json
import re
from pathlib import Path

import numpy as np
import pytest
from transformers import AutoTokenizer, PreTrainedTokenizerFast

from child_process import run_script
from conftest import tiny_model
from hf_bahdanau.modeling.copying import encode_with_copies
from training.common.tokenization import SPECIAL_TOKENS, train_tokenizer

DATA_DIR = Path(__file__).parents[1] / "training" / "data"

TEXTS = ["Tuesday, 3 March 2015", "le 3 mars 2015", "3. März 2015", "03/03/15", "Sunday 14 June 1998"] * 3
SUBWORD_SIZE = 60


def trained(kind: str, **kwargs):
    size = SUBWORD_SIZE if kind in ("bpe", "unigram") else None
    return train_tokenizer(TEXTS, kind=kind, vocab_size=size, **kwargs)


@pytest.mark.parametrize("kind", ["char", "word", "g2p", "bpe", "unigram"])
def test_special_tokens_have_the_config_ids_and_eos_is_appended(kind):
    tokenizer = trained(kind, extra_special_tokens=["<sep>"])
    assert tokenizer.convert_ids_to_tokens([0, 1, 2, 3, 4]) == [*SPECIAL_TOKENS, "<sep>"]
    assert (tokenizer.pad_token_id, tokenizer.bos_token_id, tokenizer.eos_token_id, tokenizer.unk_token_id) == (
        0, 1, 2, 3)
    encoded = tokenizer("3 March 2015")
    assert encoded["input_ids"][-1] == 2 and encoded["input_ids"].count(2) == 1
    assert list(encoded) == ["input_ids", "attention_mask"]


@pytest.mark.parametrize("kind, decoded", [
    ("char", "3. März 2015"), ("word", "3. März 2015"), ("g2p", "3 . M ä r z 2 0 1 5"), ("bpe", "3. März 2015"),
    ("unigram", "3. März 2015"),
])
def test_decode_round_trip_and_save_load(kind, decoded, tmp_path):
    tokenizer = trained(kind)
    ids = tokenizer("3. März 2015")["input_ids"]
    assert tokenizer.decode(ids, skip_special_tokens=True) == decoded
    tokenizer.save_pretrained(tmp_path)
    reloaded = AutoTokenizer.from_pretrained(tmp_path)
    assert reloaded("3. März 2015")["input_ids"] == ids
    assert reloaded.decode(ids, skip_special_tokens=True) == decoded


def test_g2p_tokens_are_the_letters_of_a_word_and_whole_phonemes():
    tokenizer = train_tokenizer(["forbush", "F AO1 R B UH2 SH", "'bout", "B AW1 T"], kind="g2p")
    word = tokenizer("forbush", return_offsets_mapping=True)
    assert tokenizer.convert_ids_to_tokens(word["input_ids"]) == [*"forbush", "</s>"]
    assert word["offset_mapping"][:-1] == [(i, i + 1) for i in range(7)]
    phonemes = tokenizer("F AO1 R B UH2 SH", return_offsets_mapping=True)
    assert tokenizer.convert_ids_to_tokens(phonemes["input_ids"]) == ["F", "AO1", "R", "B", "UH2", "SH", "</s>"]
    assert phonemes["offset_mapping"][:-1] == [(0, 1), (2, 5), (6, 7), (8, 9), (10, 13), (14, 16)]
    assert tokenizer.decode(phonemes["input_ids"], skip_special_tokens=True) == "F AO1 R B UH2 SH"
    assert tokenizer.convert_ids_to_tokens(tokenizer("'bout")["input_ids"]) == ["'", "b", "o", "u", "t", "</s>"]


def test_char_tokens_are_characters_with_their_offsets():
    tokenizer = trained("char")
    text = "le 3 mars"
    encoded = tokenizer(text, return_offsets_mapping=True)
    assert tokenizer.convert_ids_to_tokens(encoded["input_ids"]) == [*text, "</s>"]
    assert encoded["offset_mapping"] == [(i, i + 1) for i in range(len(text))] + [(0, 0)]


@pytest.mark.parametrize("kind", ["char", "word", "g2p", "bpe", "unigram"])
def test_word_ids_follow_pre_split_words(kind):
    tokenizer = trained(kind)
    encoded = tokenizer(["3", "März", "2015"], is_split_into_words=True)
    word_ids = encoded.word_ids()
    assert word_ids[-1] is None  # </s>
    assert sorted(set(word_ids[:-1])) == [0, 1, 2] and word_ids[:-1] == sorted(word_ids[:-1])


def test_word_kind_offsets_cover_whole_words():
    tokenizer = trained("word")
    encoded = tokenizer("le 3 mars 2015", return_offsets_mapping=True)
    assert tokenizer.convert_ids_to_tokens(encoded["input_ids"]) == ["le", "3", "mars", "2015", "</s>"]
    assert encoded["offset_mapping"][:4] == [(0, 2), (3, 4), (5, 9), (10, 14)]


def test_word_tokens_mark_pieces_glued_to_the_previous_and_decode_the_text_as_written():
    tokenizer = train_tokenizer(["2021-04-14 (a.m.), 3/14/15", "2021 - 04"], kind="word")
    encoded = tokenizer("2021-04-14 (a.m.), 3/14/15", return_offsets_mapping=True)
    assert tokenizer.convert_ids_to_tokens(encoded["input_ids"]) == [
        "2021", "‿-", "‿04", "‿-", "‿14", "(", "‿a", "‿.", "‿m", "‿.),", "3", "‿/", "‿14", "‿/", "‿15", "</s>"]
    assert encoded["offset_mapping"][:10] == [(0, 4), (4, 5), (5, 7), (7, 8), (8, 10), (11, 12), (12, 13), (13, 14),
                                              (14, 15), (15, 18)]
    assert encoded.word_ids()[:-1] == list(range(15))
    for text in ("2021-04-14 (a.m.), 3/14/15", "2021 - 04", "04-14 2021"):
        assert tokenizer.decode(tokenizer(text)["input_ids"], skip_special_tokens=True) == text
    assert tokenizer.decode(tokenizer("  2021 -\t04 ")["input_ids"], skip_special_tokens=True) == "2021 - 04"
    assert tokenizer.convert_ids_to_tokens(tokenizer("04 -04")["input_ids"]) == ["04", "-", "‿04", "</s>"]


def test_word_tokens_of_pre_split_words_match_those_of_running_text():
    tokenizer = trained("word")
    words = tokenizer(["Sunday", "14", "June", ","], is_split_into_words=True)["input_ids"]
    assert tokenizer.convert_ids_to_tokens(words) == ["Sunday", "14", "June", "<unk>", "</s>"]  # "," only glued
    assert words[:3] == tokenizer("Sunday 14 June")["input_ids"][:3]


@pytest.mark.parametrize("data", ["dates", "meetings"])
def test_word_decode_gives_back_every_bundled_source_and_target(data):
    texts = [row[column] for path in sorted((DATA_DIR / data).glob("*.jsonl")) for line in path.open()
             for row in [json.loads(line)] for column in ("source", "target")]
    tokenizer = train_tokenizer(texts, kind="word")
    decoded = tokenizer.batch_decode(tokenizer(texts)["input_ids"], skip_special_tokens=True)
    assert [text for text, back in zip(texts, decoded) if back != text] == []
    assert len(texts) == 28000 and any(re.search(r"\b\d{4}-\d\d-\d\d\b", text) for text in texts)


def test_unknown_characters_and_words_map_to_unk():
    assert trained("char")("3 Q")["input_ids"][-2] == 3
    assert trained("word")("le 3 juin")["input_ids"][-2] == 3


def test_vocab_size_caps_the_vocabulary_and_lowercase_folds_case():
    tokenizer = train_tokenizer(TEXTS, kind="char", vocab_size=10)
    assert len(tokenizer) == 10
    assert len(trained("bpe")) == SUBWORD_SIZE
    lowered = trained("word", lowercase=True)
    assert lowered("MARCH")["input_ids"] == lowered("march")["input_ids"] != [3, 2]


def test_bad_arguments_raise_value_errors_naming_them():
    with pytest.raises(ValueError, match="`kind` must be one of \\['char', 'word', 'g2p', 'bpe', 'unigram'\\]"):
        train_tokenizer(TEXTS, kind="bytes")
    with pytest.raises(ValueError, match="`vocab_size`"):
        train_tokenizer(TEXTS, kind="bpe", vocab_size=4)


@pytest.mark.parametrize("kind", ["char", "word"])
def test_a_text_that_is_not_a_string_is_named_by_its_index(kind):
    """A number among the texts (a data file's 41 read as an int) used to fail in the tokenizers library: 'int'
    object is not iterable."""
    with pytest.raises(TypeError) as error:
        train_tokenizer(iter(["41", 7, "0"]), kind=kind)
    assert str(error.value) == "`texts[1]` must be a string, got the int 7."



def meetings_rows(split: str, count: int) -> list[dict]:
    with (DATA_DIR / "meetings" / f"{split}.jsonl").open() as rows:
        return [json.loads(row) for row, _ in zip(rows, range(count))]


def test_copied_words_keep_their_spacing_in_the_main_jobs_decoding():
    """The meetings test's names never occur in training: they are copied (ids ≥ V) and decoded with the spacing of
    the target, as the main job decodes labels and predictions of a copy model."""
    from training.tasks.seq2seq import generated_texts

    train, test = meetings_rows("train", 2000), meetings_rows("test", 50)
    tokenizer = train_tokenizer([row[column] for row in train for column in ("source", "target")], kind="word")
    targets = [row["target"] for row in test]
    encoded = encode_with_copies(tokenizer, [row["source"] for row in test], targets)
    assert sum(len(words) for words in encoded.source_oovs) >= 2 * len(test)  # both names of every row, at least
    width = max(map(len, encoded["labels"]))
    labels = np.array([row + [-100] * (width - len(row)) for row in encoded["labels"]])
    assert generated_texts(tokenizer, labels, encoded.source_oovs) == targets  # "Name Surname | 2021-04-14"


def test_the_main_job_trains_a_copy_model_with_the_word_tokenizer(tmp_path):
    from training.run_seq2seq import main

    for split, rows in (("train", meetings_rows("train", 64)), ("test", meetings_rows("test", 8))):
        (tmp_path / f"{split}.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    output_dir = tmp_path / "model"
    main(["--preset", "rnnsearch", "--config_overrides", "embedding_size=8,hidden_size=16,attention_size=8,"
          "output_size=8,copy_attention=true", "--tokenizer_type", "word", "--train_file", str(tmp_path / "train.jsonl"),
          "--test_file", str(tmp_path / "test.jsonl"), "--do_train", "--do_predict", "--predict_with_generate",
          "--max_steps", "2", "--per_device_train_batch_size", "32", "--save_strategy", "no", "--report_to", "none",
          "--output_dir", str(output_dir), "--num_pictures", "0"])
    saved = AutoTokenizer.from_pretrained(output_dir)
    assert saved.convert_ids_to_tokens(saved("Ann Lee | 2021-04-14")["input_ids"]) == [
        "<unk>", "<unk>", "|", "2021", "‿-", "‿04", "‿-", "‿14", "</s>"]
    assert len((output_dir / "generated_predictions.txt").read_text().splitlines()) == 8
    assert json.loads((output_dir / "predict_results.json").read_text())["predict_samples"] == 8


# A machine without hf_bahdanau, stdin closed: load the tokenizer of a model folder with remote code allowed (as the
# model card says) and with no remote code at all; stderr is captured from before transformers is imported. Last, a
# bare AutoTokenizer call: transformers reads config.json first and asks about its code; stdin closed, that is a "no",
# after which it still returns the plain tokenizer (with a warning about the model type): a script does not hang.
PLAIN_TOKENIZER_CHILD = """
import contextlib
import io
import json
import sys

sys.stderr = captured = io.StringIO()
from transformers import AutoTokenizer, PreTrainedTokenizerFast

folder, text = sys.argv[1:]
loaded = {"auto_remote_code": AutoTokenizer.from_pretrained(folder, trust_remote_code=True),
          "plain_class": PreTrainedTokenizerFast.from_pretrained(folder)}
stderr = captured.getvalue()
with contextlib.redirect_stdout(io.StringIO()):  # transformers' question
    loaded["auto_bare"] = AutoTokenizer.from_pretrained(folder)
ids = {name: tokenizer(text)["input_ids"] for name, tokenizer in loaded.items()}
print(json.dumps({"classes": {name: type(tokenizer).__name__ for name, tokenizer in loaded.items()}, "ids": ids,
                  "decoded": {name: loaded[name].decode(ids[name], skip_special_tokens=True) for name in loaded},
                  "stderr": stderr}))
"""


@pytest.mark.parametrize("kind", ["word", "char"])
def test_a_model_folders_tokenizer_is_plain_and_loads_without_the_package(kind, tmp_path):
    text = "lunch w/ Farhan, 2021-04-14"
    tokenizer = train_tokenizer([text, "Farhan | 2021-04-14"], kind=kind)
    folder = tmp_path / "model"
    tiny_model("rnnsearch").save_pretrained(folder)  # as the main job's Trainer.save_model: model, then tokenizer
    tokenizer.save_pretrained(folder)
    assert "AutoConfig" in json.loads((folder / "config.json").read_text())["auto_map"]
    tokenizer_config = json.loads((folder / "tokenizer_config.json").read_text())
    assert "auto_map" not in tokenizer_config
    assert tokenizer_config["tokenizer_class"] in ("TokenizersBackend", "PreTrainedTokenizerFast")
    stdout = run_script(PLAIN_TOKENIZER_CHILD, tmp_path, str(folder), text, isolated=True, hide_package=True)
    child = json.loads(stdout.strip().splitlines()[-1])
    assert child["stderr"] == ""  # the two recommended loads: no warning
    assert set(child["classes"].values()) == {PreTrainedTokenizerFast.__name__}
    assert child["ids"] == {name: tokenizer(text)["input_ids"] for name in child["ids"]}
    assert child["decoded"] == {name: text for name in child["decoded"]}
