"""Every axis of the configuration, declared once and without torch: its config field, each name it accepts with the
model card's one-line words for it, the values no class implements (``attention_type="none"``), the plain facts the
config checks (``same_size_required``), and which fields only some options read (``FIELDS_READ``).

The config validates against these declarations, and the model card and the table of axes read them, so loading a
config imports no model code (as BART's). The modules that implement an axis import its registry from here and
register one class per name (``@ATTENTION_SCORES.register("additive")``; ``registry.py`` says how to add an option).
"""

from dataclasses import dataclass

from .registry import Registry

__all__ = ["ATTENTION_MODES", "ATTENTION_SCOPES", "ATTENTION_SCORES", "AXES", "BRIDGES", "CONTEXT_MODES",
           "CO_ATTENTIONS", "DECODER_STYLES", "DEEP_OUTPUTS", "EMBEDDING_SOURCES", "FIELDS_READ", "FieldsRead",
           "LOSS_TERMS", "MEMORY_AXES",
           "OUTPUT_LAYERS", "POOLINGS", "QUESTION_LEVELS", "RNN_TYPES", "SENTENCE_ENCODINGS", "TOKEN_ATTENTIONS",
           "TOKEN_ATTENTION_LEGACY_NAMES", "WEIGHT_TYINGS",
           "all_at_once_scores", "axes_table", "describe_token_attention", "token_attention_types"]

RNN_TYPES = Registry("rnn_type", {  # recurrent.py
    "gru": "GRU",
    "lstm": "LSTM",
    "rnn": "tanh RNN (Elman)",
})

ATTENTION_SCORES = Registry("attention_type", {  # attention.py
    "additive": "additive (Bahdanau) score e_ij = v_aᵀ tanh(W_a q_i + U_a h_j)",
    "concat": "concat (Luong) score e_ij = v_aᵀ tanh(W_a [q_i; h_j]), the additive score",
    "dot": "dot score e_ij = q_iᵀ h_j",
    "scaled_dot": "scaled dot score e_ij = q_iᵀ h_j / √d",
    "general": "general (bilinear) score e_ij = q_iᵀ W_a h_j",
    "location": "location score e_i = W_a q_i (one score per source position; the keys are not read)",
    "location_aware": "location-aware (Chorowski et al., 2015) score e_ij = β wᵀ tanh(W s_{i-1} + V h_j + b + U f_ij), "
                      "f_i = F ∗ α_{i-1}: k filters of width r convolved over the previous alignment (α_0 uniform)",
    "multihead": "multi-head scaled dot attention, softmax(Q_h K_hᵀ / √d) V_h per head",
    "gaussian_kernel": "Gaussian-kernel (Nadaraya–Watson) score e_ij = -½ (w ‖q_i - h_j‖)²",
}, special={
    "none": "no attention: the decoder reads the source through a fixed context (`context_mode`)",
}, flags={
    # the score compares q_i with h_j directly, so the query size must equal the key size
    "same_size_required": ("dot", "scaled_dot", "gaussian_kernel"),
    # e_ij reads the previous step's alignment α_{i-1}: a decoder's score only (not a token attention or a pointer)
    "reads_previous_alignment": ("location_aware",),
})

ATTENTION_SCOPES = Registry("attention_scope", {  # scope.py
    "global": "global: every source position, α_ij = softmax_j(e_ij)",
    "local-m": "local-m (Luong): a window of ±D positions around p_i = i, weighted by a Gaussian "
               "exp(−(j − p_i)² / 2σ²), σ = D/2",
    "local-p": "local-p (Luong): a window of ±D positions around a predicted p_i = S · sigmoid(v_pᵀ tanh(W_p q_i)), "
               "weighted by a Gaussian exp(−(j − p_i)² / 2σ²), σ = D/2",
    "monotonic": "monotonic (Raffel et al., 2017): stop at the first position j ≥ the previous one with "
                 "p_ij = σ(g e_ij + r) ≥ ½; trained on the expected alignment",
})

ATTENTION_MODES = Registry("attention_mode", {  # attention_mode.py
    "soft": "soft: the context is the expectation Σ_j α_ij h_j",
    "hard": "hard: one source position per step, sampled from α_i in training (straight-through Gumbel-softmax), "
            "argmax_j α_ij at inference",
    "hard_reinforce": "hard, trained by REINFORCE (Xu et al. 2015): j_i ~ α_i, the score-function gradient (R − b) ∇ log "
                      "α_{i,j_i} with R = log p(y | j, x), a moving-average baseline b and an entropy bonus; argmax at "
                      "inference",
})

