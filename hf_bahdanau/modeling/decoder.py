"""Decoders: the ways the papers let the decoder use the source, one registered class each.

- ``DECODER_STYLES`` (``decoder_style``, with attention):
  ``BahdanauDecoder``: attend with s_{i-1}, then s_i = f(s_{i-1}, [E y_{i-1}; c_i]), t_i = g(s_i, c_i, E y_{i-1});
  ``LuongDecoder``: h_t = f(h_{t-1}, E y_{t-1} [; h̃_{t-1}]), then attend with h_t, h̃_t = φ(W_c [c_t; h_t]).
- ``CONTEXT_MODES`` (``context_mode``, with ``attention_type="none"``):
  ``ChoDecoder``: the summary C at every step and at the output; ``SutskeverDecoder``: the source only through the
  initial state.

The papers' equations, one token at a time, are in ``reference``; each decoder here computes the same (tested), with
the work that does not depend on the previous step hoisted out of its loop. Each returns the pre-output vectors t [B, T, output_size]; the model head projects them onto the
vocabulary once, after the loop. The same code runs a whole teacher-forced target (T tokens) and
one ``generate()`` step (T = 1). A step loop's setup (weight slices, per-step linear maps, the
attention over the encoded source) is a ``StepPlan``: built per forward pass, or once per ``generate()``
and kept in its cache (building it is about an eighth of a batch-1 decoder step).
"""

from collections.abc import Callable
from typing import NamedTuple

import torch
from torch import Tensor, nn
from transformers import initialization as init

from .attention import build_attention
from .attention_mode import ATTENTION_MODES, SoftAttention
from .axes import CONTEXT_MODES, DECODER_STYLES
from .bridge import BRIDGES
from .coverage import CoverageFeature
from .encoder import BahdanauEncoderOutput
from .input_checks import check_embeddings, check_one_source, check_token_ids, exporting
from .loop_linear import LoopLinear
from .old_names import OldAttribute
from .padding import check_attention_mask
from .readout import DEEP_OUTPUTS
from .recurrent import RecurrentStack
from .scope import ATTENTION_SCOPES, GlobalScope, MonotonicScope
from .state import AttentionState, DecoderState, EncodedSource


class DecoderOutput(NamedTuple):
    """pre_output [B, T, output_size]; hidden_states (when asked for): the embedded inputs E y [B, T, E] and every
    RNN layer's states [B, T, hidden], bottom to top; attention_weights [B, T, S] over the encoded source's right-padded
    source positions, or None; state: the decoding state after the last token; generation_gate [B, T]: with
    ``copy_attention``, g_t of p_gen = σ(g_t) (``pointer_generator``), else None."""

    pre_output: Tensor
    hidden_states: tuple[Tensor, ...] | None
    attention_weights: Tensor | None
    state: DecoderState
    generation_gate: Tensor | None = None


class StepPlan(NamedTuple):
    """What a decoder's step loop reads besides its tokens and state; it depends only on the weights and
    the encoded source. input_weight [gates * H, E], input_bias [gates * H]: the first layer's W_iy and b_ih, applied
    to every target embedding before the loop; project_extra: x_t -> a_t + W_ix x_t, the rest of W_ih;
    step_weights: ``RecurrentStack.step_weights()``; attend: (query [N, H], AttentionState) -> (context [N, D],
    weights [N, S], the next AttentionState), or None.
    One step with a plan computes one step of ``reference.bahdanau_decoder`` / ``reference.luong_decoder``."""

    input_weight: Tensor
    input_bias: Tensor
    project_extra: LoopLinear
    step_weights: list[tuple[LoopLinear | None, LoopLinear]]
    attend: Callable[[Tensor, AttentionState], tuple[Tensor, Tensor, AttentionState]] | None


