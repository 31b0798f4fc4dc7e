"""The transformers releases hf_bahdanau meets (``hf_bahdanau/modeling/transformers_private.py``): both names of the cache,
the private hooks checked by what they do (tiny generate() calls), and a release outside the tested range either
working or refused at load with one line."""

import logging

import pytest
import torch
import transformers
from packaging.version import Version

from conftest import padded_batch, tiny_model
from hf_bahdanau import BahdanauConfig, BahdanauForConditionalGeneration
from hf_bahdanau.modeling import modeling_bahdanau, search, transformers_private
from hf_bahdanau.modeling.transformers_private import CACHE_NAME, TESTED_TRANSFORMERS, cache_of, check_release, probe_generation

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.mark.parametrize("preset", ["rnnsearch", "luong-general", "rnnsearch+copy", "luong-dot+local-m"])
def test_every_private_hook_does_its_job_on_the_installed_transformers(preset):
    """CI runs this on the lowest allowed and the newest released transformers: generate() still dispatches to our
    loops, shares the encoder memory between beams, and every result equals the model's own logits."""
    findings = probe_generation(tiny_model(preset))
    assert [finding for finding in findings if finding.problem] == []
    assert [finding.behaviour for finding in findings] == ["greedy", "beam", "sampling", "penalties"]
    assert transformers_private.SHARED_BEAM_MEMORY
    assert transformers_private.CARD_UPLOAD
    assert transformers_private.EMBEDDING_RESIZE
    assert transformers_private.AUTO_MAPPING_REGISTER


def test_the_cache_name_is_the_installed_transformers_own():
    expected = "cache" if Version(transformers.__version__) >= Version("5.24") else "past_key_values"
    assert CACHE_NAME == expected
    model = tiny_model()
    input_ids, mask = padded_batch()
    start = torch.ones(3, 1, dtype=torch.long)
    with torch.no_grad():
        outputs = model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=start, use_cache=True)
    assert CACHE_NAME in outputs.keys()
    assert cache_of(outputs).get_seq_length() == 1


@pytest.mark.parametrize("name", ["cache", "past_key_values"])
def test_forward_takes_the_cache_under_either_name(name):
    """transformers ≤ 5.23 passes ``past_key_values``, 5.24 ``cache``: both continue the same decoding."""
    model = tiny_model("rnnsearch+copy")
    input_ids, mask = padded_batch()
    decoder_input_ids = torch.tensor([[1, 5, 7], [1, 9, 4], [1, 3, 3]])
    with torch.no_grad():
        whole = model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=decoder_input_ids).logits
        first = model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=decoder_input_ids[:, :2],
                      use_cache=True)
        step = model(decoder_input_ids=decoder_input_ids[:, 2:], attention_mask=mask, use_cache=True,
                     **{name: cache_of(first)}).logits
    torch.testing.assert_close(step[:, 0], whole[:, 2], rtol=1e-5, atol=1e-5)


def test_two_different_caches_under_both_names_are_refused():
    model = tiny_model()
    input_ids, mask = padded_batch()
    start = torch.ones(3, 1, dtype=torch.long)
    with torch.no_grad():
        one = cache_of(model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=start, use_cache=True))
        other = cache_of(model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=start, use_cache=True))
        with pytest.raises(ValueError, match="Pass the decoding cache once, as `cache`"):
            model(decoder_input_ids=start, cache=one, past_key_values=other)


def test_a_loop_that_generate_no_longer_reaches_is_reported_as_slower_not_broken(monkeypatch):
    """A release that stops dispatching beam search to ``_beam_search`` runs transformers' loop: same results, and
    the probe says which fast path is lost; GNMT's penalties, which only our loop scores, are then broken."""
    monkeypatch.setattr(search.FastSearchMixin, "_beam_search", transformers.GenerationMixin._beam_search)
    findings = {finding.behaviour: finding for finding in probe_generation(tiny_model("rnnsearch"))}
    assert findings["beam"].problem == "generate() no longer reaches _best_continuations"
    assert not findings["beam"].broken
    assert findings["penalties"].broken
    assert findings["greedy"].problem is None


