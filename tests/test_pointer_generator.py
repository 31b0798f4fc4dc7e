"""The pointer-generator (copy_attention): its mixture against hand-computed values, its fused training loss, the
extended vocabulary from text to text, and the errors it raises. The model against the papers' equations in every
score x style x scope x mode: tests/test_scope.py's sweep; generate(): tests/test_generation.py's variants."""

import math

import pytest
import torch
from torch.testing import assert_close

from conftest import PAD, VOCAB, padded_batch, random_labels, tiny_model
from hf_bahdanau.modeling.collators import DataCollatorForCopying
from hf_bahdanau.modeling.copying import decode_with_copies, encode_with_copies
from hf_bahdanau.modeling.translation import translate
from hf_bahdanau.modeling.loss import linear_cross_entropy
from hf_bahdanau.modeling.pointer_generator import CopySource, copy_loss_terms, mixture_log_probs
from training.common.tokenization import train_tokenizer

UNK = 3  # the configs' unk_token_id


def test_the_mixture_equals_the_hand_computed_distribution():
    """V = 3, logits (0, log 2, log 5): P_vocab = (1/8, 2/8, 5/8); g = 0: p_gen = 1/2; source ids (2, 4, 2) with
    α = (0.5, 0.3, 0.2): copy(2) = 0.7, copy(4) = 0.3 (an extended id); Z = 1.
    P = (1/16, 2/16, 5/16 + 0.35, 0, 0.15)."""
    logits = torch.tensor([[[0.0, math.log(2), math.log(5)]]], dtype=torch.float64)
    weights = torch.tensor([[[0.5, 0.3, 0.2]]], dtype=torch.float64)
    log_probs = mixture_log_probs(logits, torch.zeros(1, 1, dtype=torch.float64), weights, torch.tensor([[2, 4, 2]]),
                                  width=5)
    expected = torch.tensor([1 / 16, 2 / 16, 5 / 16 + 0.35, 0.0, 0.15], dtype=torch.float64).log()
    assert_close(log_probs[0, 0], expected, atol=1e-15, rtol=0)


def test_weights_that_do_not_sum_to_one_are_normalised():
    """α = (0.2, 0.2) (a local window's Gaussian), p_gen = σ(log 3) = 3/4, P_vocab uniform over 2:
    Z = 3/4 + 1/4 · 0.4 = 0.85; P(0) = (3/8 + 0.05) / 0.85, P(1) = 3/8 / 0.85, P(2) = 0.05 / 0.85."""
    log_probs = mixture_log_probs(torch.zeros(1, 1, 2, dtype=torch.float64),
                                  torch.full((1, 1), math.log(3), dtype=torch.float64),
                                  torch.tensor([[[0.2, 0.2]]], dtype=torch.float64), torch.tensor([[0, 2]]), width=3)
    expected = torch.tensor([3 / 8 + 0.05, 3 / 8, 0.05], dtype=torch.float64) / 0.85
    assert_close(log_probs[0, 0].exp(), expected, atol=1e-15, rtol=0)
    assert_close(log_probs.exp().sum(), torch.tensor(1.0, dtype=torch.float64), atol=1e-15, rtol=0)


