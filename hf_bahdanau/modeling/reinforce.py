"""REINFORCE for hard attention (Xu et al. 2015, §4.1; ``attention_mode="hard_reinforce"``).

Sampling one position j_t ~ α_t per step makes log p(y | x) intractable; Xu et al. maximise the lower bound
L_s = Σ_j p(j | x) log p(y | j, x), whose gradient, estimated from one draw j̃ per sequence, is

    ∂L_s/∂W ≈ ∂ log p(y | j̃, x)/∂W + λ_r (log p(y | j̃, x) − b) ∂ log p(j̃ | x)/∂W + λ_e ∂H[j̃]/∂W

with log p(j̃ | x) = Σ_t log α_{t,j̃_t} and a moving-average baseline b ← 0.9 b + 0.1 log p(y | j̃, x) that lowers the
estimator's variance. R_n = Σ_t log p(y_t | …) falls with the text's length T_n (on digit strips they correlate −0.96,
``benchmarks/reinforce_variance.py``), so ``reinforce_baseline="per_token"`` averages R_n / T_n instead and gives
sequence n the baseline b_n = T_n · r̄ (``sequence_baselines``). Here λ_r = 1 and the loss whose gradient is −(that) is

    loss = −log p(y | j̃, x) − (R − b) Σ_t log α_{t,j̃_t} − λ_e Σ_t H(α_t),   R = log p(y | j̃, x) held constant,

summed over the batch and divided like the cross-entropy (per target token). The sampled positions' one-hot weights
carry no gradient (``attention_mode.ReinforceHardAttention``); the first term still trains everything the sampled
contexts reach. Xu et al.'s third variance reduction, "with probability 0.5 for a given image, we set the sampled
attention location s̃ to its expected value α" (``reinforce_expected_context_probability``), gives such a sequence
log p(j̃ | x) = 0 here: it trains α by backpropagation through its contexts Σ_j α_tj a_j instead.
"""

import torch
from torch import Tensor, nn
from transformers import initialization as init

from .configuration_bahdanau import REINFORCE_BASELINES

__all__ = ["MovingAverageBaseline", "reinforce_loss", "sequence_baselines", "token_log_likelihoods"]


def token_log_likelihoods(logits: Tensor, labels: Tensor) -> Tensor:
    """log p(y_t | y_<t, x) [N, T] from logits [N, T, V] and labels [N, T] (0 where the label is -100)."""
    kept = labels != -100
    log_probs = torch.log_softmax(logits.to(torch.promote_types(logits.dtype, torch.float32)), dim=-1)
    return log_probs.gather(-1, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1) * kept


def reinforce_loss(log_likelihoods: Tensor, log_policy: Tensor, entropy: Tensor, target_mask: Tensor,
                   baseline: Tensor, entropy_weight: float) -> Tensor:
    """The score-function and entropy terms, summed over the batch: −Σ_n (R_n − b) Σ_t log α_{t,j_t} − λ_e Σ_n Σ_t H_t
    over the kept steps, R_n = Σ_t log p(y_t | …) [N] held constant. All per-step inputs [N, T]; baseline b a scalar
    or one per sequence [N] (``sequence_baselines``)."""
    kept = target_mask.to(log_policy.dtype)
    reward = (log_likelihoods * kept).sum(1).detach()
    return -((reward - baseline) * (log_policy * kept).sum(1)).sum() - entropy_weight * (entropy * kept).sum()


def sequence_baselines(moving_average: "MovingAverageBaseline", rewards: Tensor, lengths: Tensor,
                       kind: str) -> Tensor:
    """Each sequence's baseline b_n from the rewards R [N] and kept target tokens T [N], by ``reinforce_baseline``:
    ``"sequence"``: b (a scalar) of the moving average of the R_n; ``"per_token"``: T_n · r̄ [N], r̄ the moving average
    of R_n / T_n over the sequences with T_n > 0 (a batch with none: b = 0, r̄ not updated). In training the moving
    average then takes the batch's values."""
    if kind == "sequence":
        return moving_average(rewards)
    if kind == "per_token":
        counted = lengths > 0
        if not bool(counted.any()):  # no kept token in the batch: no reward to learn from, r̄ keeps its value
            return torch.zeros_like(rewards)
        return lengths.to(rewards.dtype) * moving_average(rewards[counted] / lengths[counted].to(rewards.dtype))
    raise ValueError(f"`reinforce_baseline` must be one of {list(REINFORCE_BASELINES)}, got {kind!r}.")


class MovingAverageBaseline(nn.Module):
    """b ← decay · b + (1 − decay) · mean_n R_n after every training batch, bias-corrected for its first updates as
    Adam's moments are (b / (1 − decay^k) after k updates); the first batch, with no history, uses its own mean.

    A running statistic of the batches it is called on, kept and updated by the module itself as BatchNorm keeps its
    running mean: calling it on a batch's rewards gives that batch's b and then, in training, adds them."""

    def __init__(self, decay: float):
        super().__init__()
        self.decay = decay
        self.register_buffer("total", torch.zeros(()))
        self.register_buffer("updates", torch.zeros((), dtype=torch.long))

    def init_parameters(self) -> None:
        """No history: b's total and update count 0 (the model's ``_init_weights`` calls it)."""
        init.zeros_(self.total)
        init.zeros_(self.updates)

    def forward(self, rewards: Tensor) -> Tensor:
        """b for this batch of rewards R [N] (``value``); in training, R then updates b (``update``)."""
        baseline = self.value(rewards)
        if self.training:
            self.update(rewards)
        return baseline

    def value(self, rewards: Tensor) -> Tensor:
        """b for this batch of rewards R [N] (before they update it)."""
        if int(self.updates) == 0:
            return rewards.mean().detach()
        return self.total / (1 - self.decay ** int(self.updates))

    @torch.no_grad()
    def update(self, rewards: Tensor) -> None:
        self.total.mul_(self.decay).add_((1 - self.decay) * rewards.mean())
        self.updates.add_(1)