def _forward_of_transformers_5_23(monkeypatch):
    """The model code as it was before this module: ``forward`` without a ``cache`` argument (what broke on 5.24)."""
    original = BahdanauForConditionalGeneration.forward

    def forward(self, *args, cache=None, **kwargs):
        if cache is not None:
            raise TypeError("forward() got an unexpected keyword argument 'cache'")
        return original(self, *args, **kwargs)
    monkeypatch.setattr(BahdanauForConditionalGeneration, "forward", forward)


def test_outside_the_tested_releases_broken_decoding_fails_at_load_with_one_line(monkeypatch):
    _forward_of_transformers_5_23(monkeypatch)
    with pytest.raises(RuntimeError) as error:
        check_release(BahdanauForConditionalGeneration, BahdanauConfig, "5.99.0")
    message = str(error.value)
    assert "\n" not in message
    lowest, newest = TESTED_TRANSFORMERS
    assert f"tested with transformers {lowest} to {newest}" in message
    assert "installed transformers 5.99.0" in message
    assert f"pip install 'transformers>={lowest},<={newest}'" in message
    assert "unexpected keyword argument 'cache'" in message


def test_inside_the_tested_releases_nothing_is_probed_at_load(monkeypatch):
    _forward_of_transformers_5_23(monkeypatch)  # would fail the probe: not run
    for release in (TESTED_TRANSFORMERS[0], TESTED_TRANSFORMERS[1], TESTED_TRANSFORMERS[1].rsplit(".", 1)[0] + ".7"):
        check_release(BahdanauForConditionalGeneration, BahdanauConfig, release)


def test_outside_the_tested_releases_working_code_loads_and_leaves_no_trace(caplog):
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    with caplog.at_level(logging.WARNING):
        check_release(BahdanauForConditionalGeneration, BahdanauConfig, "5.99.0")
    assert torch.equal(torch.rand(1), before)  # the probe's model does not move the caller's random numbers
    assert not [record for record in caplog.records if "hf_bahdanau" in record.getMessage()]


@pytest.mark.parametrize("num_beams", [2, 3])
def test_without_the_expand_hook_beams_get_their_own_memory_and_the_same_results(num_beams, monkeypatch, caplog):
    model = tiny_model("rnnsearch")
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.mul_(6)  # decisive outputs
    input_ids, mask = padded_batch()
    options = dict(input_ids=input_ids, attention_mask=mask, max_new_tokens=5, num_beams=num_beams)
    with torch.no_grad():
        shared = model.generate(**options)
        monkeypatch.setattr(modeling_bahdanau, "SHARED_BEAM_MEMORY", False)
        monkeypatch.setattr(transformers_private, "_WARNED", set())
        with caplog.at_level(logging.WARNING, logger="hf_bahdanau.modeling.transformers_private"):
            copied = model.generate(**options)
            model.generate(**options)
    assert torch.equal(copied, shared)
    warnings = [record.getMessage() for record in caplog.records]
    assert sum("the beams of a source sharing its encoded source" in message for message in warnings) == 1  # once


def test_without_the_private_resize_helpers_resizing_is_refused_clearly(monkeypatch):
    model = tiny_model()
    monkeypatch.setattr(modeling_bahdanau, "EMBEDDING_RESIZE", False)
    with pytest.raises(NotImplementedError, match="_resize_token_embeddings and _get_resized_embeddings"):
        model.resize_token_embeddings(model.config.vocab_size + 4)
    assert model.model.decoder.embed_tokens.num_embeddings == model.config.vocab_size


def test_search_loops_taking_other_parameters_fail_at_load_naming_them(monkeypatch):
    monkeypatch.setattr(transformers_private, "SEARCH_LOOPS", False)
    with pytest.raises(RuntimeError) as error:
        check_release(BahdanauForConditionalGeneration, BahdanauConfig, "5.99.0")
    assert ("its greedy and beam decoding fails (GenerationMixin._sample or _beam_search no longer takes input_ids, "
            "logits_processor, stopping_criteria, generation_config, synced_gpus by name)") in str(error.value)


class _Hooks:
    def reordered(self, c, a, b=None, **kwargs): ...
    def renamed(self, a, bb, c=None, **kwargs): ...
    def positional_only(self, a, /, b, c=None, **kwargs): ...
    def closed(self, a, b, c=None): ...


@pytest.mark.parametrize("name, accepted", [("reordered", True), ("renamed", False), ("positional_only", False),
                                            ("closed", False)])
