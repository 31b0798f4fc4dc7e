"""The classifier's pooling options (``pooling_type``): Lin et al.'s self-attentive pooling with its penalty and Shen
et al.'s multi-dimensional pooling against hand-computed values and against ``reference.sequence_classifier`` in
float64 (pooled vectors, weights, logits, the penalty, gradients), flat and hierarchical; masks (padding gets exactly
0 weight; a padded batch equals each document alone); the penalty as its own output field and in the loss under the
loss rule; bad values refused by name; the model card's words; Trainer's evaluation and run_classification.py."""

import json
import math
import re

import pytest
import torch
from torch.testing import assert_close
from transformers import Trainer, TrainingArguments

from conftest import (PAD, assert_float64_close, assert_float64_gradients_close, padded_batch, softmax_sum_tolerance,
                      tiny_encoder_config)
from hf_bahdanau import BahdanauEncoderConfig, BahdanauForSequenceClassification, reference
from hf_bahdanau.cards.architecture import describe
from hf_bahdanau.modeling.axes import POOLINGS
from hf_bahdanau.modeling.padding import rotate_rows
from hf_bahdanau.modeling.pooling import MultiDimensionalPooling, SelfAttentivePooling, build_pooling
from test_head_scripts import REPO, SMALL_RUN, TINY
from test_sequence_classification import LENGTHS, SEP, documents
from training import run_classification

pytestmark = pytest.mark.usefixtures("one_thread")

NEW_POOLINGS = ("self_attentive", "multi_dimensional")
ROWS = 3  # r of the self-attentive models below


def pooling_fields(pooling_type: str, **overrides) -> dict:
    fields = {"pooling_type": pooling_type}
    if pooling_type == "self_attentive":
        fields |= {"self_attention_rows": ROWS, "self_attention_penalty_weight": 0.5}
    return fields | overrides


def classifier(pooling_type: str, hierarchical: bool, seed: int = 0, **overrides) -> BahdanauForSequenceClassification:
    """A float64 classifier over 3 labels (float64: the batched and the one-document computations sum in other
    orders, so the arithmetic, not the CPU, decides the tolerance)."""
    torch.manual_seed(seed)
    config = tiny_encoder_config(num_labels=3, hierarchical=hierarchical, sentence_separator_token_id=SEP,
                                 **pooling_fields(pooling_type, **overrides))
    return BahdanauForSequenceClassification(config).double().eval()


def inputs(hierarchical: bool) -> tuple[torch.Tensor, torch.Tensor]:
    return documents() if hierarchical else padded_batch(LENGTHS)


