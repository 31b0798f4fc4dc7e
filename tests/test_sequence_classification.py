"""Attention-pooled and hierarchical (HAN) classification: sentence splitting against a plain-Python reference,
the hierarchy against a sentence-by-sentence composition, masks, the three problem types' losses by hand, loading a
seq2seq checkpoint's encoder. What every head does (save/load, remote code, the -100 loss) is tests/contract/'s."""

import pytest
import torch
from torch.testing import assert_close
from transformers.modeling_outputs import SequenceClassifierOutput

from conftest import (
    EOS, PAD, VOCAB, assert_float64_close, padded_batch, softmax_sum_tolerance, tiny_encoder_config, tiny_model,
)
from hf_bahdanau import BahdanauEncoderConfig, BahdanauForSequenceClassification
from hf_bahdanau.modeling.modeling_sequence_classification import BahdanauSequenceClassifierOutput, split_sentences

SEP = 5  # the sentence separator token id in these tests
LENGTHS = (9, 6, 3)

pytestmark = pytest.mark.usefixtures("one_thread")


def classifier(hierarchical: bool = True, num_labels: int = 3, seed: int = 0, **overrides):
    torch.manual_seed(seed)
    config = tiny_encoder_config(**{"num_labels": num_labels, "hierarchical": hierarchical,
                                    "sentence_separator_token_id": SEP, **overrides})
    return BahdanauForSequenceClassification(config).eval()


def documents() -> tuple[torch.Tensor, torch.Tensor]:
    """Three padded documents: "a b . c d e . f </s>", ". . g h </s>" (empty sentences), "i . j"."""
    rows = [[11, 12, SEP, 13, 14, 15, SEP, 16, EOS], [SEP, SEP, 17, 18, EOS], [19, SEP, 20]]
    input_ids = torch.full((3, 9), PAD)
    attention_mask = torch.zeros(3, 9, dtype=torch.long)
    for row, tokens in enumerate(rows):
        input_ids[row, :len(tokens)] = torch.tensor(tokens)
        attention_mask[row, :len(tokens)] = 1
    return input_ids, attention_mask


def reference_split(tokens: list[int], delimiters: set[int]) -> list[list[int]]:
    sentences, current = [], []
    for token in tokens:
        if token in delimiters:
            if current:
                sentences.append(current)
            current = []
        else:
            current.append(token)
    return sentences + ([current] if current else [])


# 1. splitting documents into sentences ------------------------------------------------------------------


def test_split_sentences_of_hand_written_documents():
    input_ids, attention_mask = documents()
    sentences, mask = split_sentences(input_ids, attention_mask, torch.tensor([SEP, EOS]))
    assert sentences.shape == mask.shape == (3, 3, 3)
    assert sentences.tolist() == [
        [[11, 12, PAD], [13, 14, 15], [16, PAD, PAD]],
        [[17, 18, PAD], [PAD] * 3, [PAD] * 3],
        [[19, PAD, PAD], [20, PAD, PAD], [PAD] * 3],
    ]
    assert torch.equal(mask.bool(), sentences != PAD)


@pytest.mark.parametrize("seed", range(5))
def test_split_sentences_matches_a_python_reference(seed):
    generator = torch.Generator().manual_seed(seed)
    lengths = torch.randint(0, 16, (6,), generator=generator)
    input_ids = torch.randint(3, 9, (6, 16), generator=generator)  # ids 5 (SEP) are frequent, runs included
    attention_mask = (torch.arange(16)[None] < lengths[:, None]).long()
    input_ids[attention_mask == 0] = SEP  # padding is never a word or a delimiter, whatever its id
    sentences, mask = split_sentences(input_ids, attention_mask, torch.tensor([SEP]))
    for row in range(6):
        expected = reference_split(input_ids[row, :lengths[row]].tolist(), {SEP})
        got = [sentence[m.bool()].tolist() for sentence, m in zip(sentences[row], mask[row]) if m.any()]
        assert got == expected
        assert not mask[row, len(expected):].any()  # the non-empty sentences come first
    assert sentences.shape[1] == max(1, max(len(reference_split(input_ids[r, :lengths[r]].tolist(), {SEP}))
                                            for r in range(6)))


# 2. the hierarchy --------------------------------------------------------------------------------------


