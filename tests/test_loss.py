"""The token cross-entropy: fused with the vocabulary projection it equals F.linear + F.cross_entropy, values and
gradients. The heads' one normalisation rule: Σ per-item losses over labels != -100, / num_items_in_batch or / their
count, for every encoder-only head and problem type against torch.nn.functional."""

import pytest
import torch
import torch.nn.functional as F

from conftest import (
    assert_float64_close, assert_float64_gradients_close, cross_entropy_tolerance, padded_batch, product_tolerance,
    random_labels, tiny_encoder_config, tiny_model,
)
from hf_bahdanau import BahdanauForSequenceClassification, BahdanauForTokenClassification
from hf_bahdanau.modeling.loss import linear_cross_entropy, per_item_loss


def _reference_and_fused(chunk_size: int, with_bias: bool = True, dtype=torch.float64):
    generator = torch.Generator().manual_seed(0)
    hidden = torch.randn(4, 7, 6, generator=generator, dtype=dtype, requires_grad=True)
    weight = torch.randn(11, 6, generator=generator, dtype=dtype, requires_grad=True)
    bias = torch.randn(11, generator=generator, dtype=dtype, requires_grad=True) if with_bias else None
    labels = torch.randint(0, 11, (4, 7), generator=generator)
    labels[0, 5:] = -100
    labels[3, :] = -100
    leaves = [t for t in (hidden, weight, bias) if t is not None]

    reference = F.cross_entropy(F.linear(hidden, weight, bias).flatten(0, 1), labels.flatten(), reduction="sum")
    expected_grads = torch.autograd.grad(reference * 0.5, leaves)
    fused = linear_cross_entropy(hidden, weight, bias, labels, chunk_size=chunk_size)
    grads = torch.autograd.grad(fused * 0.5, leaves)  # a non-unit upstream gradient is applied in backward
    return reference, fused, expected_grads, grads


@pytest.mark.parametrize("chunk_size", [1, 5, 16, 1024])  # chunks that split rows unevenly, and one chunk
@pytest.mark.parametrize("with_bias", [True, False])
def test_matches_linear_then_cross_entropy(chunk_size, with_bias):
    reference, fused, expected_grads, grads = _reference_and_fused(chunk_size, with_bias)
    assert_float64_close(fused, reference)
    scale = max(float(expected.abs().max()) for expected in expected_grads)  # gradients round relative to their terms
    for expected, got in zip(expected_grads, grads):
        assert_float64_close(got, expected, scale=scale)


def test_ignored_rows_get_zero_gradient_and_all_ignored_is_zero_loss():
    _, _, _, (grad_hidden, _, _) = _reference_and_fused(5)
    assert (grad_hidden[3] == 0).all() and (grad_hidden[0, 5:] == 0).all()
    hidden = torch.randn(2, 3, 4, requires_grad=True)
    weight = torch.randn(5, 4, requires_grad=True)
    loss = linear_cross_entropy(hidden, weight, None, torch.full((2, 3), -100))
    loss.backward()
    assert loss.item() == 0.0 and (hidden.grad == 0).all() and (weight.grad == 0).all()


def test_bfloat16_hidden_is_scored_in_float32():
    generator = torch.Generator().manual_seed(1)
    hidden = torch.randn(3, 8, generator=generator).to(torch.bfloat16).requires_grad_()
    weight = torch.randn(9, 8, generator=generator, requires_grad=True)
    labels = torch.randint(0, 9, (3,), generator=generator)
    loss = linear_cross_entropy(hidden, weight, None, labels)
    expected = F.cross_entropy(hidden.float() @ weight.t(), labels, reduction="sum")
    # Both make the float32 logits, which two evaluations (other kernels, chunks) give within product_tolerance of each
    # other, moving each row's logsumexp − z_y by at most twice that; each side then rounds its cross-entropy
    with torch.no_grad():
        logits = hidden.float() @ weight.t()
        tolerance = 2 * len(labels) * product_tolerance(hidden.float(), weight.t()) + 2 * cross_entropy_tolerance(
            logits, labels)
    torch.testing.assert_close(loss, expected, atol=float(tolerance), rtol=0)
    loss.backward()
    assert hidden.grad.dtype == torch.bfloat16 and weight.grad.dtype == torch.float32


def test_bad_labels_and_chunk_size_are_clear_errors():
    hidden, weight = torch.randn(2, 4), torch.randn(5, 4)
    with pytest.raises(ValueError, match=r"labels must be in \[0, 5\)"):
        linear_cross_entropy(hidden, weight, None, torch.tensor([1, 5]))
    with pytest.raises(ValueError, match="leading shape"):
        linear_cross_entropy(hidden, weight, None, torch.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match="chunk_size"):
        linear_cross_entropy(hidden, weight, None, torch.tensor([1, 2]), chunk_size=0)


