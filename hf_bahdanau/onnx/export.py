"""ONNX export of a seq2seq model: an encoder graph, run once per batch of sources, and a decoder-step graph, run
once per generated token, for ONNX Runtime (``runtime``) or any other ONNX runtime.

    encoder.onnx       input_ids [B, S] int64, attention_mask [B, S] int64 (right padding, 1 = real token)
                       -> the encoded source: annotations h_j [B, S, D], mask [B, S] bool, the attention's keys
                          U_a h_j [B, S, A] (with attention), Cho's summary C [B, D] (``context_mode="cho"``)
                       -> the initial decoder state: hidden [L, B, H], cell [L, B, H] (LSTM), input_feed [B, O]
                          (Luong's input feeding), attention_step [] int64, previous α [B, S] (monotonic scope),
                          coverage [B, S] (with attention)
    decoder_step.onnx  tokens [N] int64, top_k [] int64, the encoded source of each row, the state -> log_probs
                       [N, V] float32 (the model's own output layer: ``decoded_logits``), top_log_probs and
                       top_tokens [N, top_k] (the top_k most likely next tokens of each row, largest first, the lower
                       id first on ties), the next state (outputs named ``next_<name>``), attention [N, S] (α_t over
                       the source positions)
    greedy.onnx        the step graph in an ONNX Loop: a whole greedy search in one call (``onnx_greedy``)

The graphs are traced by torch's exporter (``torch.onnx.export(dynamo=True)`` over ``torch.export``, with
onnxscript), where it can yet, else by its deprecated TorchScript-based one with a warning that says why
(``_export_graph``), and simplified with onnx-simplifier when it is installed. Batch and source length are dynamic
axes. ``onnx_config.json`` lists the encoded source's tensors (under ``"memory"``, the format's name for them) and the
state's, with their row axis, the special token ids, the longest source the graphs score (None: any) and the
generation defaults; the folder also carries the tokenizer, the runtime (``runtime.py``, ``beam_search.py``,
``source_warnings.py``) and a model card: the source folder's, with a section on the graphs.
Every preset, cell, score, scope and mode exports, with the output layers of ``EXPORTABLE_OUTPUT_LAYERS`` (the
softmax); ``unexportable_options`` names what does not yet (the pointer-generator, pointer networks).

    hf-bahdanau-export outputs/dates-rnnsearch outputs/dates-onnx
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import json
import logging
import shutil
import warnings
from collections.abc import Iterator
from typing import Any
from pathlib import Path

import torch
from torch import Tensor, nn

from ..families import find_family
from ..modeling import source_warnings
from ..modeling.attention import ATTENTION_SCORES
from ..modeling.recurrent import RNN_TYPES, SATURATED, RecurrentState
from ..modeling.output_layers import OUTPUT_LAYERS, seq2seq_output_layer
from ..modeling.state import AttentionState, DecoderState, EncodedSource
from . import beam_search, runtime
from .graphs import greedy_graph
from .runtime import FORMAT, MANIFEST

__all__ = ["OPSET", "export_onnx", "quantize_onnx", "simplify_onnx", "unexportable_options"]

OPSET = 18  # the lowest opset torch's exporter writes without converting down
ROW_AXIS = {"hidden": 1, "cell": 1, "attention_step": None}  # every other tensor has its rows on axis 0
# The output layers the step graph computes: their log-probabilities are over the vocabulary, and they read nothing per
# source but the encoded source (the pointer-generator reads its ``CopySource`` and widens the vocabulary per source).
EXPORTABLE_OUTPUT_LAYERS = ("softmax",)
GRAPHS = ("encoder.onnx", "decoder_step.onnx", "greedy.onnx")
# The runtime the exported folder carries: flat modules that import each other as top-level modules there.
RUNTIME_MODULES = (runtime, beam_search, source_warnings)
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")
# What exporting every model warns about, and why it is harmless here (tests/test_onnx.py decodes other batch sizes
# and source lengths against generate()); any other warning shows.
EXPECTED_WARNINGS = (
    # torch's own while-loop RNN code (``_recurrences_of_any_length``) and tree specs, from inside torch.
    (FutureWarning, "_check_is_size will be removed"),
    (FutureWarning, r"`isinstance\(treespec, LeafSpec\)` is deprecated"),
    # The inputs' "rows" and "source_length" axes name the outputs' axes of the same size.
    (UserWarning, r"# The axis name: \w+ will not be used, since it shares the same shape constraints"),
)
# The same for the TorchScript-based exporter, the fallback (``_export_graph``).
LEGACY_EXPECTED_WARNINGS = (
    # Every Python branch on a shape or a value: the branches taken for the example (padded sources, one step) serve
    # every batch and length.
    (torch.jit.TracerWarning, ""),
    # The encoder's RNN has no initial-state input: ONNX's GRU / LSTM start from zeros of the batch they read.
    (UserWarning, r"Exporting a model to ONNX with a batch_size other than 1, with a variable length with \w+ can "),
    # The one advanced index, each row's last real token (``recurrent.py``: lengths - 1 with lengths ≥ 1), is ≥ 0.
    (UserWarning, r"Exporting aten::index operator of advanced indexing in opset \d+ is achieved by combination of "),
    # Said once by ``_export_graph`` in its own words.
    (DeprecationWarning, "You are using the legacy TorchScript-based ONNX export"),
    (DeprecationWarning, "The feature will be removed. Please remove usage of this function"),
)
# Loggers of torch's exporter that report on torch itself (optional torchvision operators, initializer
# deduplication), not on the model: kept to errors during the export.
EXPORTER_LOGGERS = ("torch.onnx._internal.exporter._registration", "onnx_ir.passes.common.initializer_deduplication")


def unexportable_options(config, output_layer: Any = None) -> list[str]:
    """What the export cannot express yet of a model with ``config`` and ``output_layer`` (its head's; None: the one
    a seq2seq head builds from ``config``), as ``name=value`` strings (empty: it exports)."""
    family = find_family(config.to_dict())
    if family is None or not family.text_to_text:  # what the descriptor says, not the model type's name
        return [f"model_type={config.model_type!r} (only seq2seq models export)"]
    if output_layer is None and hasattr(config, "copy_attention"):
        output_layer = seq2seq_output_layer(config)
    if output_layer is None:
        return []
    name = next((name for name, layer in OUTPUT_LAYERS.items() if type(output_layer) is layer), None)
    if name is None:
        return [f"output_layer={type(output_layer).__name__} (not a registered output layer; the step graph "
                f"computes {list(EXPORTABLE_OUTPUT_LAYERS)})"]
    if name not in EXPORTABLE_OUTPUT_LAYERS:
        return [f"output_layer={name!r} ({OUTPUT_LAYERS.describe(name)}; the step graph computes "
                f"{list(EXPORTABLE_OUTPUT_LAYERS)})"]
    return []


def encoded_and_state_names(config) -> tuple[list[str], list[str]]:
    """The tensors of the encoded source and of the decoder state a model with ``config`` carries, in graph order."""
    attends = config.attention_type != "none"
    encoded = ["annotations", "mask"]
    if attends:
        encoded.append("projected_keys")
    elif config.context_mode == "cho":
        encoded.append("summary")
    state = ["hidden"] + ["cell"] * RNN_TYPES[config.rnn_type].has_memory_cell
    if attends:
        state += ["input_feed"] * (config.decoder_style == "luong" and config.input_feeding)
        reads_previous = (config.attention_scope == "monotonic"
                          or ATTENTION_SCORES[config.attention_type].reads_previous_alignment)
        state += ["attention_step"] + ["previous"] * reads_previous + ["coverage"]
    return encoded, state


def _flatten(encoded: EncodedSource, state: DecoderState, encoded_names: list[str],
             state_names: list[str]) -> tuple[Tensor, ...]:
    attention = state.attention
    values = {"annotations": encoded.annotations, "mask": encoded.mask, "projected_keys": encoded.projected_keys,
              "summary": encoded.summary, "hidden": state.rnn.hidden, "cell": state.rnn.cell,
              "input_feed": state.input_feed}
    if attention is not None:
        step = attention.step if isinstance(attention.step, Tensor) else torch.tensor(attention.step)
        values.update(attention_step=step, previous=attention.previous, coverage=attention.coverage)
    return tuple(values[name] for name in encoded_names + state_names)


def _unflatten(tensors: tuple[Tensor, ...], encoded_names: list[str],
               state_names: list[str]) -> tuple[EncodedSource, DecoderState]:
    named = dict(zip(encoded_names + state_names, tensors))
    encoded = EncodedSource(named["annotations"], named["mask"], named.get("projected_keys"), named.get("summary"))
    attention = None
    if "attention_step" in named:
        attention = AttentionState(named["attention_step"], named.get("previous"), named.get("coverage"))
    state = DecoderState(RecurrentState(named["hidden"], named.get("cell")), named.get("input_feed"), attention)
    return encoded, state


class EncoderGraph(nn.Module):
    """(input_ids, attention_mask) -> the encoded source's and the initial state's tensors, in
    ``encoded_and_state_names`` order."""

    def __init__(self, model) -> None:
        super().__init__()
        self.model = model.model
        self.names = encoded_and_state_names(model.config)

    def forward(self, input_ids: Tensor, attention_mask: Tensor) -> tuple[Tensor, ...]:
        encoder_outputs = self.model.encoder(input_ids=input_ids, attention_mask=attention_mask)
        encoded = self.model.decoder.prepare_encoded_source(encoder_outputs, attention_mask)
        return _flatten(encoded, self.model.decoder.initial_state(encoder_outputs, encoded), *self.names)


class DecoderStepGraph(nn.Module):
    """(tokens [N], top_k [], the encoded source's and the state's tensors) -> log_probs [N, V], their top_k largest
    [N, top_k] and those tokens [N, top_k], the next state tensors, α [N, S]. The logits are the model's own output
    layer's (``decoded_logits``, as its search steps compute them). A search fetches the top_k it needs (2k candidates
    per beam row, 1 for greedy) instead of the whole [N, V]."""

    def __init__(self, model) -> None:
        super().__init__()
        self.model = model
        self.names = encoded_and_state_names(model.config)

    def forward(self, tokens: Tensor, top_k: Tensor, *tensors: Tensor) -> tuple[Tensor, ...]:
        encoded, state = _unflatten(tensors, *self.names)
        decoder = self.model.model.decoder
        decoded = decoder(tokens.unsqueeze(1), encoded, state, decoder.plan_steps(encoded))
        # squeeze, not [:, -1]: the one step's [N, 1, V] as a view, where ONNX's Gather would copy it every step
        logits = self.model.decoded_logits(decoded, encoded, None, encoded.rows_per_source).squeeze(1)
        next_state = _flatten(encoded, decoded.state, [], self.names[1])
        weights = decoded.attention_weights
        weights = weights.squeeze(1) if weights is not None else encoded.mask.to(logits.dtype)[:, :0]
        log_probs = torch.log_softmax(logits.float(), dim=-1)
        top_log_probs, top_tokens = torch.topk(log_probs, top_k)
        return (log_probs, top_log_probs, top_tokens, *next_state, weights)


def _example_source(config) -> tuple[Tensor, Tensor]:
    """Two sources of 5 and 3 tokens, right-padded: the traced graph takes the padded path, which also serves
    unpadded batches."""
    first = max(4, config.pad_token_id + 1, config.eos_token_id + 1) % config.vocab_size or 4
    input_ids = torch.full((2, 5), first, dtype=torch.long)
    attention_mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
    return input_ids.masked_fill(attention_mask == 0, config.pad_token_id), attention_mask


def export_onnx(model, output_dir: str | Path, tokenizer=None, opset: int = OPSET) -> Path:
    """Write ``encoder.onnx``, ``decoder_step.onnx``, ``onnx_config.json``, the tokenizer and the runtime modules to
    ``output_dir``; each graph is checked with ``onnx.checker``. ``model``: a ``BahdanauForConditionalGeneration``;
    ``tokenizer``: its tokenizer, saved with the graphs (None: decode with token ids). Raises ValueError naming what
    cannot export."""
    import onnx

    highest = onnx.defs.onnx_opset_version()
    if isinstance(opset, bool) or not isinstance(opset, int) or not OPSET <= opset <= highest:
        raise ValueError(f"`opset` must be an integer from {OPSET} to {highest} (the installed onnx's newest), got "
                         f"{opset!r}.")
    blocked = unexportable_options(model.config, model.output_layer)
    if blocked:
        raise ValueError(f"This model cannot be exported to ONNX yet: {'; '.join(blocked)}. Decode it with "
                         "generate() instead.")
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    model = copy.deepcopy(model).float().eval()  # the caller's model keeps its mode and dtype
    encoded_names, state_names = encoded_and_state_names(model.config)
    rows = {name: ROW_AXIS.get(name, 0) for name in encoded_names + state_names}
    input_ids, attention_mask = _example_source(model.config)
    # Evaluation mode for the tracing; torch.onnx.export puts each wrapper back in the mode it had, so they are
    # built in evaluation mode too (a fresh module is in training mode, which would reach the model).
    encoder, step = EncoderGraph(model).eval(), DecoderStepGraph(model).eval()

    with torch.no_grad():
        encoded_and_state = encoder(input_ids, attention_mask)
        # The source-length axes are where a source one token longer changes the size (annotations [B, S, D],
        # multi-head keys [B, heads, S, d], …).
        longer_mask = torch.cat([attention_mask, torch.tensor([[1], [0]])], 1)  # the first source gains a token
        longer = encoder(torch.cat([input_ids, input_ids[:, :1]], 1), longer_mask)
    source_axes = {name: [axis for axis, (size, longer_size) in enumerate(zip(value.shape, other.shape))
                          if size != longer_size]
                   for name, value, other in zip(encoded_names + state_names, encoded_and_state, longer)}

    def axes(names: list[str], prefix: str = "") -> dict[str, dict[int, str]]:
        return {prefix + name: ({} if rows[name] is None else {rows[name]: "rows"})
                | {axis: "source_length" for axis in source_axes[name]} for name in names}

    source = {0: "rows", 1: "source_length"}
    _export_graph(encoder, (input_ids, attention_mask), output_dir / "encoder.onnx", opset,
                  {"input_ids": source, "attention_mask": source}, axes(encoded_names + state_names))
    tokens = torch.full((2,), model.config.decoder_start_token_id, dtype=torch.long)
    top = {0: "rows", 1: "top_k"}
    _export_graph(step, (tokens, torch.tensor(2), *encoded_and_state), output_dir / "decoder_step.onnx", opset,
                  {"tokens": {0: "rows"}, "top_k": {}, **axes(encoded_names + state_names)},
                  {"log_probs": {0: "rows"}, "top_log_probs": top, "top_tokens": top, **axes(state_names, "next_"),
                   "attention": source})
    simplified = all([simplify_onnx(output_dir / "encoder.onnx"), simplify_onnx(output_dir / "decoder_step.onnx")])
    generation = model.generation_config
    eos = generation.eos_token_id if generation.eos_token_id is not None else model.config.eos_token_id
    eos = eos if isinstance(eos, list) else [eos]
    onnx.save(greedy_graph(onnx.load(str(output_dir / "decoder_step.onnx")), state_names, eos,
                           model.config.pad_token_id, model.config.vocab_size), str(output_dir / "greedy.onnx"))
    for graph in GRAPHS:
        onnx.checker.check_model(str(output_dir / graph), full_check=True)
    manifest = {
        "format": FORMAT, "opset": opset, "memory": encoded_names, "state": state_names,
        "row_axis": rows, "vocab_size": model.config.vocab_size,
        "decoder_start_token_id": model.config.decoder_start_token_id,
        "eos_token_id": eos, "pad_token_id": model.config.pad_token_id,
        # the longest source the step graph scores (Luong's location score: its max_source_positions); None: any
        "max_source_length": getattr(model.get_decoder().attention, "max_source_positions", None),
        "generation": {"num_beams": generation.num_beams or 1, "max_new_tokens": generation.max_new_tokens,
                       "max_length": generation.max_length, "length_penalty": generation.length_penalty,
                       "early_stopping": generation.early_stopping,
                       "coverage_penalty": getattr(generation, "coverage_penalty", None),
                       "length_penalty_style": getattr(generation, "length_penalty_style", None)},
        "source_model": model.name_or_path, "config": model.config.to_diff_dict(), "simplified": simplified,
    }
    manifest["unk_token"] = getattr(tokenizer, "unk_token", None)
    (output_dir / MANIFEST).write_text(json.dumps(manifest, indent=2, default=str) + "\n")
    if tokenizer is not None:
        tokenizer.save_pretrained(output_dir)
    for module in RUNTIME_MODULES:
        shutil.copyfile(module.__file__, output_dir / Path(module.__file__).name)
    write_card(output_dir, Path(model.name_or_path or "."), manifest)
    return output_dir


def _export_graph(module: nn.Module, args: tuple[Tensor, ...], path: Path, opset: int,
                  inputs: dict[str, dict[int, str]], outputs: dict[str, dict[int, str]]) -> None:
    """``module(*args)`` as the ONNX graph ``path``, through torch's exporter (``torch.onnx.export(dynamo=True)``,
    which traces with ``torch.export``). ``inputs`` and ``outputs`` name the graph's tensors in order, each with its
    dynamic axes ({axis: name}, one size per name); ``forward`` takes the inputs after the first two as
    ``*tensors`` when there are more. The model's value checks step aside while it traces
    (``modeling/input_checks.exporting``).

    Where the graph cannot be exported that way (a torch without ``torch.export._patches``, no onnxscript, or code
    that branches on tensor values, which no option of this library has left), torch's TorchScript-based exporter
    traces it instead, with a ``UserWarning`` that names the graph and the reason: that exporter is deprecated and
    will leave torch."""
    dims = {name: torch.export.Dim(name) for axes in inputs.values() for name in axes.values()}
    shapes = [{axis: dims[name] for axis, name in axes.items()} for axes in inputs.values()]
    dynamic_shapes = tuple(shapes) if len(shapes) == 2 else (*shapes[:2], tuple(shapes[2:]))
    names = dict(input_names=list(inputs), output_names=list(outputs))
    try:
        with torch.no_grad(), _quiet_exporter(EXPECTED_WARNINGS), _recurrences_of_any_length():
            # torch.export itself, not torch.onnx.export's fallbacks, some of which fix a dynamic size silently
            program = torch.export.export(module, args, dynamic_shapes=dynamic_shapes, strict=False)
            torch.onnx.export(program, args, str(path), dynamo=True, opset_version=opset, verbose=False,
                              custom_translation_table={torch.ops.aten.rnn_tanh.input: _onnx_rnn_tanh}, **names)
        _name_axes(path, inputs | outputs)
        return
    except Exception as error:  # torch.export's many kinds (TypeError, UserError, …); ImportError: an older torch
        reason = _innermost(error)
    warnings.warn(f"torch.export cannot trace {path.name} of this model yet ({reason}); exported with torch's "
                  "TorchScript-based exporter instead, which torch deprecates.", UserWarning, stacklevel=3)
    # dynamo=False where torch has the flag (2.5 on; before, this exporter was the only one)
    legacy = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    with torch.no_grad(), _quiet_exporter(LEGACY_EXPECTED_WARNINGS):
        torch.onnx.export(module, args, str(path), opset_version=opset, dynamic_axes=inputs | outputs, **names,
                          **legacy)


def _name_axes(path: Path, axes: dict[str, dict[int, str]]) -> None:
    """Give the graph's inputs and outputs the axis names of ``axes`` ({tensor: {axis: name}}), as the
    TorchScript-based exporter did (torch.export calls them s0, s1, …)."""
    import onnx

    graph = onnx.load(str(path))
    for value in [*graph.graph.input, *graph.graph.output]:
        for axis, name in axes.get(value.name, {}).items():
            value.type.tensor_type.shape.dim[axis].dim_param = name
    onnx.save(graph, str(path))


def _innermost(error: BaseException) -> str:
    """The first line of the exception at the root of ``error``'s chain, with its type."""
    while error.__cause__ is not None:
        error = error.__cause__
    return f"{type(error).__name__}: {str(error).strip().splitlines()[0] if str(error).strip() else ''}"


