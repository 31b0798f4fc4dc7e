"""Our beam search (hf_bahdanau/beam_search.py) = transformers' ``_beam_search``, output for output.

The models have a 1500-word vocabulary, so each beam row holds 11 full blocks of ``BLOCK`` = 128 entries plus a
92-entry tail and ``row_topk`` takes its block path (below 2k·128 words it is plain ``topk``). Their parameters are
drawn from N(0, 1) (``decisive_model``): near-uniform models tie beam scores to the last bit, and the order of
equal scores is unspecified in ``torch.topk`` as in ours.
"""

import pytest
import torch
from transformers import GenerationMixin

from conftest import EOS
from hf_bahdanau import BahdanauForConditionalGeneration
from hf_bahdanau.beam_search import BLOCK, row_topk
from test_generation import ALWAYS, LENGTHS, NEVER, SOMETIMES, decisive_model, padded_batch

BIG_VOCAB = 1500
NUM_BEAMS = 4

pytestmark = pytest.mark.usefixtures("one_thread")


# 1. row_topk = torch.topk -----------------------------------------------------------------------------------


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


# 2. beam search = transformers' beam search -------------------------------------------------------------


@pytest.fixture
def transformers_beam_search(monkeypatch):
    """Runs ``generate`` under transformers' own ``_beam_search`` (and its ``_gather_beams``)."""

    def use():
        monkeypatch.setattr(BahdanauForConditionalGeneration, "_beam_search", GenerationMixin._beam_search)
        monkeypatch.setattr(BahdanauForConditionalGeneration, "_gather_beams",
                            staticmethod(GenerationMixin._gather_beams))

    return use


def generate_both(model, use_transformers, **kwargs):
    input_ids, attention_mask = padded_batch(LENGTHS, seed=2)
    options = dict(num_beams=NUM_BEAMS, max_new_tokens=7, return_dict_in_generate=True, output_scores=True)
    options.update(kwargs)
    with torch.no_grad():
        torch.manual_seed(0)
        ours = model.generate(input_ids=input_ids, attention_mask=attention_mask, **options)
        use_transformers()
        torch.manual_seed(0)
        reference = model.generate(input_ids=input_ids, attention_mask=attention_mask, **options)
    return ours, reference


def same(actual, expected) -> bool:
    """Equal tensors, nested in equal tuples (scores per step, attentions per step and layer), or equal Nones."""
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
        if field == "past_key_values":
            assert torch.equal(ours[field].state.rnn.hidden, expected.state.rnn.hidden)
        else:
            assert same(ours[field], expected), field


@pytest.mark.parametrize(
    "options",
    [
        dict(),
        dict(num_return_sequences=NUM_BEAMS),
        dict(early_stopping=True, num_return_sequences=2),
        dict(early_stopping="never", length_penalty=2.0, num_return_sequences=NUM_BEAMS),
        dict(length_penalty=0.0, num_return_sequences=3),
        dict(max_new_tokens=1),
        dict(eos_token_id=[EOS, 7], num_return_sequences=NUM_BEAMS),
        dict(no_repeat_ngram_size=2, repetition_penalty=1.5, num_return_sequences=2),
        dict(bad_words_ids=[[5], [9, 11]], min_new_tokens=3),
        dict(output_logits=True, output_attentions=True, output_hidden_states=True),
        dict(return_dict_in_generate=False, output_scores=False),
        dict(do_sample=True, top_k=20),  # beam sampling: transformers' own search
    ],
    ids=["plain", "all-beams", "early-stopping", "never-lp2", "lp0", "one-step", "two-eos", "processors",
         "bad-words-min-new", "every-output", "tensor", "beam-sample"],
)
@pytest.mark.parametrize("eos", [NEVER, SOMETIMES, ALWAYS])
def test_beam_search_equals_transformers(transformers_beam_search, eos, options):
    model = decisive_model("luong-general", eos, vocab_size=BIG_VOCAB)
    ours, reference = generate_both(model, transformers_beam_search, **options)
    assert_same_output(ours, reference)


@pytest.mark.parametrize("preset", ["rnnsearch", "luong-concat", "rnnencdec"])
def test_beam_search_equals_transformers_across_presets(transformers_beam_search, preset):
    model = decisive_model(preset, SOMETIMES, vocab_size=BIG_VOCAB)
    ours, reference = generate_both(model, transformers_beam_search, num_return_sequences=NUM_BEAMS)
    assert_same_output(ours, reference)
    assert ours.sequences.shape[1] > 2  # the hypotheses ran for several steps
