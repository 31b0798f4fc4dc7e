"""A linear map applied at every step of a loop, whose weight gradient is taken once, after the loop.

Backpropagating through T steps of y_t = x_t Wᵀ + b makes, step by step, ∂L/∂x_t = g_t W and a
small product g_tᵀ x_t (inner size B) that is summed into ∂L/∂W in place. Here each step's backward
computes only g_t W and keeps g_t. After every step is done, the weight's gradient is one product
of inner size B·T:

    ∂L/∂W = Σ_t g_tᵀ x_t = [g_1; …; g_T]ᵀ [x_1; …; x_T],   ∂L/∂b = Σ_t Σ_rows g_t

This is the same sum, done as one large matrix product instead of T thin ones and T additions.
Autograd runs the gather after all the steps because every step reads the weight through it.

The weight may also be one matrix per batch row, W [B, out, in] (an attention memory read at every
step: scores K q_t, contexts Σ_j α_tj v_j); then y_t[b] = W[b] x_t[b] and ∂L/∂W[b] = Σ_t g_t[b]ᵀ x_t[b],
one batched product after the loop instead of an outer product and a [B, out, in] addition per step.
"""

import torch
from torch import Tensor
from torch.nn import functional as F


class _Record:
    """The inputs x_t of every step and, during backward, the gradients g_t of their outputs."""

    def __init__(self, batched: bool):
        self.batched = batched
        self.inputs: list[Tensor] = []
        self.output_grads: dict[int, Tensor] = {}


class _GatherParameterGrads(torch.autograd.Function):
    """Identity on (W[, b]) in forward; in backward, ∂L/∂W = Gᵀ X (and ∂L/∂b = Σ G) from the record."""

    @staticmethod
    def forward(ctx, record: _Record, *parameters: Tensor) -> tuple[Tensor, ...]:
        ctx.record = record
        ctx.set_materialize_grads(False)
        return tuple(p.view_as(p) for p in parameters)

    @staticmethod
    def backward(ctx, *unused_grads):
        record = ctx.record
        steps = sorted(record.output_grads)
        if not steps:
            return (None,) * (1 + len(unused_grads))
        grads = torch.stack([record.output_grads[t] for t in steps], dim=1)  # G [B, T, out]
        # X [B, T, in], in G's dtype: under autocast the steps' products, and so G, are 16-bit (autograd casts ∂L/∂W
        # to W's dtype)
        inputs = torch.stack([record.inputs[t] for t in steps], dim=1).to(grads.dtype)
        record.output_grads.clear()
        if record.batched:
            return None, grads.transpose(1, 2) @ inputs  # [B, out, in]
        grads, inputs = grads.flatten(0, 1), inputs.flatten(0, 1)
        grad_weight = grads.t() @ inputs
        return (None, grad_weight, grads.sum(0)) if len(unused_grads) == 2 else (None, grad_weight)


class _StepLinear(torch.autograd.Function):
    """y_t = a_t + x_t Wᵀ (+ b); backward sends g_t W to x_t and g_t to a_t, and leaves g_t in the record."""

    @staticmethod
    def forward(ctx, inputs: Tensor, addend: Tensor | None, record: _Record, weight: Tensor,
                bias: Tensor | None = None) -> Tensor:
        ctx.save_for_backward(weight)
        ctx.record, ctx.step = record, len(record.inputs)
        record.inputs.append(inputs.detach())
        output = _apply(weight, inputs, bias)
        return output if addend is None else output.add_(addend)

    @staticmethod
    def backward(ctx, grad_output: Tensor):
        (weight,) = ctx.saved_tensors
        ctx.record.output_grads[ctx.step] = grad_output
        grad_inputs = None
        if ctx.needs_input_grad[0]:
            weight = weight.to(grad_output.dtype)  # the product's dtype: 16-bit under autocast, as in forward
            grad_inputs = (grad_output.unsqueeze(1) @ weight).squeeze(1) if weight.dim() == 3 else grad_output @ weight
        grad_addend = grad_output if ctx.needs_input_grad[1] else None
        return grad_inputs, grad_addend, None, None, None


def _apply(weight: Tensor, inputs: Tensor, bias: Tensor | None) -> Tensor:
    """x Wᵀ + b for W [out, in]; W[b] x[b] for W [B, out, in], as the row product x[b]ᵀ W[b]ᵀ (on CPU
    faster than W[b] times a column: 0.31 against 0.39 ms for keys [64, 40, 256], 0.28 against 0.41 ms for
    the values' transpose)."""
    if weight.dim() == 3:
        return torch.bmm(inputs.unsqueeze(1), weight.transpose(1, 2)).squeeze(1)
    return F.linear(inputs, weight, bias)


class LoopLinear:
    """x_t [B, in] -> a_t + x_t Wᵀ + b [B, out] at every step of one loop (build one per forward pass): the per-step
    products of ``reference._attend`` (c_t = Σ_j α_tj h_j, and q·k scores) and of the decoder's input maps.

    weight [out, in], or [B, out, in] for one matrix per batch row (then without bias); bias [out] or
    None; the addend a_t [B, out] is optional. With autograd off (inference) it is a plain product.
    """

    def __init__(self, weight: Tensor, bias: Tensor | None = None):
        if weight.dim() not in (2, 3) or (weight.dim() == 3 and bias is not None):
            raise ValueError(f"weight must be [out, in] (with an optional bias) or [batch, out, in] (without), "
                             f"got weight of shape {tuple(weight.shape)} and bias {bias is not None}")
        self.record = None
        self.weight, self.bias = weight, bias
        if torch.is_grad_enabled() and (weight.requires_grad or (bias is not None and bias.requires_grad)):
            self.record = _Record(batched=weight.dim() == 3)
            gathered = _GatherParameterGrads.apply(self.record, *([weight] if bias is None else [weight, bias]))
            self.weight, self.bias = gathered if bias is not None else (gathered[0], None)

    def __call__(self, inputs: Tensor, addend: Tensor | None = None) -> Tensor:
        if self.record is not None:
            return _StepLinear.apply(inputs, addend, self.record, self.weight, self.bias)
        if addend is None or self.weight.dim() == 3:
            output = _apply(self.weight, inputs, self.bias)
            return output if addend is None else output.add_(addend)
        if self.bias is None:
            return torch.addmm(addend, inputs, self.weight.t())
        return torch.addmm(addend, inputs, self.weight.t()).add_(self.bias)
