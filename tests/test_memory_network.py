"""The end-to-end memory network (Sukhbaatar et al. 2015): the batched model against the paper's equations one story
at a time (``reference.memory_network``, float64) for every option, position encoding and time indices by hand,
padding of words and of memories, bad inputs and configs, the pipeline. What every head does (zero weight on padding,
a padded batch = each example alone, gradients, the -100 loss, save/load, remote code) is tests/contract/'s."""

import itertools
import logging

import pytest
import torch
from torch.testing import assert_close

from hf_bahdanau import BahdanauMemoryNetworkConfig, BahdanauMemoryNetworkForSequenceClassification, reference
from hf_bahdanau.modeling.memory import BagOfWords, PositionEncoding, memory_times
from hf_bahdanau.modeling.pipeline_memory import BahdanauMemoryQuestionAnsweringPipeline

VOCAB, D = 23, 6
STORIES = [  # word ids per sentence, oldest first; different lengths, one empty story
    [[1, 2, 3], [4, 5], [6, 7, 8, 9], [10]],
    [[11, 12], [13, 14, 15, 16, 17]],
    [],
]
QUESTIONS = [[18, 19, 2], [20, 21], [22]]


def model_for(**options) -> BahdanauMemoryNetworkForSequenceClassification:
    torch.manual_seed(0)
    config = BahdanauMemoryNetworkConfig(vocab_size=VOCAB, hidden_size=D, num_labels=4, memory_size=8, **options)
    return BahdanauMemoryNetworkForSequenceClassification(config).double().eval()


def batch_of(stories, questions, left: bool = False, gap: bool = True) -> dict[str, torch.Tensor]:
    """Words padded on the left or the right of each sentence; with ``gap`` an empty memory slot before each story
    and between its first two sentences (slots without words are no memory)."""
    rows = [[[]] + story[:1] + [[]] + story[1:] if gap else story for story in stories]
    slots, width = max(len(row) for row in rows) + 1, max(len(words) for row in rows for words in row + [[1]]) + 1
    memory_ids = torch.zeros(len(rows), slots, width, dtype=torch.long)
    memory_mask = torch.zeros_like(memory_ids)
    for b, row in enumerate(rows):
        for i, words in enumerate(row):
            columns = slice(width - len(words), width) if left else slice(0, len(words))
            memory_ids[b, i, columns], memory_mask[b, i, columns] = torch.tensor(words, dtype=torch.long), 1
    length = max(map(len, questions)) + 1
    input_ids = torch.zeros(len(questions), length, dtype=torch.long)
    attention_mask = torch.zeros_like(input_ids)
    for b, words in enumerate(questions):
        columns = slice(length - len(words), length) if left else slice(0, len(words))
        input_ids[b, columns], attention_mask[b, columns] = torch.tensor(words), 1
    return dict(input_ids=input_ids, attention_mask=attention_mask, memory_ids=memory_ids,
                memory_attention_mask=memory_mask)


OPTIONS = [dict(weight_tying=tying, sentence_encoding=encoding, temporal_encoding=temporal, linear_start=linear,
                num_hops=hops, answer_token_ids=answers)
           for tying, encoding, temporal, linear, (hops, answers) in itertools.product(
               ("adjacent", "layer_wise"), ("bag_of_words", "position_encoding"), (True, False), (False, True),
               ((3, [3, 5, 7, 9]), (1, None)))]


@pytest.mark.parametrize("options", OPTIONS, ids=lambda options: "-".join(str(value) for value in options.values()))
def test_batched_model_equals_the_papers_equations(options):
    """Logits and every hop's attention of a padded batch equal the paper's equations story by story (float64: the
    sums are over at most a few hundred products of values below 10, so 1e-12 is far above their rounding)."""
    model = model_for(**options)
    for left in (False, True):
        batch = batch_of(STORIES, QUESTIONS, left=left)
        with torch.no_grad():
            output = model(**batch, output_attentions=True, output_hidden_states=True)
        real = batch["memory_attention_mask"].any(-1)
        for b, (story, question) in enumerate(zip(STORIES, QUESTIONS)):
            with torch.no_grad():
                expected_logits, expected_weights = reference.memory_network(model, story, question)
            assert_close(output.logits[b], expected_logits, atol=1e-12, rtol=0)
            for hop, weights in enumerate(output.attentions):
                assert_close(weights[b][real[b]], expected_weights[hop], atol=1e-12, rtol=0)
                assert torch.all(weights[b][~real[b]] == 0)
        assert len(output.hidden_states) == options["num_hops"] + 1


