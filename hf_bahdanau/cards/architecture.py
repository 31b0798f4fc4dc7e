"""The architecture of a saved model, in words: preset, paper, cell, attention, decoder style.

Everything is read from the config (a ``config.json`` dict), so a card can be written for any saved
folder, whichever head (seq2seq, token or sequence classification, image to text) it holds. The words for each choice
are the ones its axis declares for it (``hf_bahdanau.modeling.axes``), so a new score, bridge or output layer is
described without touching this file.
"""

import math
from dataclasses import dataclass
from typing import Any

from hf_bahdanau import PRESETS
from hf_bahdanau.memory_training import LinearStartCallback
from hf_bahdanau.modeling.axes import (ATTENTION_MODES, ATTENTION_SCOPES, ATTENTION_SCORES, BRIDGES, CO_ATTENTIONS,
                                       CONTEXT_MODES, DECODER_STYLES, DEEP_OUTPUTS, EMBEDDING_SOURCES, POOLINGS,
                                       RNN_TYPES, SENTENCE_ENCODINGS, WEIGHT_TYINGS, describe_token_attention)
from hf_bahdanau.modeling.configuration_image_to_text import backbone_feature_size
from hf_bahdanau.modeling.configuration_text_coattention import CONTEXT_ENCODERS

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
MEMORY_NETWORK_PAPER = ("Sukhbaatar et al., 2015", "End-To-End Memory Networks", "https://arxiv.org/abs/1503.08895")
CO_ATTENTION_PAPER = ("Lu et al., 2016", "Hierarchical Question-Image Co-Attention for Visual Question Answering",
                      "https://arxiv.org/abs/1606.00061")
# what a VQA model is, by its ``coattention`` form (axes.CO_ATTENTIONS; the card's lines say the form in full)
VQA_FAMILIES = {"parallel": "hierarchical question–image co-attention, parallel",
                "alternating": "hierarchical question–image co-attention, alternating",
                "context": "question-guided image attention",
                "none": "a question and image model without attention (the means of both)"}
VQA_BASELINES = {"question": "a question-only baseline", "context": "an image-only baseline"}  # by ``inputs``
IMAGE_TO_TEXT_PAPER = ("Xu et al., 2015",
                       "Show, Attend and Tell: Neural Image Caption Generation with Visual Attention",
                       "https://arxiv.org/abs/1502.03044")

@dataclass
class Architecture:
    preset: str | None
    paper: tuple[str, str, str] | None
    lines: list[str]
    family: str | None = None  # what the model is when no preset can be, e.g. the memory network's "MemN2N"

    @property
    def title(self) -> str:
        if self.family is not None:
            return f"{self.family} ({self.paper[0]})"
        if self.preset is None:
            return "a custom configuration"
        return f"the {self.preset} preset ({self.paper[0]})"


def matching_preset(config: dict[str, Any]) -> str | None:
    """The preset whose every axis (all its fields except the layer counts) the config shares; the most specific
    one if several do."""
    matches = [
        (len(fields), name) for name, fields in PRESETS.items()
        if all(config.get(key) == value for key, value in fields.items() if key not in SIZE_FIELDS)
    ]
    return max(matches)[1] if matches else None


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
        words += (f" (baseline b ← {decay} b + {1 - decay:.4g} mean R; entropy bonus weight λ_e = "
                  f"{config.get('reinforce_entropy_weight', 0.0)})")
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
        words += f" ({config['char_embedding_size']}-dimensional bytes, {config['char_hidden_size']} units per direction)"
    elif name == "pretrained":
        words += f" ({config['pretrained_embedding_size']}-dimensional)"
    return words


def _decoder_lines(config: dict[str, Any], cell: str, task: str) -> list[str]:
    """The attention, decoder, initial state and output lines of a model with the recurrent decoder (translation,
    pointer network, image to text)."""
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
    if task == "pointer-network":
        lines.append("**Output**: a pointer (Vinyals et al., 2015): p(C_i = j) = softmax_j(u_ij), the decoder's "
                     "attention scores over a learned end position and the inputs; the decoder reads the input "
                     "it pointed at last")
    else:
        output = DEEP_OUTPUTS.describe(config["deep_output"])
        if config.get("tie_word_embeddings"):
            output += " (tied with the decoder embeddings)"
        lines.append(f"**Output**: {output}, over a vocabulary of {config['vocab_size']:,} tokens")
    return lines


