"""Co-attention (Lu et al. 2016, *Hierarchical Question-Image Co-Attention for Visual Question Answering*) and the visual
question answering model built on it: the affinity matrix and the parallel, alternating, context and mean forms against
numbers computed by hand; the whole model against ``reference.visual_question_answering`` in float64 for every form,
level subset and baseline; masking, left/right padding, a padded batch against each example alone, for every form;
gradients; the outputs; bad configs and inputs, named; and a short run that learns yes/no shape questions of easy-VQA.
What every head does (the -100 loss, save/load, remote code) is tests/contract/'s.

Tiny models: words of size d = 6, a CNN of 4 and 8 channels pooled by 2 × 2 then 2 × 3, so images of (H, W) = (9, 14),
(5, 7), (9, 3), (10, 9) have grids of 3 × 3, 2 × 2, 3 × 1 and 3 × 2 regions (H' = ⌈⌈H/2⌉/2⌉, W' = ⌈⌈W/2⌉/3⌉). Weights
are redrawn from N(0, 1/2) so that no tanh sits in its flat tails, and equivalences run in float64, where only the
order of the arithmetic differs between the paths.
"""

import collections
import math
import re
import time

import numpy as np
import pytest
import torch
from PIL import Image
from torch.testing import assert_close

from conftest import assert_float64_close, assert_float64_gradients_close, softmax_sum_tolerance
from hf_bahdanau import (BahdanauForVisualQuestionAnswering, BahdanauImageProcessor,
                         BahdanauVisualQuestionAnsweringConfig, reference)
from hf_bahdanau.modeling.co_attention import build_coattention

VOCAB, LABELS, PAD = 15, 5, 0
POOLS = [[2, 2], [2, 3]]
SIZES = ((9, 14), (5, 7), (9, 3), (10, 9))  # (H, W) of the padded test batch
REGIONS = (9, 4, 3, 6)  # their grids' H'·W' under POOLS
# the questions' masks: no padding, left, right, both sides
MASKS = torch.tensor([[1, 1, 1, 1, 1, 1], [0, 0, 1, 1, 1, 1], [1, 1, 0, 0, 0, 0], [0, 1, 1, 1, 0, 0]])
LEVELS = {"word": ["word"], "all": ["word", "phrase", "question"], "question": ["question"]}
# (coattention, inputs): every form over both inputs, and the one-input baselines of Lu et al.'s tables
FORMS = {"parallel": ("parallel", "both"), "alternating": ("alternating", "both"), "context": ("context", "both"),
         "none": ("none", "both"), "question-only": ("none", "question"), "image-only": ("none", "context")}
# float32 results of two code paths that differ only in the order of their sums (STYLE.md §4): ~1e-6 relative per
# reduction of ≤ 64 terms (the largest here: the first layer's 3·3·3 pixels, the d + answer_hidden_size = 13 inputs)
FLOAT32_PATHS_RTOL = 64 * 1e-6

pytestmark = pytest.mark.usefixtures("one_thread")


def vqa_config(form: str = "parallel", levels: str = "all", **overrides) -> BahdanauVisualQuestionAnsweringConfig:
    coattention, inputs = FORMS[form]
    fields = dict(vocab_size=VOCAB, hidden_size=6, attention_size=5, answer_hidden_size=7, num_labels=LABELS,
                  coattention=coattention, inputs=inputs, question_levels=LEVELS[levels], phrase_windows=[1, 2, 3],
                  cnn_channels=[4, 8], cnn_pool_sizes=POOLS)
    return BahdanauVisualQuestionAnsweringConfig(**{**fields, **overrides})


def vqa_model(form: str = "parallel", levels: str = "all", seed: int = 0, **overrides
              ) -> BahdanauForVisualQuestionAnswering:
    """A tiny model in eval mode with every parameter drawn from N(0, 1/2)."""
    torch.manual_seed(seed)
    model = BahdanauForVisualQuestionAnswering(vqa_config(form, levels, **overrides)).eval()
    generator = torch.Generator().manual_seed(seed + 1000)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) / 2)
    return model


def vqa_batch(form: str = "parallel", dtype: torch.dtype = torch.float64, seed: int = 0) -> dict[str, torch.Tensor]:
    """Questions padded by ``MASKS`` (word ids 1..VOCAB−1, PAD on padding) and the processor's padded batch of random
    RGB images of ``SIZES``; only the inputs the form's ``inputs`` reads."""
    generator = torch.Generator().manual_seed(seed)
    input_ids = torch.randint(1, VOCAB, MASKS.shape, generator=generator).masked_fill(MASKS == 0, PAD)
    rng = np.random.default_rng(seed)
    images = [rng.integers(0, 256, (*size, 3), dtype=np.uint8) for size in SIZES]
    pixels = BahdanauImageProcessor(num_channels=3, do_resize=False)(images, return_tensors="pt")
    batch = dict(input_ids=input_ids, attention_mask=MASKS.clone(), pixel_values=pixels["pixel_values"].to(dtype),
                 pixel_mask=pixels["pixel_mask"])
    inputs = FORMS[form][1]
    if inputs == "question":
        del batch["pixel_values"], batch["pixel_mask"]
    if inputs == "context":
        del batch["input_ids"], batch["attention_mask"]
    return batch


