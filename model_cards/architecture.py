"""The architecture of a saved model, in words: preset, paper, cell, attention, decoder style.

Everything is read from the config (a ``config.json`` dict), so a card can be written for any saved
folder, whichever head (seq2seq, token or sequence classification) it holds.
"""

from dataclasses import dataclass
from typing import Any

from hf_bahdanau import PRESETS

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
}

SCORES = {
    "additive": "additive (Bahdanau) score e_ij = v_aᵀ tanh(W_a q_i + U_a h_j)",
    "concat": "additive (Luong's concat) score e_ij = v_aᵀ tanh(W_a q_i + U_a h_j)",
    "dot": "dot score e_ij = q_iᵀ h_j",
    "general": "general (bilinear) score e_ij = q_iᵀ W_a h_j",
    "scaled_dot": "scaled dot score e_ij = q_iᵀ h_j / √d",
    "location": "location score e_i = W_a q_i (one score per source position, the keys are not read)",
    "multihead": "multi-head scaled dot attention",
    "gaussian_kernel": "Gaussian-kernel score e_ij = -½ (w ‖q_i - h_j‖)²",
}

DECODER_STYLES = {
    "bahdanau": "Bahdanau style: attend with the previous state s_{i-1}, then update s_i = f(s_{i-1}, y_{i-1}, c_i)",
    "luong": "Luong style: update h_i first, then attend with it and read out h̃_i = tanh(W_c [c_i; h_i])",
}

CONTEXTS = {
    "cho": "no attention: the encoder summary c = tanh(V h_S) conditions every decoder step and the output "
           "(Cho et al., 2014)",
    "sutskever": "no attention: the encoder's final state only initialises the decoder (Sutskever et al., 2014)",
}

BRIDGES = {
    "zero": "zeros",
    "last": "the encoder's final states, layer by layer",
    "tanh": "tanh(W_s h) of the encoder's final (backward) state",
    "mean": "tanh(W_s mean_j h_j)",
}

DEEP_OUTPUTS = {
    "none": "the decoder output goes straight to the vocabulary projection",
    "tanh": "a tanh deep-output layer before the vocabulary projection",
    "maxout": "a maxout deep-output layer t_i = max(W_o [s_i; E y_{i-1}; c_i]) before the vocabulary projection",
}


@dataclass
class Architecture:
    preset: str | None
    paper: tuple[str, str, str] | None
    lines: list[str]

    @property
    def title(self) -> str:
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


def describe(config: dict[str, Any], with_decoder: bool = True) -> Architecture:
    """Bullet lines naming every architectural choice of a ``BahdanauConfig`` dict (the decoder's only with
    ``with_decoder``: classification heads read the encoder alone)."""
    preset = matching_preset(config)
    cell = config["rnn_type"].upper()
    directions = "bidirectional " if config["bidirectional"] else ""
    encoder = (f"**Encoder**: {config['encoder_layers']}-layer {directions}{cell}, {config['encoder_hidden_size']} "
               f"units per direction, over {config['embedding_size']}-dimensional embeddings")
    if config.get("reverse_source"):
        encoder += "; the source is read in reverse"
    lines = [encoder]
    if with_decoder:
        if config["attention_type"] == "none":
            attention = CONTEXTS[config["context_mode"]]
        else:
            attention = SCORES[config["attention_type"]]
            if config["attention_type"] == "multihead":
                attention += f" ({config['num_attention_heads']} heads)"
            attention += f", attention size {config['attention_size']}"
        lines.append(f"**Attention**: {attention}")
        decoder = f"**Decoder**: {config['decoder_layers']}-layer {cell} with {config['hidden_size']} units"
        if config["attention_type"] != "none":
            decoder += "; " + DECODER_STYLES[config["decoder_style"]]
            if config.get("input_feeding"):
                decoder += "; input feeding (h̃_{i-1} is fed to the next step)"
        lines.append(decoder)
        lines.append(f"**Initial decoder state**: {BRIDGES[config['bridge']]}")
        output = DEEP_OUTPUTS[config["deep_output"]]
        if config.get("tie_word_embeddings"):
            output += " (tied with the decoder embeddings)"
        lines.append(f"**Output**: {output}, over a vocabulary of {config['vocab_size']:,} tokens")
    if config.get("dropout"):
        lines.append(f"**Dropout**: {config['dropout']}")
    return Architecture(preset, paper_of(preset), lines)
