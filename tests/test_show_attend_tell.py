"""Show, Attend and Tell's decoder options on the text seq2seq model (Xu et al. 2015): the gating scalar β on the
context (``context_gate``), the initial state from the mean annotation (``bridge="mean_cell"``), the doubly
stochastic regulariser (``doubly_stochastic_weight``) and hard attention trained by REINFORCE
(``attention_mode="hard_reinforce"``): against ``hf_bahdanau.reference`` in float64 and by hand."""

import math

import pytest
import torch
from torch.func import functional_call
from torch.testing import assert_close

from conftest import (assert_float64_close, assert_float64_gradients_close,
                      assert_logits_and_gradients_equal_the_reference, logits_in_cached_chunks, padded_batch,
                      random_labels, sampled_training_forward, tiny_config, tiny_model)
from hf_bahdanau import BahdanauForConditionalGeneration, reference
from hf_bahdanau.modeling.attention_mode import ReinforceHardAttention
from hf_bahdanau.modeling.bridge import MeanBridge, MeanCellBridge
from hf_bahdanau.modeling.coverage import doubly_stochastic_loss
from hf_bahdanau.modeling.reinforce import MovingAverageBaseline, token_log_likelihoods
from hf_bahdanau.modeling.state import EncodedSource

pytestmark = pytest.mark.usefixtures("one_thread")

F64 = dict(dtype=torch.float64)

GATED_DECODERS = [
    dict(decoder_style="bahdanau", attention_type="additive"),
    dict(decoder_style="luong", attention_type="general", input_feeding=False),
    dict(decoder_style="luong", attention_type="dot", input_feeding=True),
    dict(decoder_style="bahdanau", attention_type="additive", attention_mode="hard_reinforce"),
    dict(decoder_style="luong", attention_type="general", input_feeding=False, attention_mode="hard_reinforce"),
    dict(decoder_style="luong", attention_type="general", input_feeding=True, attention_mode="hard_reinforce"),
]


# β: the context gate -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bridge", ["tanh", "mean_cell"])
@pytest.mark.parametrize("rnn_type", ["gru", "lstm"])
@pytest.mark.parametrize("decoder", GATED_DECODERS, ids=lambda d: "-".join(str(v) for v in d.values()))
def test_gated_decoders_equal_the_reference(decoder, rnn_type, bridge):
    """context_gate=True (hard attention in eval mode: the argmax) against ``reference.logits``, whose decoders gate
    c by β = σ(w_βᵀ q + b_β) by hand; with bridge="mean_cell" the reference starts from ``reference.mean_cell_state``.
    Logits on right- and left-padded batches and every parameter's gradient, the gate's included, in float64."""
    model = tiny_model(rnn_type=rnn_type, decoder_layers=2, bridge=bridge, context_gate=True, **decoder).double()
    with torch.no_grad():  # b_β away from 0 so that β is not near ½ for every query
        model.model.decoder.context_gate.bias.fill_(0.7)
    input_ids, mask = padded_batch()
    gradients = assert_logits_and_gradients_equal_the_reference(model, input_ids, mask, random_labels(3, 5))
    for name in ("model.decoder.context_gate.weight", "model.decoder.context_gate.bias"):
        assert gradients[name].abs().max() > 1e-4, name  # the gate is trained
    if bridge == "mean_cell" and rnn_type == "lstm":
        assert gradients["model.decoder.bridge.cell_proj.weight"].abs().max() > 1e-4


@pytest.mark.parametrize("decoder", GATED_DECODERS[:3], ids=lambda d: "-".join(str(v) for v in d.values()))
def test_gated_decoders_step_through_the_cache_as_teacher_forcing(decoder):
    """generate()'s path: the gated decoder fed 2, 1 and 2 tokens through its cache (LSTM, mean_cell start) gives
    the teacher-forced logits (float64)."""
    model = tiny_model(rnn_type="lstm", bridge="mean_cell", context_gate=True, **decoder).double()
    input_ids, mask = padded_batch()
    decoder_input_ids = random_labels(3, 5)
    with torch.no_grad():
        full = model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=decoder_input_ids).logits
    assert_float64_close(logits_in_cached_chunks(model, input_ids, mask, decoder_input_ids)[0], full)