def describe(config: dict[str, Any], task: str = "translation", trainer_state: dict[str, Any] | None = None
             ) -> Architecture:
    """Bullet lines naming every architectural choice of a ``BahdanauConfig`` dict: the encoder, then the decoder's
    (translation), the tagger's token attention (token-classification) or the pooling (text-classification); for a
    ``BahdanauMemoryNetworkConfig`` (memory-question-answering), ``describe_memory_network``'s (with ``trainer_state``,
    trainer_state.json, when linear start ended in training); for a ``BahdanauImageToTextConfig`` (image-to-text),
    ``describe_image_to_text``'s."""
    if task == "memory-question-answering":
        return describe_memory_network(config, trainer_state)
    if task == "image-to-text":
        return describe_image_to_text(config)
    if task == "visual-question-answering":
        return describe_visual_question_answering(config)
    if task == "passage-question-answering":
        return describe_text_coattention(config)
    preset = matching_preset(config)
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
        level = " (the word level)" if config.get("hierarchical") and task == "text-classification" else ""
        encoder += (f"; then self-attention over the annotations{level}: each h_j attends over its sentence with the "
                    f"{ATTENTION_SCORES.describe(config['encoder_self_attention'])}, c_j = Σ_k α_jk h_k, and "
                    "h'_j = tanh(W_s [h_j; c_j]) replaces h_j")
    lines = [encoder]
    if task in ("translation", "pointer-network"):
        lines += _decoder_lines(config, cell, task)
    elif task == "token-classification":
        lines.append(f"**Token attention**: {describe_token_attention(config['token_attention_type'])}")
    else:
        pooling_type = config.get("pooling_type", "context_vector")  # configs saved before the field: the default
        pooling = POOLINGS.describe(pooling_type)
        if pooling_type == "self_attentive":
            pooling += (f"; r = {config['self_attention_rows']} rows, penalty weight "
                        f"{config['self_attention_penalty_weight']}")
        if config.get("hierarchical"):
            pooling = ("word-level attention pooling per sentence, then a sentence-level encoder and attention pooling "
                       f"(hierarchical attention network, Yang et al., 2016); each pooling: {pooling}")
        lines.append(f"**Pooling**: {pooling}")
    if config.get("dropout"):
        lines.append(f"**Dropout**: {config['dropout']}")
    return Architecture(preset, paper_of(preset), lines)