class ContextGate(nn.Module):
    """Xu et al.'s gating scalar β = σ(w_βᵀ q + b_β): query [..., Q] -> β [..., 1]. It starts open (b_β = 3, β ≈ 0.95,
    ``init_parameters``): started half shut, it shut within the first steps on digit strips and
    the model never read the image (unigram loss after 250 steps; 64% of strips read with b_β = 3)."""

    def __init__(self, query_size: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(1, query_size))
        self.bias = nn.Parameter(torch.empty(1))

    def init_parameters(self) -> None:
        """w_β Xavier-uniform, b_β = 3 (the model's ``_init_weights`` calls it)."""
        init.xavier_uniform_(self.weight)
        init.constant_(self.bias, 3.0)

    def forward(self, query: Tensor) -> Tensor:
        return torch.sigmoid(nn.functional.linear(query, self.weight, self.bias))


class RecurrentDecoder(nn.Module):
    """What every decoder shares: target embeddings, the stacked RNN, the bridge, the deep output.

    ``extra_input_size``: what the first RNN layer reads besides E y_{t-1};
    ``readout_input_size``: the size of the features the deep output reads.
    ``prepare_memory`` and ``shares_beam_memory`` are the old names of ``prepare_encoded_source`` and
    ``shares_encoded_source`` (with a FutureWarning).
    """

    prepare_memory = OldAttribute("prepare_encoded_source")
    shares_beam_memory = OldAttribute("shares_encoded_source")

    def __init__(self, config, embed_tokens: nn.Embedding, extra_input_size: int, readout_input_size: int):
        super().__init__()
        self.embedding_size = config.embedding_size
        self.embed_tokens = embed_tokens
        self.dropout = nn.Dropout(config.dropout)
        self.rnn = RecurrentStack(
            config.rnn_type, config.embedding_size + extra_input_size, config.hidden_size, config.decoder_layers,
            dropout=config.dropout,
        )
        self.bridge = BRIDGES[config.bridge](config)
        self.readout = DEEP_OUTPUTS[config.deep_output](readout_input_size, config.output_size)
        self.attention = None
        self.generation_gate = None
        self.context_gate = None
        self.is_global_soft = False

    def add_attention(self, config, query_size: int, key_size: int) -> None:
        """The attention of a decoder that has one: its score (``attention_type``), scope (``attention_scope``),
        mode (``attention_mode``), with ``use_coverage`` the coverage term of the score and with ``copy_attention``
        the pointer-generator's gate g_t = wᵀ [s_t; c_t; E y_{t-1}] + b. ``reads_state``: the score of step t reads
        the attention state (``step_keys``), so steps attend one at a time."""
        self.attention = build_attention(config.attention_type, config, query_size, key_size)
        if config.copy_attention:
            self.generation_gate = nn.Linear(query_size + key_size + config.embedding_size, 1)
        self.scope = ATTENTION_SCOPES[config.attention_scope].from_config(config, query_size)
        self.attention_mode = ATTENTION_MODES[config.attention_mode].from_config(config)
        self.coverage = CoverageFeature(config.attention_size) if config.use_coverage else None
        # Xu et al.'s gating scalar β_i = σ(w_βᵀ q_i + b_β) on the context (``context_gate``), or None
        self.context_gate = ContextGate(query_size) if config.context_gate else None
        self.reads_state = self.coverage is not None or self.attention.reads_previous_alignment
        # Global soft attention of a score that reads no state keeps the fast paths: an encoded source shared by its
        # beams, batched or blocked scores.
        self.is_global_soft = (isinstance(self.scope, GlobalScope) and isinstance(self.attention_mode, SoftAttention)
                               and not self.reads_state)

    def gate_context(self, query: Tensor, context: Tensor) -> Tensor:
        """β c with β = σ(w_βᵀ q + b_β) from the attention's query q [..., Q] (``context_gate``); else c [..., D]."""
        if self.context_gate is None:
            return context
        return self.context_gate(query) * context

    @property
    def shares_encoded_source(self) -> bool:
        """Whether the k decoder rows of a source (beam search) read one copy of its encoded source: without
        attention, and with global soft attention, whose state is the same for every row; the other attentions keep a
        per-row state (window position, previous alignment, coverage) and read a copy per row."""
        return self.attention is None or self.is_global_soft

    def p_gen_logits(self, states: Tensor, contexts: Tensor, embedded: Tensor) -> Tensor | None:
        """g_t = wᵀ [s_t; c_t; E y_{t-1}] + b [N, T] from states [N, T, H], contexts [N, T, D] and embedded
        [N, T, E] (See et al.'s w_sᵀ s_t + w_cᵀ c_t + w_xᵀ x_t + b_ptr), with ``copy_attention``; else None."""
        if self.generation_gate is None:
            return None
        return self.generation_gate(torch.cat([states, contexts, embedded], dim=-1)).squeeze(-1)

    def check_inputs(self, input_ids: Tensor | None, inputs_embeds: Tensor | None,
                     attention_mask: Tensor | None = None, *, values: bool = True) -> int:
        """The decoder reads exactly one of ids [N, T] in its vocabulary and embeddings [N, T, E]; returns N. A mask
        [N, T], when given, must be right padding: the decoder runs from its start token, left to right. ``values``
        False: the ids' range is not checked (a search's own picks, ``check_token_ids``)."""
        check_one_source("decoder_input_ids", input_ids, "decoder_inputs_embeds", inputs_embeds)
        if inputs_embeds is None:
            check_token_ids("decoder_input_ids", input_ids, self.embed_tokens.num_embeddings, values=values)
        else:
            check_embeddings("decoder_inputs_embeds", inputs_embeds, self.embedding_size)
        inputs = input_ids if inputs_embeds is None else inputs_embeds
        if attention_mask is not None:
            layout = check_attention_mask(attention_mask, inputs.shape[:2], inputs.device, "decoder_attention_mask")
            if layout.starts is not None:
                raise ValueError("`decoder_attention_mask` must be right padding: the decoder reads its inputs left to "
                                 "right from the decoder start token, so padding can only follow a row's tokens.")
        return inputs.shape[0]

    def prepare_encoded_source(self, encoder_outputs: BahdanauEncoderOutput,
                               attention_mask: Tensor | None) -> EncodedSource:
        """Everything that depends only on the source, computed once (e.g. the keys U_a h_j); the annotations [B, S, D]
        in the caller's layout of ``attention_mask`` [B, S] are kept right-padded (``padding``)."""
        annotations = encoder_outputs.last_hidden_state
        layout = check_attention_mask(attention_mask, annotations.shape[:2], annotations.device)
        annotations = layout.to_right(annotations)
        projected_keys = None if self.attention is None else self.attention.project_keys(annotations)
        return EncodedSource(annotations, layout.right_mask, projected_keys, source_starts=layout.starts)

    def initial_state(self, encoder_outputs: BahdanauEncoderOutput, encoded: EncodedSource,
                      keep_coverage: bool = True) -> DecoderState:
        """s_0 from the bridge, and the attention's step-0 state (``initial_attention_state``)."""
        return DecoderState(self.bridge(encoder_outputs, encoded),
                            attention=self.initial_attention_state(encoded, keep_coverage))

    def initial_attention_state(self, encoded: EncodedSource, keep_coverage: bool = True) -> AttentionState | None:
        """Step 0; α_0 [B, S]: a recurrent scope's (monotonic: position 0), else the score's when it reads the
        previous alignment (location-aware: uniform); the coverage c_0 = 0 [B, S] when the score reads it or
        ``keep_coverage`` asks for it (a decoding cache keeps it for a search that scores it: GNMT's coverage
        penalty); the sequences that attend by the expected context, when the mode draws them
        (``AttentionMode.draw_expected_rows``)."""
        if self.attention is None:
            return None
        mask, dtype = encoded.mask, encoded.annotations.dtype
        track_coverage = self.coverage is not None or keep_coverage
        previous = (self.scope.initial_previous(mask, dtype) if self.scope.is_recurrent
                    else self.attention.initial_alignment(mask, dtype))
        return AttentionState(0, previous,
                              torch.zeros(mask.shape, dtype=dtype, device=mask.device) if track_coverage else None,
                              expected_rows=self.attention_mode.draw_expected_rows(mask.shape[0], mask.device))

    def embed(self, input_ids: Tensor | None, inputs_embeds: Tensor | None = None) -> Tensor:
        """E y [B, T, E] (with dropout), from the ids or from embeddings given instead of them."""
        return self.dropout(self.embed_tokens(input_ids) if inputs_embeds is None else inputs_embeds)

    @staticmethod
    def layer_states(embedded: Tensor, steps: list[list[Tensor]], top: Tensor) -> tuple[Tensor, ...]:
        """``DecoderOutput.hidden_states`` of a step loop: steps[t][l] = layer l's h_t [B, H]; ``top`` is the top
        layer's [B, T, H] the loop already stacked (the one the output reads)."""
        lower = [torch.stack(layer, dim=1) for layer in list(zip(*steps))[:-1]]
        return (embedded, *lower, top)

    def plan_steps(self, encoded: EncodedSource) -> StepPlan:
        """The step loop's setup for ``encoded``. A forward pass with autograd builds its own (its ``LoopLinear``s
        gather their weight gradients after that loop); without autograd one plan serves every step of a search."""
        embedding_weight, extra_weight, bias = self.rnn.first_layer_input_weights(self.embedding_size)
        attend = None if self.attention is None else self.attend_stepwise(encoded)
        return StepPlan(embedding_weight, bias, LoopLinear(extra_weight), self.rnn.step_weights(), attend)

    @staticmethod
    def project_embeddings(embedded: Tensor, plan: StepPlan) -> tuple[Tensor, ...]:
        """Hoisted out of the step loop: W_iy E y_t + b_ih for every step at once, as per-step [B, gates * H]."""
        # 2-D addmm: F.linear on a 3-D input with this column slice of W_ih takes a slow copying path.
        gates = torch.addmm(plan.input_bias, embedded.flatten(0, 1), plan.input_weight.t())
        return gates.view(-1, embedded.shape[1], gates.shape[-1]).unbind(1)

    def serve_rows(self, encoded: EncodedSource, state: DecoderState, rows: int) -> tuple[EncodedSource, DecoderState]:
        """Encoded source and initial state for ``rows`` decoder rows per source (beam search): the state is
        repeated, rows b·k … b·k + k − 1 for source b; the encoded source is shared by the k rows or copied
        (``shares_encoded_source``; shared, ``attend`` reads queries in groups of ``rows``)."""
        source_of_row = torch.arange(encoded.mask.shape[0], device=encoded.mask.device).repeat_interleave(rows)
        state = state.index_select(source_of_row)
        if self.shares_encoded_source:
            return encoded._replace(rows_per_source=rows), state
        return encoded.index_select(source_of_row), state

    def attend(self, query: Tensor, encoded: EncodedSource,
               state: AttentionState) -> tuple[Tensor, Tensor, AttentionState]:
        """query [N, T, H] -> context [N, T, D], weights [N, T, S] and the state after the T steps;
        N = B · rows_per_source. Global soft attention: the rows of one source attend as one query sequence
        [B, rows · T, H] (every score reads each query on its own)."""
        if not self.is_global_soft:
            return self._attend_scoped(query, encoded, state)
        rows, (total_rows, steps) = encoded.rows_per_source, query.shape[:2]
        context, weights = self.attention(query.reshape(-1, rows * steps, query.shape[-1]), encoded.annotations,
                                          encoded.annotations, encoded.mask, encoded.projected_keys)
        weights = weights.reshape(total_rows, steps, -1)
        return context.reshape(total_rows, steps, -1), weights, state.advance(weights)

    def _attend_scoped(self, query: Tensor, encoded: EncodedSource,
                       state: AttentionState) -> tuple[Tensor, Tensor, AttentionState]:
        """``attend`` for the other scopes and modes: e = score, α = mode(scope(e)), one row per source. A score that
        reads the attention state (coverage c_t, the previous alignment α_{t−1}) and a monotonic scan, which scores
        from the previous position, run their steps one at a time."""
        if self.reads_state or self._scans_monotonically():
            contexts, weights = [], []
            attend = self.attend_stepwise(encoded)
            for step_query in query.unbind(1):
                context, step_weights, state = attend(step_query, state)
                contexts.append(context)
                weights.append(step_weights)
            return torch.stack(contexts, dim=1), torch.stack(weights, dim=1), state
        scores = self.attention.score(query, encoded.projected_keys)
        aligned = self.scope.align(scores, query, encoded.mask, state)
        context, weights = self.attention.pool(self.attention_mode(aligned, state.expected_rows), encoded.annotations)
        return context, weights, state.advance(weights, aligned[..., -1, :] if self.scope.is_recurrent else None,
                                               self.attention_mode.policy(aligned, weights, state.expected_rows))

    def attend_stepwise(self, encoded: EncodedSource) -> Callable[[Tensor, AttentionState],
                                                                 tuple[Tensor, Tensor, AttentionState]]:
        """For a step loop: (query [N, H], state) -> (context [N, D], weights [N, S], next state). One row per
        source reads the encoded source through ``AttentionMechanism.step_functions``; several rows per source
        (global soft attention in beam search, which needs no gradients) run ``attend`` with one step."""
        if encoded.rows_per_source > 1:
            def attend_rows(query: Tensor, state: AttentionState) -> tuple[Tensor, Tensor, AttentionState]:
                context, weights, state = self.attend(query.unsqueeze(1), encoded, state)
                return context.squeeze(1), weights.squeeze(1), state

            return attend_rows
        if self.is_global_soft:
            attend_global = self.attention.stepwise(encoded.annotations, encoded.mask, encoded.projected_keys)

            def attend(query: Tensor, state: AttentionState) -> tuple[Tensor, Tensor, AttentionState]:
                context, weights = attend_global(query)
                return context, weights, state.advance(weights)

            return attend
        if self._scans_monotonically():
            return self._scan_stepwise(encoded)
        step_score, pool = self.attention.step_functions(encoded.annotations, encoded.projected_keys)

        def score(query: Tensor, state: AttentionState) -> Tensor:
            if not self.reads_state:
                return step_score(query)
            return self.attention.score(query, self.step_keys(encoded.projected_keys, state))

        def attend_scoped(query: Tensor, state: AttentionState) -> tuple[Tensor, Tensor, AttentionState]:
            scores = score(query, state).unsqueeze(-2)  # one step: [N, (H,) 1, S]
            aligned = self.scope.align(scores, query.unsqueeze(1), encoded.mask, state).squeeze(-2)
            context, weights = pool(self.attention_mode(aligned, state.expected_rows))
            return context, weights, state.advance(weights, self._next_previous(aligned, weights),
                                                   self.attention_mode.policy(aligned, weights, state.expected_rows))

        return attend_scoped

    def step_keys(self, projected_keys: Tensor, state: AttentionState) -> Tensor:
        """The keys step t scores [N, S, A]: the projected keys with the features of the attention state the score
        reads, U (F ∗ α_{t−1})_j (location-aware, ``AttentionMechanism.step_keys``) and w_c c_tj (coverage)."""
        keys = self.attention.step_keys(projected_keys, state.previous)
        return keys if self.coverage is None else self.coverage(keys, state.coverage)

    def _next_previous(self, aligned: Tensor, weights: Tensor) -> Tensor | None:
        """α_t as the next step reads it (``AttentionState.previous``): a recurrent scope's alignment, else the
        weights when the score reads them, else None."""
        if self.scope.is_recurrent:
            return aligned
        return weights if self.attention.reads_previous_alignment else None

    def _scans_monotonically(self) -> bool:
        """Whether steps attend by ``MonotonicScope.scan`` (inference without autograd, a score of q and k_j only):
        the same positions as the full hard step, with the scores of the positions it passes only. Not while
        tracing (ONNX export): the scan's loop runs as long as the data says, which a traced graph cannot keep."""
        return (isinstance(self.scope, MonotonicScope) and not self.scope.training and not torch.is_grad_enabled()
                and self.attention.position_free and not torch.jit.is_tracing() and not exporting())

    def _scan_stepwise(self, encoded: EncodedSource) -> Callable[[Tensor, AttentionState],
                                                               tuple[Tensor, Tensor, AttentionState]]:
        """``attend_stepwise`` of hard monotonic attention in linear time: score from the previous position on,
        c_t = h_{j_t} (0 when no position is left). A score that reads the attention state adds its features to all
        S keys first (``step_keys``), then scores the same positions."""
        lengths, rows = encoded.mask.sum(-1), torch.arange(encoded.mask.shape[0], device=encoded.mask.device)

        def attend(query: Tensor, state: AttentionState) -> tuple[Tensor, Tensor, AttentionState]:
            step_keys = self.step_keys(encoded.projected_keys, state) if self.reads_state else encoded.projected_keys

            def score_positions(positions: Tensor) -> Tensor:  # positions [N, C] -> e [N, C]
                return self.attention.score(
                    query, step_keys.gather(1, positions.unsqueeze(-1).expand(-1, -1, step_keys.shape[-1])))

            stopped = self.scope.scan(score_positions, state.previous, lengths)  # [N], −1: none
            found = (stopped >= 0).unsqueeze(-1)
            positions = stopped.clamp(min=0)
            weights = nn.functional.one_hot(positions, encoded.mask.shape[-1]).to(encoded.annotations.dtype) * found
            context = encoded.annotations[rows, positions] * found
            return context, weights, state.advance(weights, weights)

        return attend


