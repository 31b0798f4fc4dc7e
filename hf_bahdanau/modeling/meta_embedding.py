"""Multi-representational attention: several embeddings of each source token mixed by attention (Kiela et al. 2018,
*Dynamic Meta-Embeddings for Improved Sentence Representations*), the ``meta_embedding_sources`` field.

Source j gives token x_i a vector w_ij of its own size d_j (``EMBEDDING_SOURCES``: the learned word table, a BiRNN
over the token's spelling, fixed vectors the user supplies). Each is projected to the embedding size E,
w'_ij = P_j w_ij + b_j, and the token's embedding is their mixture

    α_ij = softmax_j(aᵀ w'_ij + b),    x̃_i = Σ_j α_ij w'_ij

so the model learns per token which representation to trust (the characters for a rare word, the word table for a
frequent one). The encoder of every model class reads x̃ where it would read E[x]; ``output_attentions`` returns α.

Shapes: input_ids [B, S] and the word table's lookups [B, S, E] -> embeddings [B, S, E] and α [B, S, K], K sources in
the config's order.
"""

from collections.abc import Sequence

import torch
from torch import Tensor, nn

from .axes import EMBEDDING_SOURCES
from .input_checks import exporting
from .precision import float32_at_least, softmax_dtype
from .recurrent import RecurrentStack

__all__ = ["EMBEDDING_SOURCES", "MetaEmbedding", "spell_tokens"]

# Spelling ids: 0 pads, 1 and 2 mark a token's beginning and end (so an empty token still has a spelling), byte b is
# b + 3.
SPELLING_PAD, SPELLING_BEGIN, SPELLING_END, SPELLING_BYTES = 0, 1, 2, 3
SPELLING_VOCAB = SPELLING_BYTES + 256


def spell_tokens(tokens: Sequence[str], width: int | None = None) -> Tensor:
    """Each token's UTF-8 bytes between the begin and end marks, as spelling ids [len(tokens), width] right-padded
    with 0; ``width`` None: the longest spelling's."""
    spellings = [[SPELLING_BEGIN, *(byte + SPELLING_BYTES for byte in token.encode("utf-8")), SPELLING_END]
                 for token in tokens]
    longest = max(map(len, spellings), default=2)
    if width is None:
        width = longest
    elif longest > width:
        raise ValueError(f"`width` must hold the longest spelling, {longest} ids (its bytes and two marks), got "
                         f"{width}.")
    table = torch.zeros(len(spellings), width, dtype=torch.long)
    for row, spelling in enumerate(spellings):
        table[row, :len(spelling)] = torch.tensor(spelling)
    return table


@EMBEDDING_SOURCES.register("word")
class WordSource(nn.Module):
    """w_i = E[x_i] [E]: the model's input embedding table, which the encoder looks up (``get_input_embeddings``)."""

    def __init__(self, config) -> None:
        super().__init__()
        self.output_size = config.embedding_size

    def forward(self, input_ids: Tensor, word_embeddings: Tensor) -> Tensor:
        return word_embeddings