def test_context_gate_scales_the_context_by_hand():
    """q = (2, 1, 0, …), w_β = (0.5, −1, 0, …), b_β = 0.25: w_βᵀ q + b_β = 0.25, β = σ(0.25) = 0.5621765008857981;
    c = (1, −2, 4) becomes β c. Without the gate c is returned as it is. A new model's gate starts open: b_β = 3."""
    decoder = tiny_model(context_gate=True).double().model.decoder
    assert decoder.context_gate.bias.tolist() == [3.0]
    hidden = decoder.context_gate.weight.shape[1]
    with torch.no_grad():
        decoder.context_gate.weight.zero_()
        decoder.context_gate.weight[0, :2] = torch.tensor([0.5, -1.0], **F64)
        decoder.context_gate.bias.fill_(0.25)
    query = torch.zeros(1, hidden, **F64)
    query[0, :2] = torch.tensor([2.0, 1.0], **F64)
    context = torch.tensor([[1.0, -2.0, 4.0]], **F64)
    assert_close(decoder.gate_context(query, context), 0.5621765008857981 * context, rtol=1e-15, atol=0)
    assert tiny_model().model.decoder.gate_context(query, context) is context


def test_a_wide_open_gate_is_no_gate():
    """w_β = 0, b_β = 40: β = 1 − 4e-18, 1 in float64; the gated model computes the ungated model's logits."""
    gated, plain = tiny_model(context_gate=True).double(), tiny_model().double()
    gated.load_state_dict(plain.state_dict(), strict=False)
    with torch.no_grad():
        gated.model.decoder.context_gate.weight.zero_()
        gated.model.decoder.context_gate.bias.fill_(40.0)
        input_ids, mask = padded_batch()
        labels = random_labels(3, 4)
        assert_float64_close(gated(input_ids=input_ids, attention_mask=mask, labels=labels).logits,
                             plain(input_ids=input_ids, attention_mask=mask, labels=labels).logits)


# mean_cell: h_0 and c_0 from the mean annotation ---------------------------------------------------------------------


def _encoded(config) -> EncodedSource:
    """Three annotations of size D, the third padding: a_1 = 1 e_0, a_2 = 3 e_0, a_3 = 100 e_0 (masked); ā = 2 e_0."""
    annotations = torch.zeros(1, 3, config.encoder_output_size, **F64)
    annotations[0, :, 0] = torch.tensor([1.0, 3.0, 100.0], **F64)
    return EncodedSource(annotations, torch.tensor([[True, True, False]]))


def test_mean_cell_bridge_by_hand():
    """LSTM, 2 decoder layers of H = 2, ā = 2 e_0: W_s[:, 0] = (0.1, −0.2, 0.3, 0), b_s = (0, 0, 0, 0.5) gives
    h_0 = (tanh 0.2, tanh −0.4) and (tanh 0.6, tanh 0.5); W_c[:, 0] = (1, 0, 0, −1), b_c = 0 gives c_0 = (tanh 2, 0) and
    (0, tanh −2). ``reference.mean_cell_state`` computes the same from the real annotations."""
    config = tiny_config(rnn_type="lstm", bridge="mean_cell", decoder_layers=2, hidden_size=2)
    bridge = MeanCellBridge(config).double()
    with torch.no_grad():
        for linear in (bridge.proj, bridge.cell_proj):
            linear.weight.zero_()
            linear.bias.zero_()
        bridge.proj.weight[:, 0] = torch.tensor([0.1, -0.2, 0.3, 0.0], **F64)
        bridge.proj.bias[3] = 0.5
        bridge.cell_proj.weight[:, 0] = torch.tensor([1.0, 0.0, 0.0, -1.0], **F64)
    encoded = _encoded(config)
    state = bridge(None, encoded)
    t = math.tanh
    assert_close(state.hidden, torch.tensor([[[t(0.2), t(-0.4)]], [[t(0.6), t(0.5)]]], **F64), rtol=1e-15, atol=0)
    assert_close(state.cell, torch.tensor([[[t(2.0), 0.0]], [[0.0, t(-2.0)]]], **F64), rtol=1e-15, atol=0)
    layers = reference.mean_cell_state(bridge, encoded.annotations[0, :2])
    assert_close(torch.cat([h for h, _ in layers]), state.hidden, rtol=1e-15, atol=1e-16)
    assert_close(torch.cat([c for _, c in layers]), state.cell, rtol=1e-15, atol=1e-16)