def test_the_fused_mixture_loss_and_its_gradients_equal_the_plain_computation():
    """linear_cross_entropy(mixture=copy_loss_terms(...)) = −Σ log P(y) from mixture_log_probs, with the gradients of
    the pre-output, W_o, b_o, the gate and the weights; labels beyond the vocabulary (copied words) included."""
    generator = torch.Generator().manual_seed(0)
    rows, steps, source, hidden_size, vocab = 3, 4, 5, 6, 7
    hidden = torch.randn(rows, steps, hidden_size, dtype=torch.float64, generator=generator, requires_grad=True)
    weight = torch.randn(vocab, hidden_size, dtype=torch.float64, generator=generator, requires_grad=True)
    bias = torch.randn(vocab, dtype=torch.float64, generator=generator, requires_grad=True)
    gate = torch.randn(rows, steps, dtype=torch.float64, generator=generator, requires_grad=True)
    scores = torch.randn(rows, steps, source, dtype=torch.float64, generator=generator, requires_grad=True)
    copy_ids = torch.randint(3, vocab + 2, (rows, source), generator=generator)
    labels = copy_ids[:, :steps].clone()  # every label is copyable; some are ≥ V
    labels[0, 0], labels[2, 3] = 1, -100

    def plain():
        log_probs = mixture_log_probs(hidden @ weight.t() + bias, gate, scores.softmax(-1), copy_ids, vocab + 2)
        kept = labels != -100
        return -log_probs[kept].gather(-1, labels[kept][:, None]).sum()

    def fused():
        terms = copy_loss_terms(gate, scores.softmax(-1), copy_ids, labels)
        return linear_cross_entropy(hidden, weight, bias, labels, chunk_size=5, mixture=terms)

    parameters = (hidden, weight, bias, gate, scores)
    expected_loss, actual_loss = plain(), fused()
    expected = torch.autograd.grad(expected_loss, parameters)
    actual = torch.autograd.grad(actual_loss, parameters)
    assert_close(actual_loss, expected_loss, atol=1e-12, rtol=0)
    for name, got, want in zip(("hidden", "weight", "bias", "gate", "weights"), actual, expected):
        assert_close(got, want, atol=1e-12, rtol=0, msg=name)


def test_the_model_loss_is_the_same_fused_in_training_and_plain_in_eval():
    model = tiny_model("rnnsearch", copy_attention=True).double()
    input_ids, mask = padded_batch()
    input_ids[0, 2] = UNK  # a word the vocabulary lacks: copied as id VOCAB
    copy_ids = input_ids.clone()
    copy_ids[0, 2] = VOCAB
    labels = random_labels(3, 5)
    labels[0, 1] = VOCAB
    losses = []
    for training in (True, False):
        model.train(training)
        loss = model(input_ids=input_ids, attention_mask=mask, labels=labels, copy_input_ids=copy_ids).loss
        gate_gradient = torch.autograd.grad(loss, model.model.decoder.generation_gate.weight)[0]
        losses.append((loss.detach(), gate_gradient))
    assert_close(losses[0][0], losses[1][0], atol=1e-12, rtol=0)
    assert_close(losses[0][1], losses[1][1], atol=1e-12, rtol=0)


def test_p_gen_is_returned_with_the_attentions():
    model = tiny_model("rnnsearch", copy_attention=True)
    input_ids, mask = padded_batch()
    decoder_input_ids = random_labels(3, 4)
    out = model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=decoder_input_ids, output_attentions=True)
    gate = model.model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=decoder_input_ids).p_gen_logits
    assert out.p_gen.shape == (3, 4) and ((out.p_gen > 0) & (out.p_gen < 1)).all()
    assert_close(out.p_gen, torch.sigmoid(gate))
    assert model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=decoder_input_ids).p_gen is None


# the extended vocabulary, from text to text ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def word_tokenizer():
    return train_tokenizer(["meeting with Ann Lee on 3 March 2015", "Ann Lee | 2015-03-03"], kind="word")


def test_copied_words_keep_the_texts_own_spacing(word_tokenizer):
    """A copied piece glued to the one before it ("Souza" in "D'Souza", "Carter" in "Bonham-Carter") decodes glued:
    the labels of a target decode to the target itself."""
    sources = ["meeting with Fang D'Souza on 3 March", "lunch with Ann Bonham-Carter."]
    targets = ["Fang D'Souza | 2015-03-03", "Ann Bonham-Carter."]
    encoded = encode_with_copies(word_tokenizer, sources, targets)
    assert encoded.source_oovs[0] == ["Fang", "D", "‿'", "‿Souza"]
    assert decode_with_copies(word_tokenizer, encoded["labels"], encoded.source_oovs) == targets