@pytest.mark.parametrize("preset", ["rnnsearch", "luong-general"])
def test_model_training_loss_and_gradients_equal_the_plain_computation(preset):
    """model.train() (fused, no logits) gives the loss and gradients of logits + F.cross_entropy without dropout, and
    model.eval() that loss from its logits. In float64, where the fused chunks and the plain loss, summing in other
    orders, agree to rounding; model.eval() scores its logits in float32 (``token_cross_entropy``)."""
    model = tiny_model(preset, dropout=0.0).double()
    input_ids, mask = padded_batch()
    labels = random_labels(3, 6)
    labels[1, 4:] = -100
    plain = model(input_ids=input_ids, attention_mask=mask, labels=labels, num_items_in_batch=torch.tensor(20))
    expected_loss = F.cross_entropy(plain.logits.flatten(0, 1), labels.flatten(), reduction="sum") / 20
    expected_loss.backward()
    expected = {name: p.grad.clone() for name, p in model.named_parameters()}
    model.zero_grad()
    fused = model.train()(input_ids=input_ids, attention_mask=mask, labels=labels,
                          num_items_in_batch=torch.tensor(20))
    fused.loss.backward()
    assert fused.logits is None and plain.logits.shape == (3, 6, model.config.vocab_size)
    assert_float64_close(fused.loss, expected_loss)
    assert_float64_gradients_close({name: p.grad for name, p in model.named_parameters()}, expected)
    eps = torch.finfo(torch.float32).eps  # the division by 20 rounds too
    error = cross_entropy_tolerance(plain.logits, labels) / 20 + eps * float(expected_loss.detach().abs())
    torch.testing.assert_close(plain.loss.double(), expected_loss.detach(), atol=error, rtol=0)


# The encoder-only heads: (head class, config overrides, labels, which labels to set to -100, the per-item loss by
# torch.nn.functional over the counted items, for reduction "mean" or "sum"). The batch is padded_batch((7, 5, 2)).
HEAD_CASES = {
    "token": (
        BahdanauForTokenClassification, dict(num_labels=5),
        torch.tensor([[1, 2, 0, 3, 3, 4, 0], [0, 0, 3, 1, 2, -100, -100], [4, 0, -100, -100, -100, -100, -100]]),
        [(0, 3), (1, 2)],
        lambda logits, labels, reduction: F.cross_entropy(logits[labels != -100], labels[labels != -100],
                                                          reduction=reduction),
    ),
    "single_label": (
        BahdanauForSequenceClassification, dict(num_labels=3), torch.tensor([2, 0, 1]), [(1,)],
        lambda logits, labels, reduction: F.cross_entropy(logits[labels != -100], labels[labels != -100],
                                                          reduction=reduction),
    ),
    "multi_label": (
        BahdanauForSequenceClassification, dict(num_labels=3),
        torch.tensor([[1.0, 0.0, 1.0], [0.0, 0.0, 0.0], [1.0, 1.0, 0.0]], dtype=torch.float64), [(0, 1), (2, 2)],
        lambda logits, labels, reduction: F.binary_cross_entropy_with_logits(
            logits[labels != -100], labels[labels != -100], reduction=reduction),
    ),
    "regression": (
        BahdanauForSequenceClassification, dict(num_labels=1), torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64),
        [(1,)],
        lambda logits, labels, reduction: F.mse_loss(logits[:, 0][labels != -100], labels[labels != -100],
                                                     reduction=reduction),
    ),
    "regression_2_values": (
        BahdanauForSequenceClassification, dict(num_labels=2, problem_type="regression"),
        torch.tensor([[0.5, 1.0], [0.0, -1.0], [2.0, 3.0]], dtype=torch.float64), [(1, 0)],
        lambda logits, labels, reduction: F.mse_loss(logits[labels != -100], labels[labels != -100],
                                                     reduction=reduction),
    ),
}


@pytest.mark.parametrize("ignored", [False, True], ids=["all-counted", "some-ignored"])
@pytest.mark.parametrize("case", HEAD_CASES)
def test_every_head_divides_the_summed_loss_by_num_items_in_batch_or_the_count(case, ignored):
    """Without num_items_in_batch the loss is the mean over the counted items (with all counted: torch.nn.functional's
    default mean, the classifier's loss before the rule); with it, Σ / num_items_in_batch. Trainer's count,
    ``labels.ne(-100).sum()`` (transformers' ``Trainer._get_num_items_in_batch``), gives the mean back."""
    head, overrides, labels, ignore, item_loss = HEAD_CASES[case]
    torch.manual_seed(0)
    model = head(tiny_encoder_config(hierarchical=False, **overrides)).double().eval()
    assert head.accepts_loss_kwargs is True  # Trainer passes num_items_in_batch and does not scale the loss again
    input_ids, attention_mask = padded_batch((7, 5, 2))
    labels = labels.clone()
    if ignored:
        for index in ignore:
            labels[index] = -100
    with torch.no_grad():
        mean = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
        by_seven = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels, num_items_in_batch=7)
        by_trainer = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels,
                           num_items_in_batch=labels.ne(-100).sum())
    logits = mean.logits
    assert_float64_close(mean.loss, item_loss(logits, labels, "mean"))
    assert_float64_close(by_seven.loss, item_loss(logits, labels, "sum") / 7)
    assert_float64_close(by_trainer.loss, mean.loss)
    if not ignored and case != "token":
        default = {"single_label": F.cross_entropy, "multi_label": F.binary_cross_entropy_with_logits,
                   "regression": F.mse_loss, "regression_2_values": F.mse_loss}[case]
        assert_float64_close(mean.loss, default(logits.view(labels.shape) if case == "regression" else logits, labels))


