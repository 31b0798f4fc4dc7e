"""The parts of an end-to-end memory network (Sukhbaatar et al. 2015): how a sentence becomes a vector
(``sentence_encoding``), which embedding tables each hop reads (``weight_tying``), the time index of each memory
(temporal encoding and its random noise) and one hop of attention.

One hop k, for a question state u^k [B, d] and memory sentences x_i:

    m_i = enc(A^k x_i) + T_A^k(t_i),  c_i = enc(C^k x_i) + T_C^k(t_i)     memory keys and values [B, M, d]
    p_i = softmax_i(u^kᵀ m_i)  (linear start: p_i = u^kᵀ m_i)              attention over the real memories [B, M]
    o^k = Σ_i p_i c_i,  u^{k+1} = u^k + o^k  (layer-wise: H u^k + o^k)

with u^1 = enc(B q) for the question q, and t_i the number of memories after x_i (0 for the most recent).
"""

import torch
from torch import Tensor, nn

from .attention import masked_softmax
from .axes import SENTENCE_ENCODINGS, WEIGHT_TYINGS

__all__ = ["AdjacentTying", "BagOfWords", "LayerWiseTying", "PositionEncoding", "SentenceEncoding", "WeightTying",
           "attend_memory", "memory_times"]


class SentenceEncoding(nn.Module):
    """Word embeddings [..., W, d] and their mask [..., W] bool -> one vector per sentence [..., d]: Σ_j l_j ⊙ e_j
    over the real words, with the word weights l_j of ``word_weights``. A sentence without words is 0."""

    def word_weights(self, mask: Tensor, size: int, dtype: torch.dtype) -> Tensor:
        """l [..., W, d] or [..., W, 1]; 0 on padding."""
        raise NotImplementedError

    def forward(self, embedded: Tensor, mask: Tensor) -> Tensor:
        return (self.word_weights(mask, embedded.shape[-1], embedded.dtype) * embedded).sum(-2)


@SENTENCE_ENCODINGS.register("bag_of_words")
class BagOfWords(SentenceEncoding):
    """m = Σ_j e_j: l_j = 1 on the real words."""

    def word_weights(self, mask: Tensor, size: int, dtype: torch.dtype) -> Tensor:
        return mask.unsqueeze(-1).to(dtype)


@SENTENCE_ENCODINGS.register("position_encoding")
class PositionEncoding(SentenceEncoding):
    """PE: l_kj = (1 − j/J) − (k/d)(1 − 2j/J) for the j-th real word (1-based) of a sentence of J real words and
    feature k = 1 … d, so that word order changes the sentence vector. Counted over the real words only, so padding
    on either side gives the same vector."""

    def word_weights(self, mask: Tensor, size: int, dtype: torch.dtype) -> Tensor:
        mask = mask.unsqueeze(-1)
        j = mask.to(dtype).cumsum(-2)  # [..., W, 1] the position of each real word
        length = j[..., -1:, :].clamp(min=1)  # J [..., 1, 1]
        k = torch.arange(1, size + 1, dtype=dtype, device=mask.device)
        weights = (1 - j / length) - (k / size) * (1 - 2 * j / length)
        return weights * mask


class WeightTying(nn.Module):
    """The embedding tables of the hops: ``word_tables`` (A^k, C^k and B are entries of it, by ``hop_tables`` and
    ``question_table``), ``time_tables`` (T_A^k, T_C^k, aligned with the memory tables) and the query update.

    Subclasses set ``memory_tables(num_hops)``, ``hop_tables(k)`` (the key and value tables of hop k, 0-based),
    ``question_table`` and ``answer_table`` (the word table whose rows are the answer map W, or None)."""

    def __init__(self, config) -> None:
        super().__init__()
        self.num_hops = config.num_hops
        memories = self.memory_tables(config.num_hops)
        words = memories + (self.question_table(config.num_hops) >= memories)
        self.word_tables = nn.ModuleList(nn.Embedding(config.vocab_size, config.hidden_size) for _ in range(words))
        self.time_tables = None if not config.temporal_encoding else nn.ModuleList(
            nn.Embedding(config.memory_size, config.hidden_size) for _ in range(memories))

    @staticmethod
    def memory_tables(num_hops: int) -> int:
        raise NotImplementedError

    def hop_tables(self, hop: int) -> tuple[int, int]:
        raise NotImplementedError

    @staticmethod
    def question_table(num_hops: int) -> int:
        raise NotImplementedError

    def answer_table(self) -> int | None:
        return None

    def next_query(self, query: Tensor, read: Tensor) -> Tensor:
        """u^{k+1} = u^k + o^k: [B, d] each."""
        return query + read


