"""Pictures of the encoder's own weights (hf_bahdanau.pictures.encoder): the self-attention α [S, S] of
``encoder_self_attention`` and the mixing weights α [S, K] of ``meta_embedding_sources``. The drawn arrays are the
weights the models return for the real tokens (padding not drawn, left padding = right padding), the K x S map names
the sources from the config and writes each weight, ``plot_encoder_text`` draws what the heads return (HAN: the
sentences one after another, block-diagonal), bad shapes are refused by name, and run_ner and run_classification (HAN)
leave the pictures in their output folder and model card."""

import numpy as np
import pytest
import torch

from conftest import padded_batch, tiny_config, tiny_encoder_config
from hf_bahdanau import BahdanauForConditionalGeneration, BahdanauForSequenceClassification
from hf_bahdanau.modeling.padding import rotate_rows
from hf_bahdanau.pictures import plot_embedding_mixture, plot_encoder_self_attention, plot_encoder_text
from test_head_scripts import REPO, SMALL_RUN
from test_meta_embedding import TOKENS
from training import run_classification, run_ner
from training.common.figures import save_encoder_pictures
from training.common.tokenization import train_tokenizer

pytestmark = pytest.mark.usefixtures("one_thread")

SOURCES = ["word", "chars"]
OPTIONS = dict(encoder_self_attention="additive", meta_embedding_sources=SOURCES, char_hidden_size=6,
               char_embedding_size=4)
LENGTHS = (6, 4, 2)
EPS = float(np.finfo(np.float32).eps)


def model_of(kind: str, spellings=TOKENS, **overrides):
    """A tiny random seq2seq model or classifier with both options, its spellings filled from ``spellings`` (the
    tokens, or a tokenizer)."""
    torch.manual_seed(0)
    model = (BahdanauForConditionalGeneration(tiny_config(**OPTIONS, **overrides)) if kind == "seq2seq"
             else BahdanauForSequenceClassification(tiny_encoder_config(**OPTIONS, **overrides)))
    model.set_token_spellings(spellings)
    return model.eval()