@EMBEDDING_SOURCES.register("chars")
class CharacterSource(nn.Module):
    """w_i = [→h_last; ←h_first] [2 H_c]: a one-layer BiRNN (``rnn_type``, H_c = ``char_hidden_size``) over the
    embedded bytes of token x_i's spelling. The spellings are a buffer [vocab_size, token_spelling_length] saved with
    the model and filled from the tokenizer by ``BahdanauPreTrainedModel.set_token_spellings``; each distinct token
    of a batch is spelled once (while torch.export traces, which cannot find them, a number that depends on the
    tokens: every position, at the buffer's width, as the value checks step aside)."""

    def __init__(self, config) -> None:
        super().__init__()
        self.output_size = 2 * config.char_hidden_size
        self.byte_embeddings = nn.Embedding(SPELLING_VOCAB, config.char_embedding_size, padding_idx=SPELLING_PAD)
        self.rnn = RecurrentStack(config.rnn_type, config.char_embedding_size, config.char_hidden_size, 1,
                                  bidirectional=True, fused_while_exporting=False)  # the encoder's stack loops S
        self.register_buffer("spellings", torch.zeros(config.vocab_size, config.token_spelling_length,
                                                      dtype=torch.long))

    def forward(self, input_ids: Tensor, word_embeddings: Tensor) -> Tensor:
        if exporting():
            spellings = self.spellings[input_ids.reshape(-1)]  # [B S, L]
            return self._spelled(spellings, (spellings != SPELLING_PAD).sum(1)).view(*input_ids.shape, -1)
        tokens, inverse = torch.unique(input_ids, return_inverse=True)
        if tokens[-1] >= len(self.spellings):
            raise ValueError(f"`input_ids` holds token {tokens[-1].item()}, but the character embedding spells "
                             f"{len(self.spellings)} tokens: call `model.set_token_spellings(tokenizer)` after "
                             "resizing the embeddings.")
        spellings = self.spellings[tokens]  # [U, L]
        lengths = (spellings != SPELLING_PAD).sum(1)
        if not lengths.all():
            raise ValueError(f"tokens {tokens[lengths == 0].tolist()} have no spelling: call "
                             "`model.set_token_spellings(tokenizer)` once after building a model with "
                             "`meta_embedding_sources` holding 'chars' (the training scripts do).")
        spellings = spellings[:, :lengths.max()]  # the batch's longest spelling, not the vocabulary's
        return self._spelled(spellings, lengths)[inverse.view(input_ids.shape)]

    def _spelled(self, spellings: Tensor, lengths: Tensor) -> Tensor:
        """spellings [N, L] of ``lengths`` [N] ids each -> [→h_last; ←h_first] [N, 2 H_c]."""
        _, final = self.rnn(self.byte_embeddings(spellings), lengths=lengths)
        return final.hidden.transpose(0, 1).reshape(-1, self.output_size)

    def set_spellings(self, spellings: Tensor) -> None:
        """spellings [vocab_size, L] (``spell_tokens``) replace the buffer, whatever its width was."""
        self.spellings = spellings.to(self.spellings.device)


@EMBEDDING_SOURCES.register("pretrained")
class PretrainedSource(nn.Module):
    """w_i = the fixed vector the user gave token x_i [P = ``pretrained_embedding_size``] (0 for a token without
    one), a buffer [vocab_size, P] saved with the model, filled by ``BahdanauPreTrainedModel.set_pretrained_vectors``
    and never trained (Kiela et al. keep theirs fixed)."""

    def __init__(self, config) -> None:
        super().__init__()
        self.output_size = config.pretrained_embedding_size
        self.register_buffer("vectors", torch.zeros(config.vocab_size, config.pretrained_embedding_size))
        self.filled = False  # whether some vector has been seen non-zero: checked until it has, not at every step

    def forward(self, input_ids: Tensor, word_embeddings: Tensor) -> Tensor:
        if not exporting() and input_ids.max() >= len(self.vectors):  # a value check: steps aside while it traces
            raise ValueError(f"`input_ids` holds token {input_ids.max().item()}, but the pretrained vectors cover "
                             f"{len(self.vectors)} tokens: call `model.set_pretrained_vectors(vectors)` after "
                             "resizing the embeddings.")
        self.filled = self.filled or bool(self.vectors.any())
        if not self.filled:
            raise ValueError("the pretrained vectors are all 0: call `model.set_pretrained_vectors(vectors)` once "
                             "after building a model with `meta_embedding_sources` holding 'pretrained'.")
        return self.vectors[input_ids].to(word_embeddings.dtype)

    def set_vectors(self, vectors: Tensor) -> None:
        """vectors [vocab_size, P] replace the buffer, whatever its number of rows was."""
        self.vectors = vectors.to(self.vectors)


class MetaEmbedding(nn.Module):
    """x̃_i = Σ_j α_ij (P_j w_ij + b_j), α_ij = softmax_j(aᵀ (P_j w_ij + b_j) + b) over the sources of
    ``config.meta_embedding_sources``."""

    def __init__(self, config) -> None:
        super().__init__()
        self.sources = nn.ModuleDict({name: EMBEDDING_SOURCES[name](config) for name in config.meta_embedding_sources})
        self.projections = nn.ModuleDict({name: nn.Linear(source.output_size, config.embedding_size)
                                          for name, source in self.sources.items()})
        self.score = nn.Linear(config.embedding_size, 1)

    def forward(self, input_ids: Tensor, word_embeddings: Tensor) -> tuple[Tensor, Tensor]:
        """input_ids [B, S], word_embeddings E[x] [B, S, E] -> x̃ [B, S, E], α [B, S, K]."""
        projected = torch.stack([self.projections[name](source(input_ids, word_embeddings))
                                 for name, source in self.sources.items()], dim=-2)  # [B, S, K, E]
        scores = self.score(projected).squeeze(-1)
        weights = float32_at_least(scores).softmax(dim=-1).to(softmax_dtype(scores))  # (``precision``)
        return (weights.unsqueeze(-1) * projected).sum(dim=-2), weights
