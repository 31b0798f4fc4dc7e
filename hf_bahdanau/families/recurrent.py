"""The card's words of the families built on the recurrent encoder (seq2seq, pointer network, tagger, classifiers,
image to text): the preset and paper a config matches, the encoder's and the decoder's lines, the tags and the
limitations they share, and the alignment pictures.

Each choice reads as the words its axis declares for it (``hf_bahdanau.modeling.axes``), so a new score, bridge or
output layer is described without touching this file.
"""

import re
from collections.abc import Callable
from typing import Any

from hf_bahdanau.families import Picture
from hf_bahdanau.families.words import DISTRIBUTION
from hf_bahdanau.modeling.axes import (ATTENTION_MODES, ATTENTION_SCOPES, ATTENTION_SCORES, BRIDGES, CONTEXT_MODES,
                                       DECODER_STYLES, DEEP_OUTPUTS, EMBEDDING_SOURCES, RNN_TYPES)
from hf_bahdanau.modeling.configuration_bahdanau import PRESETS

__all__ = ["ALIGNMENTS", "CLOSED_VOCABULARY", "PAPERS", "RECURRENT", "RECURRENT_ENCODER", "decoder_lines",
           "encoder_line", "matching_preset", "paper_of", "recurrent_limitations", "rnn_tags",
           "vocabulary_output"]

SIZE_FIELDS = ("encoder_layers", "decoder_layers")  # presets fix them; small models override them

PAPERS = {
    "rnnencdec": ("Cho et al., 2014", "Learning Phrase Representations using RNN Encoder–Decoder for Statistical "
                  "Machine Translation", "https://arxiv.org/abs/1406.1078"),
    "sutskever": ("Sutskever et al., 2014", "Sequence to Sequence Learning with Neural Networks",
                  "https://arxiv.org/abs/1409.3215"),
    "rnnsearch": ("Bahdanau et al., 2015", "Neural Machine Translation by Jointly Learning to Align and Translate",
                  "https://arxiv.org/abs/1409.0473"),
    "luong": ("Luong et al., 2015", "Effective Approaches to Attention-based Neural Machine Translation",
              "https://arxiv.org/abs/1508.04025"),
    "rnnsearch-monotonic": ("Raffel et al., 2017", "Online and Linear-Time Attention by Enforcing Monotonic "
                            "Alignments", "https://arxiv.org/abs/1704.00784"),
    "rnnsearch-location": ("Chorowski et al., 2015", "Attention-Based Models for Speech Recognition",
                           "https://arxiv.org/abs/1506.07503"),
}
RECURRENT = ("Recurrent encoder and decoder: each sequence is read token by token, so long inputs are slower than with "
             "a Transformer of the same size, and generation cannot be parallelised over time steps.")
RECURRENT_ENCODER = ("Recurrent encoder: each text is read token by token, so long inputs are slower than with a "
                     "Transformer of the same size.")
CLOSED_VOCABULARY = "Closed vocabulary: tokens absent from the tokenizer's training data become `<unk>`."
# the pictures of each output token's attention over its source (the training scripts' align_*.png)
ALIGNMENTS = Picture(re.compile("align"), "Alignments", "Soft alignments α_ij: one row per generated token, one column "
                     "per source token (as in figure 3 of Bahdanau et al.).", "alignment")


def matching_preset(config: dict[str, Any]) -> str | None:
    """The preset whose every axis (its fields but the layer counts) the config shares, among the fields the config
    has (an encoder-only config, the tagger's and the classifiers', has no decoder field); the most specific one if
    several do, the first declared of those equally specific (the encoders of rnnsearch and rnnsearch-location are
    one)."""
    matches = [
        (len([key for key in fields if key in config]), -order, name)
        for order, (name, fields) in enumerate(PRESETS.items())
        if all(config[key] == value for key, value in fields.items() if key not in SIZE_FIELDS and key in config)
    ]
    return max(matches)[2] if matches else None


