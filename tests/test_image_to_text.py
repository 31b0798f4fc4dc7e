"""The image-to-text model (Xu et al. 2015, *Show, Attend and Tell*) end to end: the CNN's region grid (shapes, masks,
padding, ā, the 2-D position encoding by hand), the image processor, the decoder over regions (cache = teacher forcing,
generate() equivalences, per-step alignments, the losses), a vision backbone, bad inputs, and a short run that learns
3-digit strips. What every head does (the -100 loss, save/load, remote code) is tests/contract/'s.

Tiny models: a CNN of 4 and 8 channels pooled by 2 × 2 then 2 × 3, so images of (H, W) = (9, 14), (5, 7), (9, 3) have
grids of 3 × 3, 2 × 2 and 3 × 1 regions (H' = ⌈⌈H/2⌉/2⌉, W' = ⌈⌈W/2⌉/3⌉). Weights are redrawn from N(0, 1) so that
logits are decisive, and equivalences run in float64, where only the arithmetic's order differs between the paths.
"""

import math
import time

import numpy as np
import pytest
import torch
from torch.testing import assert_close
from transformers import AutoImageProcessor, AutoModelForImageTextToText, GenerationMixin, ResNetConfig, ResNetModel

from conftest import BOS, EOS, PAD, assert_float64_close, softmax_sum_tolerance
from hf_bahdanau import BahdanauForImageToText, BahdanauImageProcessor, BahdanauImageToTextConfig
from hf_bahdanau.modeling.image_encoder import region_positions
from hf_bahdanau.modeling.transformers_private import cache_of
from test_generation import float32_search_error, generated, teacher_forced_beam_scores

VOCAB = 12
POOLS = [[2, 2], [2, 3]]
SIZES = ((9, 14), (5, 7), (9, 3))  # (H, W) of the padded test batch
GRIDS = ((3, 3), (2, 2), (3, 1))  # their (H', W') under POOLS
MAX_NEW = 5
DECODERS = {  # the decoder over the regions: Bahdanau style soft or hard, Luong style with input feeding
    "soft": {},
    "hard": dict(attention_mode="hard"),
    "luong": dict(decoder_style="luong", attention_type="general", input_feeding=True),
}

pytestmark = pytest.mark.usefixtures("one_thread")


def image_config(**overrides) -> BahdanauImageToTextConfig:
    fields = dict(vocab_size=VOCAB, embedding_size=8, hidden_size=16, attention_size=8, output_size=8,
                  cnn_channels=[4, 8], cnn_pool_sizes=POOLS)
    return BahdanauImageToTextConfig(**{**fields, **overrides})


def image_model(seed: int = 0, **overrides) -> BahdanauForImageToText:
    """A tiny model with every parameter drawn from N(0, 1); PAD is never generated (logit bias −1000)."""
    torch.manual_seed(seed)
    model = BahdanauForImageToText(image_config(**overrides)).eval()
    generator = torch.Generator().manual_seed(seed + 1000)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator))
        model.lm_head.bias[PAD] = -1e3
    return model


def images(sizes=SIZES, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, size, dtype=np.uint8) for size in sizes]


def pixel_batch(sizes=SIZES, seed: int = 0, dtype: torch.dtype = torch.float64) -> dict[str, torch.Tensor]:
    """The processor's padded batch of random images of ``sizes`` (not resized), pixel_values in ``dtype``."""
    batch = dict(BahdanauImageProcessor(do_resize=False)(images(sizes, seed), return_tensors="pt"))
    return dict(pixel_values=batch["pixel_values"].to(dtype), pixel_mask=batch["pixel_mask"])


def decoder_inputs(rows: int, length: int = 5, seed: int = 3) -> torch.Tensor:
    ids = torch.randint(3, VOCAB, (rows, length), generator=torch.Generator().manual_seed(seed))
    ids[:, 0] = BOS
    return ids


def regions(grid) -> int:
    return grid[0] * grid[1]


def reading_pixels(model):
    """The image model called as test_generation's helpers call a text model (input_ids -> pixel_values,
    attention_mask -> pixel_mask), so its beam-score checks apply unchanged."""
    return lambda input_ids, attention_mask, **kwargs: model(pixel_values=input_ids, pixel_mask=attention_mask,
                                                             **kwargs)


# 1. the encoder's grid -----------------------------------------------------------------------------------