def examples(batch: dict[str, torch.Tensor]) -> list[tuple[list[int] | None, torch.Tensor | None]]:
    """Each row alone: its real word ids and its image cropped to its own size [1, C, H_b, W_b]."""
    rows = []
    for row in range(len(SIZES)):
        words = (batch["input_ids"][row][batch["attention_mask"][row].bool()].tolist()
                 if "input_ids" in batch else None)
        image = None
        if "pixel_values" in batch:
            height, width = SIZES[row]
            image = batch["pixel_values"][row:row + 1, :, :height, :width]
        rows.append((words, image))
    return rows


def in_caller_layout(weights: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """One row's weights over its real words [L] placed at the mask's real positions [T], 0 elsewhere."""
    placed = weights.new_zeros(mask.shape[0])
    placed[mask.bool()] = weights
    return placed


# 1. the forms on numbers computed by hand ----------------------------------------------------------------


def set_weights(module: torch.nn.Module, **weights: list) -> None:
    with torch.no_grad():
        for name, value in weights.items():
            module.get_parameter(name).copy_(torch.tensor(value, dtype=torch.float64))


def softmax(*scores: float) -> list[float]:
    exps = [math.exp(score) for score in scores]
    return [value / sum(exps) for value in exps]


# a question of two words and a padded third, an image of two regions and a padded third; the padded rows hold large
# numbers, which must get no weight and reach nothing
Q = torch.tensor([[[1.0, 0.0], [0.5, -1.0], [5.0, 5.0]]], dtype=torch.float64)
Q_MASK = torch.tensor([[True, True, False]])
V = torch.tensor([[[1.0, 1.0], [0.0, 2.0], [7.0, -7.0]]], dtype=torch.float64)
V_MASK = torch.tensor([[True, True, False]])


def test_parallel_affinity_and_weights_by_hand():
    """C_tn = tanh((M q_t)·v_n), M the stored ``affinity.weight`` (the paper's W_b = Mᵀ); H^v_n = tanh(W_v v_n +
    Σ_t C_tn W_q q_t), H^q_t = tanh(W_q q_t + Σ_n C_tn W_v v_n), a = softmax(w · H): d = k = 2, worked out below."""
    module = build_coattention("parallel", 2, 2).double()
    set_weights(module, **{"affinity.weight": [[1, 2], [0, 1]], "question.weight": [[1, 0], [0, 1]],
                           "context.weight": [[0, 1], [1, 0]], "question_score.weight": [[1, -1]],
                           "context_score.weight": [[2, 0]]})
    out = module(Q, Q_MASK, V, V_MASK)
    tanh = math.tanh
    # M q_1 = (1, 0), M q_2 = (0.5 − 2, −1) = (−1.5, −1)
    c11, c12 = tanh(1 * 1 + 0 * 1), tanh(1 * 0 + 0 * 2)
    c21, c22 = tanh(-1.5 * 1 + -1 * 1), tanh(-1.5 * 0 + -1 * 2)
    assert_close(out.affinity, torch.tensor([[[c11, c12, 0], [c21, c22, 0], [0, 0, 0]]], dtype=torch.float64),
                 atol=1e-15, rtol=0)
    # W_q = I, W_v swaps: W_v v_1 = (1, 1), W_v v_2 = (2, 0); w_v = (2, 0) reads H^v's first row
    hv1 = tanh(1 + (c11 * 1 + c21 * 0.5))
    hv2 = tanh(2 + (c12 * 1 + c22 * 0.5))
    a_v = softmax(2 * hv1, 2 * hv2)
    # H^q_t = q_t + C_t1 (1, 1) + C_t2 (2, 0); w_q = (1, −1)
    hq1 = (tanh(1 + c11 + 2 * c12), tanh(0 + c11))
    hq2 = (tanh(0.5 + c21 + 2 * c22), tanh(-1 + c21))
    a_q = softmax(hq1[0] - hq1[1], hq2[0] - hq2[1])
    assert_close(out.context_weights, torch.tensor([[*a_v, 0]], dtype=torch.float64), atol=1e-15, rtol=0)
    assert_close(out.question_weights, torch.tensor([[*a_q, 0]], dtype=torch.float64), atol=1e-15, rtol=0)
    assert_close(out.context_summary, torch.tensor([[a_v[0] * 1 + a_v[1] * 0, a_v[0] * 1 + a_v[1] * 2]],
                                                   dtype=torch.float64), atol=1e-15, rtol=0)
    assert_close(out.question_summary, torch.tensor([[a_q[0] * 1 + a_q[1] * 0.5, a_q[1] * -1]],
                                                    dtype=torch.float64), atol=1e-15, rtol=0)


def test_alternating_weights_by_hand():
    """ŝ = A(Q; 0), v̂ = A(V; ŝ), q̂ = A(Q; v̂) with A(X; g) = Σ_i softmax_i(w · tanh(W_x x_i + W_g g)) x_i, each step
    with its own weights: d = k = 2, worked out below."""
    module = build_coattention("alternating", 2, 2).double()
    set_weights(module, **{
        "question_alone.features.weight": [[1, 0], [0, 1]], "question_alone.score.weight": [[1, 1]],
        "context_by_question.features.weight": [[1, 0], [0, 1]], "context_by_question.guide.weight": [[0, 0], [1, 0]],
        "context_by_question.score.weight": [[1, 2]],
        "question_by_context.features.weight": [[0, 1], [1, 0]], "question_by_context.guide.weight": [[1, 1], [0, 0]],
        "question_by_context.score.weight": [[-1, 1]]})
    out = module(Q, Q_MASK, V, V_MASK)
    tanh = math.tanh
    # ŝ: scores tanh(q_t1) + tanh(q_t2)
    a_s = softmax(tanh(1) + tanh(0), tanh(0.5) + tanh(-1))
    s_hat = (a_s[0] * 1 + a_s[1] * 0.5, a_s[1] * -1)
    # v̂: W_g ŝ = (0, ŝ_1); scores tanh(v_n1) + 2 tanh(v_n2 + ŝ_1)
    a_v = softmax(tanh(1) + 2 * tanh(1 + s_hat[0]), tanh(0) + 2 * tanh(2 + s_hat[0]))
    v_hat = (a_v[0] * 1 + a_v[1] * 0, a_v[0] * 1 + a_v[1] * 2)
    # q̂: W_x q_t = (q_t2, q_t1), W_g v̂ = (v̂_1 + v̂_2, 0); scores −tanh(q_t2 + v̂_1 + v̂_2) + tanh(q_t1)
    guide = v_hat[0] + v_hat[1]
    a_q = softmax(-tanh(0 + guide) + tanh(1), -tanh(-1 + guide) + tanh(0.5))
    assert_close(out.context_weights, torch.tensor([[*a_v, 0]], dtype=torch.float64), atol=1e-15, rtol=0)
    assert_close(out.question_weights, torch.tensor([[*a_q, 0]], dtype=torch.float64), atol=1e-15, rtol=0)
    assert_close(out.context_summary, torch.tensor([v_hat], dtype=torch.float64), atol=1e-15, rtol=0)
    assert_close(out.question_summary, torch.tensor([[a_q[0] * 1 + a_q[1] * 0.5, a_q[1] * -1]],
                                                    dtype=torch.float64), atol=1e-15, rtol=0)
    assert out.affinity is None


def test_context_and_mean_forms_by_hand():
    """context: q̂ = mean_t q_t (weights 1/2, 1/2, 0), v̂ = A(V; q̂); none: both means, weights exactly 1/L_b."""
    module = build_coattention("context", 2, 2).double()
    set_weights(module, **{"context_by_question.features.weight": [[1, 0], [0, 0]],
                           "context_by_question.guide.weight": [[0, 3], [0, 0]],
                           "context_by_question.score.weight": [[1, 0]]})
    out = module(Q, Q_MASK, V, V_MASK)
    q_bar = ((1 + 0.5) / 2, (0 - 1) / 2)
    a_v = softmax(math.tanh(1 + 3 * q_bar[1]), math.tanh(0 + 3 * q_bar[1]))
    assert torch.equal(out.question_weights, torch.tensor([[0.5, 0.5, 0]], dtype=torch.float64))
    assert_close(out.question_summary, torch.tensor([q_bar], dtype=torch.float64), atol=1e-15, rtol=0)
    assert_close(out.context_weights, torch.tensor([[*a_v, 0]], dtype=torch.float64), atol=1e-15, rtol=0)

    means = build_coattention("none", 2, 2).double()(Q, torch.tensor([[True, False, False]]), V, V_MASK)
    assert torch.equal(means.question_weights, torch.tensor([[1.0, 0, 0]], dtype=torch.float64))
    assert torch.equal(means.context_weights, torch.tensor([[0.5, 0.5, 0]], dtype=torch.float64))
    assert torch.equal(means.question_summary, Q[:, 0])
    assert torch.equal(means.context_summary, torch.tensor([[0.5, 1.5]], dtype=torch.float64))


# 2. the whole model against the paper's equations, one example at a time ------------------------------------


@pytest.mark.parametrize("levels", LEVELS)
@pytest.mark.parametrize("form", FORMS)
def test_the_model_equals_the_reference(form, levels):
    """On a batch with questions padded on the right, the left and both sides and images of four sizes, float64: the
    logits, every level's a^q (in the caller's layout), a^v (over each image's own regions) and C equal
    ``reference.visual_question_answering`` of each example alone, with padding exactly 0; with autograd on (the LSTM's
    step loop instead of packed sequences) the logits, and every parameter's gradient, equal the reference's too."""
    model = vqa_model(form, levels).double()
    batch = vqa_batch(form)
    with torch.no_grad():
        out = model(**batch, output_attentions=True)
        expected = [reference.visual_question_answering(model, words, image) for words, image in examples(batch)]
    expected_logits = torch.stack([logits for logits, _ in expected])
    assert_float64_close(out.logits, expected_logits)
    coattention, inputs = FORMS[form]
    for level in range(len(LEVELS[levels])):
        for row, (_, readings) in enumerate(expected):
            a_q, a_v, affinity = readings[level]
            if inputs != "context":
                assert_float64_close(out.question_attentions[level][row], in_caller_layout(a_q, MASKS[row]), scale=1)
            if inputs != "question":
                regions = REGIONS[row]
                assert_float64_close(out.context_attentions[level][row, :regions], a_v, scale=1)
                assert torch.equal(out.context_attentions[level][row, regions:], a_v.new_zeros(9 - regions))
            if coattention == "parallel":
                placed = affinity.new_zeros(MASKS.shape[1], 9)
                placed[MASKS[row].bool(), :REGIONS[row]] = affinity
                assert_float64_close(out.affinities[level][row], placed, scale=1)
    assert (out.question_attentions is None) == (inputs == "context")
    assert (out.context_attentions is None) == (inputs == "question")
    assert (out.affinities is None) == (coattention != "parallel")

    probe = torch.randn(expected_logits.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64)

    def gradients(logits: torch.Tensor) -> dict[str, torch.Tensor]:
        model.zero_grad(set_to_none=True)
        (logits * probe).sum().backward()
        return {name: parameter.grad for name, parameter in model.named_parameters() if parameter.grad is not None}

    logits = model(**batch).logits
    assert_float64_close(logits, expected_logits)
    fast = gradients(logits)
    slow = gradients(torch.stack([reference.visual_question_answering(model, words, image)[0]
                                  for words, image in examples(batch)]))
    assert_float64_gradients_close(fast, slow)


# 3. masking, padding layouts, each example alone ----------------------------------------------------------


@pytest.mark.parametrize("form", FORMS)
def test_padding_gets_exactly_zero_weight_and_the_weights_sum_to_one(form):
    """float32, every level: padded words and padded regions get exactly 0 weight, the real ones sum to 1 (within
    softmax rounding); C is exactly 0 where either side is padding; every level's features are 0 on padding."""
    model = vqa_model(form)
    batch = vqa_batch(form, dtype=torch.float32)
    with torch.no_grad():
        out = model(**batch, output_attentions=True, output_hidden_states=True)
    coattention, inputs = FORMS[form]
    region_mask = torch.arange(9) < torch.tensor(REGIONS)[:, None]
    both = MASKS.bool()[:, :, None] & region_mask[:, None, :]
    for level in range(3):
        if inputs != "context":
            weights = out.question_attentions[level]
            assert (weights[MASKS == 0] == 0).all()
            assert_close(weights.sum(1), torch.ones(4), atol=softmax_sum_tolerance(6), rtol=0)
            assert (out.hidden_states[level][MASKS == 0] == 0).all()
        if inputs != "question":
            weights = out.context_attentions[level]
            assert (weights[~region_mask] == 0).all() and (weights[region_mask] > 0).all()
            assert_close(weights.sum(1), torch.ones(4), atol=softmax_sum_tolerance(9), rtol=0)
            assert (out.hidden_states[-1][~region_mask] == 0).all()
        if coattention == "parallel":
            assert (out.affinities[level][~both] == 0).all() and (out.affinities[level][both] != 0).all()


def right_padded(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The same questions with every row's words moved to the left, padding on the right."""
    shifts = MASKS.int().argmax(1).tolist()  # each row's first real column
    moved = dict(batch)
    for name in ("input_ids", "attention_mask"):
        moved[name] = torch.stack([row.roll(-shift) for row, shift in zip(batch[name], shifts)])
    return moved


@pytest.mark.parametrize("form", ["parallel", "alternating", "context", "question-only"])
def test_left_and_right_padding_give_the_same_logits_and_the_weights_moved(form):
    """float32: the batch as ``MASKS`` pads it (left, right, both sides) and every row right-padded give the same
    logits, and each level's question weights, affinity rows and features moved with the words (the model runs on
    right-padded rows; the two differ at most by the order a kernel sums in, ``FLOAT32_PATHS_RTOL``)."""
    model = vqa_model(form)
    batch = vqa_batch(form, dtype=torch.float32)
    moved = right_padded(batch)
    with torch.no_grad():
        as_given = model(**batch, output_attentions=True, output_hidden_states=True)
        right = model(**moved, output_attentions=True, output_hidden_states=True)
    scale = float(right.logits.abs().max())
    assert_close(as_given.logits, right.logits, atol=FLOAT32_PATHS_RTOL * scale, rtol=0)
    back = right_padded(dict(input_ids=torch.zeros_like(MASKS), attention_mask=MASKS))  # where each row's words went
    for level in range(3):
        for given, moved_values in [(as_given.question_attentions[level], right.question_attentions[level]),
                                    (as_given.hidden_states[level], right.hidden_states[level]),
                                    *([(as_given.affinities[level], right.affinities[level])]
                                      if form == "parallel" else [])]:
            for row in range(4):
                real = MASKS[row].bool()
                assert torch.equal(given[row][~real], torch.zeros_like(given[row][~real]))
                assert_close(given[row][real], moved_values[row][back["attention_mask"][row].bool()],
                             atol=FLOAT32_PATHS_RTOL * max(1.0, float(moved_values.abs().max())), rtol=0)


@pytest.mark.parametrize("form", ["parallel", "alternating", "context", "none"])
def test_a_padded_batch_equals_each_example_alone(form):
    """float64: each row of the padded batch (questions and images) gives the logits and weights of the example run
    alone, without any padding."""
    model = vqa_model(form).double()
    batch = vqa_batch(form)
    with torch.no_grad():
        together = model(**batch, output_attentions=True)
        for row, (words, image) in enumerate(examples(batch)):
            alone = model(input_ids=torch.tensor([words]), pixel_values=image, output_attentions=True)
            assert_float64_close(together.logits[row], alone.logits[0])
            for level in range(3):
                assert_float64_close(together.question_attentions[level][row],
                                     in_caller_layout(alone.question_attentions[level][0], MASKS[row]), scale=1)
                assert_float64_close(together.context_attentions[level][row, :REGIONS[row]],
                                     alone.context_attentions[level][0], scale=1)


# 4. gradients -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("form", ["parallel", "alternating"])
def test_gradients_reach_the_question_words_and_the_image_convolutions(form):
    """In training (dropout on), the loss's gradient reaches the embeddings of the question's words (and not those of
    words it lacks), every convolution of the image encoder, and every real pixel; padded pixels and padded question
    positions get exactly none."""
    model = vqa_model(form, dropout=0.1).train()
    batch = vqa_batch(form, dtype=torch.float32)
    pixels = batch["pixel_values"].clone().requires_grad_()
    model(**dict(batch, pixel_values=pixels), labels=torch.tensor([0, 1, 2, 3])).loss.backward()
    embedding_grad = model.coattention.embeddings.weight.grad
    used = batch["input_ids"][MASKS.bool()].unique()
    unused = torch.ones(VOCAB, dtype=torch.bool)
    unused[used] = False
    assert (embedding_grad[used].abs().sum(1) > 0).all()
    assert (embedding_grad[unused] == 0).all()  # PAD included: padding is read from the mask
    for convolution in model.coattention.image_encoder.regions.convolutions:
        assert convolution.weight.grad.abs().sum() > 0 and convolution.bias.grad.abs().sum() > 0
    real = batch["pixel_mask"].bool()
    assert (pixels.grad.abs().sum(1)[~real] == 0).all()
    assert pixels.grad.abs().sum(1)[real].gt(0).float().mean() > 0.9  # a ReLU may close a pixel's every path


# 5. outputs -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("form", ["parallel", "alternating", "question-only", "image-only"])
def test_output_fields_and_return_dict_false(form):
    """Shapes: logits [B, labels]; per level a^q [B, T], a^v [B, N], C [B, T, N] (parallel only); hidden_states each
    level's Q^l [B, T, d] then V [B, N, d]; grid_size [B, 2]. A baseline has no weights over the input it does not
    read. return_dict=False gives the same tensors as a tuple, the None fields left out."""
    model = vqa_model(form, levels="all")
    batch = vqa_batch(form, dtype=torch.float32)
    coattention, inputs = FORMS[form]
    with torch.no_grad():
        out = model(**batch, output_attentions=True, output_hidden_states=True)
        plain = model(**batch)
        as_tuple = model(**batch, output_attentions=True, output_hidden_states=True, return_dict=False)
        base = model.coattention(**batch, output_attentions=True)
    assert out.logits.shape == (4, LABELS)
    assert plain.question_attentions is plain.context_attentions is plain.hidden_states is None
    question = [(4, 6)] * 3 if inputs != "context" else None
    context = [(4, 9)] * 3 if inputs != "question" else None
    assert (question is None and out.question_attentions is None) or [
        tuple(w.shape) for w in out.question_attentions] == question
    assert (context is None and out.context_attentions is None) or [
        tuple(w.shape) for w in out.context_attentions] == context
    assert (out.affinities is None) == (coattention != "parallel")
    if out.affinities is not None:
        assert [tuple(c.shape) for c in out.affinities] == [(4, 6, 9)] * 3
    hidden = [(4, 6, 6)] * 3 * (inputs != "context") + [(4, 9, 6)] * (inputs != "question")
    assert [tuple(h.shape) for h in out.hidden_states] == hidden
    if inputs == "question":
        assert out.grid_size is None
    else:
        assert out.grid_size.tolist() == [[3, 3], [2, 2], [3, 1], [3, 2]]
    fields = [value for value in out.to_tuple()]
    assert len(as_tuple) == len(fields)
    for mine, theirs in zip(as_tuple, fields):
        if isinstance(mine, tuple):
            assert all(torch.equal(a, b) for a, b in zip(mine, theirs))
        else:
            assert torch.equal(mine, theirs)
    assert base.last_hidden_state.shape == (4, 7)
    assert torch.equal(model.answer(base.last_hidden_state), out.logits)


# 6. bad configs and inputs, named -------------------------------------------------------------------------


@pytest.mark.parametrize("fields, message", [
    (dict(coattention="co"), r"`coattention` must be one of \['parallel', 'alternating', 'context', 'none'\], got 'co'"),
    (dict(question_levels=["phrase", "word"]), r"`question_levels` must be one or more of .*in that order; got \['phrase"),
    (dict(question_levels=["word", "sentence"]), r"`question_levels` .*got \['word', 'sentence'\]"),
    (dict(question_levels=["word", "word"]), r"`question_levels` .*each once"),
    (dict(question_levels=[]), r"`question_levels` must be one or more .*got \[\]"),
    (dict(phrase_windows=[]), r"`phrase_windows` must be one or more positive n-gram sizes, got \[\]"),
    (dict(phrase_windows=[2, 0]), r"`phrase_windows` .*got \[2, 0\]"),
    (dict(inputs="image"), r"`inputs` must be one of \['both', 'question', 'context'\], got 'image'"),
    (dict(inputs="question"), r"`inputs='question'` reads one input.*`coattention='none'` \(got 'parallel'\)"),
    (dict(inputs="context", coattention="alternating"), r"`inputs='context'`.*got 'alternating'"),
    (dict(hidden_size=0), r"`hidden_size` must be a positive integer, got 0"),
    (dict(vocab_size=-1), r"`vocab_size` must be a positive integer, got -1"),
    (dict(attention_size=-2), r"`attention_size` must be a positive integer, got -2"),
    (dict(answer_hidden_size=0), r"`answer_hidden_size` must be a positive integer, got 0"),
    (dict(num_labels=0), r"`num_labels` must be a positive integer"),
    (dict(dropout=1), r"`dropout` must be in \[0, 1\), got 1"),
    (dict(dropout=-0.1), r"`dropout` must be in \[0, 1\), got -0.1"),
    (dict(init_std=float("nan")), r"`init_std` must be a finite number"),
    (dict(num_channels=0), r"`num_channels` must be a positive integer, got 0"),
    (dict(cnn_channels=[]), r"`cnn_channels` must be one positive int per convolution block"),
    (dict(cnn_channels=[4, -8]), r"`cnn_channels` .*got \[4, -8\]"),
    (dict(cnn_pool_sizes=[[2, 2]]), r"`cnn_pool_sizes` must be one \[height, width\] pair .* \(2\), got \[\[2, 2\]\]"),
    (dict(cnn_pool_sizes=[[2, 2], [0, 3]]), r"`cnn_pool_sizes` .*got \[\[2, 2\], \[0, 3\]\]"),
    (dict(region_position_encoding=True, cnn_channels=[4, 6]), r"`region_position_encoding=True` .*D=6"),
], ids=lambda value: "" if isinstance(value, str) else "-".join(f"{k}={v}" for k, v in value.items()))
def test_bad_config_fields_are_named(fields, message):
    with pytest.raises(ValueError, match=message):
        vqa_config(**fields)
    config = vqa_config()  # a field changed after the config was built (in its sub-config) is refused when a model
    with pytest.raises(ValueError, match=message):  # is built
        for name, value in fields.items():
            setattr(config, name, value)
        BahdanauForVisualQuestionAnswering(config)


def with_nan(pixels: torch.Tensor) -> torch.Tensor:
    pixels = pixels.clone()
    pixels[1, 0, 2, 3] = float("nan")
    return pixels


BAD_INPUTS = {  # name: (form, change of the batch, the message)
    "no question": ("parallel", lambda b: {k: v for k, v in b.items() if k != "input_ids"},
                    r"Pass exactly one of `input_ids` and `inputs_embeds`; got neither"),
    "ids and embeddings": ("parallel", lambda b: dict(b, inputs_embeds=torch.zeros(4, 6, 6)),
                           r"Pass exactly one of `input_ids` and `inputs_embeds`; got both"),
    "id out of range": ("parallel", lambda b: dict(b, input_ids=b["input_ids"].masked_fill(MASKS == 0, VOCAB)),
                        rf"`input_ids` must hold ids in \[0, {VOCAB}\), got {VOCAB}"),
    "negative id": ("parallel", lambda b: dict(b, input_ids=b["input_ids"].masked_fill(MASKS == 0, -1)),
                    r"`input_ids` must hold ids in \[0, 15\), got -1"),
    "an all-padding question": ("parallel", lambda b: dict(b, attention_mask=MASKS * (torch.arange(4) != 2)[:, None]),
                                r"Every question needs at least one word: row 2 of `attention_mask` is all padding"),
    "a gap in the mask": ("parallel", lambda b: dict(b, attention_mask=MASKS.index_fill(1, torch.tensor([4]), 0)),
                          r"`attention_mask` must mark each row's real tokens as one contiguous run.*row 0 has a gap"),
    "embeddings of another size": ("parallel", lambda b: dict({k: v for k, v in b.items() if k != "input_ids"},
                                                              inputs_embeds=torch.zeros(4, 6, 5)),
                                   r"`inputs_embeds` must be .* last dimension of 6, got shape \[4, 6, 5\]"),
    "pixels without channels": ("parallel", lambda b: dict(b, pixel_values=b["pixel_values"][:, 0]),
                                r"`pixel_values` must be \[batch, num_channels=3, height, width\], got shape \[4, 10, 14\]"),
    "NaN pixels": ("parallel", lambda b: dict(b, pixel_values=with_nan(b["pixel_values"])),
                   r"`pixel_values` must be finite numbers; it holds NaN"),
    "no image": ("parallel", lambda b: {k: v for k, v in b.items() if not k.startswith("pixel")},
                 r"Pass `pixel_values` \[batch, channels, height, width\]"),
    "fewer images than questions": ("parallel", lambda b: dict(b, pixel_values=b["pixel_values"][:3],
                                                              pixel_mask=b["pixel_mask"][:3]),
                                    r"One image per question: 4 questions, 3 images in `pixel_values`"),
    "a pixel mask of another size": ("parallel", lambda b: dict(b, pixel_mask=b["pixel_mask"][:, :, :5]),
                                     r"`pixel_mask` must be \[batch, height, width\] = \[4, 10, 14\]"),
    "labels out of range": ("parallel", lambda b: dict(b, labels=torch.tensor([0, 1, LABELS, 2])),
                            rf"`labels` must hold ids in \[0, {LABELS}\) or -100 \(ignored\), got {LABELS}"),
    "labels of another shape": ("parallel", lambda b: dict(b, labels=torch.zeros(4, 1, dtype=torch.long)),
                                r"`labels` must have shape \[4\], got \[4, 1\]"),
    "pixels to a question-only baseline": ("question-only", lambda b: dict(b, pixel_values=torch.zeros(4, 3, 8, 8)),
                                           r"reads no image \(`inputs='question'`.*leave `pixel_values` and `pixel_mask` out"),
    "ids to an image-only baseline": ("image-only", lambda b: dict(b, input_ids=torch.ones(4, 2, dtype=torch.long)),
                                      r"reads no question \(`inputs='context'`.*leave `input_ids`, `inputs_embeds` and `attention_mask`"),
    "embeddings to an image-only baseline": ("image-only", lambda b: dict(b, inputs_embeds=torch.zeros(4, 2, 6)),
                                             r"reads no question \(`inputs='context'`"),
}


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_inputs_are_named(case):
    form, change, message = BAD_INPUTS[case]
    model = vqa_model(form)
    with pytest.raises(ValueError, match=message):
        model(**change(vqa_batch(form, dtype=torch.float32)))


def test_a_missing_image_is_asked_for_without_an_argument_the_model_lacks():
    batch = vqa_batch(dtype=torch.float32)
    with pytest.raises(ValueError, match=r"`pixel_values`") as error:
        vqa_model()(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
    assert "encoder_outputs" not in str(error.value)


@pytest.mark.parametrize("form, extra", [("question-only", "pixel_mask"), ("image-only", "attention_mask")])
def test_a_baseline_refuses_the_mask_of_the_input_it_does_not_read(form, extra):
    full = vqa_batch("parallel", dtype=torch.float32)
    with pytest.raises(ValueError, match=extra):
        vqa_model(form)(**vqa_batch(form, dtype=torch.float32), **{extra: full[extra]})


# 7. a short run learns yes/no shape questions of easy-VQA ---------------------------------------------------

SHAPE_QUESTION = re.compile(r"^(is there an? (circle|triangle|rectangle)( in the image)?|is an? (circle|triangle|"
                            r"rectangle) present|does the image contain an? (circle|triangle|rectangle))\?$")
IMAGE_SIZE = 32  # the package's 64 × 64 images halved: a 4 × 4 grid of regions under three 2 × 2 poolings


def shape_questions(questions, paths: dict[int, str], count: int) -> tuple[list[str], torch.Tensor, torch.Tensor]:
    """The first ``count`` / 2 questions answered "yes" and as many answered "no" that ask whether a shape is there
    (no colour, no negation), alternating: (texts, answers [count] 1 = yes, pixels [count, 3, 32, 32]). Each image is
    shrunk to 32 × 32 and its background colour (the top-left pixel) subtracted, / 127.5."""
    chosen = {"yes": [], "no": []}
    for text, answer, image_id in zip(*questions):
        if SHAPE_QUESTION.match(text) and answer in chosen and len(chosen[answer]) < count // 2:
            chosen[answer].append((text, image_id))
    rows = [pair for pairs in zip(chosen["yes"], chosen["no"]) for pair in pairs]
    assert len(rows) == count
    pixels = {}
    for _, image_id in rows:
        if image_id not in pixels:
            image = Image.open(paths[image_id]).convert("RGB").resize((IMAGE_SIZE, IMAGE_SIZE),
                                                                      Image.Resampling.BILINEAR)
            values = torch.from_numpy(np.asarray(image, dtype=np.float32)).permute(2, 0, 1)
            pixels[image_id] = (values - values[:, :1, :1]) / 127.5
    return ([text for text, _ in rows], torch.tensor([1, 0] * (count // 2)),
            torch.stack([pixels[image_id] for _, image_id in rows]))


def word_ids(texts: list[str], vocabulary: dict[str, int]) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded word ids [N, T] (PAD = 0) and their mask."""
    rows = [[vocabulary[word] for word in text.rstrip("?").split()] for text in texts]
    width = max(map(len, rows))
    ids = torch.tensor([row + [PAD] * (width - len(row)) for row in rows])
    return ids, (ids != PAD).long()


@pytest.mark.slow  # trains for seconds
def test_a_short_run_learns_yes_no_shape_questions_about_unseen_images():
    """A tiny parallel co-attention model (d = 32, CNN [8, 16, 32], the three question levels, word embeddings
    N(0, 0.5²)) trained with AdamW (lr 3e-3) for 400 steps of 32 on 2,600 easy-VQA questions "is there a circle?",
    "does the image contain a triangle?" … (half yes) answers 500 such questions about the test split's images, which
    it never saw, far above chance: the held-out answers are half yes (majority rate 50%), and the best an image-blind
    answer can do, each of the 12 distinct questions answered by its own majority on the held-out set itself, is 57%.

    Measured on one thread: 97.6% held-out accuracy, 99.2% in a later measurement with this CPU's AVX2 kernels and with
    generic ones (ATEN_CPU_CAPABILITY=default); with other seeds of the model and the batches, 96.0–98.8% after 400
    steps (seeds 3, 4, 8, 9) and 83.8–99.4% after 300 (seeds 0–7), but seed 8 was still at chance (48%) after 300
    steps: the run leaves a plateau at a time that varies, so it runs 400 steps; with its fixed seeds it asserts ≥ 95%,
    2.6 points below the lowest measurement."""
    easy_vqa = pytest.importorskip("easy_vqa")
    texts, answers, pixels = shape_questions(easy_vqa.get_train_questions(), easy_vqa.get_train_image_paths(), 2600)
    test_texts, test_answers, test_pixels = shape_questions(easy_vqa.get_test_questions(),
                                                            easy_vqa.get_test_image_paths(), 500)
    vocabulary = {word: index + 1 for index, word in enumerate(sorted({w for t in texts for w in t.rstrip("?").split()}))}
    input_ids, attention_mask = word_ids(texts, vocabulary)
    test_ids, test_mask = word_ids(test_texts, vocabulary)
    majority = max(float(test_answers.float().mean()), 1 - float(test_answers.float().mean()))
    counts = collections.Counter(zip(test_texts, test_answers.tolist()))
    blind = sum(max(counts[text, 0], counts[text, 1]) for text in set(test_texts)) / len(test_texts)
    assert (majority, blind) == (0.5, 0.57)  # the data's facts, whatever the model

    torch.manual_seed(0)
    config = BahdanauVisualQuestionAnsweringConfig(
        vocab_size=len(vocabulary) + 1, hidden_size=32, attention_size=32, answer_hidden_size=32, num_labels=2,
        coattention="parallel", cnn_channels=[8, 16, 32], cnn_pool_sizes=[[2, 2]] * 3, dropout=0.0,
        init_std=0.5)
    model = BahdanauForVisualQuestionAnswering(config).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    batches = torch.Generator().manual_seed(0)
    start = time.perf_counter()
    for _ in range(400):
        rows = torch.randint(0, len(texts), (32,), generator=batches)
        loss = model(input_ids=input_ids[rows], attention_mask=attention_mask[rows], pixel_values=pixels[rows],
                     labels=answers[rows]).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    seconds = time.perf_counter() - start
    with torch.no_grad():
        predicted = model.eval()(input_ids=test_ids, attention_mask=test_mask, pixel_values=test_pixels).logits
    accuracy = float((predicted.argmax(-1) == test_answers).float().mean())
    print(f"held-out accuracy {accuracy:.3f}, majority {majority:.3f}, image-blind best {blind:.3f}, "
          f"training {seconds:.1f} s")
    assert accuracy >= 0.95, accuracy
