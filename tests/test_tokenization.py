"""training.tokenization: special-token ids, round trips, offsets and word ids for every tokenizer kind."""

import pytest
from transformers import AutoTokenizer

from training.tokenization import SPECIAL_TOKENS, train_tokenizer

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
    ("char", "3. März 2015"), ("word", "3 . März 2015"), ("g2p", "3 . M ä r z 2 0 1 5"), ("bpe", "3. März 2015"),
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
