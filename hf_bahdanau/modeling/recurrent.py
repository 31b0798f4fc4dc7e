"""Stacked recurrent layers that run a whole sequence in one fused call or one step at a time.

The same ``nn.GRU``/``nn.LSTM``/``nn.RNN`` parameters serve both modes. The step mode takes
the first layer's input projection precomputed (``W_ih x + b_ih``), so a decoder can project
every target embedding at once before its loop and add only the part that changes per step.

A right-padded batch runs unpacked. The forward direction reads the real tokens first, and the
backward direction reads each row reversed within its length, so padding only ever follows a row's
real tokens and cannot change its outputs; the final state of each row is the one at its last real
token. With autograd on, each layer is one step loop for both directions at once (W_ih x for every
step in one product before it, one batched W_hh h per step), which keeps every step's LSTM cell;
torch's own calls are slower to backpropagate through: per direction, and for a packed LSTM with a
full-size [tokens, 4H] zero-fill and addition per step (``benchmarks/encoder_padding.py``). Without
autograd a GRU/RNN layer runs each direction as one call of torch's RNN function, and an LSTM batch,
whose fused call does not return the memory cell of each step, is packed: those forwards are faster.
While ``torch.export`` traces (the ONNX export), which can neither pack nor run torch's tanh-RNN call for a source
length other than its example's, each direction of a GRU or tanh-RNN layer is one call of torch's function, and an
LSTM layer one call for both directions, which the exporter writes as one ONNX ``GRU`` / ``RNN`` / ``LSTM`` operator
for any source length (``onnx/export.py``; no ONNX ``Loop`` of single steps). An LSTM's padded steps hold its memory
cell there (saturated gates, ``LSTMCell.exported_run``), so its last cell is each row's cell at its last real token.
"""

from typing import NamedTuple

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

from .axes import RNN_TYPES  # name -> the cell: its torch module, its step, its fused one-direction run
from .input_checks import exporting
from .loop_linear import LoopLinear

# A gate pre-activation added where a gate must be exactly open or shut: σ(SATURATED) = 1 and σ(−SATURATED) = 0 in
# float32, whatever the rest of the pre-activation (|W x + b + U h| ≪ 10⁴).
SATURATED = 1e4


def reverse_within_lengths(sequences: Tensor, lengths: Tensor) -> Tensor:
    """Reverse each row's first ``lengths[b]`` positions, leave padding at the end (Sutskever et al.).

    sequences [B, S, ...]; lengths [B]. The map is its own inverse.
    """
    positions = torch.arange(sequences.shape[1], device=sequences.device).expand(sequences.shape[0], -1)
    lengths = lengths.unsqueeze(1)
    index = torch.where(positions < lengths, lengths - 1 - positions, positions)
    index = index.view(*index.shape, *([1] * (sequences.dim() - 2))).expand_as(sequences)
    return sequences.gather(1, index)


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


@RNN_TYPES.register("gru")
class GRUCell:
    """r = σ(x_r + h_r), z = σ(x_z + h_z), n = tanh(x_n + r ⊙ h_n), h' = n + z ⊙ (h − n), with
    [x_r, x_z, x_n] = W_ih x + b_ih and [h_r, h_z, h_n] = W_hh h + b_hh [B, 3H]."""

    module = nn.GRU
    has_memory_cell = False
    fused_run = torch.gru  # one direction of one layer, batch first
    exported_run = None  # fused_run exports as it is (onnx/export.py, _recurrences_of_any_length)

    @staticmethod
    def step(input_gates: Tensor, hidden_gates: Tensor, hidden: Tensor, cell: None) -> tuple[Tensor, None]:
        """input_gates, hidden_gates [B, 3H], hidden [B, H] -> (h', None)."""
        # split by H (not chunk(3)): the ONNX export then has one Split with fixed sizes, not a shape computation
        x_r, x_z, x_n = input_gates.split(hidden.shape[-1], dim=-1)
        h_r, h_z, h_n = hidden_gates.split(hidden.shape[-1], dim=-1)
        reset = torch.sigmoid(x_r + h_r)
        update = torch.sigmoid(x_z + h_z)
        candidate = torch.tanh(x_n + reset * h_n)
        return candidate + update * (hidden - candidate), None