@contextlib.contextmanager
def _quiet_exporter(expected: tuple[tuple[type[Warning], str], ...]) -> Iterator[None]:
    """Hide the ``expected`` warnings and ``EXPORTER_LOGGERS``' reports below errors, for the block."""
    loggers = [logging.getLogger(name) for name in EXPORTER_LOGGERS]
    levels = [logger.level for logger in loggers]
    with warnings.catch_warnings():
        for category, message in expected:
            warnings.filterwarnings("ignore", message, category)
        for logger in loggers:
            logger.setLevel(logging.ERROR)
        try:
            yield
        finally:
            for logger, level in zip(loggers, levels):
                logger.setLevel(level)


@contextlib.contextmanager
def _recurrences_of_any_length() -> Iterator[None]:
    """Shapes of ``aten.gru`` / ``aten.lstm`` / ``aten.rnn_tanh`` (the encoder's fused RNN calls) that follow a
    dynamic source length: torch's default versions unroll the example's 5 steps and fix the source length to 5 in
    every shape after them; its while-loop versions do not, and torch.onnx.export registers them only while it
    captures a module, not while it decomposes the program (torch 2.13). Here they are registered for the capture
    and the whole export, with ``_rnn_tanh_as_gru`` for the tanh-RNN, which torch has none for (through torch's own
    registration helper); the graph still gets ONNX's GRU / LSTM operators, and ONNX's RNN (``_onnx_rnn_tanh``)."""
    from torch.export._patches import (
        _register_rnn_while_loop_decomposition, register_gru_while_loop_decomposition,
        register_lstm_while_loop_decomposition,
    )

    with register_gru_while_loop_decomposition(), register_lstm_while_loop_decomposition(), \
            _register_rnn_while_loop_decomposition(torch.ops.aten.rnn_tanh.input, _rnn_tanh_as_gru):
        yield


