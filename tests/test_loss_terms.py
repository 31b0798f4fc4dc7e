"""The loss terms are registered plug-ins (``loss_terms.py``, ``axes.LOSS_TERMS``): each head builds those its config
turns on, each computes its term from the head's outputs and is logged under its name, and the total
NLL + Σ_k λ_k term_k is written once (``add_loss_terms``)."""

from types import SimpleNamespace

import pytest
import torch

from conftest import padded_batch, random_labels, tiny_encoder_config, tiny_model
from hf_bahdanau import BahdanauForSequenceClassification
from hf_bahdanau.modeling.axes import LOSS_TERMS
from hf_bahdanau.modeling.loss_terms import (AttentionTerm, CoverageLoss, DoublyStochasticLoss, HeadOutputs, LossTerm,
                                             ReinforceLoss, SelfAttentionPenalty, add_loss_terms)


def test_every_declared_loss_term_has_its_class():
    assert LOSS_TERMS.unimplemented == []
    assert dict(LOSS_TERMS) == {"coverage_loss": CoverageLoss, "doubly_stochastic_loss": DoublyStochasticLoss,
                                "reinforce_loss": ReinforceLoss, "self_attention_penalty": SelfAttentionPenalty}
    assert all(cls.name == name for name, cls in LOSS_TERMS.items())


@pytest.mark.parametrize("overrides, expected", [
    (dict(), []),
    (dict(use_coverage=True, coverage_loss_weight=0.5), [(CoverageLoss, 0.5)]),
    (dict(doubly_stochastic_weight=0.7, coverage_loss_weight=0.25, use_coverage=True),
     [(CoverageLoss, 0.25), (DoublyStochasticLoss, 0.7)]),
    (dict(attention_mode="hard_reinforce"), [(ReinforceLoss, 1.0)]),
])
def test_a_seq2seq_head_builds_the_terms_its_config_turns_on(overrides, expected):
    terms = tiny_model("rnnsearch", **overrides).loss_terms
    assert [(type(term), term.weight) for term in terms] == expected


@pytest.mark.parametrize("cls, field", [(CoverageLoss, "coverage_loss_weight"),
                                        (DoublyStochasticLoss, "doubly_stochastic_weight")])
def test_an_attention_term_is_on_when_its_weight_field_is_positive(cls, field):
    assert issubclass(cls, AttentionTerm) and cls.reads_attention and cls.weight_field == field
    term = cls.from_config(SimpleNamespace(**{field: 0.3}), head=None)
    assert type(term) is cls and term.weight == 0.3
    assert cls.from_config(SimpleNamespace(**{field: 0.0}), head=None) is None


def test_the_classifier_builds_the_self_attentive_penalty():
    config = tiny_encoder_config(num_labels=3, pooling_type="self_attentive", self_attention_penalty_weight=0.5)
    terms = BahdanauForSequenceClassification(config).loss_terms
    assert [(type(term), term.weight) for term in terms] == [(SelfAttentionPenalty, 0.5)]
    assert BahdanauForSequenceClassification(tiny_encoder_config(num_labels=3)).loss_terms == []


# Measured with the code before the loss terms (commit 7618d4e), torch.manual_seed(0), padded_batch() and
# random_labels(3, 6): (eval loss, its term), (training loss after torch.manual_seed(5), its term).
BEFORE = {
    "coverage_loss": (dict(use_coverage=True, coverage_loss_weight=0.5),
                      (4.10721492767334, 0.8328098058700562), (4.10721492767334, 0.8328098058700562)),
    "doubly_stochastic_loss": (dict(doubly_stochastic_weight=0.7),
                               (4.031112194061279, 0.4670659601688385), (4.0311126708984375, 0.4670659601688385)),
    "reinforce_loss": (dict(attention_mode="hard_reinforce"),
                       (3.7093968391418457, None), (3.715200185775757, 0.007964987307786942)),
}


