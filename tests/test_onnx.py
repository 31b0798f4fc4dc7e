"""ONNX export (hf_bahdanau/onnx/export.py) and the ONNX Runtime decoder (hf_bahdanau/onnx/runtime.py): every preset and
the scope, mode and coverage variants export, pass onnx.checker, and decode to generate()'s tokens (greedy and beam
search) with its scores and alignments; what cannot export says so; int8 graphs run; the runtime needs no torch;
the command line exports and decodes, without transformers' progress bar or torch's known-harmless tracer warnings;
a damaged graph, a broken onnx_config.json or a forgotten --backend is one error line naming the file or the flag;
translate() and the pipeline run unchanged on the export as a model (generate(), config, generation_config), and the
shipped model code has no ONNX branch."""

import io
import json
import os
import re
import shutil
import subprocess
import sys
import tokenize
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from hf_bahdanau import BahdanauPointerConfig
from hf_bahdanau.cli import export_main
from hf_bahdanau.modeling.input_checks import check_token_ids
from hf_bahdanau.modeling.padding import check_attention_mask
from hf_bahdanau.modeling.output_layers import OUTPUT_LAYERS, SoftmaxOutput
from hf_bahdanau.onnx.export import OPSET, export_onnx, quantize_onnx, unexportable_options
from tests.conftest import EOS, VOCAB, padded_batch, tiny_model
from tests.test_onnx_search import PRESETS, decisive_model

onnx = pytest.importorskip("onnx", reason="the onnx extra: pip install -e \".[onnx]\"")
pytest.importorskip("onnxruntime", reason="the onnx extra: pip install -e \".[onnx]\"")
from hf_bahdanau.onnx.runtime import OnnxSeq2Seq  # noqa: E402

EXPORTED = [*PRESETS, "luong-general+hard", "rnnsearch+coverage+hard", "rnnsearch-location"]
# Every option exports through torch.export: a fallback to the TorchScript-based exporter (its warning, once per graph,
# checked on a torch without torch.export._patches below) fails any test of this file.
pytestmark = pytest.mark.filterwarnings("error:torch.export cannot trace:UserWarning")
MAX_NEW = 8


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """(preset, EOS bias) -> (model, OnnxSeq2Seq of its export), exported once per module."""
    cache = {}

    def get(preset, eos_bias=0.0):
        if (preset, eos_bias) not in cache:
            model = decisive_model(preset, seed=3, eos_bias=eos_bias)
            folder = export_onnx(model, tmp_path_factory.mktemp(preset.replace("+", "_")))
            cache[preset, eos_bias] = model, OnnxSeq2Seq(folder, threads=1)
        return cache[preset, eos_bias]

    return get


def generated(model, input_ids, attention_mask, **options):
    with torch.no_grad():
        return model.generate(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=MAX_NEW,
                              do_sample=False, return_dict_in_generate=True, output_scores=True, output_logits=True,
                              **options)


@pytest.mark.parametrize("preset", EXPORTED)
@pytest.mark.parametrize("options", [dict(num_beams=1, min_new_tokens=2), dict(num_beams=4),
                                     dict(num_beams=3, length_penalty=0.6, num_return_sequences=2, min_new_tokens=2)],
                         ids=["greedy", "beam4", "beam3-lp-two-min2"])
@pytest.mark.parametrize("eos_bias", [0.0, 1.0])
def test_onnx_runtime_decodes_generates_tokens_and_scores(exported, preset, options, eos_bias):
    model, runtime = exported(preset, eos_bias)
    # Sources longer (9) than the traced example (5), and a batch of another size: the axes are dynamic.
    input_ids, attention_mask = padded_batch((9, 4, 2, 7), seed=5)
    expected = generated(model, input_ids, attention_mask, **options)
    output = runtime.generate(input_ids.numpy(), attention_mask.numpy(), max_new_tokens=MAX_NEW, **options)
    np.testing.assert_array_equal(output.sequences, expected.sequences.numpy())
    if options["num_beams"] > 1:
        # sums of ≤ 8 float32 log-probabilities (|log p| ≤ 40 here), through two runtimes' kernels
        np.testing.assert_allclose(output.scores, expected.sequences_scores.numpy(), rtol=0, atol=8 * 40 * 1e-6)
    else:  # the model's log p of each chosen token, 0 once a row has ended
        log_probs = torch.stack(expected.logits, 1).log_softmax(-1)  # [B, T, V]
        tokens = expected.sequences[:, 1:]
        ended = (tokens == EOS).cumsum(-1) - (tokens == EOS).int() > 0  # after the row's first EOS
        chosen = log_probs.gather(-1, tokens[..., None])[..., 0].masked_fill(ended, 0)
        np.testing.assert_allclose(output.scores, chosen.numpy(), rtol=0, atol=40 * 1e-6)  # one |log p| ≤ 40


@pytest.mark.parametrize("preset", ["rnnsearch", "luong-general", "rnnsearch-monotonic", "rnnsearch+coverage"])
@pytest.mark.parametrize("options", [dict(coverage_penalty=0.4), dict(length_penalty_style="gnmt", length_penalty=0.6),
                                     dict(coverage_penalty=0.2, length_penalty_style="gnmt", early_stopping="never")],
                         ids=["coverage", "gnmt-lp", "both-never"])
def test_gnmt_penalties_score_as_in_generate(exported, preset, options):
    model, runtime = exported(preset, 1.0)
    input_ids, attention_mask = padded_batch((9, 4, 2, 7), seed=5)
    expected = generated(model, input_ids, attention_mask, num_beams=3, num_return_sequences=2, **options)
    output = runtime.generate(input_ids.numpy(), attention_mask.numpy(), max_new_tokens=MAX_NEW, num_beams=3,
                              num_return_sequences=2, **options)
    np.testing.assert_array_equal(output.sequences, expected.sequences.numpy())
    # log P / lp (≤ 8 float32 log-probabilities of |log p| ≤ 40) plus β times ≤ 9 logs of totals ≥ 1e-10 (≤ 23 each)
    np.testing.assert_allclose(output.scores, expected.sequences_scores.numpy(), rtol=0,
                               atol=8 * 40 * 1e-6 + options.get("coverage_penalty", 0) * 9 * 23 * 1e-6)
    unpenalised = runtime.generate(input_ids.numpy(), attention_mask.numpy(), max_new_tokens=MAX_NEW, num_beams=3,
                                   num_return_sequences=2)
    assert not np.allclose(unpenalised.scores, output.scores)  # the options change the scores


