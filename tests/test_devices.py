"""The device checks themselves (tests/contract/devices.py) catch what they are for; every family's pipeline and every
option of the seq2seq model run on each device of ``conftest.DEVICES`` with hf_bahdanau's factory calls on meta (the
contract runs each head's own device checks)."""

from pathlib import Path

import pytest
import torch

from conftest import DEVICES, assert_float64_close, padded_batch, random_labels, tiny_model
from contract.devices import STEP_SYNCS, FactoriesOnMeta, HostSyncs, place, syncs_per_step
from hf_bahdanau.modeling.axes import (ATTENTION_MODES, ATTENTION_SCOPES, ATTENTION_SCORES, BRIDGES, CONTEXT_MODES,
                                      DECODER_STYLES, DEEP_OUTPUTS, RNN_TYPES)
from test_family_pipelines import CORPUS, decisive, families, in_folder, pipeline_of, save_picture
from training.common.tokenization import train_tokenizer

pytestmark = pytest.mark.usefixtures("one_thread")

HERE = Path(__file__)


class Shifted(torch.nn.Module):
    """x + b for a bias b [F] made in ``forward``: on the default device (``planted``) or on x's."""

    def __init__(self, planted: bool):
        super().__init__()
        self.planted = planted

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        bias = torch.zeros(x.shape[-1]) if self.planted else torch.zeros(x.shape[-1], device=x.device)
        return x + bias


def test_a_tensor_made_on_the_default_device_fails_on_the_cpu():
    x = torch.ones(2, 3)
    with FactoriesOnMeta(roots=(HERE,)) as check:
        assert torch.equal(Shifted(planted=False)(x), x)
        assert check.made == []
        with pytest.raises(RuntimeError, match="meta"):
            Shifted(planted=True)(x)
    assert check.made == [(str(HERE), "Shifted.forward")]


def test_only_the_factory_calls_of_the_given_files_move_to_meta():
    with FactoriesOnMeta() as check:  # hf_bahdanau's files: this one is not among them
        assert Shifted(planted=True)(torch.ones(2, 3)).device.type == "cpu"
    assert check.made == []


def test_host_round_trips_are_counted_where_they_are_made():
    x = torch.arange(6.0).reshape(2, 3)

    def step() -> None:
        x.max().item()
        bool((x > 2).any())
        x[x > 2].tolist()  # the boolean index and tolist: two
    with HostSyncs() as syncs:
        for _ in range(3):
            step()
        x.sum()  # no round trip
    where = (str(HERE), "test_host_round_trips_are_counted_where_they_are_made.<locals>.step")
    assert syncs.counts == {where: 12}
    assert place(where) == "test_devices.py:" + where[1]  # tests/ is on sys.path


class Hesitant(type(tiny_model())):
    """A seq2seq model whose decoding step reads its best logit on the host: one round trip per step of its own."""

    def _next_token_logits(self, tokens, cache):
        logits = super()._next_token_logits(tokens, cache)
        float(logits.max())
        return logits


def test_a_round_trip_added_to_the_decoding_step_is_found():
    torch.manual_seed(0)
    model = Hesitant(tiny_model().config).eval()
    input_ids = torch.randint(3, 40, (2, 5), generator=torch.Generator().manual_seed(0))
    for search in (dict(num_beams=1), dict(num_beams=2)):
        per_step = syncs_per_step(model, dict(input_ids=input_ids), search)
        assert {where: count for where, count in per_step.items() if where not in STEP_SYNCS} == {
            "test_devices.py:Hesitant._next_token_logits": 1.0}, search


@pytest.fixture(scope="module")
def pipelines(tmp_path_factory):
    """Every family's pipeline (test_family_pipelines' tiny models, in memory) and its arguments: name -> (pipeline
    class, model, tokenizer or None, image processor or None, task, args, kwargs)."""
    folder = tmp_path_factory.mktemp("pictures")
    tokenizer = train_tokenizer(CORPUS, kind="word")
    built, separator = {}, tokenizer.convert_tokens_to_ids(".")
    for name, (model, processor, args, kwargs) in families(len(tokenizer), separator).items():
        if processor is not None:
            save_picture(name, processor, folder)
        task, pipeline_class = pipeline_of(model)
        built[name] = (pipeline_class, decisive(model), None if name == "pointer" else tokenizer, processor, task,
                       in_folder(args, folder), kwargs)
    pipeline_class, *arguments, kwargs = built["seq2seq"]
    built["seq2seq+alignments"] = (pipeline_class, *arguments, {**kwargs, "return_alignments": True})
    return built


