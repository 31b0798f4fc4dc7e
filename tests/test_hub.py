"""Saving, loading and sharing: save_pretrained -> from_pretrained (direct and Auto classes), remote code in a
process where hf_bahdanau cannot be imported, the offline Hub cache layout, resize_token_embeddings and
``return_dict=False``.

Weights are redrawn from N(0, 1) (``shared_model``) so that logits are decisive: generated tokens compared
across processes then do not hinge on near-ties of a near-uniform output distribution. Outputs of a saved model and of
the loaded one are compared in float64 (both sides converted, or loaded with ``dtype=torch.float64``): loaded weights
lie at other memory alignments and another process may pick other kernels, which round float32 apart.
"""

import copy
import json
from pathlib import Path

import pytest
import torch
from torch.testing import assert_close
from transformers import AutoConfig, AutoModel, AutoModelForSeq2SeqLM
from transformers.dynamic_module_utils import get_relative_import_files

import hf_bahdanau
from child_process import run_child
from conftest import (
    BOS, EOS, VOCAB, assert_float64_close, cross_entropy_tolerance, padded_batch, random_labels,
    tiny_encoder_config, tiny_model,
)
from hf_bahdanau import (
    BahdanauConfig, BahdanauForConditionalGeneration, BahdanauForPointerNetwork, BahdanauModel, BahdanauPointerConfig,
)
from hf_bahdanau.modeling.configuration_bahdanau import AUTO_MAP
from test_generation import float32_search_error

MODELING_DIR = Path(hf_bahdanau.__file__).parent / "modeling"  # the shipped model code


def carried_code(folder: Path) -> set[str]:
    """The modules transformers copies into a saved folder, computed as it computes them: the module of every class in
    the config's ``auto_map`` and ``custom_pipelines``, and every module those import relatively
    (``get_relative_import_files``)."""
    config = json.loads((folder / "config.json").read_text())
    references = [*config["auto_map"].values(), *(task["impl"] for task in config.get("custom_pipelines", {}).values())]
    modules = {MODELING_DIR / f"{reference.split('.')[0]}.py" for reference in references}
    return {Path(path).name for module in modules for path in (module, *get_relative_import_files(module))}


LENGTHS = (7, 5, 2)
TARGET_LENGTH = 5
MAX_NEW = 6
# (preset, tie_word_embeddings): every decoder style, GRU and LSTM, tied and untied output embeddings
CASES = [("rnnsearch", False), ("rnnsearch", True), ("luong-general", True), ("sutskever", False),
         ("rnnencdec", True), ("luong-local-p", False), ("rnnsearch-monotonic", False),
         ("rnnsearch+coverage+hard", False), ("rnnsearch+copy", False)]
CASE_IDS = [f"{preset}{'-tied' if tied else ''}" for preset, tied in CASES]


pytestmark = pytest.mark.usefixtures("one_thread")


def shared_model(preset: str, tie: bool = False, seed: int = 0) -> BahdanauForConditionalGeneration:
    model = tiny_model(preset, seed=seed, tie_word_embeddings=tie)
    generator = torch.Generator().manual_seed(seed + 1000)
    with torch.no_grad():
        for parameter in model.parameters():  # a tied matrix is listed once
            parameter.copy_(torch.randn(parameter.shape, generator=generator))
    return model


def inputs(vocab_size: int = VOCAB) -> dict[str, torch.Tensor]:
    input_ids, attention_mask = padded_batch(LENGTHS)
    decoder_input_ids = torch.cat(
        [torch.full((len(LENGTHS), 1), BOS), random_labels(len(LENGTHS), TARGET_LENGTH - 1, seed=5)], dim=1
    )
    return dict(input_ids=input_ids.clamp(max=vocab_size - 1), attention_mask=attention_mask,
                decoder_input_ids=decoder_input_ids.clamp(max=vocab_size - 1))


def in_float64(model):
    """A float64 copy of a float32 model: the same weights, exactly."""
    return copy.deepcopy(model).double()