def test_position_encoding_weights_by_hand():
    """l_kj = (1 − j/J) − (k/d)(1 − 2j/J) for J = 3 real words, d = 2, counted after left padding."""
    mask = torch.tensor([[False, True, True, True]])
    expected = torch.tensor([[0, 0], [1 / 2, 1 / 3], [1 / 2, 2 / 3], [1 / 2, 1]], dtype=torch.float64)
    assert_close(PositionEncoding().word_weights(mask, 2, torch.float64)[0], expected, atol=1e-15, rtol=0)
    assert torch.equal(BagOfWords().word_weights(mask, 2, torch.float64)[0, :, 0], mask[0].double())


def test_position_encoding_reads_word_order_and_bag_of_words_does_not():
    swapped = [[[2, 1, 3], [4, 5], [6, 7, 8, 9], [10]]]
    for encoding, same in (("bag_of_words", True), ("position_encoding", False)):
        model = model_for(sentence_encoding=encoding)
        with torch.no_grad():
            logits = [model(**batch_of(stories, QUESTIONS[:1])).logits for stories in (STORIES[:1], swapped)]
        assert torch.allclose(*logits, atol=1e-12, rtol=0) == same


def test_time_indices_count_the_memories_after_each():
    mask = torch.tensor([[True, False, True, True, False], [False] * 5])
    assert memory_times(mask).tolist() == [[2, 0, 1, 0, 0], [0] * 5]


def test_random_noise_spreads_the_times_like_inserted_empty_memories():
    """With r = 0.5 a memory of n = 6 gets up to ⌈3⌉ blanks: times strictly decrease to the most recent, start at
    or above the exact times, stay below n + 3, and every number of blanks 0 … 3 occurs."""
    torch.manual_seed(0)
    mask = torch.ones(4000, 6, dtype=torch.bool)
    times = memory_times(mask, random_noise=0.5)
    exact = memory_times(mask)
    assert torch.all(times[:, :-1] > times[:, 1:]) and torch.all(times >= exact) and torch.all(times < 9)
    assert set(times[:, 0].tolist()) == {5, 6, 7, 8}
    assert memory_times(mask[:2], random_noise=0.5, memory_size=6).max() <= 5


def test_random_noise_acts_in_training_only():
    model = model_for(random_noise=0.5)
    batch = batch_of(STORIES, QUESTIONS)
    with torch.no_grad():
        evaluation = model(**batch).logits
        model.train()
        trained = [model(**batch).logits for _ in range(5)]
    assert any(not torch.allclose(logits, evaluation) for logits in trained)


def test_an_empty_memory_reads_nothing():
    """No memory sentence: every hop's attention is 0 and u^{K+1} = u^1 (adjacent tying adds o = 0; layer-wise tying:
    H^K u^1), the answer to the question alone."""
    batch = batch_of([[]], [[5, 6]], gap=False)
    for tying in ("adjacent", "layer_wise"):
        model = model_for(weight_tying=tying)
        with torch.no_grad():
            output = model(**batch, output_attentions=True, output_hidden_states=True)
            expected = output.hidden_states[0]
            for _ in range(model.config.num_hops if tying == "layer_wise" else 0):
                expected = model.memory_network.tying.query_map(expected)
        assert all(torch.all(weights == 0) for weights in output.attentions)
        assert torch.equal(output.hidden_states[-1], expected)


def test_tied_answers_are_the_last_output_embedding():
    model = model_for(answer_token_ids=[3, 5, 7, 9])
    assert model.answer is None
    assert torch.equal(model.answer_weight(), model.memory_network.tying.word_tables[3].weight[[3, 5, 7, 9]])
    assert model_for(weight_tying="layer_wise", answer_token_ids=[3, 5, 7, 9]).answer is not None


@pytest.mark.parametrize("change, message", [
    (dict(memory_ids=torch.ones(3, 4, dtype=torch.long)), r"`memory_ids` must be \[batch, sentences, words\]"),
    (dict(memory_ids=torch.full((3, 2, 2), VOCAB)), rf"`memory_ids` must hold ids in \[0, {VOCAB}\), got {VOCAB}"),
    (dict(input_ids=torch.full((3, 2), -1)), r"`input_ids` must hold ids in \[0, 23\), got -1"),
    (dict(memory_ids=torch.ones(2, 2, 2, dtype=torch.long), memory_attention_mask=None),
     "one memory per question: 3 questions"),
    (dict(memory_attention_mask=torch.ones(3, 1, 1)), "`memory_attention_mask` must have the shape of `memory_ids`"),
    (dict(attention_mask=torch.zeros(3, 4, dtype=torch.long)), "Every question needs at least one word: row 0"),
    (dict(memory_ids=None), "needs `input_ids`"),
    (dict(memory_ids=torch.ones(3, 9, 2, dtype=torch.long), memory_attention_mask=None),
     "at most `memory_size`=8 sentences with temporal encoding, got 9"),
])
def test_bad_inputs_are_named(change, message):
    model = model_for()
    batch = {**batch_of(STORIES, QUESTIONS), **change}
    with pytest.raises(ValueError, match=message):
        model(**batch)


