"""Stacked recurrent layers that run a whole sequence in one fused call or one step at a time.

The same ``nn.GRU``/``nn.LSTM``/``nn.RNN`` parameters serve both modes. The step mode takes
the first layer's input projection precomputed (``W_ih x + b_ih``), so a decoder can project
every target embedding at once before its loop and add only the part that changes per step.
"""

from typing import NamedTuple

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import PackedSequence

from .loop_linear import LoopLinear

RNN_MODULES = {"gru": nn.GRU, "lstm": nn.LSTM, "rnn": nn.RNN}


class RecurrentState(NamedTuple):
    """Per-layer state, layers first as torch's RNNs want it.

    hidden [layers, batch, hidden]; cell [layers, batch, hidden] for LSTM, else None.
    """

    hidden: Tensor
    cell: Tensor | None = None

    def index_select(self, index: Tensor) -> "RecurrentState":
        """Pick batch rows (beam search reordering)."""
        return RecurrentState(
            self.hidden.index_select(1, index), None if self.cell is None else self.cell.index_select(1, index)
        )


def gru_cell(input_gates: Tensor, hidden_gates: Tensor, hidden: Tensor, cell: None) -> tuple[Tensor, None]:
    """r = σ(x_r + h_r), z = σ(x_z + h_z), n = tanh(x_n + r ⊙ h_n), h' = n + z ⊙ (h − n), with
    [x_r, x_z, x_n] = W_ih x + b_ih and [h_r, h_z, h_n] = W_hh h + b_hh [B, 3H]; hidden [B, H] -> (h', None)."""
    x_r, x_z, x_n = input_gates.chunk(3, dim=-1)
    h_r, h_z, h_n = hidden_gates.chunk(3, dim=-1)
    reset = torch.sigmoid(x_r + h_r)
    update = torch.sigmoid(x_z + h_z)
    candidate = torch.tanh(x_n + reset * h_n)
    return candidate + update * (hidden - candidate), None


def lstm_cell(input_gates: Tensor, hidden_gates: Tensor, hidden: Tensor, cell: Tensor) -> tuple[Tensor, Tensor]:
    """[i, f, g, o] = W_ih x + b_ih + W_hh h + b_hh; c' = σ(f) ⊙ c + σ(i) ⊙ tanh(g); h' = σ(o) ⊙ tanh(c').
    input_gates, hidden_gates [B, 4H]; hidden, cell [B, H] -> (h', c')."""
    in_gate, forget_gate, candidate, out_gate = (input_gates + hidden_gates).chunk(4, dim=-1)
    cell = torch.sigmoid(forget_gate) * cell + torch.sigmoid(in_gate) * torch.tanh(candidate)
    return torch.sigmoid(out_gate) * torch.tanh(cell), cell


def tanh_cell(input_gates: Tensor, hidden_gates: Tensor, hidden: Tensor, cell: None) -> tuple[Tensor, None]:
    """h' = tanh(W_ih x + b_ih + W_hh h + b_hh).  input_gates, hidden_gates [B, H] -> (h', None)."""
    return torch.tanh(input_gates + hidden_gates), None


CELLS = {"gru": gru_cell, "lstm": lstm_cell, "rnn": tanh_cell}