def test_the_generation_configs_penalties_are_the_exported_defaults(tmp_path):
    model = decisive_model("rnnsearch", seed=3, eos_bias=1.0)
    model.generation_config.update(num_beams=3, coverage_penalty=0.4, length_penalty_style="gnmt", max_new_tokens=6)
    runtime = OnnxSeq2Seq(export_onnx(model, tmp_path), threads=1)
    input_ids, attention_mask = padded_batch((9, 4, 2, 7), seed=5)
    with torch.no_grad():
        expected = model.generate(input_ids=input_ids, attention_mask=attention_mask, return_dict_in_generate=True,
                                  output_scores=True)
    output = runtime.generate(input_ids.numpy(), attention_mask.numpy())
    np.testing.assert_array_equal(output.sequences, expected.sequences.numpy())
    np.testing.assert_allclose(output.scores, expected.sequences_scores.numpy(), rtol=0,
                               atol=6 * 40 * 1e-6 + 0.4 * 9 * 23 * 1e-6)  # as in the test above


@pytest.mark.parametrize("lengths, new_tokens", [({}, 20), ({"max_length": 7}, 6), ({"max_new_tokens": 5}, 5)],
                         ids=["neither", "max_length", "max_new_tokens"])
def test_the_default_output_length_is_generates(lengths, new_tokens, tmp_path):
    """With neither length in the generation config generate() makes 20 new tokens; max_length counts the start."""
    model = decisive_model("rnnsearch", seed=3)  # never ends a sequence before the limit
    model.generation_config.update(**lengths)
    runtime = OnnxSeq2Seq(export_onnx(model, tmp_path), threads=1)
    input_ids, attention_mask = padded_batch((9, 4), seed=5)
    with torch.no_grad():
        expected = model.generate(input_ids=input_ids, attention_mask=attention_mask)
    assert expected.shape[1] == 1 + new_tokens
    np.testing.assert_array_equal(runtime.generate(input_ids.numpy(), attention_mask.numpy()).sequences,
                                  expected.numpy())


def test_gnmt_penalties_are_checked_as_generate_checks_them(exported):
    _, runtime = exported("rnnsearch")
    source = np.array([[5, 6]])
    with pytest.raises(ValueError, match="`coverage_penalty` must be a finite number ≥ 0"):
        runtime.generate(source, num_beams=2, coverage_penalty=-1.0)
    with pytest.raises(ValueError, match="`length_penalty_style` must be one of"):
        runtime.generate(source, num_beams=2, length_penalty_style="google")
    with pytest.raises(ValueError, match="for beam search only"):
        runtime.generate(source, coverage_penalty=0.5)
    greedy = runtime.generate(source).sequences
    runtime.manifest["generation"].update(coverage_penalty=0.5, length_penalty_style="gnmt")  # the model's own: beams
    try:
        np.testing.assert_array_equal(runtime.generate(source).sequences, greedy)
    finally:
        runtime.manifest["generation"].update(coverage_penalty=None, length_penalty_style=None)
    _, attention_free = exported("rnnencdec")
    with pytest.raises(ValueError, match="this model has no attention"):
        attention_free.generate(source, num_beams=2, coverage_penalty=0.5)


def test_batch_of_one_and_alignments(exported):
    model, runtime = exported("rnnsearch")
    input_ids, attention_mask = padded_batch((11,), seed=8)
    expected = generated(model, input_ids, attention_mask, output_attentions=True)
    output = runtime.generate(input_ids.numpy(), attention_mask.numpy(), max_new_tokens=MAX_NEW,
                              output_alignments=True)
    np.testing.assert_array_equal(output.sequences, expected.sequences.numpy())
    steps = torch.stack([step[0][0, 0, 0] for step in expected.cross_attentions])[:len(output.alignments[0])]
    np.testing.assert_allclose(output.alignments[0], steps.numpy(), rtol=0, atol=1e-5)  # weights ≤ 1, float32


@pytest.mark.parametrize("options", [dict(num_beams=1), dict(num_beams=3, num_return_sequences=2)],
                         ids=["greedy", "beam3-two"])
def test_a_batch_split_across_threads_decodes_as_one_batch(exported, options):
    """batch_threads=3 decodes 7 sources as slices of 3, 2 and 2 at once: the same sequences (padded to the longest
    slice as one search pads its rows), scores and alignments as one batch on one thread, and as generate()."""
    model, runtime = exported("rnnsearch", 1.0)  # hypotheses end after 1–4 tokens: the slices end apart
    split = OnnxSeq2Seq(runtime.folder, threads=1, batch_threads=3)
    input_ids, attention_mask = padded_batch((9, 4, 2, 7, 3, 8, 5), seed=11)
    ids, mask = input_ids.numpy(), attention_mask.numpy()
    slices = np.array_split(np.arange(7), 3)
    widths = {runtime.generate(ids[rows], mask[rows], max_new_tokens=MAX_NEW, **options).sequences.shape[1]
              for rows in slices}
    assert len(widths) > 1  # the join pads a slice that ended sooner
    whole = runtime.generate(ids, mask, max_new_tokens=MAX_NEW, output_alignments=True, **options)
    output = split.generate(ids, mask, max_new_tokens=MAX_NEW, output_alignments=True, **options)
    np.testing.assert_array_equal(output.sequences, whole.sequences)
    np.testing.assert_array_equal(output.sequences, generated(model, input_ids, attention_mask, **options).sequences)
    # The same rows through the same kernels, in smaller products (whose blocking may differ on another CPU): sums of
    # ≤ 8 float32 log-probabilities of |log p| ≤ 40, and attention weights ≤ 1.
    np.testing.assert_allclose(output.scores, whole.scores, rtol=0, atol=8 * 40 * 1e-6)
    assert len(output.alignments) == len(whole.alignments)
    for mine, theirs in zip(output.alignments, whole.alignments):
        np.testing.assert_allclose(mine, theirs, rtol=0, atol=1e-6)
    with pytest.raises(ValueError, match="`batch_threads` must be an integer ≥ 1, got 0"):
        OnnxSeq2Seq(runtime.folder, batch_threads=0)


def test_the_step_graph_returns_the_top_k_of_its_log_probs(exported):
    """top_log_probs / top_tokens are the largest log_probs of each row in order, the lower id first on ties (the
    search's assumption: argmax's choice), for any top_k up to the vocabulary."""
    _, runtime = exported("rnnsearch")
    encoded, state = runtime.encode(*(tensor.numpy() for tensor in padded_batch((6, 3), seed=2)))
    feeds = {"tokens": np.array([1, 7]), **encoded, **state}
    feeds = {name: value for name, value in feeds.items() if name in runtime.step_inputs | {"tokens"}}
    for top_k in (1, 8, 40):
        log_probs, values, ids = runtime.decoder.run(["log_probs", "top_log_probs", "top_tokens"],
                                                     feeds | {"top_k": np.array(top_k)})
        order = np.argsort(-log_probs, axis=-1, kind="stable")[:, :top_k]
        np.testing.assert_array_equal(ids, order)
        np.testing.assert_array_equal(values, np.take_along_axis(log_probs, order, -1))


