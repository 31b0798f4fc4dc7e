"""generate() with the recurrent cache, checked against teacher-forced forward passes.

Every equivalence is swept over the named presets: greedy = a hand-written argmax loop,
step-by-step decoding through ``past_key_values`` = one teacher-forced call, beam scores =
teacher-forced log-probabilities of the returned beams (which fails without cache reordering),
sampling filters, length limits, alignments, and a padded batch = each sentence alone.

The conftest models are near-uniform over the vocabulary (log-probs ~ -log 40), where argmax
and beam ranks hinge on 1e-7 differences. ``decisive_model`` redraws every parameter from
N(0, 1), which gives peaked, source-dependent distributions, and sets the EOS logit bias so a
test decides whether the model never, sometimes or always wants to stop.
"""

import pytest
import torch
from torch.testing import assert_close
from transformers import GenerationMixin

from conftest import (BOS, EOS, PAD, VARIANTS, VOCAB, assert_float64_close, padded_batch, softmax_sum_tolerance,
                      tiny_model)
from hf_bahdanau import PRESETS
from hf_bahdanau.modeling.state import RecurrentDecoderCache
from hf_bahdanau.modeling.transformers_private import cache_of

# every preset, and coverage, hard attention and local-m on decoders the presets do not pair them with (the rest of
# the combinations: tests/test_scope.py's sweep)
PRESET_NAMES = sorted(PRESETS) + ["rnnsearch+coverage", "luong-general+hard", "luong-dot+local-m", "rnnsearch+copy",
                                   "luong-general+copy+local-p"]
ATTENTION_PRESETS = [name for name in PRESET_NAMES if PRESETS[VARIANTS.get(name, (name,))[0]]["attention_type"] != "none"]
FIXED_CONTEXT_PRESETS = [name for name in PRESET_NAMES if name not in ATTENTION_PRESETS]
FIXTURE_SEEDS = {"luong-local-p": 2, "luong-dot+local-m": 4, "luong-general+copy+local-p": 2, "rnnsearch-location": 3}  # seed 1: every greedy row stops early (eos=SOMETIMES)
LENGTHS = (7, 5, 2, 6)  # source lengths of the padded test batch
MAX_NEW = 6
NUM_BEAMS = 4

NEVER, SOMETIMES, ALWAYS = "never", "sometimes", "always"  # how readily a test model emits EOS


def decisive_model(preset: str, eos: str = NEVER, seed: int | None = None, **overrides):
    """``tiny_model(preset, **overrides)`` (a ``VARIANTS`` name: its preset and overrides) with every parameter
    redrawn from N(0, 1) (seed: ``FIXTURE_SEEDS``, else 1); lm_head bias 0 except PAD (-1000: never
    generated) and EOS: -1000 (``never``), +1000 (``always``: EOS is the argmax at every step) or, for
    ``sometimes``, the bias that makes EOS the argmax at a quarter of the teacher-forced positions of random
    targets (so some hypotheses end early and others do not, whatever the preset's logit scale). A pointer-generator
    (``copy_attention``) gets p_gen = 1 with ``always``."""
    seed = FIXTURE_SEEDS.get(preset, 1) if seed is None else seed
    model = tiny_model(preset, seed=seed, **overrides)
    generator = torch.Generator().manual_seed(seed + 1000)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator))
        model.lm_head.bias.zero_()
        model.lm_head.bias[PAD] = -1e3
        model.lm_head.bias[EOS] = {NEVER: -1e3, ALWAYS: 1e3, SOMETIMES: 0.0}[eos]
        if eos == ALWAYS and model.config.copy_attention:  # p_gen = 1: nothing copied outweighs EOS
            model.model.decoder.generation_gate.bias.fill_(1e3)
        if eos == SOMETIMES:
            input_ids, attention_mask = padded_batch(LENGTHS, seed=seed + 1)
            targets = torch.randint(3, VOCAB, (len(LENGTHS), 8), generator=generator)
            logits = model(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=targets).logits
            gap = logits.clone().index_fill_(-1, torch.tensor([EOS]), -1e9).max(-1).values - logits[..., EOS]
            model.lm_head.bias[EOS] = torch.quantile(gap.flatten(), 0.25)
    return model


pytestmark = pytest.mark.usefixtures("one_thread")


def source_batch():
    return padded_batch(LENGTHS)


def log_probs(model, input_ids, attention_mask, decoder_input_ids) -> torch.Tensor:
    """Teacher-forced log p(· | y_<t, x): [B, T, V], no cache."""
    with torch.no_grad():
        logits = model(
            input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids, use_cache=False
        ).logits
    return logits.log_softmax(-1)