def returned_weights(model, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The head's ``encoder_attentions[0]`` [B, 1, S, S] and ``embedding_attentions`` [B, S, K]."""
    decoder = {"labels": input_ids[:, :3]} if isinstance(model, BahdanauForConditionalGeneration) else {}
    with torch.no_grad():
        outputs = model(input_ids=input_ids, attention_mask=attention_mask, output_attentions=True, **decoder)
    return outputs.encoder_attentions[0], outputs.embedding_attentions


def image(figure) -> np.ndarray:
    (ax,) = figure.axes
    (picture,) = ax.images
    return np.asarray(picture.get_array())


def ticks(labels) -> list[str]:
    return [label.get_text() for label in labels]


@pytest.mark.parametrize("kind", ["seq2seq", "classifier"])
def test_the_pictures_hold_the_returned_weights_of_the_real_tokens_whatever_the_padding(kind):
    model = model_of(kind)
    input_ids, mask = padded_batch(LENGTHS)
    shifts = mask.sum(1)  # out[j] = in[(j + length) mod S]: the padding moves to the front
    left_ids, left_mask = rotate_rows(input_ids, shifts, 1), rotate_rows(mask, shifts, 1)
    assert left_mask[:, 0].tolist() == [1, 0, 0]
    pictures = {}
    for layout, (ids, keep_mask) in {"right": (input_ids, mask), "left": (left_ids, left_mask)}.items():
        self_attention, mixture = returned_weights(model, ids, keep_mask)
        for row, length in enumerate(LENGTHS):
            keep = keep_mask[row].bool()
            tokens = [f"t{position}" for position in range(length)]
            attended = plot_encoder_self_attention(self_attention[row, 0], tokens, attention_mask=keep_mask[row])
            mixed = plot_embedding_mixture(mixture[row], tokens, model.config.meta_embedding_sources, keep_mask[row])
            np.testing.assert_array_equal(image(attended), self_attention[row, 0][keep][:, keep].numpy())
            np.testing.assert_array_equal(image(mixed), mixture[row][keep].T.numpy())
            assert image(attended).shape == (length, length) and image(mixed).shape == (2, length)  # no padding
            (ax,) = attended.axes
            assert ticks(ax.get_xticklabels()) == tokens and ticks(ax.get_yticklabels()) == tokens
            (ax,) = mixed.axes
            assert ticks(ax.get_xticklabels()) == tokens and ticks(ax.get_yticklabels()) == SOURCES
            # each weight written in its cell, row by row (sources), left to right (tokens)
            assert [text.get_text() for text in ax.texts] == [f"{weight:.2f}" for weight in image(mixed).flat]
            pictures[layout, row] = image(attended), image(mixed)
    for row in range(len(LENGTHS)):
        (right_attended, right_mixed), (left_attended, left_mixed) = pictures["right", row], pictures["left", row]
        # the encoder runs left-padded rows right-padded: the same numbers (the self-attention bit for bit)
        np.testing.assert_array_equal(left_attended, right_attended)
        # each token's mixture alone: softmax over K = 2 scores of 12 products of size ~1, summed in any order
        np.testing.assert_allclose(left_mixed, right_mixed, rtol=0, atol=12 * 4 * EPS)
        np.testing.assert_allclose(right_attended.sum(1), 1.0, rtol=0, atol=LENGTHS[row] * EPS)


def test_long_texts_get_no_values_in_the_cells():
    weights = np.full((31, 2), 0.5)
    figure = plot_embedding_mixture(weights, [f"t{index}" for index in range(31)], SOURCES)
    assert not figure.axes[0].texts and image(figure).shape == (2, 31)


TEXTS = ["the cat sat . on the mat", "a dog ran far . away now . then"]


@pytest.mark.parametrize("kind", ["seq2seq", "flat", "han"])
def test_plot_encoder_text_draws_what_the_head_returns(kind):
    """Through the tokenizer and the encoder alone, the weights the head's forward returns; HAN: each sentence's
    words (the separators dropped, as the classifier splits them), the self-attention block-diagonal."""
    tokenizer = train_tokenizer(TEXTS, kind="word")
    vocab = {"vocab_size": len(tokenizer)}
    if kind == "han":
        vocab.update(hierarchical=True, sentence_separator_token_id=tokenizer.convert_tokens_to_ids("."))
    model = model_of("seq2seq" if kind == "seq2seq" else "classifier", tokenizer, **vocab)
    figures = plot_encoder_text(model, tokenizer, TEXTS[1])
    encoding = tokenizer([TEXTS[1]], return_tensors="pt")
    self_attention, mixture = returned_weights(model, encoding["input_ids"], encoding["attention_mask"])
    if kind == "han":  # [1, N, 1, W, W] and [1, N, W, K] over the sentences "a dog ran far", "away now", "then"
        lengths = [4, 2, 1]
        expected_attention = torch.block_diag(*(self_attention[0, number, 0, :length, :length]
                                                for number, length in enumerate(lengths)))
        expected_mixture = torch.cat([mixture[0, number, :length] for number, length in enumerate(lengths)])
        tokens = ["a", "dog", "ran", "far", "away", "now", "then"]
        title = "self-attention (additive)\nwithin each sentence"
    else:
        expected_attention, expected_mixture = self_attention[0, 0], mixture[0]
        tokens = tokenizer.convert_ids_to_tokens(encoding["input_ids"][0])
        title = "self-attention (additive)"
    assert figures["encoder_self_attention"].axes[0].get_title() == title
    np.testing.assert_array_equal(image(figures["encoder_self_attention"]), expected_attention.numpy())
    np.testing.assert_array_equal(image(figures["embedding_mixture"]), expected_mixture.T.numpy())
    assert ticks(figures["embedding_mixture"].axes[0].get_xticklabels()) == tokens


def test_a_model_without_the_options_gets_no_pictures(tmp_path):
    tokenizer = train_tokenizer(TEXTS, kind="word")
    model = BahdanauForConditionalGeneration(tiny_config(vocab_size=len(tokenizer)))
    assert plot_encoder_text(model, tokenizer, TEXTS[0]) == {}
    assert save_encoder_pictures(model, tokenizer, TEXTS, tmp_path) == [] and not any(tmp_path.iterdir())


def test_bad_shapes_are_refused_by_name():
    tokens = ["a", "b", "c"]
    with pytest.raises(ValueError, match=r"`weights` must be one text's self-attention α \[S, S\], got \[3, 4\]"):
        plot_encoder_self_attention(np.zeros((3, 4)), tokens)
    with pytest.raises(ValueError, match=r"`weights` must be one text's self-attention α \[S, S\], got \[1, 3, 3\]"):
        plot_encoder_self_attention(np.zeros((1, 3, 3)), tokens)
    with pytest.raises(ValueError, match=r"`weights` must be .* α \[S, K\] with K = len\(sources\) = 2, got \[3, 3\]"):
        plot_embedding_mixture(np.zeros((3, 3)), tokens, SOURCES)
    with pytest.raises(ValueError, match=r"`attention_mask` must be one text's mask \[S\] = \[3\] .*, got \[1, 3\]"):
        plot_encoder_self_attention(np.zeros((3, 3)), tokens, attention_mask=np.ones((1, 3)))
    with pytest.raises(ValueError, match=r"`tokens` must have one token per real position \(2 in attention_mask\), "
                                         r"got 3"):
        plot_embedding_mixture(np.zeros((3, 2)), tokens, SOURCES, attention_mask=np.array([1, 1, 0]))
    with pytest.raises(ValueError, match=r"`tokens` must have one token per real position \(3\), got 2"):
        plot_encoder_self_attention(np.zeros((3, 3)), tokens[:2])


@pytest.mark.parametrize("script, arguments", [(run_ner, ["ner_tagger.json"]),
                                               (run_classification, ["han_classifier.json", "--hierarchical", "true"])],
                         ids=["run_ner", "run_classification-han"])
def test_the_scripts_leave_the_pictures_in_their_folder_and_card(script, arguments, tmp_path):
    script.main([str(REPO / "training/configs" / arguments[0]), *arguments[1:], "--output_dir", str(tmp_path),
                 "--config_overrides", "embedding_size=8,hidden_size=16,meta_embedding_sources=[word,chars],"
                 "encoder_self_attention=additive", *SMALL_RUN])
    pictures = {"encoder_self_attention_0.png", "embedding_mixture_0.png"}
    assert pictures | {"attention_0.png"} <= {path.name for path in tmp_path.iterdir()}
    assert not (tmp_path / "encoder_self_attention_1.png").exists()  # as many as the attention pictures (1)
    card = (tmp_path / "README.md").read_text()
    assert all(f"]({picture})" in card for picture in pictures)
