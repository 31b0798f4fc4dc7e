"""The terms a head adds to its negative log-likelihood, one registered class per term (``axes.LOSS_TERMS``):

    loss = NLL + Σ_k λ_k term_k                                           (``add_loss_terms``)

    coverage_loss           Σ_t Σ_j min(α_tj, c_tj), c_tj = Σ_{t'<t} α_t'j   (See et al. 2017)
    doubly_stochastic_loss  Σ_j (1 − Σ_t α_tj)² over the real positions j    (Xu et al. 2015)
    reinforce_loss          −(R − b) Σ_t log α_{t,j_t} − λ_e Σ_t H(α_t)      (Xu et al. 2015; λ = 1)
    self_attention_penalty  ‖A Aᵀ − I‖²_F per text                             (Lin et al. 2017)

λ: ``coverage_loss_weight``, ``doubly_stochastic_weight``, 1 with ``attention_mode="hard_reinforce"``,
``self_attention_penalty_weight``.

Each term is a sum over the batch's kept items, divided by the NLL's rule (``loss.per_target``: Trainer's
``num_items_in_batch``, else the labels != -100), and the head's output holds it under its name, before λ (the names
are in the configs' ``keys_to_ignore_at_inference``). A head builds the terms its config turns on
(``build_loss_terms``) and hands them what it computed (``HeadOutputs``); the equations live in ``coverage.py``,
``reinforce.py`` and ``pooling.py``. A new term is a class here with its line in ``axes.LOSS_TERMS`` and its name in
the head's list of terms.
"""

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from .axes import LOSS_TERMS
from .coverage import coverage_loss, doubly_stochastic_loss
from .loss import per_target
from .reinforce import reinforce_loss, sequence_baselines, token_log_likelihoods

__all__ = ["LOSS_TERMS", "AttentionTerm", "CoverageLoss", "DoublyStochasticLoss", "HeadOutputs", "LossTerm",
           "ReinforceLoss", "SelfAttentionPenalty", "add_loss_terms", "build_loss_terms"]


@dataclass
class HeadOutputs:
    """What the loss terms read of one forward of a head with labels: N rows, T steps, S source positions."""

    labels: Tensor  # [N, T] target ids (a decoder head), or the classifier's labels; -100 = ignored
    target_mask: Tensor | None = None  # [N, T] bool: labels != -100, on the outputs' device
    weights: Tensor | None = None  # α [N, T, S] over the caller's source columns (when a term reads them)
    source_mask: Tensor | None = None  # [N, S] bool: the real source positions
    logits: Tensor | None = None  # [N, T, V]
    policy: tuple[Tensor, Tensor] | None = None  # (log α_{t,j_t}, H(α_t)) [N, T] each: hard_reinforce in training
    penalties: Tensor | None = None  # [B]: the pooling's penalty per text


class LossTerm:
    """λ ``weight`` times a term of the loss; ``total`` its sum over the batch (None: the outputs hold no such term,
    e.g. REINFORCE outside training)."""

    name: str  # its registered name: the head output's field
    reads_attention = False  # it reads the attention weights (the head asks the decoder for them)

    def __init__(self, weight: float):
        self.weight = weight

    @classmethod
    def from_config(cls, config: Any, head: nn.Module) -> "LossTerm | None":
        """The term ``config`` turns on, None when it is off. ``head``: the model, for a term with state of its own
        (a module of the head, so that it is saved with it)."""
        raise NotImplementedError

    def total(self, outputs: HeadOutputs) -> Tensor | None:
        raise NotImplementedError


def _register(name: str):
    def add(cls: type) -> type:
        cls.name = name
        return LOSS_TERMS.register(name)(cls)

    return add


class AttentionTerm(LossTerm):
    """A term over the attention weights α, on when its λ (the config's ``weight_field``) is > 0."""

    reads_attention = True
    weight_field: str  # the config field holding λ

    @classmethod
    def from_config(cls, config: Any, head: nn.Module) -> "AttentionTerm | None":
        weight = getattr(config, cls.weight_field)
        return cls(weight) if weight > 0 else None