def test_mean_cell_bridge_without_a_cell_is_the_mean_bridge():
    """A GRU has no cell: mean_cell has no W_c and gives the mean bridge's h_0 = tanh(W_s ā + b_s) (same weights)."""
    config = tiny_config(rnn_type="gru", bridge="mean_cell", decoder_layers=2)
    torch.manual_seed(0)
    bridge = MeanCellBridge(config).double()
    mean = MeanBridge(config).double()
    mean.load_state_dict(bridge.state_dict())  # proj only: a GRU's mean_cell has no cell_proj
    encoded = _encoded(config)
    state, expected = bridge(None, encoded), mean(None, encoded)
    assert bridge.cell_proj is None and state.cell is None and expected.cell is None
    assert_float64_close(state.hidden, expected.hidden)
    assert state.hidden.shape == (2, 1, config.hidden_size)


# the doubly stochastic regulariser -------------------------------------------------------------------------------


def test_doubly_stochastic_regulariser_by_hand():
    """Row 1: α = [[½, ½, 0], [0.2, 0.8, 0], [0.9, 0.1, 0]], step 3 ignored, position 3 padding: Σ_t α = (0.7, 1.3),
    (0.3)² + (−0.3)² = 0.18 (the padded position would add 1). Row 2: one step α = (0.25, 0.75, 0), all three positions
    real: 0.75² + 0.25² + 1 = 1.625. Sum 1.805; the reference, row by row, agrees."""
    alphas = torch.tensor([[[0.5, 0.5, 0.0], [0.2, 0.8, 0.0], [0.9, 0.1, 0.0]],
                           [[0.25, 0.75, 0.0], [0.3, 0.3, 0.4], [0.3, 0.3, 0.4]]], **F64)
    target_mask = torch.tensor([[True, True, False], [True, False, False]])
    source_mask = torch.tensor([[True, True, False], [True, True, True]])
    assert_close(doubly_stochastic_loss(alphas, target_mask, source_mask), torch.tensor(1.805, **F64),
                 rtol=1e-15, atol=1e-15)
    rows = [reference.doubly_stochastic_regulariser(*row) for row in zip(alphas, target_mask, source_mask)]
    assert_close(torch.stack(rows), torch.tensor([0.18, 1.625], **F64), rtol=1e-15, atol=1e-15)


@pytest.mark.parametrize("train", [False, True], ids=["eval", "train"])
def test_loss_adds_the_doubly_stochastic_term_per_target(train):
    """loss = CE + λ Σ_rows (reference regulariser) / (labels ≠ −100), and / num_items_in_batch when given; in training
    (the fused cross-entropy) as in eval. Padded source positions and ignored steps do not count."""
    weight = 0.7
    model = tiny_model(doubly_stochastic_weight=weight).double()
    input_ids, mask = padded_batch()
    labels = random_labels(3, 5)
    labels[1, 3:] = -100
    labels[2, 1:] = -100
    kept = labels != -100
    with torch.no_grad():
        seen = model(input_ids=input_ids, attention_mask=mask, labels=labels, output_attentions=True)
    alphas = seen.cross_attentions[0][:, 0]
    cross_entropy = torch.nn.functional.cross_entropy(seen.logits.flatten(0, 1), labels.flatten(), reduction="sum")
    regulariser = sum(reference.doubly_stochastic_regulariser(a, t, s) for a, t, s in zip(alphas, kept, mask.bool()))
    assert float(regulariser) > 0.5  # far from 0, so a wrong mask moves it
    model.train(train)
    for items in (None, 7):
        out = model(input_ids=input_ids, attention_mask=mask, labels=labels, num_items_in_batch=items)
        count = int(kept.sum()) if items is None else items
        assert_float64_close(out.doubly_stochastic_loss.detach(), regulariser / count)
        assert_float64_close(out.loss.detach(), (cross_entropy + weight * regulariser) / count)


# REINFORCE -------------------------------------------------------------------------------------------------------


