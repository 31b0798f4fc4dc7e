"""REINFORCE's baseline aware of the text's length (``reinforce_baseline`` with ``attention_mode="hard_reinforce"``):
``"per_token"`` tracks r̄ ← decay · r̄ + (1 − decay) · mean_n R_n / T_n (bias-corrected as the scalar b is) and gives
sequence n the baseline T_n · r̄; ``"sequence"`` (the default) is the scalar b, unchanged."""

import math

import pytest
import torch
from torch.testing import assert_close

from conftest import assert_float64_close, sampled_training_forward, tiny_config, tiny_model
from hf_bahdanau import BahdanauForConditionalGeneration, reference
from hf_bahdanau.cards.architecture import describe
from hf_bahdanau.modeling.loss_terms import HeadOutputs, ReinforceLoss
from hf_bahdanau.modeling.reinforce import MovingAverageBaseline, reinforce_loss, sequence_baselines

pytestmark = pytest.mark.usefixtures("one_thread")

F64 = dict(dtype=torch.float64)
STYLE = dict(decoder_style="luong", attention_type="general", input_feeding=False)  # α_t reads h_t alone


def test_per_token_baseline_by_hand():
    """decay 0.5. Batch 1: R = (−4, −9), T = (2, 3): R / T = (−2, −3), no history so r̄ = −2.5 and b = (−5, −7.5);
    then total = 0.5 · −2.5 = −1.25. Batch 2: R = (−6), T = (4): r̄ = −1.25 / (1 − 0.5) = −2.5, b = (−10); then total
    = 0.5 · −1.25 + 0.5 · −1.5 = −1.375. Batch 3: R = (−3, −8, 0), T = (1, 4, 0) (the last row has no kept token and
    is not averaged): r̄ = −1.375 / (1 − 0.25) = −11/6, b = (−11/6, −22/3, 0); then total = 0.5 · −1.375 + 0.5 ·
    −2.5 = −1.9375, and the next batch's r̄ = −1.9375 / (1 − 0.125) = −31/14."""
    baseline = MovingAverageBaseline(0.5).double()
    batches = [([-4.0, -9.0], [2, 3]), ([-6.0], [4]), ([-3.0, -8.0, 0.0], [1, 4, 0])]
    expected = [[-5.0, -7.5], [-10.0], [-11 / 6, -22 / 3, 0.0]]
    for (rewards, lengths), wanted in zip(batches, expected):
        got = sequence_baselines(baseline, torch.tensor(rewards, **F64), torch.tensor(lengths), "per_token")
        assert_close(got, torch.tensor(wanted, **F64), rtol=1e-15, atol=0)
    assert int(baseline.updates) == 3 and math.isclose(float(baseline.total), -1.9375, rel_tol=1e-15)
    assert math.isclose(float(baseline.value(torch.zeros(1, **F64))), -31 / 14, rel_tol=1e-15)


def test_a_batch_without_kept_tokens_leaves_the_per_token_average_as_it_was():
    average = MovingAverageBaseline(0.9).train()
    sequence_baselines(average, torch.tensor([-4.0, -6.0]), torch.tensor([2, 3]), "per_token")
    total, updates = average.total.clone(), int(average.updates)
    baselines = sequence_baselines(average, torch.tensor([0.0, 0.0]), torch.tensor([0, 0]), "per_token")
    assert baselines.tolist() == [0.0, 0.0]
    assert (float(average.total), int(average.updates)) == (float(total), updates)  # no NaN, no update
    assert math.isfinite(float(average.value(torch.tensor([1.0]))))


def test_sequence_baseline_is_the_scalar_moving_average():
    """``"sequence"`` hands the rewards to the moving average as before: b = mean R of the first batch, a scalar."""
    baseline = MovingAverageBaseline(0.9).double()
    got = sequence_baselines(baseline, torch.tensor([-4.0, -9.0], **F64), torch.tensor([2, 3]), "sequence")
    assert got.shape == () and float(got) == -6.5 and int(baseline.updates) == 1


def test_unknown_baseline_is_refused_by_name():
    allowed = r"`reinforce_baseline` must be one of \['sequence', 'per_token'\], got "
    with pytest.raises(ValueError, match=allowed + "'x'"):
        sequence_baselines(MovingAverageBaseline(0.9), torch.zeros(2), torch.ones(2), "x")
    with pytest.raises(ValueError, match=allowed + "'mean'"):
        tiny_config(attention_mode="hard_reinforce", reinforce_baseline="mean")
    with pytest.raises(ValueError, match=r"`reinforce_baseline='per_token'`: only `attention_mode='hard_reinforce'`"):
        tiny_config(reinforce_baseline="per_token")