@DECODER_STYLES.register("bahdanau")
class BahdanauDecoder(RecurrentDecoder):
    """Bahdanau et al. (2014): e_ij = a(s_{i-1}, h_j), c_i = Σ_j α_ij h_j, s_i = f(s_{i-1}, y_{i-1}, c_i),
    t_i = φ(W_r [s_i; c_i; E y_{i-1}]) (with ``context_gate``, β_i c_i in place of c_i). Equation:
    ``reference.bahdanau_decoder``; here W_iy E y_{i-1} is projected
    for all steps before the loop and t_i for all steps after it (``StepPlan``)."""

    def __init__(self, config, embed_tokens: nn.Embedding):
        context_size = config.encoder_output_size
        super().__init__(config, embed_tokens, context_size, config.hidden_size + context_size + config.embedding_size)
        self.add_attention(config, config.hidden_size, context_size)

    def forward(self, input_ids: Tensor | None, encoded: EncodedSource, state: DecoderState,
                plan: StepPlan | None = None, inputs_embeds: Tensor | None = None,
                output_hidden_states: bool = False) -> DecoderOutput:
        """input_ids [B, T] (y_0 … y_{T-1}) or inputs_embeds [B, T, E]; step t attends with the state before it.
        plan: ``plan_steps(encoded)`` (built here when None)."""
        plan = self.plan_steps(encoded) if plan is None else plan
        embedded = self.embed(input_ids, inputs_embeds)
        layers, attention_state = self.rnn.unbind_state(state.rnn), state.attention
        states, contexts, weights, every_layer = [], [], [], []
        for step_gates in self.project_embeddings(embedded, plan):
            context, alpha, attention_state = plan.attend(layers[-1][0], attention_state)
            context = self.gate_context(layers[-1][0], context)
            layers = self.rnn.step(plan.project_extra(context, step_gates), layers, plan.step_weights)
            states.append(layers[-1][0])
            contexts.append(context)
            weights.append(alpha)
            if output_hidden_states:
                every_layer.append([hidden for hidden, _ in layers])
        states, contexts = torch.stack(states, dim=1), torch.stack(contexts, dim=1)
        pre_output = self.readout(torch.cat([states, contexts, embedded], dim=-1))
        hidden_states = self.layer_states(embedded, every_layer, states) if output_hidden_states else None
        return DecoderOutput(pre_output, hidden_states, torch.stack(weights, dim=1),
                             DecoderState(self.rnn.stack_state(layers), attention=attention_state),
                             self.p_gen_logits(states, contexts, embedded))


