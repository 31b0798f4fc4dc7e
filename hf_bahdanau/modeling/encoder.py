"""The (bi)directional RNN encoder: source tokens -> annotations h_j = [->h_j; <-h_j]."""

from dataclasses import dataclass

from torch import Tensor, nn
from transformers.utils import ModelOutput

from .input_checks import check_embeddings, check_one_source, check_token_ids
from .meta_embedding import MetaEmbedding
from .padding import check_attention_mask
from .recurrent import RecurrentStack, reverse_within_lengths
from .self_attention import EncoderSelfAttention


def token_embedding(config) -> nn.Embedding:
    """The embedding table E [vocab_size, embedding_size] of a source or target vocabulary; padding at pad_token_id."""
    return nn.Embedding(config.vocab_size, config.embedding_size, padding_idx=config.pad_token_id)


@dataclass
class BahdanauEncoderOutput(ModelOutput):
    """Encoder outputs, all batch-first so ``generate`` can expand them for beams.

    last_hidden_state [B, S, D]: the annotations h_j (D = encoder_hidden_size x directions), 0 on padding; with
    ``encoder_self_attention``, h'_j = tanh(W_s [h_j; c_j]) (``self_attention``).
    final_hidden_state [B, encoder_layers, D]: each layer's final state, directions concatenated
    (forward state after the last real token, backward state at the first token).
    final_cell_state: the same for the LSTM memory cells, else None.
    embedding_attentions: with ``meta_embedding_sources`` and ``output_attentions``, α [B, S, K]: how much each
    token's embedding takes from each of the K sources (``meta_embedding``); 0 on padding.
    hidden_states: embeddings and every RNN layer's outputs when ``output_hidden_states``.
    attentions: with ``encoder_self_attention`` and ``output_attentions``, (α [B, 1, S, S],): row j is what
    annotation j attended to; rows and columns of padding are 0.
    """

    last_hidden_state: Tensor | None = None
    final_hidden_state: Tensor | None = None
    final_cell_state: Tensor | None = None
    hidden_states: tuple[Tensor, ...] | None = None
    attentions: tuple[Tensor, ...] | None = None
    embedding_attentions: Tensor | None = None

    @classmethod
    def from_tuple(cls, values: tuple, has_cell: bool) -> "BahdanauEncoderOutput":
        """Inverse of ``to_tuple()``, which drops the fields that are None (the cell state of a GRU/RNN)."""
        names = ["last_hidden_state", "final_hidden_state", *(["final_cell_state"] if has_cell else []), "hidden_states"]
        return cls(**dict(zip(names, values)))


class BahdanauEncoder(nn.Module):
    """Embeddings -> dropout -> stacked (Bi)RNN; padding never reaches a real token's annotation or the final state."""

    def __init__(self, config, embed_tokens: nn.Embedding):
        super().__init__()
        self.embed_tokens = embed_tokens
        # x̃_i = Σ_j α_ij (P_j w_ij + b_j) over several embeddings of the token (``meta_embedding``), or None: E[x_i]
        self.meta_embedding = None if config.meta_embedding_sources is None else MetaEmbedding(config)
        self.reverse_source = config.reverse_source
        self.dropout = nn.Dropout(config.dropout)
        self.rnn = RecurrentStack(
            config.rnn_type, config.embedding_size, config.encoder_hidden_size, config.encoder_layers,
            dropout=config.dropout, bidirectional=config.bidirectional,
        )
        # h'_j = tanh(W_s [h_j; c_j]) over the RNN's annotations (``self_attention``), or None
        self.self_attention = None if config.encoder_self_attention is None else EncoderSelfAttention(config)

    def forward(
        self,
        input_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        inputs_embeds: Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
    ) -> BahdanauEncoderOutput | tuple:
        """input_ids [B, S] (or inputs_embeds [B, S, E]); attention_mask [B, S], 1 = real token, each row's real
        tokens one contiguous run. Left-padded rows run right-padded and their outputs come back in the caller's
        layout (``padding``)."""
        check_one_source("input_ids", input_ids, "inputs_embeds", inputs_embeds)
        mixing = None  # the meta-embedding's α [B, S, K]
        if inputs_embeds is None:
            check_token_ids("input_ids", input_ids, self.embed_tokens.num_embeddings)
            embeddings = self.embed_tokens(input_ids)
            if self.meta_embedding is not None:
                embeddings, mixing = self.meta_embedding(input_ids, embeddings)
        else:
            check_embeddings("inputs_embeds", inputs_embeds, self.rnn.layers[0].input_size)
            embeddings = inputs_embeds
        layout = check_attention_mask(attention_mask, embeddings.shape[:2], embeddings.device)
        inputs, lengths = layout.to_right(embeddings), layout.lengths
        if self.reverse_source:
            inputs = reverse_within_lengths(inputs, lengths)
        layer_outputs, final = self.rnn(self.dropout(inputs), lengths=lengths if layout.padded else None)
        if self.reverse_source:
            layer_outputs = [reverse_within_lengths(out, lengths) for out in layer_outputs]
        annotations, attentions = layer_outputs[-1], None
        if self.self_attention is not None:  # on the right-padded rows: any padding gives the same numbers
            annotations, weights = self.self_attention(annotations, layout.right_mask)
            if output_attentions:
                attentions = (layout.to_caller(layout.to_caller(weights, dim=1), dim=2).unsqueeze(1),)
        layer_outputs = [layout.to_caller(out) for out in layer_outputs]

        output = BahdanauEncoderOutput(
            last_hidden_state=layout.to_caller(annotations),
            final_hidden_state=self._batch_first(final.hidden),
            final_cell_state=None if final.cell is None else self._batch_first(final.cell),
            hidden_states=(embeddings, *layer_outputs) if output_hidden_states else None,
            attentions=attentions,
            embedding_attentions=(None if mixing is None or not output_attentions
                                  else mixing * layout.mask.unsqueeze(-1)),
        )
        return output if return_dict is not False else output.to_tuple()

    def _batch_first(self, state: Tensor) -> Tensor:
        """[layers * directions, B, H] -> [B, layers, directions * H]."""
        directions = self.rnn.num_directions
        layers_dirs, batch_size, hidden_size = state.shape
        state = state.view(layers_dirs // directions, directions, batch_size, hidden_size)
        return state.permute(2, 0, 1, 3).reshape(batch_size, layers_dirs // directions, directions * hidden_size)