def test_more_beams_than_half_the_vocabulary_match_generate(exported):
    """2k candidates per row exceed the 40 tokens: each row offers all of them, as generate()'s top-2k of k·V."""
    model, runtime = exported("rnnsearch", 1.0)
    input_ids, attention_mask = padded_batch((6, 3), seed=6)
    expected = generated(model, input_ids, attention_mask, num_beams=24, min_new_tokens=2)
    output = runtime.generate(input_ids.numpy(), attention_mask.numpy(), max_new_tokens=MAX_NEW, num_beams=24,
                              min_new_tokens=2)
    np.testing.assert_array_equal(output.sequences, expected.sequences.numpy())
    np.testing.assert_allclose(output.scores, expected.sequences_scores.numpy(), rtol=0, atol=8 * 40 * 1e-6)


def test_graphs_pass_the_checker_with_the_opset_and_dynamic_axes(exported, tmp_path):
    folder = export_onnx(tiny_model("luong-general"), tmp_path / "luong")
    manifest = json.loads((folder / "onnx_config.json").read_text())
    assert manifest["memory"] == ["annotations", "mask", "projected_keys"]
    assert manifest["state"] == ["hidden", "cell", "input_feed", "attention_step", "coverage"]
    for name in ("encoder.onnx", "decoder_step.onnx"):
        graph = onnx.load(folder / name)
        onnx.checker.check_model(graph, full_check=True)
        assert max(entry.version for entry in graph.opset_import if entry.domain in ("", "ai.onnx")) >= OPSET
    encoder_inputs = {value.name: [d.dim_param for d in value.type.tensor_type.shape.dim]
                      for value in onnx.load(folder / "encoder.onnx").graph.input}
    assert encoder_inputs == {"input_ids": ["rows", "source_length"], "attention_mask": ["rows", "source_length"]}
    assert {"tokenizer.json", "runtime.py", "beam_search.py", "source_warnings.py"} - {
        p.name for p in folder.iterdir()} == {"tokenizer.json"}  # the runtime modules; no tokenizer was given here


def test_what_cannot_export_is_refused_with_the_reason(tmp_path):
    """The step graph computes the output layers of EXPORTABLE_OUTPUT_LAYERS; any other is refused by its name (its
    registry name, or its class for one outside the registry) before anything is written."""
    copying = tiny_model("rnnsearch+copy")
    pointer_generator = (f"output_layer='pointer_generator' ({OUTPUT_LAYERS.describe('pointer_generator')}; the step "
                         "graph computes ['softmax'])")
    assert unexportable_options(copying.config) == [pointer_generator]
    with pytest.raises(ValueError, match=rf"^This model cannot be exported to ONNX yet: {re.escape(pointer_generator)}"
                                         r"\. Decode it with generate\(\) instead\.$"):
        export_onnx(copying, tmp_path)

    class TemperedSoftmax(SoftmaxOutput):
        """Not registered: what it computes is not known to be the softmax's."""

    model = tiny_model("rnnsearch")
    model.output_layer = TemperedSoftmax(model.config)
    assert unexportable_options(model.config) == []  # the config's own output layer exports
    with pytest.raises(ValueError, match=r"^This model cannot be exported to ONNX yet: output_layer=TemperedSoftmax "
                                         r"\(not a registered output layer; the step graph computes \['softmax'\]\)\."):
        export_onnx(model, tmp_path)
    assert unexportable_options(BahdanauPointerConfig()) == [
        "model_type='bahdanau-pointer' (only seq2seq models export)"]
    assert not list(tmp_path.iterdir())


def test_the_step_graph_computes_the_models_output_layer(tmp_path, monkeypatch):
    """decoder_step.onnx's log_probs are the log-softmax of the head's own logits (``decoded_logits``: its output
    layer on the step, as generate() computes them), not of the vocabulary projection alone: with the softmax
    layer's logits shifted per token, which the projection does not see, the exported step still equals forward."""
    shift = torch.linspace(-2.0, 2.0, VOCAB)
    monkeypatch.setattr(SoftmaxOutput, "logits", lambda self, logits, *rest: logits + shift.to(logits.dtype))
    model = tiny_model("rnnsearch")
    runtime = OnnxSeq2Seq(export_onnx(model, tmp_path), threads=1)
    input_ids, attention_mask = padded_batch((6, 3), seed=2)
    encoded, state = runtime.encode(input_ids.numpy(), attention_mask.numpy())
    tokens = np.array([1, 7])
    feeds = {"tokens": tokens, **encoded, **state}
    feeds = {name: value for name, value in feeds.items() if name in runtime.step_inputs | {"tokens"}}
    (log_probs,) = runtime.decoder.run(["log_probs"], feeds | {"top_k": np.array(1)})
    with torch.no_grad():
        logits = model(input_ids=input_ids, attention_mask=attention_mask,
                       decoder_input_ids=torch.from_numpy(tokens)[:, None]).logits[:, -1]
    expected = torch.log_softmax(logits, dim=-1).numpy()
    unshifted = torch.log_softmax(logits - shift, dim=-1).numpy()  # the projection's alone: what the graph computed
    assert np.abs(expected - unshifted).max() > 0.5
    np.testing.assert_allclose(log_probs, expected, rtol=0, atol=1e-5)  # |log p| ≲ 6, float32 through two runtimes


def test_int8_graphs_decode(exported, tmp_path):
    folder = export_onnx(decisive_model("rnnsearch", seed=3), tmp_path)
    quantize_onnx(folder)
    operators = {node.op_type for node in onnx.load(folder / "decoder_step.int8.onnx").graph.node}
    assert {"DynamicQuantizeLinear", "MatMulInteger"} <= operators  # int8 matrix products
    loop, = (node for node in onnx.load(folder / "greedy.int8.onnx").graph.node if node.op_type == "Loop")
    assert "MatMulInteger" in {node.op_type for node in loop.attribute[0].g.node}  # the loop body is quantised too
    runtime = OnnxSeq2Seq(folder, quantized=True, threads=1)
    input_ids, attention_mask = padded_batch((6, 3), seed=2)
    for num_beams in (1, 3):
        output = runtime.generate(input_ids.numpy(), attention_mask.numpy(), num_beams=num_beams,
                                  max_new_tokens=MAX_NEW)
        assert output.sequences.shape[0] == 2 and np.isfinite(output.scores).all()
        assert ((output.sequences >= 0) & (output.sequences < runtime.manifest["vocab_size"])).all()


def test_several_eos_ids_end_greedy_and_beam_search_as_in_generate(tmp_path):
    """With eos_token_id [2, 7] in the generation config, either id ends a row (the greedy loop's stop test and the
    beam search's candidates), and neither may come before min_new_tokens."""
    model = decisive_model("rnnsearch", seed=3, eos_bias=1.0)
    with torch.no_grad():
        model.lm_head.bias[7] += 1.5
    model.generation_config.eos_token_id = [EOS, 7]
    runtime = OnnxSeq2Seq(export_onnx(model, tmp_path), threads=1)
    assert runtime.manifest["eos_token_id"] == [EOS, 7]
    input_ids, attention_mask = padded_batch((9, 4, 2, 7), seed=5)
    for options in (dict(num_beams=1), dict(num_beams=1, min_new_tokens=3), dict(num_beams=3),
                    dict(num_beams=3, min_new_tokens=3)):
        expected = generated(model, input_ids, attention_mask, **options)
        output = runtime.generate(input_ids.numpy(), attention_mask.numpy(), max_new_tokens=MAX_NEW, **options)
        np.testing.assert_array_equal(output.sequences, expected.sequences.numpy())
        assert np.isin(output.sequences, [EOS, 7]).any()  # the test means something: rows do end