def paper_of(preset: str | None) -> tuple[str, str, str] | None:
    if preset is None:
        return None
    return PAPERS["luong" if preset.startswith("luong") else preset]


def _where_and_how(config: dict[str, Any]) -> str:
    """The attention's scope, mode, coverage and copying in words (configs saved before these fields read as the
    defaults)."""
    scope = config.get("attention_scope", "global")
    words = ATTENTION_SCOPES.describe(scope)
    if scope.startswith("local"):
        words += f", D = {config['local_window']}"
    mode = config.get("attention_mode", "soft")
    words += "; " + ATTENTION_MODES.describe(mode)
    if mode == "hard_reinforce":
        decay = config.get("reinforce_baseline_decay", 0.9)
        expected = config.get("reinforce_expected_context_probability", 0.0)
        baseline = (f"baseline T_n r̄, r̄ ← {decay} r̄ + {1 - decay:.4g} mean R_n / T_n"
                    if config.get("reinforce_baseline", "sequence") == "per_token"
                    else f"baseline b ← {decay} b + {1 - decay:.4g} mean R")
        words += (f" ({baseline}; entropy bonus weight λ_e = "
                  f"{config.get('reinforce_entropy_weight', 0.0)}"
                  + (f"; in training each sequence attends by the expected context α with probability {expected}"
                     if expected else "") + ")")
    if config.get("context_gate"):
        words += "; gated context β_i c_i, β_i = σ(w_βᵀ q_i + b_β) (Xu et al., 2015)"
    if config.get("doubly_stochastic_weight"):
        words += ("; trained with the doubly stochastic regulariser λ Σ_j (1 − Σ_i α_ij)², "
                  f"λ = {config['doubly_stochastic_weight']}")
    if config.get("use_coverage"):
        words += "; the score reads the coverage c_ij = Σ_{i'<i} α_i'j (e = vᵀ tanh(W q_i + U h_j + w_c c_ij))"
    if config.get("coverage_loss_weight"):
        words += f"; trained with the coverage loss λ Σ_j min(α_ij, c_ij), λ = {config['coverage_loss_weight']}"
    if config.get("copy_attention"):
        words += ("; pointer-generator copying (See et al., 2017): P(w) = p_gen P_vocab(w) + (1 − p_gen) "
                  "Σ_{j: x_j = w} α_ij, so source words outside the vocabulary can be output")
    return words


def _embedding_source(name: str, config: dict[str, Any]) -> str:
    """The model card's words for one meta-embedding source, with its sizes."""
    words = EMBEDDING_SOURCES.describe(name)
    if name == "chars":
        words += (f" ({config['char_embedding_size']}-dimensional bytes, {config['char_hidden_size']} units per "
                  "direction)")
    elif name == "pretrained":
        words += f" ({config['pretrained_embedding_size']}-dimensional)"
    return words


def encoder_line(config: dict[str, Any], word_level: bool = False) -> str:
    """The encoder's line of a ``BahdanauConfig`` dict: layers, cell, sizes, meta-embeddings, reversal, input
    features and self-attention (``word_level``: a hierarchical classifier's, which reads its words first)."""
    cell = RNN_TYPES.describe(config["rnn_type"])
    directions = "bidirectional " if config["bidirectional"] else ""
    encoder = (f"**Encoder**: {config['encoder_layers']}-layer {directions}{cell}, {config['encoder_hidden_size']} "
               f"units per direction, over {config['embedding_size']}-dimensional embeddings")
    if config.get("meta_embedding_sources"):  # configs saved before the field: the word table alone
        encoder += (f" mixed per token from {len(config['meta_embedding_sources'])} sources by attention (dynamic "
                    "meta-embeddings, Kiela et al., 2018: x̃_i = Σ_j α_ij (P_j w_ij + b_j), α_ij = softmax_j(aᵀ (P_j "
                    "w_ij + b_j) + b)): " + "; ".join(_embedding_source(name, config)
                                                     for name in config["meta_embedding_sources"]))
    if config.get("reverse_source"):
        encoder += "; the source is read in reverse"
    if config.get("input_feature_size"):
        encoder += f" (a linear map of each {config['input_feature_size']}-dimensional input vector)"
    if config.get("encoder_self_attention"):  # configs saved before the field: off
        level = " (the word level)" if config.get("hierarchical") and word_level else ""
        encoder += (f"; then self-attention over the annotations{level}: each h_j attends over its sentence with the "
                    f"{ATTENTION_SCORES.describe(config['encoder_self_attention'])}, c_j = Σ_k α_jk h_k, and "
                    "h'_j = tanh(W_s [h_j; c_j]) replaces h_j")
    return encoder


