"""The models as the papers write them: one source at a time, one target token at a time, no fast path.

This is the plain computation the fast paths are tested against (``tests/test_decoder.py``; scopes, modes, coverage
and copying in ``tests/test_scope.py``, the pointer network in ``tests/test_pointer_network.py``), and the place to
read the equations in order. Every function takes a model (``BahdanauForConditionalGeneration``, in eval mode) and
reads its parameters; nothing here is used by the model itself.

    meta_embedding    with ``meta_embedding_sources``, each token's embedding (Kiela et al. 2018):
                          w'_ij = P_j w_ij + b_j,  α_ij = softmax_j(aᵀ w'_ij + b),  x̃_i = Σ_j α_ij w'_ij
    encode            h_j = [→h_j; ←h_j], each layer a torch RNN over the sentence alone (no padding, no packing)
    encoder_self_attention  with ``encoder_self_attention``, over the sentence's annotations (Cheng et al. 2016):
                          e_jk = score(h_j, h_k),  α_jk = softmax_k(e_jk),  c_j = Σ_k α_jk h_k,
                          h'_j = tanh(W_s [h_j; c_j])
    bahdanau_decoder  Bahdanau et al. (2015), appendix A:
                          e_ij = a(s_{i-1}, h_j),  α_ij = softmax_j(e_ij),  c_i = Σ_j α_ij h_j
                          s_i = f(s_{i-1}, [E y_{i-1}; c_i])
                          t_i = φ(W_r [s_i; c_i; E y_{i-1}]),  p(y_i | y_<i, x) = softmax(W_o t_i)
                      with ``context_gate`` (Xu et al. 2015, §4.2.1; Luong style too), β_i c_i in place of c_i:
                          β_i = σ(w_βᵀ q_i + b_β), q_i the attention's query (s_{i-1}; Luong: h_t)
    mean_cell_state   with ``bridge="mean_cell"`` (Xu et al.'s f_init): ā = (1/L) Σ_j a_j,
                          h_0 = tanh(W_s ā + b_s),  c_0 = tanh(W_c ā + b_c)   (c_0 for an LSTM only)
    luong_decoder     Luong et al. (2015), §3:
                          h_t = f(h_{t-1}, [E y_{t-1}; h̃_{t-1}])     (h̃_{t-1} only with input feeding)
                          a_t(s) = softmax_s(score(h_t, h̄_s)),  c_t = Σ_s a_t(s) h̄_s
                          h̃_t = tanh(W_c [c_t; h_t]),  p(y_t | y_<t, x) = softmax(W_s h̃_t)
    _attend           c_t = Σ_j α_tj h_j for the model's score, scope, mode and coverage (one step, one sentence):
                          global     α_tj = softmax_j(e_tj)
                          local-m/p  α_tj = softmax_{|j − p_t| ≤ D}(e_tj) · exp(−(j − p_t)² / 2σ²), σ = D/2, p_t = t or
                                     L · sigmoid(v_pᵀ tanh(W_p q_t))                        (Luong et al. 2015, §3.2)
                          monotonic  scan j = t_{i−1}, t_{i−1} + 1, …: stop at the first p_ij = σ(g e_ij + r) ≥ ½
                                     (α_i its one-hot, 0 if none)                           (Raffel et al. 2017)
                          hard       α_t = one-hot of argmax_j α_tj (both hard modes, at inference)
                          coverage   e_tj = v_aᵀ tanh(W_a q_t + U_a h_j + w_c c_tj), c_t = Σ_{t'<t} α_t'
                          location-aware  e_tj = β wᵀ tanh(W q_t + V h_j + b + U f_tj),
                                     f_tj = Σ_o F_o α_{t−1, j+o−(r−1)/2} (α = 0 outside the sentence), α_0 uniform
                                     (δ_j0 with a monotonic scope)                          (Chorowski et al. 2015)
                          smoothing  σ(e_tj) / Σ_k σ(e_tk) in place of each softmax above (``location_smoothing``)
    monotonic_expected_alignment  Raffel et al.'s training alignment, by its recurrence (eq. 10 and 11)
    logits (copy_attention)  See et al. (2017), the pointer-generator, one word at a time:
                          p_gen = σ(w_sᵀ s_t + w_cᵀ c_t + w_xᵀ E y_{t-1} + b)
                          P(w) = (p_gen P_vocab(w) + (1 − p_gen) Σ_{j: x_j = w} α_tj) / (p_gen + (1 − p_gen) Σ_j α_tj)
    cho_decoder       Cho et al. (2014), §2.2: h_t = f(h_{t-1}, [E y_{t-1}; C]),  t = φ(W_r [h_t; C; E y_{t-1}])
    sutskever_decoder Sutskever et al. (2014): h_t = f(h_{t-1}, E y_{t-1}),  t = φ(W_r h_t)
    logits            the decoder of the model's config, projected: [B, T, V] (with copy_attention log P(w) over
                      the extended vocabulary [B, T, V + n])
    pointer_network   Vinyals et al. (2015), a ``BahdanauForPointerNetwork``, one input sequence at a time:
                          e = [e_0; h_1 … h_L],  d_i = f(d_{i-1}, [x_{C_{i-1}}; h̃_{i-1}])   (x_{C_0} the start input)
                          p(C_i = j | C_<i, P) = a_i(j), the Luong decoder's attention over e from d_i
    sequence_classifier  a ``BahdanauForSequenceClassification``, one document at a time (flat or HAN), pooling
                      each text H [S, D] with its ``pooling_type`` (``tests/test_pooling_options.py``):
                          context_vector     α_j = softmax_j(u_wᵀ tanh(W h_j + b)),  s = Σ_j α_j h_j
                                                                                                      (Yang et al. 2016)
                          self_attentive     A = softmax(W_s2 tanh(W_s1 Hᵀ)) [r, S],  s = vec(A H),
                                             P = ‖A Aᵀ − I‖²_F                                        (Lin et al. 2017)
                          multi_dimensional  α_jd = softmax_j((W_2 tanh(W_1 h_j + b_1))_d),  s_d = Σ_j α_jd h_jd
                                                                                                      (Shen et al. 2018)

f is one step of the model's stacked cells through torch's own ``nn.GRU``/``nn.LSTM``/``nn.RNN`` layers (not the
model's ``RecurrentStack.step``); scores and φ are the model's attention mechanism (its plain ``forward``, which
reads ``_score``) and deep output, whose own equations are tested against hand-computed values.
    memory_network    Sukhbaatar et al. (2015), one story and question at a time (MemN2N):
                          u^1 = Σ_j l_j ⊙ B q_j,  m_i = Σ_j l_j ⊙ A^k x_ij + T_A^k(t_i),  c_i likewise with C^k, T_C^k
                          p_i = softmax_i(u^kᵀ m_i),  o^k = Σ_i p_i c_i,  u^{k+1} = u^k + o^k (layer-wise H u^k + o^k)
                          â = W u^{K+1};  l_kj = (1 − j/J) − (k/d)(1 − 2j/J) (PE) or 1 (bag of words)
    doubly_stochastic_regulariser  Xu et al. (2015), eq. 14's penalty for one sequence: Σ_j (1 − Σ_t α_tj)² over
                      the real source positions j and the kept target steps t
    reinforce_surrogate  Xu et al. (2015), §4.1, one sequence with sampled positions j̃_t ~ α_t: the loss whose
                      gradient is the negated estimator, −log p(y | j̃, x) − (R − b) Σ_t log α_{t,j̃_t} − λ_e Σ_t H(α_t)
    visual_question_answering  Lu et al. (2016), one question and image at a time: the word, phrase and question
                      levels (the LSTM by its gate equations), v_n = tanh(W_i a_n + b_i), each co-attention form
                      (parallel's affinity C = tanh(Qᵀ W_b V), alternating's ŝ, v̂, q̂) and the recursive answer MLP
    text_coattention  Lu et al. (2016)'s co-attention over a question and a passage (its BiLSTM or its embeddings),
                      one pair at a time, word by word: every level, form and the answer MLP
"""