def generated(row: torch.Tensor) -> list[int]:
    """The generated tokens of one output row: after the decoder start, up to and including the first EOS
    (what follows is fill: PAD from greedy, EOS from beam search, since pad_token_id == 0 is falsy there)."""
    tokens = row[1:].tolist()
    return tokens[: tokens.index(EOS) + 1] if EOS in tokens else tokens


def greedy_by_hand(model, input_ids, attention_mask, max_new_tokens: int) -> torch.Tensor:
    """argmax of a full teacher-forced forward over the growing prefix (no cache); finished rows get PAD."""
    sequences = torch.full((input_ids.shape[0], 1), BOS)
    finished = torch.zeros(input_ids.shape[0], dtype=torch.bool)
    for _ in range(max_new_tokens):
        next_tokens = log_probs(model, input_ids, attention_mask, sequences)[:, -1].argmax(-1)
        next_tokens = next_tokens.masked_fill(finished, PAD)
        sequences = torch.cat([sequences, next_tokens[:, None]], dim=1)
        finished |= next_tokens == EOS
        if finished.all():
            break
    return sequences


def beam_generate(model, input_ids, attention_mask, length_penalty=1.0, **kwargs):
    kwargs = dict(
        num_beams=NUM_BEAMS, num_return_sequences=NUM_BEAMS, output_scores=True, return_dict_in_generate=True,
        length_penalty=length_penalty, early_stopping=True, max_new_tokens=MAX_NEW, **kwargs,
    )
    with torch.no_grad():
        return model.generate(input_ids=input_ids, attention_mask=attention_mask, **kwargs)


def teacher_forced_beam_scores(model, input_ids, attention_mask, sequences, length_penalty):
    """Σ_t log p(y_t | y_<t, x) / L^length_penalty for each returned row, L = generated length incl. EOS
    (transformers' ``_update_finished_beams`` divides by ``cur_len + 1 - decoder_prompt_len``).
    Also returns the generated lengths."""
    beams = sequences.shape[0] // input_ids.shape[0]
    sources = input_ids.repeat_interleave(beams, dim=0)
    masks = attention_mask.repeat_interleave(beams, dim=0)
    lengths = torch.tensor([len(generated(row)) for row in sequences])
    targets = sequences[:, 1:]
    step_log_probs = log_probs(model, sources, masks, sequences[:, :-1]).gather(-1, targets[..., None])[..., 0]
    real = torch.arange(targets.shape[1])[None] < lengths[:, None]
    totals = step_log_probs.masked_fill(~real, 0.0).sum(dim=1)
    return totals / lengths.to(totals.dtype) ** length_penalty, lengths


def float32_search_error(model, input_ids, attention_mask, sequences, length_penalty) -> torch.Tensor:
    """A bound on |score − exact score| for each returned row of a float64 model's search, which works in float32 as
    transformers does: logits x rounded to float32 (|δx_j| ≤ ε|x_j|/2, moving log p_y by ≤ ε(|x_y| + Σ_j p_j |x_j|)),
    log_softmax in float32 (x_j − m, exp, a sum of V terms, log: ≤ ε(V + |x_y| + 2|m| + Σ_j p_j |x_j| + |log Σ| +
    |log p_y|) with ε for every half-ulp, a margin that also covers the float64 paths' ~1e-10), T float32 additions
    of the running score (≤ T ε |score|), the length-penalty division (ε |score|). Computed from the teacher-forced
    float64 logits of the rows; [rows]. Rows of the same model, decoded twice, differ by at most twice this."""
    beams = sequences.shape[0] // input_ids.shape[0]
    masks = None if attention_mask is None else attention_mask.repeat_interleave(beams, dim=0)
    with torch.no_grad():
        logits = model(input_ids=input_ids.repeat_interleave(beams, dim=0), attention_mask=masks,
                       decoder_input_ids=sequences[:, :-1], use_cache=False).logits
    assert logits.dtype == torch.float64
    eps = torch.finfo(torch.float32).eps
    lengths = torch.tensor([len(generated(row)) for row in sequences])
    real = torch.arange(logits.shape[1])[None] < lengths[:, None]
    chosen = logits.gather(-1, sequences[:, 1:, None])[..., 0]
    top, log_sum = logits.max(-1).values, logits.logsumexp(-1)
    weighted = (logits.softmax(-1) * logits.abs()).sum(-1)  # Σ_j p_j |x_j|: PAD's -1000 has p = 0
    step_log_probs = chosen - log_sum
    per_step = eps * (logits.shape[-1] + 2 * chosen.abs() + 2 * top.abs() + 2 * weighted + (log_sum - top).abs()
                      + step_log_probs.abs())
    total = step_log_probs.masked_fill(~real, 0.0).sum(1).abs()
    penalty = lengths.double() ** length_penalty
    return (per_step.masked_fill(~real, 0.0).sum(1) + lengths * eps * total) / penalty + eps * total / penalty