def _rnn_tanh_as_gru(inputs: Tensor, hidden: Tensor, params: list[Tensor], has_biases: bool, num_layers: int,
                     dropout: float, train: bool, bidirectional: bool, batch_first: bool) -> tuple[Tensor, Tensor]:
    """``aten.rnn_tanh`` (with biases) as ``aten.gru``, whose while-loop version serves any length: a GRU whose
    reset and update gates are saturated open and shut (r = σ(+SATURATED) = 1, z = σ(−SATURATED) = 0, no weights)
    computes
    h' = n = tanh(W_ih x + b_ih + W_hh h + b_hh), the Elman step."""
    size = hidden.shape[-1]
    gru_params = []
    for w_ih, w_hh, b_ih, b_hh in zip(*[iter(params)] * 4):
        gates = b_ih.new_tensor([SATURATED, -SATURATED]).repeat_interleave(size)  # [r, z]
        gru_params += [torch.cat([w_ih.new_zeros(2 * size, w_ih.shape[1]), w_ih]),
                       torch.cat([w_hh.new_zeros(2 * size, size), w_hh]),
                       torch.cat([gates, b_ih]), torch.cat([torch.zeros_like(gates), b_hh])]
    return torch.ops.aten.gru.input(inputs, hidden, gru_params, has_biases, num_layers, dropout, train,
                                    bidirectional, batch_first)