def test_reinforce_hard_attention_samples_in_training_and_takes_the_argmax_in_eval():
    """In training each row is a one-hot draw from α (each position's frequency within 5 binomial standard deviations
    √(α(1 − α)/n) of α_j; a zero-weight position never drawn) carrying no gradient; in eval the argmax."""
    weights = torch.tensor([[0.1, 0.2, 0.7, 0.0]], **F64)
    mode = ReinforceHardAttention(temperature=1.0)
    assert mode.eval()(weights).tolist() == [[0, 0, 1, 0]]
    torch.manual_seed(0)
    draws = 20_000
    leaf = weights.expand(draws, 4).clone().requires_grad_()
    samples = mode.train()(leaf)
    assert not samples.requires_grad  # the one-hot weights carry no gradient to α
    assert ((samples == 0) | (samples == 1)).all() and (samples.sum(-1) == 1).all()
    bound = 5 * torch.sqrt(weights[0] * (1 - weights[0]) / draws)
    assert ((samples.mean(0) - weights[0]).abs() <= bound).all() and samples[:, 3].sum() == 0
    assert (mode(torch.zeros(1, 4, **F64)) == 0).all()  # nothing to attend: no position


def test_policy_terms_by_hand():
    """α = (½, ¼, ¼, 0), sampled j = 2: log α_j = log ¼ = −2 ln 2, H = −(½ ln ½ + 2 · ¼ ln ¼) = 1.5 ln 2, and
    ∂ log(α_j / Σ_k α_k) / ∂α = e_j / α_j − 1 / Σ_k α_k = (−1, 3, −1, −1) (the −1s vanish through a softmax, whose
    Jacobian's rows sum to 0); a row with nothing to attend: (0, 0). None in eval."""
    weights = torch.tensor([[0.5, 0.25, 0.25, 0.0], [0.0, 0.0, 0.0, 0.0]], **F64, requires_grad=True)
    pooled = torch.tensor([[0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]], **F64)
    mode = ReinforceHardAttention(temperature=1.0).train()
    log_policy, entropy = mode.policy(weights, pooled)
    ln2 = math.log(2)
    assert_close(log_policy, torch.tensor([-2 * ln2, 0.0], **F64), rtol=1e-15, atol=0)
    assert_close(entropy, torch.tensor([1.5 * ln2, 0.0], **F64), rtol=1e-15, atol=0)
    (gradient,) = torch.autograd.grad(log_policy.sum(), weights)
    assert_close(gradient, torch.tensor([[-1.0, 3.0, -1.0, -1.0], [0.0] * 4], **F64), rtol=1e-15, atol=0)
    assert mode.eval().policy(weights, pooled) is None


def test_moving_average_baseline_by_hand():
    """decay 0.9. Batch 1, R = (−2, −4): no history, b = its own mean −3; then total = 0.1 · −3 = −0.3, one update,
    b = −0.3 / (1 − 0.9) = −3. Batch 2, R = (−1): b = −3; then total = 0.9 · −0.3 + 0.1 · −1 = −0.37, b = −0.37 /
    (1 − 0.81) = −1.9473684… Decay 0: b is the last batch's mean."""
    baseline = MovingAverageBaseline(0.9).double()
    first, second = torch.tensor([-2.0, -4.0], **F64), torch.tensor([-1.0], **F64)
    assert float(baseline.value(first)) == -3.0
    baseline.update(first)
    assert math.isclose(float(baseline.value(second)), -3.0, rel_tol=1e-15)
    baseline.update(second)
    assert int(baseline.updates) == 2
    assert math.isclose(float(baseline.value(first)), -0.37 / 0.19, rel_tol=1e-14)
    last = MovingAverageBaseline(0.0)
    last.update(first.float())
    last.update(second.float())
    assert float(last.value(first.float())) == -1.0


def test_calling_the_baseline_gives_b_then_updates_it_in_training_only():
    """The batches of ``test_moving_average_baseline_by_hand``, through the module's call, as the REINFORCE term uses
    it: each batch gets the b of the batches before it, and in eval b stays."""
    baseline = MovingAverageBaseline(0.9).double()
    first, second = torch.tensor([-2.0, -4.0], **F64), torch.tensor([-1.0], **F64)
    assert float(baseline(first)) == -3.0 and int(baseline.updates) == 1
    assert math.isclose(float(baseline(second)), -3.0, rel_tol=1e-15) and int(baseline.updates) == 2
    baseline.eval()
    assert math.isclose(float(baseline(first)), -0.37 / 0.19, rel_tol=1e-14)
    assert int(baseline.updates) == 2 and math.isclose(float(baseline.total), -0.37, rel_tol=1e-15)