from types import SimpleNamespace

import torch
from torch import Tensor

from .modeling.encoder import BahdanauEncoderOutput
from .modeling.state import EncodedSource

__all__ = ["POOLING_EQUATIONS", "bahdanau_decoder", "cho_decoder", "context_vector_pooling", "encode",
           "doubly_stochastic_regulariser", "encoder_self_attention", "logits", "luong_decoder", "mean_cell_state",
           "monotonic_expected_alignment", "multi_dimensional_pooling", "pointer_network", "reinforce_surrogate",
           "self_attentive_pooling", "sequence_classifier", "sutskever_decoder"]


def encode(model, input_ids: Tensor | None, attention_mask: Tensor,
           inputs_embeds: Tensor | None = None) -> BahdanauEncoderOutput:
    """Every sentence alone through the encoder's layers: annotations [B, S, D] (0 on padding), each layer's final
    states [B, layers, D] (forward after the last token, backward at the first). Masks may be left- or
    right-padded. ``inputs_embeds`` [B, S, E] are read instead of the ids' embeddings when given."""
    encoder = model.model.encoder
    rows, finals, cells = [], [], []
    embedded = encoder.embed_tokens(input_ids) if inputs_embeds is None else inputs_embeds
    for embeddings, mask in zip(embedded, attention_mask.bool()):
        layer_input = embeddings[mask][None]  # [1, L, E], the real tokens only
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
        if encoder.self_attention is not None:  # h'_j = tanh(W_s [h_j; c_j])
            layer_input = encoder_self_attention(encoder.self_attention, layer_input[0])[0][None]
        annotations = layer_input.new_zeros(1, mask.shape[0], layer_input.shape[-1])
        annotations[:, mask] = layer_input
        rows.append(annotations)
        finals.append(torch.stack(row_finals, dim=1))
        cells.append(None if row_cells[0] is None else torch.stack(row_cells, dim=1))
    return BahdanauEncoderOutput(
        last_hidden_state=torch.cat(rows), final_hidden_state=torch.cat(finals),
        final_cell_state=None if cells[0] is None else torch.cat(cells),
    )


def logits(model, input_ids: Tensor, attention_mask: Tensor, decoder_input_ids: Tensor,
           copy_input_ids: Tensor | None = None) -> Tensor:
    """log-linear scores of every target position [B, T, V], by the decoder the model's config names; with
    ``copy_attention`` log P(w) of the mixture [B, T, V + n], copying from ``copy_input_ids`` (default ``input_ids``)
    and reading decoder inputs ≥ V as ``unk_token_id``."""
    config = model.config
    if config.attention_type == "none":
        decoder = cho_decoder if config.context_mode == "cho" else sutskever_decoder
    else:
        decoder = bahdanau_decoder if config.decoder_style == "bahdanau" else luong_decoder
    if not config.copy_attention:
        outputs = [decoder(model, input_ids[row:row + 1], attention_mask[row:row + 1], decoder_input_ids[row:row + 1])
                   for row in range(input_ids.shape[0])]
        return model.lm_head(torch.cat(outputs))
    copy_input_ids = input_ids if copy_input_ids is None else copy_input_ids
    width = max(config.vocab_size, int(copy_input_ids.max()) + 1)
    read = decoder_input_ids.masked_fill(decoder_input_ids >= config.vocab_size, config.unk_token_id)
    rows = []
    for row in range(input_ids.shape[0]):
        steps = []
        pre_outputs = decoder(model, input_ids[row:row + 1], attention_mask[row:row + 1], read[row:row + 1], steps)
        sources = copy_input_ids[row][attention_mask[row].bool()]
        rows.append(torch.stack([_pointer_generator(model, pre_output, weights, p_gen, sources, width)
                                 for pre_output, (weights, p_gen) in zip(pre_outputs[0], steps)]))
    return torch.stack(rows)