def test_hierarchical_forward_is_the_composition_of_sentence_by_sentence_steps():
    model = classifier().double()  # float64: padded sentences and each sentence alone round alike
    input_ids, attention_mask = documents()
    with torch.no_grad():
        out = model(input_ids=input_ids, attention_mask=attention_mask, output_attentions=True)
        word_weights_out, sentence_weights_out = out.attentions
        sentences, mask = model.split_sentences(input_ids, attention_mask)
        for row in range(3):
            vectors, word_weights = [], []
            for words, word_mask in zip(sentences[row], mask[row]):
                if not word_mask.any():
                    continue
                real_words = words[word_mask.bool()][None]  # each sentence encoded alone, no padding
                annotations = model.model(input_ids=real_words).last_hidden_state
                vector, alpha = model.word_attention(annotations, torch.ones(1, real_words.shape[1], dtype=torch.bool))
                vectors.append(vector)
                word_weights.append(alpha[0])
            sentence_annotations = model.sentence_encoder(inputs_embeds=torch.stack(vectors, 1)).last_hidden_state
            document, beta = model.sentence_attention(sentence_annotations,
                                                      torch.ones(1, len(vectors), dtype=torch.bool))
            assert_float64_close(out.logits[row], model.classifier(document)[0])
            assert_float64_close(sentence_weights_out[row, :len(vectors)], beta[0], scale=1.0)  # weights ≤ 1
            assert torch.equal(sentence_weights_out[row, len(vectors):], torch.zeros(3 - len(vectors)))
            for index, alpha in enumerate(word_weights):
                assert_float64_close(word_weights_out[row, index, :len(alpha)], alpha, scale=1.0)
                assert torch.equal(word_weights_out[row, index, len(alpha):], torch.zeros(3 - len(alpha)))


def test_hierarchical_accepts_sentences_and_reports_masks():
    model = classifier().double()  # float64: 4 documents of sentences and 3 flat ones run other shapes
    input_ids, attention_mask = documents()
    sentences, mask = model.split_sentences(input_ids, attention_mask)
    sentences, mask = torch.cat([sentences, torch.full((1, 3, 3), PAD)]), torch.cat([mask, torch.zeros(1, 3, 3,
                                                                                                          dtype=torch.long)])
    with torch.no_grad():
        flat_input = model(input_ids=input_ids, attention_mask=attention_mask, output_attentions=True)
        out = model(input_ids=sentences, attention_mask=mask, output_attentions=True, output_hidden_states=True)
    assert isinstance(out, BahdanauSequenceClassifierOutput)
    assert_float64_close(out.logits[:3], flat_input.logits)
    word_weights, sentence_weights = out.attentions
    assert word_weights.shape == (4, 3, 3) and sentence_weights.shape == (4, 3)
    word_annotations, sentence_annotations = out.hidden_states
    assert word_annotations.shape == (4, 3, 3, 16) and sentence_annotations.shape == (4, 3, 16)
    assert torch.isfinite(out.logits).all() and torch.isfinite(word_weights).all()
    assert torch.equal(word_weights[~mask.bool()], torch.zeros(int((~mask.bool()).sum())))  # exactly 0
    real_sentences = mask.bool().any(-1)
    assert_close(word_weights.sum(-1)[real_sentences], torch.ones(int(real_sentences.sum())).double(),
                 atol=softmax_sum_tolerance(3, torch.float64), rtol=0)  # at most 3 words
    assert torch.equal(sentence_weights[~real_sentences], torch.zeros(int((~real_sentences).sum())))
    assert_close(sentence_weights.sum(-1)[:3], torch.ones(3, dtype=torch.float64),
                 atol=softmax_sum_tolerance(3, torch.float64), rtol=0)  # at most 3 sentences
    # an empty document: zero weights, zero document vector, logits = the classifier's bias (W 0 + b is b exactly)
    assert torch.equal(sentence_weights[3], torch.zeros(3))
    assert torch.equal(out.logits[3], model.classifier.bias)


def test_hierarchical_input_errors():
    model = classifier(sentence_separator_token_id=None)
    input_ids, attention_mask = documents()
    with pytest.raises(ValueError, match="sentence_separator_token_id"):
        model(input_ids=input_ids, attention_mask=attention_mask)
    with pytest.raises(ValueError, match=r"\[batch, tokens\] or \[batch, sentences, words\]"):
        model(input_ids=input_ids[:, None, None])
    with pytest.raises(ValueError, match="sentence_separator_token_id.*vocab_size"):
        BahdanauEncoderConfig(vocab_size=10, sentence_separator_token_id=10)


@pytest.mark.parametrize("value, message", [
    (2, r"`attention_mask` must hold 0 and 1 only \(or False and True\); row 0 is \[2, 1, 1, 1, 1, 1, 1, 1, 1\]\."),
    (0, r"`attention_mask` must mark each row's real tokens as one contiguous run of ones .*; row 0 has a gap: "
        r"\[1, 1, 1, 0, 1, 1, 1, 1, 1\]\."),
])
def test_a_bad_document_mask_is_refused_before_the_split(value, message):
    """[B, S] ids are split into sentences after their mask is checked as every head checks it: a 2, or a gap."""
    model = classifier()
    input_ids, attention_mask = documents()
    attention_mask[0, 0 if value == 2 else 3] = value
    for split in (model.split_sentences, lambda ids, mask: model(input_ids=ids, attention_mask=mask)):
        with pytest.raises(ValueError, match=message):
            split(input_ids, attention_mask)