def test_without_onnxsim_the_traced_graphs_are_kept_and_decode_alike(tmp_path, monkeypatch):
    pytest.importorskip("onnxsim")
    model = decisive_model("luong-general", seed=3)
    simplified = export_onnx(model, tmp_path / "simplified")
    monkeypatch.setitem(sys.modules, "onnxsim", None)  # `import onnxsim` raises ImportError
    traced = export_onnx(model, tmp_path / "traced")
    nodes = {folder: len(onnx.load(folder / "decoder_step.onnx").graph.node) for folder in (simplified, traced)}
    assert nodes[simplified] <= nodes[traced]  # torch's exporter folds most of the shape arithmetic itself
    assert [json.loads((folder / "onnx_config.json").read_text())["simplified"] for folder in (simplified, traced)] == [
        True, False]
    input_ids, attention_mask = padded_batch((9, 4, 2, 7), seed=5)
    expected = generated(model, input_ids, attention_mask, num_beams=3)
    for folder in (simplified, traced):
        output = OnnxSeq2Seq(folder, threads=1).generate(input_ids.numpy(), attention_mask.numpy(), num_beams=3,
                                                         max_new_tokens=MAX_NEW)
        np.testing.assert_array_equal(output.sequences, expected.sequences.numpy())


def test_the_exported_folder_decodes_without_torch(exported, tmp_path):
    model = decisive_model("luong-general", seed=3)
    folder = export_onnx(model, tmp_path / "export")
    input_ids, attention_mask = padded_batch((6, 3), seed=4)
    expected = generated(model, input_ids, attention_mask, num_beams=3).sequences.tolist()
    # sys.path: an export is loaded as its README says, the folder on sys.path and `from runtime import OnnxSeq2Seq`
    script = (
        "import json, sys; sys.modules['torch'] = None; sys.path.insert(0, sys.argv[1]);"
        "from runtime import OnnxSeq2Seq;"
        f"out = OnnxSeq2Seq(sys.argv[1]).generate({input_ids.tolist()}, {attention_mask.tolist()}, num_beams=3,"
        f" max_new_tokens={MAX_NEW});"
        "print(json.dumps(out.sequences.tolist())); assert 'torch' not in [m for m in sys.modules if sys.modules[m]]"
    )
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", script, str(folder)], capture_output=True, text=True, env=env,
                          cwd=tmp_path, check=True)
    assert json.loads(done.stdout) == expected


def test_bad_input_is_a_value_error_naming_it(exported):
    _, runtime = exported("rnnsearch")
    with pytest.raises(ValueError, match="`input_ids` must be in \\[0, 40\\)"):
        runtime.generate(np.array([[5, 40]]))
    with pytest.raises(ValueError, match="`attention_mask` must be right padding"):
        runtime.generate(np.array([[5, 6]]), np.array([[0, 1]]))
    with pytest.raises(ValueError, match="`num_return_sequences` \\(3\\) must be ≤ `num_beams` \\(2\\)"):
        runtime.generate(np.array([[5, 6]]), num_beams=2, num_return_sequences=3)
    with pytest.raises(ValueError, match="`num_beams` must be an integer ≥ 1, got 0"):
        runtime.generate(np.array([[5, 6]]), num_beams=0)
    with pytest.raises(ValueError, match="`max_new_tokens` must be an integer ≥ 1, got 0"):
        runtime.generate(np.array([[5, 6]]), max_new_tokens=0)
    with pytest.raises(ValueError, match="batch ≥ 1 and source_length ≥ 1, got shape \\[0, 3\\]"):
        runtime.generate(np.zeros((0, 3), dtype=np.int64))
    with pytest.raises(ValueError, match="no onnx_config.json"):
        OnnxSeq2Seq(".")


def test_a_folder_of_another_export_format_asks_for_a_new_export(exported, tmp_path):
    folder = export_onnx(tiny_model("rnnsearch"), tmp_path)
    manifest = json.loads((folder / "onnx_config.json").read_text())
    (folder / "onnx_config.json").write_text(json.dumps(manifest | {"format": "hf_bahdanau-onnx/1"}))
    with pytest.raises(ValueError, match="holds format 'hf_bahdanau-onnx/1'; this runtime reads "
                                         "'hf_bahdanau-onnx/2': export the model again"):
        OnnxSeq2Seq(folder)


def test_command_line_exports_and_decodes_like_pytorch(tmp_path, capsys):
    from hf_bahdanau.cli import main as translate_main
    from training.common.tokenization import train_tokenizer

    texts = ["le 3 mars 2015", "3/14/15", "2015-03-03", "14. Mai 1985"]
    tokenizer = train_tokenizer(texts, kind="char")
    model = decisive_model("rnnsearch", seed=1, vocab_size=len(tokenizer))
    model.save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    export_main([str(tmp_path / "model"), str(tmp_path / "onnx"), "--int8"])
    capsys.readouterr()
    for backend in ("pytorch", "onnxruntime"):
        folder = tmp_path / ("model" if backend == "pytorch" else "onnx")
        translate_main([str(folder), "--backend", backend, *texts[:2], "--num_beams", "3", "--max_new_tokens", "6"])
    pytorch_lines, onnx_lines = np.array_split(capsys.readouterr().out.splitlines(), 2)
    assert list(pytorch_lines) == list(onnx_lines) and len(onnx_lines) == 2
    assert (tmp_path / "onnx" / "decoder_step.int8.onnx").is_file()
    # --int8 decodes the int8 graphs, as OnnxSeq2Seq(quantized=True) does
    translate_main([str(tmp_path / "onnx"), "--backend", "onnxruntime", "--int8", *texts[:2], "--num_beams", "3",
                    "--max_new_tokens", "6"])
    int8 = OnnxSeq2Seq(tmp_path / "onnx", quantized=True).translate(texts[:2], num_beams=3, max_new_tokens=6)
    assert capsys.readouterr().out.splitlines() == [result.translation for result in int8]
    card = (tmp_path / "onnx" / "README.md").read_text()
    assert card.startswith("# model (ONNX)") and "## ONNX Runtime" in card and "attention_step, coverage" in card