@RNN_TYPES.register("lstm")
class LSTMCell:
    """[i, f, g, o] = W_ih x + b_ih + W_hh h + b_hh; c' = σ(f) ⊙ c + σ(i) ⊙ tanh(g); h' = σ(o) ⊙ tanh(c')."""

    module = nn.LSTM
    has_memory_cell = True  # c_t beside h_t
    fused_run = None  # torch's fused LSTM call does not return each step's memory cell

    @staticmethod
    def exported_run(inputs: Tensor, padding: Tensor, hidden: Tensor, cell: Tensor,
                     weights: list[list[Tensor]]) -> tuple[Tensor, Tensor]:
        """One layer, its D directions at once, while torch.export traces (in place of packing): torch's LSTM call,
        one ONNX ``LSTM`` operator. It returns the last step's memory cells only, so padded steps hold them: the
        padding indicator p_t is one more input column, weighted +SATURATED into f and −SATURATED into i, so there
        σ(f) = 1, σ(i) = 0 and c_t = c_{t−1}; real steps (p_t = 0) are unchanged. The backward direction reads the
        padding first, from zeros: held at c = 0, h = σ(o) tanh(0) = 0, it reaches each row's last real token in the
        zero state (so a bidirectional layer must start from zeros). inputs [B, T, I], padding [B, T, 1] (right
        padding), hidden and cell [D, B, H], weights [W_ih, W_hh, b_ih, b_hh] per direction -> (h_t [B, T, D H],
        each direction's c at the end of each row's real tokens [D, B, H])."""
        size = hidden.shape[-1]
        hold = hidden.new_tensor([-SATURATED, SATURATED, 0.0, 0.0]).repeat_interleave(size).unsqueeze(1)  # [i, f, g, o]
        flat = [weight for w_ih, w_hh, b_ih, b_hh in weights
                for weight in (torch.cat([w_ih, hold], 1), w_hh, b_ih, b_hh)]
        outputs, _, last_cells = torch.lstm(torch.cat([inputs, padding.to(inputs.dtype)], -1), (hidden, cell), flat,
                                            True, 1, 0.0, False, len(weights) == 2, True)
        return outputs, last_cells

    @staticmethod
    def step(input_gates: Tensor, hidden_gates: Tensor, hidden: Tensor, cell: Tensor) -> tuple[Tensor, Tensor]:
        """input_gates, hidden_gates [B, 4H]; hidden, cell [B, H] -> (h', c')."""
        in_gate, forget_gate, candidate, out_gate = (input_gates + hidden_gates).split(hidden.shape[-1], -1)
        cell = torch.sigmoid(forget_gate) * cell + torch.sigmoid(in_gate) * torch.tanh(candidate)
        return torch.sigmoid(out_gate) * torch.tanh(cell), cell


@RNN_TYPES.register("rnn")
class TanhCell:
    """h' = tanh(W_ih x + b_ih + W_hh h + b_hh) (Elman)."""

    module = nn.RNN
    has_memory_cell = False
    fused_run = torch.rnn_tanh
    exported_run = None  # fused_run exports as it is (onnx/export.py, _recurrences_of_any_length)

    @staticmethod
    def step(input_gates: Tensor, hidden_gates: Tensor, hidden: Tensor, cell: None) -> tuple[Tensor, None]:
        """input_gates, hidden_gates [B, H] -> (h', None)."""
        return torch.tanh(input_gates + hidden_gates), None


