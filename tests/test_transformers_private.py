"""The private transformers APIs are checked, and where a check fails the code falls back to transformers' own path
with the same results (``hf_bahdanau/transformers_private.py``)."""

import logging

import pytest
import torch

from conftest import padded_batch, tiny_model
from hf_bahdanau import modeling_bahdanau, search, transformers_private

pytestmark = pytest.mark.usefixtures("one_thread")


def test_the_installed_transformers_has_every_private_api_used():
    """CI runs the oldest and the newest transformers pyproject.toml allows: both must keep every fast path on."""
    assert transformers_private.FAST_SEARCH
    assert transformers_private.SHARED_BEAM_MEMORY
    assert transformers_private.CARD_UPLOAD
    assert transformers_private.EMBEDDING_RESIZE


def test_a_changed_or_missing_helper_fails_the_check():
    class Changed:
        def _prefill(self, input_ids, config):  # a renamed parameter
            pass

    assert transformers_private._accepts(Changed, "_prefill", ("input_ids", "config"))
    assert not transformers_private._accepts(Changed, "_prefill", ("input_ids", "generation_config"))
    assert not transformers_private._accepts(Changed, "_update_finished_beams", ("sequences",))


@pytest.mark.parametrize("num_beams", [1, 3])
def test_without_the_private_search_helpers_generate_falls_back_to_transformers_loops(num_beams, monkeypatch,
                                                                                        caplog):
    model = tiny_model("rnnsearch")
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.mul_(6)  # decisive outputs
    input_ids, mask = padded_batch()
    options = dict(input_ids=input_ids, attention_mask=mask, max_new_tokens=5, num_beams=num_beams)
    with torch.no_grad():
        fast = model.generate(**options)
        monkeypatch.setattr(search, "FAST_SEARCH", False)
        monkeypatch.setattr(modeling_bahdanau, "SHARED_BEAM_MEMORY", False)
        monkeypatch.setattr(transformers_private, "_WARNED", set())
        with caplog.at_level(logging.WARNING, logger="hf_bahdanau.transformers_private"):
            fallback = model.generate(**options)
            model.generate(**options)
    assert torch.equal(fallback, fast)
    search_name = "greedy" if num_beams == 1 else "beam"
    warnings = [record.getMessage() for record in caplog.records]
    assert sum(f"hf_bahdanau's {search_name} search is off" in message for message in warnings) == 1  # once
    assert sum("one encoder memory per source" in message for message in warnings) == (num_beams > 1)


def test_without_the_private_resize_helpers_resizing_is_refused_clearly(monkeypatch):
    model = tiny_model()
    monkeypatch.setattr(modeling_bahdanau, "EMBEDDING_RESIZE", False)
    with pytest.raises(NotImplementedError, match="_resize_token_embeddings and _get_resized_embeddings"):
        model.resize_token_embeddings(model.config.vocab_size + 4)
    assert model.model.decoder.embed_tokens.num_embeddings == model.config.vocab_size