def outputs(model, batch) -> dict:
    """What a loaded model must reproduce: logits, encoder annotations, greedy and beam tokens and scores, of a float64
    model; beam_score_error: how far the search's float32 scores may be from exact (``float32_search_error``)."""
    assert model.dtype == torch.float64
    source = dict(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
    with torch.no_grad():
        forward = model(**batch)
        greedy = model.generate(**source, max_new_tokens=MAX_NEW)
        beams = model.generate(**source, max_new_tokens=MAX_NEW, num_beams=3, num_return_sequences=3,
                               output_scores=True, return_dict_in_generate=True)
    return dict(logits=forward.logits, annotations=forward.encoder_last_hidden_state, greedy=greedy.tolist(),
                beams=beams.sequences.tolist(), beam_scores=beams.sequences_scores,
                beam_score_error=float32_search_error(model, batch["input_ids"], batch["attention_mask"],
                                                      beams.sequences, 1.0))


def assert_same_outputs(actual: dict, expected: dict) -> None:
    """The same tokens; logits and annotations to float64 rounding; beam scores each within the search's float32 error
    of exact (twice that of each other)."""
    assert actual["greedy"] == expected["greedy"]
    assert actual["beams"] == expected["beams"]
    for key in ("logits", "annotations"):
        assert_float64_close(torch.as_tensor(actual[key], dtype=torch.float64), expected[key])
    scores = torch.as_tensor(actual["beam_scores"], dtype=torch.float32)
    assert ((scores - expected["beam_scores"]).abs() <= 2 * expected["beam_score_error"]).all()


# 1. save_pretrained -> from_pretrained -----------------------------------------------------------------


def test_saved_folders_carry_exactly_the_modeling_subpackage(tmp_path):
    """hf_bahdanau/modeling/ is the code saved folders carry, no more and no less: a seq2seq folder (every Auto class
    and the translation pipeline), a tagger's (the classification pipelines), a pointer network's (its pipeline), a
    memory network's (its Auto classes and pipeline), an
    image-to-text folder (its Auto classes, pipeline and image processor), a visual question answerer's and a text-pair
    co-attention classifier's (their Auto classes and pipelines) together carry every module in it, and nothing
    else."""
    seq2seq, tagger, pointer, memory, image, vqa, text_pair = (tmp_path / name for name in (
        "seq2seq", "tagger", "pointer", "memory", "image", "vqa", "text_pair"))
    tiny_model("rnnsearch").save_pretrained(seq2seq)
    hf_bahdanau.BahdanauForTokenClassification(tiny_encoder_config()).save_pretrained(tagger)
    BahdanauForPointerNetwork(BahdanauPointerConfig(input_feature_size=2, hidden_size=8, embedding_size=8,
                                                    attention_size=8)).save_pretrained(pointer)
    hf_bahdanau.BahdanauMemoryNetworkForSequenceClassification(
        hf_bahdanau.BahdanauMemoryNetworkConfig(vocab_size=5)).save_pretrained(memory)
    hf_bahdanau.BahdanauForImageToText(hf_bahdanau.BahdanauImageToTextConfig(
        vocab_size=8, embedding_size=8, hidden_size=8, cnn_channels=[4], cnn_pool_sizes=[[2, 2]])).save_pretrained(image)
    hf_bahdanau.BahdanauImageProcessor().save_pretrained(image)
    hf_bahdanau.BahdanauForVisualQuestionAnswering(hf_bahdanau.BahdanauVisualQuestionAnsweringConfig(
        vocab_size=8, hidden_size=8, attention_size=8, answer_hidden_size=8, cnn_channels=[4],
        cnn_pool_sizes=[[2, 2]])).save_pretrained(vqa)
    hf_bahdanau.BahdanauForTextPairClassification(hf_bahdanau.BahdanauTextCoAttentionConfig(
        vocab_size=8, hidden_size=8, attention_size=8, answer_hidden_size=8)).save_pretrained(text_pair)
    folders = (seq2seq, tagger, pointer, memory, image, vqa, text_pair)
    saved = {path.name for folder in folders for path in folder.glob("*.py")}
    assert saved == set().union(*map(carried_code, folders)) | {"image_processing_bahdanau.py"}
    assert saved == {path.name for path in MODELING_DIR.glob("*.py")} - {"__init__.py"}


@pytest.mark.parametrize("preset, tie", CASES, ids=CASE_IDS)
def test_saved_folder_contents(preset, tie, tmp_path):
    model = shared_model(preset, tie)
    model.save_pretrained(tmp_path)
    files = {path.name for path in tmp_path.iterdir()}
    assert "model.safetensors" in files
    assert "pytorch_model.bin" not in files
    assert {"config.json", "generation_config.json"} <= files
    code = carried_code(tmp_path)
    assert {name for name in files if name.endswith(".py")} == code
    assert "__init__.py" not in files
    for name in code:  # the shipped code is the package's code
        assert (tmp_path / name).read_text() == (MODELING_DIR / name).read_text()

    config = json.loads((tmp_path / "config.json").read_text())
    assert config["model_type"] == "bahdanau"
    assert config["auto_map"] == {
        "AutoConfig": "configuration_bahdanau.BahdanauConfig",
        "AutoModel": "modeling_bahdanau.BahdanauModel",
        "AutoModelForSeq2SeqLM": "modeling_bahdanau.BahdanauForConditionalGeneration",
        "AutoModelForTokenClassification": "modeling_token_classification.BahdanauForTokenClassification",
        "AutoModelForSequenceClassification": "modeling_sequence_classification.BahdanauForSequenceClassification",
    }
    assert config["auto_map"] == AUTO_MAP
    assert config["architectures"] == ["BahdanauForConditionalGeneration"]
    assert config["tie_word_embeddings"] is tie
    assert {config[key] for key in ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id")} == {
        0, BOS, EOS}
    generation = json.loads((tmp_path / "generation_config.json").read_text())
    assert (generation["decoder_start_token_id"], generation["eos_token_id"], generation["pad_token_id"]) == (
        BOS, EOS, 0)


@pytest.mark.parametrize("preset, tie", CASES, ids=CASE_IDS)
def test_save_and_load_round_trip(preset, tie, tmp_path):
    model = shared_model(preset, tie)
    batch = inputs()
    expected = outputs(in_float64(model), batch)
    model.save_pretrained(tmp_path)

    config = AutoConfig.from_pretrained(tmp_path)
    assert type(config) is BahdanauConfig
    ignored = {"_name_or_path"}  # the folder it was loaded from
    assert {k: v for k, v in config.to_dict().items() if k not in ignored} == {
        k: v for k, v in model.config.to_dict().items() if k not in ignored}

    for loader in (BahdanauForConditionalGeneration, AutoModelForSeq2SeqLM):
        loaded = loader.from_pretrained(tmp_path).eval()
        assert type(loaded) is BahdanauForConditionalGeneration
        state, loaded_state = model.state_dict(), loaded.state_dict()
        assert state.keys() == loaded_state.keys()
        assert all(torch.equal(state[key], loaded_state[key]) for key in state)  # copies of the same values
        tied = loaded.lm_head.weight.data_ptr() == loaded.model.decoder.embed_tokens.weight.data_ptr()
        assert tied is tie
        assert_same_outputs(outputs(loaded.double(), batch), expected)

    base = AutoModel.from_pretrained(tmp_path).eval().double()
    assert type(base) is BahdanauModel
    model = model.double()
    with torch.no_grad():
        hidden = base(**batch).last_hidden_state
        expected_hidden = model.model(**batch).last_hidden_state
        assert_float64_close(hidden, expected_hidden)
        if not model.config.copy_attention:  # a pointer-generator's logits also read its attention
            assert_float64_close(model.lm_head(hidden), expected["logits"])


# 2. remote code in a process without hf_bahdanau -------------------------------------------------------

REMOTE_CODE_CHILD = """
    import json
    import sys

    import torch
    from transformers import AutoConfig, AutoModel, AutoModelForSeq2SeqLM

    torch.set_num_threads(1)
    folders, inputs_file = sys.argv[1:-1], sys.argv[-1]
    batch = {key: torch.tensor(value) for key, value in json.load(open(inputs_file)).items()}
    source = dict(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
    results = []
    for folder in folders:
        config = AutoConfig.from_pretrained(folder, trust_remote_code=True)
        base = AutoModel.from_pretrained(folder, trust_remote_code=True, dtype=torch.float64).eval()
        model = AutoModelForSeq2SeqLM.from_pretrained(folder, trust_remote_code=True, dtype=torch.float64).eval()
        with torch.no_grad():
            forward = model(**batch)
            hidden = base(**batch).last_hidden_state
            greedy = model.generate(**source, max_new_tokens=%(max_new)d)
            beams = model.generate(**source, max_new_tokens=%(max_new)d, num_beams=3, num_return_sequences=3,
                                   output_scores=True, return_dict_in_generate=True)
        results.append(dict(
            modules=[type(config).__module__, type(base).__module__, type(model).__module__],
            classes=[type(config).__name__, type(base).__name__, type(model).__name__],
            tied=model.lm_head.weight.data_ptr() == model.model.decoder.embed_tokens.weight.data_ptr(),
            logits=forward.logits.tolist(), annotations=forward.encoder_last_hidden_state.tolist(),
            hidden=hidden.tolist(), greedy=greedy.tolist(), beams=beams.sequences.tolist(),
            beam_scores=beams.sequences_scores.tolist(),
        ))
    loaded = sorted(name for name in sys.modules if name.split(".")[0] == "hf_bahdanau")
    print(json.dumps(dict(results=results, hf_bahdanau_modules=loaded)))
""" % dict(max_new=MAX_NEW)

REMOTE_CASES = [("rnnsearch", True), ("luong-general", True), ("sutskever", False), ("luong-local-p", False),
                ("rnnsearch-monotonic", False), ("rnnsearch+coverage+hard", False), ("rnnsearch+copy", False)]


@pytest.fixture(scope="module")
def remote_run(tmp_path_factory):
    """Save one model per REMOTE_CASES, load them all in one isolated child (``python -I``), return both sides; the
    child loads the saved float32 weights in float64, as this side's copies."""
    tmp_path = tmp_path_factory.mktemp("remote")
    batch = inputs()
    (tmp_path / "inputs.json").write_text(json.dumps({key: value.tolist() for key, value in batch.items()}))
    folders, expected = [], []
    for preset, tie in REMOTE_CASES:
        model = shared_model(preset, tie)
        folder = tmp_path / f"{preset}-{tie}"
        model.save_pretrained(folder)
        folders.append(str(folder))
        model = in_float64(model)
        with torch.no_grad():
            hidden = model.model(**batch).last_hidden_state
        expected.append(dict(outputs(model, batch), hidden=hidden, tied=tie))
    child = run_child(REMOTE_CODE_CHILD, tmp_path, *folders, str(tmp_path / "inputs.json"), isolated=True,
                      hide_package=True)
    return child, expected


def test_remote_code_child_never_imports_the_package(remote_run):
    child, _ = remote_run
    assert child["hf_bahdanau_modules"] == []
    for result in child["results"]:
        assert result["classes"] == ["BahdanauConfig", "BahdanauModel", "BahdanauForConditionalGeneration"]
        config_module, base_module, model_module = result["modules"]
        assert all(module.startswith("transformers_modules.") for module in result["modules"])
        assert config_module.endswith(".configuration_bahdanau")
        assert base_module.endswith(".modeling_bahdanau") and model_module.endswith(".modeling_bahdanau")


@pytest.mark.parametrize("case", range(len(REMOTE_CASES)), ids=[f"{p}{'-tied' if t else ''}" for p, t in REMOTE_CASES])
def test_remote_code_reproduces_logits_and_generation(remote_run, case):
    child, expected = remote_run
    result, reference = child["results"][case], expected[case]
    assert_same_outputs(result, reference)
    assert_float64_close(torch.tensor(result["hidden"], dtype=torch.float64), reference["hidden"])
    assert result["tied"] is reference["tied"]


# 3. resize_token_embeddings ----------------------------------------------------------------------------


@pytest.mark.parametrize("new_size", [45, 36])
@pytest.mark.parametrize("tie", [False, True], ids=["untied", "tied"])
def test_resize_token_embeddings(tie, new_size, tmp_path):
    model = shared_model("rnnsearch", tie)
    before = {name: module.weight.detach().clone() for name, module in (
        ("encoder", model.model.encoder.embed_tokens), ("decoder", model.model.decoder.embed_tokens),
        ("lm_head", model.lm_head))}
    lm_bias = model.lm_head.bias.detach().clone()

    model.resize_token_embeddings(new_size)
    assert model.config.vocab_size == new_size
    encoder_embeddings, decoder_embeddings = model.model.encoder.embed_tokens, model.model.decoder.embed_tokens
    assert encoder_embeddings is model.get_input_embeddings()
    assert encoder_embeddings.weight.shape == decoder_embeddings.weight.shape == (new_size, 12)
    assert model.lm_head.weight.shape == (new_size, 12)
    assert model.lm_head.bias.shape == (new_size,)
    assert encoder_embeddings.weight.data_ptr() != decoder_embeddings.weight.data_ptr()
    tied = model.lm_head.weight.data_ptr() == decoder_embeddings.weight.data_ptr()
    assert tied is tie
    kept = min(new_size, VOCAB)  # existing rows are kept
    assert torch.equal(encoder_embeddings.weight[:kept], before["encoder"][:kept])
    assert torch.equal(decoder_embeddings.weight[:kept], before["decoder"][:kept])
    assert torch.equal(model.lm_head.weight[:kept], before["decoder" if tie else "lm_head"][:kept])
    assert torch.equal(model.lm_head.bias[:kept], lm_bias[:kept])

    batch = inputs(new_size)
    if new_size > VOCAB:  # the new ids are usable as source and target tokens
        batch["input_ids"][0, 0], batch["decoder_input_ids"][0, 1] = new_size - 1, new_size - 2
    labels = torch.cat([batch["decoder_input_ids"][:, 1:], torch.full((len(LENGTHS), 1), new_size - 1)], dim=1)
    with torch.no_grad():
        out = model(**batch, labels=labels)
    assert out.logits.shape == (len(LENGTHS), TARGET_LENGTH, new_size)
    assert torch.isfinite(out.loss)
    expected = outputs(in_float64(model), batch)
    assert max(max(row) for row in expected["greedy"]) < new_size

    model.save_pretrained(tmp_path)
    loaded = AutoModelForSeq2SeqLM.from_pretrained(tmp_path).eval()
    assert loaded.config.vocab_size == new_size
    assert (loaded.lm_head.weight.data_ptr() == loaded.model.decoder.embed_tokens.weight.data_ptr()) is tie
    assert_same_outputs(outputs(loaded.double(), batch), expected)


def test_resize_token_embeddings_of_the_base_model():
    model = tiny_model("luong-dot").model
    model.resize_token_embeddings(47)
    assert model.config.vocab_size == 47
    assert model.encoder.embed_tokens.weight.shape == model.decoder.embed_tokens.weight.shape == (47, 12)
    batch = inputs()
    batch["input_ids"][0, 0] = batch["decoder_input_ids"][1, 2] = 46
    with torch.no_grad():
        assert model(**batch).last_hidden_state.shape == (len(LENGTHS), TARGET_LENGTH, 12)


# 4. return_dict=False ----------------------------------------------------------------------------------


@pytest.mark.parametrize("preset", ["rnnsearch", "luong-dot", "rnnencdec"])
def test_return_dict_false_returns_tuples(preset):
    model = shared_model(preset)
    batch = inputs()
    labels = random_labels(len(LENGTHS), TARGET_LENGTH, seed=9)
    labels[0, -2:] = -100
    with torch.no_grad():
        as_dict = model(**batch, labels=labels)
        as_tuple = model(**batch, labels=labels, return_dict=False)
        without_labels = model(**batch, return_dict=False)
        base_tuple = model.model(**batch, return_dict=False)
        base_dict = model.model(**batch)
    assert isinstance(as_tuple, tuple) and isinstance(without_labels, tuple) and isinstance(base_tuple, tuple)
    assert as_tuple[0].dim() == 0
    # the same computation on the same weights and inputs: the same kernels give the same bits
    assert torch.equal(as_tuple[0], as_dict.loss)
    assert torch.equal(as_tuple[1], as_dict.logits)
    assert torch.equal(without_labels[0], as_dict.logits)
    assert torch.equal(base_tuple[0], base_dict.last_hidden_state)
    # the loss is the mean cross-entropy over the labels that are not -100
    log_probs = as_dict.logits.log_softmax(-1)
    real = labels != -100
    expected = -log_probs.gather(-1, labels.clamp(min=0)[..., None])[..., 0][real].mean()
    # both score the same float32 logits, in other orders: each sum within cross_entropy_tolerance of exact, then a mean
    count, eps = int(real.sum()), torch.finfo(torch.float32).eps
    tolerance = 2 * cross_entropy_tolerance(as_dict.logits, labels) / count + 2 * eps * float(expected.abs())
    assert_close(as_tuple[0], expected, atol=tolerance, rtol=0)


@pytest.mark.parametrize("preset", ["rnnsearch", "luong-dot"])
def test_return_dict_false_in_config_returns_tuples(preset):
    model = shared_model(preset)
    batch = inputs()
    labels = random_labels(len(LENGTHS), TARGET_LENGTH, seed=9)
    with torch.no_grad():
        as_dict = model(**batch, labels=labels)
        model.config.return_dict = False  # transformers' config-level switch (can_return_tuple reads it)
        from_config = model(**batch, labels=labels)
        base_tuple = model.model(**batch)
    assert isinstance(from_config, tuple) and isinstance(base_tuple, tuple)
    assert torch.equal(from_config[0], as_dict.loss)  # the same computation, the same kernels: the same bits
    assert torch.equal(from_config[1], as_dict.logits)


# 5. the Hub cache layout, offline ----------------------------------------------------------------------

OFFLINE_CHILD = """
    import json
    import sys

    import torch
    import hf_bahdanau  # noqa: F401  (installed: registers the Auto classes)
    from huggingface_hub import constants
    from transformers import AutoConfig, AutoModelForSeq2SeqLM

    assert constants.HF_HUB_OFFLINE
    torch.set_num_threads(1)
    batch = {key: torch.tensor(value) for key, value in json.load(open(sys.argv[1])).items()}
    model = AutoModelForSeq2SeqLM.from_pretrained("org/name", dtype=torch.float64).eval()
    with torch.no_grad():
        logits = model(**batch).logits
        greedy = model.generate(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                                max_new_tokens=%(max_new)d)
        beams = model.generate(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                               max_new_tokens=%(max_new)d, num_beams=3)
    try:
        AutoConfig.from_pretrained("org/not-in-the-cache")
        missing = "loaded"
    except OSError as error:
        missing = type(error).__name__
    print(json.dumps(dict(cls=type(model).__module__ + "." + type(model).__name__, logits=logits.tolist(),
                          greedy=greedy.tolist(), beams=beams.tolist(), missing=missing,
                          generation_start=model.generation_config.decoder_start_token_id)))
""" % dict(max_new=MAX_NEW)


def test_load_from_hub_cache_offline(tmp_path):
    model = shared_model("luong-concat", tie=True)
    batch = inputs()
    saved = tmp_path / "saved"
    model.save_pretrained(saved)
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hub" / "models--org--name"
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True)
    for path in saved.iterdir():
        (snapshot / path.name).write_bytes(path.read_bytes())
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    (tmp_path / "inputs.json").write_text(json.dumps({key: value.tolist() for key, value in batch.items()}))

    child = run_child(OFFLINE_CHILD, tmp_path, str(tmp_path / "inputs.json"), HF_HUB_CACHE=str(tmp_path / "hub"))
    assert child["cls"] == "hf_bahdanau.modeling.modeling_bahdanau.BahdanauForConditionalGeneration"
    assert child["missing"] == "OSError"  # really offline: what is not in the cache cannot be fetched
    assert child["generation_start"] == BOS
    model = model.double()  # the child loads the saved weights in float64: the processes then agree to rounding
    with torch.no_grad():
        expected_logits = model(**batch).logits
        greedy = model.generate(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                                max_new_tokens=MAX_NEW)
        beams = model.generate(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                               max_new_tokens=MAX_NEW, num_beams=3)
    assert child["greedy"] == greedy.tolist()
    assert child["beams"] == beams.tolist()
    assert_float64_close(torch.tensor(child["logits"], dtype=torch.float64), expected_logits)