def _onnx_rnn_tanh(inputs, hidden, params, has_biases: bool, num_layers: int, dropout: float, train: bool,
                   bidirectional: bool, batch_first: bool):
    """ONNX's RNN operator (tanh) for ``aten.rnn_tanh`` of one layer, one direction, with biases (a
    ``RecurrentStack`` direction; torch's exporter has no translation of its own): inputs [B, T, I] (batch first) or
    [T, B, I], hidden [1, B, H] -> (h_t in the inputs' layout, h_T [1, B, H])."""
    from onnxscript.onnx_opset import opset18 as op

    if num_layers != 1 or bidirectional or not has_biases:
        raise NotImplementedError("ONNX export of torch.rnn_tanh: one layer, one direction, with biases only")
    w_ih, w_hh, b_ih, b_hh = params
    sequence = op.Transpose(inputs, perm=[1, 0, 2]) if batch_first else inputs
    outputs, last = op.RNN(sequence, op.Unsqueeze(w_ih, [0]), op.Unsqueeze(w_hh, [0]),
                           op.Unsqueeze(op.Concat(b_ih, b_hh, axis=0), [0]), initial_h=hidden,
                           hidden_size=hidden.shape[2], activations=["Tanh"])
    outputs = op.Squeeze(outputs, [1])  # [T, directions = 1, B, H]
    return (op.Transpose(outputs, perm=[1, 0, 2]) if batch_first else outputs), last