def test_source_words_beyond_the_vocabulary_get_ids_of_their_example(word_tokenizer):
    vocab = len(word_tokenizer)
    encoded = encode_with_copies(word_tokenizer, ["meeting with Ngozi Adeyemi on 3 March", "lunch with Ngozi"],
                                 ["Ngozi Adeyemi | 2015", "Ngozi Obi"])
    unk = word_tokenizer.unk_token_id
    assert encoded.source_oovs == [["Ngozi", "Adeyemi"], ["lunch", "Ngozi"]]
    assert encoded["input_ids"][0][2:4] == [unk, unk] and encoded["copy_input_ids"][0][2:4] == [vocab, vocab + 1]
    assert encoded["copy_input_ids"][1][:3] == [vocab, word_tokenizer.convert_tokens_to_ids("with"), vocab + 1]
    assert encoded["labels"][0][:2] == [vocab, vocab + 1]
    assert encoded["labels"][1][:2] == [vocab + 1, unk]  # "Obi" is in neither the vocabulary nor the source
    texts = decode_with_copies(word_tokenizer, encoded["labels"], encoded.source_oovs)
    assert texts == ["Ngozi Adeyemi | 2015", "Ngozi"]  # <unk> is a special token: skipped
    with pytest.raises(ValueError, match=r"`sequences\[0\]` holds id 17, beyond the vocabulary \(15\)"):
        decode_with_copies(word_tokenizer, [[vocab + 2]], [["Ngozi", "Adeyemi"]])


@pytest.mark.parametrize("side", ["right", "left"])
def test_the_collator_pads_copy_ids_like_input_ids(word_tokenizer, side):
    word_tokenizer.padding_side = side
    try:
        encoded = encode_with_copies(word_tokenizer, ["meeting with Ngozi Adeyemi", "Ngozi"], ["Ngozi", "Lee"])
        rows = [{key: encoded[key][row] for key in encoded} for row in range(2)]
        batch = DataCollatorForCopying(word_tokenizer)(rows)
    finally:
        word_tokenizer.padding_side = "right"
    assert batch["copy_input_ids"].shape == batch["input_ids"].shape == (2, 5)
    real = batch["attention_mask"].bool()
    assert batch["copy_input_ids"][real].tolist() == sum(encoded["copy_input_ids"], [])
    assert (batch["copy_input_ids"][~real] == PAD).all() and "source_oovs" not in batch


def copying_model(tokenizer):
    """p_gen = 0 and a local-m window of one position with equal scores: step t copies source token t, so the output
    is the source, words beyond the vocabulary included."""
    model = tiny_model("luong-general", vocab_size=len(tokenizer), attention_scope="local-m", local_window=1,
                       copy_attention=True)
    with torch.no_grad():
        model.model.decoder.attention.key_proj.weight.zero_()
        model.model.decoder.generation_gate.weight.zero_()
        model.model.decoder.generation_gate.bias.fill_(-50.0)
    return model


def test_a_copied_word_the_vocabulary_lacks_comes_back_as_text(word_tokenizer):
    model = copying_model(word_tokenizer)
    texts = ["meeting with Ngozi Adeyemi", "Ann Obi"]
    for num_beams in (1, 3):
        results = translate(model, word_tokenizer, texts, num_beams=num_beams, max_new_tokens=8,
                            output_alignments=True)
        assert [result.translation for result in results] == texts
        assert results[0].target_tokens == ["meeting", "with", "Ngozi", "Adeyemi", "</s>"]
        assert (results[0].p_gen < 1e-20).all() and results[0].p_gen.shape == (5,)
    from hf_bahdanau import BahdanauTranslationPipeline

    pipe = BahdanauTranslationPipeline(model=model, tokenizer=word_tokenizer)
    records = pipe(texts, max_new_tokens=8, return_alignments=True, batch_size=2)
    assert [record["translation_text"] for record in records] == texts
    assert records[1]["alignment"]["source_tokens"] == ["Ann", "Obi", "</s>"]
    assert len(records[1]["alignment"]["p_gen"]) == 3