DECODER_STYLES = Registry("decoder_style", {  # decoder.py: decoders that attend
    "bahdanau": "Bahdanau style: attend with the previous state s_{i-1}, then update s_i = f(s_{i-1}, y_{i-1}, c_i)",
    "luong": "Luong style: update h_i first, then attend with it and read out h̃_i = tanh(W_c [c_i; h_i])",
})

CONTEXT_MODES = Registry("context_mode", {  # decoder.py: decoders without attention (attention_type="none")
    "cho": "no attention: the summary C = h_S, the encoder's final state, conditions every decoder step and the "
           "output (Cho et al., 2014, who use c = tanh(V h_S))",
    "sutskever": "no attention: the encoder's final state only initialises the decoder (Sutskever et al., 2014)",
})

BRIDGES = Registry("bridge", {  # bridge.py
    "zero": "zeros",
    "last": "the encoder's final states, layer by layer",
    "tanh": "tanh(W_s h) of the encoder's final state (the backward one, ←h_1, when bidirectional)",
    "mean": "tanh(W_s mean_j h_j), the mean of the annotations",
    "mean_cell": "h_0 = tanh(W_s ā) and, for an LSTM, c_0 = tanh(W_c ā), ā = mean_j h_j (Xu et al. 2015's f_init)",
})

DEEP_OUTPUTS = Registry("deep_output", {  # readout.py
    "none": "a linear layer t_i = W_r [features] before the vocabulary projection",
    "tanh": "a tanh layer t_i = tanh(W_r [features]) before the vocabulary projection",
    "maxout": "a maxout layer t_i = max_k (W_r [features])_k over pairs, before the vocabulary projection",
})

# The axes of the seq2seq model, in the order of the table of axes.
AXES = (RNN_TYPES, ATTENTION_SCORES, ATTENTION_SCOPES, ATTENTION_MODES, DECODER_STYLES, CONTEXT_MODES, BRIDGES,
        DEEP_OUTPUTS)

# The tagger's token attention (token_attention.py): these, or any score of ATTENTION_SCORES.
TOKEN_ATTENTIONS = Registry("token_attention_type", {
    "context_vector": "one distribution over the sentence from a learned context vector, α_j = softmax_j(v_aᵀ "
                      "tanh(U_a h_j + b)) (Yang et al. 2016's word attention), re-weighting each annotation: "
                      "f_j = α_j h_j",
})
TOKEN_ATTENTION_LEGACY_NAMES = {"sentence": "context_vector"}  # configs saved before the rename keep loading

# The sequence classifier's pooling (pooling.py): flat, and at both levels of HAN.
POOLINGS = Registry("pooling_type", {
    "context_vector": "one distribution over the tokens from a learned context vector, α_j = softmax_j(u_wᵀ "
                      "tanh(W h_j + b)), v = Σ_j α_j h_j (Yang et al. 2016)",
    "self_attentive": "r distributions over the tokens, A = softmax(W_s2 tanh(W_s1 Hᵀ)) [r, S], v = the r rows of "
                      "M = A H side by side, trained with the penalty ‖A Aᵀ − I‖²_F (Lin et al. 2017's structured "
                      "self-attentive sentence embedding)",
    "multi_dimensional": "one distribution over the tokens per feature d, α_jd = softmax_j(f(h_j)_d) with "
                         "f(h) = W_2 tanh(W_1 h + b_1), v_d = Σ_j α_jd h_jd (Shen et al. 2018's multi-dimensional "
                         "attention)",
    "final_state": "no attention: the RNN's final states, v = [→h_last; ←h_first] (Sutskever et al. 2014's sentence "
                   "vector; the LSTM baseline of the attention papers)",
})


# The embeddings a token's meta-embedding mixes (meta_embedding.py; Kiela et al. 2018's dynamic meta-embeddings), for
# the encoder of every model class; None: the word table alone.
EMBEDDING_SOURCES = Registry("meta_embedding_sources", {
    "word": "the learned word embedding E[x] (the model's input embeddings)",
    "chars": "a bidirectional RNN over the token's spelling (its UTF-8 bytes), [→h_last; ←h_first]",
    "pretrained": "fixed vectors the user supplies per token (e.g. GloVe, fastText), never trained",
})