# 1. greedy = hand-written argmax loop -------------------------------------------------------------------


@pytest.mark.parametrize("eos", [NEVER, SOMETIMES], ids=["no-eos", "eos"])
@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_greedy_generate_equals_argmax_loop_without_cache(preset, eos):
    model = decisive_model(preset, eos)
    input_ids, attention_mask = source_batch()
    with torch.no_grad():
        sequences = model.generate(input_ids=input_ids, attention_mask=attention_mask, do_sample=False,
                                   max_new_tokens=MAX_NEW)
    expected = greedy_by_hand(model, input_ids, attention_mask, MAX_NEW)
    assert sequences.tolist() == expected.tolist()
    if eos == NEVER:
        assert sequences.shape == (len(LENGTHS), 1 + MAX_NEW)
    # the sentences do not all decode alike: the output depends on the source
    assert len({tuple(row) for row in sequences[:, 1:].tolist()}) > 1


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_eos_variants_cover_early_and_full_length_hypotheses(preset):
    """With ``eos=SOMETIMES`` some greedy rows and returned beams stop before max_new_tokens and some do not, so
    the 'eos' variants of the equivalence tests exercise finished rows (filled with PAD by greedy, EOS by beam
    search) next to running ones."""
    model = decisive_model(preset, SOMETIMES)
    input_ids, attention_mask = source_batch()
    with torch.no_grad():
        greedy = model.generate(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=MAX_NEW)
    beams = beam_generate(model, input_ids, attention_mask)
    for sequences in (greedy, beams.sequences):
        lengths = {len(generated(row)) for row in sequences}
        assert MAX_NEW in lengths and min(lengths) < MAX_NEW


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_generate_without_cache_equals_generate_with_cache(preset):
    model = decisive_model(preset, SOMETIMES)
    input_ids, attention_mask = source_batch()
    with torch.no_grad():
        for kwargs in (dict(num_beams=1), dict(num_beams=NUM_BEAMS, num_return_sequences=2)):
            cached = model.generate(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=MAX_NEW,
                                    use_cache=True, **kwargs)
            uncached = model.generate(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=MAX_NEW,
                                      use_cache=False, **kwargs)
            assert cached.tolist() == uncached.tolist()


# 2. step-by-step decoding through the cache ------------------------------------------------------------


@pytest.mark.parametrize("chunks", [(1, 1, 1, 1, 1, 1), (3, 1, 1, 1), (2, 3, 1)], ids=["1x6", "3+1x3", "2+3+1"])
@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_decoding_through_cache_equals_teacher_forcing(preset, chunks):
    model = decisive_model(preset).double()  # float64: the fused RNN and the step mode round alike, to ~1e-16
    input_ids, attention_mask = source_batch()
    target_length = sum(chunks)
    decoder_input_ids = torch.randint(3, VOCAB, (len(LENGTHS), target_length), generator=torch.Generator().manual_seed(3))
    decoder_input_ids[:, 0] = BOS
    with torch.no_grad():
        full = model(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids,
                     use_cache=False)
        logits, cache, start = [], None, 0
        for size in chunks:
            step = model(input_ids=input_ids, attention_mask=attention_mask,
                         decoder_input_ids=decoder_input_ids[:, start:start + size], past_key_values=cache,
                         use_cache=True)
            assert isinstance(cache_of(step), RecurrentDecoderCache)
            cache, start = cache_of(step), start + size
            assert cache.get_seq_length() == start
            logits.append(step.logits)
    assert full.logits.shape == (len(LENGTHS), target_length, VOCAB)
    assert_float64_close(torch.cat(logits, dim=1), full.logits)


# 3. beam search scores = teacher-forced log-probs of the returned beams --------------------------------


@pytest.mark.parametrize(
    "eos, length_penalty",
    # the length penalty only changes the ranking when hypotheses end at different lengths: with EOS
    [(NEVER, 1.0), (SOMETIMES, 1.0), (SOMETIMES, 0.5), (SOMETIMES, 2.0)],
    ids=["no-eos", "eos", "eos-lp0.5", "eos-lp2"],
)
@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_beam_scores_equal_teacher_forced_log_probs(preset, eos, length_penalty):
    model = decisive_model(preset, eos).double()  # float64 model: only the search's own float32 steps round
    input_ids, attention_mask = source_batch()
    out = beam_generate(model, input_ids, attention_mask, length_penalty)
    batch_size = len(LENGTHS)
    assert out.sequences.shape[0] == batch_size * NUM_BEAMS
    assert out.sequences_scores.shape == (batch_size * NUM_BEAMS,)
    assert (out.sequences[:, 0] == BOS).all()

    expected, lengths = teacher_forced_beam_scores(model, input_ids, attention_mask, out.sequences, length_penalty)
    error = float32_search_error(model, input_ids, attention_mask, out.sequences, length_penalty)
    assert ((out.sequences_scores.double() - expected).abs() <= error).all(), (out.sequences_scores - expected, error)

    scores = out.sequences_scores.view(batch_size, NUM_BEAMS)
    assert (scores[:, :-1] >= scores[:, 1:]).all(), "beams are returned best first"
    for source in range(batch_size):  # the returned beams of one source are distinct hypotheses
        rows = out.sequences[source * NUM_BEAMS:(source + 1) * NUM_BEAMS]
        assert len({tuple(generated(row)) for row in rows}) == NUM_BEAMS
    if eos == NEVER:
        assert (lengths == MAX_NEW).all()
    else:
        # finished hypotheses end with EOS and are filled with EOS; unfinished ones ran to max_new_tokens
        for row, length in zip(out.sequences, lengths.tolist()):
            assert row[length] == EOS or length == MAX_NEW
            assert (row[1 + length:] == EOS).all()


