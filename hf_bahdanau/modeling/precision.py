"""Mixed precision: what stays in float32 when a model runs under ``torch.autocast`` (``--bf16``, ``--fp16``).

Autocast runs the matrix products in a 16-bit dtype: bfloat16 keeps 8 significant bits (each value rounded by up to
u = 2⁻⁸ ≈ 0.4% of itself), float16 11 bits and a range that ends at 65504. That suits the products, whose float32
accumulation autocast keeps, but not what follows them: a softmax over S positions computed in bfloat16 sums to 1
only within about S · u, and a loss of log-probabilities rounded to 8 bits is off by up to u · |log p| per token. So
the attention weights, the output distributions, their logs and the losses are computed in float32 at least
(``float32_at_least``), and handed on in float32 under autocast, where every product that reads them casts them for
itself (``softmax_dtype``). Without autocast nothing changes: float32 and float64 models compute in their own dtype,
bit for bit as before, and a model loaded in bfloat16 gets its weights back in bfloat16.
"""

import torch
from torch import Tensor

__all__ = ["float32_at_least", "softmax_dtype"]


def float32_at_least(tensor: Tensor) -> Tensor:
    """``tensor`` in float32 if it is in a 16-bit dtype (bfloat16, float16), else as it is (float32, float64)."""
    return tensor.to(torch.promote_types(tensor.dtype, torch.float32))


def softmax_dtype(inputs: Tensor) -> torch.dtype:
    """The dtype a softmax (or log-softmax) computed from ``inputs`` is returned in: float32 at least while autocast
    runs on ``inputs``' device, else ``inputs``' own dtype."""
    if torch.is_autocast_enabled(inputs.device.type):
        return torch.promote_types(inputs.dtype, torch.float32)
    return inputs.dtype