def simplify_onnx(path: Path) -> bool:
    """Rewrite the graph at ``path`` with onnx-simplifier (constant folding, the trace's shape arithmetic resolved:
    fewer nodes, each of which costs a fixed overhead per decoding step) when it is installed (the ``onnx`` extra).
    False where it is not, or where its own check of the result fails: the graph stays as traced, and as correct."""
    try:
        from onnxsim import simplify
    except ImportError:
        return False
    import onnx

    simplified, checked = simplify(onnx.load(str(path)))
    if checked:
        onnx.save(simplified, str(path))
    return checked


def write_card(output_dir: Path, source: Path, manifest: dict) -> Path:
    """``README.md`` of the exported folder: the source folder's model card (when it has one) and a section on the
    ONNX graphs and how to decode them."""
    source_card = source / "README.md"
    card = source_card.read_text() if source_card.is_file() else f"# {source.name or 'model'} (ONNX)\n"
    section = ONNX_CARD_SECTION.format(opset=manifest["opset"], encoded=", ".join(manifest["memory"]),
                                       state=", ".join(manifest["state"]))
    (output_dir / "README.md").write_text(card.rstrip() + "\n\n" + section)
    return output_dir / "README.md"


ONNX_CARD_SECTION = """## ONNX Runtime

This folder is the model exported by `hf-bahdanau-export` (ONNX opset {opset}): `encoder.onnx` reads a batch of
right-padded sources once (encoded source: {encoded}; initial state: {state}); `decoder_step.onnx` reads the previous
tokens, the encoded source and the state, and returns the log-probabilities (and the top k of them), the next state
and the attention weights; `greedy.onnx` runs that step in a loop, a whole greedy search in one call. Batch and source
length are dynamic. `*.int8.onnx`, when present, are dynamically quantised copies. `onnx_config.json` lists the
tensors, the special tokens and the generation defaults.

Decode with numpy, onnxruntime and tokenizers only (`pip install onnxruntime tokenizers numpy`), from this folder:

```python
from runtime import OnnxSeq2Seq  # with hf_bahdanau installed: from hf_bahdanau.onnx.runtime import OnnxSeq2Seq

model = OnnxSeq2Seq(".")  # OnnxSeq2Seq(".", quantized=True) for the int8 graphs
result = model.translate(["your text"], num_beams=5, output_alignments=True)[0]
print(result.translation, result.alignment.shape)
```

or `hf-bahdanau-translate THIS_FOLDER --backend onnxruntime "your text"`, or, with hf_bahdanau installed, the
translation pipeline: `hf_bahdanau.onnx_translation_pipeline("THIS_FOLDER")(["your text"], num_beams=5)`. Greedy
and beam search are transformers' `generate()` algorithms (length penalty, early stopping, minimum and maximum new
tokens, several returned sequences) and return its tokens.
"""


