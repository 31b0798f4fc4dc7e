"""The deep output: t = φ(W_r [features]) before the vocabulary projection."""

from torch import Tensor, nn


class DeepOutput(nn.Module):
    """t = φ(W_r x + b_r) with φ ∈ {none: identity, tanh, maxout}.

    Maxout (Bahdanau et al., appendix A): t_k = max(t̃_{2k-1}, t̃_{2k}), so W_r has 2 x output_size rows.
    Luong's attentional vector h̃ = tanh(W_c [c; h]) is the tanh case.
    x [..., input_size] -> t [..., output_size].
    """

    PIECES = {"none": 1, "tanh": 1, "maxout": 2}

    def __init__(self, input_size: int, output_size: int, kind: str):
        super().__init__()
        self.kind, self.output_size = kind, output_size
        self.proj = nn.Linear(input_size, output_size * self.PIECES[kind])

    def forward(self, features: Tensor) -> Tensor:
        pre_output = self.proj(features)
        if self.kind == "tanh":
            return pre_output.tanh()
        if self.kind == "maxout":
            return pre_output.unflatten(-1, (self.output_size, 2)).amax(dim=-1)
        return pre_output
