"""Xu et al. (2015) §4.1's third variance reduction for hard attention trained by REINFORCE
(``reinforce_expected_context_probability`` p with ``attention_mode="hard_reinforce"``): in training, each sequence,
drawn once with probability p, attends by the expected context α (soft attention) at every step and adds no
score-function term; p = 0 is plain REINFORCE, unchanged; evaluation and generate() take the argmax whatever p is."""

import math

import pytest
import torch
from torch.testing import assert_close

from child_process import run_child
from conftest import (assert_float64_close, assert_float64_gradients_close, padded_batch, random_labels,
                      tiny_config, tiny_model)
from hf_bahdanau import BahdanauImageToTextConfig, reference
from hf_bahdanau.cards.architecture import describe
from hf_bahdanau.modeling.attention_mode import ReinforceHardAttention
from hf_bahdanau.modeling.reinforce import token_log_likelihoods

pytestmark = pytest.mark.usefixtures("one_thread")

F64 = dict(dtype=torch.float64)
FIELD = "reinforce_expected_context_probability"
STYLES = {  # Bahdanau style attends step by step; Luong style without input feeding attends all steps at once
    "bahdanau": {},
    "luong": dict(decoder_style="luong", attention_type="general", input_feeding=False),
}


def reinforce_model(style: str, probability: float, entropy_weight: float = 0.0):
    return tiny_model(attention_mode="hard_reinforce", reinforce_entropy_weight=entropy_weight,
                      **{FIELD: probability}, **STYLES[style]).double()


def soft_twin(model):
    """The soft-attention model with ``model``'s weights (the baseline's buffers aside)."""
    style = {field: getattr(model.config, field) for field in ("decoder_style", "attention_type", "input_feeding")}
    soft = tiny_model(**style).double()
    soft.load_state_dict(model.state_dict(), strict=False)
    return soft


def batch_with_labels() -> dict[str, torch.Tensor]:
    input_ids, mask = padded_batch()
    labels = random_labels(3, 5)
    labels[1, 3:] = -100
    return dict(input_ids=input_ids, attention_mask=mask, labels=labels)


# the config ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("overrides, message", [
    (dict(attention_mode="hard_reinforce", **{FIELD: 1.5}), f"`{FIELD}` must be in [0, 1], got 1.5."),
    (dict(attention_mode="hard_reinforce", **{FIELD: -0.1}), f"`{FIELD}` must be in [0, 1], got -0.1."),
    (dict(attention_mode="hard_reinforce", **{FIELD: math.nan}),
     f"`{FIELD}` must be a finite number in [0, 1], got nan."),
    (dict(attention_mode="hard", **{FIELD: 0.5}), f"`{FIELD}=0.5`: only `attention_mode='hard_reinforce'` reads it, "
                                                  "but `attention_mode` is 'hard'"),
])
def test_bad_probabilities_are_refused_by_name(overrides, message):
    with pytest.raises(ValueError) as error:
        tiny_config(**overrides)
    assert message in str(error.value)


def test_the_probability_defaults_to_0_round_trips_and_reaches_the_image_decoder(tmp_path):
    assert getattr(tiny_config(attention_mode="hard_reinforce"), FIELD) == 0.0
    for probability in (0.0, 0.5, 1):
        config = tiny_config(attention_mode="hard_reinforce", **{FIELD: probability})
        assert getattr(type(config).from_dict(config.to_dict()), FIELD) == probability
    image = BahdanauImageToTextConfig(vocab_size=12, attention_mode="hard_reinforce", **{FIELD: 0.5})
    image.save_pretrained(tmp_path)
    decoder = BahdanauImageToTextConfig.from_pretrained(tmp_path).decoder
    assert getattr(decoder, FIELD) == 0.5


def test_the_model_card_says_the_probability_when_it_is_on():
    def attention_line(**fields) -> str:
        config = BahdanauImageToTextConfig(vocab_size=12, attention_mode="hard_reinforce", **fields).to_dict()
        return next(line for line in describe(config, "image-to-text").lines if line.startswith("**Attention**"))

    assert ("entropy bonus weight λ_e = 0.0; in training each sequence attends by the expected context α with "
            "probability 0.5)") in attention_line(**{FIELD: 0.5})
    assert "expected context" not in attention_line()