def test_a_non_binary_memory_mask_is_named():
    batch = batch_of(STORIES, QUESTIONS)
    batch["memory_attention_mask"][0, 1, 0] = 2
    with pytest.raises(ValueError, match="`memory_attention_mask` must hold 0 and 1 only"):
        model_for()(**batch)


@pytest.mark.parametrize("fields, message", [
    (dict(sentence_encoding="lstm"), r"`sentence_encoding` must be one of \['bag_of_words', 'position_encoding'\]"),
    (dict(weight_tying="none"), r"`weight_tying` must be one of \['adjacent', 'layer_wise'\], got 'none'"),
    (dict(random_noise=0.1, temporal_encoding=False), "jitters the time indices of temporal encoding"),
    (dict(random_noise=1.0), r"`random_noise` must be in \[0, 1\), got 1.0"),
    (dict(num_hops=0), "`num_hops` must be a positive integer, got 0"),
    (dict(answer_token_ids=[1]), r"one word id per answer \(2 labels\), got 1"),
    (dict(answer_token_ids=[1, 5000]), r"word ids in \[0, 1000\), got \[5000\]"),
])
def test_bad_config_fields_are_named(fields, message):
    with pytest.raises(ValueError, match=message):
        BahdanauMemoryNetworkConfig(**fields)


# the pipeline: what has no meaning is refused, what lies outside training is warned about --------------------------


def answerer(normalizer=None) -> BahdanauMemoryQuestionAnsweringPipeline:
    """The pipeline over ``model_for`` and a word-level tokenizer of "[PAD] [UNK] a b c … g" (``normalizer``: one of
    the tokenizers library's, applied before the words are split)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = ["[PAD]", "[UNK]", *"abcdefg"]
    tokenizer = Tokenizer(models.WordLevel({word: index for index, word in enumerate(words)}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.normalizer = normalizer
    model = model_for().float()
    model.config.id2label = dict(enumerate("abcd"))
    return BahdanauMemoryQuestionAnsweringPipeline(model=model, tokenizer=PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, pad_token="[PAD]", unk_token="[UNK]"))


@pytest.mark.parametrize("inputs, message", [
    (dict(memory=[], question="a b"), r"^`memory` is an empty list: a memory network answers from its memory; give it "
                                      r"at least one sentence\.$"),
    (dict(memory=[""], question="a b"), r"^`memory\[0\]` is empty \(''\): remove it or give a sentence\.$"),
    (dict(memory=["a b", "  "], question="a b"), r"^`memory\[1\]` is blank \('  '\): remove it or give a sentence\.$"),
    (dict(inputs=[]), r"^`inputs` is an empty list: pass a dict with 'memory' and 'question', or a list of at least "
                      r"one\.$"),
])
def test_the_pipeline_refuses_a_memory_without_sentences(inputs, message):
    with pytest.raises(ValueError, match=message):
        answerer()(**inputs)


def test_the_pipeline_refuses_a_memory_without_a_word_the_tokenizer_writes():
    from tokenizers import Regex, normalizers

    strip_punctuation = answerer(normalizers.Replace(Regex(r"[.?!]"), ""))
    with pytest.raises(ValueError, match=r"^`memory` \['\.\.\.', '\?'\] has no word the tokenizer knows how to write: "
                                         r"there is nothing to answer from\.$"):
        strip_punctuation(memory=["...", "?"], question="a b")
    assert strip_punctuation(memory=["a b.", "?"], question="a b")["answer"] in "abcd"  # one sentence is enough


def test_the_pipeline_warns_about_unknown_words(caplog):
    pipe = answerer()
    with caplog.at_level(logging.WARNING):
        answered = pipe(memory=["x y z", "w v"], question="where is a")
    assert answered["answer"] in "abcd"  # still answered, with a warning
    assert ("'x y z w v': 5 of its 5 tokens are unknown to the tokenizer ([UNK]); the output is unreliable."
            in caplog.text)
    assert "'where is a': 2 of its 3 tokens are unknown to the tokenizer ([UNK])" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        pipe(memory=["a b c", "d e"], question="f g b")
    assert "unknown" not in caplog.text
