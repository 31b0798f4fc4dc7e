"""Pictures of a co-attention (VQA) model's two attentions: ``plot_coattention`` shades each question word by its
weight (the heat map's cells are the weights) and overlays each level's region weights on the image as maps written
out by hand; ``plot_vqa_example`` draws a tiny model's own weights for its answer; bad input is refused by name."""

import numpy as np
import pytest
import torch
from PIL import Image

from hf_bahdanau import (
    BahdanauForVisualQuestionAnswering, BahdanauImageProcessor, BahdanauVisualQuestionAnsweringConfig,
)
from hf_bahdanau.pictures import OVERLAY_OPACITY, attention_maps, plot_coattention, plot_vqa_example

pytestmark = pytest.mark.usefixtures("one_thread")

TOKENS = ["what", "color", "?"]
LEVELS = ["word", "phrase"]
# a^q [K = 2, T = 3] and a^v [K = 2, 2 x 3 regions] (as the pipeline's nested rows), exact in binary
QUESTION = [[0.5, 0.25, 0.25], [0.125, 0.625, 0.25]]
REGIONS = [[[0.125, 0.25, 0.125], [0.0, 0.25, 0.25]], [[0.0, 0.0, 0.0], [0.0, 0.0, 1.0]]]
# the overlays over a 4 x 6 image: each region's weight / 4 on each pixel of its 2 x 2 block
MAPS = [[[0.03125, 0.03125, 0.0625, 0.0625, 0.03125, 0.03125],
         [0.03125, 0.03125, 0.0625, 0.0625, 0.03125, 0.03125],
         [0.0, 0.0, 0.0625, 0.0625, 0.0625, 0.0625],
         [0.0, 0.0, 0.0625, 0.0625, 0.0625, 0.0625]],
        [[0.0] * 6, [0.0] * 6, [0.0, 0.0, 0.0, 0.0, 0.25, 0.25], [0.0, 0.0, 0.0, 0.0, 0.25, 0.25]]]
WORDS = ["<pad>", "<unk>", "what", "color", "shape", "is", "the", "?"]
ANSWERS = {0: "yes", 1: "no", 2: "red", 3: "circle"}


def labelled_axes(figure) -> dict:
    """Every axes of ``figure`` and its subfigures, by label."""
    found, areas = {}, [figure]
    while areas:
        area = areas.pop()
        found |= {ax.get_label(): ax for ax in area.axes}
        areas += area.subfigs
    return found


