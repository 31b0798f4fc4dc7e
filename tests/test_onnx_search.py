"""The numpy beam search of the ONNX Runtime decoder (hf_bahdanau/onnx/beam_search.py) against generate():
driven by the PyTorch graphs that the export traces (``EncoderGraph``, ``DecoderStepGraph``), they must return
generate()'s sequences, token for token, its sequence scores and its alignments. No ONNX is involved here, so a
difference is the search's, not the runtime's."""

import numpy as np
import pytest
import torch

from hf_bahdanau.modeling.alignments import alignments_from_generate
from hf_bahdanau.onnx.export import ROW_AXIS, DecoderStepGraph, EncoderGraph, encoded_and_state_names
from hf_bahdanau.onnx.beam_search import beam_search
from tests.conftest import BOS, EOS, PAD, padded_batch, tiny_model

def decisive_model(preset: str, seed: int = 0, eos_bias: float = 0.0, **overrides):
    """``tiny_model`` with its output layer scaled ×10. A random model's log-probabilities are nearly flat, so the
    last-bit differences between two kernels (another thread count, another runtime) flip near-ties between tokens;
    spread out, the token comparisons test the search, not the rounding. ``eos_bias`` is added to EOS's logit: at 0
    these models never end a sequence before the limit, at 1 they end hypotheses after 1–4 tokens."""
    model = tiny_model(preset, seed=seed, **overrides)
    with torch.no_grad():
        model.lm_head.weight.mul_(10)
        model.lm_head.bias[EOS] += eos_bias
    return model


PRESETS = ["rnnsearch", "rnnencdec", "sutskever", "luong-general", "luong-local-p", "rnnsearch-monotonic",
           "rnnsearch+coverage", "luong-dot+local-m"]


def torch_search_functions(model, input_ids, attention_mask, rows_per_source: int):
    """step(tokens, state, top_k) and reorder(state, rows) in numpy terms over the traced graphs, and the initial
    state with ``rows_per_source`` rows per source."""
    encoded_names, state_names = encoded_and_state_names(model.config)
    with torch.no_grad():
        named = dict(zip(encoded_names + state_names, EncoderGraph(model)(input_ids, attention_mask)))
    step_graph = DecoderStepGraph(model)

    def pick(name, value, rows):
        axis = ROW_AXIS.get(name, 0)
        return value if axis is None else value.index_select(axis, torch.as_tensor(rows))

    rows = torch.arange(input_ids.shape[0]).repeat_interleave(rows_per_source)
    encoded = [pick(name, named[name], rows) for name in encoded_names]
    state = {name: pick(name, named[name], rows) for name in state_names}

    def step(tokens, state, top_k):
        top_k = torch.tensor(min(top_k, model.config.vocab_size))
        with torch.no_grad():
            _, log_probs, ids, *next_state, weights = step_graph(torch.from_numpy(tokens), top_k, *encoded,
                                                                 *(state[name] for name in state_names))
        return log_probs.numpy(), ids.numpy(), dict(zip(state_names, next_state)), weights.numpy()

    def reorder(state, rows):
        return {name: pick(name, value, rows) for name, value in state.items()}

    return step, reorder, state


def generated(model, input_ids, attention_mask, **kwargs):
    with torch.no_grad():
        return model.generate(input_ids=input_ids, attention_mask=attention_mask, return_dict_in_generate=True,
                              output_scores=True, output_attentions=True, do_sample=False, **kwargs)


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("options", [dict(num_beams=4), dict(num_beams=3, length_penalty=0.6, num_return_sequences=2),
                                     dict(num_beams=3, early_stopping=True, min_new_tokens=3),
                                     dict(num_beams=2, early_stopping="never", length_penalty=1.5)],
                         ids=["k4", "k3-lp0.6-two", "k3-early-min3", "k2-never-lp1.5"])
@pytest.mark.parametrize("eos_bias", [0.0, 1.0])
def test_beam_search_returns_generates_sequences_and_scores(preset, options, eos_bias):
    model = decisive_model(preset, seed=4, eos_bias=eos_bias)
    input_ids, attention_mask = padded_batch((6, 3), seed=6)
    expected = generated(model, input_ids, attention_mask, max_new_tokens=8, **options)
    k = options["num_beams"]
    step, reorder, state = torch_search_functions(model, input_ids, attention_mask, k)
    search_options = {key: value for key, value in options.items() if key != "num_beams"}
    output = beam_search(step, reorder, state, 2, k, BOS, [EOS], PAD, max_new_tokens=8,
                         output_alignments=model.config.attention_type != "none", **search_options)
    np.testing.assert_array_equal(output.sequences, expected.sequences.numpy())
    # Scores: sums of up to 8 float32 log-probabilities, divided by |Y|^α; each within ~1e-6 of its magnitude (≤ 40).
    np.testing.assert_allclose(output.scores, expected.sequences_scores.numpy(), rtol=0, atol=8 * 40 * 1e-6)
    if model.config.attention_type != "none":
        for row, alignment in enumerate(output.alignments):
            np.testing.assert_allclose(alignment, alignments_from_generate(expected, row).numpy(), atol=1e-6)