def test_bad_copy_inputs_are_refused_by_name(word_tokenizer):
    model = tiny_model("rnnsearch", copy_attention=True)
    input_ids, mask = padded_batch()
    with pytest.raises(ValueError, match="`copy_input_ids` are the ids a pointer-generator copies from"):
        tiny_model("rnnsearch")(input_ids=input_ids, attention_mask=mask, copy_input_ids=input_ids,
                                decoder_input_ids=input_ids)
    with pytest.raises(ValueError, match=r"`copy_input_ids` must have the shape of `input_ids` \[3, 7\], got \[3, 6\]"):
        model(input_ids=input_ids, attention_mask=mask, copy_input_ids=input_ids[:, :6], decoder_input_ids=input_ids)
    with pytest.raises(ValueError, match=r"`copy_input_ids` must hold ids in \[0, "):
        model(input_ids=input_ids, attention_mask=mask, copy_input_ids=-input_ids, decoder_input_ids=input_ids)
    labels = random_labels(3, 4)
    labels[1, 2] = VOCAB  # row 1's source holds no word beyond the vocabulary
    input_ids[0, 0] = UNK
    copy_ids = input_ids.clone()
    copy_ids[0, 0] = VOCAB
    with pytest.raises(ValueError, match=r"`labels\[1, 2\]` = 40 is beyond the vocabulary \(40\) and not among row 1"):
        model(input_ids=input_ids, attention_mask=mask, copy_input_ids=copy_ids, labels=labels)
    with pytest.raises(ValueError, match=r"`labels` must hold ids in \[0, 41\)"):
        model(input_ids=input_ids, attention_mask=mask, copy_input_ids=copy_ids, labels=labels + 5)
    with pytest.raises(ValueError, match=r"`decoder_input_ids` must hold ids in \[0, 41\)"):
        model(input_ids=input_ids, attention_mask=mask, copy_input_ids=copy_ids, decoder_input_ids=copy_ids + 2)
    with pytest.raises(ValueError, match="pass `input_ids` or `copy_input_ids`"):
        model(inputs_embeds=torch.randn(3, 7, 12), attention_mask=mask, decoder_input_ids=input_ids)


# copy_input_ids: a valid extended-vocabulary encoding of input_ids, checked before the [.., V + n] tensors ----------


def test_ids_from_encode_with_copies_are_accepted_left_and_right_padded(word_tokenizer):
    vocab = len(word_tokenizer)
    texts = ["meeting with Ngozi Adeyemi on 3 March", "Obi", "lunch with Ann Lee"]
    for side in ("right", "left"):
        word_tokenizer.padding_side = side
        try:
            encoded = encode_with_copies(word_tokenizer, texts, return_tensors="pt")
        finally:
            word_tokenizer.padding_side = "right"
        source = CopySource.of(encoded["copy_input_ids"], vocab, encoded["input_ids"], word_tokenizer.unk_token_id,
                               encoded["attention_mask"])
        assert source.width == vocab + 2  # row 0 holds two words the vocabulary lacks


@pytest.mark.parametrize("row, message", [
    ([VOCAB + 1, 5], r"`copy_input_ids\[0, 0\]` = 41 is not an id of the extended vocabulary: .* at most 40\."),
    ([VOCAB, VOCAB + 2], r"`copy_input_ids\[0, 1\]` = 42 .* at most 41\."),
    ([VOCAB, 2**50], r"`copy_input_ids\[0, 1\]` = 1125899906842624 .* at most 41\."),
    ([2**63 - 1, 5], r"`copy_input_ids\[0, 0\]` = 9223372036854775807 .* at most 40\."),
])
def test_ids_beyond_the_rows_extended_vocabulary_are_refused_before_any_allocation(row, message):
    with pytest.raises(ValueError, match=message):
        CopySource.of(torch.tensor([row]), VOCAB)


def test_the_model_and_generate_refuse_a_huge_copy_id_by_name():
    """2**50 used to size a [N, T, 2**50] tensor (petabytes); it is refused in forward() and generate()."""
    model = tiny_model("rnnsearch", copy_attention=True)
    input_ids, mask = padded_batch()
    input_ids[1, 2] = UNK
    copy_ids = input_ids.clone()
    copy_ids[1, 2] = 2**50
    message = r"`copy_input_ids\[1, 2\]` = 1125899906842624 is not an id of the extended vocabulary"
    with pytest.raises(ValueError, match=message):
        model(input_ids=input_ids, attention_mask=mask, copy_input_ids=copy_ids, labels=random_labels(3, 4))
    with pytest.raises(ValueError, match=message):
        model.generate(input_ids=input_ids, attention_mask=mask, copy_input_ids=copy_ids, max_new_tokens=3)


