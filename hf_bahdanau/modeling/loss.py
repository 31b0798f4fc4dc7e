"""The heads' losses and their one normalisation rule (``per_target``): every head's loss is the sum of its per-item
losses over the labels != -100, divided by Trainer's ``num_items_in_batch`` when given (exact under gradient
accumulation; Trainer counts ``labels.ne(-100).sum()``), else by the number of those labels. So every head sets
``accepts_loss_kwargs = True``. Token-level cross-entropy (seq2seq and tagging heads) is computed on logits
(``token_cross_entropy``) or fused with the vocabulary projection (``linear_cross_entropy``); any other per-item loss
(the classifier's BCE or MSE) goes through ``per_item_loss``.

The fused form computes the vocabulary projection and the cross-entropy in one pass, without a [N, V] logits tensor:

    z_n = W_o t_n + b_o,   loss = Σ_n (log Σ_v exp z_nv − z_n,y_n),   ∂loss/∂z_n = softmax(z_n) − onehot(y_n)

Training needs only the loss and its gradients. They are computed here chunk by chunk over the
rows: each chunk's logits are made in one reused buffer, turned into log-softmax and then softmax − onehot
in place, and multiplied back into ∂/∂t and ∂/∂W_o straight away. The same three products as ``F.linear`` +
``F.cross_entropy`` are done, but the [N, V] logits, their log-softmax and their gradient never exist at full
size, and no chunk allocates. The gradients are computed in the forward pass, and the backward pass only
scales them by the incoming gradient.
"""

import torch
from torch import Tensor, nn


class _LinearCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, hidden: Tensor, weight: Tensor, bias: Tensor | None, targets: Tensor, chunk_size: int,
                generate_log: Tensor | None = None, copy_log: Tensor | None = None) -> Tensor:
        compute_dtype = torch.promote_types(weight.dtype, torch.float32)
        hidden_c, weight_c = hidden.to(compute_dtype), weight.to(compute_dtype)
        bias_c = None if bias is None else bias.to(compute_dtype)
        grad_hidden = torch.empty_like(hidden_c)
        grad_weight = torch.zeros_like(weight_c)
        grad_bias = None if bias is None else torch.zeros_like(bias_c)
        mixed = generate_log is not None
        grad_generate = grad_copy = None
        mixture_dtype = None if not mixed else generate_log.dtype
        if mixed:
            generate_log, copy_log = generate_log.to(compute_dtype), copy_log.to(compute_dtype)
            grad_generate, grad_copy = torch.empty_like(generate_log), torch.empty_like(copy_log)
        total = hidden_c.new_zeros(())
        buffer = hidden_c.new_empty(min(chunk_size, hidden.shape[0]), weight.shape[0])
        ones = None if bias is None else hidden_c.new_ones(buffer.shape[0])  # Σ_n of the bias gradient
        for start in range(0, hidden.shape[0], chunk_size):
            rows = slice(start, start + chunk_size)
            chunk, chunk_targets = hidden_c[rows], targets[rows]
            logits = buffer[:chunk.shape[0]]
            if bias_c is None:
                torch.mm(chunk, weight_c.t(), out=logits)
            else:
                torch.addmm(bias_c, chunk, weight_c.t(), out=logits)
            log_probs = torch.log_softmax(logits, dim=-1, out=logits)
            positions = torch.arange(chunk.shape[0], device=chunk.device)
            if not mixed:
                total -= log_probs[positions, chunk_targets].sum()
                grad_logits = log_probs.exp_()  # softmax, in place
                grad_logits[positions, chunk_targets] -= 1
            else:  # log P(y) = logaddexp(a + log P_vocab(y), b); ∂/∂z = w (softmax − onehot), w = p_gen P_vocab(y) / P(y)
                in_vocabulary = chunk_targets < weight.shape[0]
                index = chunk_targets.where(in_vocabulary, 0)
                generated = generate_log[rows] + log_probs[positions, index].masked_fill(~in_vocabulary, -torch.inf)
                row_log_probs = torch.logaddexp(generated, copy_log[rows])
                total -= row_log_probs.sum()
                share = torch.exp(generated - row_log_probs)
                grad_generate[rows], grad_copy[rows] = -share, share - 1
                grad_logits = log_probs.exp_()
                grad_logits[positions, index] -= in_vocabulary.to(compute_dtype)
                grad_logits.mul_(share.unsqueeze(-1))
            torch.mm(grad_logits, weight_c, out=grad_hidden[rows])
            grad_weight.addmm_(grad_logits.t(), chunk)
            if grad_bias is not None:
                grad_bias.addmv_(grad_logits.t(), ones[:chunk.shape[0]])  # GEMV: 1.3 ms, .sum(0): 2.9 (1024 x 8000)
        ctx.save_for_backward(grad_hidden, grad_weight, grad_bias, grad_generate, grad_copy)
        ctx.dtypes = hidden.dtype, weight.dtype, None if bias is None else bias.dtype, mixture_dtype
        return total

    @staticmethod
    def backward(ctx, grad_total: Tensor):
        grad_hidden, grad_weight, grad_bias, grad_generate, grad_copy = ctx.saved_tensors
        hidden_dtype, weight_dtype, bias_dtype, mixture_dtype = ctx.dtypes

        def scaled(grad: Tensor | None, dtype: torch.dtype | None) -> Tensor | None:
            return None if grad is None else (grad * grad_total).to(dtype)

        return (scaled(grad_hidden, hidden_dtype), scaled(grad_weight, weight_dtype), scaled(grad_bias, bias_dtype),
                None, None, scaled(grad_generate, mixture_dtype), scaled(grad_copy, mixture_dtype))


