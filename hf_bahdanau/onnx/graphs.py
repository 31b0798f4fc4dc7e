"""The greedy-search graph: the decoder-step graph wrapped in an ONNX ``Loop``, so a whole greedy decode is one
ONNX Runtime call instead of one call (and one trip through Python) per token. Batch-1 decoding is dominated by
that per-step overhead (benchmarks/onnx_runtime.py; docs/performance.md).

    greedy.onnx  start_tokens [N] int64, max_new_tokens [] int64, min_new_tokens [] int64, the encoded source
                 (as decoder_step.onnx reads it), the initial state (initial_<name>)
                 -> new_tokens [T, N] int64, new_token_log_probs [T, N] float32, new_attention [T, N, S]

Each iteration is transformers' greedy step: y_t = argmax_y log p(y | y_<t, x), with every EOS id at -inf before
``min_new_tokens`` new tokens; a row that produced an EOS id gets the pad id (log-probability 0) afterwards; the loop
stops when every row has ended or after ``max_new_tokens`` (T ≤ max_new_tokens).
"""

from __future__ import annotations

import onnx
from onnx import TensorProto, helper

__all__ = ["greedy_graph"]


def greedy_graph(step: onnx.ModelProto, state_names: list[str], eos_ids: list[int], pad_id: int,
                 vocab_size: int) -> onnx.ModelProto:
    """The greedy-search model around ``step`` (a decoder_step.onnx with the ``top_k`` input and
    ``top_log_probs``, ``top_tokens`` outputs)."""
    graph = step.graph
    inputs = {value.name: value for value in graph.input}
    encoded_names = [name for name in inputs if name not in ["tokens", "top_k", *state_names]]

    def constant(name: str, value, dtype=TensorProto.INT64, dims=()) -> onnx.NodeProto:
        values = value if isinstance(value, list) else [value]
        return helper.make_node("Constant", [], [name], value=helper.make_tensor(name, dtype, list(dims), values))

    candidates = min(1 + len(eos_ids), vocab_size)  # the best token, and the next ones while EOS is forbidden

    def is_eos(tokens: str, name: str) -> list[onnx.NodeProto]:
        """``name`` = (tokens == eos_ids[0]) ∨ (tokens == eos_ids[1]) ∨ …"""
        nodes = [helper.make_node("Equal", [tokens, "eos_id_0"], [f"{name}_0"])]
        for index in range(1, len(eos_ids)):
            nodes += [helper.make_node("Equal", [tokens, f"eos_id_{index}"], [f"{name}_equal_{index}"]),
                      helper.make_node("Or", [f"{name}_{index - 1}", f"{name}_equal_{index}"], [f"{name}_{index}"])]
        return nodes + [helper.make_node("Identity", [f"{name}_{len(eos_ids) - 1}"], [name])]

    body_nodes = [
        constant("top_k", candidates),
        *graph.node,  # as exported: it reads tokens, top_k, the state (body inputs), the encoded source (outer scope)
        *(constant(f"eos_id_{index}", eos_id) for index, eos_id in enumerate(eos_ids)),
        constant("pad_id", pad_id),
        constant("no", 0),
        constant("zero", 0.0, TensorProto.FLOAT),
        constant("minus_inf", float("-inf"), TensorProto.FLOAT),
        constant("last_axis", [-1], dims=[1]),
        # Before min_new_tokens new tokens, every EOS id among the candidates gets -inf (transformers'
        # MinNewTokensLengthLogitsProcessor); TopK then takes the first best candidate: the lower id on ties.
        helper.make_node("Less", ["iteration", "min_new_tokens"], ["too_early"]),
        *is_eos("top_tokens", "candidate_is_eos"),
        helper.make_node("And", ["candidate_is_eos", "too_early"], ["forbidden"]),
        helper.make_node("Where", ["forbidden", "minus_inf", "top_log_probs"], ["allowed_log_probs"]),
        constant("one", [1], dims=[1]),
        helper.make_node("TopK", ["allowed_log_probs", "one"], ["best_log_prob", "best"], axis=-1),
        helper.make_node("GatherElements", ["top_tokens", "best"], ["best_token"], axis=-1),
        helper.make_node("Squeeze", ["best_token", "last_axis"], ["best_token_row"]),
        helper.make_node("Squeeze", ["best_log_prob", "last_axis"], ["best_log_prob_row"]),
        helper.make_node("Where", ["running", "best_token_row", "pad_id"], ["next_tokens"]),
        helper.make_node("Where", ["running", "best_log_prob_row", "zero"], ["next_token_log_probs"]),
        *is_eos("next_tokens", "ended"),
        helper.make_node("Not", ["ended"], ["not_ended"]),
        helper.make_node("And", ["running", "not_ended"], ["next_running"]),
        helper.make_node("Cast", ["next_running"], ["next_running_int"], to=TensorProto.INT64),
        helper.make_node("ReduceSum", ["next_running_int"], ["running_count"], keepdims=0),
        helper.make_node("Greater", ["running_count", "no"], ["go_on"]),
        helper.make_node("Identity", ["next_tokens"], ["scanned_tokens"]),
        helper.make_node("Identity", ["attention"], ["scanned_attention"]),
    ]
    body = helper.make_graph(
        body_nodes, "greedy_step",
        [helper.make_tensor_value_info("iteration", TensorProto.INT64, []),
         helper.make_tensor_value_info("condition", TensorProto.BOOL, []), inputs["tokens"],
         *(inputs[name] for name in state_names), helper.make_tensor_value_info("running", TensorProto.BOOL, None)],
        [helper.make_tensor_value_info("go_on", TensorProto.BOOL, []),
         helper.make_tensor_value_info("next_tokens", TensorProto.INT64, None),
         *(helper.make_tensor_value_info(f"next_{name}", inputs[name].type.tensor_type.elem_type, None)
           for name in state_names),
         helper.make_tensor_value_info("next_running", TensorProto.BOOL, None),
         helper.make_tensor_value_info("scanned_tokens", TensorProto.INT64, None),
         helper.make_tensor_value_info("next_token_log_probs", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("scanned_attention", TensorProto.FLOAT, None)])
    main_nodes = [
        helper.make_node("Constant", [], ["true"], value=helper.make_tensor("true", TensorProto.BOOL, [], [True])),
        helper.make_node("Shape", ["start_tokens"], ["rows"]),
        helper.make_node("ConstantOfShape", ["rows"], ["all_running"],
                         value=helper.make_tensor("one", TensorProto.BOOL, [1], [True])),
        helper.make_node("Loop", ["max_new_tokens", "true", "start_tokens",
                                  *(f"initial_{name}" for name in state_names), "all_running"],
                         ["last_tokens", *(f"last_{name}" for name in state_names), "last_running",
                          "new_tokens", "new_token_log_probs", "new_attention"], body=body),
    ]

    def renamed_input(name: str, new_name: str) -> onnx.ValueInfoProto:
        value = onnx.ValueInfoProto()
        value.CopyFrom(inputs[name])
        value.name = new_name
        return value

    main = helper.make_graph(
        main_nodes, "greedy_search",
        [renamed_input("tokens", "start_tokens"),
         helper.make_tensor_value_info("max_new_tokens", TensorProto.INT64, []),
         helper.make_tensor_value_info("min_new_tokens", TensorProto.INT64, []),
         *(inputs[name] for name in encoded_names), *(renamed_input(name, f"initial_{name}") for name in state_names)],
        [helper.make_tensor_value_info("new_tokens", TensorProto.INT64, ["steps", "rows"]),
         helper.make_tensor_value_info("new_token_log_probs", TensorProto.FLOAT, ["steps", "rows"]),
         helper.make_tensor_value_info("new_attention", TensorProto.FLOAT, ["steps", "rows", "source_length"])],
        list(graph.initializer))
    return helper.make_model(main, opset_imports=step.opset_import, producer_name="hf_bahdanau")