@DECODER_STYLES.register("luong")
class LuongDecoder(RecurrentDecoder):
    """Luong et al. (2015): h_t = f(h_{t-1}, y_{t-1} [, h̃_{t-1}]), c_t = Σ_s a_t(s) h̄_s from h_t,
    h̃_t = φ(W_c [c_t; h_t]). Equation: ``reference.luong_decoder``. Without input feeding nothing is recurrent
    through the attention, so the RNN runs over the whole target in one call and all steps attend in one batched
    product."""

    def __init__(self, config, embed_tokens: nn.Embedding):
        context_size = config.encoder_output_size
        self.input_feeding = config.input_feeding
        super().__init__(config, embed_tokens, config.output_size if config.input_feeding else 0,
                         context_size + config.hidden_size)
        self.add_attention(config, config.hidden_size, context_size)

    def initial_state(self, encoder_outputs: BahdanauEncoderOutput, encoded: EncodedSource,
                      keep_coverage: bool = True) -> DecoderState:
        """The base state, with Luong's input feed h̃_0 = 0 [B, output_size] when ``input_feeding``."""
        state = super().initial_state(encoder_outputs, encoded, keep_coverage)
        if not self.input_feeding:
            return state
        feed = encoded.annotations.new_zeros(encoded.annotations.shape[0], self.readout.output_size)
        return state._replace(input_feed=feed)

    def forward(self, input_ids: Tensor | None, encoded: EncodedSource, state: DecoderState,
                plan: StepPlan | None = None, inputs_embeds: Tensor | None = None,
                output_hidden_states: bool = False) -> DecoderOutput:
        """input_ids [B, T] or inputs_embeds [B, T, E]; plan: ``plan_steps(encoded)`` for the input-feeding loop
        (built here when None)."""
        embedded = self.embed(input_ids, inputs_embeds)
        if not self.input_feeding:
            layer_outputs, rnn_state = self.rnn(embedded, state.rnn)
            states = layer_outputs[-1]
            contexts, weights, attention_state = self.attend(states, encoded, state.attention)
            contexts = self.gate_context(states, contexts)
            pre_output = self.readout(torch.cat([contexts, states], dim=-1))
            hidden_states = (embedded, *layer_outputs) if output_hidden_states else None
            return DecoderOutput(pre_output, hidden_states, weights, DecoderState(rnn_state, None, attention_state),
                                 self.p_gen_logits(states, contexts, embedded))

        plan = self.plan_steps(encoded) if plan is None else plan
        layers, feed, attention_state = self.rnn.unbind_state(state.rnn), state.input_feed, state.attention
        states, contexts, feeds, weights, every_layer = [], [], [], [], []
        for step_gates in self.project_embeddings(embedded, plan):
            layers = self.rnn.step(plan.project_extra(feed, step_gates), layers, plan.step_weights)
            top = layers[-1][0]
            context, alpha, attention_state = plan.attend(top, attention_state)
            context = self.gate_context(top, context)
            feed = self.readout(torch.cat([context, top], dim=-1))
            states.append(top)
            contexts.append(context)
            feeds.append(feed)
            weights.append(alpha)
            if output_hidden_states:
                every_layer.append([hidden for hidden, _ in layers])
        states = torch.stack(states, dim=1)
        hidden_states = self.layer_states(embedded, every_layer, states) if output_hidden_states else None
        gate = None if self.generation_gate is None else self.p_gen_logits(states, torch.stack(contexts, 1), embedded)
        return DecoderOutput(torch.stack(feeds, dim=1), hidden_states, torch.stack(weights, dim=1),
                             DecoderState(self.rnn.stack_state(layers), feed, attention_state), gate)