class RecurrentStack(nn.Module):
    """``num_layers`` single-layer RNNs, dropout between layers, optionally bidirectional.

    Layer l is ``layers[l]`` (an ``nn.GRU``/``nn.LSTM``/``nn.RNN`` of one layer), so every layer's
    output is available and the step mode can read its weights directly. ``fused_while_exporting=False`` makes a
    stack run its step loop (a ``torch.while_loop``) while torch.export traces, not torch's RNN functions: their
    looped versions serve one source length per graph (a second stack over another length, e.g. a token's spelling,
    would be guarded apart from the source's).
    """

    def __init__(
        self, rnn_type: str, input_size: int, hidden_size: int, num_layers: int,
        dropout: float = 0.0, bidirectional: bool = False, *, fused_while_exporting: bool = True,
    ):
        super().__init__()
        self.rnn_type = rnn_type
        self.cell = RNN_TYPES[rnn_type]
        self.hidden_size = hidden_size
        self.num_directions = 2 if bidirectional else 1
        self.fused_while_exporting = fused_while_exporting
        module = self.cell.module
        layer_input_sizes = [input_size] + [hidden_size * self.num_directions] * (num_layers - 1)
        self.layers = nn.ModuleList(
            module(size, hidden_size, batch_first=True, bidirectional=bidirectional) for size in layer_input_sizes
        )
        self.dropout = nn.Dropout(dropout)

    @property
    def num_layers(self) -> int:
        return len(self.layers)

    def forward(
        self, inputs: Tensor, state: RecurrentState | None = None, lengths: Tensor | None = None
    ) -> tuple[list[Tensor], RecurrentState]:
        """Run every layer over the whole sequence.

        inputs [B, T, I]; state per layer [layers * directions, B, H] or None (zeros); lengths [B]:
        each row's real tokens when the batch is right-padded (outputs are then 0 on padding, and
        the final state is the one at each row's last real token), None when every row is real.
        Returns each layer's outputs [B, T, H * directions] and the final state [layers * directions, B, H].
        """
        if lengths is not None and (torch.is_grad_enabled() or self.cell.fused_run is not None or exporting()):
            return self._run_padded(inputs, state, lengths)
        if state is not None and self.num_directions == 1 and inputs.shape[1] == 1:
            return self._one_step(inputs, state)  # a generate() step: the step mode has less overhead
        layer_input = inputs
        if lengths is not None:  # an all-padding row runs one step (packing refuses length 0); its outputs are 0
            layer_input = pack_padded_sequence(inputs, lengths.clamp(min=1).cpu(), batch_first=True,
                                               enforce_sorted=False)
        outputs, finals, cells = [], [], []
        for index, layer in enumerate(self.layers):
            if index > 0:
                layer_input = self._drop(layer_input)
            layer_input, final = layer(layer_input, self._layer_state(state, index))
            outputs.append(layer_input)
            if isinstance(final, tuple):
                final, cell = final
                cells.append(cell)
            finals.append(final)
        if lengths is not None:
            outputs = [pad_packed_sequence(out, batch_first=True, total_length=inputs.shape[1])[0] for out in outputs]
        return outputs, RecurrentState(torch.cat(finals), torch.cat(cells) if cells else None)

    def _drop(self, inputs: Tensor | PackedSequence) -> Tensor | PackedSequence:
        if isinstance(inputs, PackedSequence):
            return inputs._replace(data=self.dropout(inputs.data))
        return self.dropout(inputs)

    def _layer_state(self, state: RecurrentState | None, index: int) -> Tensor | tuple[Tensor, Tensor] | None:
        """Layer ``index``'s rows of the state, [directions, B, H] (a pair for LSTM)."""
        if state is None:
            return None
        rows = slice(index * self.num_directions, (index + 1) * self.num_directions)
        return state.hidden[rows] if state.cell is None else (state.hidden[rows], state.cell[rows])

    def _run_padded(
        self, inputs: Tensor, state: RecurrentState | None, lengths: Tensor
    ) -> tuple[list[Tensor], RecurrentState]:
        """``forward`` for a right-padded batch without packing: each layer one step loop for its directions
        with autograd on (``_run_step_loop``), else one call of torch's RNN function per direction
        (``_run_fused_directions``: GRU/RNN, while torch.export traces too), or while torch.export traces one call
        of the cell's ``exported_run`` per layer (``_run_exported_layer``: LSTM).

        An all-padding row (length 0) runs as length 1, as packing would.
        """
        lengths = lengths.clamp(min=1)
        steps = inputs.shape[1]
        padding = (torch.arange(steps, device=inputs.device) >= lengths.unsqueeze(1)).unsqueeze(-1)  # [B, T, 1]
        export_runs = exporting() and self.fused_while_exporting and not torch.is_grad_enabled()
        whole_layers = export_runs and self.cell.exported_run is not None and (
            state is None or self.num_directions == 1)  # exported_run's backward direction starts from zeros
        fused = (export_runs and self.cell.exported_run is None) or (
            not exporting() and not torch.is_grad_enabled() and self.cell.fused_run is not None)
        run_directions = self._run_fused_directions if fused else self._run_step_loop
        outputs, finals, cells = [], [], []
        layer_input = inputs
        for index, layer in enumerate(self.layers):
            if index > 0:
                layer_input = self.dropout(layer_input)
            if whole_layers:
                layer_input, layer_finals, layer_cells = self._run_exported_layer(
                    layer, layer_input, self._layer_state(state, index), lengths, padding)
                finals.append(layer_finals)
                cells.append(layer_cells)
                outputs.append(layer_input)
                continue
            runs = [layer_input] + ([reverse_within_lengths(layer_input, lengths)] if self.num_directions == 2 else [])
            run_outputs, run_cells = run_directions(layer, runs, self._layer_state(state, index), lengths)
            finals.extend(at_last_steps(run_output, lengths) for run_output in run_outputs)
            if run_cells is not None:
                cells.extend(run_cells)
            direction_outputs = [run_outputs[0], *(reverse_within_lengths(out, lengths) for out in run_outputs[1:])]
            layer_input = torch.cat(direction_outputs, dim=-1).masked_fill(padding, 0.0)
            outputs.append(layer_input)
        return outputs, RecurrentState(torch.cat(finals), torch.cat(cells) if cells else None)

    def _run_fused_directions(
        self, layer: nn.RNNBase, runs: list[Tensor], layer_state: Tensor | None, lengths: Tensor
    ) -> tuple[list[Tensor], None]:
        """Each direction of a GRU/RNN layer as one call of torch's RNN function: runs [B, T, I] per direction
        -> outputs [B, T, H] (lengths: unread, each row's last real step is read by the caller)."""
        run_outputs = []
        for direction, run_input in enumerate(runs):
            initial = (run_input.new_zeros(1, run_input.shape[0], self.hidden_size) if layer_state is None
                       else layer_state[direction:direction + 1].contiguous())
            weights = self._direction_weights(layer, direction)
            run_outputs.append(self.cell.fused_run(run_input, initial, weights, True, 1, 0.0, self.training,
                                                   False, True)[0])
        return run_outputs, None

    def _run_exported_layer(
        self, layer: nn.RNNBase, layer_input: Tensor, layer_state: tuple[Tensor, Tensor] | None, lengths: Tensor,
        padding: Tensor,
    ) -> tuple[Tensor, Tensor, Tensor]:
        """One layer as one call of the cell's ``exported_run`` (LSTM, while torch.export traces): layer_input
        [B, T, I] -> (outputs [B, T, D H], 0 on padding; final h [D, B, H]: the forward direction's at each row's
        last real token, the backward one's at its first; final c [D, B, H])."""
        if layer_state is None:
            hidden = layer_input.new_zeros(self.num_directions, layer_input.shape[0], self.hidden_size)
            layer_state = hidden, torch.zeros_like(hidden)
        weights = [self._direction_weights(layer, direction) for direction in range(self.num_directions)]
        outputs, last_cells = self.cell.exported_run(layer_input, padding, *layer_state, weights)
        size = self.hidden_size
        finals = [at_last_steps(outputs[..., :size], lengths)]
        if self.num_directions == 2:
            finals.append(outputs[:, :1, size:].transpose(0, 1))
        return outputs.masked_fill(padding, 0.0), torch.cat(finals), last_cells

    def _run_step_loop(
        self, layer: nn.RNNBase, runs: list[Tensor], layer_state: Tensor | tuple[Tensor, Tensor] | None,
        lengths: Tensor,
    ) -> tuple[list[Tensor], list[Tensor] | None]:
        """The directions of a layer in one step loop (the encoder of ``reference.encode``, each direction over each
        sentence alone): runs [B, T, I] per direction, lengths [B] (≥ 1) -> per direction outputs h_t [B, T, H],
        and for an LSTM its cell at each row's last real step [1, B, H]. W_ih x_t + b_ih is one product per
        direction before the loop; each step is one batched product W_hh h + b_hh for the D directions and one
        ``cell.step`` on [D, B, gates * H]; a ``torch.while_loop`` while torch.export traces (``_while_steps``: a
        stack built with ``fused_while_exporting=False``)."""
        weights = [self._direction_weights(layer, direction) for direction in range(len(runs))]
        input_gates = torch.stack([nn.functional.linear(run, w_ih, b_ih)
                                   for run, (w_ih, _, b_ih, _) in zip(runs, weights)])  # [D, B, T, gates * H]
        hidden_weights = torch.stack([w_hh for _, w_hh, _, _ in weights]).transpose(1, 2)  # [D, H, gates * H]
        hidden_biases = torch.stack([b_hh for *_, b_hh in weights]).unsqueeze(1)  # [D, 1, gates * H]
        if isinstance(layer_state, tuple):
            hidden, cell = layer_state
        else:
            hidden = (runs[0].new_zeros(len(runs), runs[0].shape[0], self.hidden_size) if layer_state is None
                      else layer_state)
            cell = torch.zeros_like(hidden) if self.cell.has_memory_cell else None

        def step(step_gates: Tensor, hidden: Tensor, cell: Tensor | None) -> tuple[Tensor, Tensor | None]:
            return self.cell.step(step_gates, torch.baddbmm(hidden_biases, hidden, hidden_weights), hidden, cell)

        if exporting():
            hiddens, cells = _while_steps(step, input_gates, hidden, cell)
        else:
            hiddens, cells = [], []
            for step_gates in input_gates.unbind(2):
                hidden, cell = step(step_gates, hidden, cell)
                hiddens.append(hidden)
                cells.append(cell)
            hiddens, cells = torch.stack(hiddens, dim=2), None if cell is None else torch.stack(cells, dim=2)
        return list(hiddens.unbind(0)), None if cells is None else [at_last_steps(c, lengths) for c in cells.unbind(0)]

    @staticmethod
    def _direction_weights(layer: nn.RNNBase, direction: int) -> list[Tensor]:
        """[W_ih, W_hh, b_ih, b_hh] of one direction of a one-layer RNN module."""
        suffix = "_reverse" if direction else ""
        return [getattr(layer, f"{name}_l0{suffix}") for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]

    def _one_step(self, inputs: Tensor, state: RecurrentState) -> tuple[list[Tensor], RecurrentState]:
        """``forward`` for inputs [B, 1, I] through the step mode: the same outputs and final state."""
        first = self.layers[0]
        first_input_gates = nn.functional.linear(inputs[:, 0], first.weight_ih_l0, first.bias_ih_l0)
        new_state = self.step(first_input_gates, self.unbind_state(state), self.step_weights())
        return [hidden.unsqueeze(1) for hidden, _ in new_state], self.stack_state(new_state)

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
            new_state.append(self.cell.step(input_gates, hidden_linear(hidden), hidden, cell))
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