def test_a_bad_sentence_mask_is_refused():
    model = classifier()
    sentences, mask = model.split_sentences(*documents())
    mask[0, 1, 0] = 2
    with pytest.raises(ValueError, match=r"`attention_mask` must hold 0 and 1 only"):
        model(input_ids=sentences, attention_mask=mask)


def test_several_sentence_separators_each_end_a_sentence():
    """With sentence_separator_token_id = [".", "?"], "a b ? c . d </s>" is the three sentences "a b", "c", "d" (the
    delimiters are dropped); with "." alone, two; a bad id in the list is refused by name."""
    question = 6
    model = classifier(sentence_separator_token_id=[SEP, question])
    input_ids = torch.tensor([[11, 12, question, 13, SEP, 14, EOS]])
    sentences, mask = model.split_sentences(input_ids)
    assert [row[m.bool()].tolist() for row, m in zip(sentences[0], mask[0]) if m.any()] == [[11, 12], [13], [14]]
    assert classifier(sentence_separator_token_id=SEP).split_sentences(input_ids)[1][0].any(-1).sum() == 2
    with pytest.raises(ValueError, match=r"`sentence_separator_token_id` must be a token id in \[0, vocab_size=10\)"):
        BahdanauEncoderConfig(vocab_size=10, sentence_separator_token_id=[5, 10])


def test_flat_pooling_and_gradients():
    model = classifier(hierarchical=False)
    input_ids, attention_mask = padded_batch(LENGTHS)
    with torch.no_grad():
        out = model(input_ids=input_ids, attention_mask=attention_mask, output_attentions=True)
        annotations = model.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        document, alpha = model.word_attention(annotations, attention_mask.bool())
    (word_weights,) = out.attentions  # flat: α only
    assert word_weights.shape == input_ids.shape
    # the same modules on the same tensors, shapes and memory: the same kernels give the same bits
    assert torch.equal(word_weights, alpha)
    assert torch.equal(word_weights[attention_mask == 0], torch.zeros(int((attention_mask == 0).sum())))
    assert_close(out.logits, model.classifier(document), atol=0, rtol=0)
    with torch.no_grad():  # the weights are only returned on request (Trainer collects every returned tensor)
        assert model(input_ids=input_ids, attention_mask=attention_mask).attentions is None

    hierarchical = classifier().train()
    input_ids, attention_mask = documents()
    hierarchical(input_ids=input_ids, attention_mask=attention_mask, labels=torch.tensor([0, 1, 2])).loss.backward()
    for name, parameter in hierarchical.named_parameters():
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name


@pytest.mark.parametrize("hierarchical", [False, True], ids=["flat", "han"])
def test_pooling_weights_are_the_attentions_field_and_the_old_names_warn(hierarchical):
    model = classifier(hierarchical)
    input_ids, attention_mask = documents() if hierarchical else padded_batch(LENGTHS)
    inputs = dict(input_ids=input_ids, attention_mask=attention_mask, labels=torch.tensor([2, 0, 1]),
                  output_attentions=True)
    with torch.no_grad():
        out = model(**inputs)
        as_tuple = model(**inputs, return_dict=False)
    assert isinstance(out, SequenceClassifierOutput) and list(out.keys()) == ["loss", "logits", "attentions"]
    assert [tuple(weights.shape) for weights in out.attentions] == ([(3, 3, 3), (3, 3)] if hierarchical else [(3, 9)])
    # the same computation on the same weights and inputs: the same kernels give the same bits
    assert len(as_tuple) == 3 and all(torch.equal(weights, expected)
                                      for weights, expected in zip(as_tuple[2], out.attentions, strict=True))
    with pytest.warns(FutureWarning, match=r"`word_attentions` is deprecated: read `attentions\[0\]`"):
        assert out.word_attentions is out.attentions[0]
    with pytest.warns(FutureWarning, match=r"`sentence_attentions` is deprecated: read `attentions\[1\]`"):
        sentence_weights = out.sentence_attentions
    assert sentence_weights is (out.attentions[1] if hierarchical else None)


# 3. problem types --------------------------------------------------------------------------------------


def test_single_label_loss_and_problem_type():
    model = classifier().double()  # float64: F.cross_entropy and the loss by hand sum in other orders
    input_ids, attention_mask = documents()
    labels = torch.tensor([2, 0, 1])
    with torch.no_grad():
        out = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
    assert model.config.problem_type == "single_label_classification"
    log_probs = out.logits.log_softmax(-1)
    assert_float64_close(out.loss, -(log_probs[0, 2] + log_probs[1, 0] + log_probs[2, 1]) / 3)