@pytest.mark.parametrize("preset", ["rnnsearch", "luong-general", "sutskever"])
def test_beam_score_check_fails_without_cache_reordering(preset, monkeypatch):
    """The check above detects a cache that is not reordered (so it proves the reordering)."""
    model = decisive_model(preset)
    input_ids, attention_mask = source_batch()
    monkeypatch.setattr(RecurrentDecoderCache, "reorder_cache", lambda self, beam_idx: None)
    out = beam_generate(model, input_ids, attention_mask)
    expected, _ = teacher_forced_beam_scores(model, input_ids, attention_mask, out.sequences, 1.0)
    assert (out.sequences_scores - expected).abs().max() > 1e-2


# 4. one beam = greedy -----------------------------------------------------------------------------------


@pytest.mark.parametrize("eos", [NEVER, SOMETIMES], ids=["no-eos", "eos"])
@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_beam_search_with_one_beam_equals_greedy(preset, eos):
    """``num_beams=1`` is routed to greedy by generate(); ``custom_generate=_beam_search`` forces the beam
    search loop (cache reordering included) with one beam. Compared as token lists because beam search fills
    finished rows with EOS and greedy with PAD."""
    model = decisive_model(preset, eos)
    input_ids, attention_mask = source_batch()
    with torch.no_grad():
        greedy = model.generate(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=MAX_NEW)
        one_beam = model.generate(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=MAX_NEW,
                                  num_beams=1)
        beam_loop = model.generate(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=MAX_NEW,
                                   num_beams=1, custom_generate=GenerationMixin._beam_search)
    greedy_tokens = [generated(row) for row in greedy]
    assert [generated(row) for row in one_beam] == greedy_tokens
    assert [generated(row) for row in beam_loop] == greedy_tokens


# 5. sampling --------------------------------------------------------------------------------------------


def sample(model, input_ids, attention_mask, seed, **kwargs):
    torch.manual_seed(seed)
    with torch.no_grad():
        return model.generate(input_ids=input_ids, attention_mask=attention_mask, do_sample=True,
                              max_new_tokens=MAX_NEW, **kwargs)


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_sampling_is_reproducible_and_valid(preset):
    model = decisive_model(preset, SOMETIMES)
    input_ids, attention_mask = source_batch()
    settings = dict(top_k=10, top_p=0.95, temperature=1.5)
    first = sample(model, input_ids, attention_mask, seed=7, **settings)
    again = sample(model, input_ids, attention_mask, seed=7, **settings)
    assert first.tolist() == again.tolist()
    assert (first[:, 0] == BOS).all()
    assert ((first >= 0) & (first < VOCAB)).all()
    for row in first:  # PAD only as fill after EOS
        tokens = generated(row)
        assert PAD not in tokens
        assert (row[1 + len(tokens):] == PAD).all()
    others = [sample(model, input_ids, attention_mask, seed=seed, **settings).tolist() for seed in (8, 9)]
    assert any(other != first.tolist() for other in others), "different seeds should give different samples"


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_sampling_with_top_k_1_equals_greedy(preset):
    model = decisive_model(preset, SOMETIMES)
    input_ids, attention_mask = source_batch()
    with torch.no_grad():
        greedy = model.generate(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=MAX_NEW)
    for seed in (0, 1):
        sampled = sample(model, input_ids, attention_mask, seed=seed, top_k=1, temperature=2.0)
        assert sampled.tolist() == greedy.tolist()


