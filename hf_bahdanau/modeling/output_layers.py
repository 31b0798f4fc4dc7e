"""The output layer of a recurrent decoder head: its probabilities, what it keeps per source while searching, and its
loss. One registered class per kind (``axes.OUTPUT_LAYERS``); the head builds one and calls it, so ``forward``,
``generate()``, the search steps and the beam expansion never branch on the kind.

    softmax            p(y_t) = softmax(W_o t_t + b_o)                                           logits [N, T, V]
    pointer_generator  P(w) = (p_gen P_vocab(w) + (1 − p_gen) Σ_{j: x_j = w} α_tj) / Z_t       log P [N, T, V + n]
    pointing           p(C_t = j) = softmax_j(u_tj) over [end; x_1 … x_S]                     log p [N, T, S + 1]

N = B · k decoder rows, k = ``rows_per_source`` consecutive rows per source (generate()'s beams); t_t the pre-output
[N, T, output_size], α_t the attention over the caller's source columns [N, T, S], g_t the pointer-generator's gate
logit [N, T] (``pointer_generator.py`` holds its equations). What a layer keeps per source (``source``: a
``CopySource``, the pointer network's inputs) is stored once in the decoding cache as ``output_layer_inputs`` and
shared by the source's k rows, so beam search never copies or reorders it; generate()'s keyword arguments that hold it
stay one per source when beams are expanded (``per_source_inputs``).

No config field names the layer: a seq2seq head's is ``pointer_generator`` when ``copy_attention`` is set, else
``softmax`` (``seq2seq_output_layer``); the pointer network's is ``pointing``. A new kind is a class here with its line
in ``axes.OUTPUT_LAYERS``.
"""

import math
from typing import Any

import torch
from torch import Tensor, nn

from .axes import OUTPUT_LAYERS
from .input_checks import check_token_ids
from .loss import linear_cross_entropy
from .pointer_generator import CopySource, copy_loss_terms, mixture_log_probs
from .precision import float32_at_least, softmax_dtype

__all__ = ["OUTPUT_LAYERS", "PointerGeneratorOutput", "PointingOutput", "SoftmaxOutput", "seq2seq_output_layer"]


@OUTPUT_LAYERS.register("softmax")
class SoftmaxOutput:
    """p(y_t) = softmax(W_o t_t + b_o) over the model's vocabulary V; the base of the vocabulary layers."""

    reads_attention = False  # its probabilities read the attention weights α (the head asks the decoder for them)
    per_source_inputs: tuple[str, ...] = ()  # generate()'s keyword arguments that hold ``source``, one per source

    def __init__(self, config: Any):
        self.config = config

    def generate_inputs(self, inputs: Tensor | None, kwargs: dict) -> None:
        """Completes generate()'s keyword arguments ``kwargs`` in place with what the steps read (``inputs``: its
        positional source ids)."""

    def source(self, copy_input_ids: Tensor | None, input_ids: Tensor | None, attention_mask: Tensor | None,
               cache: Any) -> Any:
        """What the layer reads per source at every step (the cache's ``output_layer_inputs``); here nothing."""
        if copy_input_ids is not None:
            raise ValueError("`copy_input_ids` are the ids a pointer-generator copies from, and this model has "
                             "`copy_attention=False`; leave them out.")
        return None

    def vocabulary(self, source: Any) -> int:
        """The ids the labels and decoder inputs may hold: [0, vocabulary)."""
        return self.config.vocab_size

    def check_labels(self, labels: Tensor, source: Any, rows_per_source: int) -> None:
        """ValueError for labels [B·k, T] the layer cannot score (after the vocabulary check)."""

    def read_back(self, ids: Tensor) -> Tensor:
        """Decoder inputs [N, T] in the layer's ids -> in the model's vocabulary."""
        return ids

    def decoder_inputs(self, ids: Tensor, vocabulary: int, values: bool = True) -> Tensor:
        """A caller's ``decoder_input_ids`` -> what the decoder reads (the decoder checks its own vocabulary; ``values``
        False: a search's picks, their range unchecked)."""
        return self.read_back(ids)

    def logits(self, logits: Tensor, weights: Tensor | None, gate_logits: Tensor | None, source: Any,
               rows_per_source: int) -> Tensor:
        """The head's logits from the vocabulary projection W_o t + b [N, T, V]: here themselves."""
        return logits

    def fused_loss(self, pre_output: Tensor, projection: nn.Linear, labels: Tensor, weights: Tensor | None,
                   gate_logits: Tensor | None, source: Any, rows_per_source: int) -> Tensor:
        """Σ −log p(y_t) over labels != -100, fused with the projection (``loss.linear_cross_entropy``: no [N, T, V]
        tensor): pre_output [N, T, O], labels [N, T] -> a scalar sum."""
        return linear_cross_entropy(pre_output, projection.weight, projection.bias, labels)

    def outputs(self, gate_logits: Tensor | None, output_attentions: bool) -> dict:
        """The head output's fields of this layer (``BahdanauSeq2SeqLMOutput``)."""
        return {}


