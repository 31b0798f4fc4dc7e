"""The models as the papers write them: one source at a time, one target token at a time, no fast path.

This is the plain computation the fast paths are tested against (``tests/test_reference.py``), and the place to read
the equations in order. Every function takes a model (``BahdanauForConditionalGeneration``, in eval mode) and reads
its parameters; nothing here is used by the model itself.

    encode            h_j = [→h_j; ←h_j], each layer a torch RNN over the sentence alone (no padding, no packing)
    bahdanau_decoder  Bahdanau et al. (2015), appendix A:
                          e_ij = a(s_{i-1}, h_j),  α_ij = softmax_j(e_ij),  c_i = Σ_j α_ij h_j
                          s_i = f(s_{i-1}, [E y_{i-1}; c_i])
                          t_i = φ(W_r [s_i; c_i; E y_{i-1}]),  p(y_i | y_<i, x) = softmax(W_o t_i)
    luong_decoder     Luong et al. (2015), §3:
                          h_t = f(h_{t-1}, [E y_{t-1}; h̃_{t-1}])     (h̃_{t-1} only with input feeding)
                          a_t(s) = softmax_s(score(h_t, h̄_s)),  c_t = Σ_s a_t(s) h̄_s
                          h̃_t = tanh(W_c [c_t; h_t]),  p(y_t | y_<t, x) = softmax(W_s h̃_t)
    cho_decoder       Cho et al. (2014), §2.2: h_t = f(h_{t-1}, [E y_{t-1}; C]),  t = φ(W_r [h_t; C; E y_{t-1}])
    sutskever_decoder Sutskever et al. (2014): h_t = f(h_{t-1}, E y_{t-1}),  t = φ(W_r h_t)
    logits            the decoder of the model's config, projected: [B, T, V]

f is one step of the model's stacked cells through torch's own ``nn.GRU``/``nn.LSTM``/``nn.RNN`` layers (not the
model's ``RecurrentStack.step``); scores and φ are the model's attention mechanism (its plain ``forward``, which
reads ``_score``) and deep output, whose own equations are tested against hand-computed values.
"""

import torch
from torch import Tensor

from .encoder import BahdanauEncoderOutput
from .state import EncoderMemory

__all__ = ["bahdanau_decoder", "cho_decoder", "encode", "logits", "luong_decoder", "sutskever_decoder"]


def encode(model, input_ids: Tensor, attention_mask: Tensor) -> BahdanauEncoderOutput:
    """Every sentence alone through the encoder's layers: annotations [B, S, D] (0 on padding), each layer's final
    states [B, layers, D] (forward after the last token, backward at the first). Masks may be left- or
    right-padded."""
    encoder = model.model.encoder
    rows, finals, cells = [], [], []
    for ids, mask in zip(input_ids, attention_mask.bool()):
        layer_input = encoder.embed_tokens(ids[mask])[None]  # [1, L, E], the real tokens only
        if encoder.reverse_source:
            layer_input = layer_input.flip(1)
        row_finals, row_cells = [], []
        for layer in encoder.rnn.layers:
            layer_input, final = layer(layer_input)
            hidden, cell = final if isinstance(final, tuple) else (final, None)
            row_finals.append(hidden.transpose(0, 1).reshape(1, -1))  # [directions, 1, H] -> [1, directions·H]
            row_cells.append(None if cell is None else cell.transpose(0, 1).reshape(1, -1))
        if encoder.reverse_source:
            layer_input = layer_input.flip(1)
        annotations = layer_input.new_zeros(1, ids.shape[0], layer_input.shape[-1])
        annotations[:, mask] = layer_input
        rows.append(annotations)
        finals.append(torch.stack(row_finals, dim=1))
        cells.append(None if row_cells[0] is None else torch.stack(row_cells, dim=1))
    return BahdanauEncoderOutput(
        last_hidden_state=torch.cat(rows), final_hidden_state=torch.cat(finals),
        final_cell_state=None if cells[0] is None else torch.cat(cells),
    )


def logits(model, input_ids: Tensor, attention_mask: Tensor, decoder_input_ids: Tensor) -> Tensor:
    """log-linear scores of every target position [B, T, V], by the decoder the model's config names."""
    config = model.config
    if config.attention_type == "none":
        decoder = cho_decoder if config.context_mode == "cho" else sutskever_decoder
    else:
        decoder = bahdanau_decoder if config.decoder_style == "bahdanau" else luong_decoder
    outputs = [decoder(model, input_ids[row:row + 1], attention_mask[row:row + 1], decoder_input_ids[row:row + 1])
               for row in range(input_ids.shape[0])]
    return model.lm_head(torch.cat(outputs))