def token_ranks(model, input_ids, attention_mask, sequences):
    """Rank (0 = most likely) and exclusive cumulative probability (mass of the strictly more likely tokens)
    of every generated token under the teacher-forced model, and how far the sampler's float32 view of that mass
    may be from it (``nucleus_slack``); each [generated tokens]."""
    with torch.no_grad():
        logits = model(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=sequences[:, :-1],
                       use_cache=False).logits
    probs = logits.softmax(-1)
    targets = sequences[:, 1:]
    chosen = probs.gather(-1, targets[..., None])
    ranks = (probs > chosen).sum(-1)
    mass_before = (probs * (probs > chosen)).sum(-1)
    lengths = torch.tensor([len(generated(row)) for row in sequences])
    real = torch.arange(targets.shape[1])[None] < lengths[:, None]
    return ranks[real], mass_before[real], nucleus_slack(logits)[real]


def nucleus_slack(logits: torch.Tensor) -> torch.Tensor:
    """transformers' top-p filter sums float32 probabilities of a float64 model's logits x [..., V]: rounding x to
    float32 moves each log p_j by ≤ ε(|x_j| + Σ_k p_k |x_k|), so a mass by ≤ 2ε Σ_k p_k |x_k|; the float32 softmax
    puts each p_j within (V + 3) ε of itself, its cumulative sum adds (V − 1) ε, the threshold 1 − top_p rounds
    by ε: ε (2V + 3 + 2 Σ_k p_k |x_k|) in all [...]."""
    eps = torch.finfo(torch.float32).eps
    return eps * (2 * logits.shape[-1] + 3 + 2 * (logits.softmax(-1) * logits.abs()).sum(-1))


@pytest.mark.parametrize("preset", ["rnnsearch", "luong-concat", "rnnencdec"])
def test_top_k_and_top_p_restrict_samples(preset):
    model = decisive_model(preset, SOMETIMES).double()  # float64: only the sampler's float32 filters round
    input_ids, attention_mask = source_batch()
    top_k_ranks, top_p_excess, free_ranks = [], [], []
    for seed in range(4):
        sequences = sample(model, input_ids, attention_mask, seed=seed, top_k=3, temperature=10.0)
        top_k_ranks.append(token_ranks(model, input_ids, attention_mask, sequences)[0])
        sequences = sample(model, input_ids, attention_mask, seed=seed, top_p=0.6, top_k=0)
        _, mass_before, slack = token_ranks(model, input_ids, attention_mask, sequences)
        top_p_excess.append(mass_before - (0.6 + slack))
        sequences = sample(model, input_ids, attention_mask, seed=seed, top_k=0, temperature=10.0)
        free_ranks.append(token_ranks(model, input_ids, attention_mask, sequences)[0])
    top_k_ranks, top_p_excess, free_ranks = torch.cat(top_k_ranks), torch.cat(top_p_excess), torch.cat(free_ranks)
    assert top_k_ranks.max() <= 2
    assert top_k_ranks.max() > 0, "with temperature 10 the sampler should not always pick the argmax"
    assert top_p_excess.max() < 0, "a token outside the nucleus was sampled"
    assert free_ranks.max() > 2, "without top_k, hot sampling leaves the top 3"


# 6. length limits ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("max_new_tokens", [1, 4, 9])
@pytest.mark.parametrize("preset", ["rnnsearch", "luong-dot", "rnnencdec"])
def test_max_new_tokens_bounds_length(preset, max_new_tokens):
    input_ids, attention_mask = source_batch()
    model = decisive_model(preset, NEVER)
    with torch.no_grad():
        greedy = model.generate(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=max_new_tokens)
        beams = model.generate(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=max_new_tokens,
                               num_beams=3)
    assert greedy.shape == beams.shape == (len(LENGTHS), 1 + max_new_tokens)
    eager = decisive_model(preset, SOMETIMES)
    with torch.no_grad():
        sequences = eager.generate(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=max_new_tokens)
    assert sequences.shape[1] <= 1 + max_new_tokens


@pytest.mark.parametrize("decoding", [dict(), dict(num_beams=3), dict(do_sample=True)], ids=["greedy", "beam", "sample"])
@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_min_new_tokens_delays_eos(preset, decoding):
    model = decisive_model(preset, ALWAYS)
    input_ids, attention_mask = source_batch()
    torch.manual_seed(0)
    with torch.no_grad():
        eager = model.generate(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=MAX_NEW, **decoding)
        delayed = model.generate(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=MAX_NEW,
                                 min_new_tokens=4, **decoding)
    assert eager.tolist() == [[BOS, EOS]] * len(LENGTHS)
    assert delayed.shape == (len(LENGTHS), 1 + 5)
    assert (delayed[:, 1:5] != EOS).all()
    assert (delayed[:, 1:5] != PAD).all()
    assert (delayed[:, 5] == EOS).all()


# 7. alignments ------------------------------------------------------------------------------------------


def teacher_forced_alignments(model, input_ids, attention_mask, sequences) -> torch.Tensor:
    """α [B, T, S] of the teacher-forced pass over sequences[:, :-1]."""
    with torch.no_grad():
        out = model(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=sequences[:, :-1],
                    use_cache=False, output_attentions=True)
    (weights,) = out.cross_attentions  # one layer of attention
    assert weights.shape == (input_ids.shape[0], 1, sequences.shape[1] - 1, input_ids.shape[1])
    return weights[:, 0]