def document_sentences(model, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> list[list[torch.Tensor]]:
    """Each document's token ids as the reference reads them: the non-empty sentences (HAN) or the real tokens."""
    if not model.config.hierarchical:
        return [[ids[mask.bool()]] for ids, mask in zip(input_ids, attention_mask)]
    sentences, mask = model.split_sentences(input_ids, attention_mask)
    return [[words[keep.bool()] for words, keep in zip(row, row_mask) if keep.any()]
            for row, row_mask in zip(sentences, mask)]


def tokens_last(weights: torch.Tensor, pooling, leading: int) -> torch.Tensor:
    """Weights of ``leading`` batch-like axes and then one text's (α [S], A [r, S] or α [S, D]) with the token axis
    last: [..., S], [..., r, S] or [..., D, S]."""
    return weights.movedim(leading + pooling.sequence_dim - 1, -1)


# 1. the poolings by hand -----------------------------------------------------------------------------------


def test_self_attentive_pooling_by_hand():
    """D = 1, d_a = 1, r = 2, W_s1 = [1], W_s2 = [1, −1]ᵀ, H = [0, x]: the scores are [0, t] and [0, −t], t = tanh x,
    so A = [[p, q], [q, p]] with p = 1 / (1 + eᵗ), q = 1 − p; M = A H = [q x, p x]; A Aᵀ − I has p² + q² − 1 = −2pq
    on the diagonal and 2pq off it: P = 16 p² q². A second row pads H with a huge value that must get no weight."""
    pooling = SelfAttentivePooling(1, 1, rows=2).double()
    with torch.no_grad():
        pooling.first.weight.fill_(1.0)
        pooling.second.weight.copy_(torch.tensor([[1.0], [-1.0]]))
    x = 1.5
    states = torch.tensor([[[0.0], [x], [1e6]]], dtype=torch.float64)
    mask = torch.tensor([[True, True, False]])
    pooled, weights = pooling(states, mask)
    p = 1 / (1 + math.exp(math.tanh(x)))
    q = 1 - p
    expected_weights = torch.tensor([[[p, q, 0.0], [q, p, 0.0]]], dtype=torch.float64)
    assert_float64_close(weights, expected_weights, scale=1.0)
    assert torch.equal(weights[..., 2], torch.zeros(1, 2, dtype=torch.float64))  # padding: exactly 0
    assert_float64_close(pooled, torch.tensor([[q * x, p * x]], dtype=torch.float64), scale=x)
    assert_float64_close(pooling.penalty(weights, mask), torch.tensor([16 * p**2 * q**2], dtype=torch.float64),
                         scale=1.0)


@pytest.mark.parametrize("rows,length", [(2, 3), (4, 5)])
def test_uniform_self_attention_penalty(rows, length):
    """W_s2 = 0: every row of A is uniform, 1/S, so A Aᵀ = (1/S) 11ᵀ and P = r (1/S − 1)² + (r² − r) / S²; M's rows
    are each the mean of H. A document without tokens has A = 0 and no penalty."""
    pooling = SelfAttentivePooling(2, 3, rows=rows).double()
    with torch.no_grad():
        pooling.second.weight.zero_()
    states = torch.randn(2, length, 2, dtype=torch.float64)
    mask = torch.tensor([[True] * length, [False] * length])
    pooled, weights = pooling(states, mask)
    assert torch.equal(weights[1], torch.zeros(rows, length, dtype=torch.float64))
    assert torch.equal(pooled[1], torch.zeros(rows * 2, dtype=torch.float64))
    assert_float64_close(pooled[0], states[0].mean(0).repeat(rows))
    expected = rows * (1 / length - 1) ** 2 + (rows**2 - rows) / length**2
    assert_float64_close(pooling.penalty(weights, mask), torch.tensor([expected, 0.0], dtype=torch.float64),
                         scale=rows)


def test_multi_dimensional_pooling_by_hand():
    """D = 2, d_a = 1, W_1 = [1, 0], b_1 = 0, W_2 = [1, −1]ᵀ, H = [[0, a], [x, b]]: f(h_j) = [u_j, −u_j] with
    u = [0, tanh x], so α_·0 = [p, q] and α_·1 = [q, p] (p = 1 / (1 + e^{tanh x}), q = 1 − p): s = [q x, q a + p b]."""
    pooling = MultiDimensionalPooling(2, 1).double()
    with torch.no_grad():
        pooling.hidden.weight.copy_(torch.tensor([[1.0, 0.0]]))
        pooling.hidden.bias.zero_()
        pooling.output.weight.copy_(torch.tensor([[1.0], [-1.0]]))
    a, b, x = 0.25, -2.0, 0.75
    states = torch.tensor([[[0.0, a], [x, b], [1e6, -1e6]]], dtype=torch.float64)
    mask = torch.tensor([[True, True, False]])
    pooled, weights = pooling(states, mask)
    p = 1 / (1 + math.exp(math.tanh(x)))
    q = 1 - p
    assert_float64_close(weights, torch.tensor([[[p, q], [q, p], [0.0, 0.0]]], dtype=torch.float64), scale=1.0)
    assert torch.equal(weights[0, 2], torch.zeros(2, dtype=torch.float64))
    assert_float64_close(pooled, torch.tensor([[q * x, q * a + p * b]], dtype=torch.float64), scale=abs(b))
    assert pooling.penalty(weights, mask) is None


# 2. the poolings against the reference equations -------------------------------------------------------------


@pytest.mark.parametrize("pooling_type", POOLINGS.declared)
def test_poolings_match_the_reference_equations(pooling_type):
    torch.manual_seed(0)
    config = tiny_encoder_config(**pooling_fields(pooling_type))
    pooling = build_pooling(config, 6).double()
    lengths = torch.tensor([5, 3, 1])
    states = torch.randn(3, 5, 6, dtype=torch.float64)  # padding holds random values: the mask alone must hide them
    mask = torch.arange(5)[None] < lengths[:, None]
    pooled, weights = pooling(states, mask)
    assert pooled.shape == (3, pooling.output_size) and weights.shape == (3, *pooling.weight_shape(5))
    penalty = pooling.penalty(weights, mask)
    for row, length in enumerate(lengths.tolist()):
        expected_pooled, expected_weights, expected_penalty = reference.POOLING_EQUATIONS[pooling_type](
            pooling, states[row, :length])
        assert_float64_close(pooled[row], expected_pooled)
        real = weights[row].narrow(pooling.sequence_dim - 1, 0, length)
        assert_float64_close(real, expected_weights, scale=1.0)  # weights ≤ 1
        padding = weights[row].narrow(pooling.sequence_dim - 1, length, 5 - length)
        assert torch.equal(padding, torch.zeros_like(padding))
        if penalty is not None:
            assert_float64_close(penalty[row], expected_penalty, scale=ROWS**2)  # P ≤ r² (the entries of A are ≤ 1)
    sums = pooling.token_weights(weights).sum(-1)  # one distribution over the tokens per row
    assert_close(sums, torch.ones(3, dtype=torch.float64), atol=softmax_sum_tolerance(5, torch.float64), rtol=0)


# 3. the classifier against the reference, one document at a time --------------------------------------------


@pytest.mark.parametrize("hierarchical", [False, True], ids=["flat", "han"])
@pytest.mark.parametrize("pooling_type", POOLINGS.declared)
def test_classifier_matches_each_document_alone(pooling_type, hierarchical):
    """A padded batch (flat: 9, 6 and 3 tokens; HAN: documents with empty sentences and padded words) gives each
    document's logits, weights and penalty as the reference computes them for the document alone."""
    model = classifier(pooling_type, hierarchical)
    input_ids, attention_mask = inputs(hierarchical)
    labels = torch.tensor([2, 0, 1])
    with torch.no_grad():
        out = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels, output_attentions=True)
        expected = [reference.sequence_classifier(model, sentences)
                    for sentences in document_sentences(model, input_ids, attention_mask)]
    pooling = model.word_attention
    for row, (logits, _, weights) in enumerate(expected):
        assert_float64_close(out.logits[row], logits)
        levels = [tokens_last(out.attentions[0][row], pooling, int(hierarchical))]  # flat: [(r,) S]; HAN: [N, …, W]
        if hierarchical:  # each sentence's words, padding and empty sentences included, then the sentence level
            levels = list(levels[0]) + [tokens_last(out.attentions[1][row], pooling, 0)]
            real = model.split_sentences(input_ids, attention_mask)[1][row].bool().any(-1).tolist() + [True]
        else:
            real = [True]
        expected_weights = iter(weights)
        for got, is_real in zip(levels, real, strict=True):
            length = 0
            if is_real:
                want = tokens_last(next(expected_weights), pooling, 0)
                length = want.shape[-1]
                assert_float64_close(got[..., :length], want, scale=1.0)  # weights ≤ 1
            assert torch.equal(got[..., length:], torch.zeros_like(got[..., length:]))  # padding: exactly 0
    if pooling_type == "self_attentive":  # every label counted: the mean of the documents' penalties
        penalties = torch.stack([penalty for _, penalty, _ in expected])
        assert_float64_close(out.self_attention_penalty, penalties.mean(), scale=float(penalties.max()))
    else:
        assert out.self_attention_penalty is None and "self_attention_penalty" not in out.keys()