@pytest.mark.parametrize("name", list(BEFORE))
def test_each_term_gives_the_loss_of_the_code_before(name):
    overrides, (eval_loss, eval_term), (train_loss, train_term) = BEFORE[name]
    model = tiny_model("rnnsearch", **overrides)
    input_ids, mask = padded_batch()
    labels = random_labels(3, 6)
    with torch.no_grad():
        out = model(input_ids=input_ids, attention_mask=mask, labels=labels)
    assert out.loss.item() == pytest.approx(eval_loss, rel=1e-6)
    if eval_term is None:  # REINFORCE samples positions in training only
        assert getattr(out, name) is None
    else:
        assert out[name].item() == pytest.approx(eval_term, rel=1e-6)
    model.train()
    torch.manual_seed(5)
    out = model(input_ids=input_ids, attention_mask=mask, labels=labels)
    assert out.loss.item() == pytest.approx(train_loss, rel=1e-6)
    assert out[name].item() == pytest.approx(train_term, rel=1e-6)


def test_reinforce_adds_nothing_and_keeps_its_baseline_without_autograd():
    model = tiny_model("rnnsearch", attention_mode="hard_reinforce").train()
    input_ids, mask = padded_batch()
    with torch.no_grad():
        out = model(input_ids=input_ids, attention_mask=mask, labels=random_labels(3, 6))
    assert out.reinforce_loss is None
    assert model.reinforce_baseline.updates.item() == 0
    out = model(input_ids=input_ids, attention_mask=mask, labels=random_labels(3, 6))
    assert out.reinforce_loss is not None and model.reinforce_baseline.updates.item() == 1


def test_the_baseline_after_training_steps_is_the_running_mean_of_the_batches_rewards():
    """decay 0.8, two optimiser steps; R_n = Σ_t log p(y_t | …) from each step's logits, by hand. The b the next
    batch gets (its rewards are not read once b has a history): after step 1 R̄_1 (total 0.2 R̄_1, bias-corrected by
    1 − 0.8); after step 2, (0.8 · 0.2 R̄_1 + 0.2 R̄_2) / (1 − 0.8²)."""
    model = tiny_model("rnnsearch", attention_mode="hard_reinforce", reinforce_baseline_decay=0.8).double().train()
    optimiser = torch.optim.SGD(model.parameters(), lr=0.5)
    input_ids, mask = padded_batch()
    labels = random_labels(3, 6)
    labels[1, 4:] = -100
    torch.manual_seed(5)
    means, next_rewards = [], torch.zeros(3, dtype=torch.float64)
    for _ in range(2):
        out = model(input_ids=input_ids, attention_mask=mask, labels=labels)
        log_probs = torch.log_softmax(out.logits.detach(), dim=-1)
        means.append(sum(float(log_probs[n, t, labels[n, t]]) for n in range(3) for t in range(6)
                         if labels[n, t] != -100) / 3)
        optimiser.zero_grad()
        out.loss.backward()
        optimiser.step()
        if len(means) == 1:
            assert model.reinforce_baseline.value(next_rewards).item() == pytest.approx(means[0], rel=1e-12)
    assert means[0] != pytest.approx(means[1], rel=1e-3)  # the step moved the model
    expected = (0.8 * 0.2 * means[0] + 0.2 * means[1]) / (1 - 0.8 ** 2)
    assert model.reinforce_baseline.value(next_rewards).item() == pytest.approx(expected, rel=1e-12)
    assert int(model.reinforce_baseline.updates) == 2


class Fixed(LossTerm):
    """A term whose total is given: the arithmetic of ``add_loss_terms`` alone."""

    name = "fixed"

    def __init__(self, weight: float, total: float | None):
        super().__init__(weight)
        self.value = total

    def total(self, outputs: HeadOutputs):
        return None if self.value is None else torch.tensor(self.value)


def test_the_total_is_the_nll_plus_each_weighted_term_per_target():
    labels = torch.tensor([[5, 6, -100], [7, -100, -100]])  # 3 targets
    outputs = HeadOutputs(labels=labels)
    loss, parts = add_loss_terms(torch.tensor(1.0), [Fixed(0.5, 6.0)], outputs, None)
    assert (loss.item(), {name: part.item() for name, part in parts.items()}) == (2.0, {"fixed": 2.0})
    loss, parts = add_loss_terms(torch.tensor(1.0), [Fixed(0.5, 6.0)], outputs, 4)  # Trainer's num_items_in_batch
    assert (loss.item(), parts["fixed"].item()) == (1.75, 1.5)
    loss, parts = add_loss_terms(torch.tensor(1.0), [Fixed(0.5, None)], outputs, None)  # no such term here
    assert (loss.item(), parts) == (1.0, {})