def test_copy_ids_that_disagree_with_input_ids_are_refused():
    input_ids = torch.tensor([[5, UNK, 7, PAD], [UNK, UNK, 9, 8]])
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1]])
    valid = torch.tensor([[5, VOCAB, 7, PAD], [VOCAB, VOCAB + 1, 9, 8]])
    assert CopySource.of(valid, VOCAB, input_ids, UNK, mask).width == VOCAB + 2
    padding = valid.clone()
    padding[0, 3] = 6  # a padding column: never attended, not compared
    assert CopySource.of(padding, VOCAB, input_ids, UNK, mask).width == VOCAB + 2
    in_vocabulary = valid.clone()
    in_vocabulary[1, 2] = 10
    with pytest.raises(ValueError, match=r"`copy_input_ids\[1, 2\]` = 10 does not match `input_ids\[1, 2\]` = 9: "
                                         r"below the vocabulary size \(40\) the two must be equal\."):
        CopySource.of(in_vocabulary, VOCAB, input_ids, UNK, mask)
    known_word = input_ids.clone()
    known_word[1, 1] = 12
    with pytest.raises(ValueError, match=r"`copy_input_ids\[1, 1\]` = 41 does not match `input_ids\[1, 1\]` = 12: "
                                         r"an id ≥ the vocabulary size \(40\) is a word the vocabulary lacks, whose "
                                         r"input id is the unknown token \(3\)\."):
        CopySource.of(valid, VOCAB, known_word, UNK, mask)


def test_the_model_and_generate_refuse_copy_ids_that_disagree_with_input_ids():
    """generate() checks the pair before decoding: its steps see only the copy ids."""
    model = tiny_model("rnnsearch", copy_attention=True)
    input_ids, mask = padded_batch()
    copy_ids = input_ids.clone()
    copy_ids[0, 1] = int(input_ids[0, 1]) % (VOCAB - 4) + 4  # another word of the vocabulary
    message = rf"`copy_input_ids\[0, 1\]` = {int(copy_ids[0, 1])} does not match `input_ids\[0, 1\]`"
    with pytest.raises(ValueError, match=message):
        model(input_ids=input_ids, attention_mask=mask, copy_input_ids=copy_ids, labels=random_labels(3, 4))
    with pytest.raises(ValueError, match=message):
        model.generate(input_ids=input_ids, attention_mask=mask, copy_input_ids=copy_ids, max_new_tokens=3)


@pytest.mark.parametrize("num_beams", [1, 2], ids=["greedy", "beam"])
@pytest.mark.parametrize("rows, columns", [(3, 6), (2, 7)], ids=["other length", "other batch"])
def test_generate_refuses_copy_ids_of_another_shape_by_name(num_beams, rows, columns):
    """One check (forward's) on every search path, before the [.., V + n] tensors: was a torch RuntimeError."""
    model = tiny_model("rnnsearch", copy_attention=True)
    input_ids, mask = padded_batch()
    with pytest.raises(ValueError, match=rf"^`copy_input_ids` must have the shape of `input_ids` \[3, 7\], got "
                                         rf"\[{rows}, {columns}\]\.$"):
        model.generate(input_ids=input_ids, attention_mask=mask, copy_input_ids=input_ids[:rows, :columns],
                       max_new_tokens=3, num_beams=num_beams)


def test_generate_copies_the_words_of_encode_with_copies(word_tokenizer):
    """The copying model outputs its source: the ids ≥ V of ``copy_input_ids`` come back from generate()."""
    model = copying_model(word_tokenizer)
    encoded = encode_with_copies(word_tokenizer, ["meeting with Ngozi Adeyemi", "Ann Obi"], return_tensors="pt")
    for num_beams in (1, 3):
        generated = model.generate(**encoded.model_inputs(), max_new_tokens=8, num_beams=num_beams)
        for row, source in enumerate(encoded["copy_input_ids"]):
            length = int(encoded["attention_mask"][row].sum())
            assert generated[row, 1:length + 1].tolist() == source[:length].tolist()
        assert (generated >= len(word_tokenizer)).sum() == 3  # Ngozi, Adeyemi, Obi