# the mode by hand ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("steps", [None, 2], ids=["one-step", "all-steps"])
def test_expected_rows_pool_with_alpha_and_add_no_score_term_by_hand(steps):
    """α rows (½, ¼, ¼, 0), rows 0 and 2 expected: they pool with α itself (gradient 1 to each α_j), row 1 with its
    sampled one-hot (no gradient); log π_{j} is 0 on the expected rows, log ¼ or log ½ on row 1; every row keeps its
    entropy H = 1.5 ln 2. ``steps``: one step [N, S] (a step loop) or [N, T, S] (every step at once)."""
    alpha = torch.tensor([0.5, 0.25, 0.25, 0.0], **F64)
    shape = (3, 4) if steps is None else (3, steps, 4)
    weights = alpha.expand(shape).clone().requires_grad_()
    expected = torch.tensor([True, False, True])
    mode = ReinforceHardAttention(temperature=1.0, expected_context_probability=0.5).train()
    torch.manual_seed(0)
    pooled = mode(weights, expected)
    assert torch.equal(pooled[0], weights[0]) and torch.equal(pooled[2], weights[2])
    sampled = pooled[1].detach()
    assert ((sampled == 0) | (sampled == 1)).all() and (sampled.sum(-1) == 1).all() and (sampled[..., 3] == 0).all()
    (gradient,) = torch.autograd.grad(pooled.sum(), weights)
    assert (gradient[0] == 1).all() and (gradient[1] == 0).all() and (gradient[2] == 1).all()
    log_policy, entropy = mode.policy(weights, pooled, expected)
    ln2 = math.log(2)
    assert (log_policy[0] == 0).all() and (log_policy[2] == 0).all()
    assert_close(log_policy[1], (sampled * alpha.log().nan_to_num(neginf=0)).sum(-1), rtol=1e-15, atol=0)
    assert_close(entropy, torch.full(shape[:-1], 1.5 * ln2, **F64), rtol=1e-15, atol=0)


def test_the_draw_is_once_per_sequence_u_below_p_and_only_in_training():
    """u_n ~ U[0, 1) from torch's generator, expected when u_n < p: p = 0.5 on 4000 sequences within 5 binomial
    standard deviations of 0.5; p = 1 every sequence; p = 0 and evaluation draw nothing and leave the generator."""
    mode = ReinforceHardAttention(temperature=1.0, expected_context_probability=0.5).train()
    torch.manual_seed(11)
    rows = mode.draw_expected_rows(4000, torch.device("cpu"))
    torch.manual_seed(11)
    assert torch.equal(rows, torch.rand(4000) < 0.5)
    assert abs(rows.double().mean().item() - 0.5) <= 5 * math.sqrt(0.25 / 4000)
    assert ReinforceHardAttention(1.0, 1.0).train().draw_expected_rows(500, torch.device("cpu")).all()
    state = torch.random.get_rng_state()
    assert ReinforceHardAttention(1.0, 0.0).train().draw_expected_rows(5, torch.device("cpu")) is None
    assert mode.eval().draw_expected_rows(5, torch.device("cpu")) is None
    assert torch.equal(torch.random.get_rng_state(), state)


# the model -----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("style", STYLES)
def test_probability_1_trains_as_soft_attention(style):
    """p = 1: the training forward's attention weights and loss are soft attention's with the same weights
    (float64, up to the paths' rounding), the REINFORCE term is exactly 0, and every gradient, the attention
    scorer's included, is soft attention's."""
    model = reinforce_model(style, 1.0).train()
    soft = soft_twin(model).train()
    batch = batch_with_labels()
    out = model(**batch, output_attentions=True)
    expected = soft(**batch, output_attentions=True)
    assert_float64_close(out.cross_attentions[0], expected.cross_attentions[0])
    assert out.reinforce_loss.item() == 0.0
    assert_float64_close(out.loss, expected.loss)
    names = [name for name, _ in model.named_parameters()]
    actual = dict(zip(names, torch.autograd.grad(out.loss, list(model.parameters()))))
    soft_gradients = dict(zip(names, torch.autograd.grad(expected.loss, list(soft.parameters()))))
    assert_float64_gradients_close(actual, soft_gradients)
    assert max(actual[name].abs().max() for name in names if name.startswith("model.decoder.attention.")) > 1e-6


def test_probability_0_draws_nothing_and_trains_by_reinforce_on_every_row():
    """p = 0 (the default): the forward and its gradients are bit-equal to a model without the field under the same
    seed, and every row's weights are a sampled one-hot."""
    model = reinforce_model("bahdanau", 0.0, entropy_weight=0.1).train()
    default = tiny_model(attention_mode="hard_reinforce", reinforce_entropy_weight=0.1).double().train()
    batch = batch_with_labels()
    outputs = []
    for network in (model, default):
        torch.manual_seed(5)
        out = network(**batch, output_attentions=True)
        outputs.append((out, torch.autograd.grad(out.loss, list(network.parameters()))))
    (out, gradients), (reference_out, reference_gradients) = outputs
    assert torch.equal(out.logits, reference_out.logits) and torch.equal(out.loss, reference_out.loss)
    assert all(torch.equal(a, b) for a, b in zip(gradients, reference_gradients))
    weights = out.cross_attentions[0][:, 0]
    assert ((weights == 0) | (weights == 1)).all()