def test_model_loss_uses_the_length_times_the_per_token_baseline():
    """First training batch, per_token: b_n = T_n · mean_m (R_m / T_m), and the loss is Σ_n
    reference.reinforce_surrogate(log p(y_t | …), α, j̃, b_n, λ_e) / tokens (float64; α from the soft twin)."""
    run = sampled_training_forward(STYLE, reinforce_baseline="per_token")
    model, out, alphas, positions, labels, kept, mask = (run.model, run.out, run.alphas, run.positions, run.labels,
                                                         run.kept, run.mask)
    log_probs = torch.log_softmax(out.logits.detach(), dim=-1).gather(-1, labels.clamp(min=0).unsqueeze(-1))[..., 0]
    log_likelihoods = log_probs * kept
    lengths = kept.sum(1).double()
    per_token = float((log_likelihoods.sum(1) / lengths).mean())
    baselines = (lengths * per_token).tolist()
    assert baselines[1] != pytest.approx(baselines[0])  # T = (5, 2, 5): the rows get different b_n
    surrogate = sum(reference.reinforce_surrogate(ll[k], a[k][:, m], p[k].tolist(), b, 0.2)
                    for ll, a, p, k, m, b in zip(log_likelihoods, alphas, positions, kept, mask.bool(), baselines))
    assert_float64_close(out.loss.detach(), surrogate / int(kept.sum()))
    assert math.isclose(float(model.reinforce_baseline.total), 0.1 * per_token, rel_tol=1e-12)


def test_sequence_term_is_bit_equal_to_the_scalar_baseline_loss():
    """The term with ``"sequence"`` (and with the field absent, as a config saved before it) is exactly
    reinforce_loss(…, b = the moving average of R, …): same value and same gradients, bit for bit."""
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 4, 7, generator=generator)
    labels = torch.randint(0, 7, (3, 4), generator=generator)
    labels[2, 1:] = -100
    log_alpha = torch.randn(3, 4, generator=generator).requires_grad_()
    entropy = torch.rand(3, 4, generator=generator).requires_grad_()
    outputs = HeadOutputs(labels=labels, target_mask=labels != -100, logits=logits, policy=(log_alpha, entropy))
    term = ReinforceLoss(1.0, 0.3, MovingAverageBaseline(0.9), "sequence").total(outputs)
    log_probs = torch.log_softmax(logits, -1).gather(-1, labels.clamp(min=0).unsqueeze(-1))[..., 0] * (labels != -100)
    today = reinforce_loss(log_probs, log_alpha, entropy, labels != -100,
                           MovingAverageBaseline(0.9)(log_probs.sum(1)), 0.3)
    assert torch.equal(term, today)
    assert all(torch.equal(a, b) for a, b in zip(torch.autograd.grad(term, (log_alpha, entropy)),
                                                  torch.autograd.grad(today, (log_alpha, entropy))))
    config = tiny_config(attention_mode="hard_reinforce").to_dict()
    config.pop("reinforce_baseline")
    assert type(tiny_config()).from_dict(config).reinforce_baseline == "sequence"


def test_saved_folder_keeps_the_per_token_baseline(tmp_path):
    """config.json carries the field, and the loaded model trains with it."""
    model = tiny_model(attention_mode="hard_reinforce", reinforce_baseline="per_token")
    model.save_pretrained(tmp_path)
    assert '"reinforce_baseline": "per_token"' in (tmp_path / "config.json").read_text()
    loaded = BahdanauForConditionalGeneration.from_pretrained(tmp_path)
    assert loaded.config.reinforce_baseline == "per_token"
    assert [term.baseline_kind for term in loaded.loss_terms if isinstance(term, ReinforceLoss)] == ["per_token"]


@pytest.mark.parametrize("kind, words", [("sequence", "baseline b ← 0.9 b + 0.1 mean R;"),
                                         ("per_token", "baseline T_n r̄, r̄ ← 0.9 r̄ + 0.1 mean R_n / T_n;")])
def test_the_card_says_which_baseline(kind, words):
    config = tiny_config(attention_mode="hard_reinforce", reinforce_baseline=kind).to_dict()
    assert any(words in line for line in describe(config).lines)
