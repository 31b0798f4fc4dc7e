"""hf_bahdanau.pictures.plot_classifier_attention / plot_classifier_texts: each pooling's picture holds the model's
own weights (one row α; A's r rows and their mean; the D features ordered by peak token and their mean; HAN's words
and sentences), padding is not drawn, bad input is refused by name; training/classifier_pictures.py picks the same
short documents for every model and writes one picture per model."""

import json
import re
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from matplotlib import colormaps

from conftest import exits_as_argparse_does, padded_batch, tiny_encoder_config
from hf_bahdanau import BahdanauForSequenceClassification
from hf_bahdanau.modeling.axes import POOLINGS
from hf_bahdanau.modeling.padding import rotate_rows
from hf_bahdanau.pictures import plot_classifier_attention, plot_classifier_texts
from hf_bahdanau.pictures.classifier import _POOLING_ROWS
from test_sequence_classification import SEP, documents
from training import classifier_pictures
from training.common.tokenization import train_tokenizer

pytestmark = pytest.mark.usefixtures("one_thread")

ROWS = 4  # r of the self-attentive models (a power of 2: a mean of multiples of 1/8 over the rows is exact)
LENGTHS = (6, 4, 2)
EPS = float(np.finfo(np.float32).eps)


def classifier(pooling_type: str, hierarchical: bool = False, **overrides) -> BahdanauForSequenceClassification:
    """A tiny random classifier over 3 labels: encoder 1 x 8 per direction, so D = 16 features."""
    torch.manual_seed(0)
    config = tiny_encoder_config(num_labels=3, hierarchical=hierarchical, sentence_separator_token_id=SEP,
                                 pooling_type=pooling_type, self_attention_rows=ROWS, encoder_layers=1, **overrides)
    return BahdanauForSequenceClassification(config).eval()


def heat_maps(area) -> list:
    """The axes of a panel that hold an image (not the colour bars), top to bottom."""
    return [ax for ax in area.axes if ax.images]


def image(ax) -> np.ndarray:
    (picture,) = ax.images
    return np.asarray(picture.get_array())


def tick_texts(labels) -> list[str]:
    return [label.get_text() for label in labels]


def expected_rows(pooling_type: str, weights: torch.Tensor, keep: torch.Tensor) -> np.ndarray:
    """One text's weights as rows over its real tokens [R, S_real], by hand from the output's documented layout."""
    if pooling_type in ("context_vector", "final_state"):  # α [S]; where the final states were read [S]
        return weights[keep][None].numpy()
    if pooling_type == "self_attentive":  # A [r, S]
        return weights[:, keep].numpy()
    return weights[keep].T.numpy()  # α [S, D] -> [D, S]


@pytest.mark.parametrize("left_padded", [False, True])
@pytest.mark.parametrize("pooling_type", sorted(POOLINGS.allowed))
def test_flat_panels_hold_the_model_weights_of_the_real_tokens(pooling_type, left_padded):
    model = classifier(pooling_type)
    input_ids, attention_mask = padded_batch(LENGTHS)
    if left_padded:
        shifts = attention_mask.sum(1)  # out[j] = in[(j + length) mod S]: the padding moves to the front
        input_ids, attention_mask = rotate_rows(input_ids, shifts, 1), rotate_rows(attention_mask, shifts, 1)
        assert attention_mask[:, 0].tolist() == [1, 0, 0] and attention_mask[:, -1].tolist() == [1, 1, 1]
    with torch.no_grad():
        (weights,) = model(input_ids=input_ids, attention_mask=attention_mask, output_attentions=True).attentions
    tokens = [[f"w{position}" for position in range(length)] for length in LENGTHS]
    figure = plot_classifier_attention(model.config, (weights,), tokens, attention_mask, titles=["a", "b", "c"])
    assert [area.get_suptitle() for area in figure.subfigs] == ["a", "b", "c"]
    for area, text_weights, keep, text_tokens in zip(figure.subfigs, weights, attention_mask.bool(), tokens):
        rows = expected_rows(pooling_type, text_weights, keep)
        maps = heat_maps(area)
        top = maps[0]
        assert tick_texts(top.get_xticklabels()) == text_tokens  # padding columns are not drawn
        assert all(ax.get_xlim() == (-0.5, len(text_tokens) - 0.5) for ax in maps)
        if pooling_type in ("context_vector", "final_state"):
            name = "α" if pooling_type == "context_vector" else "read"
            assert len(maps) == 1 and tick_texts(top.get_yticklabels()) == [name]
            np.testing.assert_array_equal(image(top), rows)
        else:
            mean, matrix = maps
            assert tick_texts(mean.get_yticklabels()) == ["mean"]
            np.testing.assert_allclose(image(mean), rows.mean(0, keepdims=True), rtol=0, atol=len(rows) * EPS)
            drawn = image(matrix)
            if pooling_type == "self_attentive":
                assert tick_texts(matrix.get_yticklabels()) == [f"row {row}" for row in range(1, ROWS + 1)]
                np.testing.assert_array_equal(drawn, rows)
            else:  # D = 16 features, ordered by the token they peak on, then by feature index
                assert drawn.shape == (16, len(text_tokens)) and matrix.get_ylabel() == "16 features,\nby peak token"
                peaks = rows.argmax(1)
                order = sorted(range(16), key=lambda feature: (peaks[feature], feature))
                np.testing.assert_array_equal(drawn, rows[order])
                assert list(drawn.argmax(1)) == sorted(peaks)
        for ax in maps:  # grey from 0 to the largest weight drawn
            assert ax.images[0].get_clim() == (0.0, float(image(ax).max()))