@pytest.mark.parametrize("pooling_type", NEW_POOLINGS)
def test_left_and_both_sides_padding_equal_right_padding(pooling_type):
    """Rows padded on the left or on both sides are rotated to right padding before the pooling (``padding``), so the
    model computes on the same tensors as for the right-padded batch: the same bits, with the weights moved back."""
    model = classifier(pooling_type, hierarchical=False)
    input_ids, attention_mask = padded_batch(LENGTHS)  # 9, 6 and 3 tokens in 9 columns
    starts = -torch.tensor([0, 2, 6])  # row 1 padded on both sides, row 2 flush right

    def moved(tensor: torch.Tensor, dim: int = 1) -> torch.Tensor:
        return rotate_rows(tensor, starts, dim)

    labels = torch.tensor([2, 0, 1])
    with torch.no_grad():
        right = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels, output_attentions=True)
        other = model(input_ids=moved(input_ids), attention_mask=moved(attention_mask), labels=labels,
                      output_attentions=True)
    assert torch.equal(other.logits, right.logits) and torch.equal(other.loss, right.loss)
    assert torch.equal(other.attentions[0], moved(right.attentions[0], model.word_attention.sequence_dim))

    model = classifier(pooling_type, hierarchical=True)
    words = torch.tensor([[[11, 12, 13, PAD], [14, 15, PAD, PAD]], [[16, PAD, PAD, PAD], [PAD, PAD, PAD, PAD]]])
    mask = (words != PAD).long()
    moved_words, moved_mask = (torch.roll(tensor, shifts=1, dims=-1) for tensor in (words, mask))  # [PAD, w, w, w]
    with torch.no_grad():
        right = model(input_ids=words, attention_mask=mask, labels=labels[:2], output_attentions=True)
        other = model(input_ids=moved_words, attention_mask=moved_mask, labels=labels[:2], output_attentions=True)
    assert torch.equal(other.logits, right.logits) and torch.equal(other.loss, right.loss)
    pooling = model.word_attention
    assert torch.equal(tokens_last(other.attentions[0], pooling, 2),
                       torch.roll(tokens_last(right.attentions[0], pooling, 2), shifts=1, dims=-1))
    assert torch.equal(other.attentions[1], right.attentions[1])