def test_multi_label_loss_and_problem_type():
    model = classifier().double()  # float64: BCE with logits and the loss by hand round apart
    input_ids, attention_mask = documents()
    labels = torch.tensor([[1.0, 0.0, 1.0], [0.0, 0.0, 0.0], [1.0, 1.0, 0.0]], dtype=torch.float64)
    with torch.no_grad():
        out = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
    assert model.config.problem_type == "multi_label_classification"
    p = torch.sigmoid(out.logits)
    expected = -(labels * p.log() + (1 - labels) * (1 - p).log()).mean()
    assert_float64_close(out.loss, expected)


@pytest.mark.parametrize("num_labels", [1, 2])
def test_regression_loss_and_problem_type(num_labels):
    model = classifier(num_labels=num_labels, problem_type="regression" if num_labels > 1 else None).double()
    input_ids, attention_mask = documents()  # float64: MSE and the loss by hand sum in other orders
    labels = torch.tensor([0.5, -1.0, 2.0] if num_labels == 1 else [[0.5, 1.0], [0.0, -1.0], [2.0, 3.0]],
                          dtype=torch.float64)
    with torch.no_grad():
        out = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
    assert model.config.problem_type == "regression"
    assert out.logits.shape == (3, num_labels)
    assert_float64_close(out.loss, ((out.logits - labels.view(3, num_labels)) ** 2).mean())


# 4. the seq2seq checkpoint -----------------------------------------------------------------------------


@pytest.mark.parametrize("hierarchical", [False, True], ids=["flat", "han"])
def test_loads_the_encoder_of_a_seq2seq_checkpoint(hierarchical, tmp_path):
    seq2seq = tiny_model("rnnsearch")
    seq2seq.save_pretrained(tmp_path)
    model, info = BahdanauForSequenceClassification.from_pretrained(
        tmp_path, num_labels=4, hierarchical=hierarchical, sentence_separator_token_id=SEP, output_loading_info=True
    )
    head = {name for name in model.state_dict() if not name.startswith("model.")}
    assert info["missing_keys"] == head
    assert any(name.startswith("sentence_encoder.") for name in head) is hierarchical
    encoder, seq2seq_encoder = model.model.encoder.state_dict(), seq2seq.model.encoder.state_dict()
    assert encoder.keys() == seq2seq_encoder.keys()
    assert all(torch.equal(encoder[key], seq2seq_encoder[key]) for key in encoder)
    assert model.config.vocab_size == VOCAB and model.config.num_labels == 4


# 5. the picture ----------------------------------------------------------------------------------------


def test_plot_document_attention_shades_words_and_sentences(tmp_path):
    from matplotlib import colormaps

    from hf_bahdanau.pictures import plot_document_attention

    sentences = [["the", "coach", "smiled"], ["rain", "today"]]
    word_weights = torch.tensor([[0.2, 0.7, 0.1], [0.4, 0.6, 0.0]])
    sentence_weights = torch.tensor([0.75, 0.25])
    figure = plot_document_attention(word_weights, sentence_weights, sentences, path=tmp_path / "doc.png", title="x")
    texts = figure.axes[0].texts
    assert [text.get_text() for text in texts] == ["0.75", "the", "coach", "smiled", "0.25", "rain", "today"]
    colours = [tuple(text.get_bbox_patch().get_facecolor()) for text in texts]
    reds, blues = colormaps["Reds"], colormaps["Blues"]
    assert colours == [reds(0.75), blues(0.2), blues(0.7), blues(0.1), reds(0.25), blues(0.4), blues(0.6)]
    assert (tmp_path / "doc.png").stat().st_size > 1000
    with pytest.raises(ValueError, match="at most W words"):
        plot_document_attention(word_weights[:, :2], sentence_weights, sentences)


# 6. the tagger's fields ----------------------------------------------------------------------------------


@pytest.mark.parametrize("token_attention_type", ["context_vector", "general"])
def test_a_token_attention_is_refused_by_name_the_classifier_pools_with_pooling_type(token_attention_type):
    """The classifier reads ``pooling_type``, never ``token_attention_type``: a token attention set for it would be
    silently ignored (flat and hierarchical alike)."""
    for hierarchical in (False, True):
        config = tiny_encoder_config(num_labels=3, hierarchical=hierarchical,
                                     token_attention_type=token_attention_type)
        with pytest.raises(ValueError, match=rf"`token_attention_type='{token_attention_type}'` is read by the tagger "
                                             r"only: the sequence classifier pools with `pooling_type`, one of "
                                             r"\['context_vector', 'self_attentive', 'multi_dimensional', 'final_state'\] \(here "
                                             r"'context_vector'\); leave `token_attention_type` at its default "
                                             r"'additive'\."):
            BahdanauForSequenceClassification(config)
