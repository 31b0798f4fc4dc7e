"""The output layer is a registered choice (``output_layers.py``, ``axes.OUTPUT_LAYERS``) that owns its probabilities,
its per-source state while searching and its loss; the heads, generate() and the beam expansion only call it."""

import pytest
import torch

from conftest import padded_batch, random_labels, tiny_model
from hf_bahdanau import BahdanauForPointerNetwork, BahdanauPointerConfig
from hf_bahdanau.modeling.axes import OUTPUT_LAYERS
from hf_bahdanau.modeling.output_layers import (PointerGeneratorOutput, PointingOutput, SoftmaxOutput,
                                                seq2seq_output_layer)
from hf_bahdanau.modeling.pointer_generator import CopySource


def test_every_declared_output_layer_has_its_class():
    assert OUTPUT_LAYERS.unimplemented == []
    assert dict(OUTPUT_LAYERS) == {"softmax": SoftmaxOutput, "pointer_generator": PointerGeneratorOutput,
                                   "pointing": PointingOutput}


def test_each_head_builds_the_layer_its_config_means():
    assert type(tiny_model("rnnsearch").output_layer) is SoftmaxOutput
    assert type(tiny_model("rnnsearch+copy").output_layer) is PointerGeneratorOutput
    pointer = BahdanauForPointerNetwork(BahdanauPointerConfig(input_feature_size=2, hidden_size=16, embedding_size=8,
                                                              attention_size=8))
    assert type(pointer.output_layer) is PointingOutput
    assert type(seq2seq_output_layer(tiny_model("rnnsearch+copy").config)) is PointerGeneratorOutput


def copy_batch(unk_token_id: int) -> dict:
    """Three sources with words beyond the vocabulary (ids 40, 41; their input id ``unk_token_id``) and labels that
    copy them."""
    input_ids, mask = padded_batch()
    copy_ids = input_ids.clone()
    copy_ids[0, 1], copy_ids[0, 3], copy_ids[1, 0] = 40, 41, 40
    labels = random_labels(3, 6)
    labels[0, 2], labels[1, 4] = 41, 40
    return dict(input_ids=input_ids.masked_fill(copy_ids >= 40, unk_token_id), attention_mask=mask,
                copy_input_ids=copy_ids, labels=labels)


# Measured with the code before the output layers (commit 7618d4e), torch.manual_seed(0) and copy_batch():
# the eval loss, the fused training loss, greedy ids and beam (3 beams, 2 returned) ids and scores.
BEFORE = {
    "rnnsearch+copy": (4.201517581939697, 4.2015180587768555,
                       [[1, 28, 28, 28, 28, 28, 28], [1, 12, 12, 12, 12, 12, 12], [1, 18, 18, 18, 18, 18, 18]],
                       [[1, 28, 28, 28, 28, 28, 28], [1, 28, 28, 28, 28, 28, 24], [1, 12, 12, 12, 12, 12, 12],
                        [1, 12, 12, 12, 12, 12, 34], [1, 18, 18, 18, 18, 18, 18], [1, 18, 18, 18, 18, 18, 36]],
                       [-2.350618362426758, -2.361330270767212, -2.0683329105377197, -2.0762979984283447,
                        -1.2900010347366333, -1.2990117073059082]),
    "luong-general+copy+local-p": (4.139458179473877, 4.139458179473877,
                                   [[1, 36, 36, 36, 36, 36, 36], [1, 12, 12, 12, 12, 12, 34],
                                    [1, 18, 18, 18, 18, 18, 18]],
                                   [[1, 36, 36, 36, 36, 36, 36], [1, 30, 36, 36, 36, 36, 36],
                                    [1, 34, 34, 34, 34, 34, 12], [1, 34, 34, 34, 34, 34, 34],
                                    [1, 36, 36, 36, 36, 36, 18], [1, 36, 36, 36, 36, 18, 18]],
                                   [-2.43696665763855, -2.440326452255249, -2.1765291690826416, -2.1768314838409424,
                                    -1.339581847190857, -1.3416930437088013]),
}


@pytest.mark.parametrize("preset", list(BEFORE))
def test_the_pointer_generator_decodes_and_trains_as_before(preset):
    eval_loss, train_loss, greedy, beam, beam_scores = BEFORE[preset]
    model = tiny_model(preset)
    batch = copy_batch(model.config.unk_token_id)
    with torch.no_grad():
        assert model(**batch).loss.item() == pytest.approx(eval_loss, rel=1e-6)
    model.train()
    torch.manual_seed(5)
    assert model(**batch).loss.item() == pytest.approx(train_loss, rel=1e-6)
    model.eval()
    sources = {key: batch[key] for key in ("input_ids", "attention_mask", "copy_input_ids")}
    assert model.generate(**sources, max_new_tokens=6).tolist() == greedy
    found = model.generate(**sources, max_new_tokens=6, num_beams=3, num_return_sequences=2,
                           return_dict_in_generate=True, output_scores=True)
    assert found.sequences.tolist() == beam
    torch.testing.assert_close(found.sequences_scores, torch.tensor(beam_scores), rtol=1e-5, atol=1e-6)


class HalvedLogits(SoftmaxOutput):
    """A layer a contributor adds: the softmax of (W_o t + b) / 2."""

    def logits(self, logits, weights, gate_logits, source, rows_per_source):
        return logits / 2


def test_the_head_and_the_search_read_the_probabilities_from_the_layer():
    input_ids, mask = padded_batch()
    model = tiny_model("rnnsearch")
    labels = random_labels(3, 4)
    with torch.no_grad():
        plain = model(input_ids=input_ids, attention_mask=mask, labels=labels).logits
        model.output_layer = HalvedLogits(model.config)
        halved = model(input_ids=input_ids, attention_mask=mask, labels=labels).logits
    assert torch.equal(halved, plain / 2)
    found = model.generate(input_ids=input_ids, attention_mask=mask, max_new_tokens=1, do_sample=False,
                           output_logits=True, return_dict_in_generate=True)
    start = torch.full((3, 1), model.config.decoder_start_token_id)
    with torch.no_grad():
        first = model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=start).logits[:, -1]
    torch.testing.assert_close(found.logits[0], first, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(first, plain[:, 0] / 2, rtol=1e-5, atol=1e-6)  # the layer's, not the softmax's