class RecurrentStack(nn.Module):
    """``num_layers`` single-layer RNNs, dropout between layers, optionally bidirectional.

    Layer l is ``layers[l]`` (an ``nn.GRU``/``nn.LSTM``/``nn.RNN`` of one layer), so every layer's
    output is available and the step mode can read its weights directly.
    """

    def __init__(
        self, rnn_type: str, input_size: int, hidden_size: int, num_layers: int,
        dropout: float = 0.0, bidirectional: bool = False,
    ):
        super().__init__()
        self.cell_step = CELLS[rnn_type]
        self.hidden_size = hidden_size
        self.num_directions = 2 if bidirectional else 1
        module = RNN_MODULES[rnn_type]
        layer_input_sizes = [input_size] + [hidden_size * self.num_directions] * (num_layers - 1)
        self.layers = nn.ModuleList(
            module(size, hidden_size, batch_first=True, bidirectional=bidirectional) for size in layer_input_sizes
        )
        self.dropout = nn.Dropout(dropout)

    @property
    def num_layers(self) -> int:
        return len(self.layers)

    def forward(
        self, inputs: Tensor | PackedSequence, state: RecurrentState | None = None
    ) -> tuple[list[Tensor | PackedSequence], RecurrentState]:
        """Run every layer over the whole sequence.

        inputs [B, T, I] (or packed); state per layer [layers * directions, B, H] or None (zeros).
        Returns each layer's outputs ([B, T, H * directions] or packed) and the final state
        [layers * directions, B, H].
        """
        if state is not None and self.num_directions == 1 and not isinstance(inputs, PackedSequence) \
                and inputs.shape[1] == 1:
            return self._one_step(inputs, state)  # a generate() step: the step mode has less overhead
        directions = self.num_directions
        outputs, finals, cells = [], [], []
        layer_input = inputs
        for index, layer in enumerate(self.layers):
            if index > 0:
                layer_input = self._drop(layer_input)
            layer_state = None
            if state is not None:
                rows = slice(index * directions, (index + 1) * directions)
                layer_state = state.hidden[rows] if state.cell is None else (state.hidden[rows], state.cell[rows])
            layer_input, final = layer(layer_input, layer_state)
            outputs.append(layer_input)
            if isinstance(final, tuple):
                final, cell = final
                cells.append(cell)
            finals.append(final)
        return outputs, RecurrentState(torch.cat(finals), torch.cat(cells) if cells else None)

    def _one_step(self, inputs: Tensor, state: RecurrentState) -> tuple[list[Tensor], RecurrentState]:
        """``forward`` for inputs [B, 1, I] through the step mode: the same outputs and final state."""
        first = self.layers[0]
        first_input_gates = nn.functional.linear(inputs[:, 0], first.weight_ih_l0, first.bias_ih_l0)
        new_state = self.step(first_input_gates, self.unbind_state(state), self.step_weights())
        return [hidden.unsqueeze(1) for hidden, _ in new_state], self.stack_state(new_state)

    def _drop(self, inputs: Tensor | PackedSequence) -> Tensor | PackedSequence:
        if isinstance(inputs, PackedSequence):
            return inputs._replace(data=self.dropout(inputs.data))
        return self.dropout(inputs)

    def first_layer_input_weights(self, split: int) -> tuple[Tensor, Tensor, Tensor]:
        """The first layer's W_ih split at input column ``split``: (W_ih[:, :split], W_ih[:, split:], b_ih).

        A decoder whose input is [E y_{t-1}; x_t] projects E y for all steps at once before its loop
        and adds W_tail x_t per step; splitting once per forward keeps the slices out of the loop.
        """
        layer = self.layers[0]
        return layer.weight_ih_l0[:, :split], layer.weight_ih_l0[:, split:], layer.bias_ih_l0

    def step_weights(self) -> list[tuple[LoopLinear | None, LoopLinear]]:
        """Per layer (W_ih x + b_ih, or None for the first layer, whose input the caller projects;
        W_hh h + b_hh), built once per loop so their weight gradients are taken once after it."""
        return [(None if index == 0 else LoopLinear(layer.weight_ih_l0, layer.bias_ih_l0),
                 LoopLinear(layer.weight_hh_l0, layer.bias_hh_l0)) for index, layer in enumerate(self.layers)]

    def step(
        self, first_input_gates: Tensor, state: list[tuple[Tensor, Tensor | None]],
        weights: list[tuple[LoopLinear | None, LoopLinear]],
    ) -> list[tuple[Tensor, Tensor | None]]:
        """One time step of a unidirectional stack.

        first_input_gates [B, gates * H]: the first layer's projected input W_ih x + b_ih;
        state: per layer (h [B, H], c [B, H] or None); weights: ``step_weights()``. Returns the new
        per-layer state; the top layer's h is the output.
        """
        new_state = []
        input_gates = first_input_gates
        for index, ((hidden, cell), (input_linear, hidden_linear)) in enumerate(zip(state, weights)):
            if index > 0:
                input_gates = input_linear(self.dropout(new_state[-1][0]))
            new_state.append(self.cell_step(input_gates, hidden_linear(hidden), hidden, cell))
        return new_state

    @staticmethod
    def unbind_state(state: RecurrentState) -> list[tuple[Tensor, Tensor | None]]:
        """[layers, B, H] state -> per-layer (h, c) list for ``step``."""
        cells = state.cell.unbind(0) if state.cell is not None else [None] * state.hidden.shape[0]
        return list(zip(state.hidden.unbind(0), cells))

    @staticmethod
    def stack_state(per_layer: list[tuple[Tensor, Tensor | None]]) -> RecurrentState:
        """Inverse of ``unbind_state``."""
        hidden = torch.stack([h for h, _ in per_layer])
        cell = torch.stack([c for _, c in per_layer]) if per_layer[0][1] is not None else None
        return RecurrentState(hidden, cell)
