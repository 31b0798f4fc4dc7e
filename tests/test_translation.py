"""hf_bahdanau.modeling.translation.translate: batched decoding with per-sentence tokens and alignments."""

import pytest
import torch
from torch.testing import assert_close

from conftest import assert_float64_close, softmax_sum_tolerance, tiny_model
from hf_bahdanau.modeling.translation import translate
from training.common.tokenization import train_tokenizer

SENTENCES = ["le 3 mars 2015", "3/14/15", "Tuesday, 3 March 2015"]
TOKENIZER = train_tokenizer(SENTENCES + ["2015-03-03"], kind="char")

pytestmark = pytest.mark.usefixtures("one_thread")


def model():
    torch.manual_seed(0)
    net = tiny_model("rnnsearch", vocab_size=len(TOKENIZER))
    with torch.no_grad():
        for parameter in net.parameters():
            parameter.mul_(8)  # peaked, source-dependent outputs
        net.lm_head.bias[TOKENIZER.pad_token_id] = -1e3
    net.generation_config.max_new_tokens = 7
    return net


@pytest.mark.parametrize("num_beams", [1, 3])
def test_a_batch_decodes_like_each_sentence_alone(num_beams):
    net = model().double()  # float64: a padded batch and one sentence alone round alike, to ~1e-16
    batched = translate(net, TOKENIZER, SENTENCES, num_beams=num_beams, batch_size=3, output_alignments=True)
    for sentence, result in zip(SENTENCES, batched):
        (alone,) = translate(net, TOKENIZER, [sentence], num_beams=num_beams, output_alignments=True)
        assert result.source == sentence
        assert result.source_tokens == [*sentence, "</s>"]
        assert (result.translation, result.target_tokens) == (alone.translation, alone.target_tokens)
        assert result.translation == TOKENIZER.decode(TOKENIZER.convert_tokens_to_ids(result.target_tokens),
                                                      skip_special_tokens=True)
        assert result.alignment.shape == (len(result.target_tokens), len(result.source_tokens))
        assert_float64_close(result.alignment, alone.alignment, scale=1.0)  # weights: at most 1
        assert_close(result.alignment.sum(-1), torch.ones(len(result.target_tokens), dtype=torch.float64),
                     atol=softmax_sum_tolerance(len(result.source_tokens), torch.float64), rtol=0)


def test_alignments_are_left_out_unless_asked_and_arguments_are_checked():
    net = model()
    (result,) = translate(net, TOKENIZER, SENTENCES[:1], max_new_tokens=3)
    assert result.alignment is None and len(result.target_tokens) <= 3
    with pytest.raises(ValueError, match="`num_beams` must be a positive integer"):
        translate(net, TOKENIZER, SENTENCES, num_beams=0)
    with pytest.raises(ValueError, match="`batch_size` must be a positive integer"):
        translate(net, TOKENIZER, SENTENCES, batch_size=0)
    no_attention = tiny_model("rnnencdec", vocab_size=len(TOKENIZER))
    with pytest.raises(ValueError, match="needs a model with attention"):
        translate(no_attention, TOKENIZER, SENTENCES, output_alignments=True)