def describe_memory_network(config: dict[str, Any], trainer_state: dict[str, Any] | None = None) -> Architecture:
    """Bullet lines naming every choice of a ``BahdanauMemoryNetworkConfig`` dict (Sukhbaatar et al., 2015): hops, sentence
    encoding, weight tying, temporal encoding with random noise, linear start (the config's, or when trainer_state.json
    ``trainer_state`` records that ``LinearStartCallback`` ended it, that training's) and the answers."""
    hops = config["num_hops"]
    lines = [f"**Memory**: K = {hops} hop{'s' if hops > 1 else ''} of attention over the memory sentences, d = "
             f"{config['hidden_size']}, a vocabulary of {config['vocab_size']:,} words; hop k reads p_i = "
             "softmax_i(u^kᵀ m_i), o^k = Σ_i p_i c_i from the question state u^k (u^1: the question's encoding)",
             "**Sentence encoding** (memory sentences and question alike): "
             + SENTENCE_ENCODINGS.describe(config["sentence_encoding"]),
             f"**Weight tying**: {WEIGHT_TYINGS.describe(config['weight_tying'])}"]
    if config["temporal_encoding"]:
        temporal = ("T_A(t_i) and T_C(t_i) are added to m_i and c_i, t_i = the number of sentences after x_i (TE); at "
                    f"most memory_size = {config['memory_size']} sentences")
        if config["random_noise"]:
            temporal += (f"; random noise (RN) in training: up to ⌈{config['random_noise']} n⌉ empty memories "
                         "inserted at random among the n sentences")
    else:
        temporal = "none: the sentences' order is not seen (the memory is a set)"
    lines.append(f"**Temporal encoding**: {temporal}")
    ended = (((trainer_state or {}).get("stateful_callbacks") or {}).get(LinearStartCallback.__name__) or {}).get(
        "attributes", {}).get("ended_at_epoch")
    if config["linear_start"]:
        linear_start = "on: the hops' softmax is left out (p_i = u^kᵀ m_i), as in the first epochs of training"
    elif ended is not None:
        linear_start = (f"in training: the hops' softmax was left out (p_i = u^kᵀ m_i) for the first {ended:g} "
                        "epochs, then put back; every hop of the saved model is a softmax")
    else:
        linear_start = "off: every hop's attention is a softmax"
    lines.append(f"**Linear start**: {linear_start}")
    answers = (f"**Answers**: one of {len(config.get('id2label') or {})} answers (a closed answer vocabulary), â = "
               "softmax(W u^{K+1}); ")
    tied = config.get("answer_token_ids") is not None and config["weight_tying"] == "adjacent"
    lines.append(answers + ("W is tied to the last output embedding, W^T = C^K (the answers' word rows)" if tied
                            else "W is its own [answers, d] matrix"))
    return Architecture(None, MEMORY_NETWORK_PAPER, lines, family="an end-to-end memory network, MemN2N")


def _coattention_lines(config: dict[str, Any], context: str) -> list[str]:
    """The lines of a co-attention card (Lu et al., 2016) after its context's (the image's or the passage's): the
    question's levels (or ``inputs="context"``'s none: the baseline reads the ``context`` alone), the co-attention
    form at each level (``axes.CO_ATTENTIONS``' words) and the answer MLP over the answer vocabulary."""
    levels = {"word": "words, q^w_t = E x_t", "phrase": "phrases, q^p_t = max over n-grams of "
              f"{', '.join(map(str, config['phrase_windows']))} words of tanh(W_c^n [q^w_t; …; q^w_{{t+n−1}}])",
              "question": "the question, q^s_t = LSTM(q^p)_t"}
    question = (f"none: this baseline reads the {context} alone (q̂ = 0)" if config["inputs"] == "context" else
                f"{config['vocab_size']:,} words embedded in d = {config['hidden_size']}, read at "
                f"{len(config['question_levels'])} level{'s' if len(config['question_levels']) > 1 else ''}: "
                + "; ".join(levels[name] for name in config["question_levels"]))
    return [f"**Question**: {question}",
            f"**Co-attention** at each level, k = {config['attention_size']}: "
            + CO_ATTENTIONS.describe(config["coattention"]),
            f"**Answer**: h^1 = tanh(W_1 (q̂^1 + v̂^1)), h^l = tanh(W_l [q̂^l + v̂^l; h^{{l−1}}]) of "
            f"{config['answer_hidden_size']} units; p = softmax(W_h h^L) over {len(config.get('id2label') or {})} "
            "answers (a closed answer vocabulary)"]


def describe_text_coattention(config: dict[str, Any]) -> Architecture:
    """Bullet lines naming every choice of a ``BahdanauTextCoAttentionConfig`` dict (Lu et al., 2016, over two texts): the
    passage encoder (words embedded by the question's table E), then ``_coattention_lines``."""
    if config["inputs"] == "question":
        passage = "none: this baseline reads the question alone (v̂ = 0)"
    else:
        passage = "its words embedded by the question's table E; " + CONTEXT_ENCODERS[config["context_encoder"]]
        if config["context_encoder"] == "bilstm":
            passage += f" ({config['context_hidden_size']} units per direction)"
    lines = [f"**Passage**: {passage}", *_coattention_lines(config, "passage")]
    if config.get("dropout"):
        lines.append(f"**Dropout**: {config['dropout']}")
    return Architecture(None, CO_ATTENTION_PAPER, lines, family="a question–passage co-attention classifier")