def test_grid_shapes_masks_and_padding():
    """[B, L, D] with L = the batch's grid (3 × 3), each image's own H'_b·W'_b regions first, then 0."""
    model = image_model().double()
    batch = pixel_batch()
    with torch.no_grad():
        encoded = model.model.encoder(**batch, output_hidden_states=True)
    assert encoded.last_hidden_state.shape == (3, 9, 8)
    assert encoded.final_hidden_state.shape == (3, 1, 8)
    assert encoded.grid_size.tolist() == [list(grid) for grid in GRIDS]
    counts = torch.tensor([regions(grid) for grid in GRIDS])
    assert torch.equal(encoded.attention_mask, (torch.arange(9) < counts[:, None]).long())
    padding = encoded.attention_mask == 0
    assert (encoded.last_hidden_state[padding] == 0).all() and (encoded.last_hidden_state[~padding] != 0).any(-1).all()
    # the pixels, then each block's feature map: 9 x 14 -> 5 x 7 -> 3 x 3
    assert [tuple(map_.shape) for map_ in encoded.hidden_states] == [(3, 1, 9, 14), (3, 4, 5, 7), (3, 8, 3, 3)]
    assert [model.model.encoder.grid_size(*size) for size in SIZES] == list(GRIDS)


@pytest.mark.parametrize("options", [{}, dict(region_position_encoding=True), DECODERS["luong"]],
                         ids=["soft", "position-encoding", "luong"])
def test_a_padded_batch_equals_each_image_alone(options):
    """Annotations, ā, logits and alignments of each image in the padded batch equal the image's alone (float64:
    the convolutions and sums read the same numbers in another order); padded regions get exactly 0 attention."""
    model = image_model(**options).double()
    batch, decoder_input_ids = pixel_batch(), decoder_inputs(len(SIZES))
    with torch.no_grad():
        together = model(**batch, decoder_input_ids=decoder_input_ids, output_attentions=True)
    (weights,) = together.cross_attentions
    assert weights.shape == (3, 1, 5, 9)
    with torch.no_grad():
        means = model.model.encoder(**batch).final_hidden_state
    for b, ((height, width), grid) in enumerate(zip(SIZES, GRIDS)):
        n = regions(grid)
        single = dict(pixel_values=batch["pixel_values"][b:b + 1, :, :height, :width],
                      pixel_mask=batch["pixel_mask"][b:b + 1, :height, :width])
        with torch.no_grad():
            alone = model(**single, decoder_input_ids=decoder_input_ids[b:b + 1], output_attentions=True)
            alone_mean = model.model.encoder(**single).final_hidden_state
        assert alone.encoder_last_hidden_state.shape == (1, n, 8)
        assert_float64_close(together.encoder_last_hidden_state[b, :n], alone.encoder_last_hidden_state[0])
        assert_float64_close(means[b], alone_mean[0])
        assert_float64_close(together.logits[b], alone.logits[0])
        assert_float64_close(weights[b, :, :, :n], alone.cross_attentions[0][0], scale=1.0)
        assert (weights[b, :, :, n:] == 0).all()


@pytest.mark.parametrize("options", [
    {}, dict(context_gate=False, bridge="tanh"), dict(rnn_type="gru", bridge="mean_cell"),
    dict(attention_mode="hard_reinforce"), DECODERS["luong"], dict(DECODERS["luong"], input_feeding=False),
    dict(attention_scope="local-m", local_window=1), dict(use_coverage=True),
], ids=["paper", "no-gate-tanh", "gru", "hard_reinforce", "luong-feeding", "luong", "local-m", "coverage"])
def test_the_decoder_over_regions_equals_the_reference(options):
    """The batched model on a padded batch equals ``reference.image_to_text_logits``: the papers' decoders, one image
    alone and one token at a time, over that image's region annotations (float64; hard attention in eval)."""
    from hf_bahdanau import reference

    model = image_model(**options).double()
    batch, decoder_input_ids = pixel_batch(), decoder_inputs(len(SIZES))
    alone = [batch["pixel_values"][b:b + 1, :, :height, :width] for b, (height, width) in enumerate(SIZES)]
    with torch.no_grad():
        logits = model(**batch, decoder_input_ids=decoder_input_ids).logits
        expected = reference.image_to_text_logits(model, alone, decoder_input_ids)
    assert_float64_close(logits, expected)


def test_the_mean_annotation_is_the_mean_of_the_real_regions():
    model = image_model(region_position_encoding=True).double()
    with torch.no_grad():
        encoded = model.model.encoder(**pixel_batch())
    for b, grid in enumerate(GRIDS):
        real = encoded.last_hidden_state[b, :regions(grid)]
        by_hand = sum(real.unbind(0)) / regions(grid)
        assert_float64_close(encoded.final_hidden_state[b, 0], by_hand)