# 4. the penalty in the loss, and gradients ---------------------------------------------------------------------


@pytest.mark.parametrize("hierarchical", [False, True], ids=["flat", "han"])
def test_penalty_is_its_own_field_and_in_the_loss_by_the_loss_rule(hierarchical):
    """loss = Σ CE / n + λ Σ_b P_b n_b / n: each counted label carries its text's penalty P_b, n = the counted labels
    or num_items_in_batch. Single-label with a text ignored (-100), then multi-label with uneven counts."""
    model = classifier("self_attentive", hierarchical)
    input_ids, attention_mask = inputs(hierarchical)
    with torch.no_grad():
        expected = [reference.sequence_classifier(model, sentences)
                    for sentences in document_sentences(model, input_ids, attention_mask)]
        logits = torch.stack([row_logits for row_logits, _, _ in expected])
        penalties = torch.stack([penalty for _, penalty, _ in expected])
        labels = torch.tensor([2, -100, 1])
        out = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
        cross_entropy = -(logits.log_softmax(-1)[0, 2] + logits.log_softmax(-1)[2, 1])
        assert_float64_close(out.self_attention_penalty, (penalties[0] + penalties[2]) / 2)
        assert_float64_close(out.loss, (cross_entropy + 0.5 * (penalties[0] + penalties[2])) / 2)
        out = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels, num_items_in_batch=5)
        assert_float64_close(out.loss, (cross_entropy + 0.5 * (penalties[0] + penalties[2])) / 5)

        model.config.problem_type = None
        multi = torch.tensor([[1.0, 0.0, -100.0], [-100.0, -100.0, 1.0], [0.0, 1.0, 1.0]], dtype=torch.float64)
        out = model(input_ids=input_ids, attention_mask=attention_mask, labels=multi)
    counts = torch.tensor([2.0, 1.0, 3.0], dtype=torch.float64)  # counted labels per text
    assert model.config.problem_type == "multi_label_classification"
    assert_float64_close(out.self_attention_penalty, (penalties * counts).sum() / 6)
    p = torch.sigmoid(logits)
    bce = torch.where(multi != -100, -(multi * p.log() + (1 - multi) * (1 - p).log()), 0).sum()
    assert_float64_close(out.loss, (bce + 0.5 * (penalties * counts).sum()) / 6)