@CONTEXT_MODES.register("cho")
class ChoDecoder(RecurrentDecoder):
    """Cho et al. (2014), no attention: the summary C (the top encoder layer's final state h_S) at every step and at the
    output, h_t = f(h_{t-1}, [E y_{t-1}; C]), t = φ(W_r [h_t; C; E y_{t-1}]). Equation: ``reference.cho_decoder``."""

    def __init__(self, config, embed_tokens: nn.Embedding):
        context_size = config.encoder_output_size
        super().__init__(config, embed_tokens, context_size, config.hidden_size + context_size + config.embedding_size)

    def prepare_encoded_source(self, encoder_outputs: BahdanauEncoderOutput,
                               attention_mask: Tensor) -> EncodedSource:
        encoded = super().prepare_encoded_source(encoder_outputs, attention_mask)
        return encoded._replace(summary=encoder_outputs.final_hidden_state[:, -1])

    def serve_rows(self, encoded: EncodedSource, state: DecoderState, rows: int) -> tuple[EncodedSource, DecoderState]:
        """Every step reads C [N, D] with its row: C is repeated per row like the state."""
        encoded, state = super().serve_rows(encoded, state, rows)
        return encoded._replace(summary=encoded.summary.repeat_interleave(rows, dim=0)), state

    def forward(self, input_ids: Tensor | None, encoded: EncodedSource, state: DecoderState,
                plan: StepPlan | None = None, inputs_embeds: Tensor | None = None,
                output_hidden_states: bool = False) -> DecoderOutput:
        """input_ids [B, T] or inputs_embeds [B, T, E]: one RNN call over the whole target, C concatenated to every
        input; ``plan`` is not read."""
        embedded = self.embed(input_ids, inputs_embeds)
        context = encoded.summary.unsqueeze(1).expand(-1, embedded.shape[1], -1)
        layer_outputs, rnn_state = self.rnn(torch.cat([embedded, context], dim=-1), state.rnn)
        pre_output = self.readout(torch.cat([layer_outputs[-1], context, embedded], dim=-1))
        hidden_states = (embedded, *layer_outputs) if output_hidden_states else None
        return DecoderOutput(pre_output, hidden_states, None, DecoderState(rnn_state))