def test_region_position_encoding_by_hand():
    """D = 8: ω = (1, 10000^(−1/2)); region (r, c) reads [sin r, sin ωr, cos r, cos ωr, sin c, sin ωc, cos c, cos ωc]
    (a row-major 2 × 3 grid); the encoder adds it to each image's own regions at its own (r, c), and not to padding."""
    omegas = (1.0, 0.01)

    def encode(p):
        return [math.sin(p * w) for w in omegas] + [math.cos(p * w) for w in omegas]

    expected = torch.tensor([encode(r) + encode(c) for r in range(2) for c in range(3)], dtype=torch.float64)
    assert_close(region_positions(2, 3, 8, dtype=torch.float64), expected, atol=1e-15, rtol=0)

    plain, encoded = image_model().double(), image_model(region_position_encoding=True).double()
    batch = pixel_batch()
    with torch.no_grad():
        difference = (encoded.model.encoder(**batch).last_hidden_state
                      - plain.model.encoder(**batch).last_hidden_state)
    for b, (rows, columns) in enumerate(GRIDS):
        n = rows * columns
        own = torch.tensor([encode(r) + encode(c) for r in range(rows) for c in range(columns)], dtype=torch.float64)
        assert_close(difference[b, :n], own, atol=1e-12, rtol=0)  # an annotation of |a| < 100, rounded twice
        assert (difference[b, n:] == 0).all()


# 2. the image processor -----------------------------------------------------------------------------------


def test_resize_keeps_the_aspect_ratio():
    image = np.zeros((10, 25), dtype=np.uint8)
    assert BahdanauImageProcessor(size={"height": 20})(image, return_tensors="pt")["pixel_values"].shape == (
        1, 1, 20, 50)
    assert BahdanauImageProcessor(size={"height": 20, "width": 30})(image)["pixel_values"].shape == (1, 1, 20, 30)
    assert np.shape(BahdanauImageProcessor(size={"height": 20}, max_width=40)(image)["pixel_values"]) == (1, 1, 20, 40)
    tall = np.zeros((50, 1), dtype=np.uint8)  # 20/50 of a pixel: at least 1
    assert np.shape(BahdanauImageProcessor(size={"height": 20})(tall)["pixel_values"]) == (1, 1, 20, 1)


def test_rescale_and_normalise_by_hand():
    """(v / 255 − mean) / std: 0 -> −2, 255 -> 2, 51 -> (0.2 − 0.5) / 0.25 = −1.2, 102 -> −0.4 (float32: a few ulps of
    numbers below 2); per channel for RGB."""
    grey = BahdanauImageProcessor(do_resize=False, image_mean=[0.5], image_std=[0.25])
    pixels = grey(np.array([[0, 255], [51, 102]], dtype=np.uint8), return_tensors="pt")["pixel_values"]
    assert pixels.dtype == torch.float32
    assert_close(pixels, torch.tensor([[[[-2.0, 2.0], [-1.2, -0.4]]]]), atol=1e-6, rtol=0)
    rgb = BahdanauImageProcessor(num_channels=3, do_resize=False, image_mean=[0.0, 0.5, 1.0],
                                 image_std=[1.0, 0.5, 0.25])
    pixels = rgb(np.full((1, 2, 3), 51, dtype=np.uint8), return_tensors="pt")["pixel_values"]
    expected = torch.tensor([0.2, (0.2 - 0.5) / 0.5, (0.2 - 1.0) / 0.25])[None, :, None, None].expand(1, 3, 1, 2)
    assert_close(pixels, expected, atol=1e-6, rtol=0)
    plain = BahdanauImageProcessor(do_resize=False, do_rescale=False, do_normalize=False)
    assert plain(np.array([[7]], dtype=np.uint8))["pixel_values"] == [[[[7.0]]]]


def test_padding_and_pixel_mask():
    processor = BahdanauImageProcessor(do_resize=False, image_mean=[0.0], image_std=[1.0])
    batch = processor([np.full((3, 4), 255, np.uint8), np.full((2, 6), 255, np.uint8)], return_tensors="pt")
    assert batch["pixel_values"].shape == (2, 1, 3, 6) and batch["pixel_mask"].shape == (2, 3, 6)
    expected = torch.zeros(2, 3, 6, dtype=torch.long)
    expected[0, :3, :4], expected[1, :2, :6] = 1, 1
    assert torch.equal(batch["pixel_mask"], expected)
    assert torch.equal(batch["pixel_values"][:, 0], expected.float())  # 1.0 on the image, 0 on the padding


def test_save_and_load_with_auto_image_processor(tmp_path):
    processor = BahdanauImageProcessor(size={"height": 12}, max_width=30, image_mean=[0.1], image_std=[0.3])
    processor.save_pretrained(tmp_path)
    loaded = AutoImageProcessor.from_pretrained(tmp_path)
    assert type(loaded) is BahdanauImageProcessor
    for field in ("num_channels", "size", "max_width", "image_mean", "image_std", "rescale_factor"):
        assert getattr(loaded, field) == getattr(processor, field), field
    strips = images(((7, 40), (9, 11)))
    assert torch.equal(loaded(strips, return_tensors="pt")["pixel_values"],
                       processor(strips, return_tensors="pt")["pixel_values"])