# The end-to-end memory network's axes (memory.py; Sukhbaatar et al. 2015, MemN2N).
SENTENCE_ENCODINGS = Registry("sentence_encoding", {
    "bag_of_words": "a sentence is the sum of its words' embeddings, m_i = Σ_j A x_ij (word order is lost)",
    "position_encoding": "each word's embedding weighted by its position, m_i = Σ_j l_j ⊙ A x_ij with "
                         "l_kj = (1 − j/J) − (k/d)(1 − 2j/J) (PE)",
})
WEIGHT_TYINGS = Registry("weight_tying", {
    "adjacent": "each hop's output embedding is the next hop's input embedding, A^{k+1} = C^k; B = A^1, the "
                "answer map W^T = C^K when the answers are words; u^{k+1} = u^k + o^k",
    "layer_wise": "one A and one C shared by every hop (RNN-like), u^{k+1} = H u^k + o^k",
})
MEMORY_AXES = (SENTENCE_ENCODINGS, WEIGHT_TYINGS)

# How a question and a context (an image's regions, or a second text) attend to each other (co_attention.py; Lu et al.
# 2016's hierarchical co-attention), for the visual question answering model and the text-pair head.
CO_ATTENTIONS = Registry("coattention", {
    "parallel": "both at once through the affinity C = tanh(Q W_b Vᵀ): H^v = tanh(V W_v + Cᵀ Q W_q), "
                "H^q = tanh(Q W_q + C V W_v), a^v = softmax(H^v w_v), a^q = softmax(H^q w_q) (Lu et al. 2016)",
    "alternating": "in turn, x̂ = A(X; g) = Σ_i softmax_i(w_xᵀ tanh(W_x x_i + W_g g)) x_i: the question alone "
                   "ŝ = A(Q; 0), the context guided by it v̂ = A(V; ŝ), the question again q̂ = A(Q; v̂) (Lu et al. "
                   "2016)",
    "context": "attention on the context only, guided by the question's mean q̄: v̂ = A(V; q̄), q̂ = q̄ (one-way "
               "question-guided image attention)",
    "none": "no attention: the means of the question's features and of the context's, q̂ = mean_t q_t, "
            "v̂ = mean_n v_n (CNN with bag of words)",
})
# The levels of the question hierarchy each co-attended (question_levels.py), in this order.
QUESTION_LEVELS = ("word", "phrase", "question")


@dataclass(frozen=True)
class FieldsRead:
    """Config fields that only some values of one choice read: ``fields`` are read when the field ``choice`` is one
    of ``values`` (a list-valued choice: holds one). With any other value, a config refuses those of ``fields`` set to
    a value other than their default (the config class's own; ``configuration_bahdanau._refuse_fields_not_read``),
    in the words of ``refusal``: ``{fields}`` the fields set, as `name=value`; ``{value}`` the choice's value."""

    choice: str
    values: tuple[str, ...]
    fields: tuple[str, ...]
    refusal: str

    def reads(self, value: str | list[str] | None) -> bool:
        """Whether the choice's ``value`` reads ``fields``."""
        return any(item in self.values for item in value or ()) if isinstance(value, list) else value in self.values


# Which fields each option reads, beyond those every model of the config reads (one generic rule refuses the rest).
FIELDS_READ = (
    FieldsRead("attention_type", tuple(ATTENTION_SCORES.declared),
               ("attention_scope", "attention_mode", "use_coverage", "coverage_loss_weight", "copy_attention",
                "context_gate", "doubly_stochastic_weight"),
               "{fields} shape the attention, but `attention_type='none'` has none; pick a score (e.g. 'additive')."),
    FieldsRead("attention_type", ("location_aware",),
               ("location_filters", "location_kernel_size", "location_sharpening", "location_smoothing"),
               "{fields}: only `attention_type='location_aware'` reads it, but `attention_type` is {value!r}; set it "
               "or leave the default."),
    FieldsRead("attention_mode", ("hard_reinforce",),
               ("reinforce_baseline_decay", "reinforce_baseline", "reinforce_entropy_weight",
                "reinforce_expected_context_probability"),
               "{fields}: only `attention_mode='hard_reinforce'` reads it, but `attention_mode` is {value!r}; set it "
               "or leave the default."),
    FieldsRead("pooling_type", ("self_attentive",), ("self_attention_rows", "self_attention_penalty_weight"),
               "{fields}: only `pooling_type='self_attentive'` reads it, but `pooling_type` is {value!r}; set "
               "`pooling_type='self_attentive'` or leave the default."),
    FieldsRead("meta_embedding_sources", ("chars",), ("char_embedding_size", "char_hidden_size"),
               "{fields}: only the 'chars' source reads it, but `meta_embedding_sources` is {value!r}; add 'chars' or "
               "leave the default."),
)