def test_a_hook_is_supported_when_it_takes_each_argument_by_name(name, accepted):
    """The inventory's check: names, not positions (we call every hook by keyword)."""
    assert transformers_private._accepts(_Hooks, name, ("a", "b", "c"), more_keywords=True) is accepted


def test_every_private_hook_is_supported_by_the_installed_transformers():
    assert transformers_private.SEARCH_LOOPS
    assert transformers_private.PIPELINE_GENERATE_KWARGS


def _keywords_only(monkeypatch, owner: type, name: str) -> list[dict]:
    """``owner.name`` taking its arguments by keyword only (as if an upstream release had reordered its parameters,
    every positional call would bind wrongly), passing them on; returns the keyword arguments of each call."""
    original = getattr(owner, name)
    calls = []

    def by_keyword(self, **kwargs):
        calls.append(kwargs)
        return original(self, **kwargs)
    monkeypatch.setattr(owner, name, by_keyword)
    return calls


@pytest.mark.parametrize("num_beams, loop", [(1, "_sample"), (3, "_beam_search")])
def test_every_private_hook_is_called_by_keyword(num_beams, loop, monkeypatch):
    """A release that reorders a hook's parameters changes nothing: we call each one with keywords only."""
    model = tiny_model("rnnsearch")
    input_ids, mask = padded_batch()
    options = dict(input_ids=input_ids, attention_mask=mask, max_new_tokens=4, num_beams=num_beams)
    with torch.no_grad():
        expected = model.generate(**options)
        expanded = _keywords_only(monkeypatch, transformers.GenerationMixin, "_expand_inputs_for_generation")
        handed_back = _keywords_only(monkeypatch, transformers.GenerationMixin, loop)
        assert torch.equal(model.generate(**options), expected)
        model.generate(**options, do_sample=True)  # our loops hand sampling back to transformers'
    assert {"expand_size", "is_encoder_decoder", "input_ids"} <= set(expanded[0])
    assert {"input_ids", "logits_processor", "stopping_criteria", "generation_config"} <= set(handed_back[0])
    resized = _keywords_only(monkeypatch, transformers.PreTrainedModel, "_resize_token_embeddings")
    get_resized = transformers.PreTrainedModel._get_resized_embeddings
    embedded = []  # transformers calls it too, positionally: ours is the call by keyword

    def recorded(self, *args, **kwargs):
        embedded.append((args, set(kwargs)))
        return get_resized(self, *args, **kwargs)
    monkeypatch.setattr(transformers.PreTrainedModel, "_get_resized_embeddings", recorded)
    size = model.config.vocab_size + 4
    model.resize_token_embeddings(size)
    assert resized == [dict(new_num_tokens=size, pad_to_multiple_of=None, mean_resizing=True)]
    assert ((), {"old_embeddings", "new_num_tokens", "mean_resizing"}) in embedded
    assert model.model.decoder.embed_tokens.num_embeddings == model.config.vocab_size == size


def test_the_card_upload_hook_is_called_by_keyword(monkeypatch, tmp_path):
    uploads = []
    monkeypatch.setattr(transformers.PreTrainedModel, "_upload_modified_files",
                        lambda self, **kwargs: uploads.append(kwargs))
    tiny_model()._upload_modified_files(str(tmp_path), "me/model", {}, commit_message="Upload")
    assert uploads == [dict(working_dir=str(tmp_path), repo_id="me/model", files_timestamps={},
                            commit_message="Upload")]


def test_the_pipelines_call_prepare_generate_kwargs_by_keyword(monkeypatch):
    from hf_bahdanau import BahdanauTranslationPipeline
    from training.common.tokenization import train_tokenizer

    tokenizer = train_tokenizer(["3 March 2015", "2015-03-03"], kind="char")
    model = tiny_model("rnnsearch", vocab_size=len(tokenizer))
    prepared = _keywords_only(monkeypatch, transformers.Pipeline, "_prepare_generate_kwargs")
    BahdanauTranslationPipeline(model=model, tokenizer=tokenizer)("3 March", max_new_tokens=3,
                                                                  return_alignments=True)
    assert prepared == [dict(generate_kwargs={"max_new_tokens": 3}, output_attentions=True,
                             return_dict_in_generate=True)]