def test_the_exported_card_keeps_the_source_card(tmp_path):
    from training.common.tokenization import train_tokenizer

    tokenizer = train_tokenizer(["3/14/15", "2015-03-14"], kind="char")
    tiny_model("rnnsearch", vocab_size=len(tokenizer)).save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    (tmp_path / "model" / "README.md").write_text("---\nlicense: apache-2.0\n---\n# dates\n\nThe results.\n")
    export_main([str(tmp_path / "model"), str(tmp_path / "onnx")])
    card = (tmp_path / "onnx" / "README.md").read_text()
    assert card.startswith("---\nlicense: apache-2.0\n---\n# dates\n\nThe results.\n\n## ONNX Runtime\n")


@pytest.mark.parametrize("num_beams", [1, 3])
def test_translate_takes_the_export_as_a_model_and_the_runtime_translates_alike(tmp_path, num_beams):
    """decoding.translate runs unchanged on ``OnnxPipelineModel`` (generate(), config, generation_config) and gives
    the PyTorch model's results; the runtime's own translate() (no torch) gives the same; the runtime itself is not
    a model for translate(): a TypeError names what to call instead."""
    from hf_bahdanau.modeling.translation import translate
    from hf_bahdanau.onnx.pipeline import OnnxPipelineModel
    from training.common.tokenization import train_tokenizer

    texts = ["le 3 mars 2015", "3/14/15"]
    tokenizer = train_tokenizer(texts + ["2015-03-03"], kind="char")
    model = decisive_model("luong-general", seed=2, vocab_size=len(tokenizer), eos_bias=1.0)
    folder = export_onnx(model, tmp_path, tokenizer=tokenizer)
    runtime = OnnxSeq2Seq(folder)
    options = dict(num_beams=num_beams, max_new_tokens=6, output_alignments=True)
    expected = translate(model, tokenizer, texts, **options)
    on_model = translate(OnnxPipelineModel.from_pretrained(folder), tokenizer, texts, **options)
    on_runtime = runtime.translate(texts, **options)
    assert any(len(result.target_tokens) < 6 for result in expected)  # an EOS before the limit: lengths are checked
    for result, runtime_result, reference in zip(on_model, on_runtime, expected):
        for candidate in (result, runtime_result):
            assert (candidate.translation, candidate.source_tokens, candidate.target_tokens) == (
                reference.translation, reference.source_tokens, reference.target_tokens)
            torch.testing.assert_close(torch.as_tensor(candidate.alignment), reference.alignment, rtol=0, atol=1e-5)
    with pytest.raises(TypeError, match=r"OnnxSeq2Seq has no config, generation_config, eval, device\. .*its own "
                                        r"translate\(texts, \.\.\.\), .*OnnxPipelineModel\(runtime\)"):
        translate(runtime, None, texts)
    with pytest.raises(ValueError, match="wrap a single text in a list"):
        runtime.translate("3/14/15")  # not decoded character by character


def onnx_code(source: str) -> list[str]:
    """The tokens of Python ``source`` that tie it to ONNX in code: names containing "onnx" (an import of an onnx
    module, a class of one) or ``backend``, and the string literals "backend" / "onnxruntime" of a switch on the
    runtime. Comments, docstrings and messages that mention ONNX are prose, not a branch."""
    found = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.NAME and ("onnx" in token.string.lower() or token.string == "backend"):
            found.append(f"line {token.start[0]}: {token.line.strip()}")
        elif token.type == tokenize.STRING and token.string.strip("'\"").lower() in ("backend", "onnxruntime"):
            found.append(f"line {token.start[0]}: {token.line.strip()}")
    return found


def test_the_shipped_model_code_has_no_onnx_branch():
    """hf_bahdanau/modeling/ (what a saved folder carries) never imports or recognises the ONNX side: an ONNX model
    presents the interface the shipped code uses (generate(), config, generation_config) instead."""
    removed = ('if getattr(model, "backend", None) == "onnxruntime":  # OnnxSeq2Seq\n'
               "    from ..onnx.runtime import OnnxSeq2Seq\n")
    assert onnx_code(removed) == ['line 1: if getattr(model, "backend", None) == "onnxruntime":  # OnnxSeq2Seq'] * 2 + [
        "line 2: from ..onnx.runtime import OnnxSeq2Seq"] * 2
    assert onnx_code('"""Exported with ONNX."""\nx = 1  # onnx\nraise TypeError("use OnnxPipelineModel")\n') == []
    shipped = sorted((Path(__file__).parents[1] / "hf_bahdanau" / "modeling").glob("*.py"))
    assert len(shipped) > 20
    found = {path.name: onnx_code(path.read_text(encoding="utf-8")) for path in shipped}
    assert {name: lines for name, lines in found.items() if lines} == {}


def test_unreliable_inputs_are_decoded_with_the_same_warning_as_pytorch(tmp_path, caplog):
    import logging

    from training.common.tokenization import train_tokenizer

    tokenizer = train_tokenizer(["3/14/15", "2015-03-14"], kind="char")
    model = decisive_model("rnnsearch", vocab_size=len(tokenizer), max_training_source_length=8)
    runtime = OnnxSeq2Seq(export_onnx(model, tmp_path, tokenizer=tokenizer))
    caplog.clear()  # torch.export's own debug records of the export
    with caplog.at_level(logging.WARNING, logger="hf_bahdanau.modeling.source_warnings"):
        runtime.translate(["3/14/15", "ß3/14", "3/14/153/14/15"], max_new_tokens=4)
    assert [record.getMessage() for record in caplog.records] == [
        "'ß3/14': 1 of its 6 tokens are unknown to the tokenizer (<unk>); the output is unreliable.",
        "'3/14/153/14/15': 15 tokens, longer than every source seen in training (at most 8 tokens); the output is "
        "unreliable.",
    ]


def test_the_pipeline_on_onnx_runtime_returns_the_pytorch_pipelines_records(tmp_path):
    from hf_bahdanau import BahdanauTranslationPipeline, onnx_translation_pipeline
    from training.common.tokenization import train_tokenizer

    texts = ["le 3 mars 2015", "3/14/15", "14 March"]
    tokenizer = train_tokenizer(texts + ["2015-03-03"], kind="char")
    model = decisive_model("rnnsearch", seed=2, vocab_size=len(tokenizer), eos_bias=1.0)
    folder = export_onnx(model, tmp_path, tokenizer=tokenizer)
    on_torch = BahdanauTranslationPipeline(model=model, tokenizer=tokenizer)
    on_onnx = onnx_translation_pipeline(folder, threads=1)
    for options in (dict(max_new_tokens=6), dict(num_beams=3, max_new_tokens=6, num_return_sequences=2),
                    dict(num_beams=2, max_length=5, min_new_tokens=2, length_penalty=0.5)):
        expected = on_torch(texts, return_alignments=True, batch_size=2, **options)
        records = on_onnx(texts, return_alignments=True, batch_size=2, **options)
        flat = [record for per_text in records for record in (per_text if isinstance(per_text, list) else [per_text])]
        flat_expected = [record for per_text in expected
                         for record in (per_text if isinstance(per_text, list) else [per_text])]
        assert len(flat) == len(flat_expected) == len(texts) * options.get("num_return_sequences", 1)
        for record, reference in zip(flat, flat_expected):
            assert record["translation_text"] == reference["translation_text"]
            alignment, reference_alignment = record["alignment"], reference["alignment"]
            assert (alignment["source_tokens"], alignment["target_tokens"]) == (
                reference_alignment["source_tokens"], reference_alignment["target_tokens"])
            np.testing.assert_allclose(alignment["weights"], reference_alignment["weights"], rtol=0, atol=1e-5)
    quantized = export_onnx(model, tmp_path / "int8", tokenizer=tokenizer)
    quantize_onnx(quantized)
    assert isinstance(onnx_translation_pipeline(quantized, quantized=True)("3/14/15")[0]["translation_text"], str)