@OUTPUT_LAYERS.register("pointer_generator")
class PointerGeneratorOutput(SoftmaxOutput):
    """See et al.'s mixture over the extended vocabulary [0, V + n) (``pointer_generator.py``): the source it copies
    from is a ``CopySource`` (``copy_input_ids``, default ``input_ids``); an id ≥ V the decoder reads is the unknown
    token."""

    reads_attention = True
    per_source_inputs = ("copy_input_ids",)

    def generate_inputs(self, inputs: Tensor | None, kwargs: dict) -> None:
        """The steps copy from ``copy_input_ids``, default the source ids; given ones are checked here against the
        source, as ``forward`` checks them (the decoding steps see only the copy ids)."""
        if kwargs.get("encoder_outputs") is not None:
            return
        source = inputs if inputs is not None else kwargs.get("input_ids")
        if kwargs.get("copy_input_ids") is None:
            kwargs["copy_input_ids"] = source
        elif source is not None:
            self.source(kwargs["copy_input_ids"], source, kwargs.get("attention_mask"), None)

    def source(self, copy_input_ids: Tensor | None, input_ids: Tensor | None, attention_mask: Tensor | None,
               cache: Any) -> CopySource:
        """The cache's source, else ``copy_input_ids``, else ``input_ids`` (checked: non-negative ids of the source's
        shape, numbered as ``CopySource.of`` says)."""
        if cache is not None and cache.output_layer_inputs is not None:
            return cache.output_layer_inputs
        if copy_input_ids is None and input_ids is not None:  # it copies the input ids: words of the vocabulary
            check_token_ids("input_ids", input_ids, self.config.vocab_size)
        ids = input_ids if copy_input_ids is None else copy_input_ids
        if ids is None:
            raise ValueError("A `copy_attention=True` model copies source tokens: pass `input_ids` or "
                             "`copy_input_ids` [batch, source] with `inputs_embeds` or `encoder_outputs`.")
        check_token_ids("copy_input_ids", ids, torch.iinfo(torch.int64).max, what="[batch, source tokens]")
        for name, other in (("input_ids", input_ids), ("attention_mask", attention_mask)):
            if other is not None and other is not ids and tuple(other.shape) != tuple(ids.shape):
                raise ValueError(f"`copy_input_ids` must have the shape of `{name}` {list(other.shape)}, got "
                                 f"{list(ids.shape)}.")
        return CopySource.of(ids, self.config.vocab_size, input_ids, self.config.unk_token_id, attention_mask)

    def vocabulary(self, source: CopySource) -> int:
        return source.width

    def check_labels(self, labels: Tensor, source: CopySource, rows_per_source: int) -> None:
        """A label beyond the vocabulary is a copied word: it must be among its own row's ``copy_input_ids``."""
        beyond = labels >= self.config.vocab_size
        if labels.shape[0] != source.ids.shape[0] * rows_per_source or not beyond.any():
            return  # a row count that is not k per source is refused by the model
        found = (labels.unsqueeze(-1) == source.per_row(rows_per_source).to(labels.device).unsqueeze(1)).any(-1)
        missing = (beyond & ~found).nonzero()
        if len(missing):
            row, column = missing[0].tolist()
            raise ValueError(f"`labels[{row}, {column}]` = {int(labels[row, column])} is beyond the vocabulary "
                             f"({self.config.vocab_size}) and not among row {row}'s `copy_input_ids`: a copied word "
                             "must occur in its own source.")

    def read_back(self, ids: Tensor) -> Tensor:
        """A copied word the vocabulary lacks (id ≥ vocab_size) is read as ``unk_token_id`` (See et al.)."""
        return ids.masked_fill(ids >= self.config.vocab_size, self.config.unk_token_id)

    def decoder_inputs(self, ids: Tensor, vocabulary: int, values: bool = True) -> Tensor:
        check_token_ids("decoder_input_ids", ids, vocabulary, values=values)
        return self.read_back(ids)

    def logits(self, logits: Tensor, weights: Tensor, gate_logits: Tensor, source: CopySource,
               rows_per_source: int) -> Tensor:
        """log P(w) [N, T, V + n] (``pointer_generator.mixture_log_probs``)."""
        copy_ids = source.per_row(rows_per_source).to(weights.device)
        return mixture_log_probs(logits, gate_logits, weights, copy_ids, source.width)

    def fused_loss(self, pre_output: Tensor, projection: nn.Linear, labels: Tensor, weights: Tensor,
                   gate_logits: Tensor, source: CopySource, rows_per_source: int) -> Tensor:
        """−Σ log P(y_t), the mixture's terms beside the fused projection (``pointer_generator.copy_loss_terms``)."""
        copy_ids = source.per_row(rows_per_source).to(weights.device)
        return linear_cross_entropy(pre_output, projection.weight, projection.bias, labels,
                                    mixture=copy_loss_terms(gate_logits, weights, copy_ids, labels))

    def outputs(self, gate_logits: Tensor, output_attentions: bool) -> dict:
        """p_gen = σ(g_t) [N, T], with ``output_attentions``."""
        return {"p_gen": torch.sigmoid(gate_logits) if output_attentions else None}