def _force(monkeypatch, position: int) -> None:
    """Every hard choice picks ``position`` (training and eval)."""
    monkeypatch.setattr(ReinforceHardAttention, "choose",
                        staticmethod(lambda logits: torch.full(logits.shape[:-1], position, dtype=torch.long)))


@pytest.mark.parametrize("scope", [
    dict(attention_scope="global"),
    dict(attention_scope="local-p", local_window=2),
], ids=lambda scope: scope["attention_scope"])
@pytest.mark.parametrize("entropy_weight", [0.0, 0.3])
def test_reinforce_estimator_is_unbiased_on_two_positions(monkeypatch, entropy_weight, scope):
    """S = 2 source tokens, one target step, a fixed baseline b = −1.3. Enumerating both samples j with their
    probabilities p(j) = α_j / Σ_k α_k (1 for the global scope; a local scope's Gaussian leaves Σ_k α_k < 1):
    Σ_j p(j) ∇ loss_j (the model's training loss with j forced) = −∇ Σ_j p(j) log p(y | j) − λ_e ∇H(p), the exact
    gradient of the lower bound, by autograd (α from the same weights in soft mode). The baseline drops out:
    Σ_j p(j) ∇ log p(j) = ∇ Σ_j p(j) = 0. Without the score-function term the attention's query weights, which
    reach the loss only through α, would get no gradient at all. Local-p (window 2: both positions in it) fails."""
    config = dict(attention_mode="hard_reinforce", reinforce_entropy_weight=entropy_weight, **scope)
    model = tiny_model(**config).double()
    soft = BahdanauForConditionalGeneration(tiny_config(**scope)).double().eval()
    monkeypatch.setattr(model.reinforce_baseline, "value", lambda rewards: rewards.new_tensor(-1.3))
    params = dict(model.named_parameters())
    batch = dict(input_ids=torch.tensor([[5, 9]]), attention_mask=torch.ones(1, 2, dtype=torch.long),
                 labels=torch.tensor([[7]]))

    def gradient(loss: torch.Tensor) -> dict[str, torch.Tensor]:
        grads = torch.autograd.grad(loss, list(params.values()), allow_unused=True, retain_graph=True)
        return {name: torch.zeros_like(p) if g is None else g for (name, p), g in zip(params.items(), grads)}

    alphas = functional_call(soft, params, kwargs=dict(**batch, output_attentions=True)).cross_attentions[0][0, 0, 0]
    alphas = alphas / alphas.sum()
    probabilities = alphas.detach().tolist()
    assert 0.2 < probabilities[0] < 0.8  # both samples matter
    log_likelihoods, estimate, score_free = [], {}, {}
    for j in range(2):
        _force(monkeypatch, j)
        log_likelihoods.append(-model.eval()(**batch).loss)  # log p(y | j): one token
        sample = gradient(model.train()(**batch).loss)
        cross_entropy = gradient(-log_likelihoods[-1])
        for name in params:
            estimate[name] = estimate.get(name, 0) + probabilities[j] * sample[name]
            score_free[name] = score_free.get(name, 0) + probabilities[j] * cross_entropy[name]
    entropy = -(alphas * alphas.log()).sum()
    exact = gradient(-(alphas * torch.stack(log_likelihoods)).sum() - entropy_weight * entropy)
    assert_float64_gradients_close(estimate, exact)
    query = "model.decoder.attention.query_proj.weight"  # reaches the loss through α alone
    assert (score_free[query] == 0).all() and exact[query].abs().max() > 1e-6