def test_one_text_is_the_whole_figure_and_is_saved(tmp_path):
    model = classifier("self_attentive")
    input_ids, attention_mask = padded_batch((5,))
    with torch.no_grad():
        attentions = model(input_ids=input_ids, output_attentions=True).attentions
    figure = plot_classifier_attention(model.config, attentions, [list("abcde")], path=tmp_path / "one.png")
    assert not figure.subfigs and len(heat_maps(figure)) == 2
    assert (tmp_path / "one.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def document_panel(ax) -> tuple[list[str], list[tuple]]:
    """The texts of a HAN panel (a sentence's weight, then its words, per line) and their shades."""
    return [shown.get_text() for shown in ax.texts], [shown.get_bbox_patch().get_facecolor() for shown in ax.texts]


def shades(sentence_weights: list[float], word_weights: list[list[float]]) -> list[tuple]:
    reds, blues = colormaps["Reds"], colormaps["Blues"]
    return [colour for sentence, words in zip(sentence_weights, word_weights)
            for colour in [reds(sentence), *(blues(word) for word in words)]]


@pytest.mark.parametrize("pooling_type", sorted(POOLINGS.allowed))
def test_han_panels_show_every_real_sentence_and_word(pooling_type):
    model = classifier(pooling_type, hierarchical=True)
    input_ids, attention_mask = documents()  # "a b . c d e . f </s>", ". . g h </s>", "i . j"
    with torch.no_grad():
        attentions = model(input_ids=input_ids, attention_mask=attention_mask, output_attentions=True).attentions
    sentences = [[["a", "b"], ["c", "d", "e"], ["f"]], [["g", "h"]], [["i"], ["j"]]]
    figure = plot_classifier_attention(model.config, attentions, sentences, titles=["x", "y", "z"])
    note = {"context_vector": "", "final_state": "", "self_attentive": f"\n(the mean of the {ROWS} rows at each level)",
            "multi_dimensional": "\n(the mean of the 16 features at each level)"}[pooling_type]
    for number, (area, text) in enumerate(zip(figure.subfigs, sentences)):
        (ax,) = area.axes
        assert ax.get_title() == "xyz"[number] + note
        texts, colours = document_panel(ax)
        assert [shown for shown in texts if not shown[0].isdigit()] == [word for words in text for word in words]
        if pooling_type in ("context_vector", "final_state"):  # α [N, W] and β [N] themselves
            word_weights, sentence_weights = attentions[0][number], attentions[1][number]
            assert texts[0] == f"{float(sentence_weights[0]):.2f}"
            assert colours == shades([float(sentence_weights[row]) for row in range(len(text))],
                                     [word_weights[row, :len(words)].tolist() for row, words in enumerate(text)])


def test_han_panels_of_several_rows_or_features_shade_by_their_mean():
    """Hand-made weights whose means are exact: the words' over the rows (features) of their own sentence, the
    sentences' over the rows (features) of the sentence level."""
    sentences = [[["a", "b"], ["c", "d"]]]
    expected_texts = ["0.75", "a", "b", "0.25", "c", "d"]
    expected_colours = shades([0.75, 0.25], [[0.75, 0.25], [0.5, 0.5]])
    one, other, half = [1.0, 0.0], [0.0, 1.0], [0.5, 0.5]
    rows_config = classifier("self_attentive", hierarchical=True).config
    word_rows = torch.tensor([[[one, one, other, one], [half, half, half, half]]])  # A [1, N=2, r=4, W=2]
    sentence_rows = torch.tensor([[one, one, one, other]])  # A [1, r=4, N=2]
    figure = plot_classifier_attention(rows_config, (word_rows, sentence_rows), sentences)
    assert document_panel(figure.axes[0]) == (expected_texts, expected_colours)
    features_config = classifier("multi_dimensional", hierarchical=True).config
    word_features = torch.tensor([[[one] * 12 + [other] * 4, [half] * 16]]).transpose(-1, -2)  # α [1, 2, W=2, D=16]
    sentence_features = torch.tensor([[one] * 12 + [other] * 4]).transpose(-1, -2)  # α [1, N=2, D=16]
    figure = plot_classifier_attention(features_config, (word_features, sentence_features), sentences)
    assert document_panel(figure.axes[0]) == (expected_texts, expected_colours)


def test_plot_classifier_texts_titles_the_prediction_and_the_truth(tmp_path):
    texts = ["the cat sat", "a dog ran far away"]
    tokenizer = train_tokenizer(texts, kind="word")
    model = classifier("multi_dimensional", vocab_size=len(tokenizer),
                       id2label={0: "cats", 1: "dogs", 2: "birds"}, label2id={"cats": 0, "dogs": 1, "birds": 2})
    figure = plot_classifier_texts(model, tokenizer, texts, true_labels=["cats", "dogs"], path=tmp_path / "t.png")
    with torch.no_grad():
        logits = model(**tokenizer(texts, padding=True, return_tensors="pt")).logits
    predicted = [model.config.id2label[int(row.argmax())] for row in logits]
    assert [area.get_suptitle() for area in figure.subfigs] == [
        f"predicted: {predicted[0]} · true: cats", f"predicted: {predicted[1]} · true: dogs"]
    assert [tick_texts(heat_maps(area)[0].get_xticklabels()) for area in figure.subfigs] == [
        ["the", "cat", "sat", "</s>"], ["a", "dog", "ran", "far", "away", "</s>"]]
    assert (tmp_path / "t.png").stat().st_size > 1000
    with pytest.raises(ValueError, match=r"`true_labels` must have one label per text \(2\), got 1"):
        plot_classifier_texts(model, tokenizer, texts, true_labels=["cats"])


def test_every_pooling_has_a_picture():
    assert set(_POOLING_ROWS) == set(POOLINGS.allowed)


def test_bad_input_is_refused_by_name():
    model = classifier("self_attentive")
    config, tokens = model.config, [["a", "b", "c"]]
    rows = torch.full((1, ROWS, 3), 1 / 3)
    with pytest.raises(ValueError, match=r"`config.pooling_type` must be one of \['context_vector', "
                                         r"'final_state', 'multi_dimensional', 'self_attentive'\], got 'max'"):
        plot_classifier_attention(SimpleNamespace(pooling_type="max", hierarchical=False), (rows,), tokens)
    with pytest.raises(ValueError, match=r"`attentions\[0\]` of a self_attentive classifier must be \[batch, r=4, S\] "
                                         r"with batch = 1 \(one per text of `tokens`\), got \[1, 2, 3\]"):
        plot_classifier_attention(config, (rows[:, :2],), tokens)
    with pytest.raises(ValueError, match=r"must be \[batch, r=4, S\] with batch = 2 .*got \[1, 4, 3\]"):
        plot_classifier_attention(config, (rows,), tokens * 2)
    features = classifier("multi_dimensional").config
    with pytest.raises(ValueError, match=r"`attentions\[0\]` of a multi_dimensional classifier must be "
                                         r"\[batch, S, D=16\] .*got \[1, 16, 3\]"):
        plot_classifier_attention(features, (torch.ones(1, 16, 3),), tokens)
    with pytest.raises(ValueError, match=r"`attentions` is None: call the model with output_attentions=True"):
        plot_classifier_attention(config, None, tokens)
    with pytest.raises(ValueError, match=r"`attentions` of a flat classifier must hold 1 tensor\(s\).*got 2"):
        plot_classifier_attention(config, (rows, rows), tokens)
    with pytest.raises(ValueError, match=r"`tokens\[0\]` must have one token per real position \(2 in attention_mask"
                                         r"\), got 3"):
        plot_classifier_attention(config, (rows,), tokens, attention_mask=torch.tensor([[1, 1, 0]]))
    with pytest.raises(ValueError, match=r"`tokens\[0\]` must have one token per real position \(3\), got 2"):
        plot_classifier_attention(config, (rows,), [["a", "b"]])
    with pytest.raises(ValueError, match=r"`attention_mask` must be \[batch, S\] = \[1, 3\] like the weights, got "
                                         r"\[1, 4\]"):
        plot_classifier_attention(config, (rows,), tokens, attention_mask=torch.ones(1, 4))
    with pytest.raises(ValueError, match=r"`titles` must have one title per text \(1\), got 2"):
        plot_classifier_attention(config, (rows,), tokens, titles=["a", "b"])
    with pytest.raises(ValueError, match="`tokens` must hold the tokens of at least one text"):
        plot_classifier_attention(config, (rows[:0],), [])
    han = classifier("context_vector", hierarchical=True).config
    words, sentences = torch.full((1, 2, 3), 1 / 3), torch.full((1, 2), 0.5)
    with pytest.raises(ValueError, match="`attention_mask` is for flat classifiers"):
        plot_classifier_attention(han, (words, sentences), [[["a"], ["b"]]], attention_mask=torch.ones(1, 2, 3))
    with pytest.raises(ValueError, match=r"`attentions\[0\]` and `attentions\[1\]` must cover the same N sentences"):
        plot_classifier_attention(han, (words, torch.ones(1, 3) / 3), [[["a"], ["b"]]])
    with pytest.raises(ValueError, match=r"`attentions\[0\]\[0\]` must be \[N, W\] .* at most N tokens\[0\] sentences "
                                         r"of at most W words; got \[2, 3\], \[2\] and 2 tokens\[0\] sentences of up "
                                         r"to 4 words"):
        plot_classifier_attention(han, (words, sentences), [[["a"], ["b", "c", "d", "e"]]])


class CountingTokenizer:
    """A stand-in tokenizer: one id per whitespace word, plus an end-of-sequence id."""

    def __init__(self, extra: int = 0):
        self.extra = extra

    def __call__(self, text: str) -> dict:
        return {"input_ids": [0] * (len(text.split()) + 1 + self.extra)}


def test_short_documents_are_the_first_that_every_tokenizer_keeps_short():
    rows = [{"text": "one two three"}, {"text": "one"}, {"text": "one two"}, {"text": "x"}, {"text": "y"}]
    # lengths 4, 2, 3, 2, 2 under the first tokenizer and 5, 3, 4, 3, 3 under the second
    chosen = classifier_pictures.short_documents(rows, [CountingTokenizer(), CountingTokenizer(1)], "text", 2, 3)
    assert chosen == [{"text": "one"}, {"text": "x"}]
    assert classifier_pictures.short_documents(rows, [CountingTokenizer()], "text", 9, 3) == rows[1:]


def test_the_script_draws_one_picture_per_model(tmp_path, capsys):
    rows = [{"text": "the cat sat on the mat and looked at the dog for a while", "label": "long"},
            {"text": "the cat sat", "label": "cats"}, {"text": "a dog ran", "label": "dogs"}]
    test_file = tmp_path / "test.jsonl"
    test_file.write_text("".join(json.dumps(row) + "\n" for row in rows))
    tokenizer = train_tokenizer([row["text"] for row in rows], kind="word")
    folders = []
    for pooling_type in ("context_vector", "self_attentive"):
        folder = tmp_path / pooling_type
        classifier(pooling_type, vocab_size=len(tokenizer)).save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        folders.append(str(folder))
    paths = classifier_pictures.main(["--model_dirs", *folders, "--test_file", str(test_file), "--max_tokens", "5",
                                      "--output_dir", str(tmp_path / "pictures")])
    assert paths == [tmp_path / "pictures" / "fortunes_attention_flat_context_vector.png",
                     tmp_path / "pictures" / "fortunes_attention_flat_self_attentive.png"]
    assert all(path.read_bytes()[:4] == b"\x89PNG" for path in paths)
    error = exits_as_argparse_does(lambda: classifier_pictures.main([
        "--model_dirs", folders[0], folders[0], "--test_file", str(test_file), "--output_dir",
        str(tmp_path / "pictures")]), "--model_dirs", capsys)
    assert "give the same picture name twice" in error
    error = exits_as_argparse_does(lambda: classifier_pictures.main([
        "--model_dirs", folders[0], "--test_file", str(test_file), "--max_tokens", "2", "--output_dir",
        str(tmp_path / "pictures")]), "--test_file", capsys)
    assert re.search(r"No document of `--test_file` .* has at most --max_tokens=2 tokens", error), error
    error = exits_as_argparse_does(lambda: classifier_pictures.main(["--test_file", str(test_file)]), "--model_dirs",
                                   capsys)
    assert "error: `--model_dirs` must name at least one saved classifier folder, got none." in error
    error = exits_as_argparse_does(lambda: classifier_pictures.main(["--model_dirs", folders[0], "--test_file",
                                                                     str(test_file), "--num_texts", "0"]),
                                   "--num_texts", capsys)
    assert "error: `--num_texts` must be at least 1, got 0." in error