def quantize_onnx(folder: str | Path) -> list[Path]:
    """int8 copies of an exported folder's graphs, ``encoder.int8.onnx``, ``decoder_step.int8.onnx`` and
    ``greedy.int8.onnx``: dynamic quantisation (``onnxruntime.quantization.quantize_dynamic``, int8 weights,
    activations quantised per call) of the matrix products; ``OnnxSeq2Seq(folder, quantized=True)`` runs them."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    folder = Path(folder)
    written = []
    root = logging.getLogger()  # where onnxruntime logs its advice
    root.addFilter(_without_preprocessing_advice)
    try:
        for graph in (name.removesuffix(".onnx") for name in GRAPHS):
            source = folder / f"{graph}.onnx"
            if not source.is_file():
                raise ValueError(f"`folder` {str(folder)!r} has no {source.name}: give a folder written by "
                                 "export_onnx.")
            target = folder / f"{graph}.int8.onnx"
            quantize_dynamic(str(source), str(target), weight_type=QuantType.QInt8,
                             extra_options={"EnableSubgraph": True})
            written.append(target)
    finally:
        root.removeFilter(_without_preprocessing_advice)
    return written


def _without_preprocessing_advice(record: logging.LogRecord) -> bool:
    """Drop onnxruntime's "Please consider pre-processing before quantization", said for every graph: its
    pre-processing (shape inference, graph optimisation) is for static quantisation, where activation ranges are
    calibrated per tensor. Dynamic quantisation quantises the weights of the matrix products, whose shapes the
    simplified graphs already carry, and the activations per call."""
    return "pre-processing before quantization" not in record.getMessage()