def linear_cross_entropy(
    hidden: Tensor, weight: Tensor, bias: Tensor | None, labels: Tensor, ignore_index: int = -100,
    chunk_size: int = 1024, mixture: tuple[Tensor, Tensor] | None = None,
) -> Tensor:
    """Σ_n CE(W hidden_n + b, labels_n) over labels != ignore_index, as ``F.cross_entropy(F.linear(hidden,
    weight, bias), labels, reduction="sum")`` computes it, in float32 at least (on ``reference.logits``' pre-output).

    hidden [..., D]; weight [V, D]; bias [V] or None; labels [...] (same leading shape) -> scalar.
    Rows with ``ignore_index`` are dropped before the projection, so padding costs nothing.

    mixture (a, b), each with the labels' shape: the loss is −Σ_n log(e^{a_n} P_vocab(y_n) + e^{b_n}) instead, the
    pointer-generator's mixture (``pointer_generator.copy_loss_terms``: a = log p_gen, b = log of the copy term),
    and labels may be ≥ V (words only copying reaches: P_vocab = 0). Its gradients reach a and b too.
    """
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive number of rows, got {chunk_size}")
    if hidden.shape[:-1] != labels.shape:
        raise ValueError(
            f"labels must have hidden's leading shape {tuple(hidden.shape[:-1])}, got {tuple(labels.shape)}"
        )
    keep = labels.reshape(-1) != ignore_index
    targets = labels.reshape(-1)[keep]
    if targets.numel() and (targets.min() < 0 or (mixture is None and targets.max() >= weight.shape[0])):
        raise ValueError(f"labels must be in [0, {weight.shape[0]}) or {ignore_index}")
    rows = hidden.reshape(-1, hidden.shape[-1])[keep]
    kept_mixture = () if mixture is None else tuple(term.reshape(-1)[keep] for term in mixture)
    return _LinearCrossEntropy.apply(rows, weight, bias, targets, chunk_size, *kept_mixture)


def per_target(total: Tensor, labels: Tensor, num_items_in_batch: int | Tensor | None = None) -> Tensor:
    """The rule of every head: total / num_items_in_batch (Trainer's count across gradient accumulation), else / the
    labels != -100 (at least 1)."""
    if num_items_in_batch is None:
        num_items_in_batch = (labels != -100).sum().clamp(min=1)
    if isinstance(num_items_in_batch, Tensor):
        num_items_in_batch = num_items_in_batch.to(total.device)
    return total / num_items_in_batch


def token_cross_entropy(logits: Tensor, labels: Tensor, num_items_in_batch: int | Tensor | None = None) -> Tensor:
    """Σ cross-entropy over labels != -100, ``per_target``.  logits [..., V] (scored in float32 at least), labels
    [...]."""
    scored = logits.to(torch.promote_types(logits.dtype, torch.float32))
    total = nn.functional.cross_entropy(
        scored.flatten(0, -2), labels.flatten().to(logits.device), ignore_index=-100, reduction="sum"
    )
    return per_target(total, labels, num_items_in_batch)


def per_item_loss(item_losses: Tensor, labels: Tensor, num_items_in_batch: int | Tensor | None = None) -> Tensor:
    """Σ item_losses where labels != -100, ``per_target``. item_losses and labels have one shape (e.g. [B, C], one
    loss per label); the ignored items get zero gradient whatever their value."""
    if item_losses.shape != labels.shape:
        raise ValueError(
            f"labels must have the per-item losses' shape {tuple(item_losses.shape)}, got {tuple(labels.shape)}"
        )
    counted = labels.to(item_losses.device) != -100
    return per_target(torch.where(counted, item_losses, 0).sum(), labels, num_items_in_batch)