@_register("coverage_loss")
class CoverageLoss(AttentionTerm):
    """See et al.'s Σ_t Σ_j min(α_tj, c_tj) over the kept steps (``coverage.coverage_loss``)."""

    weight_field = "coverage_loss_weight"

    def total(self, outputs: HeadOutputs) -> Tensor:
        return coverage_loss(outputs.weights, outputs.target_mask)  # the same over the caller's columns


@_register("doubly_stochastic_loss")
class DoublyStochasticLoss(AttentionTerm):
    """Xu et al.'s Σ_j (1 − Σ_t α_tj)² over the real source positions (``coverage.doubly_stochastic_loss``)."""

    weight_field = "doubly_stochastic_weight"

    def total(self, outputs: HeadOutputs) -> Tensor:
        weights = outputs.weights
        real = (weights.new_ones(weights.shape[0], weights.shape[-1]) if outputs.source_mask is None
                else outputs.source_mask)
        return doubly_stochastic_loss(weights, outputs.target_mask, real.bool())


@_register("reinforce_loss")
class ReinforceLoss(LossTerm):
    """REINFORCE's score-function and entropy terms for ``attention_mode="hard_reinforce"`` (``reinforce``), in
    training; R = log p(y | j̃, x) from the logits, b from the head's ``reinforce_baseline`` (a module of the head,
    saved with it), which gives each batch's b and then updates itself with the batch's R (or R / T with
    ``reinforce_baseline="per_token"``: ``reinforce.sequence_baselines``)."""

    def __init__(self, weight: float, entropy_weight: float, baseline: nn.Module, baseline_kind: str = "sequence"):
        super().__init__(weight)
        self.entropy_weight = entropy_weight
        self.baseline = baseline
        self.baseline_kind = baseline_kind

    @classmethod
    def from_config(cls, config: Any, head: nn.Module) -> "ReinforceLoss | None":
        if config.attention_mode != "hard_reinforce":
            return None
        return cls(1.0, config.reinforce_entropy_weight, head.reinforce_baseline, config.reinforce_baseline)

    def total(self, outputs: HeadOutputs) -> Tensor | None:
        if outputs.policy is None:  # outside training: the positions were not sampled
            return None
        log_likelihoods = token_log_likelihoods(outputs.logits, outputs.labels.to(outputs.logits.device))
        rewards = (log_likelihoods * outputs.target_mask).sum(1)
        baseline = sequence_baselines(self.baseline, rewards, outputs.target_mask.sum(1), self.baseline_kind)
        return reinforce_loss(log_likelihoods, *outputs.policy, outputs.target_mask, baseline, self.entropy_weight)


@_register("self_attention_penalty")
class SelfAttentionPenalty(LossTerm):
    """Lin et al.'s ‖A Aᵀ − I‖²_F of ``pooling_type="self_attentive"`` (``pooling.SelfAttentivePooling.penalty``):
    each counted label of a text carries its text's penalty."""

    @classmethod
    def from_config(cls, config: Any, head: nn.Module) -> "SelfAttentionPenalty | None":
        return cls(config.self_attention_penalty_weight) if config.pooling_type == "self_attentive" else None

    def total(self, outputs: HeadOutputs) -> Tensor | None:
        penalties = outputs.penalties
        if penalties is None:
            return None
        counted = outputs.labels.reshape(len(penalties), -1).to(penalties.device) != -100
        return torch.where(counted, penalties[:, None].expand(counted.shape), 0).sum()


def build_loss_terms(config: Any, head: nn.Module, names: tuple[str, ...]) -> list[LossTerm]:
    """The terms among ``names`` (a head's possible terms, in the order they are added) that ``config`` turns on."""
    terms = (LOSS_TERMS[name].from_config(config, head) for name in names)
    return [term for term in terms if term is not None]


def add_loss_terms(loss: Tensor, terms: list[LossTerm], outputs: HeadOutputs,
                   num_items_in_batch: int | Tensor | None) -> tuple[Tensor, dict[str, Tensor]]:
    """loss + Σ_k λ_k term_k, each term divided like the NLL (``per_target``), and {name: term_k} (before λ) for the
    head's output."""
    totals = {term: term.total(outputs) for term in terms}
    parts = {term.name: per_target(total, outputs.labels, num_items_in_batch)
             for term, total in totals.items() if total is not None}
    for term in terms:
        if term.name in parts:
            loss = loss + term.weight * parts[term.name]
    return loss, parts