def test_model_loss_is_the_reference_surrogate():
    """Luong style without input feeding (α_t reads h_t alone, so the soft model with the same weights gives the α
    the samples were drawn from): loss = Σ_n reference.reinforce_surrogate(log p(y_t | …), α, j̃, b, λ_e) / tokens with
    the batch's own mean reward as b (the first batch), and reinforce_loss = loss − CE per token."""
    overrides = dict(decoder_style="luong", attention_type="general", input_feeding=False)
    run = sampled_training_forward(overrides)
    out, alphas, positions, kept, mask = run.out, run.alphas, run.positions, run.kept, run.mask
    log_likelihoods = token_log_likelihoods(out.logits.detach(), run.labels)
    baseline = float((log_likelihoods * kept).sum(1).mean())
    surrogate = sum(reference.reinforce_surrogate(ll[k], a[k][:, m], p[k].tolist(), baseline, 0.2)
                    for ll, a, p, k, m in zip(log_likelihoods, alphas, positions, kept, mask.bool()))
    count = int(kept.sum())
    assert_float64_close(out.loss.detach(), surrogate / count)
    cross_entropy = -(log_likelihoods * kept).sum() / count
    assert_float64_close(out.reinforce_loss.detach(), surrogate / count - cross_entropy)


def test_training_with_reinforce_runs_and_the_baseline_moves_only_in_training():
    """Three optimiser steps: finite losses with reinforce_loss reported, the baseline updated once per step (its
    bias-corrected value the mean of the batch rewards); eval, and training under no_grad, leave it as it is."""
    model = tiny_model(attention_mode="hard_reinforce", reinforce_entropy_weight=0.01).train()
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-2)
    input_ids, mask = padded_batch()
    labels = random_labels(3, 4)
    torch.manual_seed(0)
    for _ in range(3):
        out = model(input_ids=input_ids, attention_mask=mask, labels=labels)
        assert out.reinforce_loss is not None and torch.isfinite(out.loss) and torch.isfinite(out.reinforce_loss)
        optimiser.zero_grad()
        out.loss.backward()
        optimiser.step()
    assert int(model.reinforce_baseline.updates) == 3
    total = model.reinforce_baseline.total.clone()
    with torch.no_grad():
        assert model(input_ids=input_ids, attention_mask=mask, labels=labels).reinforce_loss is None
    model.eval()
    assert model(input_ids=input_ids, attention_mask=mask, labels=labels).reinforce_loss is None
    assert int(model.reinforce_baseline.updates) == 3 and torch.equal(model.reinforce_baseline.total, total)


# config --------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("overrides, words", [
    (dict(reinforce_entropy_weight=0.1), ["reinforce_entropy_weight=0.1", "hard_reinforce", "'soft'"]),
    (dict(attention_mode="hard", reinforce_baseline_decay=0.5), ["reinforce_baseline_decay=0.5", "'hard'"]),
    (dict(attention_type="none", context_gate=True), ["context_gate=True", "attention_type='none'"]),
    (dict(attention_type="none", doubly_stochastic_weight=1.0), ["doubly_stochastic_weight=1.0", "'none'"]),
    (dict(attention_mode="hard_reinforce", attention_scope="monotonic"), ["hard_reinforce", "monotonic"]),
    (dict(attention_mode="hard_reinforce", reinforce_baseline_decay=1.0), ["reinforce_baseline_decay", "[0, 1)",
                                                                            "1.0"]),
    (dict(attention_mode="hard_reinforce", reinforce_baseline_decay=-0.1), ["reinforce_baseline_decay", "-0.1"]),
    (dict(attention_mode="hard_reinforce", reinforce_entropy_weight=-1.0), ["reinforce_entropy_weight", ">= 0"]),
    (dict(doubly_stochastic_weight=-0.5), ["doubly_stochastic_weight", ">= 0", "-0.5"]),
    (dict(attention_mode="hard_reinforce", attention_type="multihead", num_attention_heads=2),
     ["hard_reinforce", "multihead", "one position"]),
], ids=lambda value: "-".join(f"{k}={v}" for k, v in value.items()) if isinstance(value, dict) else None)
def test_config_refuses_bad_show_attend_tell_fields(overrides, words):
    with pytest.raises(ValueError) as error:
        tiny_config(**overrides)
    assert all(word in str(error.value) for word in words), str(error.value)


def test_config_round_trips_the_new_fields():
    config = tiny_config(attention_mode="hard_reinforce", reinforce_baseline_decay=0.0, reinforce_entropy_weight=0.5,
                         context_gate=True, doubly_stochastic_weight=1.5, bridge="mean_cell")
    again = type(config).from_dict(config.to_dict())
    for field in ("attention_mode", "reinforce_baseline_decay", "reinforce_entropy_weight", "context_gate",
                  "doubly_stochastic_weight", "bridge"):
        assert getattr(again, field) == getattr(config, field), field
