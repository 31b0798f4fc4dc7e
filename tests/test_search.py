"""Our greedy and beam search (hf_bahdanau/modeling/search.py) = transformers' ``_sample`` and ``_beam_search``, output
for output, and the block reductions under them = ``torch.argmax`` / ``torch.topk``.

The models have a 1500-word vocabulary: each row holds 11 full blocks of ``BLOCK`` = 128 entries plus a 92-entry
tail, and ``MIN_ENTRIES`` is set to 0 so these small batches take the block paths (``all_block_paths``). Their
parameters are drawn from N(0, 1) (``decisive_model``): near-uniform models tie beam scores to the last bit, and
the order of equal scores is unspecified in ``torch.topk`` as in ours.
"""

import pytest
import torch
from transformers import GenerationMixin

from conftest import BOS, EOS
from hf_bahdanau import BahdanauForConditionalGeneration, BahdanauModel
from hf_bahdanau.modeling import block_select
from hf_bahdanau.modeling.block_select import BLOCK, row_argmax, row_topk
from hf_bahdanau.modeling.transformers_private import CACHE_NAME
from test_generation import ALWAYS, LENGTHS, NEVER, SOMETIMES, decisive_model, padded_batch

BIG_VOCAB = 1500
NUM_BEAMS = 4

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(autouse=True)
def all_block_paths(monkeypatch):
    monkeypatch.setattr(block_select, "MIN_ENTRIES", 0)


# 1. row_argmax = torch.argmax, row_topk = torch.topk --------------------------------------------------------