@WEIGHT_TYINGS.register("adjacent")
class AdjacentTying(WeightTying):
    """K + 1 tables E_0 … E_K: hop k reads A^k = E_{k-1}, C^k = E_k (1-based k); B = E_0, W^T = E_K."""

    @staticmethod
    def memory_tables(num_hops: int) -> int:
        return num_hops + 1

    def hop_tables(self, hop: int) -> tuple[int, int]:
        return hop, hop + 1

    @staticmethod
    def question_table(num_hops: int) -> int:
        return 0

    def answer_table(self) -> int:
        return self.num_hops


@WEIGHT_TYINGS.register("layer_wise")
class LayerWiseTying(WeightTying):
    """A (table 0) and C (table 1) shared by every hop, B its own table (2); u^{k+1} = H u^k + o^k."""

    def __init__(self, config) -> None:
        super().__init__(config)
        self.query_map = nn.Linear(config.hidden_size, config.hidden_size, bias=False)  # H

    @staticmethod
    def memory_tables(num_hops: int) -> int:
        return 2

    def hop_tables(self, hop: int) -> tuple[int, int]:
        return 0, 1

    @staticmethod
    def question_table(num_hops: int) -> int:
        return 2

    def next_query(self, query: Tensor, read: Tensor) -> Tensor:
        """u^{k+1} = H u^k + o^k."""
        return self.query_map(query) + read


def memory_times(memory_mask: Tensor, random_noise: float = 0.0, memory_size: int | None = None) -> Tensor:
    """t_i [B, M] long: the number of real memories after memory i (0 for the most recent; 0 on empty slots).

    With ``random_noise`` r > 0 (training), a row of n memories gets b ~ U{0 … ⌈r n⌉} empty memories inserted at
    random: its times are a sorted uniform n-subset of 0 … n + b − 1 (most recent first), capped at
    memory_size − 1.
    memory_mask [B, M] bool (True = a real memory)."""
    after = memory_mask.flip(1).long().cumsum(1).flip(1) - memory_mask.long()  # real memories after each slot
    times = after * memory_mask
    if not random_noise:
        return times
    counts = memory_mask.sum(1)  # n [B]
    blanks = (torch.rand(counts.shape, device=counts.device) * (torch.ceil(counts * random_noise) + 1)).long()
    slots = counts + blanks
    keys = torch.rand(len(counts), int(slots.max()) if len(counts) else 0, device=counts.device)
    keys = keys.masked_fill(torch.arange(keys.shape[1], device=keys.device) >= slots[:, None], 2)
    chosen = keys.argsort(1)[:, :memory_mask.shape[1]]  # the first n of a row: a uniform n-subset of its slots
    chosen = chosen.masked_fill(torch.arange(chosen.shape[1], device=keys.device) >= counts[:, None], keys.shape[1])
    noisy = chosen.sort(1).values.gather(1, times.clamp(max=chosen.shape[1] - 1))
    if memory_size is not None:
        noisy = noisy.clamp(max=memory_size - 1)
    return noisy * memory_mask


def attend_memory(query: Tensor, keys: Tensor, values: Tensor, memory_mask: Tensor,
                  linear_start: bool = False) -> tuple[Tensor, Tensor]:
    """One hop's read: p = softmax_i(uᵀ m_i) over the real memories (linear start: uᵀ m_i), o = Σ_i p_i c_i.

    query u [B, d], keys m [B, M, d], values c [B, M, d], memory_mask [B, M] bool -> o [B, d], p [B, M] (0 on empty
    slots; all 0 for a memory with no sentence)."""
    scores = (keys @ query.unsqueeze(-1)).squeeze(-1)
    weights = scores * memory_mask if linear_start else masked_softmax(scores, memory_mask)
    return (weights.unsqueeze(1) @ values).squeeze(1), weights