def checked(method):
    """``method`` run with hf_bahdanau's factory calls on meta."""
    def run(*args, **kwargs):
        with FactoriesOnMeta():
            return method(*args, **kwargs)
    return run


@pytest.mark.devices
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("family", ["seq2seq", "seq2seq+alignments", "pointer", "tagger", "classifier", "han",
                                    "memory", "passage", "image_to_text", "vqa"])
def test_every_pipeline_runs_on_the_device(pipelines, family, device):
    """A pipeline made with ``device=`` answers there, and gives the same answer when hf_bahdanau's code in its
    model step (``_forward``) and its ``postprocess`` makes its tensors on meta: the model step works where the
    model is, and postprocess on the CPU tensors transformers' Pipeline hands it. ``preprocess`` makes the inputs on
    the default device, as a tokenizer does, and Pipeline moves them to the model's."""
    pipeline_class, model, tokenizer, processor, task, args, kwargs = pipelines[family]
    answer = pipeline_class(model=model, tokenizer=tokenizer, image_processor=processor, task=task, device=device)
    assert answer.model.device.type == device
    expected = answer(*args, **kwargs)
    answer._forward, answer.postprocess = checked(answer._forward), checked(answer.postprocess)
    assert answer(*args, **kwargs) == expected


# every option of the seq2seq model's axes (each a registry) and its switches, beside the presets the contract runs
OPTIONS = {
    **{f"{axis.field}={name}": {axis.field: name} for axis in (RNN_TYPES, ATTENTION_SCORES, ATTENTION_SCOPES,
                                                              ATTENTION_MODES, DECODER_STYLES, BRIDGES, DEEP_OUTPUTS)
       for name in axis},
    **{f"context_mode={name}": dict(attention_type="none", context_mode=name) for name in CONTEXT_MODES},
    "coverage": dict(use_coverage=True, coverage_loss_weight=0.5), "copy_attention": dict(copy_attention=True),
    "context_gate": dict(context_gate=True), "doubly_stochastic": dict(doubly_stochastic_weight=0.5),
    "location_smoothing": dict(attention_type="location_aware", location_smoothing=True),
    "input_feeding": dict(decoder_style="luong", input_feeding=True), "reverse_source": dict(reverse_source=True),
    "encoder_self_attention": dict(encoder_self_attention="multihead"), "dropout": dict(dropout=0.3),
    "reinforce": dict(attention_mode="hard_reinforce", reinforce_baseline="per_token",
                      reinforce_expected_context_probability=0.5),
}
SIZES = {"attention_type=multihead": dict(num_attention_heads=2, attention_size=16),  # heads that split the size
         "attention_scope=local-m": dict(local_window=2), "attention_scope=local-p": dict(local_window=2)}


@pytest.mark.devices
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("option", OPTIONS)
def test_every_seq2seq_option_runs_on_the_device(option, device):
    """Training forward and backward, greedy and beam search (GNMT's penalties, several returned sequences) with
    hf_bahdanau's factory calls on meta, for each option on the rnnsearch model."""
    model = tiny_model(**OPTIONS[option], **SIZES.get(option, {})).to(device).train()
    input_ids, mask = (tensor.to(device) for tensor in padded_batch())
    labels = random_labels(3, 5).to(device)
    with FactoriesOnMeta():
        model(input_ids=input_ids, attention_mask=mask, labels=labels).loss.backward()
    beams = dict(num_beams=3, num_return_sequences=2, length_penalty_style="gnmt",
                 coverage_penalty=0.0 if model.config.attention_type == "none" else 0.2)
    with torch.no_grad(), FactoriesOnMeta():
        for search in (dict(num_beams=1), beams):
            generated = model.eval().generate(input_ids=input_ids, attention_mask=mask, max_new_tokens=4, **search)
            assert generated.device.type == device


@pytest.mark.devices
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("rnn_type", list(RNN_TYPES))
def test_the_paths_torch_export_traces_run_on_the_device(rnn_type, device, monkeypatch):
    """The step loops torch.export traces (``torch.while_loop``, run eagerly here) make no tensor on the default
    device either."""
    model = tiny_model(rnn_type=rnn_type).double().to(device)
    inputs = dict(zip(("input_ids", "attention_mask"), (tensor.to(device) for tensor in padded_batch())))
    labels = random_labels(3, 5).to(device)
    with torch.no_grad():
        expected = model(**inputs, labels=labels).logits
        monkeypatch.setattr(torch.compiler, "is_exporting", lambda: True)
        with FactoriesOnMeta():
            assert_float64_close(model(**inputs, labels=labels).logits, expected)