def at_last_steps(sequences: Tensor, lengths: Tensor) -> Tensor:
    """Each row's vector at its last real step: sequences [B, T, H], lengths [B] (≥ 1) -> [1, B, H]."""
    return sequences[torch.arange(sequences.shape[0], device=sequences.device), lengths - 1].unsqueeze(0)


def _while_steps(step, input_gates: Tensor, hidden: Tensor, cell: Tensor | None) -> tuple[Tensor, Tensor | None]:
    """``RecurrentStack._run_step_loop``'s loop as a ``torch.while_loop``, which torch.export traces for any number
    of steps (a Python loop would be unrolled over the example's): input_gates [D, B, T, gates * H]; hidden, cell
    [D, B, H] (cell None without a memory cell) -> every step's h_t [D, B, T, H] and c_t (or None)."""
    steps = input_gates.shape[2]
    states = (hidden,) if cell is None else (hidden, cell)
    count = len(states)

    def before_the_end(index: Tensor, *carried: Tensor) -> Tensor:
        return index < steps

    def one_step(index: Tensor, *carried: Tensor) -> tuple[Tensor, ...]:
        outputs, (hidden, *cell) = carried[:count], carried[count:]  # the while_loop carries no None
        at = index.view(1)
        new_states = step(input_gates.index_select(2, at).squeeze(2), hidden, *cell or [None])[:count]
        outputs = [output.index_copy(2, at, state.unsqueeze(2)) for output, state in zip(outputs, new_states)]
        return index + 1, *outputs, *new_states

    outputs = [state.new_zeros(*state.shape[:2], steps, state.shape[2]) for state in states]
    start = torch.tensor(0, device=input_gates.device)
    _, *carried = torch.while_loop(before_the_end, one_step, (start, *outputs, *states))
    return carried[0], carried[1] if cell is not None else None