@pytest.mark.parametrize("settings, inputs, message", [
    ({}, np.zeros((4, 4), np.float32), r"`images\[0\]` is an array of dtype float32: pass uint8"),
    ({}, [], "`images` is an empty list"),
    ({}, [np.zeros((2, 2), np.uint8), np.zeros((4, 4, 2), np.uint8)],
     r"`images\[1\]` must be \[height, width\] or \[height, width, 1\|3\|4 channels\], got shape \[4, 4, 2\]"),
    ({}, [np.zeros((2, 2, 2, 2), np.uint8)], r"got shape \[2, 2, 2, 2\]"),
    ({}, ["not an image"], r"`images\[0\]` must be a PIL image or a uint8 or uint16 array, got str"),
    (dict(size={"width": 5}), None, r"`size` must be \{'height': h\} or \{'height': h, 'width': w\}"),
    (dict(size={"height": 0}), None, r"positive ints, got \{'height': 0\}"),
    (dict(image_mean=[0.5, 0.5]), None, r"one finite number per channel \(1\), std > 0; got \[0.5, 0.5\]"),
    (dict(image_std=[0.0]), None, r"one finite number per channel \(1\), std > 0; got \[0.5\] and \[0.0\]"),
    (dict(num_channels=2), None, "`num_channels` must be 1 .grey. or 3 .RGB., got 2"),
    (dict(num_channels=True), None, "`num_channels` must be 1 .grey. or 3 .RGB., got True"),
    (dict(size={"height": True}), None, r"positive ints, got \{'height': True\}"),
    (dict(max_width=0), None, r"`max_width` must be a positive int \(the widest image, in pixels\) or None, got 0\.$"),
    (dict(max_width=2.5), None, r"`max_width` must be a positive int .* or None, got 2.5\.$"),
    (dict(rescale_factor=float("nan")), None, r"`rescale_factor` must be a finite number > 0 \(1/255 reads 8-bit "
                                              r"pixels into \[0, 1\]\), got nan\.$"),
    (dict(rescale_factor="1/255"), None, r"`rescale_factor` must be a finite number > 0 .*got '1/255'\.$"),
    (dict(image_mean=[float("nan")]), None, r"one finite number per channel \(1\), std > 0; got \[nan\] and \[0.5\]"),
])
def test_bad_processor_inputs_are_named(settings, inputs, message):
    with pytest.raises(ValueError, match=message):
        BahdanauImageProcessor(**settings)(inputs)


@pytest.mark.parametrize("name", ["do_resize", "do_rescale", "do_normalize"])
def test_a_processor_switch_that_is_not_a_bool_is_named(name):
    with pytest.raises(TypeError) as caught:
        BahdanauImageProcessor(**{name: "no"})
    assert str(caught.value) == f"`{name}` must be True or False, got 'no' (str)."


@pytest.mark.parametrize("num_channels", [1, 3])
def test_a_16_bit_image_reads_as_the_same_picture_in_8_bit(num_channels):
    import io

    from PIL import Image

    processor = BahdanauImageProcessor(num_channels=num_channels, size={"height": 8})
    grey = images(((8, 13),))[0]
    expected = processor(Image.fromarray(grey))["pixel_values"]
    png = io.BytesIO()
    Image.fromarray(grey.astype(np.uint16) * 257).save(png, "PNG")  # a 16-bit PNG, read back as PIL mode I;16
    sixteen_bit = Image.open(io.BytesIO(png.getvalue()))
    assert sixteen_bit.mode == "I;16"
    big_endian = Image.fromarray((grey.astype(np.uint16) * 257).astype(">u2"))
    assert big_endian.mode == "I;16B"
    for image in (sixteen_bit, big_endian, np.minimum(grey.astype(np.uint16) * 257, 65435) + 100):
        assert np.abs(processor(image)["pixel_values"] - expected).max() <= 2 / 255  # 1/255 after rescaling to [0, 1]
    dark = processor(Image.fromarray(np.full((8, 8), 1000, np.uint16)))["pixel_values"]  # 1000/65535 of white
    assert np.allclose(dark, (round(1000 / 257) / 255 - 0.5) / 0.5)  # not saturated near white


@pytest.mark.parametrize("dtype, mode, kind", [(np.int32, "I", "32-bit integers"), (np.float32, "F", "32-bit floats")])
def test_a_pil_image_of_numbers_without_a_range_is_refused_by_name(dtype, mode, kind):
    from PIL import Image

    image = Image.fromarray(images(((4, 4),))[0].astype(dtype))
    assert image.mode == mode
    with pytest.raises(ValueError) as caught:
        BahdanauImageProcessor()([images(((4, 4),))[0], image])
    assert str(caught.value) == (f"`images[1]` is a PIL image of mode '{mode}' ({kind}), whose black and white "
                                 "levels are unknown: convert it to mode 'L' or 'RGB' (8 bit) or 'I;16' (16 bit), or "
                                 "pass a uint8 or uint16 array.")


