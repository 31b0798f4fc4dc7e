"""The deep output: t = φ(W_r [features]) before the vocabulary projection (``DEEP_OUTPUTS``, the ``deep_output``
field). Luong's attentional vector h̃ = tanh(W_c [c; h]) is the tanh case."""

from torch import Tensor, nn

from .axes import DEEP_OUTPUTS

__all__ = ["DEEP_OUTPUTS", "DeepOutput", "IdentityOutput", "MaxoutOutput", "TanhOutput"]


class DeepOutput(nn.Module):
    """t = φ(W_r x + b_r): x [..., input_size] -> t [..., output_size]; ``proj`` holds W_r and b_r, with
    ``pieces`` x output_size rows. Subclasses give φ."""

    pieces = 1

    def __init__(self, input_size: int, output_size: int):
        super().__init__()
        self.output_size = output_size
        self.proj = nn.Linear(input_size, output_size * self.pieces)

    def forward(self, features: Tensor) -> Tensor:
        return self.activate(self.proj(features))

    def activate(self, pre_output: Tensor) -> Tensor:
        raise NotImplementedError


@DEEP_OUTPUTS.register("none")
class IdentityOutput(DeepOutput):
    """t = W_r x + b_r."""

    def activate(self, pre_output: Tensor) -> Tensor:
        return pre_output


@DEEP_OUTPUTS.register("tanh")
class TanhOutput(DeepOutput):
    """t = tanh(W_r x + b_r) (Luong's h̃ = tanh(W_c [c; h]))."""

    def activate(self, pre_output: Tensor) -> Tensor:
        return pre_output.tanh()


@DEEP_OUTPUTS.register("maxout")
class MaxoutOutput(DeepOutput):
    """Maxout (Bahdanau et al., appendix A): t_k = max(t̃_{2k-1}, t̃_{2k}) with t̃ = W_r x + b_r, so W_r has
    2 x output_size rows."""

    pieces = 2

    def activate(self, pre_output: Tensor) -> Tensor:
        return pre_output.unflatten(-1, (self.output_size, self.pieces)).amax(dim=-1)