def test_each_word_is_shaded_by_its_weight_and_each_level_overlays_its_regions(tmp_path):
    image = np.random.default_rng(0).integers(0, 256, (4, 6, 3), dtype=np.uint8)
    figure = plot_coattention(image, TOKENS, torch.tensor(QUESTION),  # float32, as a model gives them
                              REGIONS, (2, 3), levels=LEVELS, answer="red",
                              title="Q: what color?", path=tmp_path / "coattention.png")
    assert figure.get_suptitle() == "Q: what color?\nanswer: red"
    axes = labelled_axes(figure)
    (picture,) = [ax for ax in axes.values() if ax.get_title() == "image"]
    np.testing.assert_array_equal(picture.images[0].get_array(), image)  # the image in colour, once
    luma = image @ np.array([0.299, 0.587, 0.114])
    for level, weights, expected in zip(LEVELS, QUESTION, np.array(MAPS)):
        words = axes[f"question · {level}"]
        (shading,) = words.images
        np.testing.assert_array_equal(shading.get_array(), [weights])  # each word's cell is its weight
        assert shading.get_clim() == (0.0, max(weights))
        assert [label.get_text() for label in words.get_xticklabels()] == TOKENS
        assert words.figure._suptitle.get_text() == level
        grey, overlay = axes[f"image · {level}"].images
        np.testing.assert_allclose(grey.get_array(), luma, rtol=1e-12)
        np.testing.assert_array_equal(overlay.get_array(), expected)
        np.testing.assert_allclose(overlay.get_alpha(), OVERLAY_OPACITY * expected / expected.max(), rtol=1e-12)
    assert (tmp_path / "coattention.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_stride_places_the_blocks_and_a_float32_softmax_is_a_distribution():
    # grid 2 x 2 at stride 4 over a 6 x 5 image (a padded batch's grid): the blocks are 4 x 4, cropped at the image
    weights = torch.softmax(torch.randn(1, 4, generator=torch.Generator().manual_seed(0)), -1)
    figure = plot_coattention(np.zeros((6, 5), np.uint8), ["a"], [[1.0]], weights, (2, 2), stride=(4, 4))
    (overlay,) = [ax.images[1] for label, ax in labelled_axes(figure).items() if label == "image · level 1"]
    np.testing.assert_array_equal(overlay.get_array(), attention_maps(weights, (2, 2), (6, 5), stride=(4, 4))[0])
    assert overlay.get_array()[3, 4] == pytest.approx(float(weights[0, 1]) / 16, rel=1e-12)
    many = torch.softmax(torch.randn(3, 4096, generator=torch.Generator().manual_seed(1)) * 4, -1)
    plot_coattention(np.zeros((64, 64), np.uint8), ["a", "b"], [[0.5, 0.5]] * 3, many.tolist(), (64, 64))


@pytest.fixture(scope="module")
def tiny_vqa():
    """An untrained VQA model (12 x 10 RGB images, our CNN at stride 4: a 3 x 3 grid), its processor and a word
    tokenizer that adds no special tokens."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    torch.manual_seed(0)
    config = BahdanauVisualQuestionAnsweringConfig(vocab_size=len(WORDS), hidden_size=8, attention_size=8,
                                           answer_hidden_size=8, cnn_channels=[4, 8], cnn_pool_sizes=[[2, 2], [2, 2]],
                                           id2label=ANSWERS)
    words = Tokenizer(models.WordLevel({word: index for index, word in enumerate(WORDS)}, unk_token="<unk>"))
    words.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=words, pad_token="<pad>", unk_token="<unk>")
    processor = BahdanauImageProcessor(num_channels=3, size={"height": 12, "width": 10})
    return BahdanauForVisualQuestionAnswering(config).eval(), processor, tokenizer


def test_plot_vqa_example_draws_the_models_own_weights(tiny_vqa, tmp_path):
    model, processor, tokenizer = tiny_vqa
    image = Image.fromarray(np.random.default_rng(1).integers(0, 256, (24, 20, 3), dtype=np.uint8))
    image.save(tmp_path / "shape.png")
    question = "what color is the shape ?"
    figure = plot_vqa_example(model, processor, tokenizer, tmp_path / "shape.png", question, expected="red")
    resized = processor.to_image(image)  # 12 x 10, as the model reads it
    ids = torch.tensor([[WORDS.index(word) for word in question.split()]])
    with torch.no_grad():
        outputs = model(input_ids=ids, attention_mask=torch.ones_like(ids),
                        **processor(resized, return_tensors="pt"), output_attentions=True)
    assert outputs.grid_size.tolist() == [[3, 3]]
    probabilities = outputs.logits[0].softmax(-1)
    answer = ANSWERS[int(probabilities.argmax())]
    assert figure.get_suptitle() == (f"Q: {question}\nanswer: {answer} (p = {float(probabilities.max()):.2f}) · "
                                     f"expected: red {'✓' if answer == 'red' else '✗'}")
    axes = labelled_axes(figure)
    maps = attention_maps(torch.stack(outputs.context_attentions)[:, 0], (3, 3), (12, 10), stride=(4, 4))
    for level, question_weights, expected in zip(model.config.text_config.question_levels, outputs.question_attentions, maps):
        words = axes[f"question · {level}"]
        assert [label.get_text() for label in words.get_xticklabels()] == question.split()  # no special tokens
        np.testing.assert_array_equal(words.images[0].get_array(), question_weights.double().numpy())
        np.testing.assert_array_equal(axes[f"image · {level}"].images[1].get_array(), expected)
    (picture,) = [ax for ax in axes.values() if ax.get_title() == "image"]
    np.testing.assert_array_equal(picture.images[0].get_array(), np.asarray(resized))


def test_plot_vqa_example_refuses_a_model_reading_one_input(tiny_vqa):
    model, processor, tokenizer = tiny_vqa
    baseline = BahdanauForVisualQuestionAnswering(model.config.__class__(**model.config.to_dict() | dict(
        inputs="question", coattention="none")))
    with pytest.raises(ValueError,
                       match=r"`model` reads one input \(`config.text_config.inputs='question'`, a baseline\)"):
        plot_vqa_example(baseline, processor, tokenizer, np.zeros((12, 10, 3), np.uint8), "what color ?")
    with pytest.raises(ValueError, match=r"`question` '  ' has no token"):
        plot_vqa_example(model, processor, tokenizer, np.zeros((12, 10, 3), np.uint8), "  ")


@pytest.mark.parametrize("change, message", [
    (dict(question_weights=[[0.5, 0.5]] * 2), r"`question_weights` must be \[K, n\], one row per level \(K ≥ 1\) "
                                              r"over len\(question_tokens\) = 3 tokens; got \[2, 2\]"),
    (dict(question_weights=[0.5, 0.25, 0.25]), r"`question_weights` must be \[K, n\].* got \[3\]"),
    (dict(image_weights=np.full((2, 5), 0.2)), r"`image_weights` must be \[K, n\].* over the grid's H'·W' = 2·3 "
                                               r"regions, or \[K, 2, 3\]; got \[2, 5\]"),
    (dict(image_weights=np.full((2, 3, 2), 1 / 6)), r"`image_weights` must be .* or \[K, 2, 3\]; got \[2, 3, 2\]"),
    (dict(question_weights=[[0.5, 0.25, 0.2], QUESTION[1]]), r"`question_weights` must hold one distribution per "
                                                             r"level .* within 3·ε₃₂\), but level 0's sum to 0.95"),
    (dict(image_weights=[np.full(6, 1 / 6) + 1e-6, np.ravel(REGIONS[1])]),
     r"`image_weights` must hold one distribution .* level 0's sum to 1"),
    (dict(question_weights=[[1.5, -0.25, -0.25], QUESTION[1]]), r"`question_weights` must be finite and ≥ 0 .* from "
                                                                r"-0.25 to 1.5"),
    (dict(image_weights=[[float("nan")] * 6, np.ravel(REGIONS[1])]),
     r"`image_weights` must be finite and ≥ 0 .* and NaN"),
    (dict(image_weights=[[0.5, "a"]]), r"`image_weights` must be numbers \[levels, ...\]"),
    (dict(image_weights=REGIONS[:1]), r"`question_weights` and `image_weights` must have one row per level each, "
                                      r"got 2 and 1"),
    (dict(levels=["word"]), r"`levels` must name each of the 2 levels of the weights, got \['word'\]"),
    (dict(question_tokens=[]), r"`question_tokens` must be a non-empty list of strings, got \[\]"),
    (dict(question_tokens="what color ?"), r"`question_tokens` must be a non-empty list of strings"),
    (dict(grid=(3, 2)), r"`image_weights` must be .* H'·W' = 3·2 regions, or \[K, 3, 2\]; got \[2, 2, 3\]"),
    (dict(grid=(2, 0)), r"`grid` must be two positive ints \(H', W'\).* got \(2, 0\)"),
    (dict(image=np.zeros((4, 6, 2), np.uint8)), r"`image` must be \[H, W\] \(grey\) or \[H, W, 3\] \(RGB\)"),
    (dict(stride=(1, 1)), r"`stride` \(1, 1\) leaves pixels of the image \(4 x 6\) outside the grid \(2, 3\)"),
])
def test_bad_input_is_refused_by_name(change, message):
    arguments = dict(image=np.zeros((4, 6), np.uint8), question_tokens=TOKENS, question_weights=QUESTION,
                     image_weights=REGIONS, grid=(2, 3)) | change
    with pytest.raises(ValueError, match=message):
        plot_coattention(**arguments)
