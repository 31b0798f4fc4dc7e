"""The card's words of the two co-attention families (Lu et al., 2016), VQA and passage question answering: the
question's levels, the co-attention at each and the answer MLP."""

from typing import Any

from hf_bahdanau.modeling.axes import CO_ATTENTIONS

__all__ = ["CO_ATTENTION_PAPER", "coattention_lines"]

CO_ATTENTION_PAPER = ("Lu et al., 2016", "Hierarchical Question-Image Co-Attention for Visual Question Answering",
                      "https://arxiv.org/abs/1606.00061")


def coattention_lines(config: dict[str, Any], context: str) -> list[str]:
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