def test_the_onnx_pipeline_refuses_what_its_search_cannot_do(tmp_path):
    from hf_bahdanau import onnx_translation_pipeline
    from training.common.tokenization import train_tokenizer

    tokenizer = train_tokenizer(["3/14/15", "2015-03-14"], kind="char")
    folder = export_onnx(decisive_model("rnnsearch", vocab_size=len(tokenizer)), tmp_path, tokenizer=tokenizer)
    translator = onnx_translation_pipeline(folder)
    with pytest.raises(ValueError, match="does not take 'repetition_penalty'"):
        translator("3/14/15", repetition_penalty=1.2)
    with pytest.raises(ValueError, match="greedy or beam search only"):
        translator("3/14/15", do_sample=True)
    with pytest.raises(ValueError, match="`max_length` must be an integer ≥ 2 .*, got 1"):
        translator("3/14/15", max_length=1)
    with pytest.raises(ValueError, match="`device` must be the CPU"):
        onnx_translation_pipeline(folder, device="cuda:0")


def _axis_values():
    from hf_bahdanau.modeling.configuration_bahdanau import AXES

    return [(axis.field, value) for axis in AXES for value in axis.allowed]


@pytest.mark.parametrize("field, value", _axis_values(), ids=lambda item: str(item))
def test_every_value_of_every_axis_exports_and_decodes_like_generate(field, value, tmp_path):
    """Each registered cell, score, scope, mode, decoder style, context mode, bridge and output layer, on the first
    preset that accepts it: ONNX Runtime returns generate()'s tokens, greedy and with beam search."""
    for preset in ("rnnsearch", "luong-general", "rnnencdec", "sutskever"):
        try:
            model = decisive_model(preset, seed=3, eos_bias=1.0, **{field: value})
            break
        except ValueError:
            continue
    else:
        pytest.fail(f"no preset accepts {field}={value!r}")
    assert_onnx_decodes_like_generate(model, tmp_path)


def assert_onnx_decodes_like_generate(model, folder: Path) -> None:
    """ONNX Runtime, on the model's exported graphs, returns generate()'s tokens, greedy and with beam search, for a
    right-padded batch of four sources."""
    runtime = OnnxSeq2Seq(export_onnx(model, folder), threads=1)
    input_ids, attention_mask = padded_batch((9, 4, 2, 7), seed=5)
    for num_beams in (1, 3):
        expected = generated(model, input_ids, attention_mask, num_beams=num_beams)
        output = runtime.generate(input_ids.numpy(), attention_mask.numpy(), max_new_tokens=MAX_NEW,
                                  num_beams=num_beams)
        np.testing.assert_array_equal(output.sequences, expected.sequences.numpy())