@CONTEXT_MODES.register("sutskever")
class SutskeverDecoder(RecurrentDecoder):
    """Sutskever et al. (2014), no attention: the source reaches the decoder only through its initial state,
    h_t = f(h_{t-1}, E y_{t-1}), t = φ(W_r h_t). Equation: ``reference.sutskever_decoder``."""

    def __init__(self, config, embed_tokens: nn.Embedding):
        super().__init__(config, embed_tokens, 0, config.hidden_size)

    def forward(self, input_ids: Tensor | None, encoded: EncodedSource, state: DecoderState,
                plan: StepPlan | None = None, inputs_embeds: Tensor | None = None,
                output_hidden_states: bool = False) -> DecoderOutput:
        """input_ids [B, T] or inputs_embeds [B, T, E]: one RNN call over the whole target; ``plan`` is not read."""
        embedded = self.embed(input_ids, inputs_embeds)
        layer_outputs, rnn_state = self.rnn(embedded, state.rnn)
        hidden_states = (embedded, *layer_outputs) if output_hidden_states else None
        return DecoderOutput(self.readout(layer_outputs[-1]), hidden_states, None, DecoderState(rnn_state))


def build_decoder(config, embed_tokens: nn.Embedding) -> RecurrentDecoder:
    """The decoder registered as ``config.decoder_style`` (``DECODER_STYLES``); with ``attention_type='none'`` the
    one registered as ``config.context_mode`` (``CONTEXT_MODES``)."""
    if config.attention_type == "none":
        return CONTEXT_MODES[config.context_mode](config, embed_tokens)
    return DECODER_STYLES[config.decoder_style](config, embed_tokens)