def image_to_text_logits(model, images: list[Tensor], decoder_input_ids: Tensor) -> Tensor:
    """Xu et al.'s decoder, one image at a time: images, each [1, C, H_b, W_b] without padding -> logits [B, T, V], by
    the decoder the config names, attending over the image's L = H'·W' region annotations as over a sentence's."""
    decoder = bahdanau_decoder if model.config.decoder_style == "bahdanau" else luong_decoder
    return model.lm_head(torch.cat([decoder(model, image, None, decoder_input_ids[row:row + 1])
                                    for row, image in enumerate(images)]))


def _pointer_generator(model, pre_output: Tensor, weights: Tensor, p_gen: Tensor, sources: Tensor,
                       width: int) -> Tensor:
    """log P(w) [width] of one step: pre_output t [O], weights α [L], p_gen (a scalar), the source ids x_j [L]."""
    probabilities = pre_output.new_zeros(width)
    probabilities[:model.config.vocab_size] = p_gen * torch.softmax(model.lm_head(pre_output), dim=-1)
    for alpha, word in zip(weights, sources.tolist()):
        probabilities[word] += (1 - p_gen) * alpha
    total = p_gen + (1 - p_gen) * weights.sum()
    return probabilities.log() - total.log()


def _p_gen(model, state: Tensor, context: Tensor, embedded: Tensor) -> Tensor:
    """p_gen = σ(w_sᵀ s_t + w_cᵀ c_t + w_xᵀ x_t + b) from [1, H], [1, D], [1, E] (the gate's weight is [w_s; w_c; w_x])."""
    gate = model.model.decoder.generation_gate
    w_s, w_c, w_x = gate.weight[0].split([state.shape[-1], context.shape[-1], embedded.shape[-1]])
    return torch.sigmoid(w_s @ state[0] + w_c @ context[0] + w_x @ embedded[0] + gate.bias[0])


def _start(model, input_ids: Tensor, attention_mask: Tensor | None):
    """The encoder's outputs for one sentence, its real annotations h_j [1, L, D] and the decoder's initial state
    (the bridge) as one (h, c) per layer, each [1, 1, H]. An image-to-text model's "sentence" is one image's pixels
    [1, C, H, W] (no padding): its region annotations a_i come from the model's encoder (``image_encoder``)."""
    if input_ids.dtype.is_floating_point:
        encoded = model.model.encoder(input_ids)
        attention_mask = encoded.attention_mask
    else:
        encoded = encode(model, input_ids, attention_mask)
    real = attention_mask[0].bool()
    annotations = encoded.last_hidden_state[:, real]
    if model.config.bridge == "mean_cell":
        return encoded, annotations, mean_cell_state(model.model.decoder.bridge, annotations[0])
    state = model.model.decoder.bridge(encoded, EncodedSource(annotations, torch.ones_like(real[real])[None]))
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


def _gate(model, query: Tensor, context: Tensor) -> Tensor:
    """β c with Xu et al.'s gating scalar β = σ(w_βᵀ q + b_β), from the query q [1, Dq] and the context c [1, D]
    (``context_gate``; else c)."""
    if not model.config.context_gate:
        return context
    gate = model.model.decoder.context_gate
    return torch.sigmoid(gate.weight[0] @ query[0] + gate.bias[0]) * context


def mean_cell_state(bridge, annotations: Tensor) -> list[tuple[Tensor, Tensor | None]]:
    """Xu et al.'s initial state from one sequence's real annotations a_j [L, D] (``bridge="mean_cell"``, a
    ``MeanCellBridge``): ā = (1/L) Σ_j a_j, h_0 = tanh(W_s ā + b_s) and, for a cell that has one, c_0 = tanh(W_c ā +
    b_c), the projections cut into one [H] slice per decoder layer. Returns (h_0, c_0 or None) per layer, each
    [1, 1, H]."""
    mean = sum(annotations) / annotations.shape[0]
    hidden = torch.tanh(bridge.proj.weight @ mean + bridge.proj.bias).view(bridge.layers, 1, 1, -1)
    if bridge.cell_proj is None:
        return [(layer, None) for layer in hidden]
    cell = torch.tanh(bridge.cell_proj.weight @ mean + bridge.cell_proj.bias).view(bridge.layers, 1, 1, -1)
    return list(zip(hidden, cell))


class _Attended:
    """What one sentence's attention carries from step to step: t, the position it stopped at (monotonic), the
    coverage c_t [L] and the previous alignment α_{t−1} [L] (α_0: 1/L each, or δ_j0 with a monotonic scope)."""

    def __init__(self, annotations: Tensor) -> None:
        self.step, self.position = 0, 0
        length = annotations.shape[1]
        self.coverage = annotations.new_zeros(length)
        self.previous = annotations.new_full((length,), 1 / length)


def _attend(model, query: Tensor, annotations: Tensor, attended: _Attended) -> tuple[Tensor, Tensor]:
    """c = Σ_j α_j h_j [1, D] and α [L] (averaged over heads) over one sentence's real annotations [1, L, D] from the
    query [1, Dq]; advances ``attended``."""
    decoder, config = model.model.decoder, model.config
    length = annotations.shape[1]
    keys = decoder.attention.project_keys(annotations)
    if config.use_coverage:  # U_a h_j + w_c c_tj
        keys = keys + attended.coverage[None, :, None] * decoder.coverage.coverage_proj.weight[:, 0]
    if config.attention_type == "location_aware":  # V h_j + b + U f_tj
        if config.attention_scope == "monotonic" and attended.step == 0:
            attended.previous = torch.eye(length, dtype=keys.dtype)[0]
        keys = keys + _location_features(decoder.attention, attended.previous)[None]
        scores = _location_aware_energies(decoder.attention, query, keys[0])
    else:
        scores = decoder.attention.score(query, keys)[0]  # e_j [L], or [H, L] per head
    if config.attention_scope == "global":
        weights = _normalise(scores, config)
    elif config.attention_scope == "monotonic":
        weights, scope = torch.zeros_like(scores), decoder.scope
        stops = [j for j in range(attended.position, length)
                 if torch.sigmoid(scope.energy_gain * scores[j] + scope.energy_bias) >= 0.5]
        attended.position = stops[0] if stops else length
        if stops:
            weights[stops[0]] = 1.0
    else:
        if config.attention_scope == "local-m":
            centre = torch.tensor(float(min(attended.step, length - 1)), dtype=scores.dtype)
        else:
            scope = decoder.scope
            centre = length * torch.sigmoid(scope.position_energy(torch.tanh(scope.position_proj(query))))[0, 0]
        window = [j for j in range(length) if abs(j - centre) <= config.local_window]
        sigma = config.local_window / 2
        in_window = _normalise(scores[..., window], config)
        weights = torch.zeros_like(scores)
        for column, j in enumerate(window):
            weights[..., j] = in_window[..., column] * torch.exp(-(j - centre) ** 2 / (2 * sigma**2))
    if config.attention_mode in ("hard", "hard_reinforce"):
        weights = torch.nn.functional.one_hot(weights.argmax(-1), length).to(weights.dtype)
    context, reported = decoder.attention.pool(weights[None, ..., None, :], annotations)
    attended.step += 1
    attended.coverage = attended.coverage + reported[0, 0]
    attended.previous = reported[0, 0]
    return context[:, 0], reported[0, 0]