def test_per_item_loss_gives_ignored_items_no_gradient_and_checks_shapes():
    item_losses = torch.tensor([[1.0, 2.0, 4.0], [8.0, 16.0, float("nan")]], requires_grad=True)
    labels = torch.tensor([[0.0, -100.0, 1.0], [1.0, 0.0, -100.0]])
    loss = per_item_loss(item_losses, labels)
    loss.backward()
    assert loss.item() == (1 + 4 + 8 + 16) / 4
    assert item_losses.grad.tolist() == [[0.25, 0.0, 0.25], [0.25, 0.25, 0.0]]  # the NaN of an ignored item stays out
    assert per_item_loss(item_losses.detach(), labels, num_items_in_batch=torch.tensor(8)).item() == 29 / 8
    with pytest.raises(ValueError, match=r"per-item losses' shape \(2, 3\), got \(6,\)"):
        per_item_loss(item_losses, labels.flatten())


@pytest.mark.parametrize("head", [BahdanauForSequenceClassification, BahdanauForTokenClassification])
def test_trainer_gradient_accumulation_takes_the_full_batch_step(head, tmp_path):
    """One SGD step of Trainer over 4 rows: 2 rows × 2 accumulation steps moves the weights as 4 rows at once, though
    the halves hold different numbers of counted labels (however the sampler orders the rows). A per-batch mean (the
    classifier before the rule) weights the halves' items unequally."""
    from transformers import Trainer, TrainingArguments

    input_ids, attention_mask = padded_batch((7, 5, 2, 6))
    if head is BahdanauForSequenceClassification:
        labels = torch.tensor([2, 0, 1, -100])  # halves: 1 and 2 counted labels
    else:
        labels = torch.randint(0, 3, input_ids.shape, generator=torch.Generator().manual_seed(0))
        labels = labels.masked_fill(attention_mask == 0, -100)  # 7, 5, 2, 6 counted labels: uneven halves
    rows = [dict(input_ids=input_ids[row], attention_mask=attention_mask[row], labels=labels[row]) for row in range(4)]

    def update(batch_size: int, accumulation_steps: int) -> torch.Tensor:
        torch.manual_seed(0)
        model = head(tiny_encoder_config(num_labels=3, hierarchical=False, dropout=0.0)).double()
        start = [parameter.detach().clone() for parameter in model.parameters()]
        args = TrainingArguments(tmp_path / f"{batch_size}", per_device_train_batch_size=batch_size,
                                 gradient_accumulation_steps=accumulation_steps, max_steps=1, learning_rate=1.0,
                                 optim="sgd", lr_scheduler_type="constant", max_grad_norm=0.0, report_to=[],
                                 save_strategy="no", use_cpu=True)
        collate = lambda batch: {key: torch.stack([row[key] for row in batch]) for key in batch[0]}  # noqa: E731
        Trainer(model=model, args=args, train_dataset=rows, data_collator=collate).train()
        return torch.cat([(parameter.detach() - before).flatten() for parameter, before in zip(model.parameters(), start)])

    full, accumulated = update(4, 1), update(2, 2)
    assert full.abs().max() > 1e-3  # a real step
    assert_float64_close(accumulated, full)


def test_trainer_predictions_leave_out_the_loss_terms(tmp_path):
    """Trainer's predictions hold the model's per-example outputs only: the coverage loss (a scalar per batch) is a
    loss, not a prediction (``keys_to_ignore_at_inference``), so 5 examples in batches of 2 give no 3-value array."""
    from transformers import Trainer, TrainingArguments

    model = tiny_model("rnnsearch", coverage_loss_weight=0.5)
    rows = [dict(input_ids=torch.tensor([3, 4, 5, 2]), attention_mask=torch.ones(4, dtype=torch.long),
                 labels=torch.tensor([5, 6, 2])) for _ in range(5)]
    args = TrainingArguments(str(tmp_path), per_device_eval_batch_size=2, report_to=[], use_cpu=True)
    predictions = Trainer(model=model, args=args).predict(rows).predictions
    assert [prediction.shape[0] for prediction in predictions] == [5, 5]  # logits, encoder_last_hidden_state
    assert predictions[0].shape == (5, 3, model.config.vocab_size)