def test_probability_one_half_follows_the_draw_row_by_row():
    """p = 0.5 under seed 2: the draw u = torch.rand(3) (the forward's first random numbers) picks rows with u < ½.
    Those rows' attention weights are soft attention's with the same weights (a row's whole trajectory is soft), the others'
    one-hot; the loss is Σ over the rows of reference.reinforce_surrogate, with no sampled position on the expected
    rows, per target token (Luong style without input feeding: α_t reads h_t alone, so the soft model gives every
    row's α), and the attention scorer gets a gradient."""
    torch.manual_seed(2)
    expected = torch.rand(3) < 0.5
    assert expected.any() and not expected.all()  # both kinds of rows
    batch = batch_with_labels()
    kept = batch["labels"] != -100
    for style in STYLES:
        model = reinforce_model(style, 0.5, entropy_weight=0.2).train()
        soft = soft_twin(model).eval()
        torch.manual_seed(2)
        out = model(**batch, output_attentions=True)
        with torch.no_grad():
            alphas = soft(**batch, output_attentions=True).cross_attentions[0][:, 0]
        weights = out.cross_attentions[0][:, 0].detach()
        assert_float64_close(weights[expected], alphas[expected])
        assert ((weights[~expected] == 0) | (weights[~expected] == 1)).all()
        scorer = torch.autograd.grad(out.loss, list(model.model.decoder.attention.parameters()), retain_graph=True)
        assert max(gradient.abs().max() for gradient in scorer) > 1e-6
        if style != "luong":
            continue
        log_likelihoods = token_log_likelihoods(out.logits.detach(), batch["labels"])
        baseline = float((log_likelihoods * kept).sum(1).mean())
        mask = batch["attention_mask"].bool()
        surrogate = sum(reference.reinforce_surrogate(ll[k], a[k][:, m], [] if e else w[k][:, m].argmax(-1).tolist(),
                                                      baseline, 0.2)
                        for ll, a, w, k, m, e in zip(log_likelihoods, alphas, weights, kept, mask, expected))
        assert_float64_close(out.loss.detach(), surrogate / int(kept.sum()))


def test_evaluation_and_generate_ignore_the_probability():
    """In eval the argmax, as with p = 0: the same logits and the same generated ids, bit for bit."""
    model, plain = reinforce_model("bahdanau", 0.5).eval(), reinforce_model("bahdanau", 0.0).eval()
    batch = batch_with_labels()
    assert torch.equal(model(**batch).logits, plain(**batch).logits)
    inputs = dict(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], max_new_tokens=4)
    assert torch.equal(model.generate(**inputs, num_beams=2), plain.generate(**inputs, num_beams=2))


REMOTE_TRAINING_CHILD = """
    import json
    import sys

    import torch
    import transformers

    torch.set_num_threads(1)
    folder, inputs = sys.argv[1:]
    model = transformers.AutoModelForSeq2SeqLM.from_pretrained(folder, trust_remote_code=True, dtype=torch.float64)
    torch.manual_seed(2)
    out = model.train()(**torch.load(inputs), output_attentions=True)
    print(json.dumps(dict(probability=model.config.reinforce_expected_context_probability, loss=out.loss.item(),
                          weights=out.cross_attentions[0].tolist(),
                          hf_bahdanau=[name for name in sys.modules if name.startswith("hf_bahdanau")])))
"""


def test_a_saved_folder_trains_with_the_expected_context_without_the_package(tmp_path):
    """The field is in config.json and the code the folder carries draws the rows: a process where hf_bahdanau
    cannot be imported gives the training forward of the model here under the same seed (p = 0.5, rows of both
    kinds)."""
    model = reinforce_model("bahdanau", 0.5, entropy_weight=0.2).train()
    model.save_pretrained(tmp_path / "model")
    batch = batch_with_labels()
    torch.save(batch, tmp_path / "inputs.pt")
    child = run_child(REMOTE_TRAINING_CHILD, tmp_path, str(tmp_path / "model"), str(tmp_path / "inputs.pt"),
                      isolated=True, hide_package=True)
    torch.manual_seed(2)
    out = model(**batch, output_attentions=True)
    assert child["hf_bahdanau"] == [] and child["probability"] == 0.5
    assert_float64_close(torch.tensor(child["weights"], **F64), out.cross_attentions[0].detach())
    assert_float64_close(torch.tensor(child["loss"], **F64), out.loss.detach())