# 3. the model: cache, generate(), alignments, losses -----------------------------------------------------


@pytest.mark.parametrize("decoder", DECODERS)
def test_teacher_forcing_equals_decoding_through_the_cache(decoder):
    model = image_model(**DECODERS[decoder]).double()
    batch, decoder_input_ids = pixel_batch(), decoder_inputs(len(SIZES))
    with torch.no_grad():
        full = model(**batch, decoder_input_ids=decoder_input_ids, use_cache=False).logits
        cache, logits = None, []
        for chunk in (slice(0, 2), slice(2, 3), slice(3, 5)):
            step = model(**batch, decoder_input_ids=decoder_input_ids[:, chunk], cache=cache, use_cache=True)
            cache = cache_of(step)
            logits.append(step.logits)
    assert full.shape == (3, 5, VOCAB)
    assert_float64_close(torch.cat(logits, dim=1), full)


@pytest.mark.parametrize("decoder", DECODERS)
def test_greedy_equals_beam_search_with_one_beam(decoder):
    """``custom_generate=_beam_search`` runs the beam loop (cache reordering included) with one beam."""
    model = image_model(**DECODERS[decoder])
    batch = pixel_batch(dtype=torch.float32)
    with torch.no_grad():
        greedy = model.generate(**batch, max_new_tokens=MAX_NEW)
        beam = model.generate(**batch, max_new_tokens=MAX_NEW, num_beams=1,
                              custom_generate=GenerationMixin._beam_search)
    assert greedy.shape[0] == 3
    assert [generated(row) for row in beam] == [generated(row) for row in greedy]


@pytest.mark.parametrize("decoder", DECODERS)
def test_beam_scores_equal_teacher_forced_log_probs(decoder):
    """``sequences_scores`` of 3 beams = Σ_t log p(y_t | y_<t, image) / length of the returned rows, teacher-forced
    in float64, within the search's float32 error (test_generation's bound)."""
    model = image_model(**DECODERS[decoder]).double()
    batch = pixel_batch()
    with torch.no_grad():
        out = model.generate(**batch, max_new_tokens=MAX_NEW, num_beams=3, num_return_sequences=3,
                             output_scores=True, return_dict_in_generate=True, early_stopping=True)
    source = reading_pixels(model)
    expected, _ = teacher_forced_beam_scores(source, batch["pixel_values"], batch["pixel_mask"], out.sequences, 1.0)
    error = float32_search_error(source, batch["pixel_values"], batch["pixel_mask"], out.sequences, 1.0)
    assert out.sequences_scores.shape == (9,)
    assert ((out.sequences_scores.double() - expected).abs() <= error).all(), (out.sequences_scores - expected, error)


def test_sampling_is_reproducible_and_valid():
    model = image_model()
    batch = pixel_batch(dtype=torch.float32)

    def sample(seed):
        torch.manual_seed(seed)
        with torch.no_grad():
            return model.generate(**batch, do_sample=True, max_new_tokens=MAX_NEW, temperature=2.0).tolist()

    first = sample(7)
    assert first == sample(7)
    assert all(row[0] == BOS and all(0 < token < VOCAB for token in generated(torch.tensor(row))) for row in first)
    assert any(sample(seed) != first for seed in (8, 9)), "different seeds should give different samples"


