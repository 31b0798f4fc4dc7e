"""The question hierarchy of Lu et al. (2016): features of a text at three levels, each co-attended on its own.

    word      q^w_t = E x_t                                            (the embeddings)
    phrase    q^p_t = max_{s ∈ windows} tanh(W^s_c [q^w_t; …; q^w_{t+s−1}] + b^s_c)   (n-gram convolutions, 0 beyond
                                                                       the words, max over the window sizes)
    question  q^s_t = LSTM(q^p)_t

Every level is [B, T, d] with 0 on padding. The words are read right-padded (``PaddingLayout.to_right``), so a
left-padded text gives the same features at its words.
"""

import torch
from torch import Tensor, nn
from torch.nn import functional

from .axes import QUESTION_LEVELS
from .recurrent import RecurrentStack

__all__ = ["QUESTION_LEVELS", "QuestionLevels"]


class QuestionLevels(nn.Module):
    """words [B, T, d] (right-padded, 0 on padding), lengths [B] -> the features of each of ``levels`` (a subset of
    ``QUESTION_LEVELS`` in that order), each [B, T, d]."""

    def __init__(self, hidden_size: int, levels: list[str], phrase_windows: list[int]) -> None:
        super().__init__()
        self.levels = list(levels)
        reads_phrases = "phrase" in levels or "question" in levels
        self.phrase_windows = list(phrase_windows) if reads_phrases else []
        self.phrases = nn.ModuleList(nn.Conv1d(hidden_size, hidden_size, size) for size in self.phrase_windows)
        self.sentence = (RecurrentStack("lstm", hidden_size, hidden_size, num_layers=1)
                         if "question" in levels else None)

    def forward(self, words: Tensor, lengths: Tensor) -> list[Tensor]:
        mask = (torch.arange(words.shape[1], device=words.device) < lengths.unsqueeze(1)).unsqueeze(-1)
        features = {"word": words}
        if self.phrases:
            columns = words.transpose(1, 2)  # [B, d, T]
            grams = [torch.tanh(convolution(functional.pad(columns, (0, size - 1))))
                     for convolution, size in zip(self.phrases, self.phrase_windows)]
            features["phrase"] = torch.stack(grams).amax(0).transpose(1, 2) * mask
        if self.sentence is not None:
            outputs, _ = self.sentence(features["phrase"], lengths=lengths)
            features["question"] = outputs[-1] * mask
        return [features[level] for level in self.levels]