def describe_image_to_text(config: dict[str, Any]) -> Architecture:
    """Bullet lines naming every choice of a ``BahdanauImageToTextConfig`` dict (Xu et al., 2015): the image encoder
    (our CNN's blocks and the grid they leave, or the backbone and where its weights came from; the region position
    encoding), then the recurrent decoder's lines as for translation."""
    encoder = image_encoder_words(config, config["encoder_hidden_size"],
                                  "ā = the mean annotation over the image's real regions")
    cell = RNN_TYPES.describe(config["rnn_type"])
    lines = [f"**Image encoder**: {encoder}", *_decoder_lines(config, cell, "image-to-text")]
    if config.get("dropout"):
        lines.append(f"**Dropout**: {config['dropout']}")
    family = ("Show, Attend and Tell: a recurrent decoder attending over the regions of an image"
              if config["attention_type"] != "none" else
              "an image-to-text model without attention: a recurrent decoder reading the image's mean annotation")
    return Architecture(None, IMAGE_TO_TEXT_PAPER, lines, family=family)


def image_encoder_words(config: dict[str, Any], annotation_size: int, summary: str) -> str:
    """Show, Attend and Tell's image encoder in words (an image-to-text or VQA config dict): our CNN's blocks and the
    grid they leave, or the backbone and where its weights came from; the D-sized annotations, ``summary`` (what the
    model makes of them) and the region position encoding."""
    channels = config["num_channels"]
    pixels = f"{channels} input channel{'s' if channels > 1 else ''} ({'grey' if channels == 1 else 'RGB'})"
    if config.get("backbone_config") is None:
        pools = config["cnn_pool_sizes"]
        blocks = len(config["cnn_channels"])
        encoder = (f"our CNN over {pixels}: {blocks} block{'s' if blocks > 1 else ''} a^l = maxpool_{{p_l}}(ReLU(W_l ∗ "
                   "a^{l−1} + b_l)) of 3×3 convolutions with " + " → ".join(map(str, config["cnn_channels"]))
                   + " channels and max pooling p_l = " + ", ".join(f"{height}×{width}" for height, width in pools)
                   + f" (ceil mode); an H × W image leaves a grid of H' = ⌈H / {math.prod(pool[0] for pool in pools)}⌉"
                   f" × W' = ⌈W / {math.prod(pool[1] for pool in pools)}⌉ regions")
    else:
        backbone = config.get("backbone")
        weights = f"weights initialised from `{backbone}`" if backbone else "weights initialised at random"
        encoder = (f"a transformers `{config['backbone_config']['model_type']}` vision backbone, {weights}, over "
                   f"{pixels}; its last feature map is the grid of H' × W' regions")
    encoder += f", each an annotation a_i of D = {annotation_size} features, read row by row; {summary}"
    if config.get("region_position_encoding"):
        encoder += "; a 2-D sinusoidal encoding of each region's row and column is added to its annotation"
    else:
        encoder += "; the annotations carry no encoding of their position (as in the paper)"
    return encoder


def describe_visual_question_answering(config: dict[str, Any]) -> Architecture:
    """Bullet lines naming every choice of a ``BahdanauVisualQuestionAnsweringConfig`` dict (Lu et al., 2016): the image
    encoder (as Show, Attend and Tell's, ``image_encoder_words``), then ``_coattention_lines``."""
    if config["inputs"] == "question":
        image = "none: this baseline reads the question alone (v̂ = 0)"
    else:
        annotations = (config["cnn_channels"][-1] if config.get("backbone_config") is None
                       else backbone_feature_size(config["backbone_config"]))
        image = image_encoder_words(config, annotations,
                                    f"made question-sized, v_n = tanh(W_i a_n + b_i), d = {config['hidden_size']}")
    lines = [f"**Image encoder**: {image}", *_coattention_lines(config, "image")]
    if config.get("dropout"):
        lines.append(f"**Dropout**: {config['dropout']}")
    family = VQA_BASELINES.get(config["inputs"]) or VQA_FAMILIES[config["coattention"]]
    return Architecture(None, CO_ATTENTION_PAPER, lines, family=family)