@pytest.mark.parametrize("num_beams", [1, 3], ids=["greedy", "beam"])
@pytest.mark.parametrize("decoder", DECODERS)
def test_generate_returns_one_alignment_per_step(decoder, num_beams):
    """One α [B·k, 1, 1, L] per step: 0 on padding, summing to 1 over each image's own regions (one-hot for hard
    attention), equal to the teacher-forced alignments of the returned rows (followed through beam_indices)."""
    model = image_model(**DECODERS[decoder]).double()
    batch = pixel_batch()
    with torch.no_grad():
        out = model.generate(**batch, max_new_tokens=MAX_NEW, num_beams=num_beams, num_return_sequences=num_beams,
                             output_attentions=True, return_dict_in_generate=True)
        forced = model(pixel_values=batch["pixel_values"].repeat_interleave(num_beams, 0),
                       pixel_mask=batch["pixel_mask"].repeat_interleave(num_beams, 0),
                       decoder_input_ids=out.sequences[:, :-1], output_attentions=True).cross_attentions[0][:, 0]
    rows = 3 * num_beams
    assert len(out.cross_attentions) == out.sequences.shape[1] - 1
    assert all(len(step) == 1 and step[0].shape == (rows, 1, 1, 9) for step in out.cross_attentions)
    indices = (torch.arange(rows)[:, None].expand(-1, MAX_NEW) if num_beams == 1 else out.beam_indices)
    for row, sequence in enumerate(out.sequences):
        n = regions(GRIDS[row // num_beams])
        for step in range(len(generated(sequence))):
            weights = out.cross_attentions[step][0][indices[row, step], 0, 0]
            assert (weights[n:] == 0).all()
            assert abs(float(weights.sum()) - 1) <= softmax_sum_tolerance(n, torch.float64)
            if decoder == "hard":
                assert ((weights == 0) | (weights == 1)).all()
            assert_float64_close(weights, forced[row, step], scale=1.0)


def test_the_training_path_gives_the_loss_of_evaluation():
    """The training path (the loss fused with the output layer, no logits returned) gives the evaluation's loss, Σ CE
    over the labels ≠ −100 / their count (the -100 rule itself: tests/contract/)."""
    model = image_model().double()
    batch = pixel_batch()
    labels = decoder_inputs(3, seed=4)
    labels[0, 3:], labels[2, 1:] = -100, -100
    with torch.no_grad():
        evaluation = model(**batch, labels=labels).loss
    model.train()
    training = model(**batch, labels=labels)
    assert training.logits is None
    assert_float64_close(training.loss.detach(), evaluation)


def test_doubly_stochastic_loss_is_reported_and_added():
    """Xu et al.'s Σ_b Σ_{i real} (1 − Σ_{t: label kept} α_ti)², per kept label, reported as doubly_stochastic_loss;
    loss = CE + λ times it."""
    weight = 0.3
    model = image_model(doubly_stochastic_weight=weight).double()
    batch = pixel_batch()
    labels = decoder_inputs(3, seed=4)
    labels[1, 2:] = -100
    with torch.no_grad():
        output = model(**batch, labels=labels, output_attentions=True)
    alphas = output.cross_attentions[0][:, 0]  # [B, T, L]
    kept = labels != -100
    missing = [1 - alphas[b][kept[b]].sum(0)[:regions(grid)] for b, grid in enumerate(GRIDS)]  # 1 − Σ_t α_ti
    by_hand = sum(float(gap @ gap) for gap in missing) / int(kept.sum())
    assert output.doubly_stochastic_loss == pytest.approx(by_hand, rel=1e-12)
    cross_entropy = torch.nn.functional.cross_entropy(output.logits[kept], labels[kept])
    assert_float64_close(output.loss, cross_entropy + weight * output.doubly_stochastic_loss)
    assert image_model()(**pixel_batch(dtype=torch.float32), labels=labels).doubly_stochastic_loss is None


# 4. a transformers vision backbone ----------------------------------------------------------------------


def resnet_config() -> ResNetConfig:
    return ResNetConfig(embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1], num_channels=1)


def test_a_resnet_backbone_config_forward_and_generate():
    """ResNet divides by 8 (stem conv and pool, then one strided stage): 16 × 24 -> 2 × 3 regions of D = 16, an
    8 × 12 image padded into the batch -> 1 × 2 regions first."""
    torch.manual_seed(0)
    model = BahdanauForImageToText(image_config(backbone_config=resnet_config().to_dict())).eval()
    assert model.config.encoder_hidden_size == 16
    batch = pixel_batch(((16, 24), (8, 12)), dtype=torch.float32)
    with torch.no_grad():
        output = model(**batch, decoder_input_ids=decoder_inputs(2), output_attentions=True)
        out = model.generate(**batch, max_new_tokens=3, output_attentions=True, return_dict_in_generate=True)
    assert output.encoder_last_hidden_state.shape == (2, 6, 16) and output.logits.shape == (2, 5, VOCAB)
    assert (output.cross_attentions[0][1, :, :, 2:] == 0).all()
    assert out.sequences.shape == (2, 4) and out.cross_attentions[0][0].shape == (2, 1, 1, 6)
    assert model.model.encoder.grid_size(16, 24) == (2, 3)


def test_a_backbone_checkpoint_is_loaded_and_saved_with_the_model(tmp_path):
    torch.manual_seed(1)
    ResNetModel(resnet_config()).save_pretrained(tmp_path / "resnet")
    checkpoint = ResNetModel.from_pretrained(tmp_path / "resnet").state_dict()
    torch.manual_seed(2)  # another draw: the weights below come from the checkpoint, not from the seed
    model = BahdanauForImageToText(image_config(backbone=str(tmp_path / "resnet"))).eval()
    assert model.config.use_pretrained_backbone is False
    assert model.config.backbone_config["hidden_sizes"] == [8, 16]
    backbone = model.model.encoder.regions.backbone.state_dict()
    name = "embedder.embedder.convolution.weight"
    assert torch.equal(backbone[name], checkpoint[name])
    assert all(torch.equal(backbone[key], value) for key, value in checkpoint.items())
    model.save_pretrained(tmp_path / "model")
    (tmp_path / "resnet" / "model.safetensors").unlink()  # the model's own weights now; the checkpoint is not read
    loaded = AutoModelForImageTextToText.from_pretrained(tmp_path / "model", dtype=torch.float64).eval()
    assert loaded.config.use_pretrained_backbone is False
    assert torch.equal(loaded.model.encoder.regions.backbone.state_dict()[name], checkpoint[name].double())
    batch = pixel_batch(((16, 24),))
    with torch.no_grad():
        assert_float64_close(loaded(**batch, decoder_input_ids=decoder_inputs(1)).logits,
                             model.double()(**batch, decoder_input_ids=decoder_inputs(1)).logits)


# 5. bad inputs and configs, named -----------------------------------------------------------------------


def non_rectangular(mask: torch.Tensor) -> torch.Tensor:
    mask = mask.clone()
    mask[0, 5:, 7:] = 0  # image 0 (9 x 14) without its bottom-right corner: regions [[1, 1, 1], [1, 1, 1], [1, 1, 0]]
    return mask


def left_padded(mask: torch.Tensor) -> torch.Tensor:
    mask = mask.clone()
    mask[0, :, :7] = 0  # image 0's left half padding: a rectangle, but not at the top left
    return mask


@pytest.mark.parametrize("change, error, message", [
    (lambda b: dict(b, pixel_values=b["pixel_values"].expand(-1, 3, -1, -1)), ValueError,
     r"`pixel_values` must be \[batch, num_channels=1, height, width\], got shape \[3, 3, 9, 14\]"),
    (lambda b: dict(b, pixel_values=b["pixel_values"].index_fill(3, torch.tensor([2]), float("nan"))), ValueError,
     "`pixel_values` must be finite numbers; it holds NaN or inf"),
    (lambda b: dict(b, pixel_values=b["pixel_values"][:0], pixel_mask=None), ValueError,
     r"`pixel_values` must hold at least one image of at least one pixel, got shape \[0, 1, 9, 14\]"),
    (lambda b: dict(b, pixel_values=b["pixel_values"].long()), TypeError,
     "`pixel_values` must be a floating-point tensor"),
    (lambda b: dict(b, pixel_mask=b["pixel_mask"][:, :, :5]), ValueError,
     r"`pixel_mask` must be \[batch, height, width\] = \[3, 9, 14\], got \[3, 9, 5\]"),
    (lambda b: dict(b, pixel_mask=b["pixel_mask"] * 2), ValueError, "`pixel_mask` must hold 1 .* and 0 .* only"),
    (lambda b: dict(b, pixel_mask=b["pixel_mask"].index_fill(0, torch.tensor([1]), 0)), ValueError,
     "`pixel_mask` row 1 has no real pixel"),
    (lambda b: dict(b, pixel_mask=non_rectangular(b["pixel_mask"])), ValueError,
     "`pixel_mask` must mark each image as one rectangle at the top left"),
    (lambda b: dict(b, pixel_mask=left_padded(b["pixel_mask"])), ValueError,
     "`pixel_mask` must mark each image as one rectangle at the top left"),
    (lambda b: dict(b, pixel_values=None), ValueError, "Pass `pixel_values`"),
])
def test_bad_pixel_inputs_are_named(change, error, message):
    model = image_model()
    batch = change(pixel_batch(dtype=torch.float32))
    with pytest.raises(error, match=message):
        model(**batch, decoder_input_ids=decoder_inputs(3))
    if batch.get("pixel_values") is not None and batch["pixel_values"].dtype.is_floating_point:
        with pytest.raises(error, match=message):
            model.generate(**batch, max_new_tokens=2)


@pytest.mark.parametrize("size", [(1, 1), (1, 14), (9, 1)])
def test_an_image_smaller_than_the_first_pooling_window_is_refused(size):
    model = image_model()
    pixel_values = torch.zeros(1, 1, *size)
    message = (f"`pixel_values` images must be at least {POOLS[0][0]}×{POOLS[0][1]} pixels (height × width: the first "
               f"convolution block's max pooling window, `cnn_pool_sizes[0]`), got {size[0]}×{size[1]}.")
    with pytest.raises(ValueError) as caught:
        model(pixel_values=pixel_values, decoder_input_ids=decoder_inputs(1))
    assert str(caught.value) == message
    with pytest.raises(ValueError) as caught:
        model.generate(pixel_values=pixel_values, max_new_tokens=2)
    assert str(caught.value) == message
    smallest = model(pixel_values=torch.zeros(1, 1, *POOLS[0]), decoder_input_ids=decoder_inputs(1))
    assert smallest.logits.shape == (1, 5, VOCAB)


@pytest.mark.parametrize("fields, message", [
    (dict(cnn_pool_sizes=[[2, 2]]), r"`cnn_pool_sizes` must be one \[height, width\] pair of positive ints per block "
                                    r"of `cnn_channels` \(2\), got \[\[2, 2\]\]"),
    (dict(cnn_pool_sizes=[[2, 2], [0, 2]]), r"got \[\[2, 2\], \[0, 2\]\]"),
    (dict(cnn_channels=[]), r"`cnn_channels` must be one positive int per convolution block .*got \[\]"),
    (dict(copy_attention=True), "`copy_attention=True`: the image-to-text model has an image encoder"),
    (dict(bidirectional=True), "`bidirectional=True`: the image-to-text model"),
    (dict(cnn_channels=[4, 6], region_position_encoding=True), "D=6 .* D must be a multiple of 4"),
    (dict(backbone_config={"hidden_sizes": [8]}), "`backbone_config` must be a vision model's config dict with its "
                                                  "`model_type`"),
    (dict(backbone_config=dict(resnet_config().to_dict(), num_channels=3)),
     "`backbone_config` reads 3 channels, but `num_channels` is 1"),
    (dict(encoder_hidden_size=5), "`encoder_hidden_size` is the annotation size D, 8 for this encoder"),
    (dict(num_channels=0), "`num_channels`"),
])
def test_bad_config_fields_are_named(fields, message):
    with pytest.raises(ValueError, match=message):
        image_config(**fields)


# 6. a short run that learns ----------------------------------------------------------------------------


DIGIT_OFFSET = 3  # token ids: PAD, BOS, EOS, then the digits 0-9
STEPS = 250
ACCURACY_THRESHOLD = 0.7


def strip_batch(processor, pairs) -> dict[str, torch.Tensor]:
    batch = dict(processor([image for image, _ in pairs], return_tensors="pt"))
    batch["labels"] = torch.tensor([[DIGIT_OFFSET + int(digit) for digit in text] + [EOS] for _, text in pairs])
    return batch


@pytest.mark.slow  # trains for seconds
def test_learns_three_digit_strips_well_above_chance():
    """A small model trained with AdamW on 3-digit strips of real handwriting (``digit_strips``) reads strips of unseen
    handwriting far above chance (0.1%): 250 steps of 32 strips (7–17 s on one core) gave 78.3% test sequence
    accuracy with seed 0, and later 79.7% with this CPU's AVX2 kernels and 76.7% with generic ones
    (ATEN_CPU_CAPABILITY=default); the test asks for 70%, 6.7 points below the lowest. The model's defaults (the β gate on, starting open; Kaiming-initialised
    convolutions) and the processor's (pixels in [−1, 1]), with the regions' position encoding."""
    from training.data.digit_strips import digit_strips

    train, test = digit_strips("train", 3000, (3, 3), seed=0), digit_strips("test", 300, (3, 3), seed=1)
    processor = BahdanauImageProcessor(do_resize=False)
    torch.manual_seed(0)
    model = BahdanauForImageToText(BahdanauImageToTextConfig(
        vocab_size=DIGIT_OFFSET + 10, embedding_size=16, hidden_size=64, attention_size=32, output_size=32,
        cnn_channels=[8, 16, 32], cnn_pool_sizes=[[2, 2], [2, 2], [5, 2]], region_position_encoding=True))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    generator = torch.Generator().manual_seed(0)
    start = time.perf_counter()
    for _ in range(STEPS):
        rows = torch.randint(len(train), (32,), generator=generator).tolist()
        loss = model(**strip_batch(processor, [train[row] for row in rows])).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    seconds = time.perf_counter() - start
    model.eval()
    batch = strip_batch(processor, test)
    with torch.no_grad():
        read = model.generate(pixel_values=batch["pixel_values"], pixel_mask=batch["pixel_mask"], max_new_tokens=5)
    texts = ["".join(str(token - DIGIT_OFFSET) for token in generated(row) if token >= DIGIT_OFFSET) for row in read]
    accuracy = sum(text == target for text, (_, target) in zip(texts, test)) / len(test)
    print(f"3-digit strips: {STEPS} steps in {seconds:.1f} s, test sequence accuracy {accuracy:.1%}")
    assert accuracy >= ACCURACY_THRESHOLD


def test_the_image_to_text_model_takes_head_memory_as_output_layer_inputs_with_a_warning():
    """The base model's old keyword (the output layer's per-source inputs were ``head_memory``) still works, warned."""
    model = image_model().eval()
    inputs = dict(**pixel_batch(dtype=torch.float32), decoder_input_ids=decoder_inputs(len(SIZES)))
    with torch.no_grad():
        expected = model.model(**inputs).last_hidden_state
        with pytest.warns(FutureWarning, match=r"^`BahdanauImageToTextModel\.forward\(head_memory=…\)` is now "
                                               r"`output_layer_inputs=…`; pass it by that name\.$"):
            warned = model.model(**inputs, head_memory=None).last_hidden_state
    assert torch.equal(warned, expected)