def assert_weights_sum(model, weights: torch.Tensor, source_length: int) -> None:
    """Every step's weights [..., S] sum to 1 (global soft attention) or to at most 1 (a local window times a
    Gaussian, a monotonic or hard position, which may be none), within the float64 softmax's rounding."""
    tolerance = softmax_sum_tolerance(source_length, torch.float64)
    sums = weights.sum(-1)
    if model.model.decoder.is_global_soft:
        assert_close(sums, torch.ones_like(sums), atol=tolerance, rtol=0)
    else:
        assert (sums <= 1 + tolerance).all()


@pytest.mark.parametrize("preset", ATTENTION_PRESETS)
def test_greedy_returns_alignments_per_step(preset):
    model = decisive_model(preset).double()  # float64: the cached steps and teacher forcing round alike
    input_ids, attention_mask = source_batch()
    with torch.no_grad():
        out = model.generate(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=MAX_NEW,
                             output_attentions=True, return_dict_in_generate=True)
    assert len(out.cross_attentions) == MAX_NEW
    batch_size, source_length = input_ids.shape
    for step in out.cross_attentions:
        assert isinstance(step, tuple) and len(step) == 1
        assert step[0].shape == (batch_size, 1, 1, source_length)
    alignments = torch.cat([step[0][:, 0] for step in out.cross_attentions], dim=1)  # [B, T, S]
    padding = attention_mask[:, None, :].expand_as(alignments) == 0
    assert (alignments[padding] == 0).all()
    assert_weights_sum(model, alignments, max(LENGTHS))
    if model.model.decoder.is_global_soft:
        assert (alignments[~padding] > 0).all()
    assert alignments.sum() > 0
    if model.config.attention_scope == "monotonic":  # one-hot positions that never go back; none once run out
        attended = alignments.sum(-1) > 0
        assert ((alignments == 0) | (alignments == 1)).all() and (attended[:, :-1] >= attended[:, 1:]).all()
        positions = alignments.argmax(-1).masked_fill(~attended, max(LENGTHS))
        assert (positions[:, :-1] <= positions[:, 1:]).all()
    expected = teacher_forced_alignments(model, input_ids, attention_mask, out.sequences)
    assert_float64_close(alignments, expected, scale=1.0)  # weights: at most 1


@pytest.mark.parametrize("preset", FIXED_CONTEXT_PRESETS)
def test_models_without_attention_return_no_alignments(preset):
    model = decisive_model(preset)
    input_ids, attention_mask = source_batch()
    with torch.no_grad():
        out = model.generate(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=3,
                             output_attentions=True, return_dict_in_generate=True)
    assert len(out.cross_attentions) == 3
    assert all(step is None for step in out.cross_attentions)