@pytest.mark.parametrize("hierarchical", [False, True], ids=["flat", "han"])
@pytest.mark.parametrize("pooling_type", NEW_POOLINGS)
def test_gradients_match_the_reference(pooling_type, hierarchical):
    """∂loss/∂θ of the batched model equals the gradient through the reference equations, document by document."""
    model = classifier(pooling_type, hierarchical)
    input_ids, attention_mask = inputs(hierarchical)
    labels = torch.tensor([2, 0, 1])
    model(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss.backward()
    actual = {name: parameter.grad.clone() for name, parameter in model.named_parameters()}
    model.zero_grad()
    expected = [reference.sequence_classifier(model, sentences)
                for sentences in document_sentences(model, input_ids, attention_mask)]
    logits = torch.stack([row_logits for row_logits, _, _ in expected])
    penalty = torch.stack([row_penalty for _, row_penalty, _ in expected]).mean()
    loss = torch.nn.functional.cross_entropy(logits, labels) + model.config.self_attention_penalty_weight * penalty
    loss.backward()
    assert all(grad.abs().sum() > 0 for grad in actual.values())  # every parameter is trained
    assert_float64_gradients_close(actual, {name: parameter.grad for name, parameter in model.named_parameters()})


# 5. configuration, model card, saving, Trainer -------------------------------------------------------------


@pytest.mark.parametrize("overrides,message", [
    (dict(pooling_type="mean"), "`pooling_type` must be one of ['context_vector', 'self_attentive', "
                                "'multi_dimensional', 'final_state'], got 'mean'"),
    (dict(pooling_type="self_attentive", self_attention_rows=0), "`self_attention_rows` must be a positive integer, "
                                                                 "got 0"),
    (dict(pooling_type="self_attentive", self_attention_penalty_weight=-0.5),
     "`self_attention_penalty_weight` must be >= 0, got -0.5"),
    (dict(pooling_type="self_attentive", self_attention_penalty_weight=float("nan")),
     "`self_attention_penalty_weight` must be a finite number >= 0, got nan"),
    (dict(pooling_type="multi_dimensional", self_attention_rows=8),
     "`self_attention_rows=8`: only `pooling_type='self_attentive'` reads it, but `pooling_type` is "
     "'multi_dimensional'"),
    (dict(self_attention_penalty_weight=0.0), "`self_attention_penalty_weight=0.0`: only "
                                              "`pooling_type='self_attentive'` reads it"),
])
def test_bad_values_are_refused_by_name(overrides, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        BahdanauEncoderConfig(**overrides)


def test_a_field_changed_after_construction_is_refused_when_the_model_is_built():
    config = tiny_encoder_config(num_labels=2)
    config.pooling_type = "max"
    with pytest.raises(ValueError, match="`pooling_type` must be one of"):
        BahdanauForSequenceClassification(config)


@pytest.mark.parametrize("hierarchical", [False, True], ids=["flat", "han"])
@pytest.mark.parametrize("pooling_type", POOLINGS.declared)
def test_model_card_words(pooling_type, hierarchical):
    config = tiny_encoder_config(num_labels=2, hierarchical=hierarchical, **pooling_fields(pooling_type)).to_dict()
    (line,) = [line for line in describe(config, task="text-classification").lines if line.startswith("**Pooling**")]
    assert POOLINGS.describe(pooling_type) in line
    assert ("hierarchical attention network" in line) is hierarchical
    assert ("r = 3 rows, penalty weight 0.5" in line) is (pooling_type == "self_attentive")
    del config["pooling_type"]  # a config saved before the field reads as the context vector
    assert POOLINGS.describe("context_vector") in describe(config, task="text-classification").lines[-1]


@pytest.mark.parametrize("pooling_type", NEW_POOLINGS)
def test_save_and_load_round_trip(pooling_type, tmp_path):
    model = classifier(pooling_type, hierarchical=True)
    model.save_pretrained(tmp_path)
    loaded = BahdanauForSequenceClassification.from_pretrained(tmp_path, dtype=torch.float64).eval()
    assert loaded.config.pooling_type == pooling_type and type(loaded.word_attention) is type(model.word_attention)
    input_ids, attention_mask = documents()
    with torch.no_grad():  # the same weights and inputs through the same kernels: the same bits
        assert torch.equal(loaded(input_ids=input_ids, attention_mask=attention_mask).logits,
                           model(input_ids=input_ids, attention_mask=attention_mask).logits)


def test_trainer_evaluation_predicts_logits_beside_the_penalty(tmp_path):
    """Trainer gathers every output field but the loss as predictions: the penalty (a scalar) is left out through
    ``config.keys_to_ignore_at_inference``, so predictions are the [N, num_labels] logits."""
    model = classifier("self_attentive", hierarchical=False)
    input_ids, attention_mask = padded_batch(LENGTHS)
    rows = [{"input_ids": ids, "attention_mask": mask, "labels": label}
            for ids, mask, label in zip(input_ids, attention_mask, [2, 0, 1])]
    trainer = Trainer(model=model, args=TrainingArguments(output_dir=str(tmp_path), per_device_eval_batch_size=2,
                                                          report_to="none", use_cpu=True), eval_dataset=rows)
    prediction = trainer.predict(rows)
    with torch.no_grad():
        logits = model(input_ids=input_ids, attention_mask=attention_mask).logits
    assert prediction.predictions.shape == (3, 3)
    assert_float64_close(torch.from_numpy(prediction.predictions), logits)  # batches of 2 and 3: float64 rounding


def test_run_classification_trains_and_pictures_a_self_attentive_han(tmp_path):
    """The script takes the new fields through --config_overrides, trains with the penalty, evaluates (the penalty is
    not gathered as a prediction), draws the weights (their mean over the r rows) and names the pooling in the card."""
    run_classification.main([str(REPO / "training/configs/han_classifier.json"), "--output_dir", str(tmp_path),
                             "--config_overrides", f"{TINY},pooling_type=self_attentive,self_attention_rows=2",
                             *SMALL_RUN])
    config = json.loads((tmp_path / "config.json").read_text())
    assert (config["pooling_type"], config["self_attention_rows"], config["hierarchical"]) == ("self_attentive", 2,
                                                                                              True)
    results = json.loads((tmp_path / "all_results.json").read_text())
    assert 0 <= results["predict_accuracy"] <= 100 and math.isfinite(results["eval_loss"])
    assert (tmp_path / "attention_0.png").stat().st_size > 1000
    assert POOLINGS.describe("self_attentive") in (tmp_path / "README.md").read_text()
