"""The custom ``translation`` pipeline: saved as ``custom_pipelines`` with every seq2seq model; batched, beam and
greedy outputs equal ``generate()``'s; alignments equal ``alignments_from_generate``'s; it loads from a saved folder
in a fresh process where hf_bahdanau cannot be imported."""

import copy
import json
import logging

import pytest
import torch
from torch.testing import assert_close
from transformers import pipeline

from child_process import run_child
from conftest import FLOAT64_PATHS_RTOL, softmax_sum_tolerance, tiny_config
from hf_bahdanau import BahdanauForConditionalGeneration, BahdanauTranslationPipeline
from hf_bahdanau.modeling.configuration_bahdanau import CUSTOM_PIPELINES
from hf_bahdanau.modeling.alignments import alignments_from_generate
from training.common.tokenization import train_tokenizer

pytestmark = pytest.mark.usefixtures("one_thread")

TEXTS = ["3 March 2015", "le 14 juillet", "1.2.99", "Tuesday, 3 March 2015"]
MAX_NEW = 7
# The pipeline returns alignments in float32 (its buffer's dtype): float64 weights (paths agree to FLOAT64_PATHS_RTOL),
# each rounded to within ε/2 of itself (weights ≤ 1), so within ALIGNMENT_TOLERANCE of the float64 reference.
ALIGNMENT_TOLERANCE = torch.finfo(torch.float32).eps / 2 + FLOAT64_PATHS_RTOL


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A tiny rnnsearch with decisive N(0, 1) weights and a character tokenizer, saved to a folder."""
    folder = tmp_path_factory.mktemp("pipeline") / "model"
    tokenizer = train_tokenizer(TEXTS + ["2015-03-03"], kind="char")
    model = BahdanauForConditionalGeneration(tiny_config("rnnsearch", vocab_size=len(tokenizer))).eval()
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator))
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder, model, tokenizer


def generate_one(model, tokenizer, text: str, **kwargs):
    inputs = tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        return inputs, model.generate(**inputs, max_new_tokens=MAX_NEW, output_attentions=True,
                                      return_dict_in_generate=True, **kwargs)


def expected(model, tokenizer, num_beams: int) -> list[dict]:
    """Each text alone through generate(): its decoded output and alignment [T, real source tokens]."""
    records = []
    for text in TEXTS:
        inputs, out = generate_one(model, tokenizer, text, num_beams=num_beams)
        weights = alignments_from_generate(out, index=0, eos_token_id=tokenizer.eos_token_id)
        records.append(dict(
            text=tokenizer.decode(out.sequences[0], skip_special_tokens=True), weights=weights,
            source=tokenizer.convert_ids_to_tokens(inputs["input_ids"][0].tolist()),
            target=tokenizer.convert_ids_to_tokens(out.sequences[0, 1:1 + len(weights)].tolist())))
    return records


def test_saved_config_names_the_pipeline(saved):
    folder, _, _ = saved
    config = json.loads((folder / "config.json").read_text())
    assert config["custom_pipelines"] == {"translation": {
        "impl": "pipeline_bahdanau.BahdanauTranslationPipeline", "pt": ["AutoModelForSeq2SeqLM"], "type": "text"}}
    assert config["custom_pipelines"] == CUSTOM_PIPELINES
    assert (folder / "pipeline_bahdanau.py").is_file() and (folder / "alignments.py").is_file()


@pytest.mark.parametrize("num_beams", [1, 3], ids=["greedy", "beam"])
@pytest.mark.parametrize("batch_size", [1, 3])
def test_batched_outputs_equal_generate(saved, num_beams, batch_size):
    folder, model, tokenizer = saved
    translator = pipeline(model=str(folder), trust_remote_code=True)
    assert type(translator).__name__ == "BahdanauTranslationPipeline"
    records = translator(TEXTS, num_beams=num_beams, max_new_tokens=MAX_NEW, batch_size=batch_size)
    assert [record["translation_text"] for record in records] == [
        item["text"] for item in expected(model, tokenizer, num_beams)]
    assert all(set(record) == {"translation_text"} for record in records)


@pytest.mark.parametrize("num_beams", [1, 3], ids=["greedy", "beam"])
def test_alignments_equal_alignments_from_generate(saved, num_beams):
    """In float64 (the saved weights loaded as float64): a padded batch and each text alone agree to rounding."""
    folder, model, tokenizer = saved
    translator = pipeline(model=str(folder), pipeline_class=BahdanauTranslationPipeline,  # package installed
                          dtype=torch.float64)
    records = translator(TEXTS, num_beams=num_beams, max_new_tokens=MAX_NEW, batch_size=4, return_alignments=True)
    for record, reference in zip(records, expected(copy.deepcopy(model).double(), tokenizer, num_beams)):
        alignment = record["alignment"]
        assert alignment["source_tokens"] == reference["source"]  # padding of the batch removed
        assert alignment["target_tokens"] == reference["target"]
        weights = torch.tensor(alignment["weights"], dtype=torch.float64)
        assert weights.shape == (len(reference["target"]), len(reference["source"]))
        assert_close(weights.sum(-1), torch.ones(len(weights), dtype=torch.float64), rtol=0,  # + rounding to float32
                     atol=softmax_sum_tolerance(len(reference["source"]), torch.float64) + ALIGNMENT_TOLERANCE)
        assert_close(weights, reference["weights"], atol=ALIGNMENT_TOLERANCE, rtol=0)


def test_single_text_and_several_return_sequences(saved):
    folder, model, tokenizer = saved
    translator = pipeline("translation", model=str(folder), trust_remote_code=True, max_new_tokens=MAX_NEW)
    single = translator(TEXTS[0])
    assert single == [{"translation_text": expected(model, tokenizer, 1)[0]["text"]}]
    several = translator(TEXTS[:2], num_beams=3, num_return_sequences=2, batch_size=2)
    assert [len(records) for records in several] == [2, 2]
    for text, records in zip(TEXTS[:2], several):
        inputs = tokenizer(text, return_tensors="pt")
        with torch.no_grad():
            sequences = model.generate(**inputs, num_beams=3, num_return_sequences=2, max_new_tokens=MAX_NEW)
        assert [record["translation_text"] for record in records] == tokenizer.batch_decode(
            sequences, skip_special_tokens=True)


def test_bad_inputs(saved):
    folder, _, _ = saved
    translator = pipeline(model=str(folder), trust_remote_code=True)
    with pytest.raises(TypeError, match="`inputs` must be a string or a list of strings"):
        translator(42)
    with pytest.raises(TypeError, match=r"`inputs\[1\]` must be a string"):
        translator(["3 March", 5])
    for blank, name in (("", r"inputs\[0\]"), (["3 March", "  "], r"inputs\[1\]")):
        with pytest.raises(ValueError, match=rf"`{name}` is (empty|blank)"):
            translator(blank)
    with pytest.raises(ValueError, match="trust_remote_code"):
        pipeline("translation", model=str(folder), trust_remote_code=False)


def test_unknown_and_overlong_inputs_are_decoded_with_a_warning(saved, caplog):
    folder, model, tokenizer = saved
    translator = pipeline(model=str(folder), trust_remote_code=True)
    translator.model.config.max_training_source_length = 8
    with caplog.at_level(logging.WARNING):
        records = translator(["1985年5月14日", "3 March 2015, a Tuesday"], max_new_tokens=2)
    assert len(records) == 2
    assert "'1985年5月14日': 4 of its 11 tokens are unknown to the tokenizer (<unk>)" in caplog.text
    assert "'3 March 2015, a Tuesday': 24 tokens, longer than every source seen in training (at most 8" in caplog.text


FRESH_PROCESS = """
    import json
    import sys

    import torch
    from transformers import pipeline

    torch.set_num_threads(1)
    translator = pipeline(model=sys.argv[1], trust_remote_code=True, dtype=torch.float64)
    records = translator(json.loads(sys.argv[2]), num_beams=3, max_new_tokens=%d, batch_size=2, return_alignments=True)
    modules = sorted(name for name in sys.modules if name.startswith("hf_bahdanau"))
    print(json.dumps(dict(records=records, cls=type(translator).__module__, modules=modules)))
""" % MAX_NEW


def test_fresh_process_without_the_package(saved, tmp_path):
    """The child loads the saved weights as float64 and decodes a padded batch of 2; each text alone here, in float64
    too: the two agree to rounding whatever kernels either process picks."""
    folder, model, tokenizer = saved
    child = run_child(FRESH_PROCESS, tmp_path, str(folder), json.dumps(TEXTS), isolated=True, hide_package=True)
    assert child["modules"] == [] and child["cls"].startswith("transformers_modules.")
    for record, reference in zip(child["records"], expected(copy.deepcopy(model).double(), tokenizer, 3)):
        assert record["translation_text"] == reference["text"]
        assert record["alignment"]["target_tokens"] == reference["target"]
        assert_close(torch.tensor(record["alignment"]["weights"], dtype=torch.float64), reference["weights"],
                     atol=ALIGNMENT_TOLERANCE, rtol=0)
