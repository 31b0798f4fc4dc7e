"""Bridges: how the decoder's initial state s_0 is derived from the encoder (``BRIDGES``, the ``bridge`` field)."""

import torch
from torch import Tensor, nn

from .axes import BRIDGES
from .encoder import BahdanauEncoderOutput
from .recurrent import RNN_TYPES, RecurrentState
from .state import EncodedSource


@BRIDGES.register("zero")
class ZeroBridge(nn.Module):
    """s_0 = 0 for every decoder layer."""

    def __init__(self, config):
        super().__init__()
        self.layers, self.hidden_size = config.decoder_layers, config.hidden_size
        self.has_cell = RNN_TYPES[config.rnn_type].has_memory_cell

    def forward(self, encoder_outputs: BahdanauEncoderOutput, encoded: EncodedSource) -> RecurrentState:
        """-> state [decoder_layers, B, hidden_size]."""
        annotations = encoder_outputs.last_hidden_state
        zeros = annotations.new_zeros(self.layers, annotations.shape[0], self.hidden_size)
        return RecurrentState(zeros, zeros if self.has_cell else None)


@BRIDGES.register("last")
class LastStateBridge(nn.Module):
    """s_0^l = the encoder's final state of layer l (directions concatenated), c_0^l likewise (Sutskever, Luong)."""

    def __init__(self, config):
        super().__init__()

    def forward(self, encoder_outputs: BahdanauEncoderOutput, encoded: EncodedSource) -> RecurrentState:
        """final states [B, layers, D] -> [layers, B, D]."""
        cell = encoder_outputs.final_cell_state
        return RecurrentState(
            encoder_outputs.final_hidden_state.transpose(0, 1).contiguous(),
            None if cell is None else cell.transpose(0, 1).contiguous(),
        )


class ProjectedBridge(nn.Module):
    """s_0 = tanh(W_s x) for every decoder layer, from an encoder summary x [B, D]; LSTM cells start at 0."""

    def __init__(self, config):
        super().__init__()
        self.layers, self.hidden_size = config.decoder_layers, config.hidden_size
        self.has_cell = RNN_TYPES[config.rnn_type].has_memory_cell
        self.proj = nn.Linear(self.summary_size(config), config.decoder_layers * config.hidden_size)

    def forward(self, encoder_outputs: BahdanauEncoderOutput, encoded: EncodedSource) -> RecurrentState:
        summary = self.summarize(encoder_outputs, encoded)
        hidden = torch.tanh(self.proj(summary)).view(-1, self.layers, self.hidden_size).transpose(0, 1).contiguous()
        return RecurrentState(hidden, torch.zeros_like(hidden) if self.has_cell else None)


@BRIDGES.register("tanh")
class TanhBridge(ProjectedBridge):
    """Bahdanau et al.: s_0 = tanh(W_s <-h_1), the top layer's backward state at the first token
    (the forward final state ->h_T for a unidirectional encoder)."""

    @staticmethod
    def summary_size(config) -> int:
        return config.encoder_hidden_size

    def summarize(self, encoder_outputs: BahdanauEncoderOutput, encoded: EncodedSource) -> Tensor:
        top = encoder_outputs.final_hidden_state[:, -1]
        return top[:, -self.proj.in_features:]


@BRIDGES.register("mean")
class MeanBridge(ProjectedBridge):
    """s_0 = tanh(W_s mean_j h_j), the mean over the real (unmasked) annotations."""

    @staticmethod
    def summary_size(config) -> int:
        return config.encoder_output_size

    def summarize(self, encoder_outputs: BahdanauEncoderOutput, encoded: EncodedSource) -> Tensor:
        weights = encoded.mask.to(encoded.annotations.dtype).unsqueeze(-1)
        total = (encoded.annotations * weights).sum(dim=1)
        return total / weights.sum(dim=1).clamp(min=1)



@BRIDGES.register("mean_cell")
class MeanCellBridge(MeanBridge):
    """Xu et al. (2015): h_0 = tanh(W_s ā) and c_0 = tanh(W_c ā) for every decoder layer, ā = mean_j h_j over the
    real annotations (image regions); a GRU or tanh RNN, which has no cell, gets h_0 alone (the ``mean`` bridge)."""

    def __init__(self, config):
        super().__init__(config)
        self.cell_proj = nn.Linear(self.proj.in_features, self.proj.out_features) if self.has_cell else None

    def forward(self, encoder_outputs: BahdanauEncoderOutput, encoded: EncodedSource) -> RecurrentState:
        state = super().forward(encoder_outputs, encoded)
        if self.cell_proj is None:
            return state
        summary = self.summarize(encoder_outputs, encoded)
        cell = torch.tanh(self.cell_proj(summary)).view(-1, self.layers, self.hidden_size).transpose(0, 1)
        return RecurrentState(state.hidden, cell.contiguous())