@pytest.fixture(scope="module")
def saved_and_exported(tmp_path_factory):
    """(a saved rnnsearch folder with its tokenizer, its export by the command line in a subprocess)."""
    from training.common.tokenization import train_tokenizer

    folder = tmp_path_factory.mktemp("cli")
    tokenizer = train_tokenizer(["le 3 mars 2015", "3/14/15", "2015-03-03"], kind="char")
    model = decisive_model("rnnsearch", seed=1, vocab_size=len(tokenizer))
    model.generation_config.max_new_tokens = 6
    model.save_pretrained(folder / "model")
    tokenizer.save_pretrained(folder / "model")
    command = "import sys; from hf_bahdanau.cli import export_main; export_main(sys.argv[1:])"  # hf-bahdanau-export
    done = subprocess.run([sys.executable, "-c", command, str(folder / "model"), str(folder / "onnx")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and done.stdout.startswith(f"Exported to {folder / 'onnx'}"), done.stderr
    return folder / "model", folder / "onnx", done.stderr


def test_the_export_command_prints_no_progress_bar_and_no_known_exporter_warning(saved_and_exported):
    *_, stderr = saved_and_exported
    assert stderr == ""  # no progress bar, no warning of torch's exporter, no fallback to the TorchScript-based one


def test_the_export_runs_on_torchs_current_exporter_and_hides_only_its_known_harmless_warnings(tmp_path):
    """A GRU model exports through torch.export (``torch.onnx.export(dynamo=True)``): no legacy-exporter deprecation,
    no fallback; torch's own known warnings (``EXPECTED_WARNINGS``) are filtered; a warning of any other kind still
    shows."""
    model = tiny_model("rnnsearch")
    model.model.encoder.register_forward_hook(lambda *_: warnings.warn("a new warning", UserWarning))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        export_onnx(model, tmp_path)
    assert {str(warning.message) for warning in caught} == {"a new warning"}


@pytest.mark.parametrize("preset, overrides", [
    ("rnnencdec", {}), ("rnnsearch-monotonic", {}), ("rnnsearch+coverage+hard", {}), ("luong-local-p", {}),
    ("sutskever", {}), ("luong-general", {}), ("rnnsearch", {"rnn_type": "lstm"}), ("rnnsearch", {"rnn_type": "rnn"}),
    ("luong-location", {})],
    ids=lambda item: str(item or ""))
def test_every_scope_mode_and_cell_exports_through_torch_export(preset, overrides, tmp_path):
    """No fallback for these options: the monotonic scope and hard attention pick positions with a comparison
    against arange(S), not one_hot(·, S), which torch.export would fix to the example's S; each direction of each
    GRU or tanh-RNN encoder layer is one ONNX GRU or RNN operator, each LSTM layer one ONNX LSTM operator (both
    directions), not packed sequences, torch's tanh-RNN call unrolled (as torch.export traces it by default, for the
    example's length only) or an ONNX Loop of single steps;
    Luong's location score pads its max_source_positions scores by S before keeping the first S, which torch.export
    then needs no bound on S for (their tokens are checked against generate() in
    test_every_value_of_every_axis_exports_and_decodes_like_generate)."""
    model = tiny_model(preset, **overrides)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        export_onnx(model, tmp_path)
    assert [str(warning.message) for warning in caught] == []
    operators = [node.op_type for node in onnx.load(str(tmp_path / "encoder.onnx")).graph.node]
    recurrent = {"gru": "GRU", "lstm": "LSTM", "rnn": "RNN"}[model.config.rnn_type]
    per_layer = 1 if recurrent == "LSTM" or not model.config.bidirectional else 2
    assert "Loop" not in operators
    assert operators.count(recurrent) == model.config.encoder_layers * per_layer
    assert {"GRU", "LSTM", "RNN"} & set(operators) == {recurrent}


@pytest.mark.parametrize("preset, overrides", [("sutskever", {}), ("luong-general", {}), ("rnnsearch", {}),
                                               ("rnnsearch", {"rnn_type": "lstm"}), ("rnnsearch", {"rnn_type": "rnn"})],
                         ids=lambda item: str(item or ""))
def test_the_encoder_graph_returns_pytorchs_encoded_source_and_state_for_a_padded_batch(preset, overrides, tmp_path):
    """The encoder graph's annotations and initial decoder state (an LSTM's memory cell included, which its ONNX
    operator reads after the padded steps it holds) equal PyTorch's for rows of several lengths, longer than the
    traced example: float32 through two runtimes' kernels, values of size ≤ 1 over ≤ 4 layers of 16-wide sums."""
    import onnxruntime

    from hf_bahdanau.onnx.export import EncoderGraph, encoded_and_state_names

    model = tiny_model(preset, **overrides)
    export_onnx(model, tmp_path)
    input_ids, attention_mask = padded_batch((9, 4, 1, 7), seed=5)
    with torch.no_grad():
        expected = EncoderGraph(model)(input_ids, attention_mask)
    session = onnxruntime.InferenceSession(str(tmp_path / "encoder.onnx"), providers=["CPUExecutionProvider"])
    names = [output.name for output in session.get_outputs()]
    assert names == sum(encoded_and_state_names(model.config), [])
    outputs = session.run(None, {"input_ids": input_ids.numpy(), "attention_mask": attention_mask.numpy()})
    for name, output, value in zip(names, outputs, expected):
        np.testing.assert_allclose(output, value.numpy(), rtol=0, atol=1e-5, err_msg=name)


def test_an_exported_location_score_refuses_sources_longer_than_its_positions_as_generate_does(tmp_path):
    model = decisive_model("luong-location", seed=3, max_source_positions=8)
    runtime = OnnxSeq2Seq(export_onnx(model, tmp_path), threads=1)
    input_ids, attention_mask = padded_batch((8, 3, 5), seed=5)  # 8 positions: all scored
    for num_beams in (1, 3):
        expected = generated(model, input_ids, attention_mask, num_beams=num_beams)
        output = runtime.generate(input_ids.numpy(), attention_mask.numpy(), max_new_tokens=MAX_NEW,
                                  num_beams=num_beams)
        np.testing.assert_array_equal(output.sequences, expected.sequences.numpy())
    input_ids, attention_mask = padded_batch((9, 3), seed=5)
    with pytest.raises(ValueError, match=r"^location attention scores at most max_source_positions=8 source "
                                         r"positions, got a source of length 9$"):
        generated(model, input_ids, attention_mask)
    with pytest.raises(ValueError, match=r"^`input_ids` has 9 source positions; this model's attention scores at most "
                                         r"max_source_positions=8.$"):
        runtime.generate(input_ids.numpy(), attention_mask.numpy(), max_new_tokens=MAX_NEW)
    assert json.loads((tmp_path / "onnx_config.json").read_text())["max_source_length"] == 8
    other = json.loads(Path(export_onnx(decisive_model("rnnsearch", seed=3), tmp_path / "other"), "onnx_config.json")
                       .read_text())
    assert other["max_source_length"] is None


@pytest.mark.parametrize("sources, rnn_type", [(["word", "chars"], "gru"), (["word", "chars"], "lstm"),
                                              (["word", "pretrained"], "gru")], ids=str)
def test_meta_embedding_encoders_export_through_torch_export(sources, rnn_type, tmp_path):
    """While torch.export traces, the spelling BiRNN spells every position (it cannot find the distinct tokens, a
    number that depends on their values) and the value checks step aside, so nothing falls back to the
    TorchScript-based exporter any more (but on a torch without torch.export._patches, tested below); the graphs
    decode to generate()'s tokens."""
    chars = "chars" in sources
    model = decisive_model("rnnsearch", seed=3, meta_embedding_sources=sources, rnn_type=rnn_type,
                           **(dict(char_hidden_size=6, char_embedding_size=4) if chars
                              else dict(pretrained_embedding_size=5)))
    if chars:
        model.set_token_spellings([f"t{index}" * (index % 3 + 1) for index in range(model.config.vocab_size)])
    else:
        vectors = torch.randn(model.config.vocab_size, 5, generator=torch.Generator().manual_seed(0))
        model.set_pretrained_vectors(vectors)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        export_onnx(model, tmp_path / "export")
    assert [str(warning.message) for warning in caught] == []
    assert_onnx_decodes_like_generate(model, tmp_path / "decoded")


def test_on_a_torch_without_the_new_exporters_rnn_support_the_export_falls_back_and_says_why(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch.export._patches", None)  # as on an older torch: an ImportError
    model = decisive_model("rnnsearch", seed=3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        runtime = OnnxSeq2Seq(export_onnx(model, tmp_path), threads=1)
    assert [str(warning.message) for warning in caught] == [
        f"torch.export cannot trace {graph} of this model yet (ModuleNotFoundError: import of torch.export._patches "
        "halted; None in sys.modules); exported with torch's TorchScript-based exporter instead, which torch "
        "deprecates." for graph in ("encoder.onnx", "decoder_step.onnx")]
    input_ids, attention_mask = padded_batch((9, 4, 2, 7), seed=5)
    expected = generated(model, input_ids, attention_mask, num_beams=3)
    output = runtime.generate(input_ids.numpy(), attention_mask.numpy(), max_new_tokens=MAX_NEW, num_beams=3)
    np.testing.assert_array_equal(output.sequences, expected.sequences.numpy())


def test_the_value_checks_step_aside_only_while_torch_export_traces(monkeypatch):
    """Eager calls check token ids and masks (a traced graph cannot branch on values, so torch.export's trace skips
    those checks and takes the mask as right-padded, as the exported graphs read it)."""
    encoder = tiny_model("rnnsearch").model.encoder
    bad_ids, bad_mask = torch.tensor([[5, 40]]), torch.tensor([[1, 2]])
    with pytest.raises(ValueError, match=r"^`input_ids` must hold ids in \[0, 40\), got 40.$"):
        encoder(input_ids=bad_ids)
    with pytest.raises(ValueError, match=r"^`attention_mask` must hold 0 and 1 only \(or False and True\); row 0 is "
                                         r"\[1, 2\].$"):
        encoder(input_ids=torch.tensor([[5, 6]]), attention_mask=bad_mask)
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)  # compiling alone still checks
    with pytest.raises(ValueError, match="`input_ids` must hold ids in"):
        encoder(input_ids=bad_ids)
    monkeypatch.setattr(torch.compiler, "is_exporting", lambda: True)
    check_token_ids("input_ids", bad_ids, 40)
    layout = check_attention_mask(torch.tensor([[0, 1, 1]]), (1, 3), torch.device("cpu"))
    assert layout.starts is None and layout.padded and layout.lengths.tolist() == [2]


def test_the_export_command_explains_itself_in_its_help(capsys):
    with pytest.raises(SystemExit):
        export_main(["--help"])
    assert "Export a saved seq2seq model to ONNX: encoder.onnx, decoder_step.onnx and greedy.onnx" in " ".join(
        capsys.readouterr().out.split())


DAMAGES = {  # damage: (file, what to write into it, the error's words after the file's path)
    "truncated graph": ("decoder_step.onnx", lambda graph: graph[:300],
                        ": [ONNXRuntimeError] : 7 : INVALID_PROTOBUF : Load model from "),
    "empty graph": ("encoder.onnx", lambda graph: b"",
                    ": [ONNXRuntimeError] : 2 : INVALID_ARGUMENT : Load model from "),
    "broken JSON": ("onnx_config.json", lambda text: text.replace(b'"opset"', b"opset", 1),
                    " is not valid JSON (Expecting property name enclosed in double quotes at line 3, column 3)"),
    "not UTF-8": ("onnx_config.json", lambda text: b"\xff" + text, " is not UTF-8 text (invalid start byte at byte 0)"),
}


@pytest.mark.parametrize("damaged", DAMAGES)
def test_a_damaged_export_is_a_value_error_naming_the_file(saved_and_exported, tmp_path, damaged):
    _, exported_folder, _ = saved_and_exported
    folder = shutil.copytree(exported_folder, tmp_path / "onnx")
    name, change, words = DAMAGES[damaged]
    (folder / name).write_bytes(change((folder / name).read_bytes()))
    with pytest.raises(ValueError) as error:
        OnnxSeq2Seq(folder)
    assert str(error.value).startswith(f"{folder / name}" if name.endswith(".json") else
                                       f"ONNX Runtime cannot load {folder / name}")
    assert words in str(error.value) and str(error.value).endswith("Export the model again with hf-bahdanau-export."
                                                                   if name.endswith(".onnx") else
                                                                   "export the model again with hf-bahdanau-export.")


@pytest.mark.parametrize("damaged", ["truncated graph", "broken JSON"])
def test_the_command_line_says_what_is_damaged_in_one_line(saved_and_exported, tmp_path, damaged):
    _, exported_folder, _ = saved_and_exported
    folder = shutil.copytree(exported_folder, tmp_path / "onnx")
    name, change, words = DAMAGES[damaged]
    (folder / name).write_bytes(change((folder / name).read_bytes()))
    done = subprocess.run([sys.executable, "-m", "hf_bahdanau.cli", str(folder), "--backend", "onnxruntime",
                           "3/14/15"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and not done.stdout
    (line,) = done.stderr.splitlines()
    assert line.startswith("hf-bahdanau-translate: error: ") and str(folder / name) in line and words in line


def test_quantisation_prints_nothing(saved_and_exported, tmp_path):
    """onnxruntime's advice to pre-process before quantising (for static quantisation) is not printed per graph."""
    folder = shutil.copytree(saved_and_exported[1], tmp_path / "onnx")
    command = "import sys; from hf_bahdanau.onnx.export import quantize_onnx; quantize_onnx(sys.argv[1])"
    done = subprocess.run([sys.executable, "-c", command, str(folder)], capture_output=True, text=True, timeout=300)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert sorted(path.name for path in folder.glob("*.int8.onnx")) == [
        "decoder_step.int8.onnx", "encoder.int8.onnx", "greedy.int8.onnx"]


def test_int8_without_its_graphs_or_without_the_onnx_backend_is_one_error_line(saved_and_exported, capsys):
    from hf_bahdanau.cli import main as translate_main

    model_folder, folder, _ = saved_and_exported  # exported without --int8
    with pytest.raises(SystemExit) as exit:
        translate_main([str(folder), "--backend", "onnxruntime", "--int8", "3/14/15"])
    assert exit.value.code == (f"hf-bahdanau-translate: error: `folder` {str(folder)!r} has no encoder.int8.onnx "
                               "(write the int8 graphs with quantize_onnx, or hf-bahdanau-export --int8).")
    with pytest.raises(SystemExit) as exit:
        translate_main([str(model_folder), "--int8", "3/14/15"])
    assert exit.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "hf-bahdanau-translate: error: --int8 selects the int8 graphs of an ONNX export: add --backend onnxruntime "
        "(PyTorch models decode in their own precision).")


def test_an_export_without_its_tokenizer_is_one_error_line_of_the_command(tmp_path):
    from hf_bahdanau.cli import main as translate_main

    folder = export_onnx(decisive_model("rnnsearch"), tmp_path)  # token ids only: no tokenizer
    with pytest.raises(SystemExit) as exit:
        translate_main([str(folder), "--backend", "onnxruntime", "3/14/15"])
    assert exit.value.code.startswith(f"hf-bahdanau-translate: error: cannot load the tokenizer of {str(folder)!r} "
                                      "(export the model with its tokenizer): ")
    assert "\n" not in exit.value.code


def test_an_export_folder_needs_the_onnxruntime_backend(saved_and_exported, capsys, tmp_path):
    from hf_bahdanau.cli import main as translate_main
    from hf_bahdanau.explorer.page import main as explore_main

    model_folder, folder, _ = saved_and_exported
    with pytest.raises(SystemExit) as exit:
        translate_main([str(folder), "3/14/15"])
    assert exit.value.code == 2 and capsys.readouterr().err.splitlines()[-1] == (
        f"hf-bahdanau-translate: error: {str(folder)!r} is a folder written by hf-bahdanau-export: add --backend "
        "onnxruntime to decode it with ONNX Runtime.")
    (tmp_path / "in.txt").write_text("3/14/15\n")
    for prog, main, arguments in (
            ("hf-bahdanau-export", export_main, [str(tmp_path / "again")]),
            ("hf-bahdanau-explore", explore_main, ["--input", str(tmp_path / "in.txt"), "--output",
                                                   str(tmp_path / "page.html")])):
        with pytest.raises(SystemExit) as exit:
            main([str(folder), *arguments])
        assert exit.value.code == (f"{prog}: error: {str(folder)!r} is an ONNX export (it has onnx_config.json): "
                                   f"{prog} reads the PyTorch model folder it was exported from.")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["in.txt"]
    translate_main([str(folder), "--backend", "onnxruntime", "3/14/15"])  # with the flag, it decodes
    translate_main([str(model_folder), "3/14/15"])
    onnx_line, pytorch_line = capsys.readouterr().out.splitlines()
    assert onnx_line == pytorch_line
