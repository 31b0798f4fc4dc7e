"""LoopLinear: the weight gradient taken once after a loop equals the per-step sum autograd would make."""

import pytest
import torch
import torch.nn.functional as F

from conftest import assert_float64_close
from hf_bahdanau.modeling.loop_linear import LoopLinear


def _recurrence(use_loop_linear: bool, with_bias: bool, with_addend: bool, unused_last_step: bool):
    generator = torch.Generator().manual_seed(0)
    weight = torch.randn(5, 4, generator=generator, dtype=torch.float64, requires_grad=True)
    bias = torch.randn(5, generator=generator, dtype=torch.float64, requires_grad=True) if with_bias else None
    start = torch.randn(3, 4, generator=generator, dtype=torch.float64, requires_grad=True)
    addends = torch.randn(6, 3, 5, generator=generator, dtype=torch.float64, requires_grad=True)
    back = torch.randn(5, 4, generator=generator, dtype=torch.float64)
    linear = LoopLinear(weight, bias)
    state, outputs = start, []
    for step in range(6):
        addend = addends[step] if with_addend else None
        if use_loop_linear:
            projected = linear(state, addend)
        else:
            projected = F.linear(state, weight, bias) + (0 if addend is None else addend)
        state = torch.tanh(projected @ back)
        outputs.append(state)
    used = outputs[:-1] if unused_last_step else outputs
    loss = torch.stack(used).pow(2).sum()
    leaves = [t for t in (weight, bias, start, addends) if t is not None]
    return torch.autograd.grad(loss, leaves, allow_unused=True)


def test_gradients_equal_plain_per_step_linear():
    for with_bias in (True, False):
        for with_addend in (True, False):
            for unused_last_step in (True, False):
                expected = _recurrence(False, with_bias, with_addend, unused_last_step)
                got = _recurrence(True, with_bias, with_addend, unused_last_step)
                # gradients round relative to their terms: the size of the terms is the largest gradient entry
                scale = max(float(e.abs().max()) for e in expected if e is not None)
                for e, g in zip(expected, got):
                    if e is None:
                        assert g is None or (g == 0).all()
                    else:
                        assert_float64_close(g, e, scale=scale)


def test_without_autograd_it_is_a_plain_linear_and_records_nothing():
    # float64: the fused product-and-add and the separate operations round apart
    weight = torch.randn(5, 4, dtype=torch.float64, requires_grad=True)
    bias = torch.randn(5, dtype=torch.float64, requires_grad=True)
    x, addend = torch.randn(3, 4, dtype=torch.float64), torch.randn(3, 5, dtype=torch.float64)
    with torch.no_grad():
        linear = LoopLinear(weight, bias)
        assert_float64_close(linear(x, addend), addend + x @ weight.t() + bias)
        assert_float64_close(linear(x), F.linear(x, weight, bias))
    assert linear.record is None


def test_backward_twice_with_retained_graph_accumulates_like_autograd():
    weight = torch.randn(3, 3, dtype=torch.float64, requires_grad=True)
    x = torch.randn(2, 3, dtype=torch.float64)
    linear = LoopLinear(weight)
    y = linear(torch.tanh(linear(x)))
    y.sum().backward(retain_graph=True)
    once = weight.grad.clone()
    y.sum().backward()
    assert_float64_close(weight.grad, 2 * once)
    expected = torch.autograd.grad(F.linear(torch.tanh(F.linear(x, weight)), weight).sum(), weight)[0]
    assert_float64_close(once, expected)


def _attention_loop(use_loop_linear: bool):
    """A toy attention decoder: the memory M [B, S, D] is read as keys (M q_t) and values (αᵀ M) at
    every step, through a transposed view for the values, as the attention mechanisms do."""
    generator = torch.Generator().manual_seed(1)
    source = torch.randn(3, 7, 4, generator=generator, dtype=torch.float64, requires_grad=True)
    mixing = torch.randn(4, 4, generator=generator, dtype=torch.float64, requires_grad=True)
    query = torch.randn(3, 4, generator=generator, dtype=torch.float64)
    memory = torch.tanh(source @ mixing)  # a non-leaf, like projected keys or annotations
    keys, values = (LoopLinear(memory), LoopLinear(memory.transpose(1, 2))) if use_loop_linear else (None, None)
    outputs = []
    for _ in range(5):
        if use_loop_linear:
            weights = torch.softmax(keys(query), dim=-1)
            context = values(weights)
        else:
            weights = torch.softmax((memory @ query.unsqueeze(-1)).squeeze(-1), dim=-1)
            context = (weights.unsqueeze(1) @ memory).squeeze(1)
        query = torch.tanh(context + query)
        outputs.append(query)
    loss = torch.stack(outputs).pow(3).sum()
    return torch.autograd.grad(loss, (source, mixing))


def test_batched_weights_give_the_gradients_of_per_step_products():
    expected = _attention_loop(False)
    got = _attention_loop(True)
    scale = max(float(e.abs().max()) for e in expected)  # gradients round relative to their terms
    for e, g in zip(expected, got):
        assert_float64_close(g, e, scale=scale)


def test_batched_weights_without_autograd_are_a_plain_batched_product():
    memory, x = torch.randn(3, 5, 4, dtype=torch.float64), torch.randn(3, 4, dtype=torch.float64)
    with torch.no_grad():  # float64: a batched product and einsum may sum in other orders
        assert_float64_close(LoopLinear(memory)(x), torch.einsum("bod,bd->bo", memory, x))


def test_bad_weight_shapes_are_refused_by_name():
    with pytest.raises(ValueError, match="weight must be"):
        LoopLinear(torch.randn(2, 3, 4), torch.randn(3))
    with pytest.raises(ValueError, match="weight must be"):
        LoopLinear(torch.randn(4))