def vocabulary_output(config: dict[str, Any]) -> str:
    """The output line of a decoder predicting the vocabulary: its deep output and size."""
    output = DEEP_OUTPUTS.describe(config["deep_output"])
    if config.get("tie_word_embeddings"):
        output += " (tied with the decoder embeddings)"
    return f"**Output**: {output}, over a vocabulary of {config['vocab_size']:,} tokens"


def decoder_lines(config: dict[str, Any], output: str) -> list[str]:
    """The attention, decoder, initial state and ``output`` lines of a model with the recurrent decoder (translation,
    pointer network, image to text)."""
    cell = RNN_TYPES.describe(config["rnn_type"])
    lines = []
    if config["attention_type"] == "none":
        attention = CONTEXT_MODES.describe(config["context_mode"])
    else:
        attention = ATTENTION_SCORES.describe(config["attention_type"])
        if config["attention_type"] == "multihead":
            attention += f" ({config['num_attention_heads']} heads)"
        elif config["attention_type"] == "location_aware":
            attention += (f" ({config['location_filters']} filters of width {config['location_kernel_size']}, "
                          f"sharpening β = {config['location_sharpening']}"
                          + ("; smoothing: α_ij = σ(β e_ij) / Σ_k σ(β e_ik) in place of the softmax"
                             if config.get("location_smoothing") else "") + ")")
        attention += f", attention size {config['attention_size']}"
        attention += "; " + _where_and_how(config)
    lines.append(f"**Attention**: {attention}")
    decoder = f"**Decoder**: {config['decoder_layers']}-layer {cell} with {config['hidden_size']} units"
    if config["attention_type"] != "none":
        decoder += "; " + DECODER_STYLES.describe(config["decoder_style"])
        if config.get("input_feeding"):
            decoder += "; input feeding (h̃_{i-1} is fed to the next step)"
    lines.append(decoder)
    lines.append(f"**Initial decoder state**: {BRIDGES.describe(config['bridge'])}")
    lines.append(output)
    return lines


def rnn_tags(topics: tuple[str, ...] = (), inputs: tuple[str, ...] = ()) -> Callable[[dict, dict], list[str]]:
    """``CardWords.tags`` of a recurrent model: its ``topics`` (e.g. "show-attend-and-tell"), rnn, whether it
    attends, its cell and what it reads besides text (``inputs``, e.g. "vision")."""

    def tags(config: dict[str, Any], processor: dict[str, Any]) -> list[str]:
        attends = "attention" if config.get("attention_type") != "none" else "no-attention"
        return [*topics, "rnn", attends, config["rnn_type"], *inputs]

    return tags


def recurrent_limitations(config: dict[str, Any], vocabulary: str = CLOSED_VOCABULARY, recurrent: str = RECURRENT
                          ) -> list[str]:
    """What every model with the recurrent encoder cannot do (``recurrent``: RECURRENT_ENCODER for a model without a
    decoder; ``vocabulary``: what limits its outputs), and location attention's bound on the source."""
    lines = [recurrent, vocabulary, DISTRIBUTION]
    if config.get("attention_type") == "location":
        lines.append(f"Location attention scores at most {config['max_source_positions']} source positions.")
    return lines
