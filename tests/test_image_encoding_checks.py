"""The image-to-text head hands its own encoding of the pixels to the decoder as it is; only encoder outputs a caller
gives are checked (``BahdanauImageToTextModel.check_image_outputs``), once per forward."""

import pytest
import torch

from hf_bahdanau import BahdanauForImageToText, BahdanauImageToTextConfig
from hf_bahdanau.modeling.modeling_image_to_text import BahdanauImageToTextModel


def image_model() -> BahdanauForImageToText:
    torch.manual_seed(0)
    return BahdanauForImageToText(BahdanauImageToTextConfig(
        vocab_size=12, embedding_size=8, hidden_size=16, attention_size=8, output_size=8, cnn_channels=[4, 8],
        cnn_pool_sizes=[[2, 2], [2, 3]])).eval()


@pytest.fixture
def checks(monkeypatch) -> list:
    calls = []
    check = BahdanauImageToTextModel.check_image_outputs

    def counted(self, encoder_outputs):
        calls.append(encoder_outputs)
        return check(self, encoder_outputs)

    monkeypatch.setattr(BahdanauImageToTextModel, "check_image_outputs", counted)
    return calls


def test_the_heads_own_encoding_is_not_checked_again_and_a_callers_is_checked_once(checks):
    model = image_model()
    pixels, mask = torch.randn(2, 1, 9, 14), torch.ones(2, 9, 14, dtype=torch.long)
    labels = torch.tensor([[3, 4, 5, 2], [6, 7, 2, -100]])
    with torch.no_grad():
        own = model(pixel_values=pixels, pixel_mask=mask, labels=labels)
        assert checks == []
        encoded = model.model.encoder(pixels, mask)
        given = model(encoder_outputs=encoded, labels=labels)
        assert checks == [encoded]
    assert torch.equal(own.logits, given.logits) and torch.equal(own.loss, given.loss)
    with pytest.raises(ValueError, match=r"Pass `decoder_input_ids` or `decoder_inputs_embeds` \(or `labels`"):
        model(pixel_values=pixels, pixel_mask=mask)