@pytest.mark.parametrize("preset", ATTENTION_PRESETS)
def test_beam_search_alignments_follow_beam_indices(preset):
    model = decisive_model(preset, SOMETIMES).double()  # float64: the cached steps and teacher forcing round alike
    input_ids, attention_mask = source_batch()
    out = beam_generate(model, input_ids, attention_mask, output_attentions=True)
    batch_size, source_length = input_ids.shape
    generated_length = out.sequences.shape[1] - 1
    assert out.beam_indices.shape == (batch_size * NUM_BEAMS, generated_length)
    assert len(out.cross_attentions) >= generated_length
    for step in out.cross_attentions:
        assert len(step) == 1
        assert step[0].shape == (batch_size * NUM_BEAMS, 1, 1, source_length)

    expected = teacher_forced_alignments(
        model, input_ids.repeat_interleave(NUM_BEAMS, 0), attention_mask.repeat_interleave(NUM_BEAMS, 0),
        out.sequences,
    )
    checked = 0
    for row, (indices, sequence) in enumerate(zip(out.beam_indices, out.sequences)):
        source = row // NUM_BEAMS
        length = len(generated(sequence))
        assert (indices[:length] // NUM_BEAMS == source).all(), "a beam never leaves its source"
        assert (indices[length:] == -1).all()
        for step in range(length):
            weights = out.cross_attentions[step][0][indices[step], 0, 0]
            assert (weights[attention_mask[source] == 0] == 0).all()
            assert_weights_sum(model, weights, max(LENGTHS))
            assert_float64_close(weights, expected[row, step], scale=1.0)  # weights: at most 1
            checked += 1
    assert checked > batch_size * NUM_BEAMS


# 8. a padded batch = each sentence alone ---------------------------------------------------------------


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_batched_generation_equals_each_sentence_alone(preset):
    model = decisive_model(preset, SOMETIMES).double()  # float64 model: only the search's float32 steps round
    input_ids, attention_mask = source_batch()
    with torch.no_grad():
        greedy = model.generate(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=MAX_NEW)
    beams = beam_generate(model, input_ids, attention_mask)
    for index, length in enumerate(LENGTHS):
        alone_ids, alone_mask = input_ids[index:index + 1, :length], attention_mask[index:index + 1, :length]
        assert alone_mask.all()
        with torch.no_grad():
            alone_greedy = model.generate(input_ids=alone_ids, max_new_tokens=MAX_NEW)
        assert generated(alone_greedy[0]) == generated(greedy[index])
        alone_beams = beam_generate(model, alone_ids, None)
        rows = slice(index * NUM_BEAMS, (index + 1) * NUM_BEAMS)
        assert [generated(row) for row in alone_beams.sequences] == [generated(row) for row in beams.sequences[rows]]
        error = float32_search_error(model, alone_ids, None, alone_beams.sequences, 1.0)
        assert ((alone_beams.sequences_scores - beams.sequences_scores[rows]).abs() <= 2 * error).all()


# 9. the beams of a source share its encoded source ----------------------------------------------------


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_rows_sharing_a_source_equal_the_source_repeated(preset):
    """decoder_input_ids with k consecutive rows per source (what generate() runs) give the logits, attentions and
    states of the same rows against the source repeated k times, through the cache too. In float64: the shared
    encoded source is read by other products (other shapes, other kernels) than the copies, which round apart."""
    model = decisive_model(preset).double()
    input_ids, attention_mask = source_batch()
    rows = 3
    decoder_input_ids = torch.randint(3, VOCAB, (len(LENGTHS) * rows, 4), generator=torch.Generator().manual_seed(5))
    decoder_input_ids[:, 0] = BOS
    repeated = dict(input_ids=input_ids.repeat_interleave(rows, 0), attention_mask=attention_mask.repeat_interleave(rows, 0))
    with torch.no_grad():
        shared = [model(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids[:, :2],
                        rows_per_source=rows, output_attentions=True)]
        # global soft attention reads one copy per source; the others, whose state differs per row, one per row
        copies = len(LENGTHS) * (1 if model.model.decoder.shares_encoded_source else rows)
        assert cache_of(shared[0]).encoded.mask.shape[0] == copies
        shared.append(model(decoder_input_ids=decoder_input_ids[:, 2:], past_key_values=cache_of(shared[0]),
                            attention_mask=attention_mask, output_attentions=True))
        copied = [model(**repeated, decoder_input_ids=decoder_input_ids[:, :2], output_attentions=True)]
        copied.append(model(decoder_input_ids=decoder_input_ids[:, 2:], past_key_values=cache_of(copied[0]),
                            attention_mask=repeated["attention_mask"], output_attentions=True))
    for ours, expected in zip(shared, copied):
        assert_float64_close(ours.logits, expected.logits)
        if expected.cross_attentions is not None:
            assert_float64_close(ours.cross_attentions[0], expected.cross_attentions[0], scale=1.0)  # weights ≤ 1
    assert_float64_close(cache_of(shared[1]).state.rnn.hidden, cache_of(copied[1]).state.rnn.hidden)
    assert cache_of(shared[1]).rows_per_source == rows and cache_of(copied[1]).rows_per_source == 1


@pytest.mark.parametrize("rows_per_source, decoder_rows", [(1, 2 * len(LENGTHS)), (2, len(LENGTHS)),
                                                           (2, 2 * len(LENGTHS) + 1)])
def test_decoder_rows_must_be_rows_per_source_per_source(rows_per_source, decoder_rows):
    """The rows per source are given, never inferred: [2B, T] decoder inputs are not read as two beams per source."""
    model = decisive_model("rnnsearch")
    input_ids, attention_mask = source_batch()
    rows = "one row" if rows_per_source == 1 else f"`rows_per_source` = {rows_per_source} rows"
    with pytest.raises(ValueError, match=rf"^`decoder_input_ids` \[{decoder_rows}, 1\] must have {rows} for each of "
                                         rf"the {len(LENGTHS)} sources in the batch \({rows_per_source * len(LENGTHS)} "
                                         rf"rows\), got {decoder_rows}\.$"):
        model(input_ids=input_ids, attention_mask=attention_mask, rows_per_source=rows_per_source,
              decoder_input_ids=torch.full((decoder_rows, 1), BOS))


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_rows_per_source_must_be_a_positive_int(bad):
    model = decisive_model("rnnsearch")
    input_ids, attention_mask = source_batch()
    with pytest.raises(ValueError, match=rf"`rows_per_source` must be a positive int .*got {bad!r}"):
        model(input_ids=input_ids, attention_mask=attention_mask, rows_per_source=bad,
              decoder_input_ids=torch.full((len(LENGTHS), 1), BOS))


def test_a_cache_keeps_its_rows_per_source():
    model = decisive_model("rnnsearch")
    input_ids, attention_mask = source_batch()
    with torch.no_grad():
        first = model(input_ids=input_ids, attention_mask=attention_mask, rows_per_source=2,
                      decoder_input_ids=torch.full((2 * len(LENGTHS), 1), BOS))
        with pytest.raises(ValueError, match="`rows_per_source` = 3 does not match the `cache`, which holds 2"):
            model(decoder_input_ids=torch.full((2 * len(LENGTHS), 1), 5), cache=cache_of(first), rows_per_source=3)
        with pytest.raises(ValueError, match=f"`rows_per_source` = 2 rows for each of the {len(LENGTHS)} sources of the `cache` "
                                             rf"\({2 * len(LENGTHS)} rows\), got {len(LENGTHS)}\."):
            model(decoder_input_ids=torch.full((len(LENGTHS), 1), 5), cache=cache_of(first))


@pytest.mark.parametrize("preset", ["rnnsearch", "luong-general", "rnnencdec"])
def test_beam_search_with_a_shared_encoded_source_equals_copies_of_it(preset, monkeypatch):
    """generate() keeps one encoded source per source; transformers' expansion (every beam its own copy) gives the same."""
    model = decisive_model(preset, SOMETIMES).double()  # float64 model: only the search's float32 steps round
    input_ids, attention_mask = source_batch()
    shared = beam_generate(model, input_ids, attention_mask)
    assert cache_of(shared).encoded.annotations.shape[0] == len(LENGTHS)
    assert cache_of(shared).state.rnn.hidden.shape[1] == len(LENGTHS) * NUM_BEAMS
    monkeypatch.setattr(type(model), "_expand_inputs_for_generation", GenerationMixin._expand_inputs_for_generation)
    copied = beam_generate(model, input_ids, attention_mask)
    assert cache_of(copied).encoded.annotations.shape[0] == len(LENGTHS) * NUM_BEAMS
    assert shared.sequences.tolist() == copied.sequences.tolist()
    error = float32_search_error(model, input_ids, attention_mask, shared.sequences, 1.0)
    assert ((shared.sequences_scores - copied.sequences_scores).abs() <= 2 * error).all()


@pytest.mark.parametrize("preset", ["rnnsearch", "rnnsearch+copy", "luong-general+copy+local-p"])
def test_search_steps_and_forward_share_one_output_head(preset):
    """A search step (``_next_token_logits``) and ``forward`` on the same cache run the same decoder step and the
    same ``output_head``: identical logits (the same operations on the same tensors, so bit for bit), with the
    copy source the cache was built with (``output_layer_inputs``) on both paths."""
    model = decisive_model(preset).eval()
    input_ids, attention_mask = source_batch()
    rows = 2
    start = torch.full((len(LENGTHS) * rows, 1), BOS)
    with torch.no_grad():
        prefill = [model(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=start,
                         rows_per_source=rows) for _ in range(2)]
        caches = [cache_of(outputs) for outputs in prefill]
        assert caches[0].rows_per_source == rows
        if model.config.copy_attention:  # set when the cache was built: the source ids, one row per source
            assert torch.equal(caches[0].output_layer_inputs.ids, input_ids)
        else:
            assert caches[0].output_layer_inputs is None
        tokens = torch.arange(3, 3 + len(LENGTHS) * rows)[:, None] % VOCAB
        stepped = model._next_token_logits(tokens, caches[0])
        forward = model(decoder_input_ids=tokens, cache=caches[1]).logits[:, -1]
    assert torch.equal(stepped, forward)
    assert torch.equal(caches[0].state.rnn.hidden, caches[1].state.rnn.hidden)


@pytest.mark.parametrize("grad", [True, False])
def test_a_decoding_cache_keeps_the_coverage_in_either_grad_mode(grad):
    """The coverage c = Σ_t α_t (GNMT's coverage penalty reads it from the cache) is kept because a cache is asked
    for (``use_cache``), not because autograd is off; a forward without a cache keeps none."""
    model = decisive_model("rnnsearch")
    input_ids, attention_mask = source_batch()
    decoder_input_ids = torch.full((len(LENGTHS), 3), BOS)
    with torch.set_grad_enabled(grad):
        out = model(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids,
                    use_cache=True, output_attentions=True)
        cache = cache_of(out)
        coverage = cache.encoded.to_caller_layout(cache.state.attention.coverage[:, None])[:, 0]
        assert_close(coverage, out.cross_attentions[0][:, 0].sum(1), atol=3 * 4e-7, rtol=0)  # 3 weights ≤ 1 added
    assert model.model.decoder.initial_attention_state(cache.encoded, keep_coverage=False).coverage is None