@pytest.mark.parametrize("length", [BLOCK * 10, BLOCK * 10 + 37, BLOCK * 2 + 1, 50])
def test_row_argmax_equals_torch_argmax_first_occurrence(length):
    scores = torch.randn(8, length, generator=torch.Generator().manual_seed(length))
    scores[0, -1] = 100.0  # the last entry, in the tail
    scores[1, :] = 3.0  # all equal: the first
    scores[2, [length // 3, length // 2, length - 1]] = 50.0  # ties in different blocks: the first
    scores[3, [length // 2, length // 2 + 1]] = 50.0  # ties in one block
    scores[4, length // 2] = float("nan")  # NaN is the maximum, as in argmax
    scores[5, [length // 3, length - 1]] = float("nan")
    scores[6, :] = float("-inf")
    assert row_argmax(scores).tolist() == scores.argmax(dim=-1).tolist()


def test_block_paths_switch_off_below_min_entries(monkeypatch):
    """Small inputs take plain argmax / topk (a wrong block path would go unnoticed there): checked by breaking
    the block maxima."""
    monkeypatch.setattr(block_select, "_block_maxima", lambda *args: (_ for _ in ()).throw(AssertionError))
    monkeypatch.setattr(block_select, "MIN_ENTRIES", 2**17)
    scores = torch.randn(2, 8000)
    assert torch.equal(row_argmax(scores), scores.argmax(-1))
    assert torch.equal(row_topk(scores, 4)[1], scores.topk(4).indices)
    with pytest.raises(AssertionError):
        row_argmax(torch.randn(17, 8000))


@pytest.mark.parametrize("length", [BLOCK * 10, BLOCK * 10 + 37, BLOCK * 3, 50])
@pytest.mark.parametrize("k", [1, 5, 10])
def test_row_topk_equals_torch_topk(length, k):
    scores = torch.randn(7, length, generator=torch.Generator().manual_seed(length + k)) * 4
    scores[0, -5:] += 100  # the best entries of a row in the tail
    scores[1, length // 2] = 50.0  # one winner, the rest of its block small
    scores[2, :] = -scores[2].abs()
    middle_block = slice(BLOCK * (length // BLOCK // 2), BLOCK * (length // BLOCK // 2 + 1))
    scores[2, middle_block] = torch.linspace(1, 2, scores[2, middle_block].numel())  # all winners in one block
    values, indices = row_topk(scores, k)
    expected_values, expected_indices = scores.topk(k)
    assert values.shape == indices.shape == (7, k)
    assert torch.equal(values, expected_values)
    assert torch.equal(indices, expected_indices)


def test_row_topk_with_ties_and_minus_infinity_returns_valid_distinct_positions():
    """Equal scores: the values are torch.topk's, the positions distinct entries that hold them."""
    scores = torch.full((3, 20 * BLOCK + 5), float("-inf"))
    scores[0, ::7] = 1.0  # many ties at the top
    scores[1, :3] = torch.tensor([3.0, 2.0, 1.0])  # fewer finite entries than k
    scores[2] = torch.arange(scores.shape[1]) % 3  # ties everywhere
    values, indices = row_topk(scores, 6)
    assert torch.equal(values, scores.topk(6).values)
    assert torch.equal(scores.gather(1, indices), values)
    assert all(len(set(row)) == 6 for row in indices.tolist())
    assert (indices < scores.shape[1]).all()


# 2. greedy and beam search = transformers' -----------------------------------------------------------------


@pytest.fixture
def transformers_search(monkeypatch):
    """Makes ``generate`` run transformers' own ``_sample`` and ``_beam_search``."""

    def use():
        for name in ("_sample", "_beam_search"):
            monkeypatch.setattr(BahdanauForConditionalGeneration, name, getattr(GenerationMixin, name))

    return use


def generate_both(model, use_transformers, **kwargs):
    """Ours, then transformers', on the same padded batch and seed."""
    input_ids, attention_mask = padded_batch(LENGTHS, seed=2)
    options = dict(max_new_tokens=7, return_dict_in_generate=True, output_scores=True)
    options.update(kwargs)
    with torch.no_grad():
        torch.manual_seed(0)
        ours = model.generate(input_ids=input_ids, attention_mask=attention_mask, **options)
        use_transformers()
        torch.manual_seed(0)
        reference = model.generate(input_ids=input_ids, attention_mask=attention_mask, **options)
    return ours, reference


def same(actual, expected) -> bool:
    """Equal tensors, nested in equal tuples (scores per step, attentions per step and layer), or equal Nones. Exactly
    equal: both searches run the same decoder step, output layer and float32 log-softmax on the same tensors of the
    same shapes (the same kernels, so the same bits); they differ only in how they select among those values."""
    if isinstance(expected, torch.Tensor):
        return isinstance(actual, torch.Tensor) and torch.equal(actual, expected)
    if isinstance(expected, tuple):
        return isinstance(actual, tuple) and len(actual) == len(expected) and all(map(same, actual, expected))
    return actual is expected is None


def assert_same_output(ours, reference):
    if isinstance(reference, torch.Tensor):
        assert torch.equal(ours, reference)
        return
    assert type(ours) is type(reference)
    assert set(ours.keys()) == set(reference.keys())
    for field, expected in reference.items():
        if field == CACHE_NAME:
            assert torch.equal(ours[field].state.rnn.hidden, expected.state.rnn.hidden)
            assert ours[field].get_seq_length() == expected.get_seq_length()
        else:
            assert same(ours[field], expected), field


SHARED_OPTIONS = {
    "plain": dict(),
    "one-step": dict(max_new_tokens=1),
    "two-eos": dict(eos_token_id=[EOS, 7]),
    "processors": dict(no_repeat_ngram_size=2, repetition_penalty=1.5),
    "bad-words-min-new": dict(bad_words_ids=[[5], [9, 11]], min_new_tokens=3),
    "every-output": dict(output_logits=True, output_attentions=True, output_hidden_states=True),
    "logits": dict(output_logits=True),
    "tensor": dict(return_dict_in_generate=False, output_scores=False),
    "no-cache": dict(use_cache=False),
    "decoder-prompt": dict(decoder_input_ids=torch.tensor([[BOS, 5, 9]] * len(LENGTHS))),
    "sample": dict(do_sample=True, top_k=20),  # sampling: transformers' own loops
}
BEAM_OPTIONS = {
    "all-beams": dict(num_return_sequences=NUM_BEAMS),
    "early-stopping": dict(early_stopping=True, num_return_sequences=2),
    "never-lp2": dict(early_stopping="never", length_penalty=2.0, num_return_sequences=NUM_BEAMS),
    "lp0": dict(length_penalty=0.0, num_return_sequences=3),
}
CASES = [pytest.param(dict(num_beams=1, **options), id=f"greedy-{name}") for name, options in SHARED_OPTIONS.items()]
CASES += [pytest.param(dict(num_beams=NUM_BEAMS, **options), id=f"beam-{name}")
          for name, options in {**SHARED_OPTIONS, **BEAM_OPTIONS}.items()]


@pytest.mark.parametrize("options", CASES)
@pytest.mark.parametrize("eos", [NEVER, SOMETIMES, ALWAYS])
def test_search_equals_transformers(transformers_search, eos, options):
    model = decisive_model("luong-general", eos, vocab_size=BIG_VOCAB)
    ours, reference = generate_both(model, transformers_search, **options)
    assert_same_output(ours, reference)


@pytest.mark.parametrize("num_beams", [1, NUM_BEAMS])
@pytest.mark.parametrize("preset", ["rnnsearch", "luong-concat", "rnnencdec", "sutskever"])
def test_search_equals_transformers_across_presets(transformers_search, preset, num_beams):
    model = decisive_model(preset, SOMETIMES, vocab_size=BIG_VOCAB)
    ours, reference = generate_both(model, transformers_search, num_beams=num_beams, num_return_sequences=num_beams)
    assert_same_output(ours, reference)
    assert ours.sequences.shape[1] > 2  # the hypotheses ran for several steps


def test_greedy_streams_the_tokens_transformers_streams(transformers_search):
    class Recorder:
        def __init__(self):
            self.calls = []

        def put(self, tokens):
            self.calls.append(tokens.tolist())

        def end(self):
            self.calls.append("end")

    model = decisive_model("rnnsearch", SOMETIMES, vocab_size=BIG_VOCAB)
    input_ids, attention_mask = padded_batch(LENGTHS[:1], seed=2)
    recorded = []
    for switch in (lambda: None, transformers_search):
        switch()
        streamer = Recorder()
        with torch.no_grad():
            model.generate(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=5, streamer=streamer)
        recorded.append(streamer.calls)
    assert recorded[0] == recorded[1]
    assert len(recorded[0]) == 1 + 5 + 1  # the prompt, 5 tokens, end


@pytest.mark.parametrize("num_beams", [1, NUM_BEAMS])
@pytest.mark.parametrize("preset", ["rnnsearch", "luong-concat"])
def test_search_builds_the_decoder_step_plan_once(monkeypatch, preset, num_beams):
    """The step loop's setup (``plan_steps``) is built by the prefill and once for the cache, then kept for every
    later step; rebuilding it at every step gives the same sequences, scores and state."""
    model = decisive_model(preset, NEVER, vocab_size=BIG_VOCAB)
    input_ids, attention_mask = padded_batch(LENGTHS, seed=2)
    decoder_class = type(model.model.decoder)
    plans = []
    plan_steps = decoder_class.plan_steps
    monkeypatch.setattr(decoder_class, "plan_steps", lambda self, memory: plans.append(1) or plan_steps(self, memory))

    def search():
        plans.clear()
        with torch.no_grad():
            return model.generate(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=7,
                                  num_beams=num_beams, return_dict_in_generate=True, output_scores=True)

    kept = search()
    assert len(plans) == 2
    monkeypatch.setattr(BahdanauModel, "step_plan", lambda self, cache: None)
    rebuilt = search()
    assert len(plans) == 7  # the prefill and 6 more steps
    assert_same_output(kept, rebuilt)