def monotonic_expected_alignment(probabilities: Tensor) -> Tensor:
    """Raffel et al.'s expected alignment, written as its recurrence: stopping probabilities p [T, S] ->
    α [T, S], with α_0 = δ_j0 and

        q_ij = (1 − p_{i,j−1}) q_{i,j−1} + α_{i−1,j},   α_ij = p_ij q_ij,   q_i0 = α_{i−1,0}.
    """
    steps, length = probabilities.shape
    previous = [1.0] + [0.0] * (length - 1)
    rows = []
    for i in range(steps):
        row, q = [], 0.0
        for j in range(length):
            q = (1 - float(probabilities[i, j - 1])) * q + previous[j] if j else previous[0]
            row.append(float(probabilities[i, j]) * q)
        rows.append(row)
        previous = row
    return torch.tensor(rows, dtype=probabilities.dtype)


def bahdanau_decoder(model, input_ids: Tensor, attention_mask: Tensor, decoder_input_ids: Tensor,
                     steps: list | None = None) -> Tensor:
    """One sentence [1, S] -> t_i [1, T, output_size]: attend with s_{i-1}, then update (Bahdanau et al.). ``steps``
    (a list) receives each step's (α_i [L], p_gen) with ``copy_attention``."""
    decoder = model.model.decoder
    _, annotations, layers = _start(model, input_ids, attention_mask)
    attended = _Attended(annotations)
    pre_outputs = []
    for token in decoder_input_ids[0]:
        embedded = decoder.embed_tokens(token[None])  # E y_{i-1} [1, E]
        context, weights = _attend(model, layers[-1][0][0], annotations, attended)  # c_i from s_{i-1}
        context = _gate(model, layers[-1][0][0], context)  # β_i c_i with context_gate
        state, layers = _cell_step(model, torch.cat([embedded, context], dim=-1), layers)  # s_i
        pre_outputs.append(decoder.readout(torch.cat([state, context, embedded], dim=-1)))  # t_i
        if steps is not None:
            steps.append((weights, _p_gen(model, state, context, embedded)))
    return torch.stack(pre_outputs, dim=1)


def luong_decoder(model, input_ids: Tensor, attention_mask: Tensor, decoder_input_ids: Tensor,
                  steps: list | None = None) -> Tensor:
    """One sentence [1, S] -> h̃_t [1, T, output_size]: update, then attend with h_t (Luong et al.). ``steps`` (a
    list) receives each step's (α_t [L], p_gen) with ``copy_attention``."""
    decoder = model.model.decoder
    _, annotations, layers = _start(model, input_ids, attention_mask)
    attended = _Attended(annotations)
    feed = annotations.new_zeros(1, model.config.output_size)  # h̃_0
    attentional = []
    for token in decoder_input_ids[0]:
        embedded = decoder.embed_tokens(token[None])
        rnn_input = torch.cat([embedded, feed], dim=-1) if model.config.input_feeding else embedded
        state, layers = _cell_step(model, rnn_input, layers)  # h_t
        context, weights = _attend(model, state, annotations, attended)  # c_t from h_t
        context = _gate(model, state, context)  # β_t c_t with context_gate
        feed = decoder.readout(torch.cat([context, state], dim=-1))  # h̃_t = tanh(W_c [c_t; h_t])
        attentional.append(feed)
        if steps is not None:
            steps.append((weights, _p_gen(model, state, context, embedded)))
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


def pointer_network(model, attention_mask: Tensor, decoder_input_ids: Tensor, input_features: Tensor | None = None,
                    input_ids: Tensor | None = None) -> Tensor:
    """log p(C_i = j) [B, T, S + 1] of a pointer network (−∞ at padded inputs), one sequence at a time: the
    attention weights over [e_0; h_1 … h_L] of a Luong decoder that reads the input it pointed at last. Pointer id
    0 is the end (and the start input), j + 1 input j; inputs right-padded."""
    embedded = (model.model.encoder.embed_tokens(input_ids) if input_features is None
                else model.feature_projection(input_features))  # x_j [B, S, E]
    encoded = encode(model, None, attention_mask, inputs_embeds=embedded)
    rows = []
    for row, mask in enumerate(attention_mask.bool()):
        length = int(mask.sum())
        annotations = torch.cat([model.end_annotation[None, None], encoded.last_hidden_state[row:row + 1, :length]], 1)
        row_encoded = BahdanauEncoderOutput(annotations, encoded.final_hidden_state[row:row + 1],
                                            None if encoded.final_cell_state is None
                                            else encoded.final_cell_state[row:row + 1])
        real = torch.ones_like(annotations[..., 0]).bool()
        state = model.model.decoder.bridge(row_encoded, EncodedSource(annotations, real))
        layers = [(state.hidden[layer:layer + 1], None if state.cell is None else state.cell[layer:layer + 1])
                  for layer in range(state.hidden.shape[0])]
        inputs = torch.cat([model.start_input[None], embedded[row, :length]])  # what pointer id k reads
        attended, feed = _Attended(annotations), annotations.new_zeros(1, model.config.output_size)
        steps = []
        for pointer in decoder_input_ids[row].tolist():
            read = inputs[pointer][None]
            rnn_input = torch.cat([read, feed], dim=-1) if model.config.input_feeding else read
            query, layers = _cell_step(model, rnn_input, layers)  # d_i
            context, weights = _attend(model, query, annotations, attended)  # a_i over [e_0; h_1 … h_L]
            feed = model.model.decoder.readout(torch.cat([context, query], dim=-1))
            log_probs = annotations.new_full((attention_mask.shape[1] + 1,), float("-inf"))
            log_probs[:length + 1] = weights.log()
            steps.append(log_probs)
        rows.append(torch.stack(steps))
    return torch.stack(rows)