def _start(model, input_ids: Tensor, attention_mask: Tensor):
    """The encoder's outputs for one sentence, its real annotations h_j [1, L, D] and the decoder's initial state
    (the bridge) as one (h, c) per layer, each [1, 1, H]."""
    encoded = encode(model, input_ids, attention_mask)
    real = attention_mask[0].bool()
    annotations = encoded.last_hidden_state[:, real]
    state = model.model.decoder.bridge(encoded, EncoderMemory(annotations, torch.ones_like(real[real])[None]))
    layers = [(state.hidden[layer:layer + 1], None if state.cell is None else state.cell[layer:layer + 1])
              for layer in range(state.hidden.shape[0])]
    return encoded, annotations, layers


def _cell_step(model, rnn_input: Tensor, layers: list) -> tuple[Tensor, list]:
    """f: one step of the stacked decoder RNN, rnn_input [1, I] -> the top layer's output [1, H], new states."""
    new_layers = []
    for layer, (hidden, cell) in zip(model.model.decoder.rnn.layers, layers):
        output, state = layer(rnn_input[:, None], hidden if cell is None else (hidden, cell))
        new_layers.append(state if isinstance(state, tuple) else (state, None))
        rnn_input = output[:, 0]
    return rnn_input, new_layers


def _attend(model, query: Tensor, annotations: Tensor) -> Tensor:
    """c = Σ_j α_j h_j with α = softmax_j(score(query, h_j)), over one sentence's real annotations [1, L, D]."""
    mask = torch.ones(annotations.shape[:2], dtype=torch.bool, device=annotations.device)
    context, _ = model.model.decoder.attention(query, annotations, annotations, mask)
    return context


def bahdanau_decoder(model, input_ids: Tensor, attention_mask: Tensor, decoder_input_ids: Tensor) -> Tensor:
    """One sentence [1, S] -> t_i [1, T, output_size]: attend with s_{i-1}, then update (Bahdanau et al.)."""
    decoder = model.model.decoder
    _, annotations, layers = _start(model, input_ids, attention_mask)
    pre_outputs = []
    for token in decoder_input_ids[0]:
        embedded = decoder.embed_tokens(token[None])  # E y_{i-1} [1, E]
        context = _attend(model, layers[-1][0][0], annotations)  # c_i from s_{i-1}
        state, layers = _cell_step(model, torch.cat([embedded, context], dim=-1), layers)  # s_i
        pre_outputs.append(decoder.readout(torch.cat([state, context, embedded], dim=-1)))  # t_i
    return torch.stack(pre_outputs, dim=1)


def luong_decoder(model, input_ids: Tensor, attention_mask: Tensor, decoder_input_ids: Tensor) -> Tensor:
    """One sentence [1, S] -> h̃_t [1, T, output_size]: update, then attend with h_t (Luong et al.)."""
    decoder = model.model.decoder
    _, annotations, layers = _start(model, input_ids, attention_mask)
    feed = annotations.new_zeros(1, model.config.output_size)  # h̃_0
    attentional = []
    for token in decoder_input_ids[0]:
        embedded = decoder.embed_tokens(token[None])
        rnn_input = torch.cat([embedded, feed], dim=-1) if model.config.input_feeding else embedded
        state, layers = _cell_step(model, rnn_input, layers)  # h_t
        context = _attend(model, state, annotations)  # c_t from h_t
        feed = decoder.readout(torch.cat([context, state], dim=-1))  # h̃_t = tanh(W_c [c_t; h_t])
        attentional.append(feed)
    return torch.stack(attentional, dim=1)


def cho_decoder(model, input_ids: Tensor, attention_mask: Tensor, decoder_input_ids: Tensor) -> Tensor:
    """One sentence [1, S] -> t [1, T, output_size]: the summary C at every step and at the output (Cho et al.)."""
    decoder = model.model.decoder
    encoded, _, layers = _start(model, input_ids, attention_mask)
    summary = encoded.final_hidden_state[:, -1]  # C [1, D]
    pre_outputs = []
    for token in decoder_input_ids[0]:
        embedded = decoder.embed_tokens(token[None])
        state, layers = _cell_step(model, torch.cat([embedded, summary], dim=-1), layers)
        pre_outputs.append(decoder.readout(torch.cat([state, summary, embedded], dim=-1)))
    return torch.stack(pre_outputs, dim=1)


def sutskever_decoder(model, input_ids: Tensor, attention_mask: Tensor, decoder_input_ids: Tensor) -> Tensor:
    """One sentence [1, S] -> t [1, T, output_size]: the source only through the initial state (Sutskever et al.)."""
    decoder = model.model.decoder
    _, _, layers = _start(model, input_ids, attention_mask)
    pre_outputs = []
    for token in decoder_input_ids[0]:
        state, layers = _cell_step(model, decoder.embed_tokens(token[None]), layers)
        pre_outputs.append(decoder.readout(state))
    return torch.stack(pre_outputs, dim=1)