def seq2seq_output_layer(config: Any) -> SoftmaxOutput:
    """A seq2seq head's output layer: the pointer-generator with ``copy_attention``, else the softmax."""
    return OUTPUT_LAYERS["pointer_generator" if config.copy_attention else "softmax"](config)


@OUTPUT_LAYERS.register("pointing")
class PointingOutput:
    """The pointer network's output (Vinyals et al. 2015): a distribution over the positions of its own input,
    [end; x_1 … x_S]; pointer id j reads input j (0: the end, or the start for the first step). Its source is the
    inputs the decoder reads per pointer id, [x_start; x_1 … x_S] [B, S + 1, E]."""

    reads_attention = False
    per_source_inputs: tuple[str, ...] = ()  # generate() gets the encoder outputs, which are shared already

    def __init__(self, config: Any):
        self.config = config

    def logits(self, attention: nn.Module, states: Tensor, keys: Tensor, mask: Tensor) -> Tensor:
        """log p(C_i = j) = log softmax_j(u_ij) over the real positions of [end; inputs] (−∞ elsewhere),
        u = ``attention``'s score: decoder states d_i [N, T, H], N = B · k rows (k per source, consecutive), keys = the
        score's ``project_keys`` of the annotations [e_0; h_1 … h_S] [B, S + 1, …], mask [B, S + 1] -> [N, T, S + 1].
        A multi-head score's distribution is the mean of its heads' (the attention's weights): log (1/h Σ_h p_h)."""
        (rows, steps, size), sources = states.shape, mask.shape[0]
        scores = attention.score(states.reshape(sources, -1, size), keys)
        scores = float32_at_least(scores)
        padding = ~mask.view(sources, *([1] * (scores.dim() - 2)), -1)
        # the finite minimum, not −∞, until the heads are combined: logsumexp over −∞ only has NaN gradients
        log_probs = scores.masked_fill(padding, torch.finfo(scores.dtype).min).log_softmax(-1)
        if log_probs.dim() == 4:  # [B, heads, k·T, S + 1]
            log_probs = log_probs.logsumexp(1) - math.log(log_probs.shape[1])
        log_probs = log_probs.masked_fill(~mask.unsqueeze(1), float("-inf"))
        return log_probs.reshape(rows, steps, -1).to(softmax_dtype(states))

    def check_labels(self, labels: Tensor, mask: Tensor) -> None:
        """labels [B, T]: pointer ids of real inputs (0 … length, mask [B, S + 1]), or -100."""
        check_token_ids("labels", labels, mask.shape[1], ignore_index=-100,
                        what=f"[batch, steps] pointer ids in [0, {mask.shape[1] - 1}] (-100 = ignored)")
        if labels.shape[0] != mask.shape[0]:
            raise ValueError(f"`labels` must have one row per input row ({mask.shape[0]}), got {labels.shape[0]}.")
        pointed = labels.clamp(min=0)
        padding = ~mask.gather(1, pointed) & (labels != -100)
        if padding.any():
            row, column = padding.nonzero()[0].tolist()
            raise ValueError(f"`labels[{row}, {column}]` = {int(labels[row, column])} points at input position "
                             f"{int(labels[row, column]) - 1}, which is padding in row {row} (it has "
                             f"{int(mask[row].sum()) - 1} inputs).")

    def decoder_inputs(self, pointer_ids: Tensor, inputs: Tensor, mask: Tensor, rows_per_source: int,
                       values: bool = True) -> Tensor:
        """Pointer ids [B·k, T] (k = ``rows_per_source`` consecutive rows per source) of real inputs (mask
        [B, S + 1]) -> the inputs the decoder reads [B·k, T, E], from ``inputs`` [B, S + 1, E]. ``values`` False: a
        search's picks, not checked to be in range and real (no host round trip per decoding step)."""
        check_token_ids("decoder_input_ids", pointer_ids, inputs.shape[1], what="[batch, steps] pointer ids",
                        values=values)
        if pointer_ids.shape[0] != inputs.shape[0] * rows_per_source:
            raise ValueError(f"`decoder_input_ids` must have `rows_per_source` = {rows_per_source} rows for each of "
                             f"the {inputs.shape[0]} input rows, got {pointer_ids.shape[0]}.")
        source_of_row = torch.arange(inputs.shape[0], device=inputs.device).repeat_interleave(rows_per_source)
        padding = ~mask[source_of_row.unsqueeze(1), pointer_ids]
        if values and padding.any():
            row, column = padding.nonzero()[0].tolist()
            raise ValueError(f"`decoder_input_ids[{row}, {column}]` = {int(pointer_ids[row, column])} points at "
                             f"input position {int(pointer_ids[row, column]) - 1}, which is padding in that row (it "
                             f"has {int(mask[source_of_row[row]].sum()) - 1} inputs).")
        return inputs[source_of_row.unsqueeze(1), pointer_ids]