# The sequence classifier's poolings (``modeling/pooling.py``), one text at a time: annotations H [S, D] of its real
# tokens -> (pooled vector, weights, penalty).


def context_vector_pooling(pooling, annotations: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Yang et al. (2016): α_j = softmax_j(u_wᵀ tanh(W h_j + b)), s = Σ_j α_j h_j [D]; weights α [S]; no penalty."""
    energies = torch.stack([pooling.context_vector.weight[0] @ torch.tanh(pooling.key_proj.weight @ h
                                                                           + pooling.key_proj.bias)
                            for h in annotations])
    alpha = torch.exp(energies - energies.max()) / torch.exp(energies - energies.max()).sum()
    return sum(a * h for a, h in zip(alpha, annotations)), alpha, annotations.new_zeros(())


def self_attentive_pooling(pooling, annotations: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Lin et al. (2017), §2: A = softmax(W_s2 tanh(W_s1 Hᵀ)) [r, S], each row a softmax over the tokens;
    M = A H [r, D]; s = [M_1; …; M_r] [r·D]; P = ‖A Aᵀ − I‖²_F."""
    scores = pooling.second.weight @ torch.tanh(pooling.first.weight @ annotations.T)  # [r, S]
    exponentials = torch.exp(scores - scores.max(dim=1, keepdim=True).values)
    A = exponentials / exponentials.sum(dim=1, keepdim=True)
    M = A @ annotations
    identity = torch.eye(A.shape[0], dtype=A.dtype)
    return torch.cat(list(M)), A, ((A @ A.T - identity) ** 2).sum()


def multi_dimensional_pooling(pooling, annotations: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Shen et al. (2018), DiSAN's multi-dimensional source2token attention: f(h_j) = W_2 tanh(W_1 h_j + b_1) [D],
    α_jd = exp(f(h_j)_d) / Σ_k exp(f(h_k)_d), s_d = Σ_j α_jd h_jd [D]; weights α [S, D]; no penalty."""
    scores = torch.stack([pooling.output.weight @ torch.tanh(pooling.hidden.weight @ h + pooling.hidden.bias)
                          for h in annotations])  # [S, D]
    exponentials = torch.exp(scores - scores.max(dim=0).values)
    alpha = exponentials / exponentials.sum(dim=0)
    return (alpha * annotations).sum(dim=0), alpha, annotations.new_zeros(())


def final_state_pooling(pooling, annotations: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """No attention: s = [→h_S; ←h_1] (bidirectional: the forward half of the last annotation, the backward half of the
    first) or h_S; weights: ½ at the first and ½ at the last token (1 when they are one), or 1 at the last."""
    weights = annotations.new_zeros(len(annotations))
    if not pooling.bidirectional:
        weights[-1] = 1.0
        return annotations[-1], weights, annotations.new_zeros(())
    half = annotations.shape[-1] // 2
    weights[0] += 0.5
    weights[-1] += 0.5
    return torch.cat([annotations[-1, :half], annotations[0, half:]]), weights, annotations.new_zeros(())


POOLING_EQUATIONS = {"context_vector": context_vector_pooling, "self_attentive": self_attentive_pooling,
                     "multi_dimensional": multi_dimensional_pooling, "final_state": final_state_pooling}


def sequence_classifier(model, sentences: list[Tensor]) -> tuple[Tensor, Tensor, list[Tensor]]:
    """One document through a ``BahdanauForSequenceClassification`` (eval mode): its logits [num_labels] = W_o v + b_o,
    its penalty P (0 for poolings without one) and its weights.

    Flat: sentences = [the text's token ids [S]]; v, weights and P are the text's pooling.
    Hierarchical (Yang et al. 2016): the ids of its non-empty sentences, each encoded alone and pooled into s_i;
    h_i = BiRNN_s(s)_i pooled into v; weights [each sentence's, then the sentence level's]; P = the sentence level's
    plus the mean of the sentences'."""
    pool = POOLING_EQUATIONS[model.config.pooling_type]
    pooled = [pool(model.word_attention, encode(model, ids[None], torch.ones_like(ids)[None]).last_hidden_state[0])
              for ids in sentences]
    if model.config.hierarchical:
        vectors = torch.stack([vector for vector, _, _ in pooled])[None]  # [1, N, P]
        sentence_level = SimpleNamespace(model=SimpleNamespace(encoder=model.sentence_encoder))
        annotations = encode(sentence_level, None, torch.ones_like(vectors[..., 0]), inputs_embeds=vectors)
        document, sentence_weights, penalty = pool(model.sentence_attention, annotations.last_hidden_state[0])
        penalty = penalty + sum(sentence_penalty for _, _, sentence_penalty in pooled) / len(pooled)
        weights = [sentence_words for _, sentence_words, _ in pooled] + [sentence_weights]
    else:
        ((document, text_weights, penalty),) = pooled
        weights = [text_weights]
    return model.classifier.weight @ document + model.classifier.bias, penalty, weights


def _location_features(attention, previous: Tensor) -> Tensor:
    """U f_j [L, A] for every position j of one sentence: f_j = Σ_o F_o α_{j+o−(r−1)/2} [k] over the offsets o of
    the filters F [k, r] that fall inside the sentence, α = ``previous`` [L]."""
    filters = attention.location_conv.weight[:, 0]  # F [k, r]
    width, length = filters.shape[1], previous.shape[0]
    rows = []
    for j in range(length):
        f = previous.new_zeros(filters.shape[0])
        for o in range(width):
            if 0 <= j + o - width // 2 < length:
                f = f + filters[:, o] * previous[j + o - width // 2]
        rows.append(attention.location_proj.weight @ f)
    return torch.stack(rows)


def _location_aware_energies(attention, query: Tensor, keys: Tensor) -> Tensor:
    """β e_j = β wᵀ tanh(W q + k_j) [L] of the location-aware score, from the query q [1, Dq] and the keys
    k_j = V h_j + b + U f_j (+ w_c c_j) [L, A]."""
    hidden = torch.tanh(attention.query_proj.weight @ query[0] + keys)  # [L, A]
    return attention.sharpening * (hidden @ attention.energy_proj.weight[0])


def _normalise(scores: Tensor, config) -> Tensor:
    """α_j over the positions of ``scores`` [..., n]: exp(e_j) / Σ_k exp(e_k), or with ``location_smoothing``
    σ(e_j) / Σ_k σ(e_k) (Chorowski et al. 2015, §2.3)."""
    if config.location_smoothing:
        return torch.sigmoid(scores) / torch.sigmoid(scores).sum(-1, keepdim=True)
    return torch.softmax(scores, dim=-1)


def encoder_self_attention(layer, annotations: Tensor) -> tuple[Tensor, Tensor]:
    """The encoder's self-attention (``modeling/self_attention.py``, an ``EncoderSelfAttention``) over one sentence's
    real annotations H [L, D], one annotation at a time: e_jk = score(h_j, h_k) (the layer's score, its plain
    ``score``), α_jk = exp(e_jk) / Σ_k' exp(e_jk'), c_j = Σ_k α_jk h_k (a multi-head score: per head, mixed by its
    ``pool``), h'_j = tanh(W_s [h_j; c_j]). Returns H' [L, D] and α [L, L] (averaged over heads)."""
    attention = layer.attention
    keys = attention.project_keys(annotations[None])
    attended, weights = [], []
    for h in annotations:
        scores = attention.score(h[None], keys)[0]  # e_j· [L], or [H, L] per head
        exponentials = torch.exp(scores - scores.max(dim=-1, keepdim=True).values)
        alpha = exponentials / exponentials.sum(dim=-1, keepdim=True)
        context, reported = attention.pool(alpha[None, ..., None, :], annotations[None])
        attended.append(torch.tanh(layer.output.weight @ torch.cat([h, context[0, 0]])))
        weights.append(reported[0, 0])
    return torch.stack(attended), torch.stack(weights)


def meta_embedding(meta, token_ids: list[int], word_vectors: Tensor) -> tuple[Tensor, Tensor]:
    """A sentence's dynamic meta-embeddings, token by token and source by source: ``meta`` a ``MetaEmbedding``,
    ``word_vectors`` E[x_i] [S, E] -> x̃ [S, E], α [S, K]. The ``"chars"`` source runs a torch BiRNN over each token's
    spelling alone (its bytes between the marks, no padding): w = [→h_last; ←h_first]."""
    embeddings, weights = [], []
    for position, token in enumerate(token_ids):
        projected = []
        for name, source in meta.sources.items():
            if name == "word":
                vector = word_vectors[position]
            elif name == "chars":
                spelling = source.spellings[token]
                spelling = spelling[spelling != 0]
                _, final = source.rnn.layers[0](source.byte_embeddings(spelling)[None])
                final = final[0] if isinstance(final, tuple) else final  # an LSTM's (h, c)
                vector = torch.cat([final[0, 0], final[1, 0]])
            else:  # "pretrained"
                vector = source.vectors[token]
            projection = meta.projections[name]
            projected.append(projection.weight @ vector + projection.bias)
        scores = torch.stack([meta.score.weight[0] @ vector + meta.score.bias[0] for vector in projected])
        alpha = torch.softmax(scores, dim=0)
        embeddings.append(sum(a * vector for a, vector in zip(alpha, projected)))
        weights.append(alpha)
    return torch.stack(embeddings), torch.stack(weights)


def memory_network(model, story: list[list[int]], question: list[int]) -> tuple[Tensor, list[Tensor]]:
    """A ``BahdanauMemoryNetworkForSequenceClassification``'s answer scores W u^{K+1} [num_labels] and its attention
    over the story's sentences per hop ([n] each), for one story (word ids per sentence, oldest first) and one question, with
    the paper's tables named: adjacent A^k = E_{k-1}, C^k = E_k, B = E_0, W^T = E_K; layer-wise A, C, B, H."""
    config, tables = model.config, model.memory_network.tying.word_tables
    times = model.memory_network.tying.time_tables
    K, d = config.num_hops, config.hidden_size
    if config.weight_tying == "adjacent":
        A, C, B = [tables[k] for k in range(K)], [tables[k + 1] for k in range(K)], tables[0]
        T_A, T_C = ([times[k] for k in range(K)], [times[k + 1] for k in range(K)]) if times is not None else (None,
                                                                                                               None)
    else:
        A, C, B = [tables[0]] * K, [tables[1]] * K, tables[2]
        T_A, T_C = ([times[0]] * K, [times[1]] * K) if times is not None else (None, None)

    def sentence(table, words: list[int]) -> Tensor:
        J, total = len(words), torch.zeros(d, dtype=table.weight.dtype)
        for j, word in enumerate(words, start=1):
            for k in range(1, d + 1):
                l_kj = 1.0 if config.sentence_encoding == "bag_of_words" else (1 - j / J) - (k / d) * (1 - 2 * j / J)
                total[k - 1] += l_kj * table.weight[word, k - 1]
        return total

    n = len(story)
    u = sentence(B, question)
    weights = []
    for k in range(K):
        m = [sentence(A[k], x) + (T_A[k].weight[n - 1 - i] if T_A else 0) for i, x in enumerate(story)]
        c = [sentence(C[k], x) + (T_C[k].weight[n - 1 - i] if T_C else 0) for i, x in enumerate(story)]
        scores = torch.stack([u @ m_i for m_i in m]) if n else torch.zeros(0, dtype=u.dtype)
        p = scores if config.linear_start else torch.softmax(scores, 0)
        o = sum((p[i] * c[i] for i in range(n)), torch.zeros_like(u))
        u = (model.memory_network.tying.query_map(u) if config.weight_tying == "layer_wise" else u) + o
        weights.append(p)
    return model.answer_weight() @ u, weights


def doubly_stochastic_regulariser(alphas: Tensor, target_mask: Tensor, source_mask: Tensor) -> Tensor:
    """Xu et al.'s doubly stochastic penalty of one sequence, position by position: Σ_{j real} (1 − Σ_{t kept} α_tj)²
    from α [T, S], target_mask [T] and source_mask [S] (bool: the kept steps, the real positions)."""
    total = alphas.new_zeros(())
    for j in range(alphas.shape[1]):
        if source_mask[j]:
            attended = sum((alphas[t, j] for t in range(alphas.shape[0]) if target_mask[t]), alphas.new_zeros(()))
            total = total + (1 - attended) ** 2
    return total


def reinforce_surrogate(log_likelihoods: Tensor, alphas: Tensor, positions: list[int], baseline: float,
                        entropy_weight: float) -> Tensor:
    """Xu et al.'s REINFORCE for one sequence with sampled positions j̃_t ~ α_t: the loss whose gradient is minus the
    estimator ∂ log p(y | j̃) + (R − b) ∂ log p(j̃) + λ_e ∂H, from log p(y_t | j̃, y_<t) [T], α [T, S] and j̃ (T ints):

        −R − (R − b) Σ_t log α_{t,j̃_t} − λ_e Σ_t H(α_t),  R = Σ_t log p(y_t | …) (held constant in the factor),
        H(α_t) = −Σ_{j: α_tj > 0} α_tj log α_tj.
    """
    reward = sum(log_likelihoods)
    log_policy = sum(torch.log(alphas[t, j]) for t, j in enumerate(positions))
    entropy = sum(-(alpha * torch.log(alpha)) for row in alphas for alpha in row if alpha > 0)
    return -reward - (reward.detach() - baseline) * log_policy - entropy_weight * entropy


def _lstm(p: dict[str, Tensor], prefix: str, X: Tensor, suffix: str = "") -> Tensor:
    """A one-layer LSTM (the ``{prefix}.*_l0{suffix}`` weights of ``p``) by its gate equations over the columns of
    X [D, T] -> [h_1 … h_T] [h, T]:

        (i, f, g, o) = W_ih x_t + b_ih + W_hh h_{t−1} + b_hh,  c_t = σ(f) ⊙ c_{t−1} + σ(i) ⊙ tanh(g),
        h_t = σ(o) ⊙ tanh(c_t),  h_0 = c_0 = 0
    """
    W_ih, W_hh, b_ih, b_hh = (p[f"{prefix}.{name}_l0{suffix}"] for name in ("weight_ih", "weight_hh", "bias_ih",
                                                                             "bias_hh"))
    h = c = X.new_zeros(W_hh.shape[1])
    states = []
    for t in range(X.shape[1]):
        i, f, g, o = (W_ih @ X[:, t] + b_ih + W_hh @ h + b_hh).chunk(4)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        states.append(h)
    return torch.stack(states, dim=1)


def _coattention_answer(config, p: dict[str, Tensor], question: list[int] | None, V: Tensor | None
                        ) -> tuple[Tensor, list[tuple[Tensor | None, Tensor | None, Tensor | None]]]:
    """Lu et al. (2016)'s co-attention and answer, shared by the image and the passage models: the answer scores
    [num_labels] for one question (word ids, no padding; None for ``inputs="context"``) and the context's features
    V = [v_1 … v_N] [d, N] (None for ``inputs="question"``), and per level of ``question_levels`` the weights
    (a^q [T], a^v [N], C [T, N]), None where the form or the baseline has none. The weights are ``p``'s (a state
    dict); in the paper's column form, Q = [q_1 … q_T] [d, T]:

        word      q^w_t = E x_t
        phrase    q^p_t = max_s tanh(W^s_c [q^w_t; …; q^w_{t+s−1}] + b^s_c)        (q^w = 0 beyond the last word)
        question  q^s_t = h_t of an LSTM over q^p (``_lstm``)
        parallel  C = tanh(Qᵀ W_b V),  H^v = tanh(W_v V + (W_q Q) C),  H^q = tanh(W_q Q + (W_v V) Cᵀ),
                  a^v = softmax(w_hvᵀ H^v),  a^q = softmax(w_hqᵀ H^q),  v̂ = V a^v,  q̂ = Q a^q
        alternating  A(X; g): H = tanh(W_x X + (W_g g) 1ᵀ), a^x = softmax(w_hxᵀ H), x̂ = X a^x;
                  ŝ = A(Q; 0),  v̂ = A(V; ŝ),  q̂ = A(Q; v̂)
        context   q̂ = mean_t q_t,  v̂ = A(V; q̂);   none: q̂ = mean_t q_t,  v̂ = mean_n v_n
        baselines ``inputs="question"``: q̂ = mean_t q_t, v̂ = 0;  ``inputs="context"``: q̂ = 0, v̂ = mean_n v_n
        answer    h^1 = tanh(W_1 (q̂^1 + v̂^1) + b_1),  h^l = tanh(W_l [q̂^l + v̂^l; h^{l−1}] + b_l),
                  logits = W_h h^L + b_h

    nn.Linear stores y = W x, so W_b is the stored ``affinity.weight`` transposed (Qᵀ W_b V = (W Q)ᵀ V)."""

    def w(name: str) -> Tensor:
        return p[f"coattention.{name}"]

    levels = {}
    if question is not None:
        Q = w("embeddings.weight")[question].T  # [d, T]
        d, T = Q.shape
        levels["word"] = Q
        if "phrase" in config.question_levels or "question" in config.question_levels:
            grams = []
            for index, s in enumerate(config.phrase_windows):
                W_c = w(f"levels.phrases.{index}.weight").permute(0, 2, 1).reshape(d, s * d)  # block k reads q_{t+k}
                b_c = w(f"levels.phrases.{index}.bias")
                padded = torch.cat([Q, Q.new_zeros(d, s - 1)], dim=1)
                grams.append(torch.stack([torch.tanh(W_c @ padded[:, t:t + s].T.reshape(-1) + b_c)
                                          for t in range(T)], dim=1))
            levels["phrase"] = torch.stack(grams).amax(0)
        if "question" in config.question_levels:
            levels["question"] = _lstm(p, "coattention.levels.sentence.layers.0", levels["phrase"])

    def mean(X: Tensor) -> tuple[Tensor, Tensor]:
        a = X.new_full((X.shape[1],), 1.0 / X.shape[1])
        return X @ a, a

    def attend(prefix: str, X: Tensor, g: Tensor | None) -> tuple[Tensor, Tensor]:  # A(X; g)
        H = w(f"{prefix}.features.weight") @ X
        if g is not None:
            H = H + (w(f"{prefix}.guide.weight") @ g)[:, None]
        a = torch.softmax(w(f"{prefix}.score.weight")[0] @ torch.tanh(H), dim=0)
        return X @ a, a

    h, readings = None, []
    for index, level in enumerate(config.question_levels):
        Q, form, C = levels.get(level), f"coattentions.{index}", None
        if V is None:
            (q_hat, a_q), v_hat, a_v = mean(Q), Q.new_zeros(Q.shape[0]), None
        elif Q is None:
            q_hat, a_q, (v_hat, a_v) = V.new_zeros(V.shape[0]), None, mean(V)
        elif config.coattention == "parallel":
            C = torch.tanh(Q.T @ w(f"{form}.affinity.weight").T @ V)  # [T, N]
            W_q, W_v = w(f"{form}.question.weight"), w(f"{form}.context.weight")
            H_v = torch.tanh(W_v @ V + (W_q @ Q) @ C)
            H_q = torch.tanh(W_q @ Q + (W_v @ V) @ C.T)
            a_v = torch.softmax(w(f"{form}.context_score.weight")[0] @ H_v, dim=0)
            a_q = torch.softmax(w(f"{form}.question_score.weight")[0] @ H_q, dim=0)
            q_hat, v_hat = Q @ a_q, V @ a_v
        elif config.coattention == "alternating":
            s_hat, _ = attend(f"{form}.question_alone", Q, None)
            v_hat, a_v = attend(f"{form}.context_by_question", V, s_hat)
            q_hat, a_q = attend(f"{form}.question_by_context", Q, v_hat)
        elif config.coattention == "context":
            q_hat, a_q = mean(Q)
            v_hat, a_v = attend(f"{form}.context_by_question", V, q_hat)
        else:  # "none"
            (q_hat, a_q), (v_hat, a_v) = mean(Q), mean(V)
        joint = q_hat + v_hat
        h = torch.tanh(w(f"answer_layers.{index}.weight") @ (joint if h is None else torch.cat([joint, h]))
                       + w(f"answer_layers.{index}.bias"))
        readings.append((a_q, a_v, C))
    return p["answer.weight"] @ h + p["answer.bias"], readings


def visual_question_answering(model, question: list[int] | None, image: Tensor | None
                              ) -> tuple[Tensor, list[tuple[Tensor | None, Tensor | None, Tensor | None]]]:
    """Lu et al. (2016), *Hierarchical Question-Image Co-Attention*: a ``BahdanauForVisualQuestionAnswering``'s answer
    scores [num_labels] for one question (its word ids, no padding; None for ``inputs="context"``) and one image
    ([1, C, H, W], no padding; None for ``inputs="question"``), and per level of ``question_levels`` the weights
    (a^q [T], a^v [N], C [T, N]), None where the form or the baseline has none. The image's annotations a_n [D] come
    from the model's own image encoder; its regions are the context (the rest: ``_coattention_answer``):

        image     v_n = tanh(W_i a_n + b_i),  V = [v_1 … v_N] [d, N]
    """
    p = model.state_dict(keep_vars=True)  # the parameters themselves, so gradients flow
    V = None
    if image is not None:
        annotations = model.coattention.image_encoder(image).last_hidden_state[0]  # [N, D]
        W_i, b_i = p["coattention.region_projection.weight"], p["coattention.region_projection.bias"]
        V = torch.tanh(W_i @ annotations.T + b_i[:, None])
    return _coattention_answer(model.config.text_config, p, question, V)


def text_coattention(model, question: list[int], context: list[int]
                     ) -> tuple[Tensor, list[tuple[Tensor, Tensor, Tensor | None]]]:
    """Lu et al. (2016)'s co-attention over two texts: a ``BahdanauForTextPairClassification``'s answer scores
    [num_labels] for one question and one passage (word ids, no padding), and per level of ``question_levels`` the
    weights (a^q [T], a^v [N], C [T, N] or None), with ``inputs="both"``. The passage is the context, its words
    p_n embedded by the question's table E (the rest: ``_coattention_answer``):

        bilstm      v_n = tanh(W_c [→h_n; ←h_n] + b_c), →h an LSTM over E p_1 … E p_N, ←h one over E p_N … E p_1
        embeddings  v_n = E p_n
    """
    p = model.state_dict(keep_vars=True)
    words = p["coattention.embeddings.weight"][context].T  # [d, N]
    V = words
    if model.config.context_encoder == "bilstm":
        recurrent = "coattention.context_encoder.recurrent.layers.0"
        forward, backward = _lstm(p, recurrent, words), _lstm(p, recurrent, words.flip(1), "_reverse").flip(1)
        W_c, b_c = p["coattention.context_encoder.projection.weight"], p["coattention.context_encoder.projection.bias"]
        V = torch.tanh(W_c @ torch.cat([forward, backward]) + b_c[:, None])
    return _coattention_answer(model.config, p, question, V)