def axes_table() -> str:
    """The table of the configuration axes (docs/architecture.md), one row per accepted value: the seq2seq model's,
    then the meta-embedding's sources (every model class), the classifier's pooling, the memory network's axes and the
    co-attention's forms."""
    rows = ["| field | value | what it is |", "| --- | --- | --- |"]
    for registry in (*AXES, EMBEDDING_SOURCES, POOLINGS, *MEMORY_AXES, CO_ATTENTIONS):
        rows += [f"| `{registry.field}` |{row[1:]}" for row in registry.markdown_rows()]
    return "\n".join(rows)


def all_at_once_scores() -> list[str]:
    """Every score of ``ATTENTION_SCORES`` that reads no previous alignment, so that all queries can attend at once
    (a tagger's tokens, the encoder's self-attention ``encoder_self_attention``)."""
    reads_previous = ATTENTION_SCORES.flags["reads_previous_alignment"]
    return [name for name in ATTENTION_SCORES.declared if name not in reads_previous]


def token_attention_types() -> list[str]:
    """Every value ``token_attention_type`` accepts: the token attentions, then every score that reads no previous
    alignment (the tokens attend all at once)."""
    return [*TOKEN_ATTENTIONS.declared, *all_at_once_scores()]


def describe_token_attention(name: str) -> str:
    """The model card's words for ``token_attention_type=name``."""
    if name in TOKEN_ATTENTIONS.declared:
        return TOKEN_ATTENTIONS.describe(name)
    return f"each token attends over its sentence with the {ATTENTION_SCORES.describe(name)}; f_t = [h_t; c_t]"

# The output layer of a decoder head (output_layers.py): how p(y_t) is made from the decoder's features and its
# attention α_t. No config field names it: a seq2seq head's is "pointer_generator" with `copy_attention`, else
# "softmax"; the pointer network's is "pointing".
OUTPUT_LAYERS = Registry("output_layer", {
    "softmax": "softmax over the vocabulary, p(y_t) = softmax(W_o t_t + b_o)",
    "pointer_generator": "See et al. (2017)'s pointer-generator: P(w) = (p_gen P_vocab(w) + (1 − p_gen) Σ_{j: x_j = w} "
                         "α_tj) / Z_t over the vocabulary extended by the source's own words",
    "pointing": "pointing over the input (Vinyals et al. 2015): p(C_t = j) = softmax_j(u_tj) over [end; x_1 … x_S]",
})

# The terms a head adds to its negative log-likelihood (loss_terms.py), each logged under its name: loss = NLL + Σ_k λ_k
# term_k, each term per target token (per text for the classifier's penalty) like the NLL.
LOSS_TERMS = Registry("loss_term", {
    "coverage_loss": "See et al. (2017)'s coverage loss Σ_t Σ_j min(α_tj, c_tj), λ = `coverage_loss_weight`",
    "doubly_stochastic_loss": "Xu et al. (2015)'s doubly stochastic regulariser Σ_j (1 − Σ_t α_tj)² over the real "
                              "source positions, λ = `doubly_stochastic_weight`",
    "reinforce_loss": "REINFORCE for hard attention (Xu et al. 2015): −(R − b) Σ_t log α_{t,j_t} − λ_e Σ_t H(α_t), "
                      "R = log p(y | j, x), in training with `attention_mode=\"hard_reinforce\"` (λ = 1)",
    "self_attention_penalty": "Lin et al. (2017)'s penalty ‖A Aᵀ − I‖²_F on self-attentive pooling, λ = "
                              "`self_attention_penalty_weight`",
})
