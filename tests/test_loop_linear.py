"""LoopLinear: the weight gradient taken once after a loop equals the per-step sum autograd would make."""

import torch
import torch.nn.functional as F

from hf_bahdanau.loop_linear import LoopLinear


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
                for e, g in zip(expected, got):
                    if e is None:
                        assert g is None or (g == 0).all()
                    else:
                        torch.testing.assert_close(g, e, rtol=1e-12, atol=1e-12)


def test_without_autograd_it_is_a_plain_linear_and_records_nothing():
    weight, bias = torch.randn(5, 4, requires_grad=True), torch.randn(5, requires_grad=True)
    x, addend = torch.randn(3, 4), torch.randn(3, 5)
    with torch.no_grad():
        linear = LoopLinear(weight, bias)
        torch.testing.assert_close(linear(x, addend), addend + x @ weight.t() + bias)
        torch.testing.assert_close(linear(x), F.linear(x, weight, bias))
    assert linear.record is None


def test_backward_twice_with_retained_graph_accumulates_like_autograd():
    weight = torch.randn(3, 3, dtype=torch.float64, requires_grad=True)
    x = torch.randn(2, 3, dtype=torch.float64)
    linear = LoopLinear(weight)
    y = linear(torch.tanh(linear(x)))
    y.sum().backward(retain_graph=True)
    once = weight.grad.clone()
    y.sum().backward()
    torch.testing.assert_close(weight.grad, 2 * once)
    expected = torch.autograd.grad(F.linear(torch.tanh(F.linear(x, weight)), weight).sum(), weight)[0]
    torch.testing.assert_close(once, expected)
